/* cadre-agent launch: the head node's side. Waits until every node's agent
 * has published and answers an SSH handshake with its pinned key (no fixed
 * sleep), then runs mpirun with `cadre-agent rsh` as its remote shell and
 * `cadre-agent rank` around each rank, forwards signals, and writes
 * status.json. */
#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <libssh/libssh.h>

#include "agent.h"
#include "buf.h"
#include "container.h"
#include "duration.h"
#include "error.h"
#include "fromenv.h"
#include "hostlist.h"
#include "json.h"
#include "log.h"
#include "sigpipe.h"
#include "nodefile.h"
#include "stage.h"
#include "strutil.h"
#include "xmalloc.h"

#define LAUNCH_PROBE_THREADS	32
#define LAUNCH_PROBE_MS		2000	/* one handshake attempt at most */
#define LAUNCH_BACKOFF_MIN	0.02	/* seconds between rounds */
#define LAUNCH_BACKOFF_MAX	0.5
#define LAUNCH_MPI_ARGS_MAX	256

#ifndef MPIRUN_PATH
#define MPIRUN_PATH "mpirun"
#endif

struct lnode {
	char			*name;
	int			 slots;
	int			 ready;
	struct agent_info	 info;
	char			 why[512];	/* why it is not ready */
};

struct launch {
	char		*rundir;	/* absolute */
	char		*keyfile;
	struct lnode	*nodes;
	size_t		 n;
	int		 total_slots;
	int64_t		 startup_timeout;
	int64_t		 term_grace;
	double		 deadline;
	/* The probe round: threads take the next index. */
	int		 sigfd;		/* read end of the signal pipe */
	int		 stop_sig;	/* a signal seen before the ranks start */
	pthread_mutex_t	 mu;
	size_t		 next;
	size_t		*pending;
	size_t		 npending;
};

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
	    "  is already there; removed after the run unless --keep-staged.\n");
}

/* One probe: published? handshake with the pinned key and the run key? */
static void
probe_node(struct launch *l, struct lnode *nd)
{
	ssh_session	 s = NULL;
	char		*rel, *path, msg[512];
	double		 left;
	long		 ms;

	xasprintf(&rel, "%s/%s.json", RUNDIR_AGENTS, nd->name);
	path = rundir_path(l->rundir, rel);
	free(rel);
	if (agent_info_load(path, &nd->info, msg, sizeof msg) != 0) {
		snprintf(nd->why, sizeof nd->why, "%s", msg);
		free(path);
		return;
	}
	free(path);
	left = l->deadline - now_mono();
	ms = left * 1000 < LAUNCH_PROBE_MS ? (long)(left * 1000) :
	    LAUNCH_PROBE_MS;
	if (ms < 50)
		ms = 50;
	if (agent_client_connect(&nd->info, l->keyfile, ms, &s, msg,
	    sizeof msg) != 0) {
		snprintf(nd->why, sizeof nd->why, "%s", msg);
		return;
	}
	ssh_disconnect(s);
	ssh_free(s);
	nd->ready = 1;
}

static void *
probe_thread(void *arg)
{
	struct launch	*l = arg;
	size_t		 i;

	for (;;) {
		pthread_mutex_lock(&l->mu);
		i = l->next < l->npending ? l->pending[l->next++] : SIZE_MAX;
		pthread_mutex_unlock(&l->mu);
		if (i == SIZE_MAX || now_mono() > l->deadline)
			return NULL;
		probe_node(l, &l->nodes[i]);
	}
}

/* Probes the nodes listed in l->pending, LAUNCH_PROBE_THREADS at a time. */
static void
probe_round(struct launch *l)
{
	pthread_t	th[LAUNCH_PROBE_THREADS];
	size_t		i, nth;

	l->next = 0;
	nth = l->npending < LAUNCH_PROBE_THREADS ? l->npending :
	    LAUNCH_PROBE_THREADS;
	for (i = 0; i < nth; i++)
		if (pthread_create(&th[i], NULL, probe_thread, l) != 0)
			fatalx("pthread_create failed");
	for (i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
}

/* After a failed run: which agents no longer answer (lost nodes). Their
 * names go into a JSON array; the count is returned. */
static size_t
find_lost(struct launch *l, json_t **lostp, struct cbuf *names)
{
	size_t	i, nlost = 0;

	*lostp = json_array();
	l->npending = 0;
	for (i = 0; i < l->n; i++) {
		l->nodes[i].ready = 0;
		l->nodes[i].why[0] = '\0';
		l->pending[l->npending++] = i;
	}
	l->deadline = now_mono() + LAUNCH_PROBE_MS / 1000.0;
	probe_round(l);
	for (i = 0; i < l->n; i++) {
		if (l->nodes[i].ready)
			continue;
		nlost++;
		json_array_append_new(*lostp, json_pack("{s:s, s:s}", "node",
		    l->nodes[i].name, "why", l->nodes[i].why));
		cbuf_addf(names, "%s%s", names->len ? ", " : "",
		    l->nodes[i].name);
	}
	return nlost;
}

/* Sleeps up to secs, watching the signal pipe: CADRE_ERR_CANCELLED once
 * SIGTERM, SIGINT, SIGHUP or SIGUSR1 came. SIGUSR1 is the scheduler's one
 * warning that the time limit is near: with no rank to pass it to yet,
 * and no time to be sure of a checkpoint, the launch stops (resumable)
 * rather than start ranks that would never hear of it. */
static int
wait_signal(struct launch *l, double secs)
{
	struct pollfd	pfd;
	unsigned char	sig;

	pfd.fd = l->sigfd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, (int)(secs * 1000)) == -1 && errno != EINTR)
		fatal("poll");
	while (read(l->sigfd, &sig, 1) == 1)
		if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP ||
		    sig == SIGUSR1)
			l->stop_sig = sig;
	return l->stop_sig != 0 ? CADRE_ERR_CANCELLED : 0;
}

