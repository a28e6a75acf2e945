/*
 * The CUDA path of cadre-train (trainer/cuda/, docs/gpu.md), as the step
 * loop sees it. The model's parameters, gradients and optimizer moments
 * live on the device in the host's one-allocation layout (struct
 * param_info offsets), so a checkpoint is one copy away; forward and
 * backward mirror model.c operation by operation, dropout included
 * (the same Philox keying, docs/trainer.md).
 *
 * Built without CUDA (no HAVE_CUDA), every function below is a static
 * inline that returns CADRE_ERR_UNSUPPORTED (gpu_count: 0): the honest
 * answer of a build that has no GPU code, so that train.c compiles and
 * refuses --device cuda with a message.
 */
#ifndef CADRE_GPU_H
#define CADRE_GPU_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"
#include "model.h"
#include "optim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The order of enum train_precision (traincfg.h). */
enum gpu_precision { GPU_FP32 = 0, GPU_BF16 = 1, GPU_FP16 = 2 };

/* Bytes of an NCCL unique id (ncclUniqueId), broadcast by the caller. */
#define GPU_COMM_ID_BYTES	128

struct gpu_trainer;

/* What one micro-batch's forward and backward report (all summed in a
 * fixed order: the same bits every run). */
struct gpu_micro_out {
	double	mlm_sum;	/* summed MLM cross-entropies */
	double	seq_sum;	/* summed NSP / classification cross-entropies */
	double	mlm_correct;	/* labelled positions whose arg-max is the target */
	double	seq_correct;
	int	masked;		/* labelled positions in this micro-batch */
};

#ifdef HAVE_CUDA

/* Devices visible to this process; 0 when none (or no driver). */
int gpu_count(void);
/* The name of device dev ("NVIDIA H100 80GB HBM3"). */
int gpu_device_name(int dev, char *buf, size_t len);

/*
 * Sets device dev (one process per GPU: the local rank modulo the
 * devices), allocates parameters, gradients, moments and the activations
 * of a B x T micro-batch in the given precision (bf16/fp16: fp32 master
 * weights and a compute copy), with or without gradient checkpointing.
 * Nothing is uploaded yet (gpu_upload). CADRE_ERR_NOMEM when the device
 * memory does not suffice (err says how much was asked).
 */
int gpu_open(const struct bert_model *m, int B, int T, int precision,
    int grad_ckpt, int dev, struct gpu_trainer **gp, char *err, size_t errlen);
void gpu_close(struct gpu_trainer *g);

/* Parameters and moments (and the step count's loss scale) host -> device. */
int gpu_upload(struct gpu_trainer *g, const struct bert_model *m,
    const struct optim *o);
/* Parameters and moments device -> host (m->params_mem, o->m, o->v), for
 * checkpoints and evaluation. */
int gpu_download(struct gpu_trainer *g, struct bert_model *m, struct optim *o);
/* The gradients device -> host (m->grads_mem) and back, for tests. */
int gpu_download_grads(struct gpu_trainer *g, struct bert_model *m);
int gpu_upload_grads(struct gpu_trainer *g, const struct bert_model *m);

/* NCCL: a new unique id (rank 0), then every rank joins with it. */
int gpu_comm_id(uint8_t id[GPU_COMM_ID_BYTES], char *err, size_t errlen);
int gpu_comm_init(struct gpu_trainer *g, const uint8_t id[GPU_COMM_ID_BYTES],
    int rank, int nranks, char *err, size_t errlen);
/*
 * Without MPI: rank 0 listens on MASTER_PORT and hands the id to the
 * WORLD_SIZE - 1 others, which connect to MASTER_ADDR (torchrun's
 * variables; RANK says which). *rank and *nranks get the values.
 */
int gpu_comm_init_env(struct gpu_trainer *g, int *rank, int *nranks,
    char *err, size_t errlen);
