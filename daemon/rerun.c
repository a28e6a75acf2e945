/*
 * `cadre rerun` (daemon/monitor.h): new attempts for runs that ended, and
 * what a changed spec of the same runs changes.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "error.h"
#include "log.h"
#include "monitor.h"
#include "monitor_int.h"
#include "spec.h"
#include "state.h"
#include "xmalloc.h"

static void
add_change(void *ctx, enum spec_key k, const char *va, const char *vb)
{
	json_t	*a = ctx;
	char	*s;

	xasprintf(&s, "%s: %s -> %s", spec_key_info(k)->path,
	    *va != '\0' ? va : "(unset)", *vb != '\0' ? vb : "(unset)");
	json_array_append_new(a, json_string(s));
	free(s);
}

json_t *
mon_spec_changes(struct monitor *m, struct mexp *e, const char *text,
    const struct spec_plan *p)
{
	struct state_experiment	 se;
	json_t			*a = json_array();
	int			 same;

	/* the text first: a spec submitted again unchanged costs no diff */
	if (state_get_experiment(m->st, e->id, &se) == 0) {
		same = strcmp(se.spec, text) == 0;
		state_experiment_free(&se);
		if (same)
			return a;
	}
	(void)spec_plan_diff(e->plan, p, add_change, a);
	return a;
}

/* Whether r is one that q's flags pick when no run is named. */
static int
picked(const struct mrun *r, unsigned which)
{
	if (!run_state_final(r->state))
		return 0;
	if (which & MONITOR_RERUN_ALL)
		return 1;
	return (r->state == RUN_FAILED && (which & MONITOR_RERUN_FAILED)) ||
	    (r->state == RUN_CANCELLED && (which & MONITOR_RERUN_CANCELLED));
}

/* A named run that cannot be rerun: why, in err. */
static int
refuse(const struct mrun *r, unsigned which, char *err, size_t errlen)
{
	if (!run_state_final(r->state))
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "run %s has "
		    "not ended (%s): only ended runs are rerun (cadre cancel "
		    "%s first)", r->id, run_state_name(r->state), r->id);
	if (r->state == RUN_DONE && !(which & MONITOR_RERUN_ALL))
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "run %s is "
		    "done: --all reruns done runs too (it starts over)", r->id);
	return 0;
}

/* Collects the runs q names (all of them checked first) or picks. */
static int
select_runs(struct monitor *m, struct mexp *e, const struct monitor_rerun *q,
    unsigned which, struct mrun ***out, size_t *n, char *err, size_t errlen)
{
	struct mrun	*r;
	size_t		 i, j;
	int		 rc;

	*out = xcalloc(m->nruns + 1, sizeof **out);
	*n = 0;
	for (i = 0; i < q->nruns; i++) {
		struct mexp	*re;

		/* ids as every command takes them: whole or a unique start */
		if (mon_resolve(m, q->runs[i], &re, &r, err, errlen) != 0 ||
		    r == NULL || r->exp != e)
			return cadre_errf(err, errlen, CADRE_ERR_NOT_FOUND,
			    "'%.64s' is not a run of experiment %s (cadre "
			    "status %s lists them)", q->runs[i], e->id, e->id);
		if ((rc = refuse(r, which, err, errlen)) != 0)
			return rc;
		for (j = 0; j < *n && (*out)[j] != r; j++)
			;
		if (j == *n)
			(*out)[(*n)++] = r;
	}
	if (q->nruns > 0)
		return 0;
	for (i = 0; i < m->nruns; i++) {
		if (m->runs[i]->exp == e && picked(m->runs[i], which))
			(*out)[(*n)++] = m->runs[i];
	}
	return 0;
}

/* RUN_DIR -> RUN_DIR.rerun-N (N: the attempts made), so that the new
 * attempt resumes from nothing; *moved gets the new name (NULL: there
 * was no directory). */
static int
move_aside(struct mrun *r, char **moved, char *err, size_t errlen)
{
	*moved = NULL;
	xasprintf(moved, "%s.rerun-%lld", r->run_dir, (long long)r->attempts);
	if (rename(r->run_dir, *moved) == 0)
		return 0;
	if (errno == ENOENT) {
		free(*moved);
		*moved = NULL;
		return 0;
	}
	cadre_errf(err, errlen, CADRE_ERR_SYSTEM, "run %s: moving %s aside to "
	    "%s: %s", r->id, r->run_dir, *moved, strerror(errno));
	free(*moved);
	*moved = NULL;
	return CADRE_ERR_SYSTEM;
}

