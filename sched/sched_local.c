/*
 * The local backend: jobs run on this machine, the job script's N virtual
 * nodes being `cadre-agent serve` processes on 127.0.3.1..N, so a run goes
 * through the same agent and launch path as on a cluster
 * (etc/templates/local.sh.in, docs/daemon-backends.md).
 *
 * submit() double-forks a supervisor (setsid: it outlives cadred, and a
 * restarted cadred finds its jobs again by their records). The supervisor
 * runs the script in a process group of its own with its output in
 * RUN_DIR/job.out, enforces the time limit as Slurm does (SIGUSR1 to the
 * script signal_grace before it, SIGTERM at it, SIGKILL to every process
 * of the job 30 s later), and writes the job's record, LOCAL_DIR/ID.json,
 * atomically: once when the script starts, once when it has ended. The
 * job id is "local-PID-TICKS", the supervisor's pid and its start time in
 * clock ticks since boot (/proc/PID/stat), so that a pid the kernel has
 * reused is not taken for the job. cancel() sends the supervisor SIGTERM; it
 * passes SIGTERM to the script's process group, SIGKILL 30 s later, and
 * records "cancelled".
 *
 * The supervisor is forked from cadred, which may have threads (libcurl's
 * resolver): it calls no allocator and no stdio on streams, every string
 * it needs being prepared before the fork, except for opendir() in its
 * scans of /proc (glibc's fork() leaves malloc usable in the child).
 *
 * Dry mode (bench/daemon): submit() writes a record of a job that never
 * runs ("queued" forever, "local-dry-..." ids) without a fork or fsync.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "error.h"
#include "jobscript.h"
#include "json.h"
#include "log.h"
#include "paths.h"
#include "rundir.h"
#include "scheduler.h"
#include "strutil.h"
#include "xmalloc.h"

#define LOCAL_RECORD_MAX	((size_t)64 << 10)	/* bytes of one ID.json */
#define LOCAL_KILL_AFTER	30	/* seconds from SIGTERM to SIGKILL */
#define LOCAL_START_WAIT_MS	10000	/* for the supervisor's job id */
#define LOCAL_DRY_PREFIX	"local-dry-"
#define LOCAL_NODES_MAX		254	/* 127.0.3.1 .. 127.0.3.254 */
#define LOCAL_PROCS_MAX		65536	/* processes a /proc scan sees */

struct local {
	char	*dir;
	int	 dry;
	int64_t	 second_ms;
};

/* What the supervisor needs, all of it allocated before the fork. */
struct sup {
	const char	*script;
	const char	*run_dir;
	const char	*out_path;	/* RUN_DIR/job.out */
	const char	*rec_dir;
	const char	*fields;	/* the record's constant members, JSON
					 * without braces */
	char		*buf;		/* for a record's text */
	size_t		 buflen;
	char		*path;		/* for the record's paths */
	size_t		 pathlen;
	char		*tmp;
	int64_t		 usr1_ms, term_ms, kill_ms;	/* from the start; -1: none */
	int		 fd;		/* write end of the id pipe */
	pid_t		*pids, *ppids;	/* for a /proc scan */
	size_t		 maxprocs;
};

/* ---------------------------------------------------------------- /proc */

int
local_parse_stat(const char *buf, long *ppid, unsigned long long *ticks,
    int *zombie)
{
	const char		*p;
	int			 field;
	unsigned long long	 v = 0;

	/* the command name may hold spaces and parentheses: fields count
	 * from the last ')' */
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ')
		return CADRE_ERR_INVALID;
	p += 2;
	*zombie = *p == 'Z' || *p == 'X';
	*ppid = 0;
	/* field 3 is the state, 4 the parent; starttime is field 22 */
	for (field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (p == NULL)
			return CADRE_ERR_INVALID;
		p++;
		if (field == 3) {
			while (*p >= '0' && *p <= '9' && *ppid < 4194304)
				*ppid = *ppid * 10 + (*p++ - '0');
		}
	}
	if (*p < '0' || *p > '9')
		return CADRE_ERR_INVALID;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (ULLONG_MAX - 9) / 10)
			return CADRE_ERR_RANGE;
		v = v * 10 + (unsigned long long)(*p - '0');
	}
	if (*p != ' ' && *p != '\0' && *p != '\n')
		return CADRE_ERR_INVALID;
	*ticks = v;
	return 0;
}

