/* The scheduler interface: backend table, dispatch, and running commands. */
#include "config.h"

#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "log.h"
#include "rundir.h"
#include "scheduler.h"
#include "xmalloc.h"

#define SCHED_ERR_MAX		4096	/* bytes of a command's stderr kept */
#define SCHED_DEFAULT_TIMEOUT	30	/* seconds */

static const char *const state_names[SCHED_STATE_COUNT] = {
	"unknown", "queued", "starting", "running", REASON_DONE, REASON_FAILED,
	REASON_CANCELLED, REASON_TIMEOUT, REASON_PREEMPTED, REASON_NODE_FAIL,
};

static const struct sched_ops *const backends[] = {
	&sched_local_ops,
	&sched_slurm_ops,
	&sched_slurmrest_ops,
	&sched_pbs_ops,
};

const char *
sched_state_name(enum sched_state st)
{
	if ((unsigned)st >= SCHED_STATE_COUNT)
		return "unknown";
	return state_names[st];
}

int
sched_state_final(enum sched_state st)
{
	return st >= SCHED_DONE && st < SCHED_STATE_COUNT;
}

int
sched_job_id_ok(const char *id)
{
	size_t	i;

	if (id == NULL || *id == '\0')
		return 0;
	for (i = 0; id[i] != '\0'; i++) {
		if (i >= SCHED_JOB_ID_MAX - 1)
			return 0;
		if (!((id[i] >= 'a' && id[i] <= 'z') ||
		    (id[i] >= 'A' && id[i] <= 'Z') ||
		    (id[i] >= '0' && id[i] <= '9') ||
		    id[i] == '.' || id[i] == '_' || id[i] == '-'))
			return 0;
	}
	return 1;
}

static char *
dup_or_null(const char *s)
{
	return s != NULL ? xstrdup(s) : NULL;
}

int
sched_open(const char *name, const struct sched_config *cfg,
    struct sched **out)
{
	struct sched	*s = NULL;
	size_t		 i;
	int		 r;

	*out = NULL;
	for (i = 0; i < sizeof backends / sizeof backends[0]; i++) {
		if (strcmp(backends[i]->name, name) == 0)
			break;
	}
	if (i == sizeof backends / sizeof backends[0])
		return CADRE_ERR_NOT_FOUND;
	s = xcalloc(1, sizeof *s);
	s->ops = backends[i];
	if (cfg != NULL) {
		s->cfg.bindir = dup_or_null(cfg->bindir);
		s->cfg.cmd_timeout = cfg->cmd_timeout;
		s->cfg.rest_url = dup_or_null(cfg->rest_url);
		s->cfg.token_env = dup_or_null(cfg->token_env);
		s->cfg.local_dir = dup_or_null(cfg->local_dir);
		s->cfg.dry = cfg->dry;
		s->cfg.local_second_ms = cfg->local_second_ms;
	}
	if (s->cfg.cmd_timeout <= 0)
		s->cfg.cmd_timeout = SCHED_DEFAULT_TIMEOUT;
	if (s->ops->init != NULL && (r = s->ops->init(s)) != 0) {
		s->ops = NULL;	/* nothing for ->free to undo */
		sched_close(s);
		return r;
	}
	*out = s;
	return 0;
}

void
sched_close(struct sched *s)
{
	if (s == NULL)
		return;
	if (s->ops != NULL && s->ops->free != NULL)
		s->ops->free(s);
	free((char *)s->cfg.bindir);
	free((char *)s->cfg.rest_url);
	free((char *)s->cfg.token_env);
	free((char *)s->cfg.local_dir);
	free(s);
}

int
sched_submit(struct sched *s, const struct sched_job *job, char **job_id)
{
	*job_id = NULL;
	return s->ops->submit(s, job, job_id);
}

int
sched_poll(struct sched *s, const char *const *job_ids, size_t n,
    struct sched_status *out)
{
	size_t	i, k;
	int	r;

	for (i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof out[i]);
		out[i].state = SCHED_UNKNOWN;
		out[i].exit_code = -1;
	}
	for (i = 0; i < n; i += k) {
		k = n - i;
		if (s->ops->poll_batch != 0 && k > s->ops->poll_batch)
			k = s->ops->poll_batch;
		if ((r = s->ops->poll(s, job_ids + i, k, out + i)) != 0)
			return r;
	}
	return 0;
}

int
sched_cancel(struct sched *s, const char *job_id)
{
	if (!sched_job_id_ok(job_id))
		return CADRE_ERR_INVALID;
	return s->ops->cancel(s, job_id);
}

int
sched_find(struct sched *s, const char *job_name, char **job_id)
{
	*job_id = NULL;
	if (job_name == NULL || !sched_job_id_ok(job_name))
		return CADRE_ERR_INVALID;	/* names are [A-Za-z0-9._-] too */
	if (s->ops->find == NULL)
		return CADRE_ERR_UNSUPPORTED;
	return s->ops->find(s, job_name, job_id);
}