int
monitor_rerun(struct monitor *m, const struct monitor_rerun *q, json_t **reply,
    char *err, size_t errlen)
{
	struct spec		*s = NULL;
	struct spec_plan	*p = NULL;
	struct mexp		*e;
	struct mrun		*one, **sel = NULL;
	json_t			*changed = NULL, *ids, *moved;
	char			 id[SPEC_ID_LEN + 1], *dir, **dirs = NULL;
	unsigned		 which = q->which;
	size_t			 i, n = 0;
	int			 rc, fresh;

	*reply = NULL;
	err[0] = '\0';
	if (q->target == NULL)
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "rerun what? "
		    "name an experiment");
	if ((rc = mon_resolve(m, q->target, &e, &one, err, errlen)) != 0)
		return rc;
	if (one != NULL) {
		/* a run id alone: that run */
		struct monitor_rerun	qq = *q;
		char *const		*runs = (char *const *)&q->target;

		if (q->nruns > 0)
			return cadre_errf(err, errlen, CADRE_ERR_INVALID, "'%s' "
			    "is a run: name its experiment (%s) before more "
			    "runs", q->target, one->exp->id);
		qq.target = one->exp->id;
		qq.runs = runs;
		qq.nruns = 1;
		return monitor_rerun(m, &qq, reply, err, errlen);
	}
	if ((which & (MONITOR_RERUN_FAILED | MONITOR_RERUN_CANCELLED |
	    MONITOR_RERUN_ALL)) == 0)
		which |= MONITOR_RERUN_FAILED | MONITOR_RERUN_CANCELLED;
	if (q->spec_text != NULL) {
		if ((rc = mon_load_spec(q->spec_path, q->spec_text,
		    q->spec_len, &s, &p, err, errlen)) != 0)
			return rc;
		mon_experiment_id(s, p, id);
		if (strcmp(id, e->id) != 0) {
			rc = cadre_errf(err, errlen, CADRE_ERR_INVALID, "%s "
			    "describes other runs than experiment %s (its "
			    "experiment would be %s): cadre submit it as a new "
			    "experiment", q->spec_path, e->id, id);
			goto out;
		}
		if ((rc = mon_after_check(m, s, e->id, err, errlen)) != 0)
			goto out;
		changed = mon_spec_changes(m, e, q->spec_text, p);
	} else
		changed = json_array();
	if ((rc = select_runs(m, e, q, which, &sel, &n, err, errlen)) != 0)
		goto out;

	dirs = xcalloc(n + 1, sizeof *dirs);
	for (i = 0; i < n; i++) {
		fresh = sel[i]->state == RUN_DONE || (which & MONITOR_RERUN_FRESH);
		if (fresh && (rc = move_aside(sel[i], &dirs[i], err,
		    errlen)) != 0)
			goto undo;
	}
	if ((rc = state_begin(m->st)) != 0)
		goto undo;
	if (s != NULL && (rc = state_set_experiment_spec(m->st, e->id,
	    q->spec_path, q->spec_text)) != 0)
		goto rollback;
	for (i = 0; i < n; i++) {
		fresh = sel[i]->state == RUN_DONE || (which & MONITOR_RERUN_FRESH);
		if ((rc = state_rerun_run(m->st, sel[i]->id, "rerun", fresh)) != 0)
			goto rollback;
		mon_event(m, sel[i], "rerun", "attempt %lld%s%s",
		    (long long)sel[i]->attempts + 1, dirs[i] != NULL ?
		    ", starting over; the earlier outputs are in " : "",
		    dirs[i] != NULL ? dirs[i] : "");
	}
	if (json_array_size(changed) > 0) {
		char	*list = json_dumps(changed, JSON_COMPACT);

		mon_event(m, NULL, "spec", "experiment %s: %s applied: %s",
		    e->id, q->spec_path, list != NULL ? list : "");
		free(list);
	}
	if ((rc = state_commit(m->st)) != 0)
		goto rollback;

	/* recorded: now the memory follows */
	if (s != NULL) {
		mon_exp_set_spec(m, e, s, p);
		s = NULL;
		p = NULL;
	}
	ids = json_array();
	moved = json_array();
	for (i = 0; i < n; i++) {
		struct mrun	*r = sel[i];

		if (dirs[i] == NULL)
			mon_status_aside(r, r->attempts);
		else
			json_array_append_new(moved, json_string(dirs[i]));
		r->state = RUN_NEW;
		free(r->reason);
		r->reason = xstrdup("rerun");
		r->rerun_base = r->attempts;
		r->not_before = 0;
		r->unknown_polls = 0;
		r->m_tried = r->m_final = 0;
		r->m_size = 0;
		r->c_size = 0;
		if (dirs[i] != NULL)
			r->prog.step = -1;
		json_array_append_new(ids, json_string(r->id));
	}
	if (n > 0) {
		m->more = 1;
		log_info("experiment %s: %zu run%s rerun", e->id, n,
		    n == 1 ? "" : "s");
	}
	*reply = json_pack("{s:s, s:s, s:I, s:o, s:O, s:o}", "experiment",
	    e->id, "name", e->name, "rerun", (json_int_t)n, "runs", ids,
	    "changed", changed, "moved", moved);
	rc = 0;
	goto out;