/*
 * The parent and start time (clock ticks after boot) of process pid, 0 for
 * ourselves; *zombie when it has exited but not been reaped. ppid and
 * zombie may be NULL. Only open/read: the supervisor calls it.
 */
static int
proc_stat(pid_t pid, pid_t *ppid, unsigned long long *ticks, int *zombie)
{
	char	path[64], buf[1024];
	ssize_t	n;
	long	pp;
	int	fd, z, r, saved;

	if (pid == 0)
		snprintf(path, sizeof path, "/proc/self/stat");
	else
		snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return CADRE_ERR_SYSTEM;
	n = read(fd, buf, sizeof buf - 1);
	saved = errno;
	close(fd);
	errno = saved;
	if (n < 0)
		return CADRE_ERR_SYSTEM;
	if (n == 0)
		return CADRE_ERR_IO;
	buf[n] = '\0';
	if ((r = local_parse_stat(buf, &pp, ticks, &z)) != 0)
		return r;
	if (ppid != NULL)
		*ppid = (pid_t)pp;
	if (zombie != NULL)
		*zombie = z;
	return 0;
}

/* Whether the process of a job id still runs (same pid, same start). */
static int
proc_alive(pid_t pid, unsigned long long ticks)
{
	unsigned long long	t;
	int			z = 0;

	return pid > 0 && proc_stat(pid, NULL, &t, &z) == 0 && t == ticks &&
	    !z;
}

int
local_parse_id(const char *id, long *pid, unsigned long long *ticks)
{
	char			*end;
	unsigned long		 p;
	unsigned long long	 t;

	if (strncmp(id, "local-", 6) != 0 || id[6] < '1' || id[6] > '9')
		return CADRE_ERR_INVALID;
	errno = 0;
	p = strtoul(id + 6, &end, 10);
	if (errno != 0 || *end != '-' || p > 4194304 || end[1] < '0' ||
	    end[1] > '9')
		return CADRE_ERR_INVALID;
	t = strtoull(end + 1, &end, 10);
	if (errno != 0 || *end != '\0')
		return CADRE_ERR_INVALID;
	*pid = (long)p;
	*ticks = t;
	return 0;
}

static int
parse_id(const char *id, pid_t *pid, unsigned long long *ticks)
{
	long	p;
	int	r;

	if ((r = local_parse_id(id, &p, ticks)) != 0)
		return r;
	*pid = (pid_t)p;
	return 0;
}

static int
is_dry_id(const char *id)
{
	return strncmp(id, LOCAL_DRY_PREFIX, sizeof LOCAL_DRY_PREFIX - 1) == 0;
}

/* ---------------------------------------------------------------- supervisor */

static int64_t
mono_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 0, CADRE_ERR_SYSTEM with errno set, or CADRE_ERR_IO when write()
 * wrote nothing. */
