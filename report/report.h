/*
 * cadre report: the numbers of an experiment, computed from what its runs
 * left behind (docs/report.md). The spec text stored with the experiment
 * gives each run's configuration (re-parsed and expanded, runs matched by
 * id); each run directory gives metrics.jsonl and status.json
 * (docs/contracts.md). Nothing here talks to cadred or its database: the
 * caller hands over each run (cli/report_load.c reads them from it).
 *
 * A run's throughput is the median of the samples_per_s of its "step"
 * lines with step > measure.skip_steps, over all its attempts. A
 * configuration's figures are over its done runs; failed, out-of-memory,
 * cancelled and unfinished runs are counted and listed, never dropped.
 */
#ifndef CADRE_REPORT_H
#define CADRE_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "diag.h"
#include "spec.h"
#include "rundir.h"
#include "rundir_read.h"

#define REPORT_LINES_MAX	((size_t)10000000)	/* lines read per file */
#define REPORT_POINTS_MAX	((size_t)20000)	/* loss points kept per run */
#define REPORT_SKIPPED_MAX	((size_t)16)	/* checkpoint_skipped events kept per run */

/* A timed checkpoint (docs/contracts.md): its metrics event with due_s, and
 * the figures of its eval.jsonl line. */
struct report_mark {
	double	 due_s;
	int64_t	 step;
	int64_t	 samples;
	double	 elapsed_s;
	double	 loss, accuracy;	/* NAN: not evaluated */
};

/* What one metrics.jsonl says. Doubles are NAN when there is no value. */
struct metrics {
	int64_t	 skip_steps;	/* step lines up to this one are warm-up */
	double	*sps;		/* samples_per_s of the measured step lines */
	size_t	 nsps, capsps;
	double	*loss_step, *loss;	/* the loss curve, thinned past REPORT_POINTS_MAX */
	size_t	 nloss, caploss;
	size_t	 loss_stride, loss_seen;
	size_t	 nsteps;	/* step lines accepted */
	size_t	 nstarts;	/* attempts (start events) */
	int64_t	 last_step;	/* -1: none */
	double	 last_elapsed;	/* elapsed_s of the last step line */
	double	 last_loss;
	double	 last_mlm_acc;
	int64_t	 samples;	/* of the last step line; -1: none */
	double	 eval_loss, eval_accuracy;	/* of the last eval event */
	int64_t	 peak_rss;	/* largest summary peak_rss_bytes; -1: none */
	int	 oom;		/* an error event of kind oom */
	char	**skipped;	/* checkpoint_skipped events: "PATH: WHY" */
	size_t	 nskipped;	/* at most REPORT_SKIPPED_MAX */
	int	 complete;	/* the last summary said complete */
	json_t	*env;		/* start and summary.env members, last wins */
	struct report_mark *marks;	/* by due_s; the last event of a mark wins */
	size_t	 nmarks, capmarks;
};

void metrics_init(struct metrics *m, int64_t skip_steps);
void metrics_free(struct metrics *m);
/*
 * Takes one line (len bytes, no newline). 0 when it was used or is an
 * event this version ignores; CADRE_ERR_PARSE (not JSON), CADRE_ERR_INVALID
 * (a field missing or of the wrong type) or CADRE_ERR_TOO_LARGE with the
 * reason in msg: the line is skipped and m is unchanged.
 */
int metrics_parse_line(struct metrics *m, const char *line, size_t len,
    char *msg, size_t msglen);
/*
 * Reads path line by line; each skipped line is a warning "PATH:LINE: ..."
 * in d. A last line without its newline that does not parse is a run
 * still writing: ignored without a warning. CADRE_ERR_NOT_FOUND when there
 * is no file, CADRE_ERR_SYSTEM when it cannot be read.
 */
int metrics_load(struct metrics *m, const char *path, struct diags *d);
/* The run's throughput: median of m->sps, NAN when there is none. */
double metrics_throughput(const struct metrics *m);

/* Median (of a sorted copy) and mean; NAN for n == 0. */
double report_median(const double *v, size_t n);
double report_mean(const double *v, size_t n);
/* qsort comparison of doubles, ascending. */
int report_cmp_double(const void *a, const void *b);

/* How a run ended, as the report shows it. */
enum report_class {
	REPORT_DONE = 0,
	REPORT_FAILED,
	REPORT_OOM,
	REPORT_CANCELLED,
	REPORT_UNFINISHED,	/* new, queued, starting, running, requeued */
	REPORT_MISSING,		/* planned, not in the database */
	REPORT_CLASS_COUNT
};
const char *report_class_name(enum report_class c);

