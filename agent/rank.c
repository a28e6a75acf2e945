/*
 * cadre-agent rank: what mpirun (or srun) starts for each rank, and what
 * launch runs for a program's `once` and its --setup. Runs a command,
 * tags its output with rank and node (to log/rank-R.log and to its own
 * stdout/stderr, which mpirun forwards), both capped, passes signals on,
 * and records how it ended in log/rank-R.json for launch.
 *
 * `-- COMMAND` (cadre-train): SIGUSR2 from launch means "stop
 * gracefully": COMMAND gets SIGTERM, so it can checkpoint (mpirun would
 * follow a SIGTERM of its own with SIGKILL too soon); the other signals
 * reach it as they come. `--program FILE` (a user's program,
 * rank_program.c): the identity variables, program.json's environment and
 * workdir, its checkpoint signal, metrics from its output.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "agent.h"
#include "buf.h"
#include "duration.h"
#include "error.h"
#include "json.h"
#include "log.h"
#include "program.h"
#include "rank.h"
#include "sigpipe.h"
#include "size.h"
#include "strutil.h"
#include "xmalloc.h"

struct stream {
	int		 fd;
	int		 out;		/* our fd it goes to */
	const char	*label;		/* "" or " stderr" */
	struct cbuf	 line;
};

/* One rank: where its files are and what it has said. */
struct rank_ctx {
	const char		*node;
	int			 index;		/* R of log/rank-R.*; -1: none */
	char			*status_path;	/* log/rank-R.json; NULL: none */
	struct rank_output	 o;
};