static int
write_all(int fd, const char *p, size_t n)
{
	ssize_t	w;

	while (n > 0) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return CADRE_ERR_SYSTEM;
		if (w == 0)
			return CADRE_ERR_IO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Writes text to path through tmp, atomically; fsync unless nosync. 0,
 * CADRE_ERR_SYSTEM with the failed step's errno, or CADRE_ERR_IO. */
static int
write_file_atomic(const char *path, const char *tmp, const char *text,
    int nosync)
{
	int	fd, r, saved;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return CADRE_ERR_SYSTEM;
	r = write_all(fd, text, strlen(text));
	if (r == 0 && !nosync && fsync(fd) != 0)
		r = CADRE_ERR_SYSTEM;
	saved = errno;
	if (close(fd) != 0 && r == 0)
		r = CADRE_ERR_SYSTEM;
	else
		errno = saved;
	if (r == 0 && rename(tmp, path) != 0)
		r = CADRE_ERR_SYSTEM;
	if (r != 0) {
		saved = errno;
		(void)unlink(tmp);
		errno = saved;
	}
	return r;
}

/* The supervisor's record: state "running" (code < -1), or the end. */
static void
sup_record(struct sup *a, const char *id, unsigned long long ticks,
    pid_t script, const char *state, int code, int sig, const char *msg)
{
	int	n;

	snprintf(a->path, a->pathlen, "%s/%s.json", a->rec_dir, id);
	snprintf(a->tmp, a->pathlen, "%s/.%s.json.tmp", a->rec_dir, id);
	if (strcmp(state, "running") == 0)
		n = snprintf(a->buf, a->buflen, "{\"version\": 1, \"id\": \"%s\", "
		    "\"pid\": %ld, \"start_ticks\": %llu, \"script_pid\": %ld, "
		    "%s, \"state\": \"running\", \"exit_code\": null, "
		    "\"exit_signal\": null, \"ended\": null, \"message\": null}\n",
		    id, (long)getpid(), ticks, (long)script, a->fields);
	else
		n = snprintf(a->buf, a->buflen, "{\"version\": 1, \"id\": \"%s\", "
		    "\"pid\": %ld, \"start_ticks\": %llu, \"script_pid\": %ld, "
		    "%s, \"state\": \"%s\", \"exit_code\": %d, "
		    "\"exit_signal\": %d, \"ended\": %lld, \"message\": "
		    "\"%s\"}\n", id, (long)getpid(), ticks, (long)script,
		    a->fields, state, code, sig, (long long)time(NULL), msg);
	if (n < 0 || (size_t)n >= a->buflen)
		return;
	(void)write_file_atomic(a->path, a->tmp, a->buf, 0);
}

static void
close_from(int lowfd)
{
	struct rlimit	rl;
	long		fd, max = 65536;

#ifdef CLOSE_RANGE_CLOEXEC	/* glibc 2.34 and Linux headers that have it */
	if (close_range((unsigned)lowfd, ~0U, 0) == 0)
		return;
#endif
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)max)
		max = (long)rl.rlim_cur;
	for (fd = lowfd; fd < max; fd++)
		(void)close((int)fd);
}

/*
 * Sends sig to every descendant of the supervisor; returns how many there
 * were. The supervisor is a child subreaper, so that processes orphaned
 * by their parent (mpirun and the orteds when the script and its agents
 * were killed) stay its descendants instead of going to init.
 */
static size_t
kill_tree(struct sup *a, int sig)
{
	DIR			*d;
	struct dirent		*e;
	size_t			 n = 0, i, k, found = 0;
	pid_t			 me = getpid(), p, pp;
	int			 changed, z;
	unsigned long long	 t;

	if ((d = opendir("/proc")) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL && n < a->maxprocs) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		p = (pid_t)strtol(e->d_name, NULL, 10);
		if (p == me || proc_stat(p, &pp, &t, &z) != 0 || z)
			continue;
		a->pids[n] = p;
		a->ppids[n++] = pp;
	}
	closedir(d);
	/* mark descendants by setting their parent to me, until no change */
	do {
		changed = 0;
		for (i = 0; i < n; i++) {
			if (a->ppids[i] == me)
				continue;
			for (k = 0; k < n; k++) {
				if (a->pids[k] == a->ppids[i] &&
				    a->ppids[k] == me) {
					a->ppids[i] = me;
					changed = 1;
					break;
				}
			}
		}
	} while (changed);
	for (i = 0; i < n; i++) {
		if (a->ppids[i] == me) {
			(void)kill(a->pids[i], sig);
			found++;
		}
	}
	return found;
}

/* Reaps every child that has exited; *wst gets the script's status. */
static void
reap(pid_t script, int *script_done, int *wst)
{
	pid_t	p;
	int	w;

	while ((p = waitpid(-1, &w, WNOHANG)) > 0) {
		if (p == script) {
			*script_done = 1;
			*wst = w;
		}
	}
}

/* Waits up to ms for the descendants to go, reaping them. */
static void
drain(struct sup *a, const sigset_t *set, pid_t script, int *script_done,
    int *wst, int64_t ms)
{
	struct timespec	ts = { 0, 100 * 1000000 };
	int64_t		end = mono_ms() + ms;
	siginfo_t	si;

	while (kill_tree(a, 0) > 0 && mono_ms() < end) {
		(void)sigtimedwait(set, &si, &ts);
		reap(script, script_done, wst);
	}
}

