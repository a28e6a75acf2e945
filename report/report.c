/* cadre report: per-configuration aggregates, baselines, DLPerf groups
 * and comparisons (report.h) over the per-run figures that
 * report_metrics.c reads from metrics.jsonl. */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "error.h"
#include "json.h"
#include "report.h"
#include "rundir.h"
#include "spec.h"
#include "xmalloc.h"

/* ------------------------------------------------------------ report */

static const char *const class_names[REPORT_CLASS_COUNT] = {
	REASON_DONE, REASON_FAILED, REASON_OOM, REASON_CANCELLED, "unfinished", "missing"
};

const char *
report_class_name(enum report_class c)
{
	return (unsigned)c < REPORT_CLASS_COUNT ? class_names[c] : "?";
}

int
report_new(const char *exp_id, const char *name, const char *spec_file,
    const char *spec_text, struct diags *d, struct report **out)
{
	struct report		*r = NULL;
	struct spec		*s = NULL;
	struct spec_plan	*p = NULL;
	const struct spec_run	*run;
	struct report_config	*c;
	size_t			 i, j, ci;
	int			 rc;

	*out = NULL;
	if ((rc = spec_parse(spec_file != NULL ? spec_file : "spec",
	    spec_text, strlen(spec_text), d, &s)) != 0)
		goto out;
	if ((rc = spec_expand(s, d, &p)) != 0)
		goto out;
	r = xcalloc(1, sizeof *r);
	r->exp_id = xstrdup(exp_id);
	r->name = xstrdup(name != NULL ? name : "");
	r->spec_file = xstrdup(spec_file != NULL ? spec_file : "");
	r->has_baseline = spec_has_baseline(s);
	diags_init(&r->warnings);
	r->nconfigs = spec_plan_nconfigs(p);
	r->configs = xcalloc(r->nconfigs, sizeof *r->configs);
	for (i = 0; i < spec_plan_nruns(p); i++) {
		run = spec_plan_run(p, i);
		ci = spec_run_config(run);
		c = &r->configs[ci];
		if (c->run != NULL)
			continue;
		c->run = run;
		c->id = xstrdup(spec_run_config_id(run));
		c->values = xcalloc(spec_nvaried(s) + 1, sizeof *c->values);
		for (j = 0; j < spec_nvaried(s); j++)
			c->values[j] = spec_run_format(run, spec_varied(s, j));
		c->nodes = spec_run_int(run, SPEC_K_RES_NODES);
		c->gpus_per_node = spec_run_int(run, SPEC_K_RES_GPUS_PER_NODE);
		c->gpus = spec_run_total_gpus(run);
		c->ranks = spec_run_ranks(run);
		c->batch = spec_run_int(run, SPEC_K_BATCH_SIZE);
		c->global_batch = spec_run_global_batch(run);
		c->precision = spec_run_string(run, SPEC_K_PRECISION);
		c->task = spec_run_string(run, SPEC_K_TASK);
		c->baseline = SIZE_MAX;
		c->peak_rss = -1;
	}
	r->spec = s;
	r->plan = p;
	s = NULL;
	p = NULL;
	*out = r;
	r = NULL;

 out:
	spec_plan_free(p);
	spec_free(s);
	return rc;
}

static const struct report *sort_plan;	/* for cmp_plan_index */

static int
cmp_plan_index(const void *a, const void *b)
{
	return strcmp(spec_run_id(spec_plan_run(sort_plan->plan,
	    *(const size_t *)a)), spec_run_id(spec_plan_run(sort_plan->plan,
	    *(const size_t *)b)));
}

/* The plan index of run_id, or SIZE_MAX: a binary search over the plan's
 * runs sorted by id (10,000 runs are matched without a quadratic scan). */
