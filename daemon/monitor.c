/* The monitor: cadred's loop over its runs (daemon/monitor.h): loading
 * them, submission, polling and cancel. The requeue policy is in
 * requeue.c, what it reads in run directories in run_files.c, its status
 * queries in monitor_status.c, its config file in monitor_config.c. */
#include "config.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "collect.h"
#include "diag.h"
#include "duration.h"
#include "error.h"
#include "jobscript.h"
#include "json.h"
#include "log.h"
#include "monitor.h"
#include "monitor_int.h"
#include "notify.h"
#include "paths.h"
#include "rundir.h"
#include "rundir_read.h"
#include "sha256.h"
#include "spec.h"
#include "state.h"
#include "strutil.h"
#include "xmalloc.h"

/* Jobs handed to the scheduler per tick: a 10,000-run submission does
 * not keep the loop from its clients. */
#define SUBMIT_PER_TICK		32
/* Polls in a row that do not find a job without a status.json before
 * the run is given up as lost (a job just submitted can be missing from
 * a lagging squeue once). */
#define UNKNOWN_POLLS_MAX	3

/* ---------------------------------------------------------------- monitor */

static int
run_cmp(const void *a, const void *b)
{
	return strcmp((*(struct mrun *const *)a)->id,
	    (*(struct mrun *const *)b)->id);
}

struct mrun *
mon_find_run(struct monitor *m, const char *id)
{
	struct mrun	 key, *kp = &key, **r;

	if (strlen(id) != SPEC_ID_LEN || m->nruns == 0)
		return NULL;
	memcpy(key.id, id, SPEC_ID_LEN + 1);
	r = bsearch(&kp, m->runs, m->nruns, sizeof *m->runs, run_cmp);
	return r != NULL ? *r : NULL;
}

struct mexp *
mon_find_exp(struct monitor *m, const char *id)
{
	size_t	i;

	for (i = 0; i < m->nexps; i++) {
		if (strcmp(m->exps[i]->id, id) == 0)
			return m->exps[i];
	}
	/* a name: the newest experiment of that name */
	for (i = m->nexps; i-- > 0;) {
		if (strcmp(m->exps[i]->name, id) == 0)
			return m->exps[i];
	}
	return NULL;
}

void
mon_event(struct monitor *m, struct mrun *r, const char *kind, const char *fmt,
    ...)
{
	va_list	 ap;
	char	*msg;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r != NULL)
		log_info("run %s: %s: %s", r->id, kind, msg);
	(void)state_add_event(m->st, r != NULL ? r->exp->id : NULL,
	    r != NULL ? r->id : NULL, kind, msg);
	free(msg);
}

/* The webhook of r's experiment, when notify.on names state s. */
static void
notify_change(struct monitor *m, struct mrun *r, enum run_state s,
    const char *reason)
{
	json_t	*o;
	char	*body;
	size_t	 i;

	if (m->notifier == NULL || r->exp->webhook == NULL)
		return;
	for (i = 0; i < r->exp->nnotify_on; i++) {
		if (strcmp(r->exp->notify_on[i], run_state_name(s)) == 0)
			break;
	}
	if (i == r->exp->nnotify_on)
		return;
	o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I}", "experiment",
	    r->exp->name, "run", r->id, "state", run_state_name(s), "reason",
	    reason, "attempt", (json_int_t)r->attempts, "time",
	    (json_int_t)time(NULL));
	if (o == NULL)
		return;
	body = cjson_dumps_sorted(o);
	if (body != NULL && notify_post(m->notifier, r->exp->webhook, body) != 0)
		log_warn("run %s: webhook not sent (URL or body refused)", r->id);
	free(body);
	json_decref(o);
}

void
monitor_set_notifier(struct monitor *m, struct notifier *n)
{
	m->notifier = n;
}

int
mon_set_state(struct monitor *m, struct mrun *r, enum run_state s,
    const char *reason)
{
	int	rc;

	if (reason == NULL)
		reason = "";
	if (r->state == s && strcmp(r->reason, reason) == 0)
		return 0;
	if ((rc = state_set_run_state(m->st, r->id, s, reason)) != 0)
		return rc;
	mon_event(m, r, run_state_name(s), "%s%s%s", run_state_name(r->state),
	    " -> ", *reason != '\0' ? reason : run_state_name(s));
	r->state = s;
	free(r->reason);
	r->reason = xstrdup(reason);
	r->updated = wall_now();
	notify_change(m, r, s, reason);
	return 0;
}