/* The supervisor: never returns. */
static void __attribute__((noreturn))
supervise(struct sup *a)
{
	sigset_t		 set, none;
	struct sigaction	 sa;
	struct timespec		 ts;
	siginfo_t		 si;
	unsigned long long	 ticks = 0;
	char			 id[SCHED_JOB_ID_MAX], msg[160];
	const char		*state;
	int64_t			 start, now, next, kill_at = -1;
	pid_t			 script;
	int			 fd, out, sig, wst = 0, timed_out = 0,
				 cancelled = 0, usr1_sent = 0, term_sent = 0,
				 code = -1, termsig = 0, done = 0;

	/* cadred's dispositions and mask must not reach the job: an
	 * ignored SIGCHLD would even reap the script for us */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &sa, NULL);
	/* a cadred gone before it read the job id must not kill us */
	sa.sa_handler = SIG_IGN;
	(void)sigaction(SIGPIPE, &sa, NULL);
	sigemptyset(&none);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_SETMASK, &set, NULL);

	if ((fd = open("/dev/null", O_RDWR)) >= 0) {
		(void)dup2(fd, 0);
		(void)dup2(fd, 1);
		(void)dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	if (a->fd != 3) {
		(void)dup2(a->fd, 3);
		a->fd = 3;
	}
	close_from(4);
	(void)fcntl(3, F_SETFD, FD_CLOEXEC);
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

	if (proc_stat(0, NULL, &ticks, NULL) != 0)
		_exit(1);
	snprintf(id, sizeof id, "local-%ld-%llu", (long)getpid(), ticks);

	out = open(a->out_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0600);
	if (out < 0) {
		snprintf(msg, sizeof msg, "cannot open job.out: %s",
		    strerror(errno));
		sup_record(a, id, ticks, 0, REASON_FAILED, -1, 0, msg);
		(void)write_all(3, id, strlen(id));
		_exit(1);
	}
	script = fork();
	if (script == 0) {
		char	*argv[2];

		(void)setpgid(0, 0);
		(void)dup2(out, 1);
		(void)dup2(out, 2);
		close(3);
		sa.sa_handler = SIG_DFL;
		(void)sigaction(SIGPIPE, &sa, NULL);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (chdir(a->run_dir) != 0) {
			/* the script cd's itself and says why */
		}
		argv[0] = (char *)a->script;
		argv[1] = NULL;
		execv(a->script, argv);
		snprintf(msg, sizeof msg, "cadre: cannot run the job script: "
		    "%s\n", strerror(errno));
		(void)write_all(2, msg, strlen(msg));
		_exit(127);
	}
	if (script < 0) {
		snprintf(msg, sizeof msg, "fork: %s", strerror(errno));
		sup_record(a, id, ticks, 0, REASON_FAILED, -1, 0, msg);
		(void)write_all(3, id, strlen(id));
		_exit(1);
	}
	(void)setpgid(script, script);
	close(out);
	start = mono_ms();
	sup_record(a, id, ticks, script, "running", 0, 0, "");
	(void)write_all(3, id, strlen(id));
	close(3);

	for (;;) {
		now = mono_ms() - start;
		if (!usr1_sent && a->usr1_ms >= 0 && now >= a->usr1_ms &&
		    !cancelled) {
			usr1_sent = 1;
			(void)kill(script, SIGUSR1);
		}
		if (!term_sent && now >= a->term_ms && !cancelled) {
			/* the script passes it on to launch, which lets the
			 * ranks checkpoint */
			term_sent = timed_out = 1;
			(void)kill(script, SIGTERM);
			kill_at = now + a->kill_ms;
		}
		if (kill_at >= 0 && now >= kill_at) {
			(void)kill(-script, SIGKILL);
			(void)kill_tree(a, SIGKILL);
			kill_at = -1;
		}
		next = INT64_MAX;
		if (!usr1_sent && a->usr1_ms >= 0 && !cancelled)
			next = a->usr1_ms;
		if (!term_sent && !cancelled && a->term_ms < next)
			next = a->term_ms;
		if (kill_at >= 0 && kill_at < next)
			next = kill_at;
		if (next == INT64_MAX)
			next = now + 60000;
		if (next - now > 60000)
			next = now + 60000;
		ts.tv_sec = (time_t)((next - now) / 1000);
		ts.tv_nsec = (long)((next - now) % 1000) * 1000000;
		sig = sigtimedwait(&set, &si, &ts);
		if (sig == SIGTERM || sig == SIGINT) {
			if (!cancelled && !timed_out) {
				cancelled = 1;
				(void)kill(-script, SIGTERM);
				kill_at = mono_ms() - start + a->kill_ms;
			}
		}
		reap(script, &done, &wst);
		if (done)
			break;
	}
	/* what the script left behind: agents it did not stop, or mpirun
	 * and the orteds when it was killed */
	if (kill_tree(a, SIGTERM) > 0) {
		drain(a, &set, script, &done, &wst, kill_at >= 0 ? 2000 :
		    a->kill_ms);
		(void)kill_tree(a, SIGKILL);
		drain(a, &set, script, &done, &wst, 5000);
	}
	if (WIFEXITED(wst))
		code = WEXITSTATUS(wst);
	else if (WIFSIGNALED(wst))
		termsig = WTERMSIG(wst);
	if (cancelled) {
		state = REASON_CANCELLED;
		snprintf(msg, sizeof msg, REASON_CANCELLED);
	} else if (timed_out) {
		state = REASON_TIMEOUT;
		snprintf(msg, sizeof msg, "reached its time limit");
	} else if (code == 0) {
		state = REASON_DONE;
		snprintf(msg, sizeof msg, "exited 0");
	} else {
		state = REASON_FAILED;
		if (termsig != 0)
			snprintf(msg, sizeof msg, "killed by signal %d",
			    termsig);
		else
			snprintf(msg, sizeof msg, "exited %d", code);
	}
	sup_record(a, id, ticks, script, state, code, termsig, msg);
	_exit(0);
}