static size_t
plan_find(struct report *r, const char *run_id)
{
	size_t	lo = 0, hi, mid, n = spec_plan_nruns(r->plan), i;
	int	c;

	if (r->by_id == NULL) {
		r->by_id = xcalloc(n + 1, sizeof *r->by_id);
		r->added = xcalloc(n + 1, 1);
		for (i = 0; i < n; i++)
			r->by_id[i] = i;
		sort_plan = r;
		qsort(r->by_id, n, sizeof *r->by_id, cmp_plan_index);
		sort_plan = NULL;
	}
	hi = n;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = strcmp(run_id, spec_run_id(spec_plan_run(r->plan,
		    r->by_id[mid])));
		if (c == 0)
			return r->by_id[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return SIZE_MAX;
}

static struct report_run *
run_append(struct report *r)
{
	struct report_run	*rr;

	if (r->nruns == r->capruns) {
		r->capruns = r->capruns ? r->capruns * 2 : 16;
		r->runs = xreallocarray(r->runs, r->capruns, sizeof *r->runs);
	}
	rr = &r->runs[r->nruns++];
	memset(rr, 0, sizeof *rr);
	rr->throughput = NAN;
	rr->stage_seconds = NAN;
	return rr;
}

/* status.json's reason, or NULL; *stage its stage_seconds (launch
 * --stage), NAN when it has none. */
static char *
status_reason(struct report *r, const char *run_dir, double *stage)
{
	json_t		*st = NULL;
	json_error_t	 err;
	struct stat	 sb;
	const char	*reason;
	char		*path = NULL, *res = NULL;
	int		 rc;

	xasprintf(&path, "%s/" RUNDIR_STATUS, run_dir);
	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		diag_warning(&r->warnings, path, 0, 0, "not a regular file: "
		    "left out");
		goto out;
	}
	rc = cjson_load_file(path, RUNDIR_STATUS_MAX, &st, &err);
	*stage = NAN;
	if (rc == 0 && json_is_number(json_object_get(st, "stage_seconds")))
		*stage = json_number_value(json_object_get(st,
		    "stage_seconds"));
	if (rc == 0 && cjson_get_string(st, STATUS_REASON, &reason) == 0)
		res = xstrdup(reason);
	else if (rc == 0)
		diag_warning(&r->warnings, path, 0, 0, "no \"reason\" string");
	else if (rc == CADRE_ERR_PARSE)
		diag_warning(&r->warnings, path, (size_t)err.line,
		    err.column > 0 ? (size_t)err.column : 0, "not JSON: %s",
		    err.text);
	else if (rc != CADRE_ERR_NOT_FOUND && !(rc == CADRE_ERR_SYSTEM &&
	    errno == ENOENT))
		diag_warning(&r->warnings, path, 0, 0, "cannot read: %s",
		    cadre_strerror(rc));

 out:
	json_decref(st);
	free(path);
	return res;
}

int
report_add_run(struct report *r, const char *run_id, const char *run_dir,
    enum run_state state, const char *reason, int64_t attempts)
{
	const struct spec_run	*pr;
	struct report_run	*rr;
	char			*path = NULL, *sreason;
	size_t			 pi;
	int			 rc;

	if ((pi = plan_find(r, run_id)) == SIZE_MAX) {
		diag_warning(&r->warnings, r->exp_id, 0, 0, "run %s is not in "
		    "the experiment's spec: left out", run_id);
		return 0;
	}
	if (r->added[pi]) {
		diag_warning(&r->warnings, r->exp_id, 0, 0, "run %s given "
		    "twice: the second left out", run_id);
		return 0;
	}
	r->added[pi] = 1;
	pr = spec_plan_run(r->plan, pi);
	rr = run_append(r);
	rr->id = xstrdup(run_id);
	rr->config_id = xstrdup(spec_run_config_id(pr));
	rr->repeat = spec_run_repeat(pr);
	rr->config = spec_run_config(pr);
	rr->run_dir = xstrdup(run_dir);
	rr->state = xstrdup(run_state_name(state));
	metrics_init(&rr->m, spec_run_int(pr, SPEC_K_MEASURE_SKIP_STEPS));

	xasprintf(&path, "%s/" RUNDIR_METRICS, run_dir);
	rc = metrics_load(&rr->m, path, &r->warnings);
	if (rc == 0)
		rr->has_metrics = 1;
	else if (rc == CADRE_ERR_INVALID)
		diag_warning(&r->warnings, path, 0, 0, "not a regular file: "
		    "left out");
	else if (rc != CADRE_ERR_NOT_FOUND)
		diag_warning(&r->warnings, path, 0, 0, "cannot read: %s",
		    strerror(errno));
	free(path);
	rr->attempts = attempts >= 0 ? attempts : (int64_t)rr->m.nstarts;
	rr->throughput = metrics_throughput(&rr->m);
	xasprintf(&path, "%s/" RUNDIR_EVAL, run_dir);
	if (rr->m.nmarks > 0 && (rc = metrics_load_eval(&rr->m, path,
	    &r->warnings)) != 0 && rc != CADRE_ERR_NOT_FOUND)
		diag_warning(&r->warnings, path, 0, 0, "cannot read: %s",
		    strerror(errno));
	free(path);

	sreason = status_reason(r, run_dir, &rr->stage_seconds);
	if (reason != NULL && *reason != '\0')
		rr->reason = xstrdup(reason);
	else
		rr->reason = xstrdup(sreason != NULL ? sreason : "");