static struct mbackend *
backend_get(struct monitor *m, const char *name, const char *url,
    const char *token_env)
{
	struct sched_config	 sc;
	struct mbackend		*be;
	char			*key;
	size_t			 i;
	int			 rc;

	xasprintf(&key, "%s|%s|%s", name, url != NULL ? url : "",
	    token_env != NULL ? token_env : "");
	for (i = 0; i < m->nbes; i++) {
		if (strcmp(m->bes[i]->key, key) == 0) {
			free(key);
			return m->bes[i];
		}
	}
	memset(&sc, 0, sizeof sc);
	sc.bindir = m->cfg.bindir;
	sc.cmd_timeout = m->cfg.cmd_timeout;
	sc.rest_url = url;
	sc.token_env = token_env;
	sc.dry = m->cfg.dry;
	be = xcalloc(1, sizeof *be);
	be->key = key;
	if ((rc = sched_open(name, &sc, &be->sched)) != 0)
		log_error("backend %s: %s", name, cadre_strerror(rc));
	m->bes = xreallocarray(m->bes, m->nbes + 1, sizeof *m->bes);
	m->bes[m->nbes++] = be;
	return be;
}

static void
backends_close(struct monitor *m)
{
	size_t	i;

	for (i = 0; i < m->nbes; i++) {
		sched_close(m->bes[i]->sched);
		free(m->bes[i]->key);
		free(m->bes[i]);
	}
	free(m->bes);
	m->bes = NULL;
	m->nbes = 0;
}

static void
exp_free(struct mexp *e)
{
	if (e == NULL)
		return;
	spec_plan_free(e->plan);
	spec_free(e->spec);
	free(e->name);
	free(e->backend);
	free(e);
}

static void
run_free(struct mrun *r)
{
	if (r == NULL)
		return;
	free(r->run_dir);
	free(r->reason);
	free(r->job_id);
	free(r);
}

/* Parses and expands a spec: 0 with *sp and *pp, or CADRE_ERR_INVALID with
 * the diagnostics in err. */
int
mon_load_spec(const char *path, const char *text, size_t len, struct spec **sp,
    struct spec_plan **pp, char *err, size_t errlen)
{
	struct diags	 d;
	char		*buf = NULL;
	size_t		 blen = 0;
	FILE		*fp;
	int		 rc;

	*sp = NULL;
	*pp = NULL;
	diags_init(&d);
	if ((rc = spec_parse(path, text, len, &d, sp)) == 0)
		rc = spec_expand(*sp, &d, pp);
	if (rc != 0) {
		diags_sort(&d);
		if ((fp = open_memstream(&buf, &blen)) != NULL) {
			diags_print(&d, fp);
			fclose(fp);
		}
		cadre_errf(err, errlen, CADRE_ERR_INVALID, "%s", buf != NULL ? buf :
		    "invalid spec");
		free(buf);
		spec_free(*sp);
		*sp = NULL;
		rc = CADRE_ERR_INVALID;
	}
	diags_free(&d);
	return rc;
}

static const struct spec_run *plan_find(const struct spec_plan *p,
    const char *id);

/* e's spec and what the monitor takes from it; the runs e has point
 * into the new plan. */
void
mon_exp_set_spec(struct monitor *m, struct mexp *e, struct spec *s,
    struct spec_plan *p)
{
	struct spec		*olds = e->spec;
	struct spec_plan	*oldp = e->plan;
	size_t			 i;

	e->spec = s;
	e->plan = p;
	for (i = 0; i < m->nruns; i++) {
		if (m->runs[i]->exp == e)
			m->runs[i]->r = plan_find(p, m->runs[i]->id);
	}
	spec_plan_free(oldp);
	spec_free(olds);
	free(e->name);
	free(e->backend);
	e->name = xstrdup(spec_get_string(s, SPEC_K_NAME));
	e->backend = xstrdup(spec_get_string(s, SPEC_K_SCHED_BACKEND));
	e->max_concurrent = spec_get_int(s, SPEC_K_SCHED_MAX_CONCURRENT);
	e->retries_max = spec_get_int(s, SPEC_K_RETRIES_MAX);
	e->backoff = (double)spec_get_int(s, SPEC_K_RETRIES_BACKOFF);
	e->retry_on = spec_get_list(s, SPEC_K_RETRIES_ON, &e->nretry_on);
	e->webhook = spec_get_string(s, SPEC_K_NOTIFY_WEBHOOK);
	e->notify_on = spec_get_list(s, SPEC_K_NOTIFY_ON, &e->nnotify_on);
	e->be = backend_get(m, e->backend, spec_get_string(s,
	    SPEC_K_SCHED_REST_URL), spec_get_string(s,
	    SPEC_K_SCHED_REST_TOKEN_ENV));
}

static struct mexp *
exp_new(struct monitor *m, const char *id, struct spec *s,
    struct spec_plan *p)
{
	struct mexp	*e = xcalloc(1, sizeof *e);

	snprintf(e->id, sizeof e->id, "%s", id);
	mon_exp_set_spec(m, e, s, p);
	m->exps = xreallocarray(m->exps, m->nexps + 1, sizeof *m->exps);
	m->exps[m->nexps++] = e;
	return e;
}

static void
runs_add(struct monitor *m, struct mrun *r)
{
	m->runs = xreallocarray(m->runs, m->nruns + 1, sizeof *m->runs);
	m->runs[m->nruns++] = r;
}

