/*
 * What the files of the CUDA path (trainer/cuda/, docs/gpu.md) share:
 * struct gpu_trainer and the host functions one file calls in another.
 * Only host functions cross files: each .cu file is compiled on its own
 * (no -rdc), with the kernels of the kernels_*.cuh it includes. Every .cu
 * file includes config.h before this header (HAVE_NCCL).
 *
 *   engine.cu       errors, gpu_open and gpu_close, a micro-batch's steps
 *   memory.cu       device allocations, host <-> device copies
 *   batch.cu        a micro-batch checked and staged
 *   timers.cu       the cudaEvent timers (CADRE_GPU_TIMERS=1)
 *   gemm.cu         cuBLASLt plans and calls, the linear layers
 *   layer.cu        one encoder layer (attention, FFN), forward and backward
 *   forward.cu      the whole model's forward, heads and losses
 *   backward.cu     the whole model's backward
 *   optimizer.cu    AdamW, LAMB, clipping, fp16 loss scaling
 *   comm.cu         NCCL: gradient buckets, the ranks' bootstrap, reductions
 *   selftest.cu     the host-side checks of gpu-masks.sh
 *   attn_check.cu   the fused attention against a plain one, on the device
 */
#ifndef CADRE_CUDA_ENGINE_INT_CUH
#define CADRE_CUDA_ENGINE_INT_CUH

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda_runtime.h>
#ifdef HAVE_NCCL
#include <nccl.h>
#endif

/* the trainer's C headers have no extern "C" of their own */
extern "C" {
#include "error.h"
#include "model.h"
#include "ops.h"
#include "optim.h"
#include "philox.h"
}
#include "gpu.h"
#include "kernels.cuh"

#define WORKSPACE_BYTES	(32u << 20)
#define NTHREADS	256
#define FP16_SCALE0	65536.0f
#define FP16_GROWTH	2000

/* ---------------------------------------------------------------- errors */

/* Errors of the CUDA runtime and cuBLASLt are programming errors or a
 * broken device once the buffers exist: they are reported with the call
 * and the process exits 1 (as xmalloc does for the host). */
#define CK(call) do { \
	cudaError_t e_ = (call); \
	if (e_ != cudaSuccess) \
		gpu_die(__FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
} while (0)
#define CKB(call) do { \
	cublasStatus_t s_ = (call); \
	if (s_ != CUBLAS_STATUS_SUCCESS) \
		gpu_die(__FILE__, __LINE__, #call, cublasLtGetStatusString(s_)); \
} while (0)

void gpu_die(const char *file, int line, const char *call, const char *msg)
    __attribute__((noreturn));

static inline unsigned
nblocks(size_t n)
{
	size_t b = (n + NTHREADS - 1) / NTHREADS;

	return (unsigned)(b > 65535u * 16u ? 65535u * 16u : (b ? b : 1));
}

/* ---------------------------------------------------------------- timers */

enum op_class { T_GEMM, T_ATTN, T_ATTN_BWD, T_LN, T_COLSUM, T_ACT, T_EMB, T_LOSS,
	T_OPT, T_COMM, T_COPY, T_NCLASS };

#define MAX_EVENTS	16384

/* ---------------------------------------------------------------- GEMM plans */

enum { PLAN_NAIVE = 1, PLAN_WARP = 2 };

#define PLAN_KEY	21	/* what gemm() matches a plan on */

struct plan {
	int		key[PLAN_KEY];
	cublasLtMatmulDesc_t	desc;
	cublasLtMatrixLayout_t	la, lb, lc;
	cublasLtMatmulAlgo_t	algo;
	int			naive;	/* PLAN_NAIVE: no algorithm, k_gemm_naive;
					 * PLAN_WARP: skinny, k_gemm_warp */
	int			dims[6];	/* M N K ta tb batch, for the timers */
	double			flops;	/* per call */
	double			ms;	/* timed, CADRE_GPU_TIMERS */
	long long		calls;
};

/* ---------------------------------------------------------------- the trainer */

/*
 * An embedding table's gradient rows for one micro-batch (batch.cu makes
 * them, k_seg_pieces and k_seg_parts_add use them): the tokens sorted by
 * key into segments of equal keys, rows in increasing order; each segment
 * cut into pieces of at most SEG_PIECE rows, one block each, so a key
 * that half the batch holds (a token type, [PAD]) is summed by many
 * blocks. A one-piece segment adds into its gradient row directly; a
 * longer one writes partial sums that one block then adds in order.
 */