/* ---------------------------------------------------------------- backend */

static int
local_init(struct sched *s)
{
	struct local	*l = xcalloc(1, sizeof *l);
	char		*state = NULL;
	int		 r;

	if (s->cfg.local_dir != NULL)
		l->dir = xstrdup(s->cfg.local_dir);
	else {
		if ((r = paths_state_dir(&state)) != 0)
			goto fail;
		xasprintf(&l->dir, "%s/local", state);
		free(state);
	}
	if (l->dir[0] != '/') {
		log_error("local backend: %s: the record dir must be an "
		    "absolute path", l->dir);
		r = CADRE_ERR_INVALID;
		goto fail;
	}
	if ((r = paths_mkdir(l->dir, 0700, 1)) != 0)
		goto fail;
	l->dry = s->cfg.dry;
	l->second_ms = s->cfg.local_second_ms > 0 ? s->cfg.local_second_ms :
	    1000;
	s->priv = l;
	return 0;
fail:
	free(l->dir);
	free(l);
	return r;
}

static void
local_free(struct sched *s)
{
	struct local	*l = s->priv;

	if (l == NULL)
		return;
	free(l->dir);
	free(l);
	s->priv = NULL;
}

/* The record's constant members, as JSON without the braces. */
static char *
record_fields(const struct sched_job *j)
{
	json_t		*o = json_object();
	struct timespec	 ts;
	char		*text, *inner, nodes[64];
	size_t		 n;

	clock_gettime(CLOCK_REALTIME, &ts);

	if (j->nodes == 1)
		snprintf(nodes, sizeof nodes, "node1");
	else
		snprintf(nodes, sizeof nodes, "node[1-%" PRId64 "]", j->nodes);
	json_object_set_new(o, "job_name", json_string(j->job_name));
	json_object_set_new(o, "run_id", json_string(j->run_id));
	json_object_set_new(o, "run_dir", json_string(j->run_dir));
	json_object_set_new(o, "script", j->script != NULL ?
	    json_string(j->script) : json_null());
	json_object_set_new(o, "nodes", json_string(nodes));
	json_object_set_new(o, "submitted", json_integer(ts.tv_sec));
	/* orders the submissions of one second for find() */
	json_object_set_new(o, "submitted_ns", json_integer(
	    (json_int_t)ts.tv_sec * 1000000000 + ts.tv_nsec));
	json_object_set_new(o, "time_limit", json_integer(j->time_limit));
	json_object_set_new(o, "signal_grace", json_integer(j->signal_grace));
	text = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(o);
	if (text == NULL)
		return NULL;
	n = strlen(text);
	inner = xstrndup(text + 1, n - 2);
	free(text);
	return inner;
}