static const struct spec_run *
plan_find(const struct spec_plan *p, const char *id)
{
	size_t	i, n = spec_plan_nruns(p);

	for (i = 0; i < n; i++) {
		if (strcmp(spec_run_id(spec_plan_run(p, i)), id) == 0)
			return spec_plan_run(p, i);
	}
	return NULL;
}

struct load_ctx {
	struct monitor	*m;
	struct mexp	*e;
};

static int
load_run(void *ctx, const struct state_run *sr)
{
	struct load_ctx		*lc = ctx;
	struct monitor		*m = lc->m;
	struct state_attempt	 a;
	struct mrun		*r;
	const struct spec_run	*pr;

	if ((pr = plan_find(lc->e->plan, sr->id)) == NULL) {
		log_warn("run %s of experiment %s is not in its spec: left "
		    "alone", sr->id, lc->e->id);
		return 0;
	}
	r = xcalloc(1, sizeof *r);
	snprintf(r->id, sizeof r->id, "%s", sr->id);
	r->exp = lc->e;
	r->r = pr;
	r->run_dir = xstrdup(sr->run_dir);
	r->state = sr->state;
	r->reason = xstrdup(sr->reason != NULL ? sr->reason : "");
	r->attempts = sr->attempts;
	r->rerun_base = sr->rerun_base;
	r->job_id = sr->job_id != NULL ? xstrdup(sr->job_id) : NULL;
	r->updated = sr->updated;
	r->prog.step = -1;
	/* an attempt recorded without its job id: the daemon stopped
	 * between the two; find out whether the submission went through */
	if (r->attempts > 0 && r->job_id == NULL && !run_state_final(r->state)
	    && state_get_attempt(m->st, r->id, r->attempts, &a) == 0) {
		r->job_pending = a.ended == 0;
		state_attempt_free(&a);
	}
	if (r->state == RUN_REQUEUED)
		r->not_before = r->updated + monitor_backoff(lc->e->backoff,
		    r->attempts - r->rerun_base, m->cfg.backoff_cap);
	runs_add(m, r);
	return 0;
}

static int
load_exp(void *ctx, const struct state_experiment *se)
{
	struct monitor		*m = ctx;
	struct load_ctx		 lc;
	struct spec		*s;
	struct spec_plan	*p;
	char			 err[MONITOR_ERR_MAX];

	if (mon_load_spec(se->spec_file, se->spec, strlen(se->spec), &s, &p, err,
	    sizeof err) != 0) {
		log_error("experiment %s: its recorded spec no longer "
		    "parses: %s", se->id, err);
		return 0;
	}
	lc.m = m;
	lc.e = exp_new(m, se->id, s, p);
	return state_list_runs(m->st, se->id, load_run, &lc);
}

struct mexp *
mon_get_exp(struct monitor *m, const char *id)
{
	struct state_experiment	 se;
	size_t			 i, nexps = m->nexps;

	for (i = 0; i < m->nexps; i++) {
		if (strcmp(m->exps[i]->id, id) == 0)
			return m->exps[i];
	}
	if (state_get_experiment(m->st, id, &se) != 0)
		return NULL;
	(void)load_exp(m, &se);
	state_experiment_free(&se);
	if (m->nruns > 1)
		qsort(m->runs, m->nruns, sizeof *m->runs, run_cmp);
	return m->nexps > nexps ? m->exps[m->nexps - 1] : NULL;
}

int
monitor_load(struct monitor *m, const char *target, char *id, size_t idlen,
    char *err, size_t errlen)
{
	struct state_run	 sr;
	struct mrun		*r;
	char			*eid = NULL, msg[512];
	int			 rc;

	msg[0] = '\0';
	if ((r = mon_find_run(m, target)) != NULL) {
		snprintf(id, idlen, "%s", r->exp->id);
		return 0;
	}
	rc = state_find_experiment(m->st, target, &eid, msg, sizeof msg);
	if (rc == CADRE_ERR_NOT_FOUND && state_get_run(m->st, target,
	    &sr) == 0) {
		eid = xstrdup(sr.experiment);
		state_run_free(&sr);
		rc = 0;
	}
	if (rc != 0)
		return cadre_errf(err, errlen, rc, "%s", msg[0] != '\0' ? msg :
		    rc == CADRE_ERR_NOT_FOUND ? "no experiment or run by that "
		    "name (cadre status lists them)" : cadre_strerror(rc));
	if (mon_get_exp(m, eid) == NULL) {
		rc = cadre_errf(err, errlen, CADRE_ERR_NOT_FOUND, "experiment "
		    "%s: its recorded spec does not load (see the log)", eid);
		free(eid);
		return rc;
	}
	snprintf(id, idlen, "%s", eid);
	free(eid);
	return 0;
}

int
monitor_open(struct state *st, const struct monitor_config *cfg, int load,
    struct monitor **out)
{
	struct monitor	*m;
	int		 rc = 0;

	*out = NULL;
	m = xcalloc(1, sizeof *m);
	m->st = st;
	monitor_config_copy(&m->cfg, cfg);
	if (load && (rc = state_list_experiments(st, load_exp, m)) != 0) {
		monitor_free(m);
		return rc;
	}
	if (m->nruns > 1)
		qsort(m->runs, m->nruns, sizeof *m->runs, run_cmp);
	*out = m;
	return 0;
}