struct report_run {
	char			*id;
	char			*config_id;
	int64_t			 repeat;
	char			*run_dir;	/* NULL for a missing run */
	char			*state;		/* the database's state name */
	char			*reason;	/* database, else status.json; "" when none */
	enum report_class	 cls;
	size_t			 config;	/* index in report.configs */
	struct metrics		 m;
	int64_t			 attempts;	/* cadred's count, else m.nstarts */
	double			 throughput;	/* metrics_throughput() */
	int			 has_metrics;
	double			 stage_seconds;	/* status.json's; NAN: no staging */
};

struct report_config {
	char		*id;
	const struct spec_run *run;	/* its first run in the plan */
	char		**values;	/* per varied key, as a spec writes it */
	int64_t		 nodes, gpus_per_node, gpus, ranks, batch, global_batch;
	const char	*precision;
	const char	*task;
	size_t		 count[REPORT_CLASS_COUNT];
	size_t		 nruns;
	size_t		 nthroughput;	/* done runs with a throughput */
	double		 median, mean, min, max;
	size_t		 baseline;	/* index; SIZE_MAX: none */
	double		 speedup, efficiency;
	double		 time_to_train;	/* median elapsed_s at the last step */
	double		 loss;		/* median final loss */
	double		 accuracy;	/* median accuracy of the last eval */
	int64_t		 peak_rss;	/* largest; -1: none */
	size_t		 group;
};

/* A DLPerf-style table: the configurations that differ only in their
 * resources, by total ranks. */
struct report_group {
	char		*title;		/* "batch 32, fp32" (+ other values) */
	char		*slug;		/* for file names: "b32-fp32" */
	size_t		*configs;	/* sorted by ranks, then nodes */
	size_t		 n;
	size_t		 baseline;	/* index in report.configs */
};

struct report {
	char			*exp_id;
	char			*name;
	char			*spec_file;
	struct spec		*spec;
	struct spec_plan	*plan;
	int			 has_baseline;	/* report.baseline in the spec */
	struct report_config	*configs;
	size_t			 nconfigs;
	struct report_run	*runs;
	size_t			 nruns, capruns;
	struct report_group	*groups;
	size_t			 ngroups;
	size_t			 count[REPORT_CLASS_COUNT];
	json_t			*env;	/* key -> sorted array of distinct values */
	struct diags		 warnings;
	size_t			*by_id;	/* plan indexes sorted by run id */
	unsigned char		*added;	/* per plan index: report_add_run() had it */
};

/*
 * Starts a report from an experiment's stored spec. CADRE_ERR_INVALID when
 * the spec does not parse (its errors in d).
 */
int report_new(const char *exp_id, const char *name, const char *spec_file,
    const char *spec_text, struct diags *d, struct report **out);
/* Adds one run (its id, directory, state, the reason cadred recorded,
 * NULL or "" for none, and the attempts it recorded, -1 when unknown:
 * then the attempts that logged a start), reading its run directory. A
 * run id the spec does not plan is a warning, and is left out. */
int report_add_run(struct report *r, const char *run_id, const char *run_dir,
    enum run_state state, const char *reason, int64_t attempts);
/* Planned runs not added become missing; computes every figure. */
void report_finish(struct report *r);
void report_free(struct report *r);

/*
 * Reads a run's eval.jsonl (`cadre-train eval --run-dir`, bounded like
 * cadred reads it) into the figures of m's marks, by step. Bad lines are
 * warnings "PATH:LINE: ..." in d. CADRE_ERR_NOT_FOUND: no file.
 */
int metrics_load_eval(struct metrics *m, const char *path, struct diags *d);

/* A figure over the repeats. NAN when no run has one. */
struct report_spread {
	double	median, min, max;
	size_t	n;
};

/* One configuration at a training time (cadre report --at). */
struct report_at_row {
	size_t			config;		/* index in report.configs */
	size_t			nruns;		/* its runs */
	size_t			nmark;		/* of them with a checkpoint at the time */
	struct report_spread	steps, samples, sps, accuracy, loss;
	/* against the configuration's baseline (NAN: none, or no figure):
	 * medians' ratios, and the accuracies' difference */
	double			vs_steps, vs_samples, vs_sps, vs_accuracy;
};

/* The table at seconds of training time, a row per configuration (every
 * run that has a timed checkpoint due then counts, whatever its state):
 * *rows (caller frees), *n = r->nconfigs. */
void report_at(const struct report *r, double seconds,
    struct report_at_row **rows, size_t *n);
/* The marks any run of configuration ci has, ascending: *out (caller
 * frees). */
size_t report_marks(const struct report *r, size_t ci, double **out);

/* One configuration present in two reports (matched by its values). */
struct report_match {
	size_t	a, b;		/* config indexes */
	double	change;		/* (median b - median a) / median a; NAN */
	int	outside;	/* the min..max ranges of the two do not overlap */
};
/* Configurations of a found in b; *n may be 0. */
void report_compare(const struct report *a, const struct report *b,
    struct report_match **out, size_t *n);

/* Everything, for --format json. */
json_t *report_json(const struct report *r);

#endif
