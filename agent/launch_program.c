/*
 * cadre-agent launch with a user's program (docs/program.md): the
 * environment every process gets, the per-node setup, the timed
 * checkpoint requests, watching metrics.jsonl for the checkpoints the
 * program announces (their due_s marks for the report, pruning beyond
 * keep_checkpoints, the end of a requested stop), and the start and
 * summary events cadre writes for the program.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
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
#include "fsutil.h"
#include "json.h"
#include "launch.h"
#include "log.h"
#include "rundir.h"
#include "rundir_read.h"
#include "strutil.h"
#include "xmalloc.h"

#define ATTEMPT_MAX	1000000

/* The variables launch sets for every process (mpirun -x each). */
static const char *const exported[] = {
	ENV_RUN_ID, ENV_EXPERIMENT, ENV_CONFIG_ID, ENV_RUN_DIR, ENV_ATTEMPT,
	ENV_CHECKPOINT_DIR, ENV_RESUME_FROM, ENV_METRICS, ENV_DEADLINE,
	ENV_STOP_FILE, ENV_NNODES, ENV_NPROC_PER_NODE, ENV_RANKS,
	ENV_RDZV_ENDPOINT, ENV_HOSTFILE, ENV_MASTER_ADDR, ENV_MASTER_PORT,
	NULL
};

const char *const *
launch_program_exported(void)
{
	return exported;
}

/* A port nothing listens on at addr (or, when launch cannot bind there,
 * on any address): bound, read back, closed. The program binds it
 * moments later; the kernel hands out ephemeral ports in turn, so
 * another process taking it first is unlikely. */
static int
free_port(const char *addr)
{
	struct sockaddr_in	sa;
	socklen_t		len = sizeof sa;
	int			fd, port = -1, pass;

	for (pass = 0; pass < 2 && port < 0; pass++) {
		if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
			return -1;
		memset(&sa, 0, sizeof sa);
		sa.sin_family = AF_INET;
		if (pass == 0 && inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
			close(fd);
			continue;
		}
		if (pass == 1)
			sa.sin_addr.s_addr = htonl(INADDR_ANY);
		if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
		    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
			port = ntohs(sa.sin_port);
		close(fd);
	}
	return port;
}

/* RUN_DIR/attempt counted up: 1 for the first attempt. */
static int
next_attempt(struct launch *l)
{
	char	*path = rundir_path(l->rundir, RUNDIR_ATTEMPT), buf[32];
	int64_t	 v = 0;
	ssize_t	 n;
	int	 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) >= 0) {
		if ((n = read(fd, buf, sizeof buf - 1)) > 0) {
			buf[n] = '\0';
			buf[strcspn(buf, "\n")] = '\0';
			if (str_to_int64(buf, &v) != 0 || v < 0 ||
			    v >= ATTEMPT_MAX)
				v = 0;
		}
		close(fd);
	}
	v++;
	snprintf(buf, sizeof buf, "%lld\n", (long long)v);
	if (fs_write_atomic(path, buf, strlen(buf), 0600) != 0)
		log_warn("%s: %s", path, strerror(errno));
	free(path);
	return (int)v;
}

/* Remembers a complete checkpoint (oldest first), once. */
static void
add_ckpt(struct launch_prog *lp, const char *path)
{
	size_t	i;

	for (i = 0; i < lp->nckpts; i++) {
		if (strcmp(lp->ckpts[i], path) == 0) {
			/* announced again: it is the newest now */
			char *p = lp->ckpts[i];

			memmove(&lp->ckpts[i], &lp->ckpts[i + 1],
			    (lp->nckpts - i - 1) * sizeof *lp->ckpts);
			lp->ckpts[lp->nckpts - 1] = p;
			return;
		}
	}
	lp->ckpts = xreallocarray(lp->ckpts, lp->nckpts + 1,
	    sizeof *lp->ckpts);
	lp->ckpts[lp->nckpts++] = xstrdup(path);
}

/* A checkpoint path the program announced, absolute (relative ones are
 * the program's workdir's), into *out; CADRE_ERR_INVALID for one that
 * is not a string. */
static int
ckpt_path(const struct launch_prog *lp, const json_t *o, char **out)
{
	const char	*p;

	*out = NULL;
	if (cjson_get_string(o, MX_PATH, &p) != 0 || p[0] == '\0')
		return CADRE_ERR_INVALID;
	if (p[0] == '/')
		*out = xstrdup(p);
	else
		xasprintf(out, "%s/%s", lp->workdir, p);
	return 0;
}

