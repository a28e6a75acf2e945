/* cadre-agent launch: the head node's side. Waits until every node's agent
 * has published and answers an SSH handshake with its pinned key (no fixed
 * sleep; launch_wait.c), then runs mpirun with `cadre-agent rsh` as its
 * remote shell and `cadre-agent rank` around each rank (launch_run.c),
 * forwards signals (launch_signal.c), and writes status.json
 * (launch_status.c). Here: the options, the nodes, staging and the order
 * of the steps. */
#include "config.h"

#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "agent.h"
#include "container.h"
#include "duration.h"
#include "error.h"
#include "fromenv.h"
#include "hostlist.h"
#include "launch.h"
#include "log.h"
#include "rundir.h"
#include "sigpipe.h"
#include "nodefile.h"
#include "program.h"
#include "stage.h"
#include "strutil.h"
#include "xmalloc.h"

#ifndef MPIRUN_PATH
#define MPIRUN_PATH "mpirun"
#endif

static void
launch_usage(FILE *f)
{
	fprintf(f,
	    "usage: cadre-agent launch [--run-dir DIR] (--nodes HOSTLIST | --nodefile FILE)\n"
	    "           [--slots N] [--startup-timeout DURATION] [--term-grace DURATION]\n"
	    "           [--mpirun PATH] [--mpi-arg ARG]... -- COMMAND [ARG...]\n"
	    "       cadre-agent launch --launcher srun [--srun PATH] [--container RUNTIME\n"
	    "           --image IMAGE [--bind PATH]... [--nv]] ... -- COMMAND [ARG...]\n"
	    "       cadre-agent launch --wait-only [--run-dir DIR] (--nodes ... | --nodefile ...)\n"
	    "  Waits until the agent of every node (DIR/agents/NODE.json) answers an SSH\n"
	    "  handshake with its published key, with backoff, up to --startup-timeout\n"
	    "  (default 180s); then writes DIR/hostfile and runs COMMAND on N slots per node\n"
	    "  (default 1; a nodefile gives its own counts) with mpirun over `cadre-agent\n"
	    "  rsh`. Each rank's output goes to DIR/log/rank-R.log tagged with rank and node.\n"
	    "  SIGUSR1 reaches every rank (one before the ranks start stops the launch,\n"
	    "  preempted); SIGTERM/SIGINT ask the ranks to stop (they get SIGTERM), and\n"
	    "  after --term-grace (default 60s) mpirun is terminated.\n"
	    "  Writes DIR/status.json; a rank exiting 75 is preempted, 3 oom, killed by a\n"
	    "  signal node_fail. Exit status: 0 done, 1 failed, 2 usage,\n"
	    "  3 startup_timeout, 4 node_fail, 5 preempted, 6 oom. --wait-only: only the wait;\n"
	    "  prints \"ready N SECONDS\", writes no status.json. --launcher srun: no agents;\n"
	    "  srun starts the ranks (PMIx), each inside the container when one is given;\n"
	    "  --mpi-arg words then go to srun.\n"
	    "       cadre-agent launch --from-env [--run-dir DIR] [--slots N] ... -- COMMAND...\n"
	    "  Inside a Slurm or PBS job: the nodes and slots from its environment, the\n"
	    "  run dir (default ./cadre-run.JOBID) and its keys made, an agent started on\n"
	    "  every node (srun, or pbsdsh per node), then as above; the agents stop after.\n"
	    "  --stage SRC:DST (repeatable): before COMMAND, every node copies SRC to DST\n"
	    "  (%%n: the node's name) through its agent, checked by SHA-256, skipping what\n"
	    "  is already there; removed after the run unless --keep-staged. A later start\n"
	    "  trusts what the verification records say is unchanged (size, mtime, ctime,\n"
	    "  inode); --stage-verify full hashes every file again.\n"
	    "       cadre-agent launch ... --program FILE\n"
	    "       cadre-agent launch ... (--per-rank | --per-node | --once)\n"
	    "           [--checkpoint-every DURATION] -- COMMAND [ARG...]\n"
	    "  A user's program (docs/program.md): FILE is the program.json cadred\n"
	    "  writes; in wrapper mode the flags say how COMMAND starts: once per rank\n"
	    "  (torch's RANK, WORLD_SIZE, MASTER_ADDR, ...), once per node (torchrun,\n"
	    "  accelerate launch), or once on the head node (mpirun, with\n"
	    "  $CADRE_HOSTFILE and an ssh that goes through the agents). Every process\n"
	    "  gets the CADRE_* variables; SIGUSR1 every --checkpoint-every asks for a\n"
	    "  checkpoint; a stop creates $CADRE_STOP_FILE and asks for one more.\n");
}

