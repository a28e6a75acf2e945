/*
 * Training checkpoints: OUT/checkpoints/step-N/ with model.safetensors and
 * config.json (Hugging Face's), trainer_state.safetensors (optimizer
 * moments, counters, data position) and meta.json (counters and the
 * SHA-256 of each file), and OUT/checkpoints/latest naming the newest.
 * Written by a thread from a snapshot, so that the step loop goes on;
 * read back with every checksum verified (docs/trainer.md "Checkpoints").
 */
#ifndef CADRE_CHECKPOINT_H
#define CADRE_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "optim.h"

/* Checkpoint writes failed in a row that end a run (TRAIN_EXIT_IO). */
#define CKPT_MAX_FAILURES	3

/* The largest meta.json read. */
#define CKPT_META_MAX	(64 * 1024)
#define CKPT_VERSION	1

/* The counters a checkpoint holds beside the weights and moments. */
struct ckpt_state {
	int64_t		step;		/* optimizer steps taken */
	int64_t		samples;	/* sequences trained on, all ranks */
	double		elapsed_s;	/* training wall time, all attempts */
	uint64_t	epoch;		/* the loader's position */
	uint64_t	consumed;
	uint64_t	seed;
	float		loss_scale;	/* 1 in fp32 */
	double		wall_time;	/* UNIX time it was taken */
	/* The timed mark it stands for: a multiple of checkpoint_every of
	 * elapsed_s (docs/contracts.md); 0: none. Only in meta.json. */
	double		due_s;
};

/* What a finished write reports. */
struct ckpt_result {
	int64_t		step;
	double		elapsed_s;
	int64_t		samples;
	char		reason[16];	/* timed, signal, final */
	double		due_s;		/* as in ckpt_state */
	double		stall_ms;	/* the step loop held by ckpt_submit */
	double		write_ms;
	uint64_t	bytes;
	int		error;		/* 0, or a negative cadre_err */
	char		message[512];	/* when error */
};

struct ckpt_writer;

/* A writer for OUT/checkpoints keeping the newest keep, its snapshot
 * buffers for nparams parameters allocated now. The environment variable
 * CADRE_TRAIN_TEST_SLOW_WRITE=MS makes it sleep MS between files (tests
 * kill it mid-write). */
int ckpt_writer_new(const char *out, int keep, size_t nparams,
    struct ckpt_writer **wp, char *err, size_t errlen);
/* From now on the rotation keeps every checkpoint that has a due_s (a
 * timed one) besides the newest keep (train.json's keep_timed). */
void ckpt_writer_keep_timed(struct ckpt_writer *w);
/* From now on each checkpoint holds the vocab.txt at path (read now) and a
 * tokenizer_config.json (docs/trainer.md "Checkpoints"); a file over
 * TOK_VOCAB_MAX_FILE is an error. */
int ckpt_writer_vocab(struct ckpt_writer *w, const char *path, char *err,
    size_t errlen);
/*
 * Copies the parameters, moments and st into the writer's buffer and
 * starts writing them; first waits for the write in flight, if any. *done
 * is set when that earlier write finished during the wait (its result in
 * *prev). *stall_ms: how long this call held the caller.
 */
void ckpt_submit(struct ckpt_writer *w, const struct bert_model *m,
    const struct optim *o, const struct ckpt_state *st, const char *reason,
    double *stall_ms, int *done, struct ckpt_result *prev);
/* 1 with the result of a write that finished (once per write), else 0;
 * with wait, blocks until the write in flight is done (0 when none). */
int ckpt_collect(struct ckpt_writer *w, int wait, struct ckpt_result *r);
void ckpt_writer_free(struct ckpt_writer *w);

/* Writes a checkpoint synchronously (the writer thread's work). */
int ckpt_write(const char *out, int keep, const struct bert_model *m,
    const float *params, const float *mom1, const float *mom2,
    const struct ckpt_state *st, uint64_t *bytes, char *err, size_t errlen);

/*
 * The checkpoint to resume from under out: the one `latest` names, then
 * every step-N newest first, the first that verifies (checksums, sizes).
 * Those that do not are warned about, and renamed .corrupt-step-N when an
 * older one verifies. 0 with
 * *dirp NULL: none present (start fresh). CADRE_ERR_IO: some present, none
 * valid (err says why). CADRE_ERR_INVALID: a valid one of another model
 * size (err names both). skipped (unless NULL) is told of each one passed
 * over, with the reason.
 */
typedef void (*ckpt_skip_fn)(void *ctx, int64_t step, const char *why);
int ckpt_find(const char *out, const struct bert_config *cfg, char **dirp,
    ckpt_skip_fn skipped, void *ctx, char *err, size_t errlen);
/* What a killed writer leaves under OUT/checkpoints: .tmp-step-N
 * directories are removed; a .old-step-N (set aside while its step-N was
 * replaced) is put back when step-N is missing, else removed. */
void ckpt_cleanup(const char *out);
/* Reads and parses dir/meta.json (ckpt_meta_parse): 0, or CADRE_ERR_IO
 * with the reason in err. */
int ckpt_read_meta(const char *dir, struct ckpt_state *st, char sums[3][65],
    char *err, size_t errlen);
/* Checks dir's files against its meta.json and its model against cfg. */
int ckpt_verify(const char *dir, const struct bert_config *cfg,
    struct ckpt_state *st, char *err, size_t errlen);
/* Loads a verified checkpoint into m, o (moments and step) and st. */
int ckpt_load(const char *dir, struct bert_model *m, struct optim *o,
    struct ckpt_state *st, char *err, size_t errlen);

/* Parses meta.json text: the counters into st and each file's SHA-256
 * (64 hex digits) into sums (model.safetensors, config.json,
 * trainer_state.safetensors, in that order). */
int ckpt_meta_parse(const char *text, size_t len, const char *name,
    struct ckpt_state *st, char sums[3][65], char *err, size_t errlen);

#endif