	switch (state) {
	case RUN_DONE:
		rr->cls = REPORT_DONE;
		break;
	case RUN_CANCELLED:
		rr->cls = REPORT_CANCELLED;
		break;
	case RUN_FAILED:
		rr->cls = (sreason != NULL && strcmp(sreason, REASON_OOM) == 0) ||
		    strcmp(rr->reason, REASON_OOM) == 0 || rr->m.oom ?
		    REPORT_OOM : REPORT_FAILED;
		break;
	default:
		rr->cls = REPORT_UNFINISHED;
		break;
	}
	free(sreason);
	return 0;
}

static int
cmp_run(const void *a, const void *b)
{
	const struct report_run	*x = a, *y = b;

	if (x->config != y->config)
		return x->config < y->config ? -1 : 1;
	return x->repeat < y->repeat ? -1 : x->repeat > y->repeat;
}

/* Whether configuration ci is one report.baseline names. */
static int
baseline_entry_matches(const struct report *r, size_t ci)
{
	return spec_baseline_matches(r->spec, ci);
}

/* Keys of the resources: what a scaling table varies. */
static int
resource_key(enum spec_key k)
{
	return k == SPEC_K_RES_NODES || k == SPEC_K_RES_GPUS_PER_NODE ||
	    k == SPEC_K_RES_RANKS_PER_NODE || k == SPEC_K_RES_CPUS_PER_RANK ||
	    k == SPEC_K_RES_MEMORY;
}

/* Varied values outside the resources that two configurations share. */
static size_t
agreement(const struct report *r, size_t a, size_t b)
{
	size_t	j, n = 0;

	for (j = 0; j < spec_nvaried(r->spec); j++) {
		if (!resource_key(spec_varied(r->spec, j)) &&
		    strcmp(r->configs[a].values[j],
		    r->configs[b].values[j]) == 0)
			n++;
	}
	return n;
}

/*
 * The baseline of each configuration: among the candidates (those
 * report.baseline names, else those with the fewest ranks) the one that
 * agrees with it on the most varied values outside the resources, then
 * the smallest batch, then the first.
 */
static void
pick_baselines(struct report *r)
{
	unsigned char	*cand = xcalloc(r->nconfigs + 1, 1);
	int64_t		 minranks = INT64_MAX;
	size_t		 i, j, best, ba, a;

	for (i = 0; i < r->nconfigs; i++) {
		if (r->has_baseline)
			cand[i] = (unsigned char)baseline_entry_matches(r, i);
		else if (r->configs[i].ranks < minranks)
			minranks = r->configs[i].ranks;
	}
	if (!r->has_baseline) {
		for (i = 0; i < r->nconfigs; i++)
			cand[i] = r->configs[i].ranks == minranks;
	}
	for (i = 0; i < r->nconfigs; i++) {
		best = SIZE_MAX;
		ba = 0;
		for (j = 0; j < r->nconfigs; j++) {
			if (!cand[j])
				continue;
			a = agreement(r, i, j);
			if (best == SIZE_MAX || a > ba || (a == ba &&
			    r->configs[j].batch < r->configs[best].batch)) {
				best = j;
				ba = a;
			}
		}
		r->configs[i].baseline = best;
	}
	free(cand);
}

static void
ratio(const struct report_config *c, const struct report_config *b,
    double *speedup, double *efficiency)
{
	*speedup = NAN;
	*efficiency = NAN;
	if (b == NULL || !(b->median > 0) || isnan(c->median))
		return;
	*speedup = c->median / b->median;
	if (c->ranks > 0 && b->ranks > 0)
		*efficiency = *speedup / ((double)c->ranks / (double)b->ranks);
}

static void
aggregate(struct report *r, size_t ci)
{
	struct report_config	*c = &r->configs[ci];
	double			*thr, *ttt, *loss, *acc;
	size_t			 i, nthr = 0, nttt = 0, nloss = 0, nacc = 0;
	struct report_run	*rr;

	thr = xcalloc(r->nruns + 1, sizeof *thr);
	ttt = xcalloc(r->nruns + 1, sizeof *ttt);
	loss = xcalloc(r->nruns + 1, sizeof *loss);
	acc = xcalloc(r->nruns + 1, sizeof *acc);
	for (i = 0; i < r->nruns; i++) {
		rr = &r->runs[i];
		if (rr->config != ci)
			continue;
		c->nruns++;
		c->count[rr->cls]++;
		if (rr->cls != REPORT_DONE)
			continue;
		if (!isnan(rr->throughput))
			thr[nthr++] = rr->throughput;
		if (!isnan(rr->m.last_elapsed))
			ttt[nttt++] = rr->m.last_elapsed;
		if (!isnan(rr->m.last_loss))
			loss[nloss++] = rr->m.last_loss;
		if (!isnan(rr->m.eval_accuracy))
			acc[nacc++] = rr->m.eval_accuracy;
		if (rr->m.peak_rss > c->peak_rss)
			c->peak_rss = rr->m.peak_rss;
	}
	c->nthroughput = nthr;
	c->median = report_median(thr, nthr);
	c->mean = report_mean(thr, nthr);
	c->min = c->max = NAN;
	for (i = 0; i < nthr; i++) {
		if (i == 0 || thr[i] < c->min)
			c->min = thr[i];
		if (i == 0 || thr[i] > c->max)
			c->max = thr[i];
	}
	c->time_to_train = report_median(ttt, nttt);
	c->loss = report_median(loss, nloss);
	c->accuracy = report_median(acc, nacc);
	free(thr);
	free(ttt);
	free(loss);
	free(acc);
}

