/* cadred's status queries: `cadre status` as JSON and as a table
 * (daemon/monitor.h). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "buf.h"
#include "duration.h"
#include "error.h"
#include "monitor.h"
#include "monitor_int.h"
#include "proto.h"
#include "rundir.h"
#include "spec.h"
#include "state.h"

static void
refresh(struct mrun *r)
{
	/* metrics change only while a run runs: a status of 10,000 queued
	 * or finished runs costs no stat() each */
	if (r->state == RUN_STARTING || r->state == RUN_RUNNING ||
	    r->state == RUN_REQUEUED || (r->state == RUN_QUEUED &&
	    !r->m_tried) || (run_state_final(r->state) && !r->m_final)) {
		mon_read_progress(r);
		r->m_tried = 1;
		r->m_final = run_state_final(r->state);
	}
}

static json_t *
run_json(struct monitor *m, struct mrun *r)
{
	json_t	*o;

	(void)m;
	refresh(r);
	o = json_pack("{s:s, s:s, s:s, s:I, s:s, s:I, s:I, s:I, s:f, s:I, "
	    "s:s, s:s, s:f}",
	    "id", r->id, "experiment", r->exp->id,
	    "config", spec_run_config_id(r->r),
	    "repeat", (json_int_t)spec_run_repeat(r->r),
	    "state", run_state_name(r->state),
	    "attempts", (json_int_t)r->attempts,
	    "step", (json_int_t)r->prog.step,
	    "steps", (json_int_t)spec_run_int(r->r, SPEC_K_STEPS),
	    "samples_per_s", r->prog.samples_per_s,
	    "global_batch", (json_int_t)spec_run_global_batch(r->r),
	    "reason", r->reason, "run_dir", r->run_dir,
	    "updated", r->updated);
	if (o != NULL) {
		json_object_set_new(o, "job_id", r->job_id != NULL ?
		    json_string(r->job_id) : json_null());
		json_object_set_new(o, MX_EV_CHECKPOINT_SKIPPED,
		    r->prog.skipped[0] != '\0' ? json_string(r->prog.skipped) :
		    json_null());
	}
	return o;
}

static json_t *
exp_json(struct monitor *m, struct mexp *e)
{
	json_t	*counts = json_object();
	int64_t	 c[RUN_STATE_COUNT] = { 0 }, n = 0;
	size_t	 i;

	for (i = 0; i < m->nruns; i++) {
		if (m->runs[i]->exp == e) {
			c[m->runs[i]->state]++;
			n++;
		}
	}
	for (i = 0; i < RUN_STATE_COUNT; i++) {
		if (c[i] > 0)
			json_object_set_new(counts, run_state_name(
			    (enum run_state)i), json_integer(c[i]));
	}
	return json_pack("{s:s, s:s, s:s, s:I, s:o}", "id", e->id, "name",
	    e->name, "backend", e->backend, "runs", (json_int_t)n, "states",
	    counts);
}

static int
ckpt_to_json(void *ctx, const struct state_checkpoint *c)
{
	json_t	*o = json_pack("{s:I, s:f, s:f, s:I, s:s, s:I, s:b}",
	    "step", (json_int_t)c->step, "due_s", c->due_s,
	    "elapsed_s", c->elapsed_s, "samples", (json_int_t)c->samples,
	    "path", c->path, "attempt", (json_int_t)c->attempt,
	    "removed", c->removed);

	if (o == NULL)
		return 0;
	json_object_set_new(o, "eval_loss", c->evaluated ?
	    json_real(c->eval_loss) : json_null());
	json_object_set_new(o, "eval_accuracy", c->evaluated ?
	    json_real(c->eval_accuracy) : json_null());
	json_object_set_new(o, "eval_error", c->eval_error != NULL ?
	    json_string(c->eval_error) : json_null());
	json_array_append_new(ctx, o);
	return 0;
}

static int
ckpt_to_row(void *ctx, const struct state_checkpoint *c)
{
	char	due[32], el[32], loss[32], acc[32];

	duration_format((int64_t)llround(c->due_s), due, sizeof due);
	snprintf(el, sizeof el, "%.1fs", c->elapsed_s);
	if (c->evaluated) {
		snprintf(loss, sizeof loss, "%.4f", c->eval_loss);
		snprintf(acc, sizeof acc, "%.4f", c->eval_accuracy);
	} else {
		snprintf(loss, sizeof loss, "-");
		snprintf(acc, sizeof acc, c->eval_error != NULL ? "error" : "-");
	}
	(void)cbuf_addf(ctx, "  %-8s  %8lld  %10s  %10lld  %3lld  %9s  %8s  %s%s\n",
	    due, (long long)c->step, el, (long long)c->samples,
	    (long long)c->attempt, loss, acc, c->path,
	    c->removed ? " (removed)" : "");
	return 0;
}

/* `cadre status RUN`: the run's timed checkpoints under its table. */
static void
ckpt_table(struct monitor *m, struct mrun *r, struct cbuf *b)
{
	struct cbuf	rows;

	cbuf_init(&rows, PROTO_TABLE_MAX);
	(void)state_list_checkpoints(m->st, r->id, ckpt_to_row, &rows);
	if (rows.len == 0) {
		(void)cbuf_adds(b, "no timed checkpoints recorded yet (every "
		    "trainer.checkpoint_every of training)\n");
	} else {
		(void)cbuf_addf(b, "timed checkpoints (cadre export %s --at "
		    "TIME DIR copies one):\n", r->id);
		(void)cbuf_addf(b, "  %-8s  %8s  %10s  %10s  %3s  %9s  %8s  %s\n",
		    "AT", "STEP", "TRAINED", "SAMPLES", "ATT", "EVAL LOSS",
		    "EVAL ACC", "PATH");
		(void)cbuf_adds(b, rows.data);
	}
	cbuf_free(&rows);
}