/* Rounds of probes over the nodes not yet ready, until all are or the
 * deadline passes. 0 or CADRE_ERR_TIMEOUT. */
static int
wait_ready(struct launch *l)
{
	size_t		i;
	double		backoff = LAUNCH_BACKOFF_MIN, left;

	if (l->pending == NULL)
		l->pending = xcalloc(l->n, sizeof *l->pending);
	for (;;) {
		l->npending = 0;
		for (i = 0; i < l->n; i++)
			if (!l->nodes[i].ready)
				l->pending[l->npending++] = i;
		if (l->npending == 0)
			return 0;
		if (wait_signal(l, 0) != 0)
			return CADRE_ERR_CANCELLED;
		if (now_mono() >= l->deadline)
			return CADRE_ERR_TIMEOUT;
		probe_round(l);
		for (i = 0; i < l->n && l->nodes[i].ready; i++)
			;
		if (i == l->n)
			return 0;
		left = l->deadline - now_mono();
		if (left <= 0)
			return CADRE_ERR_TIMEOUT;
		if (wait_signal(l, backoff < left ? backoff : left) != 0)
			return CADRE_ERR_CANCELLED;
		backoff = backoff * 2 < LAUNCH_BACKOFF_MAX ? backoff * 2 :
		    LAUNCH_BACKOFF_MAX;
	}
}

static void
write_status(struct launch *l, json_t *st)
{
	char	*path = rundir_path(l->rundir, RUNDIR_STATUS);
	int	 error;

	json_object_set_new(st, "version", json_integer(STATUS_VERSION));
	if ((error = cjson_write_atomic(path, st, 0600)) != 0)
		log_error("%s: %s", path, cadre_strerror(error));
	free(path);
}

static int
write_hostfile(struct launch *l, char **pathp)
{
	struct cbuf	 b;
	size_t		 i, j;
	char		*path;
	int		 fd, error = 0;

	*pathp = NULL;
	cbuf_init(&b, (size_t)64 << 20);
	for (i = 0; i < l->n; i++) {
		for (j = 0; j < i; j++) {
			if (strcmp(l->nodes[i].info.addr,
			    l->nodes[j].info.addr) == 0) {
				log_error("nodes %s and %s published the same "
				    "address %s", l->nodes[j].name,
				    l->nodes[i].name, l->nodes[i].info.addr);
				cbuf_free(&b);
				return CADRE_ERR_INVALID;
			}
		}
		cbuf_addf(&b, "%s slots=%d\n", l->nodes[i].info.addr,
		    l->nodes[i].slots);
	}
	path = rundir_path(l->rundir, RUNDIR_HOSTFILE);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) ==
	    -1 || write(fd, b.data, b.len) != (ssize_t)b.len) {
		log_error("%s: %s", path, strerror(errno));
		error = CADRE_ERR_SYSTEM;
	}
	if (fd >= 0)
		close(fd);
	cbuf_free(&b);
	if (error == 0)
		*pathp = path;
	else
		free(path);
	return error;
}

/* Relays what mpirun writes on fd to out and the mpirun log. */
static int
relay(int fd, int out, int logfd)
{
	char	buf[16 << 10];
	ssize_t	n;

	n = read(fd, buf, sizeof buf);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n <= 0)
		return 0;
	(void)!write(out, buf, (size_t)n);
	if (logfd >= 0)
		(void)!write(logfd, buf, (size_t)n);
	return 1;
}

/* Runs argv; relays its output; forwards signals. Returns its wait status;
 * *preempted is set when we were asked to stop. */