/* The nodes' names, for staging. */
static char **
node_names(struct launch *l)
{
	char	**names = xcalloc(l->n + 1, sizeof *names);
	size_t	  i;

	for (i = 0; i < l->n; i++)
		names[i] = l->nodes[i].name;
	return names;
}

/* --stage (stage.c): the manifests, then every node copies through its
 * agent. The time and the counts go into st; on failure also reason
 * failed and the message. */
static int
run_stage(struct launch *l, const struct stage_pair *pairs, size_t npairs,
    int verify_full, json_t *st)
{
	struct stage_totals	 t;
	char			 msg[1024], **names = node_names(l);
	double			 t0 = now_mono();
	int			 error;

	log_info("staging %zu tree(s) to %zu nodes", npairs, l->n);
	if ((error = stage_prepare(l->rundir, pairs, npairs, verify_full, msg,
	    sizeof msg)) == 0)
		error = stage_nodes(l->rundir, names, l->n, npairs, 0,
		    l->sigfd, &t, msg, sizeof msg);
	json_object_set_new(st, "stage_seconds", json_real(now_mono() - t0));
	if (error == CADRE_ERR_CANCELLED) {
		log_notice("%s", msg);
		json_object_set_new(st, STATUS_REASON, json_string(REASON_PREEMPTED));
		json_object_set_new(st, "resumable", json_true());
		json_object_set_new(st, STATUS_MESSAGE, json_string(msg));
	} else if (error != 0) {
		log_error("staging: %s", msg);
		json_object_set_new(st, STATUS_REASON, json_string(REASON_FAILED));
		json_object_set_new(st, "resumable", json_false());
		json_object_set_new(st, STATUS_MESSAGE, json_sprintf("staging: %s",
		    msg));
	} else {
		log_info("staged in %.3f s: %lld files copied, %lld skipped, "
		    "%lld copied again, %lld bytes", now_mono() - t0,
		    (long long)t.copied, (long long)t.skipped,
		    (long long)t.redone, (long long)t.bytes);
		json_object_set_new(st, "stage", stage_totals_json(&t));
	}
	free(names);
	return error;
}

/* Removes what staging copied (before status.json, which stops the
 * agents); a failure is only logged. */
static void
clean_stage(struct launch *l, size_t npairs)
{
	struct stage_totals	 t;
	char			 msg[1024], **names = node_names(l);

	if (stage_nodes(l->rundir, names, l->n, npairs, 1, -1, &t, msg,
	    sizeof msg) != 0)
		log_warn("removing the staged files: %s", msg);
	free(names);
}

