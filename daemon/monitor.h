/*
 * The monitor: cadred's policy. It records submitted experiments and
 * their runs (daemon/state.h), prepares each run's directory (keys,
 * train.json, job script), hands jobs to the scheduler backends, polls
 * them, and decides what an ended attempt means: done, failed, cancelled,
 * or requeued for another attempt after a backoff (docs/daemon.md,
 * "Requeue rules"). The socket and the protocol are not its business
 * (server.c, proto.c); cadred and `cadre run` both drive it.
 *
 * The decisions are pure functions below (monitor_end_reason,
 * monitor_decide, monitor_backoff, monitor_parse_metrics), unit-tested
 * on their own.
 */
#ifndef CADRE_MONITOR_H
#define CADRE_MONITOR_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "scheduler.h"

struct state;

#define MONITOR_CONFIG_MAX	((size_t)64 << 10)	/* bytes of cadred.conf */
#define MONITOR_METRICS_TAIL	((size_t)64 << 10)	/* bytes read of metrics.jsonl */
#define MONITOR_ERR_MAX		1024

/* cadred.conf: `key = value` lines (docs/daemon.md, "Config file"). */
struct monitor_config {
	double	 poll_interval;	/* seconds between polls; default 5 */
	char	*bindir;	/* where sbatch, qsub... are; NULL: $PATH */
	char	*agent;		/* cadre-agent */
	char	*trainer;	/* cadre-train */
	char	*templates;	/* job script templates */
	int	 cmd_timeout;	/* seconds a scheduler command may take; 0: 30 */
	double	 backoff_cap;	/* seconds; default 3600 */
	int	 dry;		/* local backend: plan and record, run nothing */
	char	*log_level;	/* NULL: notice */
};

/* Defaults (paths from the install prefix). */
void monitor_config_init(struct monitor_config *c);
void monitor_config_free(struct monitor_config *c);
/* dst = a deep copy of src (dst's old strings are not freed). */
void monitor_config_copy(struct monitor_config *dst,
    const struct monitor_config *src);
/* Parses text (len bytes, at most MONITOR_CONFIG_MAX) into c over what
 * it holds: 0, or CADRE_ERR_PARSE / CADRE_ERR_TOO_LARGE with
 * "NAME:LINE: error: ..." in err. c is unchanged on error. */
int monitor_config_parse(const char *name, const char *text, size_t len,
    struct monitor_config *c, char *err, size_t errlen);
/* Reads path into c; a file that does not exist is not an error when
 * missing_ok. */
int monitor_config_load(const char *path, int missing_ok,
    struct monitor_config *c, char *err, size_t errlen);

/* ---------------------------------------------------------------- policy */

/* What metrics.jsonl (docs/contracts.md) says of a run's progress. */
struct monitor_progress {
	int64_t	 step;		/* the last step reached; -1: none yet */
	double	 samples_per_s;	/* of the last "step" line; 0: none */
	double	 elapsed_s;
	int	 complete;	/* a summary with "complete": true */
	/* the last checkpoint_skipped event, "PATH: WHY"; "": none seen */
	char	 skipped[320];
};

/* Reads the last whole lines of text (a tail of metrics.jsonl); lines that
 * are not JSON objects are skipped. Never fails. */
void monitor_parse_metrics(const char *text, size_t len,
    struct monitor_progress *p);

/* How an attempt ended, from the scheduler's final (or unknown) state
 * and status.json's reason (NULL when there is none): one of the end
 * reasons of rundir.h, REASON_TIMEOUT, REASON_CANCELLED, or REASON_LOST
 * (the scheduler forgot the job and there is no status.json). A job that
 * failed killed by a signal (or exiting 128 + N) with no status.json
 * lost its launch: REASON_NODE_FAIL, resumable. */
const char *monitor_end_reason(const struct sched_status *ss,
    const char *status_reason);
/* Whether a job's end says a signal killed it (or its launch). */
int monitor_job_killed(const struct sched_status *ss);

enum monitor_verdict {
	MONITOR_DONE = 0,
	MONITOR_FAILED,
	MONITOR_CANCELLED,
	MONITOR_REQUEUE
};

struct monitor_end {
	const char	*reason;	/* monitor_end_reason() */
	int64_t		 attempts;	/* attempts made, this one included */
	int64_t		 retries_max;
	int		 retry_on;	/* reason is in retries.on */
	const char	*prev_reason;	/* of the attempt before; NULL: none */
	int64_t		 prev_step;	/* step reached by then; -1: none */
	int64_t		 step;		/* step reached now; -1: none */
};

/* The verdict on an ended attempt; why gets the run's reason text. */
enum monitor_verdict monitor_decide(const struct monitor_end *e, char *why,
    size_t len);
/* Seconds before attempt n + 1: base * 2^(n-1), at most cap. */
double monitor_backoff(double base, int64_t n, double cap);