/* ---------------------------------------------------------------- commands */

static int64_t
now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads what is there from fd into b; past b's bound the rest is drained
 * and *over set. Returns 0 at end of file, 1 when more may come. */
static int
drain(int fd, struct cbuf *b, int *over)
{
	char	chunk[4096];
	ssize_t	n;

	n = read(fd, chunk, sizeof chunk);
	if (n < 0)
		return (errno == EINTR || errno == EAGAIN) ? 1 : 0;
	if (n == 0)
		return 0;
	if (cbuf_add(b, chunk, (size_t)n) != 0)
		*over = 1;
	return 1;
}

int
sched_run_cmd(const struct sched_config *cfg, char *const *argv,
    size_t max, int *status, char **out, char **err)
{
	struct cbuf	 ob, eb;
	struct pollfd	 pfd[2];
	char		*path = NULL;
	int		 op[2] = { -1, -1 }, ep[2] = { -1, -1 };
	int		 over = 0, eover = 0, wstatus, r = CADRE_ERR_SYSTEM;
	int		 killed = 0;
	int		 timeout = cfg->cmd_timeout > 0 ? cfg->cmd_timeout :
			     SCHED_DEFAULT_TIMEOUT;
	int64_t		 deadline;
	pid_t		 pid = -1;

	*status = -1;
	if (out != NULL)
		*out = NULL;
	if (err != NULL)
		*err = NULL;
	cbuf_init(&ob, max);
	cbuf_init(&eb, SCHED_ERR_MAX);
	if (cfg->bindir != NULL && strchr(argv[0], '/') == NULL)
		xasprintf(&path, "%s/%s", cfg->bindir, argv[0]);
	else
		path = xstrdup(argv[0]);

	if (pipe2(op, O_CLOEXEC) != 0 || pipe2(ep, O_CLOEXEC) != 0)
		goto out;
	pid = fork();
	if (pid < 0)
		goto out;
	if (pid == 0) {
		int		nul = open("/dev/null", O_RDONLY);
		sigset_t	all;

		if (nul < 0 || dup2(nul, 0) < 0 || dup2(op[1], 1) < 0 ||
		    dup2(ep[1], 2) < 0)
			_exit(127);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (strchr(path, '/') != NULL)
			execv(path, argv);
		else
			execvp(path, argv);
		_exit(127);
	}
	close(op[1]);
	close(ep[1]);
	op[1] = ep[1] = -1;

	deadline = now_ms() + (int64_t)timeout * 1000;
	pfd[0].fd = op[0];
	pfd[1].fd = ep[0];
	pfd[0].events = pfd[1].events = POLLIN;
	while (pfd[0].fd >= 0 || pfd[1].fd >= 0) {
		int64_t	left = deadline - now_ms();
		int	i;

		if (left <= 0) {
			kill(pid, SIGKILL);
			killed = 1;
			break;
		}
		if (poll(pfd, 2, (int)(left > 1000 ? 1000 : left)) < 0) {
			if (errno == EINTR)
				continue;
			goto out;
		}
		for (i = 0; i < 2; i++) {
			if (pfd[i].fd < 0 ||
			    (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0)
				continue;
			if (!drain(pfd[i].fd, i == 0 ? &ob : &eb,
			    i == 0 ? &over : &eover)) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
				if (i == 0)
					op[0] = -1;
				else
					ep[0] = -1;
			}
		}
	}
	/* The pipes are closed (or it was killed): reap, bounded as well. */
	while (waitpid(pid, &wstatus, killed ? 0 : WNOHANG) == 0) {
		if (now_ms() >= deadline) {
			kill(pid, SIGKILL);
			killed = 1;
			continue;
		}
		usleep(10000);
	}
	pid = -1;
	if (killed) {
		r = CADRE_ERR_TIMEOUT;
		log_warn("%s: no answer within %d s, killed", argv[0], timeout);
		goto out;
	}
	if (over) {
		r = CADRE_ERR_TOO_LARGE;
		log_warn("%s: more than %zu bytes of output", argv[0], max);
		goto out;
	}
	*status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
	if (out != NULL)
		*out = cbuf_detach(&ob, NULL);
	if (err != NULL)
		*err = cbuf_detach(&eb, NULL);
	r = 0;
out:
	if (r == CADRE_ERR_SYSTEM)
		log_warn("%s: %s", argv[0], strerror(errno));
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	if (op[0] >= 0)
		close(op[0]);
	if (op[1] >= 0)
		close(op[1]);
	if (ep[0] >= 0)
		close(ep[0]);
	if (ep[1] >= 0)
		close(ep[1]);
	cbuf_free(&ob);
	cbuf_free(&eb);
	free(path);
	return r;
}