void
monitor_free(struct monitor *m)
{
	size_t	i;

	if (m == NULL)
		return;
	for (i = 0; i < m->nruns; i++)
		run_free(m->runs[i]);
	free(m->runs);
	for (i = 0; i < m->nexps; i++)
		exp_free(m->exps[i]);
	free(m->exps);
	backends_close(m);
	monitor_config_free(&m->cfg);
	free(m);
}

void
monitor_reconfigure(struct monitor *m, const struct monitor_config *cfg)
{
	size_t	i;

	monitor_config_free(&m->cfg);
	monitor_config_copy(&m->cfg, cfg);
	backends_close(m);
	for (i = 0; i < m->nexps; i++) {
		m->exps[i]->be = backend_get(m, m->exps[i]->backend,
		    spec_get_string(m->exps[i]->spec, SPEC_K_SCHED_REST_URL),
		    spec_get_string(m->exps[i]->spec,
		    SPEC_K_SCHED_REST_TOKEN_ENV));
	}
	m->next_poll = 0;
}

double
monitor_unreachable_since(const struct monitor *m)
{
	return m->unreachable_since;
}

/* ---------------------------------------------------------------- submit */

static int
str_ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* First 12 hex digits of SHA-256 over the name and the sorted run ids. */
void
mon_experiment_id(const struct spec *s, const struct spec_plan *p, char *id)
{
	struct sha256_ctx	 c;
	uint8_t			 dg[SHA256_DIGEST_LEN];
	const char		**ids;
	size_t			 i, n = spec_plan_nruns(p);

	ids = xcalloc(n > 0 ? n : 1, sizeof *ids);
	for (i = 0; i < n; i++)
		ids[i] = spec_run_id(spec_plan_run(p, i));
	qsort(ids, n, sizeof *ids, str_ptr_cmp);
	sha256_init(&c);
	sha256_update(&c, spec_get_string(s, SPEC_K_NAME),
	    strlen(spec_get_string(s, SPEC_K_NAME)));
	for (i = 0; i < n; i++) {
		sha256_update(&c, "\n", 1);
		sha256_update(&c, ids[i], strlen(ids[i]));
	}
	sha256_final(&c, dg);
	sha256_hex(dg, SPEC_ID_LEN / 2, id);
	free(ids);
}

int
monitor_submit(struct monitor *m, const char *path, const char *text,
    size_t len, json_t **reply, char *err, size_t errlen)
{
	struct spec		*s = NULL;
	struct spec_plan	*p = NULL;
	struct mexp		*e;
	struct mrun		*r;
	const struct spec_run	*pr;
	char			 id[SPEC_ID_LEN + 1], *dir;
	size_t			 i, n, added = 0, first = m->nruns;
	int			 ins, rc;

	*reply = NULL;
	if ((rc = mon_load_spec(path, text, len, &s, &p, err, errlen)) != 0)
		return rc;
	mon_experiment_id(s, p, id);
	n = spec_plan_nruns(p);
	if ((e = mon_get_exp(m, id)) != NULL) {
		/* the same runs: what else changed is said, not applied
		 * (cadre rerun --spec applies it) */
		*reply = json_pack("{s:s, s:s, s:I, s:I, s:o}", "experiment",
		    id, "name", e->name, "runs", (json_int_t)n, "new",
		    (json_int_t)0, "changed", mon_spec_changes(m, e, text, p));
		spec_plan_free(p);
		spec_free(s);
		return 0;
	}
	if ((rc = mon_after_check(m, s, id, err, errlen)) != 0) {
		spec_plan_free(p);
		spec_free(s);
		return rc;
	}
	if ((rc = state_begin(m->st)) != 0)
		goto fail;
	if ((rc = state_add_experiment(m->st, id, spec_get_string(s,
	    SPEC_K_NAME), path, text, spec_get_string(s,
	    SPEC_K_SCHED_BACKEND), NULL)) != 0)
		goto rollback;
	e = exp_new(m, id, s, p);
	s = NULL;
	p = NULL;
	for (i = 0; i < n; i++) {
		pr = spec_plan_run(e->plan, i);
		if ((rc = paths_run_dir(spec_run_id(pr), &dir)) != 0)
			goto rollback;
		rc = state_add_run(m->st, id, spec_run_id(pr),
		    spec_run_config_id(pr), spec_run_repeat(pr), dir, &ins);
		if (rc != 0 || !ins || mon_find_run(m, spec_run_id(pr)) != NULL) {
			/* a run of an earlier experiment stays with it */
			free(dir);
			if (rc != 0)
				goto rollback;
			continue;
		}
		r = xcalloc(1, sizeof *r);
		snprintf(r->id, sizeof r->id, "%s", spec_run_id(pr));
		r->exp = e;
		r->r = pr;
		r->run_dir = dir;
		r->state = RUN_NEW;
		r->reason = xstrdup("");
		r->updated = wall_now();
		r->prog.step = -1;
		runs_add(m, r);
		added++;
	}
	if ((rc = state_add_event(m->st, id, NULL, "submitted", path)) != 0 ||
	    (rc = state_commit(m->st)) != 0)
		goto rollback;
	if (m->nruns > 1)
		qsort(m->runs, m->nruns, sizeof *m->runs, run_cmp);
	log_notice("experiment %s (%s): %zu runs, %zu new", id, e->name, n,
	    added);
	*reply = json_pack("{s:s, s:s, s:I, s:I}", "experiment", id, "name",
	    e->name, "runs", (json_int_t)n, "new", (json_int_t)added);
	m->more = 1;
	return 0;

rollback:
	(void)state_rollback(m->st);
	/* forget what this call added in memory */
	while (m->nruns > first)
		run_free(m->runs[--m->nruns]);
	if (m->nexps > 0 && strcmp(m->exps[m->nexps - 1]->id, id) == 0)
		exp_free(m->exps[--m->nexps]);
fail:
	spec_plan_free(p);
	spec_free(s);
	return cadre_errf(err, errlen, rc, "recording the experiment: %s (see "
	    "cadred's log)", cadre_strerror(rc));
}