/* A line of what the earlier attempts left in metrics.jsonl: their
 * checkpoints (the newest complete one is where this attempt resumes),
 * and cadre's clock of program time (the last summary's elapsed_s). */
static int
history_line(void *ctx, enum rundir_line kind, const char *line, size_t len,
    size_t lineno)
{
	struct launch_prog	*lp = ctx;
	json_t			*o;
	const char		*ev;
	char			*path;
	double			 e;

	(void)lineno;
	if (kind != RUNDIR_LINE || rundir_metrics_event(kind, line, len,
	    RUNDIR_LINE_MAX, &o, &ev) != 0)
		return 0;
	if (strcmp(ev, MX_EV_CHECKPOINT) == 0 &&
	    ckpt_path(lp, o, &path) == 0) {
		add_ckpt(lp, path);
		free(path);
	} else if (strcmp(ev, MX_EV_SUMMARY) == 0 &&
	    json_is_true(json_object_get(o, "by_cadre")) &&
	    cjson_get_real(o, MX_ELAPSED_S, &e) == 0 && isfinite(e) && e >= 0)
		lp->base_elapsed = e;
	json_decref(o);
	return 0;
}

/* Reads the history; drops checkpoints that are gone; sets the resume
 * point. */
static void
read_history(struct launch *l, struct launch_prog *lp)
{
	struct rundir_lines	 o = { .line_max = RUNDIR_LINE_MAX };
	struct stat		 sb;
	char			*path = rundir_path(l->rundir, RUNDIR_METRICS);
	size_t			 i, j;

	(void)rundir_read_lines(path, &o, history_line, lp);
	if (stat(path, &sb) == 0)
		lp->mx_from = sb.st_size;
	free(path);
	for (i = j = 0; i < lp->nckpts; i++) {
		if (stat(lp->ckpts[i], &sb) == 0)
			lp->ckpts[j++] = lp->ckpts[i];
		else
			free(lp->ckpts[i]);
	}
	lp->nckpts = j;
}

/* Appends one line to metrics.jsonl with a single write (the program's
 * rank 0 appends to the same file). */