static void
put_all(int fd, const char *p, size_t len)
{
	ssize_t	n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

void
rank_output_init(struct rank_output *o, const char *tag, int logfd)
{
	const char	*v = getenv(RANK_LOG_MAX_ENV);
	int64_t		 max;
	int		 bad = 0;

	memset(o, 0, sizeof *o);
	snprintf(o->tag, sizeof o->tag, "%s", tag);
	o->logfd = logfd;
	o->metrics_fd = -1;
	o->started = now_mono();
	o->log_max = RANK_LOG_MAX_DEFAULT;
	if (v != NULL && v[0] != '\0') {
		if (size_parse(v, &max) == 0 && max > 0)
			o->log_max = max;
		else
			bad = 1;
	}
	o->relay_max = o->log_max / 16 > RANK_RELAY_MIN ? o->log_max / 16 :
	    RANK_RELAY_MIN;
	cbuf_init(&o->line, RANK_LINE_MAX + sizeof o->tag + 64);
	cbuf_init(&o->mline, METRICS_REGEX_OUT_MAX);
	if (bad)
		rank_say(o, "%s='%s' is not a size such as 64M: %" PRId64
		    " bytes it is", RANK_LOG_MAX_ENV, v, o->log_max);
}

void
rank_output_free(struct rank_output *o)
{
	if (o->logfd >= 0)
		close(o->logfd);
	if (o->metrics_fd >= 0)
		close(o->metrics_fd);
	metrics_regex_free(o->mr);
	cbuf_free(&o->line);
	cbuf_free(&o->mline);
	memset(o, 0, sizeof *o);
	o->logfd = o->metrics_fd = -1;
}

/* The one line that says a cap was reached, to fd. */
static void
say_capped(const struct rank_output *o, int fd, int64_t max)
{
	char	line[sizeof o->tag + 96];
	int	n;

	n = snprintf(line, sizeof line, "[%s] output past %" PRId64 " bytes "
	    "dropped (%s)\n", o->tag, max, RANK_LOG_MAX_ENV);
	if (n > 0)
		put_all(fd, line, (size_t)n < sizeof line ? (size_t)n :
		    sizeof line - 1);
}

/*
 * Writes one tagged line to the log and to out, each while under its cap;
 * the line that would pass a cap is replaced by one that says so, and
 * nothing goes there after it. Once both are full this returns at once.
 */
static void
emit_line(struct rank_output *o, int out, const char *label, const char *p,
    size_t len)
{
	struct cbuf	*b = &o->line;

	if ((o->logfd < 0 || o->log_full) && o->relay_full)
		return;
	cbuf_reset(b);
	if (cbuf_addf(b, "[%s%s] ", o->tag, label) != 0 ||
	    cbuf_add(b, p, len) != 0 || cbuf_addc(b, '\n') != 0)
		return;
	if (o->logfd >= 0 && !o->log_full) {
		if (o->log_bytes + (int64_t)b->len > o->log_max) {
			o->log_full = 1;
			say_capped(o, o->logfd, o->log_max);
		} else {
			put_all(o->logfd, b->data, b->len);
			o->log_bytes += (int64_t)b->len;
		}
	}
	if (!o->relay_full) {
		if (o->relay_bytes + (int64_t)b->len > o->relay_max) {
			o->relay_full = 1;
			say_capped(o, out, o->relay_max);
		} else {
			put_all(out, b->data, b->len);
			o->relay_bytes += (int64_t)b->len;
		}
	}
}

void
rank_say(struct rank_output *o, const char *fmt, ...)
{
	char	msg[2048];
	int	n;
	va_list	ap;

	n = snprintf(msg, sizeof msg, "cadre-agent rank: ");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
	va_end(ap);
	emit_line(o, 2, " stderr", msg, strlen(msg));
}

/* The metrics line of a line of output, when it has one; a line that
 * matched but cannot be one is named in the log, RANK_WARN_MAX times. */
static void
line_metrics(struct rank_output *o, const char *p, size_t len)
{
	char	msg[512];
	int	rc;

	/* To the millisecond: "elapsed_s":12.345. */
	rc = metrics_regex_line(o->mr, p, len,
	    (double)(int64_t)((now_mono() - o->started) * 1000 + 0.5) / 1000,
	    &o->mline, msg, sizeof msg);
	if (rc == 1 && o->metrics_fd >= 0)
		put_all(o->metrics_fd, o->mline.data, o->mline.len);
	if (rc >= 0 || o->warnings > RANK_WARN_MAX)
		return;
	if (o->warnings++ < RANK_WARN_MAX)
		rank_say(o, "metrics_regex: a line skipped: %s", msg);
	else
		rank_say(o, "metrics_regex: further warnings suppressed");
}

/* Words that mark a line as the error that ended a command. A launcher's
 * own wrapper of a worker's failure (torchrun's ChildFailedError) says
 * less than the worker's line before it. */
static const char *const error_words[] = {
	"Error", "error", "ERROR", "Exception", "out of memory", "Killed",
	"FAILED", "Fatal", "fatal", "mismatch", "No such file", "denied",
	"Aborted", "Segmentation fault", NULL
};
static const char *const error_wrappers[] = {
	"ChildFailedError", "elastic.multiprocessing", NULL
};

static int
has_any(const char *s, const char *const *words)
{
	for (; *words != NULL; words++) {
		if (strstr(s, *words) != NULL)
			return 1;
	}
	return 0;
}

void
rank_note_stderr(struct rank_output *o, const char *p, size_t len)
{
	char	buf[RANK_MESSAGE_MAX + 1];
	size_t	i, n;
	int	letters = 0;

	while (len > 0 && (*p == ' ' || *p == '\t'))
		p++, len--;
	while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t' ||
	    p[len - 1] == '\r'))
		len--;
	n = len < RANK_MESSAGE_MAX ? len : RANK_MESSAGE_MAX;
	for (i = 0; i < n; i++) {
		/* control bytes (colours, NULs) do not go into a reason */
		buf[i] = (unsigned char)p[i] < 0x20 || p[i] == 0x7f ? ' ' : p[i];
		if ((buf[i] >= 'A' && buf[i] <= 'Z') ||
		    (buf[i] >= 'a' && buf[i] <= 'z'))
			letters++;
	}
	buf[n] = '\0';
	if (letters < 2)
		return;
	memcpy(o->last_words, buf, n + 1);
	if (has_any(buf, error_words) && !has_any(buf, error_wrappers))
		memcpy(o->last_error, buf, n + 1);
}

const char *
rank_last_error(const struct rank_output *o)
{
	return o->last_error[0] != '\0' ? o->last_error : o->last_words;
}