/* --nodes or --nodefile into l->nodes. */
static int
load_nodes(struct launch *l, const char *hostlist, const char *nodefile,
    int slots)
{
	struct hostlist	hl;
	struct nodefile	nf;
	size_t		i, errpos, errline;
	int		error;

	if (hostlist != NULL) {
		if ((error = hostlist_expand(hostlist, AGENT_MAX_NODES, &hl,
		    &errpos)) != 0) {
			log_error("--nodes %s: %s at offset %zu", hostlist,
			    cadre_strerror(error), errpos);
			return error;
		}
		l->n = hl.n;
		l->nodes = xcalloc(hl.n, sizeof *l->nodes);
		for (i = 0; i < hl.n; i++) {
			l->nodes[i].name = xstrdup(hl.hosts[i]);
			l->nodes[i].slots = slots;
		}
		hostlist_free(&hl);
	} else {
		if ((error = nodefile_read(nodefile, &nf, &errline)) != 0) {
			log_error("%s:%zu: %s", nodefile, errline,
			    cadre_strerror(error));
			return error;
		}
		l->n = nf.n;
		l->nodes = xcalloc(nf.n, sizeof *l->nodes);
		for (i = 0; i < nf.n; i++) {
			/* PBS may give FQDNs; agents publish short names. */
			nf.hosts[i].name[strcspn(nf.hosts[i].name, ".")] =
			    '\0';
			l->nodes[i].name = xstrdup(nf.hosts[i].name);
			l->nodes[i].slots = nf.hosts[i].slots;
		}
		nodefile_free(&nf);
	}
	if (l->n == 0) {
		log_error("no nodes");
		return CADRE_ERR_INVALID;
	}
	for (i = 0; i < l->n; i++) {
		if (!str_is_name(l->nodes[i].name, AGENT_NODE_MAX)) {
			log_error("node name '%s' must match "
			    "[A-Za-z0-9._-]{1,%d}", l->nodes[i].name,
			    AGENT_NODE_MAX);
			return CADRE_ERR_INVALID;
		}
		if (l->total_slots > INT_MAX - l->nodes[i].slots) {
			log_error("too many slots");
			return CADRE_ERR_RANGE;
		}
		l->total_slots += l->nodes[i].slots;
	}
	return 0;
}

