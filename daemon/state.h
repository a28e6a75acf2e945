/*
 * cadred's store: experiments, runs, attempts and events in one SQLite
 * database (WAL). Every insertion is idempotent by its key (experiment
 * id, run id, run id + attempt number), so that a daemon killed half-way
 * through a submission and started again repeats it without duplicates:
 * the daemon records a run (state "new") and an attempt before it calls
 * the scheduler, and the job id right after.
 *
 * Functions return 0 or a negative enum cadre_err; SQLite's message for
 * the last failure is logged. Strings handed out are the caller's to free.
 */
#ifndef CADRE_STATE_H
#define CADRE_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "rundir.h"

#define STATE_SCHEMA_VERSION	3	/* PRAGMA user_version */
#define STATE_ID_MAX		64	/* bytes of an experiment or run id */


struct state;

struct state_experiment {
	char	*id;
	char	*name;
	char	*spec_file;	/* as given to cadre submit */
	char	*spec;		/* the spec's text */
	char	*backend;
	double	 created;	/* Unix time */
};

struct state_run {
	char		*id;
	char		*experiment;
	char		*config_id;
	int64_t		 repeat;
	char		*run_dir;
	enum run_state	 state;
	char		*reason;	/* "" when none */
	int64_t		 attempts;	/* attempts made so far */
	char		*job_id;	/* of the last attempt; NULL: none yet */
	double		 updated;
	int64_t		 rerun_base;	/* attempts when last rerun; 0: never */
};

struct state_attempt {
	int64_t	 n;		/* 1-based */
	char	*job_id;	/* NULL until the scheduler answered */
	char	*state;		/* the scheduler's, sched_state_name() */
	int64_t	 exit_code;	/* -1: not known */
	char	*reason;
	double	 submitted, ended;	/* 0: not yet */
};

struct state_event {
	int64_t	 id;
	double	 time;
	char	*experiment;	/* NULL when not about one */
	char	*run;		/* NULL when not about one */
	char	*kind;
	char	*message;
};

/* Opens (creating it, 0600) the database at path and brings its schema to
 * STATE_SCHEMA_VERSION; CADRE_ERR_VERSION for a newer one, CADRE_ERR_IO
 * for a file that is not a database. */
int state_open(const char *path, struct state **out);
/* Opens an existing database read-only (`cadre status` without cadred):
 * nothing is created or migrated; CADRE_ERR_NOT_FOUND when there is no
 * file, CADRE_ERR_VERSION when its schema is not STATE_SCHEMA_VERSION. */
int state_open_readonly(const char *path, struct state **out);
void state_close(struct state *st);
int state_schema_version(struct state *st, int64_t *v);

/* Transactions (BEGIN IMMEDIATE); not nested. */
int state_begin(struct state *st);
int state_commit(struct state *st);
int state_rollback(struct state *st);

/* *inserted (when not NULL) says whether the row is new; an existing one
 * is left as it is. */
int state_add_experiment(struct state *st, const char *id, const char *name,
    const char *spec_file, const char *spec, const char *backend,
    int *inserted);
int state_get_experiment(struct state *st, const char *id,
    struct state_experiment *out);	/* CADRE_ERR_NOT_FOUND */
void state_experiment_free(struct state_experiment *e);
/* Replaces the recorded spec (a policy change that keeps every run id). */
int state_set_experiment_spec(struct state *st, const char *id,
    const char *spec_file, const char *spec);
/* Calls fn for each experiment, oldest first; a non-zero return from fn
 * stops and is returned. */
int state_list_experiments(struct state *st,
    int (*fn)(void *ctx, const struct state_experiment *e), void *ctx);

int state_add_run(struct state *st, const char *experiment,
    const char *run_id, const char *config_id, int64_t repeat,
    const char *run_dir, int *inserted);
int state_get_run(struct state *st, const char *run_id,
    struct state_run *out);		/* CADRE_ERR_NOT_FOUND */
