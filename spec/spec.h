/*
 * The experiment spec, language version 1 (docs/spec.md): a YAML file that
 * names an experiment, its scheduler, resources, container, and what
 * runs (cadre's trainer and its settings, or the user's own program), and
 * a matrix of values to sweep. spec_parse() checks all of it
 * and reports every problem into a diagnostics list in one pass;
 * spec_expand() turns a valid spec into its runs.
 *
 * Every key lives in one table (spec_keys.c), indexed by enum spec_key:
 * validation, defaults, run ids, `cadre keys` and docs/spec.md derive from it.
 *
 * This is all that code outside spec/ may use. The files of spec/ share
 * their internals through spec_yaml.h, spec_int.h, spec_check.h and
 * spec_matrix.h, in that order, each including only those before it.
 */
#ifndef CADRE_SPEC_H
#define CADRE_SPEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "diag.h"

#define SPEC_VERSION		1
#define SPEC_MAX_BYTES		((size_t)1 << 20)	/* 1 MiB */
#define SPEC_MAX_DEPTH		32	/* nesting of mappings and lists */
#define SPEC_MAX_NODES		1000000	/* YAML nodes, aliases expanded */
#define SPEC_MAX_RUNS		10000	/* configurations x repeats */
#define SPEC_MAX_MATRIX_KEYS	32
#define SPEC_MAX_LIST		256	/* items of a list-valued key */
#define SPEC_MAX_PATH		4096	/* bytes */
#define SPEC_MAX_WORD		256	/* bytes of a scheduler word */
#define SPEC_MAX_TEXT		65536	/* bytes of free text */
#define SPEC_ID_LEN		12	/* hex digits of a run or config id */

/* Keys in table order: docs, `cadre keys` and run ids follow it. */
enum spec_key {
	SPEC_K_VERSION = 0,
	SPEC_K_NAME,
	SPEC_K_DESCRIPTION,
	SPEC_K_AFTER,
	SPEC_K_ENV,
	SPEC_K_SETUP,

	SPEC_K_SCHED_BACKEND,
	SPEC_K_SCHED_PARTITION,
	SPEC_K_SCHED_ACCOUNT,
	SPEC_K_SCHED_QOS,
	SPEC_K_SCHED_TIME_LIMIT,
	SPEC_K_SCHED_SIGNAL_GRACE,
	SPEC_K_SCHED_MAX_CONCURRENT,
	SPEC_K_SCHED_EXTRA,
	SPEC_K_SCHED_SRUN_EXTRA,
	SPEC_K_SCHED_CONSTRAINT,
	SPEC_K_SCHED_RESERVATION,
	SPEC_K_SCHED_REST_URL,
	SPEC_K_SCHED_REST_TOKEN_ENV,

	SPEC_K_RES_NODES,
	SPEC_K_RES_GPUS_PER_NODE,
	SPEC_K_RES_RANKS_PER_NODE,
	SPEC_K_RES_CPUS_PER_RANK,
	SPEC_K_RES_MEMORY,
	SPEC_K_RES_GPU_TYPE,
	SPEC_K_RES_EXCLUSIVE,

	SPEC_K_CONTAINER_RUNTIME,
	SPEC_K_CONTAINER_IMAGE,
	SPEC_K_CONTAINER_BINDS,

	SPEC_K_AGENT_PORT,
	SPEC_K_AGENT_STARTUP_TIMEOUT,

	SPEC_K_LAUNCHER,
	SPEC_K_STAGE_TO,
	SPEC_K_STAGE_FROM,

	SPEC_K_MODEL,
	SPEC_K_MODEL_LAYERS,
	SPEC_K_MODEL_HIDDEN,
	SPEC_K_MODEL_HEADS,
	SPEC_K_MODEL_INTERMEDIATE,
	SPEC_K_MODEL_VOCAB_SIZE,
	SPEC_K_MODEL_MAX_POSITION,