static enum jobscript_kind
script_kind(const char *backend)
{
	if (strcmp(backend, "pbs") == 0)
		return JOBSCRIPT_PBS;
	if (strcmp(backend, "slurm-rest") == 0)
		return JOBSCRIPT_SLURMREST;
	if (strcmp(backend, "local") == 0)
		return JOBSCRIPT_LOCAL;
	return JOBSCRIPT_SLURM;
}

/* cadre-agent keygen --run-dir DIR, when DIR/keys/ is not there yet. */
static int
keygen(struct monitor *m, struct mrun *r, char *err, size_t errlen)
{
	struct sched_config	 sc;
	struct stat		 sb;
	char			*keys, *out = NULL, *cerr = NULL;
	char			*av[5];
	int			 rc, status;

	xasprintf(&keys, "%s/keys/id_ed25519", r->run_dir);
	rc = stat(keys, &sb);
	free(keys);
	if (rc == 0)
		return 0;
	memset(&sc, 0, sizeof sc);
	sc.cmd_timeout = 60;
	av[0] = m->cfg.agent;
	av[1] = (char *)"keygen";
	av[2] = (char *)"--run-dir";
	av[3] = r->run_dir;
	av[4] = NULL;
	if ((rc = sched_run_cmd(&sc, av, 4096, &status, &out, &cerr)) != 0)
		cadre_errf(err, errlen, rc, "%s keygen: %s", m->cfg.agent,
		    cadre_strerror(rc));
	else if (status != 0)
		rc = cadre_errf(err, errlen, CADRE_ERR_SYSTEM, "%s keygen: exit "
		    "%d: %.200s", m->cfg.agent, status, cerr != NULL ? cerr :
		    "");
	free(out);
	free(cerr);
	return rc;
}

/* Run dir, keys, train.json (program.json for a program) and job script
 * of r; js gets the job. */
static int
prepare(struct monitor *m, struct mrun *r, struct jobscript *js,
    char *name, size_t namelen, char **script, char *err, size_t errlen)
{
	int	 rc;

	*script = NULL;
	if ((rc = paths_mkdir(r->run_dir, 0700, 1)) != 0)
		return cadre_errf(err, errlen, rc, "%s: cannot create the run dir "
		    "(see cadred's log)", r->run_dir);
	if (!m->cfg.dry && (rc = keygen(m, r, err, errlen)) != 0)
		return rc;
	if ((rc = jobscript_write_run_json(r->exp->spec, r->r, r->run_dir,
	    err, errlen)) != 0)
		return rc;
	if (spec_is_set(r->exp->spec, SPEC_K_INIT_FROM)) {
		char	*init = NULL;

		if ((rc = mon_init_path(m, r, &init, err, errlen)) == 0)
			rc = jobscript_set_init(r->run_dir, init, err, errlen);
		free(init);
		if (rc != 0)
			return rc;
	}
	snprintf(name, namelen, "cadre-%s", r->id);
	jobscript_from_run(r->exp->spec, r->r, r->run_dir, name, m->cfg.agent,
	    m->cfg.trainer, js);
	xasprintf(script, "%s/" RUNDIR_JOB_SCRIPT, r->run_dir);
	js->job.script = *script;
	if ((rc = jobscript_write(script_kind(r->exp->backend),
	    m->cfg.templates, js, *script, err, errlen)) != 0) {
		free(*script);
		*script = NULL;
	}
	return rc;
}

static void
busy(struct monitor *m, double now, const char *what)
{
	double	d;

	if (m->unreachable_since == 0) {
		m->unreachable_since = now;
		mon_event(m, NULL, "unreachable", "the scheduler does not answer "
		    "(%s): retrying", what);
		log_warn("the scheduler does not answer (%s): retrying with "
		    "backoff", what);
	}
	m->busy_count++;
	d = monitor_backoff(m->cfg.poll_interval, m->busy_count, 60);
	m->retry_at = now + d;
}