rollback:
	(void)state_rollback(m->st);
undo:
	/* nothing recorded: the directories go back where they were */
	for (i = 0; i < n && dirs != NULL; i++) {
		if (dirs[i] == NULL)
			continue;
		dir = dirs[i];
		if (rename(dir, sel[i]->run_dir) != 0)
			log_error("run %s: moving %s back: %s", sel[i]->id, dir,
			    strerror(errno));
	}
	if (rc != 0 && (err[0] == '\0'))
		cadre_errf(err, errlen, rc, "recording the rerun: %s (see the "
		    "log)", cadre_strerror(rc));
out:
	for (i = 0; i < n && dirs != NULL; i++)
		free(dirs[i]);
	free(dirs);
	free(sel);
	json_decref(changed);
	spec_plan_free(p);
	spec_free(s);
	return rc;
}

static const struct {
	const char	*name;
	unsigned	 flag;
} rerun_words[] = {
	{ "failed", MONITOR_RERUN_FAILED },
	{ "cancelled", MONITOR_RERUN_CANCELLED },
	{ "all", MONITOR_RERUN_ALL },
	{ "fresh", MONITOR_RERUN_FRESH },
};

int
monitor_rerun_parse(const json_t *req, struct monitor_rerun *q, char *err,
    size_t errlen)
{
	const json_t	*runs, *which, *v;
	const char	*w;
	size_t		 i, j;

	memset(q, 0, sizeof *q);
	q->target = json_string_value(json_object_get(req, "target"));
	runs = json_object_get(req, "runs");
	which = json_object_get(req, "which");
	if (q->target == NULL)
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "rerun: "
		    "expected \"target\" (an experiment)");
	if ((runs != NULL && !json_is_array(runs)) ||
	    json_array_size(runs) > SPEC_MAX_RUNS ||
	    (which != NULL && !json_is_array(which)))
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "rerun: "
		    "\"runs\" and \"which\" are arrays of strings (at most %d "
		    "runs)", SPEC_MAX_RUNS);
	json_array_foreach(which, i, v) {
		if ((w = json_string_value(v)) == NULL)
			w = "";
		for (j = 0; j < sizeof rerun_words / sizeof rerun_words[0] &&
		    strcmp(rerun_words[j].name, w) != 0; j++)
			;
		if (j == sizeof rerun_words / sizeof rerun_words[0])
			return cadre_errf(err, errlen, CADRE_ERR_INVALID,
			    "rerun: \"which\": '%.32s' is not failed, "
			    "cancelled, all or fresh", w);
		q->which |= rerun_words[j].flag;
	}
	json_array_foreach(runs, i, v) {
		if (!json_is_string(v))
			return cadre_errf(err, errlen, CADRE_ERR_INVALID,
			    "rerun: \"runs\" holds a value that is not a run "
			    "id");
	}
	if (json_array_size(runs) > 0) {
		char	**ids = xcalloc(json_array_size(runs), sizeof *ids);

		json_array_foreach(runs, i, v)
			ids[i] = (char *)json_string_value(v);
		q->runs = ids;
		q->nruns = json_array_size(runs);
	}
	if ((v = json_object_get(req, "spec")) != NULL) {
		q->spec_text = json_string_value(v);
		q->spec_path = json_string_value(json_object_get(req, "path"));
		if (q->spec_text == NULL || q->spec_path == NULL ||
		    q->spec_path[0] != '/' ||
		    json_string_length(v) > SPEC_MAX_BYTES) {
			free((void *)q->runs);
			q->runs = NULL;
			return cadre_errf(err, errlen, CADRE_ERR_INVALID,
			    "rerun: \"spec\" (text, at most %zu bytes) goes "
			    "with \"path\" (absolute)", (size_t)SPEC_MAX_BYTES);
		}
		q->spec_len = json_string_length(v);
	}
	return 0;
}

int
monitor_rerun_json(struct monitor *m, const json_t *req, json_t **reply,
    char *err, size_t errlen)
{
	struct monitor_rerun	q;
	int			rc;

	*reply = NULL;
	if ((rc = monitor_rerun_parse(req, &q, err, errlen)) != 0)
		return rc;
	rc = monitor_rerun(m, &q, reply, err, errlen);
	free((void *)q.runs);
	return rc;
}