static int
submit_dry(struct local *l, const struct sched_job *j, char **job_id)
{
	struct timespec	 ts;
	char		 id[SCHED_JOB_ID_MAX];
	char		*fields, *text = NULL, *path = NULL, *tmp = NULL;
	int		 r = CADRE_ERR_SYSTEM;

	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(id, sizeof id, LOCAL_DRY_PREFIX "%s-%lld%09ld", j->run_id,
	    (long long)ts.tv_sec, ts.tv_nsec);
	if ((fields = record_fields(j)) == NULL)
		return CADRE_ERR_INVALID;
	xasprintf(&text, "{\"version\": 1, \"id\": \"%s\", \"dry\": true, %s, "
	    "\"state\": \"queued\"}\n", id, fields);
	xasprintf(&path, "%s/%s.json", l->dir, id);
	xasprintf(&tmp, "%s/.%s.json.tmp", l->dir, id);
	/* a bench of 10,000 submissions: no fsync */
	if ((r = write_file_atomic(path, tmp, text, 1)) != 0) {
		log_error("local: %s: %s", path, r == CADRE_ERR_SYSTEM ?
		    strerror(errno) : cadre_strerror(r));
		goto out;
	}
	*job_id = xstrdup(id);
	r = 0;
out:
	free(fields);
	free(text);
	free(path);
	free(tmp);
	return r;
}

static int
local_submit(struct sched *s, const struct sched_job *j, char **job_id)
{
	struct local	*l = s->priv;
	struct sup	 a;
	char		 err[JOBSCRIPT_ERR_MAX], id[SCHED_JOB_ID_MAX];
	char		*fields = NULL, *out = NULL;
	pid_t		 c1;
	int		 p[2] = { -1, -1 }, st, r;
	size_t		 n = 0;
	int64_t		 left;

	*job_id = NULL;
	memset(&a, 0, sizeof a);
	if ((r = jobscript_check_job(j, err, sizeof err)) != 0) {
		log_error("local: %s", err);
		return r;
	}
	if (l->dry)
		return submit_dry(l, j, job_id);
	if (j->script == NULL) {
		log_error("local: no job script");
		return CADRE_ERR_INVALID;
	}
	if (j->nodes > LOCAL_NODES_MAX) {
		log_error("local: %" PRId64 " nodes: the local backend has at "
		    "most %d virtual nodes", j->nodes, LOCAL_NODES_MAX);
		return CADRE_ERR_INVALID;
	}
	if ((fields = record_fields(j)) == NULL)
		return CADRE_ERR_INVALID;
	xasprintf(&out, "%s/" RUNDIR_JOB_OUT, j->run_dir);
	a.script = j->script;
	a.run_dir = j->run_dir;
	a.out_path = out;
	a.rec_dir = l->dir;
	a.fields = fields;
	a.buflen = strlen(fields) + 1024;
	a.buf = xmalloc(a.buflen);
	a.pathlen = strlen(l->dir) + SCHED_JOB_ID_MAX + 32;
	a.path = xmalloc(a.pathlen);
	a.tmp = xmalloc(a.pathlen);
	a.term_ms = j->time_limit * l->second_ms;
	a.usr1_ms = j->signal_grace > 0 ?
	    (j->time_limit - j->signal_grace) * l->second_ms : -1;
	a.kill_ms = LOCAL_KILL_AFTER * l->second_ms;
	a.maxprocs = LOCAL_PROCS_MAX;
	a.pids = xcalloc(a.maxprocs, sizeof *a.pids);
	a.ppids = xcalloc(a.maxprocs, sizeof *a.ppids);
	if (pipe2(p, O_CLOEXEC) != 0) {
		r = CADRE_ERR_SYSTEM;
		goto out;
	}
	a.fd = p[1];
	if ((c1 = fork()) < 0) {
		log_error("local: fork: %s", strerror(errno));
		r = CADRE_ERR_SYSTEM;
		goto out;
	}
	if (c1 == 0) {
		pid_t	c2;

		close(p[0]);
		(void)setsid();
		c2 = fork();
		if (c2 == 0)
			supervise(&a);
		_exit(c2 < 0 ? 1 : 0);
	}
	close(p[1]);
	p[1] = -1;
	/* cadred may reap it first through its own SIGCHLD handling */
	while (waitpid(c1, &st, 0) < 0 && errno == EINTR)
		;
	/* the supervisor writes its id once the script runs */
	left = LOCAL_START_WAIT_MS;
	while (n < sizeof id - 1 && left > 0) {
		struct pollfd	pfd = { .fd = p[0], .events = POLLIN };
		int64_t		t0 = mono_ms();
		ssize_t		k;

		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			break;
		left -= mono_ms() - t0;
		k = read(p[0], id + n, sizeof id - 1 - n);
		if (k == 0)
			break;
		if (k < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			break;
		}
		n += (size_t)k;
	}
	id[n] = '\0';
	if (n == 0 || !sched_job_id_ok(id)) {
		log_error("local: the job's supervisor did not start");
		r = CADRE_ERR_SYSTEM;
		goto out;
	}
	*job_id = xstrdup(id);
	r = 0;
out:
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	free(a.buf);
	free(a.pids);
	free(a.ppids);
	free(a.path);
	free(a.tmp);
	free(fields);
	free(out);
	return r;
}

