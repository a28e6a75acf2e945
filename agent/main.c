/* cadre-agent: subcommand dispatch and small shared helpers. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libssh/libssh.h>

#include "agent.h"
#include "fromenv.h"
#include "log.h"
#include "stage.h"
#include "xmalloc.h"

static char self_path[PATH_MAX];

const char *
agent_self_path(void)
{
	return self_path;
}

double
now_mono(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double
now_real(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

const char *
rundir_default(const char *opt)
{
	const char	*env;

	if (opt != NULL && *opt != '\0')
		return opt;
	if ((env = getenv("CADRE_RUN_DIR")) != NULL && *env != '\0')
		return env;
	return NULL;
}

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: cadre-agent COMMAND [OPTIONS]\n"
	    "  keygen --run-dir DIR        create DIR/keys/ with the run's client key pair\n"
	    "  serve  --run-dir DIR ...    the SSH server of one node\n"
	    "  rsh    HOST COMMAND...      run COMMAND on HOST's agent (Open MPI's plm_rsh_agent)\n"
	    "  launch --run-dir DIR (--nodes HOSTLIST | --nodefile FILE) -- COMMAND...\n"
	    "                              wait for the agents, run COMMAND under mpirun over them\n"
	    "  rank   -- COMMAND...        (run by launch) one rank: logs, exit status, signals\n"
	    "  wrap   --container RUNTIME ... -- COMMAND...\n"
	    "                              run COMMAND inside the run's container\n"
	    "  launch --from-env -- COMMAND...\n"
	    "                              the same inside a Slurm or PBS job: nodes from its\n"
	    "                              environment, agents started by launch\n"
	    "  stage  --manifest FILE...   (run by launch --stage) copy a tree to this node, verified\n"
	    "  node-serve --run-dir DIR    (run by launch --from-env) serve with this node's name and address\n"
	    "`cadre-agent COMMAND --help` describes each.\n");
}

int
cmd_keygen(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "run-dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char	*dir = NULL;
	char		 msg[1024];
	int		 c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'h':
			printf("usage: cadre-agent keygen [--run-dir DIR]\n"
			    "  Creates DIR (0700) if needed, DIR/keys/ (0700) and a "
			    "fresh ed25519 client\n  key pair (0600) for the run. "
			    "DIR defaults to $CADRE_RUN_DIR.\n");
			return 0;
		default:
			return 2;
		}
	}
	if ((dir = rundir_default(dir)) == NULL || optind != argc) {
		fprintf(stderr, "usage: cadre-agent keygen --run-dir DIR\n");
		return 2;
	}
	if (rundir_keygen(dir, msg, sizeof msg) != 0) {
		log_error("%s", msg);
		return 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct {
		const char	*name;
		int		(*fn)(int, char **);
		enum log_level	 level;
	} cmds[] = {
		{ "serve", cmd_serve, LOG_LEVEL_INFO },
		{ "rsh", cmd_rsh, LOG_LEVEL_NOTICE },
		{ "launch", cmd_launch, LOG_LEVEL_INFO },
		{ "rank", cmd_rank, LOG_LEVEL_NOTICE },
		{ "keygen", cmd_keygen, LOG_LEVEL_NOTICE },
		{ "wrap", cmd_wrap, LOG_LEVEL_NOTICE },
		{ "stage", cmd_stage, LOG_LEVEL_NOTICE },
		{ "node-serve", cmd_node_serve, LOG_LEVEL_NOTICE },
	};
	size_t	i;
	ssize_t	n;
	int	rc;

	log_init("cadre-agent", LOG_LEVEL_INFO, LOG_TARGET_STDERR);
	if ((n = readlink("/proc/self/exe", self_path, sizeof self_path - 1)) <
	    0)
		fatal("readlink /proc/self/exe");
	self_path[n] = '\0';
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("cadre-agent %s\n", PACKAGE_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		if (strcmp(argv[1], cmds[i].name) != 0)
			continue;
		log_set_level(cmds[i].level);
		if (ssh_init() != SSH_OK)
			fatalx("cannot initialise libssh");
		rc = cmds[i].fn(argc - 1, argv + 1);
		ssh_finalize();
		return rc;
	}
	log_error("unknown command '%s'", argv[1]);
	usage(stderr);
	return 2;
}