/* Configurations that differ only in resources share a group. */
static int
same_group(const struct report *r, size_t a, size_t b)
{
	const struct report_config	*x = &r->configs[a], *y = &r->configs[b];
	size_t				 j;

	if (x->batch != y->batch || strcmp(x->precision, y->precision) != 0)
		return 0;
	for (j = 0; j < spec_nvaried(r->spec); j++) {
		if (!resource_key(spec_varied(r->spec, j)) &&
		    strcmp(x->values[j], y->values[j]) != 0)
			return 0;
	}
	return 1;
}

static const struct report *sort_report;	/* for cmp_group_member */

static int
cmp_group_member(const void *a, const void *b)
{
	const struct report_config	*x, *y;
	size_t				 i = *(const size_t *)a,
					 j = *(const size_t *)b;

	x = &sort_report->configs[i];
	y = &sort_report->configs[j];
	if (x->ranks != y->ranks)
		return x->ranks < y->ranks ? -1 : 1;
	if (x->nodes != y->nodes)
		return x->nodes < y->nodes ? -1 : 1;
	return i < j ? -1 : i > j;
}

static void
make_groups(struct report *r)
{
	struct report_group	*g;
	struct cbuf		 t, sl;
	size_t			 i, j, k;
	enum spec_key		 key;
	const char		*p, *dot;

	r->groups = xcalloc(r->nconfigs + 1, sizeof *r->groups);
	for (i = 0; i < r->nconfigs; i++) {
		for (k = 0; k < r->ngroups; k++) {
			if (same_group(r, r->groups[k].configs[0], i))
				break;
		}
		g = &r->groups[k];
		if (k == r->ngroups) {
			r->ngroups++;
			g->configs = xcalloc(r->nconfigs, sizeof *g->configs);
		}
		g->configs[g->n++] = i;
		r->configs[i].group = k;
	}
	for (k = 0; k < r->ngroups; k++) {
		g = &r->groups[k];
		sort_report = r;
		qsort(g->configs, g->n, sizeof *g->configs, cmp_group_member);
		sort_report = NULL;
		/* the fewest ranks, unless report.baseline names one here */
		g->baseline = g->configs[0];
		if (r->has_baseline) {
			for (j = 0; j < g->n; j++) {
				if (baseline_entry_matches(r, g->configs[j])) {
					g->baseline = g->configs[j];
					break;
				}
			}
		}
		i = g->configs[0];
		cbuf_init(&t, SIZE_MAX);
		cbuf_init(&sl, SIZE_MAX);
		cbuf_addf(&t, "batch %" PRId64 ", %s", r->configs[i].batch,
		    r->configs[i].precision);
		cbuf_addf(&sl, "b%" PRId64 "-%s", r->configs[i].batch,
		    r->configs[i].precision);
		for (j = 0; j < spec_nvaried(r->spec); j++) {
			key = spec_varied(r->spec, j);
			if (resource_key(key) || key == SPEC_K_BATCH_SIZE ||
			    key == SPEC_K_PRECISION)
				continue;
			p = spec_key_info(key)->path;
			dot = strrchr(p, '.');
			cbuf_addf(&t, ", %s %s", dot != NULL ? dot + 1 : p,
			    r->configs[i].values[j]);
		}
		if (r->ngroups > 1) {
			/* other values make names clash: number them */
			for (j = 0; j < r->ngroups; j++) {
				if (j != k && r->groups[j].n > 0 &&
				    r->configs[r->groups[j].configs[0]].batch ==
				    r->configs[i].batch && strcmp(r->configs[
				    r->groups[j].configs[0]].precision,
				    r->configs[i].precision) == 0)
					break;
			}
			if (j < r->ngroups)
				cbuf_addf(&sl, "-%zu", k + 1);
		}
		g->title = cbuf_detach(&t, NULL);
		g->slug = cbuf_detach(&sl, NULL);
		cbuf_free(&t);
		cbuf_free(&sl);
	}
}

