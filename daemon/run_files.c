/*
 * What the monitor reads and moves in a run directory: the progress in
 * metrics.jsonl's tail (for cadre status and watch), the timed
 * checkpoints into the database, status.json of the attempt in progress
 * and of the ones before it.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect.h"
#include "error.h"
#include "json.h"
#include "log.h"
#include "monitor.h"
#include "monitor_int.h"
#include "rundir.h"
#include "rundir_read.h"
#include "spec.h"
#include "xmalloc.h"

/* One line of metrics.jsonl into p: lines come oldest first, so the last
 * of each kind wins. Lines that are not JSON objects with an event are
 * skipped (the first line of a tail may be cut). */
static int
progress_line(void *ctx, enum rundir_line kind, const char *line, size_t len,
    size_t lineno)
{
	struct monitor_progress	*p = ctx;
	json_t			*o;
	const char		*ev, *path, *why;
	int64_t			 step;
	double			 d;
	int			 b;

	(void)lineno;
	if (rundir_metrics_event(kind, line, len, MONITOR_METRICS_TAIL, &o,
	    &ev) != 0)
		return 0;
	if (cjson_get_int(o, MX_STEP, &step) == 0 && step >= 0) {
		p->step = step;
		if (cjson_get_real(o, MX_ELAPSED_S, &d) == 0 && d >= 0)
			p->elapsed_s = d;
	}
	if (strcmp(ev, MX_EV_SUMMARY) == 0 && cjson_get_bool(o, MX_COMPLETE,
	    &b) == 0 && b)
		p->complete = 1;
	if (strcmp(ev, MX_EV_STEP) == 0 && cjson_get_real(o, MX_SAMPLES_PER_S,
	    &d) == 0 && isfinite(d) && d >= 0)
		p->samples_per_s = d;
	if (strcmp(ev, MX_EV_CHECKPOINT_SKIPPED) == 0 &&
	    cjson_get_string(o, MX_PATH, &path) == 0 &&
	    cjson_get_string(o, MX_WHY, &why) == 0)
		snprintf(p->skipped, sizeof p->skipped, "%s: %s", path, why);
	json_decref(o);
	return 0;
}

static void
progress_init(struct monitor_progress *p)
{
	memset(p, 0, sizeof *p);
	p->step = -1;
}

void
monitor_parse_metrics(const char *text, size_t len,
    struct monitor_progress *p)
{
	progress_init(p);
	(void)rundir_split_lines(text, len, 0, MONITOR_METRICS_TAIL,
	    progress_line, p);
}

void
mon_read_progress(struct mrun *r)
{
	struct monitor_progress	 p;
	struct rundir_lines	 o = { 0, MONITOR_METRICS_TAIL, 0, 0, 1 };
	struct stat		 sb;
	char			*path;

	xasprintf(&path, "%s/" RUNDIR_METRICS, r->run_dir);
	if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) ||
	    (sb.st_size == r->m_size && sb.st_mtim.tv_sec ==
	    r->m_mtime.tv_sec && sb.st_mtim.tv_nsec == r->m_mtime.tv_nsec)) {
		free(path);
		return;
	}
	/* the tail is enough: progress is in the newest lines */
	o.from = sb.st_size > (off_t)MONITOR_METRICS_TAIL ? sb.st_size -
	    (off_t)MONITOR_METRICS_TAIL : 0;
	progress_init(&p);
	if (rundir_read_lines(path, &o, progress_line, &p) == 0) {
		/* the event comes at an attempt's start: it stays when
		 * later lines push it out of the tail */
		if (p.skipped[0] == '\0')
			memcpy(p.skipped, r->prog.skipped, sizeof p.skipped);
		r->prog = p;
		r->m_size = sb.st_size;
		r->m_mtime = sb.st_mtim;
	}
	free(path);
}

/* The run's new timed checkpoints into the database: looked for when
 * metrics.jsonl changed (a checkpoint event comes with each), or always
 * (force) once an attempt ended, when eval.jsonl may be new too. */
void
mon_collect(struct monitor *m, struct mrun *r, int force)
{
	struct stat	 sb;
	char		*path;
	int		 added = 0, rc;

	if (!force) {
		xasprintf(&path, "%s/" RUNDIR_METRICS, r->run_dir);
		rc = stat(path, &sb);
		free(path);
		if (rc != 0 || (sb.st_size == r->c_size &&
		    sb.st_mtim.tv_sec == r->c_mtime.tv_sec &&
		    sb.st_mtim.tv_nsec == r->c_mtime.tv_nsec))
			return;
		r->c_size = sb.st_size;
		r->c_mtime = sb.st_mtim;
	}
	if ((rc = collect_run(m->st, r->id, r->run_dir, r->attempts,
	    &added)) != 0)
		log_warn("run %s: recording its checkpoints: %s", r->id,
		    cadre_strerror(rc));
	else if (added > 0)
		mon_event(m, r, "checkpoint", "%d timed checkpoint%s recorded",
		    added, added == 1 ? "" : "s");
}

/* trainer.keep_timed: at, once the run is done and evaluated. */
void
mon_thin(struct monitor *m, struct mrun *r)
{
	char *const	*at;
	size_t		 nat;
	int		 removed = 0, rc;

	if (strcmp(spec_run_string(r->r, SPEC_K_KEEP_TIMED), "at") != 0)
		return;
	at = spec_run_list(r->r, SPEC_K_CKPT_EVAL_AT, &nat);
	if ((rc = collect_thin(m->st, r->id, r->run_dir, at, nat,
	    &removed)) != 0)
		log_warn("run %s: thinning its checkpoints: %s", r->id,
		    cadre_strerror(rc));
	else if (removed > 0)
		mon_event(m, r, "checkpoint", "%d timed checkpoint%s not at eval.at "
		    "removed (keep_timed: at)", removed, removed == 1 ? "" : "s");
}

/* status.json of an earlier attempt goes aside as status.N.json, so that
 * the one in the run dir is always the current attempt's. */
void
mon_status_aside(struct mrun *r, int64_t n)
{
	char	*from, *to;

	xasprintf(&from, "%s/" RUNDIR_STATUS, r->run_dir);
	xasprintf(&to, "%s/status.%lld.json", r->run_dir, (long long)n);
	if (rename(from, to) != 0 && errno != ENOENT)
		log_warn("rename %s: %s", from, strerror(errno));
	free(from);
	free(to);
}

/* Whether launch has written r's status.json: the attempt in progress
 * ran to its end (an ended one's is set aside as status.N.json). */
int
mon_status_written(struct mrun *r)
{
	struct stat	 sb;
	char		*path;
	int		 have;

	xasprintf(&path, "%s/" RUNDIR_STATUS, r->run_dir);
	have = stat(path, &sb) == 0;
	free(path);
	return have;
}