#define SEG_PIECE	32

struct segs {
	int32_t	*key, *start, *rows;	/* nseg, nseg + 1, N */
	int32_t	*pbeg, *pend, *pout;	/* per piece: rows[pbeg..pend), out row or -(slot+1) */
	int32_t	*mkey, *mslot, *mcount;	/* per segment of several pieces */
	int	 nseg, np, nm;
};

struct layer_off {
	size_t qw, qb, kw, kb, vw, vb, aow, aob, aln_w, aln_b, iw, ib, ow, ob,
	    oln_w, oln_b;
};

struct model_off {
	size_t wte, wpe, wtt, eln_w, eln_b, pool_w, pool_b, tr_w, tr_b,
	    tr_ln_w, tr_ln_b, dec_b, nsp_w, nsp_b, cls_w, cls_b;
};

/* One layer's saved activations (T-typed; statistics fp32). */
struct lacts {
	void	*qp, *kp, *vp;		/* (B,nh,T,hs), or (N,H) for the fused
					 * attention; one after another with
					 * qkv_batched */
	void	*att;			/* (B,nh,T,T) probabilities before dropout */
	uint32_t *dmask;		/* fused: the attention's dropout mask, bits */
	void	*ctx, *r1, *h1, *r2;	/* (N,H) */
	void	*i, *gl;		/* (N,I) before and after GELU */
	float	*mean1, *rstd1, *mean2, *rstd2;
};

struct gpu_trainer {
	struct bert_config	 c;
	uint64_t		 dseed;		/* the dropout masks' Philox key */
	int			 B, Tn, N, H, I, V, nh, hs, L, C, prec, ckpt, dev;
	size_t			 tsize;		/* bytes of T */
	cudaDataType_t		 dt;		/* T's cuBLASLt type */
	size_t			 nparams, ntensors;
	struct model_off	 off;
	struct layer_off	*loff;
	size_t			 lbeg, lend_last, heads_beg;	/* bucket bounds */

	float			*p, *g, *m1, *m2;	/* the layout's four copies */
	void			*pc;		/* compute copy (== p in fp32) */

	cudaStream_t		 s, sc;		/* compute, communication */
	cudaEvent_t		 ev_bucket[512], ev_comm;
	int			 nbucket_ev;
	cublasLtHandle_t	 lt;
	void			*ws;
	struct plan		*plans;
	int			 nplans, cap_plans;
	int			 tune;		/* CADRE_GPU_GEMM_TUNE=1: time the candidates */
	int			 fused_attn;	/* kernels_attn_fused.cuh takes the attention */
	int			 qkv_batched;	/* CADRE_GPU_QKV=batched: Q, K, V one product */
	long long		 qkv_sw, qkv_sb;	/* then: kw - qw, kb - qb (elements) */
	void			*tune_out;	/* their scratch output */
	size_t			 tune_bytes;

	/* activations */
	void			**x;		/* L+1 of (N,H) */
	struct lacts		*la;
	int			 nla;
	void			*emb;
	float			*emb_mean, *emb_rstd;
	void			*qs, *attd, *ctxp;
	/* gradients' scratch */
	void			*dxa, *dxb, *dh1, *drd, *dg, *di, *dctx, *dctxp, *datt;
	void			*dqp, *dkp, *dvp;
	float			*part;		/* column-sum partials, 2 x chunks x max(V,I,H),
						 * and the fused attention's 3 x B x H */
	/* heads */
	int			 Mcap, M;
	void			*hm, *t, *tg, *tl, *dM1, *dM2, *dM3;
	float			*tmean, *trstd, *logits;
	void			*dlogits;
	void			*pin, *pool_pre, *pooled, *pooled_d, *dB1, *dB2, *dB3, *dseq;
	float			*seq_logits;
	double			*d_losses, *h_losses;	/* Mcap + B */
	int			*d_correct, *h_correct;
	/* the batch, staged in one pinned buffer and copied at once */
	int32_t			*h_batch, *d_batch;
	size_t			 batch_ints;
	int32_t			*ids, *types, *mask, *seql, *mpos, *mtarget;
	struct segs		 wseg, tseg;	/* word and token type tables */
	int32_t			*keycount;	/* host: the counting sort's, V + 1 */
	float			*segpart;	/* the pieces' partial sums, 2 N / SEG_PIECE x H */
	/* optimizer */
	struct chunk		*h_chunks, *d_chunks;
	int			 nchunks;
	double			*d_opart, *h_opart;
	float			*d_ratio, *h_ratio;
	float			 loss_scale;
	int			 good_steps;
	int64_t			 skipped;
	/* NCCL */
	int			 rank, nranks;
#ifdef HAVE_NCCL
	ncclComm_t		 comm;
#endif
	double			*d_small;
	/* memory and timers */
	uint64_t		 bytes;
	int			 timing;
	cudaEvent_t		 ev[MAX_EVENTS];
	int			 ev_cls[MAX_EVENTS / 2];
	int			 ev_plan[MAX_EVENTS / 2];	/* a GEMM's plan, or -1 */
	int			 nev;
	double			 tms[T_NCLASS];
	int64_t			 tsteps;
};