static void
reachable(struct monitor *m)
{
	if (m->unreachable_since != 0) {
		mon_event(m, NULL, "reachable", "the scheduler answers again");
		log_notice("the scheduler answers again");
	}
	m->unreachable_since = 0;
	m->busy_count = 0;
	m->retry_at = 0;
}

/* Fails r for good with reason (the attempt too, when there is one). */
static void
fail_run(struct monitor *m, struct mrun *r, const char *reason)
{
	if (r->attempts > 0)
		(void)state_set_attempt_state(m->st, r->id, r->attempts,
		    REASON_FAILED, -1, reason, 1);
	(void)mon_set_state(m, r, RUN_FAILED, reason);
}

/* Hands r to the scheduler: 0, or CADRE_ERR_BUSY (try again later). */
static int
submit_run(struct monitor *m, struct mrun *r, double now)
{
	struct sched		*sc = r->exp->be->sched;
	struct jobscript	 js;
	char			 err[MONITOR_ERR_MAX], name[JOBSCRIPT_NAME_MAX];
	char			*script = NULL, *job = NULL;
	int64_t			 n;
	int			 rc;

	if (sc == NULL) {
		fail_run(m, r, "the scheduler backend could not be opened "
		    "(see cadred's log)");
		return 0;
	}
	snprintf(name, sizeof name, "cadre-%s", r->id);
	if (r->job_pending) {
		/* recorded, maybe submitted: does the scheduler know it? */
		if ((rc = sched_find(sc, name, &job)) == CADRE_ERR_BUSY ||
		    rc == CADRE_ERR_TIMEOUT)
			return rc;
		if (rc == 0 && job != NULL) {
			n = r->attempts;
			mon_event(m, r, "found", "attempt %lld is job %s (found by "
			    "name after a restart)", (long long)n, job);
			goto recorded;
		}
		n = r->attempts;
		if (mon_status_written(r)) {
			/* its job ran to the end and the scheduler has
			 * forgotten it (cadred was down past MinJobAge):
			 * status.json decides, as for a forgotten job */
			struct sched_status	ss;

			memset(&ss, 0, sizeof ss);
			ss.state = SCHED_UNKNOWN;
			ss.exit_code = -1;
			r->job_pending = 0;
			mon_event(m, r, "found", "attempt %lld ended while cadred "
			    "was down (its status.json is in the run dir): not "
			    "submitted again", (long long)n);
			mon_end_attempt(m, r, &ss, now);
			rc = 0;
			goto out;
		}
		/* not there (or the backend cannot say): submit it now, as
		 * the same attempt */
	} else {
		n = 0;
	}
	if ((rc = prepare(m, r, &js, name, sizeof name, &script, err,
	    sizeof err)) != 0) {
		fail_run(m, r, err);
		goto out;
	}
	if (n == 0) {
		mon_status_aside(r, r->attempts);
		if ((rc = state_add_attempt(m->st, r->id, &n)) != 0) {
			log_error("run %s: cannot record an attempt: %s", r->id,
			    cadre_strerror(rc));
			goto out;
		}
		r->attempts = n;
		r->job_pending = 1;
		free(r->job_id);
		r->job_id = NULL;
	}
	if ((rc = sched_submit(sc, &js.job, &job)) != 0) {
		/* busy or no answer: the attempt stays without a job id, and
		 * the next try asks by name first (sbatch may have gone
		 * through before it timed out) */
		if (rc == CADRE_ERR_BUSY || rc == CADRE_ERR_TIMEOUT)
			goto out;
		snprintf(err, sizeof err, "the scheduler refused the job: %s "
		    "(see cadred's log)", cadre_strerror(rc));
		fail_run(m, r, err);
		r->job_pending = 0;
		rc = 0;
		goto out;
	}
recorded:
	if ((rc = state_set_attempt_job(m->st, r->id, n, job)) != 0) {
		log_error("run %s: job %s submitted but not recorded: %s", r->id,
		    job, cadre_strerror(rc));
		rc = 0;
		goto out;
	}
	free(r->job_id);
	r->job_id = job;
	job = NULL;
	r->job_pending = 0;
	r->unknown_polls = 0;
	(void)mon_set_state(m, r, RUN_QUEUED, "");
	mon_event(m, r, "submitted", "attempt %lld: job %s", (long long)n,
	    r->job_id);
	rc = 0;
out:
	free(job);
	free(script);
	return rc;
}

static int
active(enum run_state s)
{
	return s == RUN_QUEUED || s == RUN_STARTING || s == RUN_RUNNING;
}

/* after: whether e's new runs wait (their reason says for what); those
 * that can never start fail. */
