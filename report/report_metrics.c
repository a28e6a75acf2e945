/* A run's figures for cadre report: metrics.jsonl and eval.jsonl read
 * with bounds, and the median and mean the report takes of them
 * (report.h). */
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
#include "rundir_read.h"
#include "xmalloc.h"

void
metrics_init(struct metrics *m, int64_t skip_steps)
{
	memset(m, 0, sizeof *m);
	m->skip_steps = skip_steps;
	m->loss_stride = 1;
	m->last_step = -1;
	m->last_elapsed = NAN;
	m->last_loss = NAN;
	m->last_mlm_acc = NAN;
	m->samples = -1;
	m->eval_loss = NAN;
	m->eval_accuracy = NAN;
	m->peak_rss = -1;
	m->env = json_object();
}

void
metrics_free(struct metrics *m)
{
	free(m->sps);
	free(m->loss_step);
	free(m->loss);
	free(m->marks);
	while (m->nskipped > 0)
		free(m->skipped[--m->nskipped]);
	free(m->skipped);
	json_decref(m->env);
	memset(m, 0, sizeof *m);
}

/* Keeps at most REPORT_POINTS_MAX points of the loss curve: when full,
 * every other point goes and only every stride-th new one is kept. */
static void
loss_add(struct metrics *m, double step, double loss)
{
	size_t	i;

	if (m->loss_seen++ % m->loss_stride != 0)
		return;
	if (m->nloss == REPORT_POINTS_MAX) {
		for (i = 0; i < m->nloss / 2; i++) {
			m->loss_step[i] = m->loss_step[2 * i];
			m->loss[i] = m->loss[2 * i];
		}
		m->nloss /= 2;
		m->loss_stride *= 2;
	}
	if (m->nloss == m->caploss) {
		m->caploss = m->caploss ? m->caploss * 2 : 64;
		m->loss_step = xreallocarray(m->loss_step, m->caploss,
		    sizeof *m->loss_step);
		m->loss = xreallocarray(m->loss, m->caploss, sizeof *m->loss);
	}
	m->loss_step[m->nloss] = step;
	m->loss[m->nloss++] = loss;
}

/* An optional number member: 0 and *v, *v left as it is when absent or
 * null; CADRE_ERR_INVALID with msg when of another type or not finite. */
static int
get_number(const json_t *o, const char *key, double *v, char *msg,
    size_t msglen)
{
	json_t	*j = json_object_get(o, key);

	if (j == NULL || json_is_null(j))
		return 0;
	if (!json_is_number(j))
		return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
		    "\"%s\" is not a number", key);
	*v = json_number_value(j);
	if (!isfinite(*v))
		return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
		    "\"%s\" is not finite", key);
	return 0;
}

static int
need_number(const json_t *o, const char *ev, const char *key, double *v,
    char *msg, size_t msglen)
{
	json_t	*j = json_object_get(o, key);

	if (j == NULL || json_is_null(j))
		return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
		    "\"%s\" event without \"%s\"", ev, key);
	return get_number(o, key, v, msg, msglen);
}

static int
need_int(const json_t *o, const char *ev, const char *key, int64_t *v,
    char *msg, size_t msglen)
{
	json_t	*j = json_object_get(o, key);

	if (j == NULL || json_is_null(j))
		return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
		    "\"%s\" event without \"%s\"", ev, key);
	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
		    "\"%s\" is not a non-negative integer", key);
	*v = json_integer_value(j);
	return 0;
}

/* Copies the string, integer and real members of src into env (last
 * wins), under prefix. */
static void
env_merge(json_t *env, const json_t *src, const char *const *keys)
{
	const char	*k;
	json_t		*v;
	size_t		 i;

	if (keys != NULL) {
		for (i = 0; keys[i] != NULL; i++) {
			v = json_object_get(src, keys[i]);
			if (v != NULL && (json_is_string(v) ||
			    json_is_number(v)))
				json_object_set(env, keys[i], v);
		}
		return;
	}
	json_object_foreach((json_t *)src, k, v) {
		if (json_is_string(v) || json_is_number(v))
			json_object_set(env, k, v);
	}
}