static int
run_mpirun(struct launch *l, char **argv, int *preempted)
{
	struct pollfd		 pfd[3];
	char			*logpath;
	unsigned char		 sig;
	double			 term_at = 0, kill_at = 0;
	int			 out[2], err[2], logfd, status = 0;
	int			 open_fds = 2, i, exited = 0, devnull;
	pid_t			 pid;

	logpath = rundir_path(l->rundir, RUNDIR_LOG "/mpirun.log");
	logfd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	free(logpath);
	if (pipe2(out, O_CLOEXEC) == -1 || pipe2(err, O_CLOEXEC) == -1)
		fatal("pipe");

	if ((pid = fork()) == -1)
		fatal("fork");
	if (pid == 0) {
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGUSR1, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		/* Its own process group: a terminal's ^C reaches launch,
		 * which decides what mpirun gets. */
		setpgid(0, 0);
		/* No stdin: a background process group reading a terminal
		 * would stop, and ranks take no input. */
		if ((devnull = open("/dev/null", O_RDONLY)) == -1 ||
		    dup2(devnull, 0) == -1 || dup2(out[1], 1) == -1 ||
		    dup2(err[1], 2) == -1)
			_exit(127);
		execvp(argv[0], argv);
		dprintf(2, "cadre-agent launch: %s: %s\n", argv[0],
		    strerror(errno));
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	pfd[0].fd = out[0];
	pfd[1].fd = err[0];
	pfd[2].fd = l->sigfd;
	while (!exited || open_fds > 0) {
		for (i = 0; i < 3; i++)
			pfd[i].events = POLLIN;
		if (poll(pfd, 3, 200) == -1 && errno != EINTR)
			fatal("poll");
		while (read(l->sigfd, &sig, 1) == 1) {
			if (sig == SIGCHLD || exited)
				continue;
			if (sig == SIGUSR1) {
				log_info("SIGUSR1: passed to the ranks "
				    "(checkpoint)");
				kill(pid, SIGUSR1);
			} else if (!*preempted) {
				log_notice("signal %d: asking the ranks to "
				    "stop (SIGTERM), mpirun ends in %llds",
				    sig, (long long)l->term_grace);
				*preempted = 1;
				kill(pid, SIGUSR2);
				term_at = now_mono() + (double)l->term_grace;
			} else {
				log_notice("signal %d again: terminating "
				    "mpirun", sig);
				term_at = now_mono();
			}
		}
		for (i = 0; i < 2; i++) {
			if (pfd[i].fd >= 0 && (pfd[i].revents & (POLLIN |
			    POLLHUP | POLLERR)) && relay(pfd[i].fd, i + 1,
			    logfd) == 0) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
				open_fds--;
			}
		}
		if (!exited && waitpid(pid, &status, WNOHANG) == pid)
			exited = 1;
		if (!exited && term_at != 0 && now_mono() >= term_at) {
			kill(pid, SIGTERM);
			term_at = 0;
			kill_at = now_mono() + 30;
		}
		if (!exited && kill_at != 0 && now_mono() >= kill_at) {
			kill(-pid, SIGKILL);
			kill_at = 0;
		}
		/* Orphans holding the pipes must not hold launch. */
		if (exited && open_fds > 0 && kill_at == 0)
			kill_at = now_mono() + 2;
		if (exited && kill_at != 0 && now_mono() >= kill_at)
			break;
	}
	for (i = 0; i < 2; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
	if (logfd >= 0)
		close(logfd);
	return status;
}

/* Reads log/rank-R.json of every rank into a JSON array; sets the first
 * rank that failed (a non-zero exit other than the trainer's 3 and 75)
 * and how many ranks left no (valid) status. */
static json_t *
collect_ranks(struct launch *l, int *failed_rank, const char **failed_node,
    int *missing)
{
	struct rank_status	 rs;
	json_t			*arr = json_array(), *entry;
	char			*rel, *path, msg[512];
	const char		*node;
	int			 r;

	*failed_rank = -1;
	*failed_node = NULL;
	*missing = 0;
	for (r = 0; r < l->total_slots; r++) {
		xasprintf(&rel, "%s/rank-%d.json", RUNDIR_LOG, r);
		path = rundir_path(l->rundir, rel);
		free(rel);
		entry = json_object();
		json_object_set_new(entry, "rank", json_integer(r));
		if (rank_status_load(path, &rs, msg, sizeof msg) == 0 &&
		    rs.rank == r) {
			json_object_set_new(entry, "node", json_string(rs.node));
			json_object_set_new(entry, "exit", rs.exited ?
			    json_integer(rs.exit_code) : json_null());
			if (rs.ended > 0)
				json_object_set_new(entry, "ended",
				    json_real(rs.ended));
			json_object_set_new(entry, "signal", rs.signal[0] ?
			    json_string(rs.signal) : json_null());
			if (rs.exited && rs.exit_code != 0 &&
			    rs.exit_code != TRAINER_EXIT_OOM &&
			    rs.exit_code != TRAINER_EXIT_PREEMPTED &&
			    *failed_rank < 0)
				*failed_rank = r;
		} else {
			json_object_set_new(entry, "exit", json_null());
			json_object_set_new(entry, "lost", json_true());
			(*missing)++;
		}
		free(path);
		json_array_append_new(arr, entry);
	}
	if (*failed_rank >= 0 &&
	    cjson_get_string(json_array_get(arr, (size_t)*failed_rank), "node",
	    &node) == 0)
		*failed_node = node;
	return arr;
}

/*
 * Contract C6: what the ranks' exits say beyond a plain failure. The first
 * rank (in rank order) of each kind: exit 3 (the trainer ran out of
 * memory), killed by a signal other than SIGTERM, killed by SIGTERM, exit
 * 75 (the trainer checkpointed and stopped on a signal); -1: none.
 */
struct rank_kinds {
	int	oom, killed, termed, stopped;
};

static void
rank_kinds(const json_t *ranks, struct rank_kinds *k)
{
	const json_t	*e;
	const char	*sig;
	size_t		 i;
	int64_t		 code;

	k->oom = k->killed = k->termed = k->stopped = -1;
	json_array_foreach(ranks, i, e) {
		if (cjson_get_int(e, "exit", &code) == 0) {
			if (code == TRAINER_EXIT_OOM && k->oom < 0)
				k->oom = (int)i;
			if (code == TRAINER_EXIT_PREEMPTED && k->stopped < 0)
				k->stopped = (int)i;
		}
		if (json_is_integer(json_object_get(e, "signal")))
			sig = "";	/* a number: not TERM */
		else if (cjson_get_string(e, "signal", &sig) != 0)
			continue;
		if (strcmp(sig, "TERM") == 0) {
			if (k->termed < 0)
				k->termed = (int)i;
		} else if (k->killed < 0)
			k->killed = (int)i;
	}
}

/* Whether rank a (>= 0) of ranks ended before rank b, by their "ended"
 * times: a rank that exits with an error first is the cause, and ranks
 * that mpirun then kills (SIGKILL, when SIGTERM was not enough) are not. */
static int
ended_before(const json_t *ranks, int a, int b)
{
	const json_t	*ea, *eb;

	if (a < 0)
		return 0;
	ea = json_object_get(json_array_get(ranks, (size_t)a), "ended");
	eb = json_object_get(json_array_get(ranks, (size_t)b), "ended");
	return json_is_number(ea) && json_is_number(eb) &&
	    json_number_value(ea) < json_number_value(eb);
}

/* "rank R on NODE was killed by signal N (NAME)" for rank r of ranks. */
static json_t *
killed_message(const json_t *ranks, int r)
{
	const json_t	*e = json_array_get(ranks, (size_t)r);
	const json_t	*sv = json_object_get(e, "signal");
	const char	*node = "an unknown node", *name = NULL;
	char		 buf[32];
	int		 n = 0;

	(void)cjson_get_string(e, "node", &node);
	if (json_is_integer(sv))
		n = (int)json_integer_value(sv);
	else if (json_is_string(sv)) {
		n = ssh_signal_number(json_string_value(sv));
		snprintf(buf, sizeof buf, "SIG%s", json_string_value(sv));
		name = buf;
	}
	if (name == NULL && n > 0 && sigabbrev_np(n) != NULL) {
		snprintf(buf, sizeof buf, "SIG%s", sigabbrev_np(n));
		name = buf;
	}
	return json_sprintf("rank %d on %s was killed by signal %d (%s)", r,
	    node, n, name != NULL ? name : "unknown");
}

/* Sets failed_rank and failed_node of status st to rank r's. */
static void
set_failed(json_t *st, const json_t *ranks, int r)
{
	const char	*node;

	json_object_set_new(st, "failed_rank", json_integer(r));
	json_object_set_new(st, "failed_node", cjson_get_string(
	    json_array_get(ranks, (size_t)r), "node", &node) == 0 ?
	    json_string(node) : json_null());
}

/* srun's words: every node, the same number of tasks on each, block
 * distribution, PMIx. The strings it allocates go to alloc[0..3]. */
static int
srun_words(struct launch *l, const char *srun, char **av, size_t *nav,
    char **alloc)
{
	char	**names;
	size_t	  i;

	for (i = 1; i < l->n; i++) {
		if (l->nodes[i].slots != l->nodes[0].slots) {
			log_error("--launcher srun needs the same number of "
			    "slots on every node (%s has %d, %s has %d)",
			    l->nodes[0].name, l->nodes[0].slots,
			    l->nodes[i].name, l->nodes[i].slots);
			return CADRE_ERR_INVALID;
		}
	}
	names = xcalloc(l->n, sizeof *names);
	for (i = 0; i < l->n; i++)
		names[i] = l->nodes[i].name;
	alloc[0] = hostlist_compress(names, l->n);
	free(names);
	xasprintf(&alloc[1], "--nodelist=%s", alloc[0]);
	xasprintf(&alloc[2], "--nodes=%zu", l->n);
	xasprintf(&alloc[3], "--ntasks-per-node=%d", l->nodes[0].slots);
	av[(*nav)++] = (char *)srun;
	av[(*nav)++] = alloc[2];
	av[(*nav)++] = alloc[3];
	av[(*nav)++] = alloc[1];
	av[(*nav)++] = (char *)"--distribution=block";
	av[(*nav)++] = (char *)"--mpi=pmix";
	av[(*nav)++] = (char *)"--export=ALL";
	return 0;
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
 * "failed" and the message. */
static int
run_stage(struct launch *l, const struct stage_pair *pairs, size_t npairs,
    json_t *st)
{
	struct stage_totals	 t;
	char			 msg[1024], **names = node_names(l);
	double			 t0 = now_mono();
	int			 error;

	log_info("staging %zu tree(s) to %zu nodes", npairs, l->n);
	if ((error = stage_prepare(l->rundir, pairs, npairs, msg,
	    sizeof msg)) == 0)
		error = stage_nodes(l->rundir, names, l->n, npairs, 0,
		    l->sigfd, &t, msg, sizeof msg);
	json_object_set_new(st, "stage_seconds", json_real(now_mono() - t0));
	if (error == CADRE_ERR_CANCELLED) {
		log_notice("%s", msg);
		json_object_set_new(st, "reason", json_string("preempted"));
		json_object_set_new(st, "resumable", json_true());
		json_object_set_new(st, "message", json_string(msg));
	} else if (error != 0) {
		log_error("staging: %s", msg);
		json_object_set_new(st, "reason", json_string("failed"));
		json_object_set_new(st, "resumable", json_false());
		json_object_set_new(st, "message", json_sprintf("staging: %s",
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

int
cmd_launch(int argc, char **argv)
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct launch	 l;
	struct cbuf	 lostnames;
	json_t		*lost = NULL;
	const char	*rundir_opt = NULL, *hostlist = NULL, *nodefile = NULL;
	const char	*mpirun = MPIRUN_PATH, *mpi_args[LAUNCH_MPI_ARGS_MAX];
	const char	*failed_node;
	char		 msg[1024], rp[PATH_MAX], *hostfile = NULL, *agent_cmd = NULL;
	char		*logdir, *np = NULL, *status_path, *srun_alloc[4] = { 0 };
	char		**av = NULL;
	size_t		 i, nav, nmpi = 0;
	int64_t		 v;
	int		 c, slots = 1, rc = LAUNCH_EXIT_USAGE, error, preempted = 0;
	int		 wstatus, failed_rank, missing, code, wait_only = 0;
	int		 use_srun = 0;
	struct rank_kinds rk;
	const char	*srun = "srun";
	struct container ct;
	char		**cwords = NULL, **swords = NULL;
	size_t		 ncw = 0, nsw = 0;
	double		 t0, startup;
	json_t		*st = NULL, *arr, *ranks;
	struct cbuf	 why;
	struct fromenv	 fe;
	struct stage_pair stages[STAGE_PAIRS_MAX];
	size_t		 nstage = 0;
	int		 from_env = 0, keep_staged = 0, slots_set = 0;

	memset(&l, 0, sizeof l);
	memset(&ct, 0, sizeof ct);
	memset(&fe, 0, sizeof fe);
	/* Signals go through a pipe from the start (a scheduler's signal
	 * during the setup must not kill us): read in the wait and while
	 * mpirun runs. */
	if ((l.sigfd = sigpipe_open((const int[]){ SIGTERM, SIGINT, SIGHUP,
	    SIGUSR1, SIGCHLD }, 5)) == -1)
		fatal("pipe");
	cbuf_init(&lostnames, 1 << 20);
	pthread_mutex_init(&l.mu, NULL);
	l.startup_timeout = 180;
	l.term_grace = 60;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			rundir_opt = optarg;
			break;
		case 'N':
			hostlist = optarg;
			break;
		case 'f':
			nodefile = optarg;
			break;
		case 's':
			if (str_to_int64(optarg, &v) != 0 || v < 1 ||
			    v > 4096) {
				log_error("--slots %s: expected 1..4096",
				    optarg);
				goto out;
			}
			slots = (int)v;
			slots_set = 1;
			break;
		case 't':
			if (duration_parse(optarg, &l.startup_timeout) != 0) {
				log_error("--startup-timeout %s: expected a "
				    "duration such as 180s or 3m", optarg);
				goto out;
			}
			break;
		case 'g':
			if (duration_parse(optarg, &l.term_grace) != 0) {
				log_error("--term-grace %s: expected a "
				    "duration", optarg);
				goto out;
			}
			break;
		case 'm':
			mpirun = optarg;
			break;
		case 'a':
			if (nmpi >= LAUNCH_MPI_ARGS_MAX) {
				log_error("more than %d --mpi-arg",
				    LAUNCH_MPI_ARGS_MAX);
				goto out;
			}
			mpi_args[nmpi++] = optarg;
			break;
		case 'w':
			wait_only = 1;
			break;
		case 'L':
			if (strcmp(optarg, "mpirun") == 0) {
				use_srun = 0;
			} else if (strcmp(optarg, "srun") == 0) {
				use_srun = 1;
			} else {
				log_error("--launcher %s: expected mpirun or "
				    "srun", optarg);
				goto out;
			}
			break;
		case 'S':
			srun = optarg;
			break;
		case 'C':
			if (container_parse_runtime(optarg, &ct.runtime) != 0) {
				log_error("--container %s: expected none, "
				    "apptainer, singularity or enroot", optarg);
				goto out;
			}
			break;
		case 'I':
			ct.image = optarg;
			break;
		case 'B':
			if (ct.nbinds >= CONTAINER_BINDS_MAX) {
				log_error("more than %d --bind",
				    CONTAINER_BINDS_MAX);
				goto out;
			}
			ct.binds[ct.nbinds++] = optarg;
			break;
		case 'G':
			ct.nv = 1;
			break;
		case 'E':
			from_env = 1;
			break;
		case 'T':
			if (nstage >= STAGE_PAIRS_MAX) {
				log_error("more than %d --stage",
				    STAGE_PAIRS_MAX);
				goto out;
			}
			if (stage_pair_parse(optarg, &stages[nstage], msg,
			    sizeof msg) != 0) {
				log_error("%s", msg);
				goto out;
			}
			nstage++;
			break;
		case 'K':
			keep_staged = 1;
			break;
		case 'h':
			launch_usage(stdout);
			rc = 0;
			goto out;
		default:
			launch_usage(stderr);
			goto out;
		}
	}
	if (from_env && (hostlist != NULL || nodefile != NULL)) {
		log_error("--from-env finds the nodes itself: no --nodes or "
		    "--nodefile with it");
		goto out;
	}
	if (nstage > 0 && use_srun) {
		log_error("--stage copies through the agents: it needs "
		    "--launcher mpirun");
		goto out;
	}
	if (from_env && !(optind >= argc && !wait_only)) {
		/* fromenv.c: nodes, run dir, keys, and the agents started */
		if (fromenv_start(&fe, rundir_opt, slots_set ? slots : 0,
		    !use_srun, srun, &ct) != 0) {
			rc = LAUNCH_EXIT_FAILED;
			goto out;
		}
		rundir_opt = fe.rundir;
		nodefile = fe.nodefile;
	}
	if ((optind >= argc && !wait_only) ||
	    (hostlist == NULL) == (nodefile == NULL)) {
		launch_usage(stderr);
		goto out;
	}
	if ((rundir_opt = rundir_default(rundir_opt)) == NULL) {
		log_error("no run directory: pass --run-dir or set "
		    "CADRE_RUN_DIR");
		goto out;
	}
	if (realpath(rundir_opt, rp) == NULL) {
		log_error("%s: %s", rundir_opt, strerror(errno));
		goto out;
	}
	l.rundir = xstrdup(rp);
	if ((error = load_nodes(&l, hostlist, nodefile, slots)) != 0)
		goto out;
	rc = LAUNCH_EXIT_FAILED;
	if (rundir_check(l.rundir, msg, sizeof msg) != 0) {
		log_error("%s", msg);
		goto out;
	}
	logdir = rundir_path(l.rundir, RUNDIR_LOG);
	error = rundir_mkdir_private(logdir, msg, sizeof msg);
	free(logdir);
	if (error != 0) {
		log_error("%s", msg);
		goto out;
	}
	status_path = rundir_path(l.rundir, RUNDIR_STATUS);
	if (!wait_only)
		unlink(status_path);	/* a previous attempt's */
	free(status_path);
	l.keyfile = rundir_path(l.rundir, RUNDIR_CLIENT_KEY);


	/* 1. Every agent published and answering with its pinned key. */
	t0 = now_mono();
	l.deadline = t0 + (double)l.startup_timeout;
	if (use_srun) {
		/* srun reaches the nodes through Slurm: no agents to wait
		 * for. */
		if (container_check(&ct, l.rundir, msg, sizeof msg) != 0) {
			log_error("%s", msg);
			rc = LAUNCH_EXIT_USAGE;
			goto out;
		}
		for (i = 0; i < l.n; i++)
			l.nodes[i].ready = 1;
		error = 0;
	} else {
		error = wait_ready(&l);
	}
	/* one that came during the setup, or the wait's last round */
	if (error == 0 && wait_signal(&l, 0) != 0)
		error = CADRE_ERR_CANCELLED;
	startup = now_mono() - t0;
	st = json_object();
	json_object_set_new(st, "startup_seconds", json_real(startup));
	json_object_set_new(st, "nodes", json_integer((json_int_t)l.n));
	if (error == CADRE_ERR_CANCELLED) {
		log_notice("signal %d while waiting for the agents: stopping",
		    l.stop_sig);
		json_object_set_new(st, "reason", json_string("preempted"));
		json_object_set_new(st, "resumable", json_true());
		json_object_set_new(st, "message", json_string(
		    "stopped by a signal while waiting for the agents"));
		json_object_set_new(st, "exit_status",
		    json_integer(LAUNCH_EXIT_PREEMPTED));
		if (!wait_only)
			write_status(&l, st);
		rc = LAUNCH_EXIT_PREEMPTED;
		goto out;
	}
	if (error != 0 && wait_only) {
		for (i = 0; i < l.n; i++)
			if (!l.nodes[i].ready)
				log_error("%s: not ready: %s", l.nodes[i].name,
				    l.nodes[i].why);
		rc = LAUNCH_EXIT_STARTUP_TIMEOUT;
		goto out;
	}
	if (error != 0) {
		arr = json_array();
		cbuf_init(&why, 1 << 20);
		for (i = 0; i < l.n; i++) {
			if (l.nodes[i].ready)
				continue;
			json_array_append_new(arr, json_pack("{s:s, s:s}",
			    "node", l.nodes[i].name, "why", l.nodes[i].why));
			cbuf_addf(&why, "%s%s", why.len ? ", " : "",
			    l.nodes[i].name);
			log_error("%s: not ready: %s", l.nodes[i].name,
			    l.nodes[i].why[0] ? l.nodes[i].why :
			    "not probed before the deadline");
		}
		log_error("startup_timeout: %zu of %zu agents not ready after "
		    "%llds: %s", json_array_size(arr), l.n,
		    (long long)l.startup_timeout, why.data ? why.data : "");
		json_object_set_new(st, "reason", json_string("startup_timeout"));
		json_object_set_new(st, "resumable", json_true());
		json_object_set_new(st, "missing", arr);
		json_object_set_new(st, "message", json_sprintf(
		    "agents not ready after %llds: %s",
		    (long long)l.startup_timeout, why.data ? why.data : ""));
		cbuf_free(&why);
		json_object_set_new(st, "exit_status",
		    json_integer(LAUNCH_EXIT_STARTUP_TIMEOUT));
		write_status(&l, st);
		rc = LAUNCH_EXIT_STARTUP_TIMEOUT;
		goto out;
	}
	log_info("all %zu agents ready in %.3f s", l.n, startup);
	if (wait_only) {
		printf("ready %zu %.3f\n", l.n, startup);
		rc = 0;
		goto out;
	}
	if (nstage > 0 && (error = run_stage(&l, stages, nstage, st)) != 0) {
		rc = error == CADRE_ERR_CANCELLED ? LAUNCH_EXIT_PREEMPTED :
		    LAUNCH_EXIT_FAILED;
		json_object_set_new(st, "exit_status", json_integer(rc));
		write_status(&l, st);
		goto out;
	}

	/* 2. mpirun over the agents, or srun. */
	if (!use_srun && write_hostfile(&l, &hostfile) != 0)
		goto out;
	for (i = 0; i < (size_t)l.total_slots; i++) {
		char	*rel;

		xasprintf(&rel, "%s/rank-%zu.json", RUNDIR_LOG, i);
		np = rundir_path(l.rundir, rel);
		unlink(np);
		free(np);
		free(rel);
	}
	setenv("CADRE_RUN_DIR", l.rundir, 1);
	/* mpirun passes shell-quoted words (orted's arguments). */
	xasprintf(&agent_cmd, "%s rsh --shell", agent_self_path());
	xasprintf(&np, "%d", l.total_slots);
	cwords = container_exec_prefix(&ct, l.rundir, &ncw);
	swords = container_srun_options(&ct, l.rundir, &nsw);
	av = xcalloc(40 + nmpi + ncw + nsw + (size_t)(argc - optind),
	    sizeof *av);
	nav = 0;
	if (use_srun) {
		if ((error = srun_words(&l, srun, av, &nav, srun_alloc)) != 0)
			goto out;
		for (i = 0; i < nsw; i++)
			av[nav++] = swords[i];
		for (i = 0; i < nmpi; i++)
			av[nav++] = (char *)mpi_args[i];
		for (i = 0; i < ncw; i++)
			av[nav++] = cwords[i];
		goto rank_words;
	}
	av[nav++] = (char *)mpirun;
	if (geteuid() == 0)
		av[nav++] = (char *)"--allow-run-as-root";
	av[nav++] = (char *)"--hostfile";
	av[nav++] = hostfile;
	av[nav++] = (char *)"-np";
	av[nav++] = np;
	av[nav++] = (char *)"--map-by";
	av[nav++] = (char *)"slot";
	av[nav++] = (char *)"--bind-to";
	av[nav++] = (char *)"none";
	av[nav++] = (char *)"--mca";
	av[nav++] = (char *)"plm_rsh_agent";
	av[nav++] = agent_cmd;
	av[nav++] = (char *)"--mca";
	av[nav++] = (char *)"plm_rsh_no_tree_spawn";
	av[nav++] = (char *)"1";
	/* Every daemon reports straight to mpirun: with the default radix
	 * routing and no tree spawn, a daemon's report could wait on a peer
	 * not up yet, and mpirun sometimes hung ("does not know how to
	 * route a message", about 1 run in 30 on loopback). */
	av[nav++] = (char *)"--mca";
	av[nav++] = (char *)"routed";
	av[nav++] = (char *)"direct";
	/* orted stays attached to its SSH session instead of daemonizing:
	 * it is then the agent's child, which stops it with the session
	 * (agent stopped, connection lost), and a lost node ends the job. */
	av[nav++] = (char *)"--leave-session-attached";
	/* The agents are the launcher and the hostfile the allocation:
	 * inside a Slurm (or PBS, ...) job mpirun would otherwise launch
	 * through srun and refuse the hostfile's addresses as "not in the
	 * allocation" (launch --from-env, and the cadred job scripts). */
	av[nav++] = (char *)"--mca";
	av[nav++] = (char *)"plm";
	av[nav++] = (char *)"rsh";
	av[nav++] = (char *)"--mca";
	av[nav++] = (char *)"ras";
	av[nav++] = (char *)"^slurm,tm,gridengine,lsf,alps";
	av[nav++] = (char *)"-x";
	av[nav++] = (char *)"CADRE_RUN_DIR";
	for (i = 0; i < nmpi; i++)
		av[nav++] = (char *)mpi_args[i];
 rank_words:
	av[nav++] = (char *)agent_self_path();
	av[nav++] = (char *)"rank";
	av[nav++] = (char *)"--";
	for (c = optind; c < argc; c++)
		av[nav++] = argv[c];
	av[nav] = NULL;

	wstatus = run_mpirun(&l, av, &preempted);
	ranks = collect_ranks(&l, &failed_rank, &failed_node, &missing);
	json_object_set_new(st, "ranks", ranks);
	json_object_set_new(st, "mpirun_exit", WIFEXITED(wstatus) ?
	    json_integer(WEXITSTATUS(wstatus)) : json_null());
	code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
	rank_kinds(ranks, &rk);
	/*
	 * Contract C6, root causes first: when one rank dies, mpirun stops
	 * the others (SIGTERM, which the trainer answers with a checkpoint
	 * and exit 75), so their exits say less than the first one's.
	 */
	if (preempted) {
		rc = LAUNCH_EXIT_PREEMPTED;
		json_object_set_new(st, "reason", json_string("preempted"));
		json_object_set_new(st, "resumable", json_true());
		json_object_set_new(st, "message",
		    json_string("stopped by a signal"));
	} else if (rk.oom >= 0) {
		rc = LAUNCH_EXIT_OOM;
		json_object_set_new(st, "reason", json_string("oom"));
		json_object_set_new(st, "resumable", json_false());
		set_failed(st, ranks, rk.oom);
		json_object_set_new(st, "message", json_sprintf(
		    "rank %d ran out of memory (exit %d)", rk.oom,
		    TRAINER_EXIT_OOM));
		log_error("%s", json_string_value(json_object_get(st,
		    "message")));
	} else if ((rk.killed >= 0 && !ended_before(ranks, failed_rank,
	    rk.killed)) || (failed_rank < 0 && rk.termed >= 0)) {
		/* a signal launch did not send: the node, or someone on
		 * it, killed the rank */
		int	r = rk.killed >= 0 ? rk.killed : rk.termed;

		rc = LAUNCH_EXIT_NODE_FAIL;
		json_object_set_new(st, "reason", json_string("node_fail"));
		json_object_set_new(st, "resumable", json_true());
		set_failed(st, ranks, r);
		json_object_set_new(st, "message", killed_message(ranks, r));
		log_error("%s", json_string_value(json_object_get(st,
		    "message")));
	} else if (failed_rank < 0 && rk.stopped >= 0) {
		/* the trainer checkpointed and stopped on a signal that did
		 * not come through launch (the scheduler's, on the node) */
		rc = LAUNCH_EXIT_PREEMPTED;
		json_object_set_new(st, "reason", json_string("preempted"));
		json_object_set_new(st, "resumable", json_true());
		set_failed(st, ranks, rk.stopped);
		json_object_set_new(st, "message", json_sprintf(
		    "rank %d stopped after a checkpoint (exit %d)", rk.stopped,
		    TRAINER_EXIT_PREEMPTED));
	} else if (failed_rank >= 0) {
		rc = LAUNCH_EXIT_FAILED;
		json_int_t ec = json_integer_value(json_object_get(
		    json_array_get(ranks, (size_t)failed_rank), "exit"));
		log_error("rank %d on %s exited with status %lld", failed_rank,
		    failed_node ? failed_node : "an unknown node",
		    (long long)ec);
		json_object_set_new(st, "reason", json_string("failed"));
		json_object_set_new(st, "resumable", json_false());
		json_object_set_new(st, "failed_rank",
		    json_integer(failed_rank));
		json_object_set_new(st, "failed_node",
		    failed_node ? json_string(failed_node) : json_null());
		json_object_set_new(st, "message", json_sprintf(
		    "rank %d on %s exited with status %lld", failed_rank,
		    failed_node ? failed_node : "an unknown node",
		    (long long)ec));
	} else if (code != 0 && !use_srun &&
	    find_lost(&l, &lost, &lostnames) > 0) {
		rc = LAUNCH_EXIT_NODE_FAIL;
		log_error("node_fail: the agent of %s no longer answers",
		    lostnames.data);
		json_object_set_new(st, "reason", json_string("node_fail"));
		json_object_set_new(st, "resumable", json_true());
		json_object_set_new(st, "lost", lost);
		lost = NULL;
		json_object_set_new(st, "message", json_sprintf(
		    "lost node(s): %s", lostnames.data));
	} else if (missing > 0 || code != 0) {
		rc = missing > 0 ? LAUNCH_EXIT_NODE_FAIL : LAUNCH_EXIT_FAILED;
		log_error("mpirun %s %d; %d of %d ranks left no status",
		    WIFEXITED(wstatus) ? "exited with status" :
		    "was killed by signal", WIFEXITED(wstatus) ?
		    WEXITSTATUS(wstatus) : WTERMSIG(wstatus), missing,
		    l.total_slots);
		json_object_set_new(st, "reason", json_string(missing > 0 ?
		    "node_fail" : "failed"));
		json_object_set_new(st, "resumable", missing > 0 ?
		    json_true() : json_false());
		json_object_set_new(st, "message", json_sprintf(
		    "mpirun exited with status %d; %d ranks left no status",
		    code, missing));
	} else {
		rc = LAUNCH_EXIT_DONE;
		json_object_set_new(st, "reason", json_string("done"));
		json_object_set_new(st, "resumable", json_false());
	}
	if (nstage > 0 && !keep_staged)
		clean_stage(&l, nstage);
	json_object_set_new(st, "exit_status", json_integer(rc));
	write_status(&l, st);
 out:
	for (i = 0; i < nstage; i++)
		stage_pair_free(&stages[i]);
	fromenv_stop(&fe);
	json_decref(lost);
	cbuf_free(&lostnames);
	free(av);
	free(np);
	free(agent_cmd);
	container_free_words(cwords);
	container_free_words(swords);
	for (i = 0; i < 4; i++)
		free(srun_alloc[i]);
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