/* ---------------------------------------------------------------- monitor */

struct monitor;

/* A monitor over st (borrowed) with a copy of cfg; load: pick up every
 * experiment in the database (cadred), or none (`cadre run`). */
int monitor_open(struct state *st, const struct monitor_config *cfg,
    int load, struct monitor **out);
void monitor_free(struct monitor *m);
/* Webhooks (notify.webhook, notify.on) go through n (borrowed; NULL:
 * none are sent); the caller drives notify_poll(). */
struct notifier;
void monitor_set_notifier(struct monitor *m, struct notifier *n);
/* A new config (SIGHUP): takes a copy; backends are reopened. */
void monitor_reconfigure(struct monitor *m, const struct monitor_config *cfg);

/* Records the spec (text of len bytes, from path) and its runs; runs go
 * to the scheduler in monitor_tick(). *reply gets {"experiment", "name",
 * "runs", "new"}. 0, or CADRE_ERR_INVALID with the spec's diagnostics
 * in err. */
int monitor_submit(struct monitor *m, const char *path, const char *text,
    size_t len, json_t **reply, char *err, size_t errlen);
/* Does what is due at time now (polls, submissions, resubmissions). */
void monitor_tick(struct monitor *m, double now);
/* Milliseconds until monitor_tick() has something to do; 0: now. */
int monitor_timeout_ms(struct monitor *m, double now);

/* target: an experiment id or name, a run id, or NULL (everything). The
 * status is {"experiments": [...], "runs": [...], "unreachable_since"}. */
int monitor_status(struct monitor *m, const char *target, json_t **out,
    char *err, size_t errlen);
/* The same as the table `cadre status` prints (text, caller frees). */
int monitor_status_table(struct monitor *m, const char *target, char **out,
    char *err, size_t errlen);
/* Cancels the live jobs of target and marks its unfinished runs
 * cancelled; *n gets how many. */
int monitor_cancel(struct monitor *m, const char *target, int64_t *n,
    char *err, size_t errlen);
/* Loads the experiment target names (an id, a unique id prefix, a name,
 * or one of its run ids) from the database when the monitor does not
 * hold it; id gets its id (SPEC_ID_LEN + 1 bytes at least). 0, or
 * CADRE_ERR_NOT_FOUND / CADRE_ERR_EXISTS (an ambiguous prefix) with the
 * reason in err. */
int monitor_load(struct monitor *m, const char *target, char *id,
    size_t idlen, char *err, size_t errlen);

/* `cadre rerun`: new attempts for ended runs, keeping their ids and
 * history. */
#define MONITOR_RERUN_FAILED	0x01	/* failed runs (oom among them) */
#define MONITOR_RERUN_CANCELLED	0x02
#define MONITOR_RERUN_ALL	0x04	/* every ended run, done ones too */
#define MONITOR_RERUN_FRESH	0x08	/* start over instead of resuming */

struct monitor_rerun {
	const char	*target;	/* an experiment id or name, or a run id */
	char *const	*runs;		/* run ids of it; none: by which */
	size_t		 nruns;
	unsigned	 which;		/* MONITOR_RERUN_*; 0: failed, cancelled */
	const char	*spec_path;	/* a changed spec to apply; NULL: none */
	const char	*spec_text;
	size_t		 spec_len;
};

/* Puts the chosen runs back to "new": a failed or cancelled run resumes
 * from its newest checkpoint as a requeued one does; a done run (or any
 * with MONITOR_RERUN_FRESH) starts over, its directory moved aside to
 * RUN_DIR.rerun-N. The retry budget counts from the rerun. A spec given
 * must have the same runs (its other keys are applied). *reply gets
 * {"experiment", "name", "rerun": N, "runs": [ids], "changed": [...],
 * "moved": [dirs]}. CADRE_ERR_NOT_FOUND or CADRE_ERR_INVALID with the
 * reason in err; nothing changes then. */
int monitor_rerun(struct monitor *m, const struct monitor_rerun *q,
    json_t **reply, char *err, size_t errlen);
/* A rerun request of the protocol (daemon/proto.h) into q, which borrows
 * req's strings; q->runs is the caller's to free(). A malformed one is
 * CADRE_ERR_INVALID with the member named in err. */
int monitor_rerun_parse(const json_t *req, struct monitor_rerun *q,
    char *err, size_t errlen);
/* monitor_rerun() of such a request. */
int monitor_rerun_json(struct monitor *m, const json_t *req, json_t **reply,
    char *err, size_t errlen);
/* Whether every run of experiment (NULL: all) is done, failed or
 * cancelled. */
int monitor_all_final(struct monitor *m, const char *experiment);

/* "HH:MM" since when the scheduler has not answered; 0: it answers. */
double monitor_unreachable_since(const struct monitor *m);

#endif
