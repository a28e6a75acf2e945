/*
 * The requeue policy: how an attempt ended (the scheduler's final state
 * and status.json's reason), whether the run goes again (retries.on,
 * retries.max, no second failure of the same kind without progress) and
 * after which backoff. monitor_end_reason, monitor_decide and
 * monitor_backoff are pure (tests/unit/test_monitor.c); mon_end_attempt
 * applies them to a run.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "json.h"
#include "log.h"
#include "monitor.h"
#include "monitor_int.h"
#include "rundir.h"
#include "state.h"
#include "strutil.h"
#include "xmalloc.h"

int
monitor_job_killed(const struct sched_status *ss)
{
	return ss->exit_signal != 0 || ss->exit_code > 128;
}

const char *
monitor_end_reason(const struct sched_status *ss, const char *sr)
{
	/* status.json is what the job itself saw; a reason we do not know
	 * counts as a failure */
	if (sr != NULL && !rundir_status_reason_known(sr))
		sr = REASON_FAILED;
	/* launch writes status.json whatever its ranks did: a job killed
	 * without one lost launch itself (SIGKILL, its node gone) */
	if (sr == NULL && (ss->state == SCHED_FAILED ||
	    ss->state == SCHED_DONE) && monitor_job_killed(ss))
		return REASON_NODE_FAIL;
	switch (ss->state) {
	case SCHED_CANCELLED:
		return REASON_CANCELLED;
	case SCHED_TIMEOUT:
		/* launch saw the warning signal and the trainer
		 * checkpointed: still a timeout, unless it had finished */
		return sr != NULL && strcmp(sr, REASON_DONE) == 0 ? REASON_DONE :
		    REASON_TIMEOUT;
	case SCHED_PREEMPTED:
		return REASON_PREEMPTED;
	case SCHED_NODE_FAIL:
		return REASON_NODE_FAIL;
	case SCHED_DONE:
		return sr != NULL ? sr : REASON_DONE;
	case SCHED_FAILED:
		return sr != NULL ? sr : REASON_FAILED;
	default:
		return sr != NULL ? sr : REASON_LOST;
	}
}

enum monitor_verdict
monitor_decide(const struct monitor_end *e, char *why, size_t len)
{
	if (strcmp(e->reason, REASON_DONE) == 0) {
		snprintf(why, len, "%s", "");
		return MONITOR_DONE;
	}
	if (strcmp(e->reason, REASON_CANCELLED) == 0) {
		snprintf(why, len, "cancelled by the scheduler");
		return MONITOR_CANCELLED;
	}
	if (!e->retry_on) {
		snprintf(why, len, "%s (not in retries.on)", e->reason);
		return MONITOR_FAILED;
	}
	if (e->prev_reason != NULL && strcmp(e->prev_reason, e->reason) == 0 &&
	    e->step <= e->prev_step) {
		if (e->step >= 0)
			snprintf(why, len, "%s twice at step %lld without "
			    "progress: not retried", e->reason,
			    (long long)e->step);
		else
			snprintf(why, len, "%s twice before the first step: "
			    "not retried", e->reason);
		return MONITOR_FAILED;
	}
	if (e->attempts > e->retries_max) {
		snprintf(why, len, "%s; retries exhausted (%lld attempt%s, "
		    "retries.max %lld)", e->reason, (long long)e->attempts,
		    e->attempts == 1 ? "" : "s", (long long)e->retries_max);
		return MONITOR_FAILED;
	}
	snprintf(why, len, "%s, attempt %lld of %lld", e->reason,
	    (long long)e->attempts, (long long)e->retries_max + 1);
	return MONITOR_REQUEUE;
}

double
monitor_backoff(double base, int64_t n, double cap)
{
	double	d = base;
	int64_t	i;

	for (i = 1; i < n && d < cap; i++)
		d *= 2;
	return d < cap ? d : cap;
}

/* status.json's reason and message: 0, or CADRE_ERR_NOT_FOUND. */
static int
read_status(struct mrun *r, char **reason, char **message)
{
	json_t		*o = NULL;
	const char	*s;
	char		*path;
	int		 rc;

	*reason = *message = NULL;
	xasprintf(&path, "%s/" RUNDIR_STATUS, r->run_dir);
	rc = cjson_load_file(path, RUNDIR_STATUS_MAX, &o, NULL);
	if (rc != 0) {
		if (!(rc == CADRE_ERR_SYSTEM && errno == ENOENT))
			log_warn("run %s: %s: %s", r->id, path,
			    cadre_strerror(rc));
		free(path);
		return CADRE_ERR_NOT_FOUND;
	}
	free(path);
	if (json_is_object(o) && cjson_get_string(o, STATUS_REASON, &s) == 0 &&
	    str_is_name(s, 32)) {
		*reason = xstrdup(s);
		if (cjson_get_string(o, STATUS_MESSAGE, &s) == 0)
			*message = xstrndup(s, 300);
		rc = 0;
	} else {
		log_warn("run %s: status.json without a valid reason", r->id);
		rc = CADRE_ERR_NOT_FOUND;
	}
	json_decref(o);
	return rc;
}