static int
hold_after(struct monitor *m, struct mexp *e)
{
	char	why[MONITOR_ERR_MAX];
	size_t	i, nnew = 0;
	int	st;

	if (!spec_is_set(e->spec, SPEC_K_AFTER))
		return 0;
	for (i = 0; i < m->nruns; i++)
		nnew += m->runs[i]->exp == e && m->runs[i]->state == RUN_NEW;
	if (nnew == 0)
		return 0;
	if ((st = mon_after_state(m, e, why, sizeof why)) == 0)
		return 0;
	for (i = 0; i < m->nruns; i++) {
		struct mrun	*r = m->runs[i];

		if (r->exp != e || r->state != RUN_NEW)
			continue;
		if (st < 0)
			fail_run(m, r, why);
		else if (strcmp(r->reason, why) != 0)
			(void)mon_set_state(m, r, RUN_NEW, why);
	}
	return 1;
}

static void
submit_due(struct monitor *m, double now)
{
	size_t	i, j, sent = 0;
	int64_t	live;
	int	rc;

	m->more = 0;
	for (i = 0; i < m->nexps; i++) {
		struct mexp	*e = m->exps[i];

		live = 0;
		if (e->max_concurrent > 0) {
			for (j = 0; j < m->nruns; j++) {
				if (m->runs[j]->exp == e &&
				    (active(m->runs[j]->state) ||
				    m->runs[j]->job_pending))
					live++;
			}
		}
		if (hold_after(m, e))
			continue;
		for (j = 0; j < m->nruns; j++) {
			struct mrun	*r = m->runs[j];

			if (r->exp != e || (r->state != RUN_NEW &&
			    r->state != RUN_REQUEUED) || r->not_before > now)
				continue;
			if (e->max_concurrent > 0 && live >= e->max_concurrent &&
			    !r->job_pending)
				break;
			if (sent >= SUBMIT_PER_TICK) {
				m->more = 1;
				return;
			}
			rc = submit_run(m, r, now);
			sent++;
			if (rc == CADRE_ERR_BUSY || rc == CADRE_ERR_TIMEOUT) {
				busy(m, now, "submit");
				return;
			}
			reachable(m);
			if (!r->job_pending && active(r->state))
				live++;
		}
	}
}

/* ---------------------------------------------------------------- poll */

static void
apply_status(struct monitor *m, struct mrun *r, const struct sched_status *ss,
    double now)
{
	switch (ss->state) {
	case SCHED_QUEUED:
		(void)mon_set_state(m, r, RUN_QUEUED, "");
		r->unknown_polls = 0;
		return;
	case SCHED_STARTING:
		(void)mon_set_state(m, r, RUN_STARTING, "");
		r->unknown_polls = 0;
		return;
	case SCHED_RUNNING:
		(void)mon_set_state(m, r, RUN_RUNNING, "");
		r->unknown_polls = 0;
		mon_collect(m, r, 0);
		return;
	case SCHED_UNKNOWN:
		/* forgotten (MinJobAge): status.json decides; without one,
		 * a few polls of grace before the run counts as lost */
		if (!mon_status_written(r) &&
		    ++r->unknown_polls < UNKNOWN_POLLS_MAX)
			return;
		break;
	default:
		break;
	}
	mon_end_attempt(m, r, ss, now);
}

static void
poll_backend(struct monitor *m, struct mbackend *be, double now)
{
	struct sched_status	*ss;
	struct mrun		**rs;
	const char		**ids;
	size_t			 i, n = 0;
	int			 rc;

	rs = xcalloc(m->nruns > 0 ? m->nruns : 1, sizeof *rs);
	for (i = 0; i < m->nruns; i++) {
		if (m->runs[i]->exp->be == be && active(m->runs[i]->state) &&
		    m->runs[i]->job_id != NULL)
			rs[n++] = m->runs[i];
	}
	if (n == 0 || be->sched == NULL) {
		free(rs);
		return;
	}
	ids = xcalloc(n, sizeof *ids);
	ss = xcalloc(n, sizeof *ss);
	for (i = 0; i < n; i++)
		ids[i] = rs[i]->job_id;
	rc = sched_poll(be->sched, ids, n, ss);
	/* a controller that is down may refuse (busy) or not answer at all
	 * (timeout): both are an outage to wait out, not a verdict */
	if (rc == CADRE_ERR_BUSY || rc == CADRE_ERR_TIMEOUT)
		busy(m, now, rc == CADRE_ERR_BUSY ? "poll" : "poll timed out");
	else if (rc != 0)
		log_warn("poll: %s", cadre_strerror(rc));
	else {
		reachable(m);
		for (i = 0; i < n; i++)
			apply_status(m, rs[i], &ss[i], now);
	}
	free(ss);
	free(ids);
	free(rs);
}

void
monitor_tick(struct monitor *m, double now)
{
	size_t	i;

	if (m->retry_at > now)
		return;
	if (now >= m->next_poll) {
		m->next_poll = now + m->cfg.poll_interval;
		for (i = 0; i < m->nbes; i++) {
			poll_backend(m, m->bes[i], now);
			if (m->retry_at > now)
				return;
		}
	}
	submit_due(m, now);
}