/* Loads LOCAL_DIR/ID.json: 0, CADRE_ERR_NOT_FOUND, or another error. */
static int
load_record(const struct local *l, const char *id, json_t **rec)
{
	char	*path = NULL;
	int	 r;

	xasprintf(&path, "%s/%s.json", l->dir, id);
	r = cjson_load_file(path, LOCAL_RECORD_MAX, rec, NULL);
	if (r == CADRE_ERR_SYSTEM && errno == ENOENT)
		r = CADRE_ERR_NOT_FOUND;
	else if (r != 0)
		log_warn("local: %s: %s", path, cadre_strerror(r));
	free(path);
	return r;
}

static enum sched_state
record_state(const json_t *rec)
{
	const char	*st = "";

	(void)cjson_get_string(rec, "state", &st);
	if (strcmp(st, "queued") == 0)
		return SCHED_QUEUED;
	if (strcmp(st, "running") == 0)
		return SCHED_RUNNING;
	if (strcmp(st, REASON_DONE) == 0)
		return SCHED_DONE;
	if (strcmp(st, REASON_FAILED) == 0)
		return SCHED_FAILED;
	if (strcmp(st, REASON_TIMEOUT) == 0)
		return SCHED_TIMEOUT;
	if (strcmp(st, REASON_CANCELLED) == 0)
		return SCHED_CANCELLED;
	return SCHED_UNKNOWN;
}

/*
 * A dry job is queued while its record exists, cancelled once the marker
 * ID.cancelled does: two stat() calls instead of reading and parsing
 * the record, for bench/daemon's 10,000 runs polled at once.
 */
static void
poll_dry(struct local *l, const char *id, struct sched_status *o)
{
	struct stat	 sb;
	char		*path = NULL;

	xasprintf(&path, "%s/%s.cancelled", l->dir, id);
	if (stat(path, &sb) == 0) {
		o->state = SCHED_CANCELLED;
		snprintf(o->reason, sizeof o->reason, REASON_CANCELLED);
	} else {
		free(path);
		xasprintf(&path, "%s/%s.json", l->dir, id);
		if (stat(path, &sb) == 0)
			o->state = SCHED_QUEUED;
		else
			snprintf(o->reason, sizeof o->reason, "no record");
	}
	free(path);
}

static void
poll_one(struct local *l, const char *id, struct sched_status *o)
{
	json_t			*rec = NULL;
	const char		*s;
	pid_t			 pid = 0;
	unsigned long long	 ticks = 0;
	int64_t			 v;
	int			 tries;

	if (is_dry_id(id)) {
		poll_dry(l, id, o);
		return;
	}
	if (parse_id(id, &pid, &ticks) != 0)
		return;
	for (tries = 0; tries < 2; tries++) {
		json_decref(rec);
		rec = NULL;
		if (load_record(l, id, &rec) != 0) {
			snprintf(o->reason, sizeof o->reason, "no record");
			return;
		}
		o->state = record_state(rec);
		if (o->state != SCHED_RUNNING || proc_alive(pid, ticks))
			break;
		/* it may have written its end since we read the record */
		o->state = SCHED_UNKNOWN;
	}
	if (o->state == SCHED_UNKNOWN)
		snprintf(o->reason, sizeof o->reason, "the supervisor is gone "
		    "without a record of the job's end");
	else if (cjson_get_string(rec, "message", &s) == 0)
		snprintf(o->reason, sizeof o->reason, "%s", s);
	if (cjson_get_string(rec, "nodes", &s) == 0)
		snprintf(o->nodes, sizeof o->nodes, "%s", s);
	if (sched_state_final(o->state)) {
		if (cjson_get_int(rec, "exit_code", &v) == 0)
			o->exit_code = (int)v;
		if (cjson_get_int(rec, "exit_signal", &v) == 0)
			o->exit_signal = (int)v;
	}
	json_decref(rec);
}

