/* cadre-agent rank -- CMD...: what mpirun starts for each rank. Runs CMD,
 * tags its output with rank and node (to log/rank-R.log and to its own
 * stdout/stderr, which mpirun forwards), passes signals on, and records the
 * exit status in log/rank-R.json for launch. SIGUSR2 from launch means
 * "stop gracefully": CMD gets SIGTERM, so it can checkpoint (mpirun would
 * follow a SIGTERM of its own with SIGKILL too soon). */
#include "config.h"

#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
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
#include "sigpipe.h"
#include "strutil.h"
#include "xmalloc.h"

#define RANK_LINE_MAX	(64u << 10)	/* longer lines are split */

struct stream {
	int		 fd;
	int		 out;		/* our fd it goes to */
	const char	*label;		/* "" or " stderr" */
	struct cbuf	 line;
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

/* Writes one tagged line to the log and to the stream's output. */
static void
emit_line(struct stream *s, int logfd, const char *tag, const char *p,
    size_t len)
{
	struct cbuf	b;

	cbuf_init(&b, RANK_LINE_MAX + 256);
	if (cbuf_addf(&b, "[%s%s] ", tag, s->label) == 0 &&
	    cbuf_add(&b, p, len) == 0 && cbuf_addc(&b, '\n') == 0) {
		if (logfd >= 0)
			put_all(logfd, b.data, b.len);
		put_all(s->out, b.data, b.len);
	}
	cbuf_free(&b);
}

/* Reads from s; emits complete lines; at EOF the rest. 0 at EOF. */
static int
pump(struct stream *s, int logfd, const char *tag)
{
	char	buf[16 << 10], *nl, *p;
	ssize_t	n;
	size_t	left;

	n = read(s->fd, buf, sizeof buf);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n <= 0) {
		if (s->line.len > 0)
			emit_line(s, logfd, tag, s->line.data, s->line.len);
		cbuf_reset(&s->line);
		return 0;
	}
	p = buf;
	left = (size_t)n;
	while (left > 0) {
		if ((nl = memchr(p, '\n', left)) == NULL) {
			if (cbuf_add(&s->line, p, left) != 0) {
				emit_line(s, logfd, tag, s->line.data,
				    s->line.len);
				cbuf_reset(&s->line);
				cbuf_add(&s->line, p, left);
			}
			break;
		}
		if (s->line.len > 0) {
			if (cbuf_add(&s->line, p, (size_t)(nl - p)) != 0) {
				emit_line(s, logfd, tag, s->line.data,
				    s->line.len);
				cbuf_reset(&s->line);
				cbuf_add(&s->line, p, (size_t)(nl - p));
			}
			emit_line(s, logfd, tag, s->line.data, s->line.len);
			cbuf_reset(&s->line);
		} else {
			emit_line(s, logfd, tag, p, (size_t)(nl - p));
		}
		left -= (size_t)(nl - p) + 1;
		p = nl + 1;
	}
	return 1;
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

int
cmd_rank(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "run-dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct stream		 st[2];
	struct pollfd		 pfd[3];
	const char		*rundir_opt = NULL, *rundir, *node;
	char			 host[256], tag[512], *path = NULL, *rel;
	int			 c, i, rank, logfd = -1, sigfd, out[2], err[2];
	int			 status = 0, open_streams = 2, rc;
	unsigned char		 sig;
	pid_t			 pid;
	json_t			*js;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			rundir_opt = optarg;
			break;
		case 'h':
			printf("usage: cadre-agent rank [--run-dir DIR] -- "
			    "COMMAND [ARG...]\n  Run by launch under mpirun "
			    "for each rank; see cadre-agent launch --help.\n");
			return 0;
		default:
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: cadre-agent rank -- COMMAND...\n");
		return 2;
	}
	rundir = rundir_default(rundir_opt);
	rank = rank_from_env();
	/* The agent's node name; under srun, Slurm's. */
	if (((node = getenv("CADRE_NODE")) == NULL ||
	    !str_is_name(node, AGENT_NODE_MAX)) &&
	    ((node = getenv("SLURMD_NODENAME")) == NULL ||
	    !str_is_name(node, AGENT_NODE_MAX))) {
		if (gethostname(host, sizeof host) == -1)
			snprintf(host, sizeof host, "unknown");
		host[sizeof host - 1] = '\0';
		host[strcspn(host, ".")] = '\0';
		node = host;
	}
	snprintf(tag, sizeof tag, "rank %d %s", rank, node);
	if (rundir != NULL && rank >= 0) {
		xasprintf(&rel, "%s/rank-%d.log", RUNDIR_LOG, rank);
		path = rundir_path(rundir, rel);
		free(rel);
		if ((logfd = open(path, O_WRONLY | O_CREAT | O_APPEND |
		    O_CLOEXEC, 0600)) == -1)
			log_warn("%s: %s", path, strerror(errno));
		free(path);
		path = NULL;
	}