void state_run_free(struct state_run *r);
int state_set_run_state(struct state *st, const char *run_id,
    enum run_state s, const char *reason);
/* `cadre rerun`: the run goes back to "new" with reason, its attempts so
 * far kept and counted into rerun_base; fresh (a run that starts over, its
 * directory moved aside) also forgets its timed checkpoints. */
int state_rerun_run(struct state *st, const char *run_id, const char *reason,
    int fresh);
/* Calls fn for each run of experiment (NULL: all) in run id order; a
 * non-zero return from fn stops and is returned. */
int state_list_runs(struct state *st, const char *experiment,
    int (*fn)(void *ctx, const struct state_run *r), void *ctx);
/* Runs of experiment (NULL: all) per state. */
int state_count_runs(struct state *st, const char *experiment,
    int64_t counts[RUN_STATE_COUNT]);

/* A new attempt of run_id, numbered one past the last: *n. */
int state_add_attempt(struct state *st, const char *run_id, int64_t *n);
int state_set_attempt_job(struct state *st, const char *run_id, int64_t n,
    const char *job_id);
int state_set_attempt_state(struct state *st, const char *run_id, int64_t n,
    const char *sched_state, int64_t exit_code, const char *reason,
    int ended);
int state_get_attempt(struct state *st, const char *run_id, int64_t n,
    struct state_attempt *out);		/* CADRE_ERR_NOT_FOUND */
void state_attempt_free(struct state_attempt *a);

/*
 * A timed checkpoint of a run (docs/contracts.md): written by the trainer at
 * training time due_s (a multiple of checkpoint_every), recorded once its
 * files matched meta.json's checksums; eval figures once `cadre-train
 * eval --run-dir` wrote its eval.jsonl line.
 */
struct state_checkpoint {
	int64_t	 step;
	double	 due_s;
	double	 elapsed_s;	/* training time when it was taken */
	int64_t	 samples;
	char	*path;		/* relative to the run dir: checkpoints/step-N */
	int64_t	 attempt;	/* the attempt that wrote it */
	double	 recorded;	/* Unix time */
	int	 evaluated;	/* eval_loss and eval_accuracy hold figures */
	double	 eval_loss, eval_accuracy;
	char	*eval_error;	/* NULL: none */
	int	 removed;	/* thinned away after the run (keep_timed) */
};

/* Inserts c for run_id unless (run, step) is there: *inserted says. */
int state_add_checkpoint(struct state *st, const char *run_id,
    const struct state_checkpoint *c, int *inserted);
/* error NULL: the figures; else the error and no figures. */
int state_set_checkpoint_eval(struct state *st, const char *run_id,
    int64_t step, double loss, double accuracy, const char *error);
int state_set_checkpoint_removed(struct state *st, const char *run_id,
    int64_t step);
/* Calls fn for each checkpoint of run_id by step; non-zero from fn stops. */
int state_list_checkpoints(struct state *st, const char *run_id,
    int (*fn)(void *ctx, const struct state_checkpoint *c), void *ctx);

/* experiment and run may be NULL. */
int state_add_event(struct state *st, const char *experiment,
    const char *run, const char *kind, const char *message);
/* Events of run (NULL: all) with id > after, oldest first, at most max. */
int state_list_events(struct state *st, const char *run, int64_t after,
    size_t max, int (*fn)(void *ctx, const struct state_event *e),
    void *ctx);

/* The experiment arg names: an id, a unique id prefix, or a name (the
 * newest experiment of that name; msg then says so when there are more).
 * CADRE_ERR_NOT_FOUND, or CADRE_ERR_EXISTS for a prefix of several ids
 * (msg says which). */
int state_find_experiment(struct state *st, const char *arg, char **id,
    char *msg, size_t msglen);
/* The run arg names: its id or a unique start of one (hex digits);
 * CADRE_ERR_NOT_FOUND or CADRE_ERR_EXISTS with msg saying why. */
int state_find_run(struct state *st, const char *arg, struct state_run *out,
    char *msg, size_t msglen);

#endif