/* engine.cu */
void errf(char *err, size_t errlen, const char *fmt, ...);

/* memory.cu */
void *dalloc(struct gpu_trainer *g, size_t bytes);
int mlm_alloc(struct gpu_trainer *g, int M);

/* batch.cu */
int stage_batch(struct gpu_trainer *g, const struct bert_batch *b, char *err,
    size_t errlen);

/* timers.cu */
void tstart(struct gpu_trainer *g, int cls);
void tend(struct gpu_trainer *g);
void tcollect(struct gpu_trainer *g);
void tplan(struct gpu_trainer *g, int plan);

/* gemm.cu */

/*
 * What cuBLASLt is asked for a row-major C(M,N) = op(A)(M,K) op(B)(K,N):
 * it is column-major, so it computes C^T (N,M) = op(B)^T op(A)^T, with B's
 * storage as its first operand and A's as its second. Checked on the
 * host by gpu_selftest_gemm_layout.
 */
struct lt_shape {
	cublasOperation_t	opx, opy;	/* of the first, second operand */
	uint64_t		rx, cx, ry, cy, rd, cd;	/* layouts' rows, columns */
	int64_t			ldx, ldy, ldd;
};

struct lt_shape lt_shape_of(int ta, int tb, int M, int N, int K, int lda,
    int ldb, int ldc);
void gemm(struct gpu_trainer *g, int ta, int tb, int M, int N, int K,
    const void *A, int lda, long long sA, const void *B, int ldb, long long sB,
    void *C, int ldc, long long sC, int batch, float alpha, float beta,
    cudaDataType_t ab, cudaDataType_t ct, const void *bias, long long sbias);
template <typename T>
void linear(struct gpu_trainer *g, T *out, const T *inp, const T *w, const T *b,
    int N, int C, int OC);
template <typename T>
void colsum(struct gpu_trainer *g, float *dw, float *db, const T *dy, const T *x,
    const float *mean, const float *rstd, int N, int C);
template <typename T>
void linear_bwd(struct gpu_trainer *g, T *dinp, float beta, float *dw, float *db,
    const T *dout, const T *inp, const T *w, int N, int C, int OC);

/* layer.cu */
struct dkey mkkey(const struct gpu_trainer *g, uint64_t step, int layer,
    int tensor, float p, int train);

static const struct dkey nokey = { 0, 0, 0, 0, 0, 0.0f, 1.0f };

#define PC(g, T, f)	((T *)(g)->pc + (g)->off.f)
#define LPC(g, T, l, f)	((T *)(g)->pc + (g)->loff[l].f)
#define GR(g, f)	((g)->g + (g)->off.f)
#define LGR(g, l, f)	((g)->g + (g)->loff[l].f)

template <typename T>
void layer_fwd(struct gpu_trainer *g, int l, struct lacts *A, const T *x, T *out,
    uint64_t step, int train);
template <typename T>
void layer_bwd(struct gpu_trainer *g, int l, const struct lacts *A, const T *x,
    const T *dout, T *dx, uint64_t step, int train);

/* forward.cu, backward.cu */
template <typename T>
void forward_t(struct gpu_trainer *g, uint64_t step, int train, int keep,
    float mlm_scale, float seq_scale);
template <typename T>
void backward_t(struct gpu_trainer *g, uint64_t step, int train, int last);

/* comm.cu */
void bucket_allreduce(struct gpu_trainer *g, size_t lo, size_t hi);

#endif