/* The command line into l and o: -1 to go on, else the exit status. */
static int
launch_parse(int argc, char **argv, struct launch *l, struct launch_opts *o)
{
	static const struct option longopts[] = {
		{ "run-dir", required_argument, NULL, 'd' },
		{ "nodes", required_argument, NULL, 'N' },
		{ "nodefile", required_argument, NULL, 'f' },
		{ "slots", required_argument, NULL, 's' },
		{ "startup-timeout", required_argument, NULL, 't' },
		{ "term-grace", required_argument, NULL, 'g' },
		{ "mpirun", required_argument, NULL, 'm' },
		{ "mpi-arg", required_argument, NULL, 'a' },
		{ "wait-only", no_argument, NULL, 'w' },
		{ "launcher", required_argument, NULL, 'L' },
		{ "srun", required_argument, NULL, 'S' },
		{ "container", required_argument, NULL, 'C' },
		{ "image", required_argument, NULL, 'I' },
		{ "bind", required_argument, NULL, 'B' },
		{ "nv", no_argument, NULL, 'G' },
		{ "from-env", no_argument, NULL, 'E' },
		{ "stage", required_argument, NULL, 'T' },
		{ "keep-staged", no_argument, NULL, 'K' },
		{ "stage-verify", required_argument, NULL, 'Y' },
		{ "program", required_argument, NULL, 'P' },
		{ "per-rank", no_argument, NULL, '1' },
		{ "per-node", no_argument, NULL, '2' },
		{ "once", no_argument, NULL, '3' },
		{ "checkpoint-every", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char		 msg[1024];
	int64_t		 v;
	int		 c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o->rundir_opt = optarg;
			break;
		case 'N':
			o->hostlist = optarg;
			break;
		case 'f':
			o->nodefile = optarg;
			break;
		case 's':
			if (str_to_int64(optarg, &v) != 0 || v < 1 ||
			    v > 4096) {
				log_error("--slots %s: expected 1..4096",
				    optarg);
				return LAUNCH_EXIT_USAGE;
			}
			o->slots = (int)v;
			o->slots_set = 1;
			break;
		case 't':
			if (duration_parse(optarg, &l->startup_timeout) != 0) {
				log_error("--startup-timeout %s: expected a "
				    "duration such as 180s or 3m", optarg);
				return LAUNCH_EXIT_USAGE;
			}
			break;
		case 'g':
			if (duration_parse(optarg, &l->term_grace) != 0) {
				log_error("--term-grace %s: expected a "
				    "duration", optarg);
				return LAUNCH_EXIT_USAGE;
			}
			break;
		case 'm':
			o->mpirun = optarg;
			break;
		case 'a':
			if (o->nmpi >= LAUNCH_MPI_ARGS_MAX) {
				log_error("more than %d --mpi-arg",
				    LAUNCH_MPI_ARGS_MAX);
				return LAUNCH_EXIT_USAGE;
			}
			o->mpi_args[o->nmpi++] = optarg;
			break;
		case 'w':
			o->wait_only = 1;
			break;
		case 'L':
			if (strcmp(optarg, "mpirun") == 0) {
				o->use_srun = 0;
			} else if (strcmp(optarg, "srun") == 0) {
				o->use_srun = 1;
			} else {
				log_error("--launcher %s: expected mpirun or "
				    "srun", optarg);
				return LAUNCH_EXIT_USAGE;
			}
			break;
		case 'S':
			o->srun = optarg;
			break;
		case 'C':
			if (container_parse_runtime(optarg,
			    &o->ct.runtime) != 0) {
				log_error("--container %s: expected "
				    CONTAINER_RUNTIMES, optarg);
				return LAUNCH_EXIT_USAGE;
			}
			break;
		case 'I':
			o->ct.image = optarg;
			break;
		case 'B':
			if (o->ct.nbinds >= CONTAINER_BINDS_MAX) {
				log_error("more than %d --bind",
				    CONTAINER_BINDS_MAX);
				return LAUNCH_EXIT_USAGE;
			}
			o->ct.binds[o->ct.nbinds++] = optarg;
			break;
		case 'G':
			o->ct.nv = 1;
			break;
		case 'E':
			o->from_env = 1;
			break;
		case 'T':
			if (o->nstage >= STAGE_PAIRS_MAX) {
				log_error("more than %d --stage",
				    STAGE_PAIRS_MAX);
				return LAUNCH_EXIT_USAGE;
			}
			if (stage_pair_parse(optarg, &o->stages[o->nstage], msg,
			    sizeof msg) != 0) {
				log_error("%s", msg);
				return LAUNCH_EXIT_USAGE;
			}
			o->nstage++;
			break;
		case 'K':
			o->keep_staged = 1;
			break;
		case 'Y':
			if (strcmp(optarg, "full") != 0 &&
			    strcmp(optarg, "meta") != 0) {
				log_error("--stage-verify %s: expected meta "
				    "(trust unchanged metadata) or full (hash "
				    "every file)", optarg);
				return LAUNCH_EXIT_USAGE;
			}
			o->stage_verify_full = strcmp(optarg, "full") == 0;
			break;
		case 'P':
			o->program = optarg;
			break;
		case '1':
		case '2':
		case '3':
			o->prog_launch = c == '1' ? PROGRAM_PER_RANK + 1 :
			    c == '2' ? PROGRAM_PER_NODE + 1 : PROGRAM_ONCE + 1;
			break;
		case 'c':
			if (duration_parse(optarg, &o->checkpoint_every) != 0) {
				log_error("--checkpoint-every %s: expected a "
				    "duration such as 20m", optarg);
				return LAUNCH_EXIT_USAGE;
			}
			break;
		case 'h':
			launch_usage(stdout);
			return 0;
		default:
			launch_usage(stderr);
			return LAUNCH_EXIT_USAGE;
		}
	}
	o->cmd = argv + optind;
	o->ncmd = argc - optind;
	return -1;
}

/* The nodes, the run dir and its keys (--from-env: found and started by
 * fromenv.c): -1 to go on, else the exit status. */