static void
line_done(struct stream *s, struct rank_output *o, const char *p, size_t len)
{
	if (o->mr != NULL)
		line_metrics(o, p, len);
	if (s->out == 2)
		rank_note_stderr(o, p, len);
	emit_line(o, s->out, s->label, p, len);
}

/* Reads from s; passes on complete lines; at EOF the rest. 0 at EOF. */
static int
pump(struct stream *s, struct rank_output *o)
{
	char	buf[16 << 10], *nl, *p;
	ssize_t	n;
	size_t	left;

	n = read(s->fd, buf, sizeof buf);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n <= 0) {
		if (s->line.len > 0)
			line_done(s, o, s->line.data, s->line.len);
		cbuf_reset(&s->line);
		return 0;
	}
	/* Nothing more to write and no metrics: the output is only read,
	 * so that the command never blocks on a full pipe. */
	if ((o->logfd < 0 || o->log_full) && o->relay_full && o->mr == NULL) {
		cbuf_reset(&s->line);
		return 1;
	}
	p = buf;
	left = (size_t)n;
	while (left > 0) {
		if ((nl = memchr(p, '\n', left)) == NULL) {
			if (cbuf_add(&s->line, p, left) != 0) {
				line_done(s, o, s->line.data, s->line.len);
				cbuf_reset(&s->line);
				cbuf_add(&s->line, p, left);
			}
			break;
		}
		if (s->line.len > 0) {
			if (cbuf_add(&s->line, p, (size_t)(nl - p)) != 0) {
				line_done(s, o, s->line.data, s->line.len);
				cbuf_reset(&s->line);
				cbuf_add(&s->line, p, (size_t)(nl - p));
			}
			line_done(s, o, s->line.data, s->line.len);
			cbuf_reset(&s->line);
		} else {
			line_done(s, o, p, (size_t)(nl - p));
		}
		left -= (size_t)(nl - p) + 1;
		p = nl + 1;
	}
	return 1;
}

/*
 * Passes a signal on. `-- COMMAND`: as it came, SIGUSR2 as SIGTERM. A
 * program: SIGUSR1 (launch's checkpoint request) as the program's signal,
 * to the command, or for per_node to the ranks under its launcher
 * (torchrun dies of a SIGUSR1 itself: its handlers are for TERM, INT, HUP
 * and QUIT only); SIGUSR2 as SIGTERM to the command's whole process
 * group, the ranks under a launcher included; TERM, INT and HUP to the
 * command.
 */
static void
pass_signal(pid_t pid, int sig, const struct rank_signals *rs)
{
	if (!rs->program) {
		kill(pid, sig == SIGUSR2 ? SIGTERM : sig);
		return;
	}
	if (sig == SIGUSR1) {
		if (!rs->per_node)
			kill(pid, rs->ckpt_signal);
		else if (rank_signal_ranks(pid, rs->ckpt_signal) == 0)
			log_warn("checkpoint request: the launcher has no "
			    "ranks (LOCAL_RANK) yet; not passed on");
	} else if (sig == SIGUSR2)
		kill(-pid, SIGTERM);
	else
		kill(pid, sig);
}

/* The signals that came through sigfd; *reaped once the child's SIGCHLD
 * came and it was waited for. */
static void
take_signals(int sigfd, pid_t pid, const struct rank_signals *rs,
    struct rank_result *res, int *reaped)
{
	unsigned char	sig;

	while (read(sigfd, &sig, 1) == 1) {
		if (sig == SIGCHLD) {
			if (!*reaped && waitpid(pid, &res->status, WNOHANG) ==
			    pid)
				*reaped = 1;
			continue;
		}
		if (sig != SIGUSR1)
			res->stopped = 1;
		if (!*reaped)
			pass_signal(pid, sig, rs);
	}
}

