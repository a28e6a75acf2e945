/* cadre-agent wrap: runs (or prints) a command inside the run's container,
 * for the job script: `cadre-agent wrap --container apptainer --image I
 * --run-dir D -- cadre-agent serve ...` on every node. What keeps the
 * container from starting (no runtime, no image, a missing bind) is
 * checked first and, with no status.json yet, becomes the attempt's
 * reason there: the job's log alone would hide it. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "buf.h"
#include "container.h"
#include "error.h"
#include "json.h"
#include "log.h"
#include "rundir.h"
#include "xmalloc.h"

/* Why the container cannot start, as the attempt's end (the first one
 * to see it writes it; launch, had it started, would have). */
static void
fail_status(const char *rundir, const char *msg)
{
	char	*path = rundir_path(rundir, RUNDIR_STATUS);
	json_t	*st;
	int	 error;

	if (access(path, F_OK) != 0) {
		st = json_pack("{s:s, s:s, s:i}", STATUS_REASON, REASON_FAILED,
		    STATUS_MESSAGE, msg, "version", STATUS_VERSION);
		if ((error = cjson_write_atomic(path, st, 0600)) != 0)
			log_error("%s: %s", path, cadre_strerror(error));
		json_decref(st);
	}
	free(path);
}

/* RUN_DIR/container.json: which runtime and program ran the run. The
 * first wrap of a run writes it: every node's would write the same, and
 * each write is an fsync on the agents' start-up path. */
static void
record(const struct container *c, const char *rundir, const char *engine)
{
	char	*path = rundir_path(rundir, RUNDIR_CONTAINER);
	json_t	*o;

	if (access(path, F_OK) != 0) {
		o = json_pack("{s:s, s:s, s:s}", "runtime",
		    container_runtime_name(c->runtime), "program", engine,
		    "image", c->image);
		(void)cjson_write_atomic(path, o, 0644);
		json_decref(o);
	}
	free(path);
}

static void
wrap_usage(FILE *f)
{
	fprintf(f,
	    "usage: cadre-agent wrap --container RUNTIME [--image IMAGE] [--bind PATH]... [--nv]\n"
	    "           [--run-dir DIR] [--print | --srun-options] -- COMMAND [ARG...]\n"
	    "  RUNTIME: none, apptainer, singularity (runs `RUNTIME exec [--nv] --bind DIR\n"
	    "  [--bind PATH]... IMAGE COMMAND...`), charliecloud (`ch-run -b PATH... -b DIR\n"
	    "  IMAGE -- COMMAND...`), oci (crun or runc, $CADRE_OCI_RUNTIME to choose, on a\n"
	    "  bundle written to DIR/oci/) or enroot (entered through Slurm's pyxis:\n"
	    "  --srun-options prints the srun options, one per line, for the job script's\n"
	    "  srun line). --print shows the command, quoted for sh, instead of running it.\n"
	    "  DIR defaults to $CADRE_RUN_DIR.\n");
}

int
cmd_wrap(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "container", required_argument, NULL, 'c' },
		{ "image", required_argument, NULL, 'i' },
		{ "bind", required_argument, NULL, 'b' },
		{ "nv", no_argument, NULL, 'g' },
		{ "run-dir", required_argument, NULL, 'd' },
		{ "print", no_argument, NULL, 'p' },
		{ "srun-options", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct container	  c;
	const char		 *rundir = NULL;
	char			  msg[1024], **pre = NULL, **av = NULL;
	struct cbuf		  line;
	size_t			  npre, i, n = 0;
	int			  ch, print = 0, srun_opts = 0, rc = 2;

	memset(&c, 0, sizeof c);
	optind = 1;
	while ((ch = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			if (container_parse_runtime(optarg, &c.runtime) != 0) {
				log_error("--container %s: expected "
				    CONTAINER_RUNTIMES, optarg);
				return 2;
			}
			break;
		case 'i':
			c.image = optarg;
			break;
		case 'b':
			if (c.nbinds >= CONTAINER_BINDS_MAX) {
				log_error("more than %d --bind",
				    CONTAINER_BINDS_MAX);
				return 2;
			}
			c.binds[c.nbinds++] = optarg;
			break;
		case 'g':
			c.nv = 1;
			break;
		case 'd':
			rundir = optarg;
			break;
		case 'p':
			print = 1;
			break;
		case 's':
			srun_opts = 1;
			break;
		case 'h':
			wrap_usage(stdout);
			return 0;
		default:
			wrap_usage(stderr);
			return 2;
		}
	}
	if ((rundir = rundir_default(rundir)) == NULL) {
		log_error("no run directory: pass --run-dir or set "
		    "CADRE_RUN_DIR");
		return 2;
	}
	if (container_check(&c, rundir, msg, sizeof msg) != 0) {
		log_error("%s", msg);
		return 2;
	}
	if (srun_opts) {
		pre = container_srun_options(&c, rundir, &npre);
		for (i = 0; i < npre; i++)
			printf("%s\n", pre[i]);
		container_free_words(pre);
		return 0;
	}
	if (optind >= argc) {
		wrap_usage(stderr);
		return 2;
	}
	if (c.runtime == CONTAINER_ENROOT) {
		log_error("enroot containers are entered by srun through pyxis: "
		    "put the options of `cadre-agent wrap --srun-options` on "
		    "the srun line");
		return 2;
	}
	if (!print) {
		if (container_preflight(&c, rundir, msg, sizeof msg) != 0) {
			log_error("%s", msg);
			fail_status(rundir, msg);
			return 2;
		}
		/* ch-run needs $USER, which a batch job may not have */
		if (getenv("USER") == NULL && getpwuid(getuid()) != NULL)
			setenv("USER", getpwuid(getuid())->pw_name, 1);
	}
	if (c.runtime == CONTAINER_OCI) {
		pre = container_oci_command(&c, rundir, argv + optind, msg,
		    sizeof msg);
		if (pre == NULL) {
			log_error("%s", msg);
			fail_status(rundir, msg);
			return 2;
		}
		for (npre = 0; pre[npre] != NULL; npre++)
			;
		optind = argc;	/* the command is in the bundle */
	} else
		pre = container_exec_prefix(&c, rundir, &npre);
	if (!print && npre > 0) {
		log_notice("container %s: %s on %s",
		    container_runtime_name(c.runtime), container_program(&c),
		    c.image);
		record(&c, rundir, container_program(&c));
	}
	av = xcalloc(npre + (size_t)(argc - optind) + 1, sizeof *av);
	i = 0;
	if (!print && npre > 3 && strcmp(pre[0], "env") == 0 &&
	    strcmp(pre[1], "-u") == 0) {
		/* `env -u VAR` for srun's tasks; here, one exec less */
		unsetenv(pre[2]);
		i = 3;
	}
	for (; i < npre; i++)
		av[n++] = pre[i];
	for (ch = optind; ch < argc; ch++)
		av[n++] = argv[ch];
	av[n] = NULL;
	if (print) {
		/* For the user's eyes: nothing here is run through a shell. */
		cbuf_init(&line, SIZE_MAX);
		for (i = 0; i < n; i++) {
			if (i > 0)
				cbuf_addc(&line, ' ');
			cbuf_add_shell_word(&line, av[i]);
		}
		printf("%s\n", line.data);
		cbuf_free(&line);
		rc = 0;
	} else {
		fflush(NULL);
		execvp(av[0], av);
		log_error("%s: %s", av[0], strerror(errno));
		rc = 127;
	}
	free(av);
	container_free_words(pre);
	return rc;
}