static int
launch_setup(struct launch *l, struct launch_opts *o, struct fromenv *fe)
{
	char	 msg[1024], rp[PATH_MAX], *logdir, *status_path;
	int	 error;

	if (o->from_env && (o->hostlist != NULL || o->nodefile != NULL)) {
		log_error("--from-env finds the nodes itself: no --nodes or "
		    "--nodefile with it");
		return LAUNCH_EXIT_USAGE;
	}
	if (o->nstage > 0 && o->use_srun) {
		log_error("--stage copies through the agents: it needs "
		    "--launcher mpirun");
		return LAUNCH_EXIT_USAGE;
	}
	if (o->program != NULL && (o->ncmd > 0 || o->prog_launch != 0)) {
		log_error("--program FILE runs what FILE says: no COMMAND, "
		    "--per-rank, --per-node or --once with it");
		return LAUNCH_EXIT_USAGE;
	}
	if ((o->prog_launch != 0 || o->checkpoint_every > 0) && o->ncmd == 0) {
		log_error("--per-rank, --per-node, --once and "
		    "--checkpoint-every take a COMMAND after --");
		return LAUNCH_EXIT_USAGE;
	}
	if (o->from_env && !(o->ncmd == 0 && o->program == NULL &&
	    !o->wait_only)) {
		/* fromenv.c: nodes, run dir, keys, and the agents started */
		if (fromenv_start(fe, o->rundir_opt, o->slots_set ? o->slots :
		    0, !o->use_srun, o->srun, &o->ct) != 0)
			return LAUNCH_EXIT_FAILED;
		o->rundir_opt = fe->rundir;
		o->nodefile = fe->nodefile;
	}
	if ((o->ncmd == 0 && o->program == NULL && !o->wait_only) ||
	    (o->hostlist == NULL) == (o->nodefile == NULL)) {
		launch_usage(stderr);
		return LAUNCH_EXIT_USAGE;
	}
	if ((o->rundir_opt = rundir_default(o->rundir_opt)) == NULL) {
		log_error("no run directory: pass --run-dir or set "
		    "CADRE_RUN_DIR");
		return LAUNCH_EXIT_USAGE;
	}
	if (realpath(o->rundir_opt, rp) == NULL) {
		log_error("%s: %s", o->rundir_opt, strerror(errno));
		return LAUNCH_EXIT_USAGE;
	}
	l->rundir = xstrdup(rp);
	if ((error = load_nodes(l, o->hostlist, o->nodefile, o->slots)) != 0)
		return LAUNCH_EXIT_USAGE;
	if (rundir_check(l->rundir, msg, sizeof msg) != 0) {
		log_error("%s", msg);
		return LAUNCH_EXIT_FAILED;
	}
	logdir = rundir_path(l->rundir, RUNDIR_LOG);
	error = rundir_mkdir_private(logdir, msg, sizeof msg);
	free(logdir);
	if (error != 0) {
		log_error("%s", msg);
		return LAUNCH_EXIT_FAILED;
	}
	status_path = rundir_path(l->rundir, RUNDIR_STATUS);
	if (!o->wait_only)
		unlink(status_path);	/* a previous attempt's */
	free(status_path);
	l->keyfile = rundir_path(l->rundir, RUNDIR_CLIENT_KEY);
	return -1;
}

/* Wrapper mode (--per-rank, --per-node, --once -- COMMAND): the
 * program.json that cadred would have written, into the run dir. */
static int
write_wrapper_program(struct launch *l, const struct launch_opts *o,
    char **pathp, char *msg, size_t msglen)
{
	struct program	 p;
	char		 cwd[PATH_MAX];
	const char	*v;
	int		 error;

	memset(&p, 0, sizeof p);
	p.words = o->cmd;
	p.nwords = (size_t)o->ncmd;
	p.launch = (enum program_launch)(o->prog_launch - 1);
	if (getcwd(cwd, sizeof cwd) != NULL)
		p.workdir = cwd;
	p.signal = SIGUSR1;
	p.checkpoint_every = o->checkpoint_every;
	if ((v = getenv(ENV_RUN_ID)) != NULL)
		p.run_id = (char *)v;
	*pathp = rundir_path(l->rundir, RUNDIR_PROGRAM);
	error = program_write(*pathp, &p, msg, msglen);
	return error;
}

/* A program: its program.json, environment, per-node setup and start
 * event (launch_program.c). -1 to go on to start it, else the exit
 * status with st filled. */
