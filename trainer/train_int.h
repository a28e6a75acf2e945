/*
 * What the parts of `cadre-train train` share: train_args.c (the command
 * line and train.json), train_setup.c (the model, the data, the device,
 * the resume) and train.c (the step loop). Nothing else includes this
 * (train.h is the interface).
 */
#ifndef CADRE_TRAIN_INT_H
#define CADRE_TRAIN_INT_H

#include <stdint.h>

#include "checkpoint.h"
#include "dist.h"
#include "loader.h"
#include "model.h"
#include "optim.h"
#include "traincfg.h"

struct gpu_trainer;
struct metrics_writer;

/* The flags that are not train.json's. */
struct run_opts {
	int	threads;
	int64_t	stop_after;
	int64_t	min_step_ms;
	int	quiet;
};

/* What the parts of `train` share. */
struct run {
	struct train_config	 tc;
	struct run_opts		 ro;
	struct dist		 d;
	struct loader_config	 lc;
	struct loader		*l;
	struct bert_config	 c;
	struct bert_model	 m;
	struct optim		 o;
	struct ckpt_state	 st;	/* the counters after the last step */
	struct ckpt_writer	*w;	/* rank 0 */
	struct metrics_writer	*mx;	/* rank 0 */
	char			*resumed;	/* the checkpoint resumed from */
	int			 B, A, T, mlm;
	int64_t			 gB;	/* sequences per optimizer step, all ranks */
	int			 cuda;	/* the step runs on the GPU (docs/gpu.md) */
	int			 ncclenv;	/* ranks from WORLD_SIZE/RANK, not MPI */
	struct gpu_trainer	*gpu;
	int64_t			 skipped;	/* fp16 steps skipped (inf/NaN) */
	int			 ckpt_failures;	/* checkpoint writes failed in a row */
};

/* train.json first (wherever --config stands), then the flags over it
 * (train_args.c). */
void parse_train_args(int argc, char **argv, struct train_config *tc,
    struct run_opts *ro);

/* train_setup.c, in the order cmd_train calls them. */
void run_open(struct run *r, int argc, char **argv);
void run_gpu_open(struct run *r);
void run_resume(struct run *r);
void run_gpu_upload(struct run *r);

/* train.c: an "error" line of kind (none with mx NULL); rank 0's values
 * to every rank. */
void mx_error(struct metrics_writer *mx, const char *kind, const char *msg);
void run_bcast_i64(struct run *r, int64_t *x, int n);

#endif