int
rank_exec(char *const *argv, struct rank_output *o,
    const struct rank_signals *rs, int sigfd, struct rank_result *res)
{
	struct stream	 st[2];
	struct pollfd	 pfd[3];
	struct rusage	 ru;
	double		 drain_until = 0;
	int		 out[2] = { -1, -1 }, err[2] = { -1, -1 };
	int		 ex[2] = { -1, -1 };
	int		 i, e, open_streams = 2, reaped = 0, timeout;
	ssize_t		 n;
	pid_t		 pid;

	memset(res, 0, sizeof *res);
	if (pipe2(out, O_CLOEXEC) == -1 || pipe2(err, O_CLOEXEC) == -1 ||
	    pipe2(ex, O_CLOEXEC) == -1 || (pid = fork()) == -1) {
		e = errno;
		for (i = 0; i < 2; i++) {
			if (out[i] >= 0)
				close(out[i]);
			if (err[i] >= 0)
				close(err[i]);
			if (ex[i] >= 0)
				close(ex[i]);
		}
		errno = e;
		return CADRE_ERR_SYSTEM;
	}
	if (pid == 0) {
		/* Its own process group: orted signals the rank's group, which
		 * is then us alone, and we decide what the command gets
		 * (SIGUSR2 must not reach it as such). If we are killed, so is
		 * it. */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(127);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		/* Not SIG_IGN, though a SIGUSR1 before the command's handler
		 * kills it: a shell cannot trap a signal ignored on entry, and
		 * wrapper scripts trap SIGUSR1. cadre-train's handler comes
		 * first thing. */
		signal(SIGUSR1, SIG_DFL);
		signal(SIGUSR2, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		if (dup2(out[1], 1) == -1 || dup2(err[1], 2) == -1)
			_exit(127);
		execvp(argv[0], argv);
		e = errno;
		dprintf(2, "cadre-agent rank: %s: %s\n", argv[0], strerror(e));
		(void)!write(ex[1], &e, sizeof e);
		_exit(127);
	}
	setpgid(pid, pid);	/* before any kill(-pid); fails once it ran */
	close(out[1]);
	close(err[1]);
	close(ex[1]);
	/* Closed by the exec, or the exec's errno. */
	while ((n = read(ex[0], &e, sizeof e)) == -1 && errno == EINTR)
		;
	if (n == (ssize_t)sizeof e)
		res->exec_errno = e;
	close(ex[0]);

	st[0].fd = out[0];
	st[0].out = 1;
	st[0].label = "";
	st[1].fd = err[0];
	st[1].out = 2;
	st[1].label = " stderr";
	cbuf_init(&st[0].line, RANK_LINE_MAX);
	cbuf_init(&st[1].line, RANK_LINE_MAX);
	while (open_streams > 0) {
		timeout = -1;
		if (reaped) {
			/* What it left running holds the pipes open: read on
			 * a while, then let it be. */
			if (drain_until == 0)
				drain_until = now_mono() + RANK_DRAIN_S;
			if (now_mono() >= drain_until)
				break;
			timeout = (int)((drain_until - now_mono()) * 1000) + 1;
		}
		for (i = 0; i < 2; i++) {
			pfd[i].fd = st[i].fd;
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		pfd[2].fd = sigfd;
		pfd[2].events = POLLIN;
		pfd[2].revents = 0;
		if (poll(pfd, 3, timeout) == -1 && errno != EINTR)
			fatal("poll");
		take_signals(sigfd, pid, rs, res, &reaped);
		for (i = 0; i < 2; i++) {
			if (st[i].fd >= 0 && (pfd[i].revents & (POLLIN |
			    POLLHUP | POLLERR)) && pump(&st[i], o) == 0) {
				close(st[i].fd);
				st[i].fd = -1;
				open_streams--;
			}
		}
	}
	for (i = 0; i < 2; i++) {
		if (st[i].fd >= 0)
			close(st[i].fd);
		cbuf_free(&st[i].line);
	}
	while (!reaped) {
		if (waitpid(pid, &res->status, 0) == pid)
			break;
		if (errno != EINTR)
			fatal("waitpid");
		take_signals(sigfd, pid, rs, res, &reaped);
	}
	if (getrusage(RUSAGE_CHILDREN, &ru) == 0)
		res->peak_rss = (int64_t)ru.ru_maxrss * 1024;
	return 0;
}

int
rank_exit_code(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) :
	    128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

const char *
rank_node_name(char *buf, size_t len)
{
	const char	*node;

	/* The agent's node name; under srun, Slurm's. */
	if ((node = getenv("CADRE_NODE")) != NULL &&
	    str_is_name(node, AGENT_NODE_MAX))
		return node;
	if ((node = getenv("SLURMD_NODENAME")) != NULL &&
	    str_is_name(node, AGENT_NODE_MAX))
		return node;
	if (gethostname(buf, len) == -1)
		snprintf(buf, len, "unknown");
	buf[len - 1] = '\0';
	buf[strcspn(buf, ".")] = '\0';
	if (!str_is_name(buf, AGENT_NODE_MAX))
		snprintf(buf, len, "unknown");
	return buf;
}

static int
rank_from_env(void)
{
	static const char *const vars[] = {
		"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", NULL
	};
	const char	*v;
	int64_t		 r;
	size_t		 i;

	for (i = 0; vars[i] != NULL; i++)
		if ((v = getenv(vars[i])) != NULL && str_to_int64(v, &r) == 0 &&
		    r >= 0 && r < (1 << 24))
			return (int)r;
	return -1;
}

/* Cut at a character's start, the bytes of invalid UTF-8 as '?'. */
json_t *
rank_message_json(const char *msg)
{
	char	buf[RANK_MESSAGE_MAX + 1];
	size_t	n = strlen(msg), i, bad;

	if (n > RANK_MESSAGE_MAX) {
		n = RANK_MESSAGE_MAX;
		while (n > 0 && ((unsigned char)msg[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(buf, msg, n);
	buf[n] = '\0';
	if (!str_valid_utf8(buf, n, &bad))
		for (i = 0; i < n; i++)
			if ((unsigned char)buf[i] >= 0x80)
				buf[i] = '?';
	return json_string(buf);
}

int
rank_open_log(const char *rundir, const char *name)
{
	char	*rel, *path;
	int	 fd;

	if (rundir == NULL)
		return -1;
	xasprintf(&rel, "%s/%s", RUNDIR_LOG, name);
	path = rundir_path(rundir, rel);
	free(rel);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0600)) == -1)
		log_warn("%s: %s", path, strerror(errno));
	free(path);
	return fd;
}

/* Opens log/rank-R.log and names log/rank-R.json, as index says. */
static void
rank_begin(struct rank_ctx *c, const char *rundir, const char *node,
    int index)
{
	char	*rel, tag[128];
	int	 logfd = -1;

	c->node = node;
	c->index = index;
	c->status_path = NULL;
	if (rundir != NULL && index >= 0) {
		snprintf(tag, sizeof tag, "rank-%d.log", index);
		logfd = rank_open_log(rundir, tag);
		xasprintf(&rel, "%s/rank-%d.json", RUNDIR_LOG, index);
		c->status_path = rundir_path(rundir, rel);
		free(rel);
	}
	snprintf(tag, sizeof tag, "rank %d %s", index, node);
	rank_output_init(&c->o, tag, logfd);
}

/*
 * log/rank-R.json: the exit or signal (res, else exit_code), when, and
 * with a result the peak RSS of the command and whether the OOM killer
 * ended it; message: why it did not run (NULL: none).
 */
static void
rank_write_status(struct rank_ctx *c, const struct rank_result *res,
    int exit_code, const char *message)
{
	json_t		*js, *sig = json_null(), *code;
	const char	*name;

	if (c->status_path == NULL)
		return;
	code = json_integer(exit_code);
	if (res != NULL && !WIFEXITED(res->status)) {
		json_decref(code);
		code = json_null();
		if (WIFSIGNALED(res->status)) {
			name = ssh_signal_name(WTERMSIG(res->status));
			sig = name != NULL ? json_string(name) :
			    json_integer(WTERMSIG(res->status));
		}
	} else if (res != NULL) {
		json_decref(code);
		code = json_integer(WEXITSTATUS(res->status));
	}
	js = json_pack("{s:i, s:i, s:s, s:o, s:o}", "version", STATUS_VERSION,
	    "rank", c->index, "node", c->node, "exit", code, "signal", sig);
	/* When: launch tells the first failure from the ranks mpirun stopped
	 * because of it. */
	if (js != NULL) {
		json_object_set_new(js, "ended", json_real(wall_now()));
		if (res != NULL)
			json_object_set_new(js, "peak_rss_bytes",
			    json_integer(res->peak_rss));
		if (res != NULL && res->oom)
			json_object_set_new(js, "oom", json_true());
		if (message != NULL)
			json_object_set_new(js, "message",
			    rank_message_json(message));
		/* what it said last, for the run's reason */
		if (*rank_last_error(&c->o) != '\0' && (res == NULL ||
		    !WIFEXITED(res->status) || WEXITSTATUS(res->status) != 0))
			json_object_set_new(js, "last_error",
			    rank_message_json(rank_last_error(&c->o)));
	}
	if (js == NULL || cjson_write_atomic(c->status_path, js, 0600) != 0)
		log_warn("%s: cannot write the rank's status", c->status_path);
	json_decref(js);
}

/* The command did not start: why, in the log and rank-R.json; exit 1. */
static int
rank_fail(struct rank_ctx *c, const char *msg)
{
	rank_say(&c->o, "%s", msg);
	rank_write_status(c, NULL, 1, msg);
	return 1;
}

/* Runs argv for the rank, then records how it ended. */
static int
rank_run(struct rank_ctx *c, char *const *argv, const struct rank_signals *rs,
    int sigfd)
{
	struct rank_result	 res;
	char			 msg[1024];
	int64_t			 oom_before = rank_oom_kills(), oom_after;

	if (rank_exec(argv, &c->o, rs, sigfd, &res) != 0) {
		snprintf(msg, sizeof msg, "cannot start %s: %s", argv[0],
		    strerror(errno));
		return rank_fail(c, msg);
	}
	if (WIFSIGNALED(res.status) && WTERMSIG(res.status) == SIGKILL &&
	    oom_before >= 0 && (oom_after = rank_oom_kills()) > oom_before)
		res.oom = 1;
	if (res.exec_errno != 0)
		snprintf(msg, sizeof msg, "cannot run %s: %s", argv[0],
		    strerror(res.exec_errno));
	rank_write_status(c, &res, 0, res.exec_errno != 0 ? msg : NULL);
	return rank_exit_code(res.status);
}

/* Opens the metrics file for rank 0's regex: $CADRE_METRICS, else the
 * run dir's metrics.jsonl. */
static int
open_metrics(const char *rundir)
{
	const char	*env = getenv(ENV_METRICS);
	char		*path;
	int		 fd;

	if (env != NULL && env[0] != '\0')
		path = xstrdup(env);
	else if (rundir != NULL)
		path = rundir_path(rundir, RUNDIR_METRICS);
	else
		return -1;
	if ((fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0600)) == -1)
		log_warn("%s: %s", path, strerror(errno));
	free(path);
	return fd;
}

/* --program FILE: the program's process for this rank, node or run. */
static int
run_program(const struct program *p, const char *rundir, const char *node,
    int rank_opt, int sigfd)
{
	struct rank_ctx		 c;
	struct rank_signals	 rs = { 1, p->signal, p->launch ==
				    PROGRAM_PER_NODE };
	char			 msg[1024], inner[900], **av = NULL;
	int			 index, rc;

	if (rank_identity(p, rank_opt, 0, &index, msg, sizeof msg) != 0) {
		rank_begin(&c, rundir, node, rank_opt >= 0 ? rank_opt :
		    rank_from_env());
		rc = rank_fail(&c, msg);
		goto out;
	}
	rank_begin(&c, rundir, node, index);
	rank_program_env(p);
	if (index == 0 && p->metrics_regex != NULL) {
		if (metrics_regex_compile(p->metrics_regex, &c.o.mr, inner,
		    sizeof inner) != 0) {
			snprintf(msg, sizeof msg, "%s: %s", PJ_METRICS_REGEX,
			    inner);
			rc = rank_fail(&c, msg);
			goto out;
		}
		c.o.metrics_fd = open_metrics(rundir);
	}
	if (rank_program_chdir(p, rundir, msg, sizeof msg) != 0 ||
	    program_argv(p, &av, msg, sizeof msg) != 0) {
		rc = rank_fail(&c, msg);
		goto out;
	}
	rc = rank_run(&c, av, &rs, sigfd);
 out:
	program_argv_free(av);
	rank_output_free(&c.o);
	free(c.status_path);
	return rc;
}

static int
usage(void)
{
	fprintf(stderr, "usage: cadre-agent rank [--run-dir DIR] [--rank N] "
	    "-- COMMAND...\n"
	    "       cadre-agent rank [--run-dir DIR] [--rank N] [--setup] "
	    "--program FILE\n");
	return 2;
}

int
cmd_rank(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "run-dir", required_argument, NULL, 'd' },
		{ "program", required_argument, NULL, 'p' },
		{ "rank", required_argument, NULL, 'r' },
		{ "setup", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct rank_ctx		 c;
	struct rank_signals	 rs = { 0, 0, 0 };
	struct program		 p;
	const char		*rundir_opt = NULL, *progpath = NULL, *node;
	char			 host[256], msg[1024], *rundir = NULL;
	int			 ch, rank_opt = -1, setup = 0, sigfd, rc;
	int64_t			 v;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'd':
			rundir_opt = optarg;
			break;
		case 'p':
			progpath = optarg;
			break;
		case 'r':
			if (str_to_int64(optarg, &v) != 0 || v < 0 ||
			    v >= (1 << 24)) {
				fprintf(stderr, "cadre-agent rank: --rank "
				    "'%s': expected an integer in 0..%d\n",
				    optarg, (1 << 24) - 1);
				return 2;
			}
			rank_opt = (int)v;
			break;
		case 's':
			setup = 1;
			break;
		case 'h':
			printf("usage: cadre-agent rank [--run-dir DIR] "
			    "[--rank N] -- COMMAND [ARG...]\n"
			    "       cadre-agent rank [--run-dir DIR] "
			    "[--rank N] [--setup] --program FILE\n"
			    "  Run by launch under mpirun (or srun) for each "
			    "rank; see cadre-agent launch --help.\n"
			    "  --run-dir DIR   the run directory (default "
			    "$CADRE_RUN_DIR): log/rank-R.log, rank-R.json\n"
			    "  --program FILE  run the program of FILE "
			    "(program.json) instead of COMMAND\n"
			    "  --rank N        this process's index where no "
			    "Open MPI or Slurm variable gives it\n"
			    "  --setup         run the program's setup "
			    "commands (log/setup-NODE.log, .json)\n"
			    "  Output over $CADRE_LOG_MAX bytes (default 256M) "
			    "is dropped from the log, over 1/16\n"
			    "  of it from stdout and stderr.\n");
			return 0;
		default:
			return 2;
		}
	}
	if ((progpath != NULL) == (optind < argc) ||
	    (setup && progpath == NULL))
		return usage();
	/* Absolute: a program's workdir moves us before rank-R.json. */
	if ((rundir_opt = rundir_default(rundir_opt)) != NULL &&
	    (rundir = realpath(rundir_opt, NULL)) == NULL)
		rundir = xstrdup(rundir_opt);
	node = rank_node_name(host, sizeof host);
	if ((sigfd = sigpipe_open((const int[]){ SIGTERM, SIGINT, SIGHUP,
	    SIGUSR1, SIGUSR2, SIGCHLD }, 6)) < 0)
		fatal("pipe");

	if (progpath != NULL && program_load(progpath, &p, msg,
	    sizeof msg) == 0) {
		rc = setup ? rank_setup(&p, NULL, rundir, node, rank_opt,
		    sigfd) :
		    run_program(&p, rundir, node, rank_opt, sigfd);
		program_free(&p);
	} else if (progpath != NULL && setup) {
		rc = rank_setup(NULL, msg, rundir, node, rank_opt, sigfd);
	} else {
		rank_begin(&c, rundir, node, rank_from_env() >= 0 ?
		    rank_from_env() : rank_opt);
		rc = progpath != NULL ? rank_fail(&c, msg) :
		    rank_run(&c, argv + optind, &rs, sigfd);
		rank_output_free(&c.o);
		free(c.status_path);
	}
	sigpipe_close();
	free(rundir);
	return rc;
}
