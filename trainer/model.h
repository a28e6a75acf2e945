/* BERT (post-LN, as Hugging Face's BertForPreTraining and
 * BertForSequenceClassification) in fp32 on the CPU: configurations, the
 * parameter table, forward and backward. */
#ifndef CADRE_MODEL_H
#define CADRE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "philox.h"

enum bert_task { BERT_PRETRAIN = 0, BERT_CLASSIFY = 1 };

struct bert_config {
	int		layers;		/* L */
	int		hidden;		/* H */
	int		heads;		/* nh; divides H */
	int		intermediate;	/* I */
	int		vocab;		/* V */
	int		max_position;	/* P */
	int		type_vocab;	/* 2 */
	int		num_labels;	/* classification only */
	enum bert_task	task;
	float		ln_eps;
	float		hidden_dropout;
	float		attn_dropout;
	/* classification: num_labels names (the shards' labels.txt), borrowed;
	 * NULL: LABEL_0, LABEL_1, ... in config.json */
	char *const	*label_names;
};

/* bert-tiny ... bert-large into c (vocab 30522, 512 positions, 2 token
 * types, dropout 0.1): 0, or CADRE_ERR_NOT_FOUND. */
int bert_config_preset(const char *name, struct bert_config *c);
/* 0, or CADRE_ERR_INVALID with the reason ("heads (3) do not divide
 * hidden (128)") in err. */
int bert_config_check(const struct bert_config *c, char *err, size_t errlen);
extern const char *const bert_preset_names[];

struct bert_layer_params {
	float *qw, *qb, *kw, *kb, *vw, *vb;	/* (H,H), (H) */
	float *aow, *aob;			/* (H,H), (H) */
	float *aln_w, *aln_b;			/* (H) */
	float *iw, *ib;				/* (I,H), (I) */
	float *ow, *ob;				/* (H,I), (H) */
	float *oln_w, *oln_b;			/* (H) */
};

struct bert_params {
	float *wte;			/* (V,H), tied to the MLM decoder */
	float *wpe;			/* (P,H) */
	float *wtt;			/* (2,H) */
	float *eln_w, *eln_b;		/* (H) */
	struct bert_layer_params *layer;	/* L of them */
	float *pool_w, *pool_b;		/* (H,H), (H) */
	/* pretraining heads */
	float *tr_w, *tr_b;		/* (H,H), (H) */
	float *tr_ln_w, *tr_ln_b;	/* (H) */
	float *dec_b;			/* (V) */
	float *nsp_w, *nsp_b;		/* (2,H), (2) */
	/* classification head */
	float *cls_w, *cls_b;		/* (C,H), (C) */
};

/* One row of the parameter table: where a tensor lives in the one
 * allocation, its Hugging Face name and shape. */
struct param_info {
	char	name[96];
	int	ndim;		/* 1 or 2 */
	int64_t	shape[2];
	size_t	offset;		/* in floats from the start */
	size_t	numel;
	int	decay;		/* weight decay and LAMB trust ratio apply */
};

struct layer_acts;

struct bert_acts {
	int		  B, T, M_cap;
	float		 *emb, *emb_mean, *emb_rstd, *emb_ln;	/* (N,H), (N), (N), (N,H) */
	float		**x;		/* L+1 of (N,H): x[0] embeddings, x[l+1] layer l's output */
	struct layer_acts *la;		/* L of them, or 1 with checkpointing */
	int		  nla;
	float		 *pin, *pool_pre, *pooled, *pooled_d;	/* (B,H) */
	float		 *seq_logits, *dseq_logits;		/* (B,2) or (B,C) */
	int		  M;		/* masked positions in this batch */
	int32_t		 *mpos, *mtarget;			/* (M) */
	float		 *hm, *t, *tg, *tl, *tmean, *trstd;	/* (M,H), (M) */
	float		 *mlm_logits, *dmlm_logits;		/* (M,V) */
	double		 *losses;	/* (max(M, B)) */
	/* gradient scratch */
	float		 *dxa, *dxb, *dr, *dh1, *dctx, *dq, *dk, *dv;	/* (N,H) */
	float		 *di, *dg;	/* (N,I) */
	float		 *dM1, *dM2, *dM3;	/* (M,H) */
	float		 *dB1, *dB2, *dB3;	/* (B,H) */
	float		 *demb;		/* (N,H) */
	size_t		  bytes;	/* allocated for activations and scratch */
};

/* One micro-batch: B sequences of T tokens (N = B*T). */
struct bert_batch {
	int		 B, T;
	const int32_t	*ids;		/* (B,T) */
	const int32_t	*types;		/* (B,T) */
	const int32_t	*mask;		/* (B,T): 1 token, 0 padding */
	const int32_t	*labels;	/* (B,T): MLM target or -100 */
	const int32_t	*seq_labels;	/* (B): NSP (0 is next) or class */
};

struct bert_model {
	struct bert_config	 cfg;
	struct param_info	*table;
	size_t			 ntensors;
	size_t			 nparams;	/* floats */
	float			*params_mem;	/* one allocation, carved by table */
	float			*grads_mem;	/* same layout */
	struct bert_params	 p, g;
	int			 grad_ckpt;
	uint64_t		 dropout_seed;
	struct bert_acts	 a;
	float			 loss, mlm_loss, seq_loss;
	double			 mlm_sum, seq_sum;	/* the summed cross-entropies */
};

/* Builds the table and the two allocations; parameters are zero. */
void bert_model_init(struct bert_model *m, const struct bert_config *c);
void bert_model_free(struct bert_model *m);
const struct param_info *bert_find_param(const struct bert_model *m, const char *name);

/* Hugging Face's initialisation (normal(0, std) weights, zero biases,
 * LayerNorm 1 and 0), from Philox keyed by seed; with random_all, biases
 * and LayerNorm get noise too (for tests: every parameter matters). */
void bert_init_weights(struct bert_model *m, uint64_t seed, float std, int random_all);

/*
 * Forward over one micro-batch: returns the loss (MLM mean over the
 * labelled positions + NSP mean, or the classification mean). micro_step
 * keys the dropout masks; train 0 turns dropout off. When grad_scale is
 * not 0 the logits' gradients (times grad_scale) are kept for
 * bert_backward.
 */
float bert_forward(struct bert_model *m, const struct bert_batch *b,
    uint64_t micro_step, int train, float grad_scale);
/*
 * The same with the losses' gradients scaled per labelled MLM position
 * (mlm_scale) and per sequence (seq_scale), for a loss that is a mean over
 * more than this micro-batch: 1 / (labelled positions of the global batch)
 * and 1 / (its sequences). The gradients are always kept. m->mlm_sum and
 * m->seq_sum get the summed cross-entropies.
 */
float bert_forward_scaled(struct bert_model *m, const struct bert_batch *b,
    uint64_t step, int train, float mlm_scale, float seq_scale);
/* Adds this micro-batch's gradients into m->grads_mem. */
void bert_backward(struct bert_model *m, const struct bert_batch *b,
    uint64_t micro_step, int train);
void bert_zero_grad(struct bert_model *m);

#endif