static int
parse_step(struct metrics *m, const json_t *o, char *msg, size_t msglen)
{
	int64_t	step, samples = -1;
	double	sps, loss, elapsed, acc = NAN;
	int	rc;

	if (need_int(o, "step", "step", &step, msg, msglen) != 0 ||
	    need_number(o, "step", "samples_per_s", &sps, msg, msglen) != 0 ||
	    need_number(o, "step", "loss", &loss, msg, msglen) != 0 ||
	    need_number(o, "step", "elapsed_s", &elapsed, msg, msglen) != 0)
		return CADRE_ERR_INVALID;
	if (sps < 0) {
		snprintf(msg, msglen, "\"samples_per_s\" is negative");
		return CADRE_ERR_INVALID;
	}
	if ((rc = get_number(o, "mlm_acc", &acc, msg, msglen)) != 0)
		return rc;
	if (json_object_get(o, MX_SAMPLES) != NULL &&
	    need_int(o, "step", "samples", &samples, msg, msglen) != 0)
		return CADRE_ERR_INVALID;

	m->nsteps++;
	if (step > m->skip_steps) {
		if (m->nsps == m->capsps) {
			m->capsps = m->capsps ? m->capsps * 2 : 64;
			m->sps = xreallocarray(m->sps, m->capsps,
			    sizeof *m->sps);
		}
		m->sps[m->nsps++] = sps;
	}
	loss_add(m, (double)step, loss);
	/* A resumed attempt logs again from its checkpoint: the last line
	 * is the latest, even when its step is not the largest. */
	m->last_step = step;
	m->last_elapsed = elapsed;
	m->last_loss = loss;
	m->last_mlm_acc = acc;
	if (samples >= 0)
		m->samples = samples;
	return 0;
}

/* A checkpoint event with due_s: a timed one (docs/contracts.md). */
static int
parse_mark(struct metrics *m, const json_t *o, char *msg, size_t msglen)
{
	struct report_mark	 k;
	size_t			 i;

	if (need_number(o, "checkpoint", "due_s", &k.due_s, msg, msglen) != 0 ||
	    need_int(o, "checkpoint", "step", &k.step, msg, msglen) != 0 ||
	    need_int(o, "checkpoint", "samples", &k.samples, msg, msglen) != 0 ||
	    need_number(o, "checkpoint", "elapsed_s", &k.elapsed_s, msg,
	    msglen) != 0)
		return CADRE_ERR_INVALID;
	if (!(k.due_s > 0)) {
		snprintf(msg, msglen, "checkpoint: \"due_s\" is not > 0");
		return CADRE_ERR_INVALID;
	}
	k.loss = k.accuracy = NAN;
	for (i = 0; i < m->nmarks && fabs(m->marks[i].due_s - k.due_s) >= 0.5;
	    i++)
		;
	if (i == m->nmarks) {
		if (m->nmarks == m->capmarks) {
			m->capmarks = m->capmarks ? 2 * m->capmarks : 8;
			m->marks = xreallocarray(m->marks, m->capmarks,
			    sizeof *m->marks);
		}
		m->nmarks++;
	}
	m->marks[i] = k;
	return 0;
}

int
metrics_parse_line(struct metrics *m, const char *line, size_t len,
    char *msg, size_t msglen)
{
	static const char *const start_keys[] = { "commit", "device",
	    "threads", "ranks", "precision", NULL };
	json_t		*o = NULL, *j;
	json_error_t	 err;
	const char	*ev, *kind;
	int64_t		 rss;
	int		 rc;

	msg[0] = '\0';
	if (len > RUNDIR_LINE_MAX) {
		snprintf(msg, msglen, "line longer than %zu bytes",
		    RUNDIR_LINE_MAX);
		return CADRE_ERR_TOO_LARGE;
	}
	if ((rc = cjson_loadb(line, len, RUNDIR_LINE_MAX, &o, &err)) != 0) {
		if (rc == CADRE_ERR_PARSE)
			snprintf(msg, msglen, "not JSON: %s (column %d)",
			    err.text, err.column);
		else
			snprintf(msg, msglen, "%s", cadre_strerror(rc));
		goto out;
	}
	if (!json_is_object(o)) {
		snprintf(msg, msglen, "not a JSON object");
		rc = CADRE_ERR_INVALID;
		goto out;
	}
	if (cjson_get_string(o, MX_EVENT, &ev) != 0) {
		snprintf(msg, msglen, "no \"event\" string");
		rc = CADRE_ERR_INVALID;
		goto out;
	}
	rc = CADRE_ERR_INVALID;
	if (strcmp(ev, MX_EV_STEP) == 0) {
		rc = parse_step(m, o, msg, msglen);
		goto out;
	} else if (strcmp(ev, MX_EV_START) == 0) {
		m->nstarts++;
		env_merge(m->env, o, start_keys);
	} else if (strcmp(ev, MX_EV_EVAL) == 0) {
		double	loss = NAN, acc = NAN;

		if (get_number(o, MX_LOSS, &loss, msg, msglen) != 0 ||
		    get_number(o, MX_ACCURACY, &acc, msg, msglen) != 0)
			goto out;
		m->eval_loss = loss;
		m->eval_accuracy = acc;
	} else if (strcmp(ev, MX_EV_CHECKPOINT) == 0 &&
	    json_object_get(o, MX_DUE_S) != NULL) {
		if (parse_mark(m, o, msg, msglen) != 0)
			goto out;
	} else if (strcmp(ev, MX_EV_CHECKPOINT_SKIPPED) == 0) {
		const char	*path, *why;

		if (cjson_get_string(o, MX_PATH, &path) != 0 ||
		    cjson_get_string(o, MX_WHY, &why) != 0) {
			snprintf(msg, msglen, "a checkpoint_skipped event "
			    "without \"path\" and \"why\" strings");
			goto out;
		}
		if (m->nskipped < REPORT_SKIPPED_MAX) {
			m->skipped = xreallocarray(m->skipped, m->nskipped + 1,
			    sizeof *m->skipped);
			xasprintf(&m->skipped[m->nskipped++], "%s: %s", path, why);
		}
	} else if (strcmp(ev, MX_EV_ERROR) == 0) {
		if (cjson_get_string(o, MX_KIND, &kind) == 0 &&
		    strcmp(kind, REASON_OOM) == 0)
			m->oom = 1;
	} else if (strcmp(ev, MX_EV_SUMMARY) == 0) {
		j = json_object_get(o, MX_PEAK_RSS);
		if (j != NULL && !json_is_null(j)) {
			if (!json_is_integer(j) || json_integer_value(j) < 0) {
				snprintf(msg, msglen, "\"peak_rss_bytes\" is "
				    "not a non-negative integer");
				goto out;
			}
			rss = json_integer_value(j);
			if (rss > m->peak_rss)
				m->peak_rss = rss;
		}
		j = json_object_get(o, MX_ENV);
		if (j != NULL && json_is_object(j))
			env_merge(m->env, j, NULL);
		j = json_object_get(o, MX_COMPLETE);
		m->complete = j != NULL && json_is_true(j);
	}
	/* checkpoint and events of later versions: nothing to take */
	rc = 0;

 out:
	json_decref(o);
	return rc;
}