	if ((sigfd = sigpipe_open((const int[]){ SIGTERM, SIGINT, SIGHUP,
	    SIGUSR1, SIGUSR2 }, 5)) < 0 ||
	    pipe2(out, O_CLOEXEC) == -1 || pipe2(err, O_CLOEXEC) == -1)
		fatal("pipe");

	if ((pid = fork()) == -1)
		fatal("fork");
	if (pid == 0) {
		/* Its own process group: orted signals the rank's group, which
		 * is then us alone, and we decide what CMD gets (SIGUSR2 must
		 * not reach it as such). If we are killed, so is it. */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(127);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		/* Not SIG_IGN, though a SIGUSR1 before CMD's handler kills it:
		 * a shell cannot trap a signal ignored on entry, and wrapper
		 * scripts trap SIGUSR1. cadre-train's handler comes first
		 * thing. */
		signal(SIGUSR1, SIG_DFL);
		signal(SIGUSR2, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(out[1], 1) == -1 || dup2(err[1], 2) == -1)
			_exit(127);
		execvp(argv[optind], argv + optind);
		dprintf(2, "cadre-agent rank: %s: %s\n", argv[optind],
		    strerror(errno));
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	st[0].fd = out[0];
	st[0].out = 1;
	st[0].label = "";
	st[1].fd = err[0];
	st[1].out = 2;
	st[1].label = " stderr";
	cbuf_init(&st[0].line, RANK_LINE_MAX);
	cbuf_init(&st[1].line, RANK_LINE_MAX);

	while (open_streams > 0) {
		pfd[0].fd = st[0].fd;
		pfd[1].fd = st[1].fd;
		pfd[2].fd = sigfd;
		for (i = 0; i < 3; i++)
			pfd[i].events = POLLIN;
		if (poll(pfd, 3, -1) == -1 && errno != EINTR)
			fatal("poll");
		while (read(sigfd, &sig, 1) == 1)
			kill(pid, sig == SIGUSR2 ? SIGTERM : sig);
		for (i = 0; i < 2; i++) {
			if (st[i].fd >= 0 && (pfd[i].revents & (POLLIN |
			    POLLHUP | POLLERR)) && pump(&st[i], logfd, tag) ==
			    0) {
				close(st[i].fd);
				st[i].fd = -1;
				open_streams--;
			}
		}
	}
	while (waitpid(pid, &status, 0) == -1) {
		if (errno != EINTR)
			fatal("waitpid");
		while (read(sigfd, &sig, 1) == 1)
			kill(pid, sig == SIGUSR2 ? SIGTERM : sig);
	}

	if (rundir != NULL && rank >= 0) {
		js = json_pack("{s:i, s:i, s:s, s:o, s:o}", "version",
		    STATUS_VERSION, "rank", rank, "node", node, "exit",
		    WIFEXITED(status) ? json_integer(WEXITSTATUS(status)) :
		    json_null(), "signal", WIFSIGNALED(status) &&
		    ssh_signal_name(WTERMSIG(status)) != NULL ?
		    json_string(ssh_signal_name(WTERMSIG(status))) :
		    WIFSIGNALED(status) ? json_integer(WTERMSIG(status)) :
		    json_null());
		/* When: launch tells the first failure from the ranks mpirun
		 * stopped because of it. */
		if (js != NULL)
			json_object_set_new(js, "ended", json_real(wall_now()));
		xasprintf(&rel, "%s/rank-%d.json", RUNDIR_LOG, rank);
		path = rundir_path(rundir, rel);
		free(rel);
		if (js == NULL || cjson_write_atomic(path, js, 0600) != 0)
			log_warn("%s: cannot write the rank's status", path);
		json_decref(js);
		free(path);
	}
	if (logfd >= 0)
		close(logfd);
	cbuf_free(&st[0].line);
	cbuf_free(&st[1].line);
	rc = WIFEXITED(status) ? WEXITSTATUS(status) :
	    128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	return rc;
}