static int
local_poll(struct sched *s, const char *const *ids, size_t n,
    struct sched_status *out)
{
	size_t	i;

	for (i = 0; i < n; i++)
		poll_one(s->priv, ids[i], &out[i]);
	return 0;
}

static int
local_cancel(struct sched *s, const char *id)
{
	struct local		*l = s->priv;
	json_t			*rec = NULL;
	pid_t			 pid;
	unsigned long long	 ticks;
	char			*path = NULL;
	int			 r, fd = -1;

	if (is_dry_id(id)) {
		if ((r = load_record(l, id, &rec)) != 0)
			return r;
		r = 0;
		if (record_state(rec) == SCHED_QUEUED) {
			json_object_set_new(rec, "state",
			    json_string(REASON_CANCELLED));
			json_object_set_new(rec, "message",
			    json_string(REASON_CANCELLED));
			xasprintf(&path, "%s/%s.json", l->dir, id);
			r = cjson_write_atomic(path, rec, 0600);
			free(path);
			/* what poll_dry() looks at */
			xasprintf(&path, "%s/%s.cancelled", l->dir, id);
			if (r == 0 && (fd = open(path, O_WRONLY | O_CREAT |
			    O_CLOEXEC, 0600)) < 0)
				r = CADRE_ERR_SYSTEM;
			if (fd >= 0)
				close(fd);
			free(path);
		}
		json_decref(rec);
		return r;
	}
	if (parse_id(id, &pid, &ticks) != 0)
		return CADRE_ERR_NOT_FOUND;
	/* a job that has ended has nothing to cancel */
	if (!proc_alive(pid, ticks))
		return 0;
	if (kill(pid, SIGTERM) != 0 && errno != ESRCH) {
		log_error("local: cancel %s: %s", id, strerror(errno));
		return CADRE_ERR_SYSTEM;
	}
	return 0;
}

/* The newest record of job_name whose job has not ended. */
static int
local_find(struct sched *s, const char *job_name, char **job_id)
{
	struct local		*l = s->priv;
	DIR			*d;
	struct dirent		*e;
	json_t			*rec;
	const char		*name;
	char			 id[SCHED_JOB_ID_MAX], best[SCHED_JOB_ID_MAX] = "";
	int64_t			 t, best_t = -1;
	pid_t			 pid;
	unsigned long long	 ticks;
	size_t			 n;
	enum sched_state	 st;

	*job_id = NULL;
	if ((d = opendir(l->dir)) == NULL) {
		log_error("local: %s: %s", l->dir, strerror(errno));
		return CADRE_ERR_SYSTEM;
	}
	while ((e = readdir(d)) != NULL) {
		n = strlen(e->d_name);
		if (e->d_name[0] == '.' || n < 6 || n - 5 >= sizeof id ||
		    strcmp(e->d_name + n - 5, ".json") != 0)
			continue;
		memcpy(id, e->d_name, n - 5);
		id[n - 5] = '\0';
		if (!sched_job_id_ok(id) || load_record(l, id, &rec) != 0)
			continue;
		st = record_state(rec);
		if (cjson_get_string(rec, "job_name", &name) == 0 &&
		    strcmp(name, job_name) == 0 &&
		    cjson_get_int(rec, "submitted_ns", &t) == 0 && t >= best_t &&
		    (st == SCHED_QUEUED || (st == SCHED_RUNNING &&
		    parse_id(id, &pid, &ticks) == 0 &&
		    proc_alive(pid, ticks)))) {
			best_t = t;
			snprintf(best, sizeof best, "%s", id);
		}
		json_decref(rec);
	}
	closedir(d);
	if (best[0] != '\0')
		*job_id = xstrdup(best);
	return 0;
}

const struct sched_ops sched_local_ops = {
	.name = "local",
	.init = local_init,
	.free = local_free,
	.submit = local_submit,
	.poll = local_poll,
	.poll_batch = 0,
	.cancel = local_cancel,
	.find = local_find,
};