static int
retry_on(const struct mexp *e, const char *reason)
{
	size_t	i;

	for (i = 0; i < e->nretry_on; i++) {
		if (strcmp(e->retry_on[i], reason) == 0)
			return 1;
	}
	return 0;
}

/* "REASON at step N[: message]" as an attempt's reason; parsed back for
 * the next attempt's comparison. */
static void
prev_attempt(struct monitor *m, struct mrun *r, char *reason, size_t len,
    int64_t *step)
{
	struct state_attempt	a;
	const char		*p;
	long long		v;

	*reason = '\0';
	*step = -1;
	/* a rerun starts a new series: its first attempt compares with none */
	if (r->attempts - r->rerun_base < 2 || state_get_attempt(m->st, r->id,
	    r->attempts - 1, &a) != 0)
		return;
	if (a.reason != NULL && (p = strstr(a.reason, " at step ")) != NULL) {
		snprintf(reason, len, "%.*s", (int)(p - a.reason), a.reason);
		if (sscanf(p, " at step %lld", &v) == 1)
			*step = v;
	}
	state_attempt_free(&a);
}

void
mon_end_attempt(struct monitor *m, struct mrun *r, const struct sched_status *ss,
    double now)
{
	struct monitor_end	 e;
	enum monitor_verdict	 v;
	char			*sreason = NULL, *smsg = NULL, *areason;
	char			 why[MONITOR_ERR_MAX], prev[64];
	int			 have_status;

	have_status = read_status(r, &sreason, &smsg) == 0;
	mon_read_progress(r);
	mon_collect(m, r, 1);
	memset(&e, 0, sizeof e);
	e.reason = monitor_end_reason(ss, have_status ? sreason : NULL);
	if (!have_status && smsg == NULL &&
	    strcmp(e.reason, REASON_NODE_FAIL) == 0 && monitor_job_killed(ss))
		xasprintf(&smsg, "the job was killed (%s %d) before launch "
		    "wrote status.json: its head node or launch was lost",
		    ss->exit_signal != 0 ? "signal" : "exit",
		    ss->exit_signal != 0 ? ss->exit_signal : ss->exit_code);
	if (strcmp(e.reason, REASON_LOST) == 0)
		e.reason = REASON_FAILED;
	e.attempts = r->attempts - r->rerun_base;
	e.retries_max = r->exp->retries_max;
	e.retry_on = retry_on(r->exp, e.reason);
	prev_attempt(m, r, prev, sizeof prev, &e.prev_step);
	e.prev_reason = prev[0] != '\0' ? prev : NULL;
	e.step = r->prog.step;
	v = monitor_decide(&e, why, sizeof why);
	xasprintf(&areason, "%s at step %lld%s%s", e.reason,
	    (long long)e.step, smsg != NULL ? ": " : "",
	    smsg != NULL ? smsg : "");
	(void)state_set_attempt_state(m->st, r->id, r->attempts,
	    sched_state_name(ss->state), ss->exit_code, areason, 1);
	free(areason);
	switch (v) {
	case MONITOR_DONE:
		(void)mon_set_state(m, r, RUN_DONE, "");
		mon_thin(m, r);
		break;
	case MONITOR_CANCELLED:
		(void)mon_set_state(m, r, RUN_CANCELLED, why);
		break;
	case MONITOR_FAILED:
		if (smsg != NULL && strlen(why) + strlen(smsg) + 3 < sizeof why)
			snprintf(why + strlen(why), sizeof why - strlen(why),
			    ": %s", smsg);
		(void)mon_set_state(m, r, RUN_FAILED, why);
		break;
	case MONITOR_REQUEUE:
		r->not_before = now + monitor_backoff(r->exp->backoff,
		    r->attempts - r->rerun_base, m->cfg.backoff_cap);
		mon_status_aside(r, r->attempts);
		(void)mon_set_state(m, r, RUN_REQUEUED, why);
		m->more = 1;
		break;
	}
	free(sreason);
	free(smsg);
}