/* env: key -> sorted distinct values, as text. */
static void
merge_env(struct report *r)
{
	const char	*k;
	json_t		*v, *arr, *s;
	size_t		 i, j;
	char		*text;
	int		 found;

	r->env = json_object();
	for (i = 0; i < r->nruns; i++) {
		json_object_foreach(r->runs[i].m.env, k, v) {
			if (json_is_string(v))
				text = xstrdup(json_string_value(v));
			else
				text = cjson_dumps_sorted(v);
			if ((arr = json_object_get(r->env, k)) == NULL) {
				arr = json_array();
				json_object_set_new(r->env, k, arr);
			}
			found = 0;
			json_array_foreach(arr, j, s) {
				if (strcmp(json_string_value(s), text) == 0)
					found = 1;
			}
			if (!found) {
				for (j = 0; j < json_array_size(arr); j++) {
					if (strcmp(json_string_value(
					    json_array_get(arr, j)), text) > 0)
						break;
				}
				json_array_insert_new(arr, j,
				    json_string(text));
			}
			free(text);
		}
	}
}

void
report_finish(struct report *r)
{
	const struct spec_run	*pr;
	struct report_run	*rr;
	size_t			 i;

	if (r->added == NULL)
		(void)plan_find(r, "");	/* builds r->added */
	for (i = 0; i < spec_plan_nruns(r->plan); i++) {
		pr = spec_plan_run(r->plan, i);
		if (r->added[i])
			continue;
		rr = run_append(r);
		rr->id = xstrdup(spec_run_id(pr));
		rr->config_id = xstrdup(spec_run_config_id(pr));
		rr->repeat = spec_run_repeat(pr);
		rr->config = spec_run_config(pr);
		rr->state = xstrdup("missing");
		rr->reason = xstrdup("");
		rr->cls = REPORT_MISSING;
		metrics_init(&rr->m, 0);
	}
	qsort(r->runs, r->nruns, sizeof *r->runs, cmp_run);
	for (i = 0; i < r->nruns; i++)
		r->count[r->runs[i].cls]++;
	for (i = 0; i < r->nconfigs; i++)
		aggregate(r, i);
	pick_baselines(r);
	for (i = 0; i < r->nconfigs; i++)
		ratio(&r->configs[i], r->configs[i].baseline != SIZE_MAX ?
		    &r->configs[r->configs[i].baseline] : NULL,
		    &r->configs[i].speedup, &r->configs[i].efficiency);
	make_groups(r);
	merge_env(r);
}

void
report_free(struct report *r)
{
	size_t	i, j;

	if (r == NULL)
		return;
	for (i = 0; i < r->nruns; i++) {
		free(r->runs[i].id);
		free(r->runs[i].config_id);
		free(r->runs[i].run_dir);
		free(r->runs[i].state);
		free(r->runs[i].reason);
		metrics_free(&r->runs[i].m);
	}
	free(r->runs);
	for (i = 0; i < r->nconfigs; i++) {
		free(r->configs[i].id);
		if (r->configs[i].values != NULL) {
			for (j = 0; r->configs[i].values[j] != NULL; j++)
				free(r->configs[i].values[j]);
		}
		free(r->configs[i].values);
	}
	free(r->configs);
	for (i = 0; i < r->ngroups; i++) {
		free(r->groups[i].title);
		free(r->groups[i].slug);
		free(r->groups[i].configs);
	}
	free(r->groups);
	json_decref(r->env);
	free(r->by_id);
	free(r->added);
	diags_free(&r->warnings);
	spec_plan_free(r->plan);
	spec_free(r->spec);
	free(r->exp_id);
	free(r->name);
	free(r->spec_file);
	free(r);
}

/* ------------------------------------------------------------ compare */

/* "resources.nodes=2;trainer.batch_size=32;..." over keys. */
static char *
config_key(const struct report *r, size_t ci, const enum spec_key *keys,
    size_t nkeys)
{
	struct cbuf	 b;
	char		*v;
	size_t		 i;

	cbuf_init(&b, SIZE_MAX);
	for (i = 0; i < nkeys; i++) {
		/* 0 means "one per GPU, or 1": compare what it resolves to */
		if (keys[i] == SPEC_K_RES_RANKS_PER_NODE) {
			cbuf_addf(&b, "ranks_per_node=%" PRId64 ";",
			    spec_run_ranks_per_node(r->configs[ci].run));
			continue;
		}
		v = spec_run_format(r->configs[ci].run, keys[i]);
		cbuf_addf(&b, "%s=%s;", spec_key_info(keys[i])->path, v);
		free(v);
	}
	return cbuf_detach(&b, NULL);
}

static void
add_key(enum spec_key *keys, size_t *n, enum spec_key k)
{
	size_t	i;

	for (i = 0; i < *n; i++) {
		if (keys[i] == k)
			return;
	}
	keys[(*n)++] = k;
}

