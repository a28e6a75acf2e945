/* train.json: the settings of `cadre-train train` (docs/contracts.md,
 * docs/trainer.md), read with the bounded tjson reader. */
#ifndef CADRE_TRAINCFG_H
#define CADRE_TRAINCFG_H

#include <stddef.h>
#include <stdint.h>

#include "optim.h"

/* The largest train.json read. */
#define TRAINCFG_MAX_BYTES	(1024 * 1024)
#define TRAINCFG_VERSION	1

enum train_task { TASK_PRETRAIN = 0, TASK_MLM = 1, TASK_CLASSIFY = 2 };
enum train_precision { PREC_FP32 = 0, PREC_BF16 = 1, PREC_FP16 = 2 };
/* auto: cuda for bf16/fp16, or when built with CUDA and a GPU is visible;
 * else cpu (docs/gpu.md). */
enum train_device { DEV_AUTO = 0, DEV_CPU = 1, DEV_CUDA = 2 };

struct train_config {
	int			 version;
	char			*model;		/* a preset name, or NULL: dims */
	int			 layers, hidden, heads, intermediate;
	int			 vocab_size, max_position;
	enum train_task		 task;
	char			*data, *eval_data, *vocab, *init;	/* NULL: none */
	int			 seq_len, batch_size, grad_accum;
	int64_t			 steps;
	enum train_precision	 precision;
	enum train_device	 device;	/* optional key; default auto */
	enum optim_kind		 optimizer;
	double			 lr, weight_decay, beta1, beta2, eps;
	double			 warmup;	/* a fraction of steps */
	enum lr_schedule	 schedule;
	double			 power;
	double			 grad_clip;
	int			 grad_checkpointing;
	double			 dropout;
	double			 checkpoint_every;	/* seconds; 0: at the end only */
	int			 keep_checkpoints;
	int			 keep_timed;	/* the rotation spares timed ones */
	int			 log_every;
	uint64_t		 seed;
	int64_t			 skip_steps;
	char			*out;
	char			*resume;	/* "auto", "none" or a checkpoint dir */
};

void traincfg_defaults(struct train_config *c);
void traincfg_free(struct train_config *c);
/* Parses train.json text (name is for messages) over c: every key it has
 * replaces c's value. Unknown keys, wrong types, values out of range and a
 * version above TRAINCFG_VERSION are refused, with the file, the key and
 * what was expected in err. */
int traincfg_parse(struct train_config *c, const char *text, size_t len,
    const char *name, char *err, size_t errlen);
/* traincfg_parse of a file of at most TRAINCFG_MAX_BYTES. */
int traincfg_load(struct train_config *c, const char *path, char *err,
    size_t errlen);
/* The checks across keys (seq_len within the model's positions, ...). */
int traincfg_check(const struct train_config *c, char *err, size_t errlen);
/* Paths that start with $NAME or ${NAME} (data, eval_data, vocab, init,
 * out, resume) get the variable's value from the environment, as the spec
 * allows (docs/spec.md "path"): 0, or CADRE_ERR_INVALID naming the key and
 * the variable in err. */
int traincfg_expand_paths(struct train_config *c, char *err, size_t errlen);

const char *traincfg_task_name(enum train_task t);
const char *traincfg_precision_name(enum train_precision p);

#endif