int
monitor_status(struct monitor *m, const char *target, json_t **out,
    char *err, size_t errlen)
{
	struct mexp	*e;
	struct mrun	*r;
	json_t		*o, *exps, *runs;
	size_t		 i;
	int		 rc;

	*out = NULL;
	if ((rc = mon_resolve(m, target, &e, &r, err, errlen)) != 0)
		return rc;
	exps = json_array();
	runs = json_array();
	for (i = 0; i < m->nexps; i++) {
		if ((e == NULL && r == NULL) || m->exps[i] == e ||
		    (r != NULL && r->exp == m->exps[i]))
			json_array_append_new(exps, exp_json(m, m->exps[i]));
	}
	for (i = 0; i < m->nruns; i++) {
		if ((e == NULL && r == NULL) || m->runs[i]->exp == e ||
		    m->runs[i] == r)
			json_array_append_new(runs, run_json(m, m->runs[i]));
	}
	/* one run: its timed checkpoints too (a query: not for every run) */
	if (r != NULL && json_array_size(runs) == 1) {
		json_t	*cks = json_array();

		(void)state_list_checkpoints(m->st, r->id, ckpt_to_json, cks);
		json_object_set_new(json_array_get(runs, 0), RUNDIR_CHECKPOINTS, cks);
	}
	o = json_pack("{s:o, s:o}", "experiments", exps, "runs", runs);
	json_object_set_new(o, "unreachable_since", m->unreachable_since > 0 ?
	    json_real(m->unreachable_since) : json_null());
	*out = o;
	return 0;
}

/* One experiment's table; the same columns as `cadre status` shows. */
static void
exp_table(struct monitor *m, struct mexp *e, struct mrun *only,
    struct cbuf *b)
{
	char	prog[48], sps[32];
	size_t	i, n = 0;

	for (i = 0; i < m->nruns; i++)
		n += m->runs[i]->exp == e;
	(void)cbuf_addf(b, "experiment %s (%s, %s): %zu run%s\n", e->id,
	    e->name, e->backend, n, n == 1 ? "" : "s");
	(void)cbuf_addf(b, "  %-12s  %-12s  %-9s  %3s  %-13s  %9s  %s\n",
	    "RUN", "CONFIG", "STATE", "ATT", "STEP/TOTAL", "SAMPLES/S",
	    "REASON");
	for (i = 0; i < m->nruns; i++) {
		struct mrun	*r = m->runs[i];

		if (r->exp != e || (only != NULL && r != only))
			continue;
		refresh(r);
		if (r->prog.step >= 0)
			snprintf(prog, sizeof prog, "%lld/%lld",
			    (long long)r->prog.step,
			    (long long)spec_run_int(r->r, SPEC_K_STEPS));
		else
			snprintf(prog, sizeof prog, "-/%lld",
			    (long long)spec_run_int(r->r, SPEC_K_STEPS));
		if (r->prog.samples_per_s > 0)
			snprintf(sps, sizeof sps, "%.1f", r->prog.samples_per_s);
		else
			snprintf(sps, sizeof sps, "-");
		(void)cbuf_addf(b, "  %-12s  %-12s  %-9s  %3lld  %-13s  %9s  "
		    "%s\n", r->id, spec_run_config_id(r->r),
		    run_state_name(r->state), (long long)r->attempts, prog, sps,
		    r->reason);
		if (only != NULL && r->prog.skipped[0] != '\0')
			(void)cbuf_addf(b, "  resume passed over %s\n",
			    r->prog.skipped);
	}
}

int
monitor_status_table(struct monitor *m, const char *target, char **out,
    char *err, size_t errlen)
{
	struct mexp	*e;
	struct mrun	*r;
	struct cbuf	 b;
	time_t		 t;
	struct tm	 tm;
	char		 when[16];
	size_t		 i;
	int		 rc;

	*out = NULL;
	if ((rc = mon_resolve(m, target, &e, &r, err, errlen)) != 0)
		return rc;
	cbuf_init(&b, PROTO_TABLE_MAX);
	if (m->unreachable_since > 0) {
		t = (time_t)m->unreachable_since;
		localtime_r(&t, &tm);
		strftime(when, sizeof when, "%H:%M", &tm);
		(void)cbuf_addf(&b, "scheduler unreachable since %s: retrying; "
		    "no run is lost\n", when);
	}
	if (m->nexps == 0)
		(void)cbuf_adds(&b, "no experiments yet (cadre submit SPEC "
		    "adds one)\n");
	for (i = 0; i < m->nexps; i++) {
		if ((e == NULL && r == NULL) || m->exps[i] == e)
			exp_table(m, m->exps[i], NULL, &b);
		else if (r != NULL && r->exp == m->exps[i]) {
			exp_table(m, m->exps[i], r, &b);
			ckpt_table(m, r, &b);
		}
	}
	(void)cbuf_adds(&b, "");
	*out = cbuf_detach(&b, NULL);
	return 0;
}