int
monitor_timeout_ms(struct monitor *m, double now)
{
	double	t = m->next_poll;
	size_t	i;

	if (m->retry_at > now)
		t = m->retry_at;
	else if (m->more)
		return 0;
	for (i = 0; i < m->nruns; i++) {
		if (m->runs[i]->state == RUN_REQUEUED &&
		    m->runs[i]->not_before < t)
			t = m->runs[i]->not_before;
	}
	if (t <= now)
		return 0;
	if (t - now > 3600)
		return 3600 * 1000;
	return (int)((t - now) * 1000) + 1;
}

/* ---------------------------------------------------------------- cancel */

/* Resolves target into an experiment or a run (or neither for NULL). */
int
mon_resolve(struct monitor *m, const char *target, struct mexp **e,
    struct mrun **r, char *err, size_t errlen)
{
	struct mexp	*pe = NULL;
	struct mrun	*pr = NULL;
	const char	*other = NULL;
	size_t		 i, n = 0, len;

	*e = NULL;
	*r = NULL;
	if (target == NULL)
		return 0;
	if ((*r = mon_find_run(m, target)) != NULL)
		return 0;
	/* the rule of every command (state_find_experiment's): an id, a
	 * unique start of one, or an experiment's name (the newest) */
	for (i = 0; i < m->nexps; i++) {
		if (strcmp(m->exps[i]->id, target) == 0) {
			*e = m->exps[i];
			return 0;
		}
	}
	if ((len = strlen(target)) > 0) {
		for (i = 0; i < m->nexps; i++) {
			if (strncmp(m->exps[i]->id, target, len) == 0) {
				other = pe != NULL ? pe->id : other;
				pe = m->exps[i];
				n++;
			}
		}
		for (i = 0; i < m->nruns; i++) {
			if (strncmp(m->runs[i]->id, target, len) == 0) {
				other = pe != NULL ? pe->id : pr != NULL ?
				    pr->id : other;
				pr = m->runs[i];
				n++;
			}
		}
	}
	if (n == 1) {
		*e = pe;
		*r = pr;
		return 0;
	}
	if ((*e = mon_find_exp(m, target)) != NULL)
		return 0;
	if (n > 1)
		return cadre_errf(err, errlen, CADRE_ERR_EXISTS, "'%.64s' is the "
		    "start of %zu ids (%s, %s%s): give more of it", target, n,
		    other, pr != NULL ? pr->id : pe->id, n > 2 ? ", ..." : "");
	return cadre_errf(err, errlen, CADRE_ERR_NOT_FOUND, "no experiment or run "
	    "'%.64s' (an id, a unique start of one, or an experiment's name; "
	    "cadre status lists them)", target);
}

int
monitor_cancel(struct monitor *m, const char *target, int64_t *n, char *err,
    size_t errlen)
{
	struct mexp	*e;
	struct mrun	*r, *one;
	size_t		 i;
	int		 rc;

	*n = 0;
	if (target == NULL)
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "cancel what? "
		    "name an experiment or a run");
	if ((rc = mon_resolve(m, target, &e, &one, err, errlen)) != 0)
		return rc;
	for (i = 0; i < m->nruns; i++) {
		r = m->runs[i];
		if ((one != NULL && r != one) || (e != NULL && r->exp != e) ||
		    run_state_final(r->state))
			continue;
		/* submitted, its id not yet recorded: find it by name */
		if (r->job_pending && r->exp->be->sched != NULL) {
			char	name[JOBSCRIPT_NAME_MAX], *job = NULL;

			snprintf(name, sizeof name, "cadre-%s", r->id);
			if (sched_find(r->exp->be->sched, name, &job) == 0 &&
			    job != NULL) {
				free(r->job_id);
				r->job_id = job;
				r->state = RUN_QUEUED;
			}
		}
		if (r->job_id != NULL && active(r->state) &&
		    r->exp->be->sched != NULL) {
			rc = sched_cancel(r->exp->be->sched, r->job_id);
			if (rc == CADRE_ERR_BUSY || rc == CADRE_ERR_TIMEOUT)
				return cadre_errf(err, errlen, rc, "the scheduler does "
				    "not answer: nothing more cancelled (%lld "
				    "so far); try again", (long long)*n);
			if (rc != 0)
				log_warn("run %s: cancel job %s: %s", r->id,
				    r->job_id, cadre_strerror(rc));
		}
		if (r->attempts > 0)
			(void)state_set_attempt_state(m->st, r->id, r->attempts,
			    REASON_CANCELLED, -1, "cancelled by the user", 1);
		r->job_pending = 0;
		(void)mon_set_state(m, r, RUN_CANCELLED, "cancelled by the user");
		(*n)++;
	}
	return 0;
}

int
monitor_all_final(struct monitor *m, const char *experiment)
{
	size_t	i;

	for (i = 0; i < m->nruns; i++) {
		if ((experiment == NULL || strcmp(m->runs[i]->exp->id,
		    experiment) == 0) && !run_state_final(m->runs[i]->state))
			return 0;
	}
	return 1;
}