	SPEC_K_TASK,
	SPEC_K_DATA,
	SPEC_K_EVAL_DATA,
	SPEC_K_VOCAB,
	SPEC_K_INIT,
	SPEC_K_INIT_FROM,
	SPEC_K_INIT_CONFIG,
	SPEC_K_INIT_AT,
	SPEC_K_SEQ_LEN,
	SPEC_K_BATCH_SIZE,
	SPEC_K_GRAD_ACCUM,
	SPEC_K_STEPS,
	SPEC_K_PRECISION,
	SPEC_K_OPT_NAME,
	SPEC_K_OPT_LR,
	SPEC_K_OPT_WEIGHT_DECAY,
	SPEC_K_OPT_BETA1,
	SPEC_K_OPT_BETA2,
	SPEC_K_OPT_EPS,
	SPEC_K_OPT_WARMUP,
	SPEC_K_OPT_SCHEDULE,
	SPEC_K_OPT_POWER,
	SPEC_K_GRAD_CLIP,
	SPEC_K_GRAD_CHECKPOINTING,
	SPEC_K_DROPOUT,
	SPEC_K_CHECKPOINT_EVERY,
	SPEC_K_KEEP_CHECKPOINTS,
	SPEC_K_KEEP_TIMED,
	SPEC_K_LOG_EVERY,
	SPEC_K_SEED,

	SPEC_K_PROG_COMMAND,
	SPEC_K_PROG_LAUNCH,
	SPEC_K_PROG_WORKDIR,
	SPEC_K_PROG_ENV,
	SPEC_K_PROG_VARS,
	SPEC_K_PROG_SIGNAL,
	SPEC_K_PROG_CHECKPOINT_EVERY,
	SPEC_K_PROG_KEEP_CHECKPOINTS,
	SPEC_K_PROG_METRICS_REGEX,
	SPEC_K_PROG_SETUP,

	SPEC_K_MEASURE_SKIP_STEPS,

	SPEC_K_CKPT_EVAL_DATA,
	SPEC_K_CKPT_EVAL_BATCH,
	SPEC_K_CKPT_EVAL_AT,

	SPEC_K_REPEATS,
	SPEC_K_MATRIX,
	SPEC_K_EXCLUDE,
	SPEC_K_INCLUDE,

	SPEC_K_RETRIES_MAX,
	SPEC_K_RETRIES_ON,
	SPEC_K_RETRIES_BACKOFF,

	SPEC_K_NOTIFY_WEBHOOK,
	SPEC_K_NOTIFY_ON,

	SPEC_K_REPORT_BASELINE,

	SPEC_KEY_COUNT
};

enum spec_type {
	SPEC_T_INT = 0,		/* decimal integer in [min, max] */
	SPEC_T_FLOAT,		/* number in [fmin, fmax] (ends open by flags) */
	SPEC_T_BOOL,		/* true | false */
	SPEC_T_TEXT,		/* free text, at most max bytes */
	SPEC_T_NAME,		/* [A-Za-z0-9._-]{1,64} */
	SPEC_T_ENUM,		/* one of values[] */
	SPEC_T_DURATION,	/* duration_parse(), seconds in [min, max] */
	SPEC_T_SIZE,		/* size_parse() with a unit, bytes in [min, max] */
	SPEC_T_PATH,		/* file system path, see docs/spec.md */
	SPEC_T_WORD,		/* one scheduler argument word */
	SPEC_T_ENV,		/* environment variable name */
	SPEC_T_URL,		/* http://, https:// or unix:/// */
	SPEC_T_WORDS,		/* list of SPEC_T_WORD, at most max items */
	SPEC_T_PATHS,		/* list of SPEC_T_PATH */
	SPEC_T_ENUMS,		/* list of distinct values[] */
	SPEC_T_DURATIONS,	/* list of distinct SPEC_T_DURATION, kept as
				 * decimal seconds ("1200") */
	SPEC_T_MODEL,		/* a preset from values[], or a mapping of dims */
	SPEC_T_MATRIX,		/* dotted key -> list of values */
	SPEC_T_EXCLUDE,		/* list of {dotted key: value} */
	SPEC_T_INCLUDE,		/* list of {dotted key: value} */
	SPEC_T_ASSIGN,		/* {dotted key: value} (report.baseline) */
	SPEC_T_COMMAND,		/* a list of words, or a string for sh -c */
	SPEC_T_TEXTS,		/* list of non-empty SPEC_T_TEXT */
	SPEC_T_VARS,		/* mapping of names to values, kept as text */
	SPEC_T_ENVS,		/* mapping of variable names to values, as text */
	SPEC_T_REGEX		/* PCRE2 pattern with named groups (metrics) */
};

#define SPEC_F_REQUIRED		0x01	/* must be given (model dims: when model is a mapping) */
#define SPEC_F_MATRIX		0x02	/* may vary under matrix and include */
#define SPEC_F_NOID		0x04	/* does not change what a run does: not in run ids */
#define SPEC_F_MIN_OPEN		0x08	/* SPEC_T_FLOAT: fmin itself is excluded */
#define SPEC_F_MAX_OPEN		0x10	/* SPEC_T_FLOAT: fmax itself is excluded */
#define SPEC_F_MATRIX_NAMES	0x20	/* SPEC_T_VARS: each entry may vary under
					 * matrix and include, as KEY.NAME */