/* Sums (or maxes) a few host values over the NCCL ranks. */
int gpu_comm_sum_f64(struct gpu_trainer *g, double *x, int n);
int gpu_comm_max_i64(struct gpu_trainer *g, int64_t *x, int n);

void gpu_zero_grad(struct gpu_trainer *g);
/*
 * Forward and backward of one micro-batch, gradients added into the
 * device's gradient buffer; as bert_forward_scaled + bert_backward
 * (mlm_scale per labelled position, seq_scale per sequence; step keys the
 * dropout; train 0: no dropout). With last set and more than one NCCL
 * rank, the gradients are all-reduced in buckets (a layer's each) on a
 * second stream while the backward goes on.
 */
int gpu_micro_step(struct gpu_trainer *g, const struct bert_batch *b,
    uint64_t step, int train, float mlm_scale, float seq_scale, int last,
    struct gpu_micro_out *out);
/* Forward only (evaluation): losses and correct counts, no gradients. */
int gpu_forward(struct gpu_trainer *g, const struct bert_batch *b,
    struct gpu_micro_out *out);
/*
 * Clipping and one optimizer step with o's settings, learning rate of
 * step o->t (o->t is incremented; o->m and o->v stay on the host
 * untouched until gpu_download). *norm: the gradient norm before
 * clipping (unscaled). fp16: a step with an inf/NaN gradient is skipped
 * (*skipped 1, o->t unchanged) and the loss scale halved; 2000 good steps
 * double it.
 */
int gpu_optim_step(struct gpu_trainer *g, struct optim *o, double *norm,
    int *skipped);
float gpu_loss_scale(const struct gpu_trainer *g);
void gpu_set_loss_scale(struct gpu_trainer *g, float s);
int64_t gpu_skipped_steps(const struct gpu_trainer *g);
/* Peak device memory allocated by this trainer, bytes. */
uint64_t gpu_peak_bytes(const struct gpu_trainer *g);
/* The kernels' dropout masks (host-compiled) against philox.c's: 0 when
 * equal; needs no GPU. */
int gpu_selftest_dropout(char *err, size_t errlen);
/* The row-major to cuBLASLt (column-major) mapping of every GEMM, its
 * transposes and leading dimensions, against sgemm_rm: needs no GPU. */
int gpu_selftest_gemm_layout(char *err, size_t errlen);
/* The fused attention (bf16 or fp16: precision) against a plain fp32 one
 * on the device, over several shapes, masks and dropout rates: 0 when
 * every output is within the precision's tolerance; worst[] gets the
 * largest relative error of the probabilities, the context, dq, dk, dv
 * and the q, k, v bias gradients. */
int gpu_check_attention(int precision, double worst[6], char *err,
    size_t errlen);
/* With CADRE_GPU_TIMERS=1 in the environment: the time per operation
 * class (cudaEvent pairs), printed to f. */
void gpu_print_timers(const struct gpu_trainer *g, FILE *f);

#else	/* !HAVE_CUDA */

#define GPU_NO_CUDA(err, errlen) do { \
	if ((err) != NULL && (errlen) > 0) \
		snprintf((err), (errlen), "this cadre-train was built without CUDA " \
		    "(./configure --with-cuda): use --device cpu"); \
	return CADRE_ERR_UNSUPPORTED; \
} while (0)