void
report_compare(const struct report *a, const struct report *b,
    struct report_match **out, size_t *n)
{
	enum spec_key		 keys[SPEC_KEY_COUNT];
	struct report_match	*m;
	const struct report_config *x, *y;
	char			**kb, *ka;
	size_t			 nkeys = 0, i, j, nm = 0;

	add_key(keys, &nkeys, SPEC_K_RES_NODES);
	add_key(keys, &nkeys, SPEC_K_RES_GPUS_PER_NODE);
	add_key(keys, &nkeys, SPEC_K_RES_RANKS_PER_NODE);
	add_key(keys, &nkeys, SPEC_K_BATCH_SIZE);
	add_key(keys, &nkeys, SPEC_K_PRECISION);
	for (i = 0; i < spec_nvaried(a->spec); i++)
		add_key(keys, &nkeys, spec_varied(a->spec, i));
	for (i = 0; i < spec_nvaried(b->spec); i++)
		add_key(keys, &nkeys, spec_varied(b->spec, i));

	m = xcalloc(a->nconfigs + 1, sizeof *m);
	kb = xcalloc(b->nconfigs + 1, sizeof *kb);
	for (j = 0; j < b->nconfigs; j++)
		kb[j] = config_key(b, j, keys, nkeys);
	for (i = 0; i < a->nconfigs; i++) {
		ka = config_key(a, i, keys, nkeys);
		for (j = 0; j < b->nconfigs; j++) {
			if (strcmp(ka, kb[j]) == 0)
				break;
		}
		free(ka);
		if (j == b->nconfigs)
			continue;
		x = &a->configs[i];
		y = &b->configs[j];
		m[nm].a = i;
		m[nm].b = j;
		m[nm].change = x->median > 0 && !isnan(y->median) ?
		    (y->median - x->median) / x->median : NAN;
		m[nm].outside = x->nthroughput > 0 && y->nthroughput > 0 &&
		    (x->max < y->min || y->max < x->min);
		nm++;
	}
	for (j = 0; j < b->nconfigs; j++)
		free(kb[j]);
	free(kb);
	*out = m;
	*n = nm;
}

/* ------------------------------------------------------------ json */

static json_t *
num(double v)
{
	return isnan(v) || isinf(v) ? json_null() : json_real(v);
}

static json_t *
config_json(const struct report *r, size_t ci)
{
	const struct report_config	*c = &r->configs[ci];
	json_t				*o = json_object(), *vals, *cnt;
	size_t				 j;
	int				 k;

	json_object_set_new(o, "config_id", json_string(c->id));
	vals = json_object();
	for (j = 0; j < spec_nvaried(r->spec); j++)
		json_object_set_new(vals,
		    spec_key_info(spec_varied(r->spec, j))->path,
		    json_string(c->values[j]));
	json_object_set_new(o, "values", vals);
	json_object_set_new(o, "nodes", json_integer(c->nodes));
	json_object_set_new(o, "gpus_per_node", json_integer(c->gpus_per_node));
	json_object_set_new(o, "gpus", json_integer(c->gpus));
	json_object_set_new(o, "ranks", json_integer(c->ranks));
	json_object_set_new(o, "batch_size", json_integer(c->batch));
	json_object_set_new(o, "global_batch", json_integer(c->global_batch));
	json_object_set_new(o, "precision", json_string(c->precision));
	json_object_set_new(o, "task", json_string(c->task));
	json_object_set_new(o, "runs", json_integer((json_int_t)c->nruns));
	json_object_set_new(o, "repeats",
	    json_integer(spec_repeats(r->spec)));
	cnt = json_object();
	for (k = 0; k < REPORT_CLASS_COUNT; k++)
		json_object_set_new(cnt, report_class_name(k),
		    json_integer((json_int_t)c->count[k]));
	json_object_set_new(o, "counts", cnt);
	json_object_set_new(o, "throughput_runs",
	    json_integer((json_int_t)c->nthroughput));
	json_object_set_new(o, "samples_per_s_median", num(c->median));
	json_object_set_new(o, "samples_per_s_mean", num(c->mean));
	json_object_set_new(o, "samples_per_s_min", num(c->min));
	json_object_set_new(o, "samples_per_s_max", num(c->max));
	json_object_set_new(o, "baseline", c->baseline != SIZE_MAX ?
	    json_string(r->configs[c->baseline].id) : json_null());
	json_object_set_new(o, "speedup", num(c->speedup));
	json_object_set_new(o, "efficiency", num(c->efficiency));
	json_object_set_new(o, "time_to_train_s", num(c->time_to_train));
	json_object_set_new(o, "final_loss", num(c->loss));
	json_object_set_new(o, "accuracy", num(c->accuracy));
	json_object_set_new(o, "peak_rss_bytes", c->peak_rss >= 0 ?
	    json_integer(c->peak_rss) : json_null());
	return o;
}