static int
program_begin(struct launch *l, struct launch_opts *o, char *hostfile,
    struct launch_prog *lp, json_t *st)
{
	struct launch_cmd	 scmd;
	char			 msg[1024], *path = NULL;
	int			 error, wstatus = 0, preempted = 0, rc = -1;

	memset(&scmd, 0, sizeof scmd);
	if (o->program != NULL)
		path = xstrdup(o->program);
	else if ((error = write_wrapper_program(l, o, &path, msg,
	    sizeof msg)) != 0)
		goto fail;
	if ((error = launch_program_open(l, path, lp, msg, sizeof msg)) != 0)
		goto fail;
	lp->path = path;
	path = NULL;
	l->prog = lp;
	if (lp->p.launch == PROGRAM_PER_NODE)
		l->nprocs = (int)l->n;
	else if (lp->p.launch == PROGRAM_ONCE)
		l->nprocs = 1;
	if (lp->p.nsetup > 0) {
		log_info("setup: %zu command(s) on each of %zu node(s)",
		    lp->p.nsetup, l->n);
		if ((error = launch_command(l, o, hostfile, 1, &scmd)) != 0) {
			cadre_errf(msg, sizeof msg, error, "setup: cannot "
			    "build the command");
			goto fail;
		}
		if ((error = launch_run_mpirun(l, scmd.av, &wstatus,
		    &preempted, msg, sizeof msg)) != 0)
			goto fail;
		if (preempted) {
			rc = LAUNCH_EXIT_PREEMPTED;
			json_object_set_new(st, STATUS_REASON,
			    json_string(REASON_PREEMPTED));
			json_object_set_new(st, "resumable", json_true());
			json_object_set_new(st, STATUS_MESSAGE,
			    json_string("stopped by a signal during setup"));
			goto out;
		}
		if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
			launch_setup_failure(l, msg, sizeof msg);
			error = CADRE_ERR_INVALID;
			goto fail;
		}
	}
	launch_program_start(l, lp);
	goto out;

 fail:
	log_error("%s", msg);
	rc = LAUNCH_EXIT_FAILED;
	json_object_set_new(st, STATUS_REASON, json_string(REASON_FAILED));
	json_object_set_new(st, "resumable", json_false());
	json_object_set_new(st, STATUS_MESSAGE, json_string(msg));
 out:
	launch_cmd_free(&scmd);
	free(path);
	return rc;
}

