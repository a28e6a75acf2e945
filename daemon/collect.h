/*
 * The timed checkpoints of a run into cadred's database (docs/contracts.md,
 * docs/daemon.md "Timed checkpoints"): the trainer writes
 * RUN_DIR/checkpoints/step-N/ with a meta.json that carries "due_s" (the
 * multiple of checkpoint_every of training time it stands for), and
 * `cadre-train eval --run-dir` appends RUN_DIR/eval.jsonl. collect_run()
 * records each timed checkpoint once its files match meta.json's
 * SHA-256 sums, and the eval figures of each recorded one.
 *
 * Both files come from a job, that is from outside: they are read with
 * size bounds, and a bad one is a warning naming the file (and line),
 * never a crash.
 */
#ifndef CADRE_COLLECT_H
#define CADRE_COLLECT_H

#include <stddef.h>
#include <stdint.h>

struct state;

#define COLLECT_META_MAX	((size_t)1 << 16)	/* bytes of a meta.json */
#define COLLECT_FILES_MAX	8	/* files one meta.json may list */
#define COLLECT_STEPS_MAX	100000	/* checkpoint dirs looked at per run */

/* What meta.json says of one checkpoint. */
struct collect_meta {
	int64_t	 step;
	double	 due_s;		/* < 0: not a timed checkpoint */
	double	 elapsed_s;
	int64_t	 samples;
	size_t	 nfiles;
	char	 file[COLLECT_FILES_MAX][64];	/* plain names */
	char	 sha256[COLLECT_FILES_MAX][65];	/* lower-case hex */
};

/* Parses meta.json text (len bytes): 0, or CADRE_ERR_PARSE /
 * CADRE_ERR_INVALID / CADRE_ERR_TOO_LARGE with the reason in msg. */
int collect_parse_meta(const char *text, size_t len, struct collect_meta *m,
    char *msg, size_t msglen);

/* 0 when every file m lists under dir has its SHA-256, else the first
 * difference in msg: CADRE_ERR_IO for another SHA-256, CADRE_ERR_SYSTEM
 * for a file that cannot be read. */
int collect_verify(const char *dir, const struct collect_meta *m, char *msg,
    size_t msglen);

/* Records run_id's timed checkpoints under run_dir not yet in st (attempt:
 * the run's current attempt), and the eval figures of eval.jsonl. *added
 * (when not NULL) counts the new ones. 0, or CADRE_ERR_IO from the
 * database; a bad file is a warning. */
int collect_run(struct state *st, const char *run_id, const char *run_dir,
    int64_t attempt, int *added);

/* trainer.keep_timed "at" once the run is done: removes the recorded timed
 * checkpoints whose due_s is not among at (decimal seconds), except the
 * one `latest` names, and marks them removed. *removed counts them. */
int collect_thin(struct state *st, const char *run_id, const char *run_dir,
    char *const *at, size_t nat, int *removed);

#endif