static inline int gpu_count(void) { return 0; }
static inline int
gpu_device_name(int dev, char *buf, size_t len)
{
	(void)dev;
	GPU_NO_CUDA(buf, len);
}
static inline int
gpu_open(const struct bert_model *m, int B, int T, int precision, int grad_ckpt,
    int dev, struct gpu_trainer **gp, char *err, size_t errlen)
{
	(void)m; (void)B; (void)T; (void)precision; (void)grad_ckpt; (void)dev;
	*gp = NULL;
	GPU_NO_CUDA(err, errlen);
}
static inline void gpu_close(struct gpu_trainer *g) { (void)g; }
static inline int
gpu_upload(struct gpu_trainer *g, const struct bert_model *m, const struct optim *o)
{
	(void)g; (void)m; (void)o;
	return CADRE_ERR_UNSUPPORTED;
}
static inline int
gpu_download(struct gpu_trainer *g, struct bert_model *m, struct optim *o)
{
	(void)g; (void)m; (void)o;
	return CADRE_ERR_UNSUPPORTED;
}
static inline int
gpu_download_grads(struct gpu_trainer *g, struct bert_model *m)
{
	(void)g; (void)m;
	return CADRE_ERR_UNSUPPORTED;
}
static inline int
gpu_upload_grads(struct gpu_trainer *g, const struct bert_model *m)
{
	(void)g; (void)m;
	return CADRE_ERR_UNSUPPORTED;
}
static inline int
gpu_comm_id(uint8_t id[GPU_COMM_ID_BYTES], char *err, size_t errlen)
{
	(void)id;
	GPU_NO_CUDA(err, errlen);
}
static inline int
gpu_comm_init(struct gpu_trainer *g, const uint8_t id[GPU_COMM_ID_BYTES],
    int rank, int nranks, char *err, size_t errlen)
{
	(void)g; (void)id; (void)rank; (void)nranks;
	GPU_NO_CUDA(err, errlen);
}
static inline int
gpu_comm_init_env(struct gpu_trainer *g, int *rank, int *nranks, char *err,
    size_t errlen)
{
	(void)g; (void)rank; (void)nranks;
	GPU_NO_CUDA(err, errlen);
}
static inline int
gpu_comm_sum_f64(struct gpu_trainer *g, double *x, int n)
{
	(void)g; (void)x; (void)n;
	return CADRE_ERR_UNSUPPORTED;
}
static inline int
gpu_comm_max_i64(struct gpu_trainer *g, int64_t *x, int n)
{
	(void)g; (void)x; (void)n;
	return CADRE_ERR_UNSUPPORTED;
}
static inline void gpu_zero_grad(struct gpu_trainer *g) { (void)g; }
static inline int
gpu_micro_step(struct gpu_trainer *g, const struct bert_batch *b, uint64_t step,
    int train, float mlm_scale, float seq_scale, int last, struct gpu_micro_out *out)
{
	(void)g; (void)b; (void)step; (void)train; (void)mlm_scale;
	(void)seq_scale; (void)last; (void)out;
	return CADRE_ERR_UNSUPPORTED;
}
static inline int
gpu_forward(struct gpu_trainer *g, const struct bert_batch *b,
    struct gpu_micro_out *out)
{
	(void)g; (void)b; (void)out;
	return CADRE_ERR_UNSUPPORTED;
}
static inline int
gpu_optim_step(struct gpu_trainer *g, struct optim *o, double *norm, int *skipped)
{
	(void)g; (void)o; (void)norm; (void)skipped;
	return CADRE_ERR_UNSUPPORTED;
}
static inline float gpu_loss_scale(const struct gpu_trainer *g) { (void)g; return 1.0f; }
static inline void gpu_set_loss_scale(struct gpu_trainer *g, float s) { (void)g; (void)s; }
static inline int64_t gpu_skipped_steps(const struct gpu_trainer *g) { (void)g; return 0; }
static inline uint64_t gpu_peak_bytes(const struct gpu_trainer *g) { (void)g; return 0; }
static inline void gpu_print_timers(const struct gpu_trainer *g, FILE *f) { (void)g; (void)f; }
static inline int
gpu_selftest_dropout(char *err, size_t errlen)
{
	GPU_NO_CUDA(err, errlen);
}
static inline int
gpu_selftest_gemm_layout(char *err, size_t errlen)
{
	GPU_NO_CUDA(err, errlen);
}
static inline int
gpu_check_attention(int precision, double worst[6], char *err, size_t errlen)
{
	(void)precision;
	(void)worst;
	GPU_NO_CUDA(err, errlen);
}

#undef GPU_NO_CUDA
#endif	/* HAVE_CUDA */

#ifdef __cplusplus
}
#endif

#endif
