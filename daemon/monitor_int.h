/*
 * The monitor's insides, shared by monitor.c (submission, polling,
 * cancel), requeue.c (the requeue policy), run_files.c (what it reads in
 * run directories) and monitor_status.c (the status queries); nothing
 * outside the monitor includes this (daemon/monitor.h is its interface).
 */
#ifndef CADRE_MONITOR_INT_H
#define CADRE_MONITOR_INT_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "monitor.h"
#include "spec.h"
#include "state.h"

struct mbackend {
	char		*key;	/* "backend|url|token_env" */
	struct sched	*sched;
};

struct mexp {
	char			 id[STATE_ID_MAX];
	char			*name;
	char			*backend;
	struct spec		*spec;
	struct spec_plan	*plan;
	struct mbackend		*be;
	int64_t			 max_concurrent;	/* 0: no limit */
	int64_t			 retries_max;
	double			 backoff;
	char *const		*retry_on;
	size_t			 nretry_on;
	const char		*webhook;	/* NULL: none */
	char *const		*notify_on;
	size_t			 nnotify_on;
};

struct mrun {
	char			 id[SPEC_ID_LEN + 1];
	struct mexp		*exp;
	const struct spec_run	*r;
	char			*run_dir;
	enum run_state		 state;
	char			*reason;
	int64_t			 attempts;
	int64_t			 rerun_base;	/* attempts when last rerun */
	char			*job_id;	/* of the last attempt */
	int			 job_pending;	/* last attempt has no job id yet */
	double			 not_before;	/* new/requeued: submit after */
	double			 updated;
	int			 unknown_polls;
	/* metrics.jsonl, read again only when it changed */
	off_t			 m_size;
	struct timespec		 m_mtime;
	struct monitor_progress	 prog;
	int			 m_tried;	/* read at least once */
	int			 m_final;	/* read since the run ended */
	/* metrics.jsonl when the checkpoints were last collected */
	off_t			 c_size;
	struct timespec		 c_mtime;
};

struct monitor {
	struct state		*st;
	struct monitor_config	 cfg;
	struct mexp		**exps;
	size_t			 nexps;
	struct mrun		**runs;		/* sorted by id */
	size_t			 nruns;
	struct mbackend		**bes;
	size_t			 nbes;
	double			 next_poll;
	double			 unreachable_since;
	double			 retry_at;	/* after the scheduler was busy */
	int			 busy_count;
	int			 more;		/* submissions left over */
	struct notifier		*notifier;	/* borrowed; NULL: none */
};

/* The run with id id, or NULL. */
struct mrun *mon_find_run(struct monitor *m, const char *id);
/* The experiment with id id, else the newest one named id, or NULL. */
struct mexp *mon_find_exp(struct monitor *m, const char *id);
/* Resolves target (a run id, an experiment id or name; NULL: everything)
 * into *e or *r; CADRE_ERR_NOT_FOUND with a message naming it. */
int mon_resolve(struct monitor *m, const char *target, struct mexp **e,
    struct mrun **r, char *err, size_t errlen);
/* Parses and expands a spec: 0 with *sp and *pp, or CADRE_ERR_INVALID
 * with the diagnostics in err. */
int mon_load_spec(const char *path, const char *text, size_t len,
    struct spec **sp, struct spec_plan **pp, char *err, size_t errlen);
/* An experiment's id: SPEC_ID_LEN hex digits over its name and run ids
 * (id has SPEC_ID_LEN + 1 bytes). */
void mon_experiment_id(const struct spec *s, const struct spec_plan *p,
    char *id);
/* The experiment with id id, loaded from the database when the monitor
 * does not hold it yet (`cadre run` of a spec that ran before); NULL
 * when there is none. */
struct mexp *mon_get_exp(struct monitor *m, const char *id);
/* Replaces e's spec and plan (freeing the old ones) and what the monitor
 * takes from them; e's runs point into the new plan. */
void mon_exp_set_spec(struct monitor *m, struct mexp *e, struct spec *s,
    struct spec_plan *p);
/* depends.c: whether e's new runs may start (after:): 0 yes, 1 not yet,
 * -1 never (a named experiment has a failed or cancelled run, or is not
 * recorded); why says which. */
int mon_after_state(struct monitor *m, struct mexp *e, char *why,
    size_t len);
/* trainer.init.from: the checkpoint r starts from (an absolute path):
 * the named experiment's done run of trainer.init.config (or of its only
 * configuration), its final checkpoint or the timed one at
 * trainer.init.at. CADRE_ERR_NOT_FOUND with why in err. */
int mon_init_path(struct monitor *m, struct mrun *r, char **path, char *err,
    size_t errlen);
/* A spec's after: at submit (its experiment id id): every name recorded,
 * none this experiment, no chain back to it; CADRE_ERR_INVALID with err
 * otherwise. */
int mon_after_check(struct monitor *m, const struct spec *s, const char *id,
    char *err, size_t errlen);

/* rerun.c: what a new text of e's spec (expanded into p) changes, as
 * ["KEY: OLD -> NEW", ...]; empty when nothing does. */
json_t *mon_spec_changes(struct monitor *m, struct mexp *e, const char *text,
    const struct spec_plan *p);

/* Reads the run's metrics.jsonl again when it changed (r->prog). */
void mon_read_progress(struct mrun *r);

/* An event in the database (and the log, for a run); r NULL: the
 * daemon's own. */
void mon_event(struct monitor *m, struct mrun *r, const char *kind,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Moves r to state s with reason (NULL: ""), in the database first. */
int mon_set_state(struct monitor *m, struct mrun *r, enum run_state s,
    const char *reason);

/* requeue.c: ends r's attempt from the scheduler's final state ss and
 * status.json, then requeues it (after the backoff) or ends the run. */
void mon_end_attempt(struct monitor *m, struct mrun *r,
    const struct sched_status *ss, double now);

/* run_files.c */
/* The run's new timed checkpoints into the database: looked for when
 * metrics.jsonl changed, or always (force) once an attempt ended. */
void mon_collect(struct monitor *m, struct mrun *r, int force);
/* trainer.keep_timed: at, once the run is done and evaluated. */
void mon_thin(struct monitor *m, struct mrun *r);
/* status.json of attempt n goes aside as status.N.json. */
void mon_status_aside(struct mrun *r, int64_t n);
/* Whether launch has written the current attempt's status.json. */
int mon_status_written(struct mrun *r);

#endif