struct metrics_read {
	struct metrics	*m;
	struct diags	*d;
	const char	*path;
};

static int
metrics_read_line(void *ctx, enum rundir_line kind, const char *line,
    size_t len, size_t lineno)
{
	struct metrics_read	*mr = ctx;
	char			 msg[512];

	switch (kind) {
	case RUNDIR_LINE_TOO_LONG:
		diag_warning(mr->d, mr->path, lineno, 1, "skipped: line "
		    "longer than %zu bytes", RUNDIR_LINE_MAX);
		break;
	case RUNDIR_LINE:
		if (metrics_parse_line(mr->m, line, len, msg, sizeof msg) != 0)
			diag_warning(mr->d, mr->path, lineno, 1, "skipped: %s",
			    msg);
		break;
	case RUNDIR_LINE_LAST:
		/* a run still writing it: it counts when already whole */
		(void)metrics_parse_line(mr->m, line, len, msg, sizeof msg);
		break;
	}
	return 0;
}

int
metrics_load(struct metrics *m, const char *path, struct diags *d)
{
	struct metrics_read	mr = { m, d, path };
	struct rundir_lines	o = { 0, RUNDIR_LINE_MAX, REPORT_LINES_MAX, 0, 0 };
	int			rc;

	rc = rundir_read_lines(path, &o, metrics_read_line, &mr);
	if (rc == CADRE_ERR_TOO_LARGE) {
		diag_warning(d, path, REPORT_LINES_MAX, 1, "stopped reading "
		    "after %zu lines", REPORT_LINES_MAX);
		rc = 0;
	}
	return rc;
}

struct eval_load {
	struct metrics	*m;
	struct diags	*d;
	const char	*path;
};

static int
eval_line(void *ctx, const struct rundir_eval *e)
{
	struct eval_load	*el = ctx;
	size_t			 i;

	for (i = 0; i < el->m->nmarks && e->error == NULL; i++) {
		if (el->m->marks[i].step == e->step) {
			el->m->marks[i].loss = e->loss;
			el->m->marks[i].accuracy = e->accuracy;
		}
	}
	return 0;
}

static void
eval_bad(void *ctx, size_t lineno, const char *msg)
{
	struct eval_load	*el = ctx;

	diag_warning(el->d, el->path, (unsigned)lineno, 0, "%s", msg);
}

int
metrics_load_eval(struct metrics *m, const char *path, struct diags *d)
{
	struct eval_load	el = { m, d, path };
	int			rc;

	rc = rundir_read_eval(path, &el, eval_line, eval_bad);
	if (rc == CADRE_ERR_TOO_LARGE) {
		diag_warning(d, path, 0, 0, "over %zu bytes: not read",
		    RUNDIR_EVAL_MAX);
		rc = 0;
	}
	return rc;
}

int
report_cmp_double(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double
report_median(const double *v, size_t n)
{
	double	*c, r;

	if (n == 0)
		return NAN;
	c = xreallocarray(NULL, n, sizeof *c);
	memcpy(c, v, n * sizeof *c);
	qsort(c, n, sizeof *c, report_cmp_double);
	r = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
	free(c);
	return r;
}

double
report_mean(const double *v, size_t n)
{
	double	s = 0;
	size_t	i;

	if (n == 0)
		return NAN;
	for (i = 0; i < n; i++)
		s += v[i];
	return s / (double)n;
}

double
metrics_throughput(const struct metrics *m)
{
	return report_median(m->sps, m->nsps);
}