static void
append_metrics(struct launch *l, json_t *o)
{
	char	*path = rundir_path(l->rundir, RUNDIR_METRICS);
	char	*s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	size_t	 n;
	int	 fd;

	if (s != NULL) {
		n = strlen(s);
		s = xreallocarray(s, n + 2, 1);
		s[n++] = '\n';
		s[n] = '\0';
		if ((fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
		    0600)) == -1 || write(fd, s, n) != (ssize_t)n)
			log_warn("%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	free(s);
	free(path);
	json_decref(o);
}

static void
set_env_int(const char *name, long long v)
{
	char	buf[32];

	snprintf(buf, sizeof buf, "%lld", v);
	setenv(name, buf, 1);
}

int
launch_program_open(struct launch *l, const char *path, struct launch_prog *lp,
    char *msg, size_t msglen)
{
	char		*s, addr[AGENT_ADDR_MAX + 8];
	/* srun starts the ranks without agents: the node's name */
	const char	*head = l->nodes[0].info.addr[0] != '\0' ?
			    l->nodes[0].info.addr : l->nodes[0].name;
	int		 error, port, rport;
	size_t		 i;

	memset(lp, 0, sizeof *lp);
	if ((error = program_load(path, &lp->p, msg, msglen)) != 0)
		return error;
	lp->workdir = xstrdup(lp->p.workdir != NULL ? lp->p.workdir :
	    l->rundir);
	lp->attempt = next_attempt(l);
	read_history(l, lp);

	if (lp->p.run_id != NULL)
		setenv(ENV_RUN_ID, lp->p.run_id, 1);
	if (lp->p.experiment != NULL)
		setenv(ENV_EXPERIMENT, lp->p.experiment, 1);
	if (lp->p.config_id != NULL)
		setenv(ENV_CONFIG_ID, lp->p.config_id, 1);
	setenv(ENV_RUN_DIR, l->rundir, 1);
	set_env_int(ENV_ATTEMPT, lp->attempt);
	s = rundir_path(l->rundir, RUNDIR_CHECKPOINTS);
	if ((error = rundir_mkdir_private(s, msg, msglen)) != 0) {
		free(s);
		return error;
	}
	setenv(ENV_CHECKPOINT_DIR, s, 1);
	free(s);
	setenv(ENV_RESUME_FROM, lp->nckpts > 0 ? lp->ckpts[lp->nckpts - 1] :
	    "", 1);
	s = rundir_path(l->rundir, RUNDIR_METRICS);
	setenv(ENV_METRICS, s, 1);
	free(s);
	if (getenv(ENV_DEADLINE) == NULL)
		setenv(ENV_DEADLINE, "", 1);
	lp->stop_file = rundir_path(l->rundir, RUNDIR_STOP);
	unlink(lp->stop_file);	/* the last attempt's */
	setenv(ENV_STOP_FILE, lp->stop_file, 1);
	set_env_int(ENV_NNODES, (long long)l->n);
	set_env_int(ENV_NPROC_PER_NODE, l->nodes[0].slots);
	set_env_int(ENV_RANKS, l->total_slots);
	s = rundir_path(l->rundir, RUNDIR_HOSTFILE);
	setenv(ENV_HOSTFILE, s, 1);
	free(s);
	/* Two ports: torchrun's rendezvous store and the process group's
	 * master (what per_rank programs and torchrun's workers bind). */
	port = free_port(head);
	rport = free_port(head);
	for (i = 0; i < 10 && rport == port; i++)
		rport = free_port(head);
	if (port < 0 || rport < 0 || rport == port)
		return cadre_errf(msg, msglen, CADRE_ERR_SYSTEM,
		    "no free TCP port for the program's rendezvous: %s",
		    strerror(errno));
	setenv(ENV_MASTER_ADDR, head, 1);
	set_env_int(ENV_MASTER_PORT, port);
	snprintf(addr, sizeof addr, "%s:%d", head, rport);
	setenv(ENV_RDZV_ENDPOINT, addr, 1);
	log_info("program, %s on %zu node(s), attempt %d%s%s",
	    program_launch_name(lp->p.launch), l->n, lp->attempt,
	    lp->nckpts > 0 ? ", resuming from " : "",
	    lp->nckpts > 0 ? lp->ckpts[lp->nckpts - 1] : "");
	return 0;
}

void
launch_program_start(struct launch *l, struct launch_prog *lp)
{
	json_t		*o = json_object(), *cmd, *env;
	size_t		 i;
	const char	*v;

	cmd = lp->p.shell != NULL ? json_string(lp->p.shell) : json_array();
	for (i = 0; lp->p.shell == NULL && i < lp->p.nwords; i++)
		json_array_append_new(cmd, json_string(lp->p.words[i]));
	env = json_object();
	for (i = 0; exported[i] != NULL; i++)
		if ((v = getenv(exported[i])) != NULL)
			json_object_set_new(env, exported[i], json_string(v));
	json_object_set_new(o, MX_EVENT, json_string(MX_EV_START));
	json_object_set_new(o, "time", json_real(wall_now()));
	json_object_set_new(o, "by_cadre", json_true());
	json_object_set_new(o, "attempt", json_integer(lp->attempt));
	json_object_set_new(o, "launch",
	    json_string(program_launch_name(lp->p.launch)));
	json_object_set_new(o, "command", cmd);
	json_object_set_new(o, "nodes", json_integer((json_int_t)l->n));
	json_object_set_new(o, "ranks", json_integer(l->total_slots));
	json_object_set_new(o, "resumed_from", lp->nckpts > 0 ?
	    json_string(lp->ckpts[lp->nckpts - 1]) : json_null());
	json_object_set_new(o, MX_ENV, env);
	append_metrics(l, o);
	lp->t_start = now_mono();
	lp->next_mark = lp->p.checkpoint_every > 0 ?
	    (floor(lp->base_elapsed / (double)lp->p.checkpoint_every) + 1) *
	    (double)lp->p.checkpoint_every : 0;
}

/* cadre's clock: program seconds over all attempts. */
static double
program_elapsed(const struct launch_prog *lp)
{
	return lp->base_elapsed + (lp->t_start > 0 ? now_mono() - lp->t_start :
	    0);
}

/* Removes the complete checkpoints beyond keep_checkpoints, oldest
 * first, only those under the run's checkpoint directory (cadre does not
 * delete what a program keeps elsewhere). */
static void
prune(struct launch_prog *lp)
{
	const char	*dir = getenv(ENV_CHECKPOINT_DIR);
	size_t		 dlen = dir != NULL ? strlen(dir) : 0, keep, i, j;

	if (lp->p.keep_checkpoints <= 0 || dir == NULL ||
	    lp->nckpts <= (size_t)lp->p.keep_checkpoints)
		return;
	keep = (size_t)lp->p.keep_checkpoints;
	for (i = j = 0; i < lp->nckpts; i++) {
		const char *c = lp->ckpts[i];

		if (i + keep < lp->nckpts && strncmp(c, dir, dlen) == 0 &&
		    c[dlen] == '/' && strstr(c, "/../") == NULL) {
			if (fs_remove_tree(c) != 0)
				log_warn("removing checkpoint %s: %s", c,
				    strerror(errno));
			else
				log_info("removed checkpoint %s "
				    "(keep_checkpoints %lld)", c,
				    (long long)lp->p.keep_checkpoints);
			free(lp->ckpts[i]);
		} else
			lp->ckpts[j++] = lp->ckpts[i];
	}
	lp->nckpts = j;
}

/* A checkpoint event the program wrote: a mark line when a timed request
 * was waiting for it, the list for pruning, the end of a stop. */
static void
saw_checkpoint(struct launch *l, struct launch_prog *lp, const json_t *o)
{
	json_t	*m;
	char	*path;
	int64_t	 step;

	if (json_object_get(o, MX_DUE_S) != NULL ||
	    json_is_true(json_object_get(o, "by_cadre")))
		return;	/* a mark line: ours, or the program keeps its own */
	if (ckpt_path(lp, o, &path) != 0) {
		log_warn("%s: a checkpoint event without a \"path\" string",
		    RUNDIR_METRICS);
		return;
	}
	if (cjson_get_int(o, MX_STEP, &step) != 0)
		step = lp->last_step;
	lp->ncheckpoints++;
	if (lp->pending_due > 0) {
		m = json_object();
		json_object_set_new(m, MX_EVENT, json_string(MX_EV_CHECKPOINT));
		json_object_set_new(m, MX_STEP, json_integer(step));
		json_object_set_new(m, MX_PATH, json_string(path));
		json_object_set_new(m, MX_DUE_S, json_real(lp->pending_due));
		json_object_set_new(m, MX_SAMPLES,
		    json_integer(lp->last_samples));
		json_object_set_new(m, MX_ELAPSED_S, json_real(
		    lp->have_elapsed ? lp->last_elapsed :
		    program_elapsed(lp)));
		json_object_set_new(m, "by_cadre", json_true());
		append_metrics(l, m);
		lp->pending_due = 0;
	}
	add_ckpt(lp, path);
	free(path);
	prune(lp);
	if (lp->stopping && !lp->stop_saved) {
		log_notice("the program saved a checkpoint after the stop "
		    "request");
		lp->stop_saved = 1;
	}
}

static int
tail_line(void *ctx, enum rundir_line kind, const char *line, size_t len,
    size_t lineno)
{
	struct launch		*l = ((void **)ctx)[0];
	struct launch_prog	*lp = ((void **)ctx)[1];
	json_t			*o;
	const char		*ev;
	int64_t			 v;
	double			 e;

	if (kind == RUNDIR_LINE_LAST)
		return 1;	/* being written: next time */
	if (lineno <= lp->mx_done)
		return 0;
	lp->mx_done = lineno;
	if (kind != RUNDIR_LINE || rundir_metrics_event(kind, line, len,
	    RUNDIR_LINE_MAX, &o, &ev) != 0)
		return 0;
	if (strcmp(ev, MX_EV_STEP) == 0) {
		lp->trained = 1;
		if (cjson_get_int(o, MX_STEP, &v) == 0)
			lp->last_step = v;
		if (cjson_get_int(o, MX_SAMPLES, &v) == 0)
			lp->last_samples = v;
		if (cjson_get_real(o, MX_ELAPSED_S, &e) == 0 && isfinite(e)) {
			lp->last_elapsed = e;
			lp->have_elapsed = 1;
		}
	} else if (strcmp(ev, MX_EV_CHECKPOINT) == 0)
		saw_checkpoint(l, lp, o);
	json_decref(o);
	return 0;
}

void
launch_program_tick(struct launch *l, struct launch_prog *lp, pid_t pid)
{
	struct rundir_lines	 o = { .line_max = RUNDIR_LINE_MAX };
	char			*path;
	void			*ctx[2] = { l, lp };
	double			 now = now_mono();

	if (now < lp->next_tick)
		return;
	lp->next_tick = now + 0.5;
	o.from = lp->mx_from;
	path = rundir_path(l->rundir, RUNDIR_METRICS);
	(void)rundir_read_lines(path, &o, tail_line, ctx);
	free(path);
	/* A timed checkpoint is due: ask for it (a request still waiting
	 * for its checkpoint is taken over by the newer mark). Only once
	 * the program trains: before its first step line its handler may
	 * not be there yet, and the signal would kill it. A mark passed
	 * before then is skipped. */
	if (!lp->stopping && lp->next_mark > 0 && pid > 0 &&
	    program_elapsed(lp) >= lp->next_mark && !lp->trained) {
		log_info("timed checkpoint due at %.0f s: the program has "
		    "not written a step line yet; skipped", lp->next_mark);
		lp->next_mark += (double)lp->p.checkpoint_every;
	} else if (!lp->stopping && lp->next_mark > 0 && pid > 0 &&
	    program_elapsed(lp) >= lp->next_mark) {
		log_info("timed checkpoint due at %.0f s: %s to the ranks",
		    lp->next_mark, sigabbrev_np(lp->p.signal) != NULL ?
		    sigabbrev_np(lp->p.signal) : "signal");
		lp->pending_due = lp->next_mark;
		lp->next_mark += (double)lp->p.checkpoint_every;
		kill(pid, SIGUSR1);
	}
}

void
launch_program_stop(struct launch_prog *lp, pid_t pid)
{
	int	fd;

	if (lp->stopping)
		return;
	lp->stopping = 1;
	if ((fd = open(lp->stop_file, O_WRONLY | O_CREAT | O_CLOEXEC,
	    0600)) == -1)
		log_warn("%s: %s", lp->stop_file, strerror(errno));
	else
		close(fd);
	lp->pending_due = 0;
	if (!lp->trained) {
		/* nothing to save yet, and a handler perhaps not yet set */
		log_notice("the program has not written a step line yet: "
		    "stopping it without a checkpoint request");
		lp->stop_saved = 1;
		return;
	}
	kill(pid, SIGUSR1);
}

void
launch_program_end(struct launch *l, struct launch_prog *lp, const json_t *st,
    int rc)
{
	json_t		*o = json_object(), *e;
	const char	*reason = NULL;
	int64_t		 rss, peak = -1;
	size_t		 i;

	/* the checkpoints the program announced as it ended */
	lp->next_tick = 0;
	lp->next_mark = 0;
	launch_program_tick(l, lp, -1);
	json_array_foreach(json_object_get(st, "ranks"), i, e)
		if (cjson_get_int(e, MX_PEAK_RSS, &rss) == 0 && rss > peak)
			peak = rss;
	(void)cjson_get_string(st, STATUS_REASON, &reason);
	json_object_set_new(o, MX_EVENT, json_string(MX_EV_SUMMARY));
	json_object_set_new(o, "by_cadre", json_true());
	json_object_set_new(o, "attempt", json_integer(lp->attempt));
	json_object_set_new(o, MX_STEP, lp->last_step > 0 ?
	    json_integer(lp->last_step) : json_null());
	json_object_set_new(o, MX_COMPLETE, json_boolean(rc ==
	    LAUNCH_EXIT_DONE));
	json_object_set_new(o, MX_EXIT, json_string(reason != NULL ? reason :
	    REASON_FAILED));
	json_object_set_new(o, MX_ELAPSED_S, json_real(program_elapsed(lp)));
	json_object_set_new(o, "checkpoints", json_integer(lp->ncheckpoints));
	json_object_set_new(o, MX_PEAK_RSS, peak >= 0 ? json_integer(peak) :
	    json_null());
	append_metrics(l, o);
}

void
launch_setup_failure(struct launch *l, char *msg, size_t msglen)
{
	json_t		*o;
	const char	*cmd;
	char		*rel, *path;
	int64_t		 code;
	size_t		 i;

	for (i = 0; i < l->n; i++) {
		xasprintf(&rel, "%s/setup-%s.json", RUNDIR_LOG,
		    l->nodes[i].name);
		path = rundir_path(l->rundir, rel);
		free(rel);
		o = NULL;
		if (cjson_load_file(path, 1 << 20, &o, NULL) == 0 &&
		    cjson_get_int(o, "exit", &code) == 0 && code != 0 &&
		    cjson_get_string(o, "command", &cmd) == 0) {
			cadre_errf(msg, msglen, CADRE_ERR_INVALID, "setup on "
			    "%s: '%.300s' exited with status %lld (log/setup-"
			    "%s.log)", l->nodes[i].name, cmd, (long long)code,
			    l->nodes[i].name);
			json_decref(o);
			free(path);
			return;
		}
		json_decref(o);
		free(path);
	}
	cadre_errf(msg, msglen, CADRE_ERR_INVALID, "setup failed on a node "
	    "that left no record (see %s/mpirun.log)", RUNDIR_LOG);
}

void
launch_program_free(struct launch_prog *lp)
{
	size_t	i;

	program_free(&lp->p);
	for (i = 0; i < lp->nckpts; i++)
		free(lp->ckpts[i]);
	free(lp->ckpts);
	free(lp->workdir);
	free(lp->stop_file);
	free(lp->path);
	memset(lp, 0, sizeof *lp);
}