struct spec_key_info {
	const char		*path;		/* dotted: "trainer.batch_size" */
	enum spec_type		 type;
	unsigned		 flags;
	int64_t			 min, max;	/* ints, seconds, bytes; list length; text bytes */
	double			 fmin, fmax;
	const char *const	*values;	/* enums, NULL-terminated */
	const char		*def;		/* default as a spec writes it; lists comma-separated; NULL: unset */
	const char		*doc;		/* one line */
};

/* The table entry of k; k must be a valid key. */
const struct spec_key_info *spec_key_info(enum spec_key k);
/* The last component of k's dotted path ("batch_size" of
 * trainer.batch_size), for column titles. */
const char *spec_key_leaf(enum spec_key k);
/* The key with that dotted path, or -1. */
int spec_key_lookup(const char *path);
/* "integer", "duration", "list of words", ... */
const char *spec_type_name(enum spec_type t);
/* The allowed values of k for docs: "1..4096", "fp32, bf16, fp16",
 * "1m..365d"; "" when there is nothing to say. Caller frees. */
char *spec_key_range_text(enum spec_key k);

enum spec_keys_format {
	SPEC_KEYS_TEXT = 0,	/* aligned columns for a terminal */
	SPEC_KEYS_MARKDOWN	/* the table in docs/spec.md */
};
void spec_keys_write(FILE *fp, enum spec_keys_format fmt);

/* Dimensions of a BERT model, from a preset or an explicit mapping. */
struct spec_model_dims {
	int64_t	layers, hidden, heads, intermediate, vocab_size, max_position;
};

struct spec;
struct spec_plan;
struct spec_run;

/*
 * Parses and checks a spec (len bytes of text; filename names it in
 * diagnostics, and relative paths in it resolve against its directory).
 * Every problem goes into d, errors and warnings; the whole matrix is
 * expanded and each configuration checked, so a spec that parses expands.
 * Returns 0 and *out, or CADRE_ERR_INVALID (errors in d) with *out NULL.
 */
int spec_parse(const char *filename, const char *text, size_t len,
    struct diags *d, struct spec **out);
/* Reads path ("-": stdin) with the SPEC_MAX_BYTES bound, then spec_parse().
 * A file that cannot be read is an error in d, like a syntax error. */
int spec_load(const char *path, struct diags *d, struct spec **out);
/* The runs of a parsed spec, configuration-major, repeats innermost.
 * The plan borrows from s: free it first. d gets nothing for a spec that
 * spec_parse() accepted; it is there for symmetry. */
int spec_expand(const struct spec *s, struct diags *d, struct spec_plan **out);
void spec_free(struct spec *s);
void spec_plan_free(struct spec_plan *p);

const char *spec_file(const struct spec *s);	/* the filename given */
const char *spec_dir(const struct spec *s);	/* where relative paths resolve */
/* path as a job must use it: absolute and "$VAR/..." paths unchanged,
 * relative ones joined to spec_dir(). Caller frees. */
char *spec_resolve_path(const struct spec *s, const char *path);
int64_t spec_repeats(const struct spec *s);
size_t spec_nconfigs(const struct spec *s);
/* Keys that vary between configurations: the matrix keys in order, then
 * keys set only by include entries. */
size_t spec_nvaried(const struct spec *s);
enum spec_key spec_varied(const struct spec *s, size_t i);
/* The names of program.vars that vary (matrix order, then those that
 * only include entries set): under the one varied key SPEC_K_PROG_VARS,
 * whose value spec_run_format() writes as "NAME=VALUE, ...". */
size_t spec_nvaried_vars(const struct spec *s);
const char *spec_varied_var(const struct spec *s, size_t i);
/* Whether the spec runs the user's own program (a program section, with
 * program.json) rather than cadre's trainer (a trainer section). */
int spec_is_program(const struct spec *s);
/* report.baseline: whether the spec names a baseline, and whether
 * configuration config (0-based, as spec_run_config()) has every value it
 * names. */
int spec_has_baseline(const struct spec *s);
int spec_baseline_matches(const struct spec *s, size_t config);