static json_t *
run_json(const struct report_run *rr)
{
	json_t	*o = json_object();

	json_object_set_new(o, "id", json_string(rr->id));
	json_object_set_new(o, "config_id", json_string(rr->config_id));
	json_object_set_new(o, "repeat", json_integer(rr->repeat));
	json_object_set_new(o, "run_dir", rr->run_dir != NULL ?
	    json_string(rr->run_dir) : json_null());
	json_object_set_new(o, "state", json_string(rr->state));
	json_object_set_new(o, "class", json_string(report_class_name(rr->cls)));
	json_object_set_new(o, "reason", json_string(rr->reason));
	if (!isnan(rr->stage_seconds))
		json_object_set_new(o, "stage_seconds",
		    json_real(rr->stage_seconds));
	json_object_set_new(o, "attempts", json_integer((json_int_t)rr->attempts));
	json_object_set_new(o, "samples_per_s", num(rr->throughput));
	json_object_set_new(o, "measured_steps",
	    json_integer((json_int_t)rr->m.nsps));
	json_object_set_new(o, "last_step", rr->m.last_step >= 0 ?
	    json_integer(rr->m.last_step) : json_null());
	json_object_set_new(o, "elapsed_s", num(rr->m.last_elapsed));
	json_object_set_new(o, "samples", rr->m.samples >= 0 ?
	    json_integer(rr->m.samples) : json_null());
	json_object_set_new(o, "final_loss", num(rr->m.last_loss));
	json_object_set_new(o, "mlm_acc", num(rr->m.last_mlm_acc));
	json_object_set_new(o, "eval_loss", num(rr->m.eval_loss));
	json_object_set_new(o, "accuracy", num(rr->m.eval_accuracy));
	json_object_set_new(o, "peak_rss_bytes", rr->m.peak_rss >= 0 ?
	    json_integer(rr->m.peak_rss) : json_null());
	json_object_set_new(o, "complete", json_boolean(rr->m.complete));
	return o;
}

json_t *
report_json(const struct report *r)
{
	json_t		*root = json_object(), *a, *g, *m, *counts;
	size_t		 i, j;
	int		 k;

	json_object_set_new(root, "experiment", json_string(r->exp_id));
	json_object_set_new(root, "name", json_string(r->name));
	json_object_set_new(root, "spec_file", json_string(r->spec_file));
	json_object_set_new(root, "repeats",
	    json_integer(spec_repeats(r->spec)));
	a = json_array();
	for (j = 0; j < spec_nvaried(r->spec); j++)
		json_array_append_new(a,
		    json_string(spec_key_info(spec_varied(r->spec, j))->path));
	json_object_set_new(root, "varied", a);
	json_object_set_new(root, "baseline_from", json_string(
	    r->has_baseline ? "report.baseline" : "fewest ranks"));
	counts = json_object();
	for (k = 0; k < REPORT_CLASS_COUNT; k++)
		json_object_set_new(counts, report_class_name(k),
		    json_integer((json_int_t)r->count[k]));
	json_object_set_new(root, "counts", counts);
	a = json_array();
	for (i = 0; i < r->nconfigs; i++)
		json_array_append_new(a, config_json(r, i));
	json_object_set_new(root, "configurations", a);
	a = json_array();
	for (i = 0; i < r->nruns; i++)
		json_array_append_new(a, run_json(&r->runs[i]));
	json_object_set_new(root, "runs", a);
	a = json_array();
	for (i = 0; i < r->ngroups; i++) {
		const struct report_config	*b;
		json_t				*rows = json_array(), *row;
		double				 sp, ef;

		g = json_object();
		json_object_set_new(g, "title", json_string(r->groups[i].title));
		b = &r->configs[r->groups[i].baseline];
		json_object_set_new(g, "baseline", json_string(b->id));
		for (j = 0; j < r->groups[i].n; j++) {
			const struct report_config *c =
			    &r->configs[r->groups[i].configs[j]];

			ratio(c, b, &sp, &ef);
			row = json_object();
			json_object_set_new(row, "config_id",
			    json_string(c->id));
			json_object_set_new(row, "nodes",
			    json_integer(c->nodes));
			json_object_set_new(row, "gpus", json_integer(c->gpus));
			json_object_set_new(row, "ranks",
			    json_integer(c->ranks));
			json_object_set_new(row, "samples_per_s",
			    num(c->median));
			json_object_set_new(row, "speedup", num(sp));
			json_object_set_new(row, "efficiency", num(ef));
			json_array_append_new(rows, row);
		}
		json_object_set_new(g, "rows", rows);
		json_array_append_new(a, g);
	}
	json_object_set_new(root, "scaling", a);
	json_object_set_new(root, "environment", json_deep_copy(r->env));
	a = json_array();
	for (i = 0; i < r->warnings.n; i++) {
		m = json_object();
		json_object_set_new(m, "file",
		    json_string(r->warnings.v[i].file));
		json_object_set_new(m, "line",
		    json_integer((json_int_t)r->warnings.v[i].line));
		json_object_set_new(m, "message",
		    json_string(r->warnings.v[i].message));
		json_array_append_new(a, m);
	}
	json_object_set_new(root, "warnings", a);
	return root;
}