int
cmd_launch(int argc, char **argv)
{
	struct launch		 l;
	struct launch_opts	 o;
	struct launch_cmd	 cmd;
	struct fromenv		 fe;
	struct launch_prog	 lp;
	char			*hostfile = NULL, *np, msg[1024];
	size_t			 i;
	int			 rc, error, preempted = 0, wstatus;
	double			 t0, startup;
	json_t			*st = NULL;

	memset(&l, 0, sizeof l);
	memset(&o, 0, sizeof o);
	memset(&cmd, 0, sizeof cmd);
	memset(&fe, 0, sizeof fe);
	memset(&lp, 0, sizeof lp);
	o.mpirun = MPIRUN_PATH;
	o.srun = "srun";
	o.slots = 1;
	/* Signals go through a pipe from the start (a scheduler's signal
	 * during the setup must not kill us): read in the wait and while
	 * mpirun runs. */
	if ((l.sigfd = sigpipe_open((const int[]){ SIGTERM, SIGINT, SIGHUP,
	    SIGUSR1, SIGCHLD }, 5)) < 0)
		fatal("pipe");
	pthread_mutex_init(&l.mu, NULL);
	l.startup_timeout = 180;
	l.term_grace = 60;
	if ((rc = launch_parse(argc, argv, &l, &o)) >= 0 ||
	    (rc = launch_setup(&l, &o, &fe)) >= 0)
		goto out;
	rc = LAUNCH_EXIT_FAILED;

	/* 1. Every agent published and answering with its pinned key. */
	t0 = now_mono();
	l.deadline = t0 + (double)l.startup_timeout;
	if (o.use_srun) {
		/* srun reaches the nodes through Slurm: no agents to wait
		 * for. */
		if (container_check(&o.ct, l.rundir, msg, sizeof msg) != 0) {
			log_error("%s", msg);
			rc = LAUNCH_EXIT_USAGE;
			goto out;
		}
		for (i = 0; i < l.n; i++)
			l.nodes[i].ready = 1;
		error = 0;
	} else {
		error = launch_wait_ready(&l);
	}
	/* one that came during the setup, or the wait's last round */
	if (error == 0 && launch_wait_signal(&l, 0) != 0)
		error = CADRE_ERR_CANCELLED;
	startup = now_mono() - t0;
	st = json_object();
	json_object_set_new(st, "startup_seconds", json_real(startup));
	json_object_set_new(st, "nodes", json_integer((json_int_t)l.n));
	if (error != 0) {
		rc = launch_not_ready(&l, st, error, o.wait_only);
		goto out;
	}
	log_info("all %zu agents ready in %.3f s", l.n, startup);
	if (o.wait_only) {
		printf("ready %zu %.3f\n", l.n, startup);
		rc = 0;
		goto out;
	}
	if (o.nstage > 0 &&
	    (error = run_stage(&l, o.stages, o.nstage, o.stage_verify_full,
	    st)) != 0) {
		rc = error == CADRE_ERR_CANCELLED ? LAUNCH_EXIT_PREEMPTED :
		    LAUNCH_EXIT_FAILED;
		json_object_set_new(st, "exit_status", json_integer(rc));
		launch_write_status(&l, st);
		goto out;
	}

	/* 2. mpirun over the agents, or srun. */
	if ((!o.use_srun || o.program != NULL || o.prog_launch != 0) &&
	    launch_write_hostfile(&l, &hostfile) != 0)
		goto out;
	l.nprocs = l.total_slots;
	for (i = 0; i < (size_t)l.total_slots; i++) {
		char	*rel;

		xasprintf(&rel, "%s/rank-%zu.json", RUNDIR_LOG, i);
		np = rundir_path(l.rundir, rel);
		unlink(np);
		free(np);
		free(rel);
	}
	setenv(ENV_RUN_DIR, l.rundir, 1);
	if ((o.program != NULL || o.prog_launch != 0) &&
	    (rc = program_begin(&l, &o, hostfile, &lp, st)) >= 0) {
		json_object_set_new(st, "exit_status", json_integer(rc));
		launch_write_status(&l, st);
		goto out;
	}
	rc = LAUNCH_EXIT_FAILED;
	if (launch_command(&l, &o, hostfile, 0, &cmd) != 0)
		goto out;

	if ((error = launch_run_mpirun(&l, cmd.av, &wstatus, &preempted, msg,
	    sizeof msg)) != 0) {
		log_error("%s", msg);
		rc = LAUNCH_EXIT_FAILED;
		json_object_set_new(st, STATUS_REASON,
		    json_string(REASON_FAILED));
		json_object_set_new(st, "resumable", json_false());
		json_object_set_new(st, STATUS_MESSAGE, json_string(msg));
	} else
		rc = launch_end(&l, st, wstatus, preempted, o.use_srun);
	if (l.prog != NULL)
		launch_program_end(&l, l.prog, st, rc);
	if (o.nstage > 0 && !o.keep_staged)
		clean_stage(&l, o.nstage);
	json_object_set_new(st, "exit_status", json_integer(rc));
	launch_write_status(&l, st);
 out:
	for (i = 0; i < o.nstage; i++)
		stage_pair_free(&o.stages[i]);
	fromenv_stop(&fe);
	launch_cmd_free(&cmd);
	launch_program_free(&lp);
	json_decref(st);
	for (i = 0; i < l.n; i++)
		free(l.nodes[i].name);
	free(l.nodes);
	free(l.pending);
	free(l.keyfile);
	free(l.rundir);
	free(hostfile);
	pthread_mutex_destroy(&l.mu);
	sigpipe_close();
	return rc;
}