/*
 * Values outside any run (the base every configuration starts from). The
 * typed getters abort on a key of another type: ints take SPEC_T_INT,
 * DURATION (seconds) and SIZE (bytes); doubles take FLOAT and INT; strings
 * take TEXT, NAME, ENUM, PATH, WORD, ENV, URL, REGEX and MODEL ("custom"
 * for a mapping); lists take WORDS, PATHS, ENUMS, DURATIONS (decimal
 * seconds) and TEXTS; pairs take VARS and ENVS. A COMMAND is a string in
 * its sh -c form (NULL as words) and a list as words (empty as a string).
 * Unset strings are NULL.
 */
int spec_is_set(const struct spec *s, enum spec_key k);
/* Where the spec wrote k's base value (1-based); 0, 0 when it did not
 * (a default), for diagnostics of later checks. */
void spec_key_at(const struct spec *s, enum spec_key k, size_t *line,
    size_t *col);
int64_t spec_get_int(const struct spec *s, enum spec_key k);
double spec_get_double(const struct spec *s, enum spec_key k);
int spec_get_bool(const struct spec *s, enum spec_key k);
const char *spec_get_string(const struct spec *s, enum spec_key k);
char *const *spec_get_list(const struct spec *s, enum spec_key k, size_t *n);

size_t spec_plan_nruns(const struct spec_plan *p);
size_t spec_plan_nconfigs(const struct spec_plan *p);
const struct spec *spec_plan_spec(const struct spec_plan *p);
const struct spec_run *spec_plan_run(const struct spec_plan *p, size_t i);
/* The keys whose values differ between two plans, compared run by run
 * for the runs both have (by id): fn gets each such key once, with the
 * values as a spec writes them (a run's, "" when unset) in a and in b.
 * Returns how many keys differ. Keys the run values do not cover (the
 * matrix, include and exclude lists) are compared through what they
 * produce. */
size_t spec_plan_diff(const struct spec_plan *a, const struct spec_plan *b,
    void (*fn)(void *ctx, enum spec_key k, const char *va, const char *vb),
    void *ctx);
/* The keys whose base values (before the matrix) differ between two
 * specs, keys varied in either left out (their values are the
 * configurations'): fn as spec_plan_diff's. Returns how many. */
size_t spec_diff(const struct spec *a, const struct spec *b,
    void (*fn)(void *ctx, enum spec_key k, const char *va, const char *vb),
    void *ctx);
/* Upper bound of GPU time: the sum over runs of total GPUs x time limit. */
int64_t spec_plan_gpu_seconds(const struct spec_plan *p);

/* Ids: SPEC_ID_LEN lower-case hex digits of SHA-256 over the run's
 * resolved values (docs/spec.md, "Run ids"). */
const char *spec_run_id(const struct spec_run *r);
const char *spec_run_config_id(const struct spec_run *r);
size_t spec_run_config(const struct spec_run *r);	/* 0-based index */
unsigned spec_run_repeat(const struct spec_run *r);	/* 1-based */

/* A run's resolved values, with the same typing as spec_get_*. Model
 * dimensions resolve from the preset when trainer.model names one. */
int spec_run_is_set(const struct spec_run *r, enum spec_key k);
int64_t spec_run_int(const struct spec_run *r, enum spec_key k);
double spec_run_double(const struct spec_run *r, enum spec_key k);
int spec_run_bool(const struct spec_run *r, enum spec_key k);
const char *spec_run_string(const struct spec_run *r, enum spec_key k);
char *const *spec_run_list(const struct spec_run *r, enum spec_key k,
    size_t *n);
/* program.env and program.vars (the run's values, the matrix's included):
 * *n pairs, pairs[2i] a name and pairs[2i+1] its value, sorted by name. */
char *const *spec_run_pairs(const struct spec_run *r, enum spec_key k,
    size_t *n);
/* One of the run's program.vars, or NULL. */
const char *spec_run_var(const struct spec_run *r, const char *name);
/* The value as a spec would write it ("1h", "64GiB", "bf16", "0.0001");
 * "" when unset. Caller frees. */
char *spec_run_format(const struct spec_run *r, enum spec_key k);
void spec_run_model(const struct spec_run *r, struct spec_model_dims *m);

/* Derived: ranks per node (0 resolved: one per GPU, or 1 without GPUs),
 * nodes x that, nodes x GPUs per node, and batch_size x grad_accum x ranks. */
int64_t spec_run_ranks_per_node(const struct spec_run *r);
int64_t spec_run_ranks(const struct spec_run *r);
int64_t spec_run_total_gpus(const struct spec_run *r);
int64_t spec_run_global_batch(const struct spec_run *r);

#endif