/* ------------------------------------------------------------ at a time */

static void
spread(const double *v, size_t n, struct report_spread *out)
{
	size_t	i;

	out->n = n;
	out->median = report_median(v, n);
	out->min = out->max = NAN;
	for (i = 0; i < n; i++) {
		if (i == 0 || v[i] < out->min)
			out->min = v[i];
		if (i == 0 || v[i] > out->max)
			out->max = v[i];
	}
}

static const struct report_mark *
mark_at(const struct metrics *m, double seconds)
{
	size_t	i;

	for (i = 0; i < m->nmarks; i++) {
		if (fabs(m->marks[i].due_s - seconds) < 0.5)
			return &m->marks[i];
	}
	return NULL;
}

static double
ratio_of(double a, double b)
{
	return isnan(a) || !(b > 0) ? NAN : a / b;
}

void
report_at(const struct report *r, double seconds, struct report_at_row **rows,
    size_t *n)
{
	struct report_at_row		*t;
	const struct report_mark	*k;
	double				*v[5];
	size_t				 ci, i, j, nv[5];

	t = xcalloc(r->nconfigs > 0 ? r->nconfigs : 1, sizeof *t);
	for (j = 0; j < 5; j++)
		v[j] = xcalloc(r->nruns + 1, sizeof *v[j]);
	for (ci = 0; ci < r->nconfigs; ci++) {
		t[ci].config = ci;
		memset(nv, 0, sizeof nv);
		for (i = 0; i < r->nruns; i++) {
			if (r->runs[i].config != ci)
				continue;
			t[ci].nruns++;
			if ((k = mark_at(&r->runs[i].m, seconds)) == NULL)
				continue;
			t[ci].nmark++;
			v[0][nv[0]++] = (double)k->step;
			v[1][nv[1]++] = (double)k->samples;
			if (!isnan(r->runs[i].throughput))
				v[2][nv[2]++] = r->runs[i].throughput;
			if (!isnan(k->accuracy)) {
				v[3][nv[3]++] = k->accuracy;
				v[4][nv[4]++] = k->loss;
			}
		}
		spread(v[0], nv[0], &t[ci].steps);
		spread(v[1], nv[1], &t[ci].samples);
		spread(v[2], nv[2], &t[ci].sps);
		spread(v[3], nv[3], &t[ci].accuracy);
		spread(v[4], nv[4], &t[ci].loss);
	}
	for (ci = 0; ci < r->nconfigs; ci++) {
		const struct report_at_row *b = r->configs[ci].baseline <
		    r->nconfigs ? &t[r->configs[ci].baseline] : NULL;

		t[ci].vs_steps = t[ci].vs_samples = t[ci].vs_sps = NAN;
		t[ci].vs_accuracy = NAN;
		if (b == NULL)
			continue;
		t[ci].vs_steps = ratio_of(t[ci].steps.median, b->steps.median);
		t[ci].vs_samples = ratio_of(t[ci].samples.median,
		    b->samples.median);
		t[ci].vs_sps = ratio_of(t[ci].sps.median, b->sps.median);
		if (!isnan(t[ci].accuracy.median) && !isnan(b->accuracy.median))
			t[ci].vs_accuracy = t[ci].accuracy.median -
			    b->accuracy.median;
	}
	for (j = 0; j < 5; j++)
		free(v[j]);
	*rows = t;
	*n = r->nconfigs;
}

size_t
report_marks(const struct report *r, size_t ci, double **out)
{
	double	*d = NULL;
	size_t	 n = 0, cap = 0, i, j, k;

	for (i = 0; i < r->nruns; i++) {
		if (r->runs[i].config != ci)
			continue;
		for (j = 0; j < r->runs[i].m.nmarks; j++) {
			double	due = r->runs[i].m.marks[j].due_s;

			for (k = 0; k < n && fabs(d[k] - due) >= 0.5; k++)
				;
			if (k < n)
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 8;
				d = xreallocarray(d, cap, sizeof *d);
			}
			d[n++] = due;
		}
	}
	if (n > 0)
		qsort(d, n, sizeof *d, report_cmp_double);
	*out = d;
	return n;
}
