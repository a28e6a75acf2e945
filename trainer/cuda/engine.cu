/*
 * The CUDA path of cadre-train: BERT forward and backward on one GPU,
 * operation by operation as model.c does on the CPU (docs/gpu.md), the
 * linear layers and attention products through cuBLASLt, the rest in
 * kernels.cuh; the optimizers over the whole parameter layout in one
 * launch; NCCL for data parallelism. The C interface is trainer/gpu.h.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

static void __attribute__((noreturn))
gpu_die(const char *file, int line, const char *call, const char *msg)
{
	fprintf(stderr, "cadre-train: CUDA: %s:%d: %s: %s\n", file, line, call, msg);
	exit(1);
}

static inline unsigned
nblocks(size_t n)
{
	size_t b = (n + NTHREADS - 1) / NTHREADS;

	return (unsigned)(b > 65535u * 16u ? 65535u * 16u : (b ? b : 1));
}

/* ---------------------------------------------------------------- timers */

enum op_class { T_GEMM, T_ATTN, T_LN, T_ACT, T_EMB, T_LOSS, T_OPT, T_COMM,
	T_COPY, T_NCLASS };
static const char *const op_names[T_NCLASS] = { "gemm (cuBLASLt)",
	"attention softmax/permute", "layernorm (+residual, dropout)",
	"gelu/tanh/dropout", "embeddings", "loss (softmax-xent)", "optimizer",
	"allreduce (NCCL, not timed)", "batch upload, gathers" };

#define MAX_EVENTS	16384

/* ---------------------------------------------------------------- GEMM plans */

struct plan {
	int		key[20];
	cublasLtMatmulDesc_t	desc;
	cublasLtMatrixLayout_t	la, lb, lc;
	cublasLtMatmulAlgo_t	algo;
	int			naive;	/* no algorithm: k_gemm_naive */
};

/* ---------------------------------------------------------------- the trainer */

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
	void	*qp, *kp, *vp;		/* (B,nh,T,hs) */
	void	*att;			/* (B,nh,T,T) probabilities before dropout */
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
	float			*part;		/* column-sum partials, 2 x chunks x max(V,I,H) */
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
	int32_t			*wkey, *wstart, *wrows, *tkey, *tstart, *trows;
	int			 nwseg, ntseg;
	int64_t			*sortbuf;
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
	int			 nev;
	double			 tms[T_NCLASS];
	int64_t			 tsteps;
};

static void
errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* A device allocation counted in g->bytes; NULL when the device is full. */
static void *
dalloc(struct gpu_trainer *g, size_t bytes)
{
	void *p = NULL;

	if (bytes == 0)
		bytes = 16;
	if (cudaMalloc(&p, bytes) != cudaSuccess) {
		(void)cudaGetLastError();
		return NULL;
	}
	g->bytes += bytes;
	return p;
}

static void
tstart(struct gpu_trainer *g, int cls)
{
	if (!g->timing || g->nev + 2 > MAX_EVENTS)
		return;
	g->ev_cls[g->nev / 2] = cls;
	CK(cudaEventRecord(g->ev[g->nev++], g->s));
}

static void
tend(struct gpu_trainer *g)
{
	if (!g->timing || g->nev % 2 == 0)
		return;
	CK(cudaEventRecord(g->ev[g->nev++], g->s));
}

/* After a synchronisation: the recorded pairs into the per-class sums. */
static void
tcollect(struct gpu_trainer *g)
{
	int i;

	if (!g->timing)
		return;
	for (i = 0; i + 1 < g->nev; i += 2) {
		float ms = 0.0f;

		CK(cudaEventElapsedTime(&ms, g->ev[i], g->ev[i + 1]));
		g->tms[g->ev_cls[i / 2]] += ms;
	}
	g->nev = 0;
}

/* ---------------------------------------------------------------- cuBLASLt */

static int
align_of(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	int al = 256;

	while (al > 1 && a % (uintptr_t)al != 0)
		al >>= 1;
	return al;
}

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

static struct lt_shape
lt_shape_of(int ta, int tb, int M, int N, int K, int lda, int ldb, int ldc)
{
	struct lt_shape s;

	/* B row-major (K,N) is column-major (N,K): no transpose; stored
	 * (N,K) (tb) it is column-major (K,N), transposed */
	s.opx = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
	s.rx = (uint64_t)(tb ? K : N);
	s.cx = (uint64_t)(tb ? N : K);
	s.ldx = ldb;
	s.opy = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
	s.ry = (uint64_t)(ta ? M : K);
	s.cy = (uint64_t)(ta ? K : M);
	s.ldy = lda;
	s.rd = (uint64_t)N;
	s.cd = (uint64_t)M;
	s.ldd = ldc;
	return s;
}

/*
 * Row-major C(M,N) = alpha op(A)(M,K) op(B)(K,N) + beta C (+ bias(N) on
 * every row), batch of them at strides sA, sB, sC; A and B of type ab, C
 * of type ct, fp32 accumulation. cuBLASLt is column-major: it computes
 * C^T = op(B)^T op(A)^T, i.e. B is its first operand.
 */
static void
gemm(struct gpu_trainer *g, int ta, int tb, int M, int N, int K,
    const void *A, int lda, long long sA, const void *B, int ldb, long long sB,
    void *C, int ldc, long long sC, int batch, float alpha, float beta,
    cudaDataType_t ab, cudaDataType_t ct, const void *bias)
{
	int key[20] = { ta, tb, M, N, K, lda, ldb, ldc, batch, (int)ab, (int)ct,
		bias != NULL, align_of(A), align_of(B), align_of(C),
		bias != NULL ? align_of(bias) : 0, (int)(sA % 1000003),
		(int)(sB % 1000003), (int)(sC % 1000003), beta != 0.0f };
	struct plan *pl = NULL;
	const void *late_bias = NULL;
	int i;

	/* The tensors after the 30522-entry decoder bias are only 4- or
	 * 8-byte aligned; a bias the epilogue may not read is added after. */
	if (bias != NULL && align_of(bias) < 16) {
		late_bias = bias;
		bias = NULL;
		key[11] = 0;
		key[15] = 0;
	}
	tstart(g, T_GEMM);
	for (i = 0; i < g->nplans; i++)
		if (memcmp(g->plans[i].key, key, sizeof key) == 0) {
			pl = &g->plans[i];
			break;
		}
	if (pl == NULL) {
		struct lt_shape sh = lt_shape_of(ta, tb, M, N, K, lda, ldb, ldc);
		cublasLtMatmulPreference_t pref;
		cublasLtMatmulHeuristicResult_t res;
		cublasLtEpilogue_t epi = bias != NULL ? CUBLASLT_EPILOGUE_BIAS :
		    CUBLASLT_EPILOGUE_DEFAULT;
		uint32_t al;
		uint64_t wsb = WORKSPACE_BYTES;
		int nres = 0;

		if (g->nplans == g->cap_plans) {
			g->cap_plans = g->cap_plans ? 2 * g->cap_plans : 64;
			g->plans = (struct plan *)realloc(g->plans,
			    (size_t)g->cap_plans * sizeof *g->plans);
			if (g->plans == NULL)
				gpu_die(__FILE__, __LINE__, "realloc", "out of memory");
		}
		pl = &g->plans[g->nplans];
		memcpy(pl->key, key, sizeof key);
		CKB(cublasLtMatmulDescCreate(&pl->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
		CKB(cublasLtMatmulDescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_TRANSA,
		    &sh.opx, sizeof sh.opx));
		CKB(cublasLtMatmulDescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_TRANSB,
		    &sh.opy, sizeof sh.opy));
		CKB(cublasLtMatmulDescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
		    &epi, sizeof epi));
		if (bias != NULL) {
			/* the bias has the output's type here (T, or fp32 logits) */
			int32_t bt = (int32_t)ct;

			CKB(cublasLtMatmulDescSetAttribute(pl->desc,
			    CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
			CKB(cublasLtMatmulDescSetAttribute(pl->desc,
			    CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
		}
		CKB(cublasLtMatrixLayoutCreate(&pl->la, ab, sh.rx, sh.cx, sh.ldx));
		CKB(cublasLtMatrixLayoutCreate(&pl->lb, ab, sh.ry, sh.cy, sh.ldy));
		CKB(cublasLtMatrixLayoutCreate(&pl->lc, ct, sh.rd, sh.cd, sh.ldd));
		if (batch > 1) {
			CKB(cublasLtMatrixLayoutSetAttribute(pl->la,
			    CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
			CKB(cublasLtMatrixLayoutSetAttribute(pl->la,
			    CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sB, sizeof sB));
			CKB(cublasLtMatrixLayoutSetAttribute(pl->lb,
			    CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
			CKB(cublasLtMatrixLayoutSetAttribute(pl->lb,
			    CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sA, sizeof sA));
			CKB(cublasLtMatrixLayoutSetAttribute(pl->lc,
			    CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
			CKB(cublasLtMatrixLayoutSetAttribute(pl->lc,
			    CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sC, sizeof sC));
		}
		CKB(cublasLtMatmulPreferenceCreate(&pref));
		CKB(cublasLtMatmulPreferenceSetAttribute(pref,
		    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
		/* The parameters share one allocation: a tensor after an odd-sized
		 * one is less aligned than cuBLASLt's default assumption. */
		al = (uint32_t)align_of(B);
		CKB(cublasLtMatmulPreferenceSetAttribute(pref,
		    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al, sizeof al));
		al = (uint32_t)align_of(A);
		CKB(cublasLtMatmulPreferenceSetAttribute(pref,
		    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al, sizeof al));
		al = (uint32_t)align_of(C);
		CKB(cublasLtMatmulPreferenceSetAttribute(pref,
		    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al, sizeof al));
		CKB(cublasLtMatmulPreferenceSetAttribute(pref,
		    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al, sizeof al));
		if (cublasLtMatmulAlgoGetHeuristic(g->lt, pl->desc, pl->la, pl->lb,
		    pl->lc, pl->lc, pref, 1, &res, &nres) != CUBLAS_STATUS_SUCCESS)
			nres = 0;
		CKB(cublasLtMatmulPreferenceDestroy(pref));
		pl->naive = nres < 1;
		if (pl->naive)
			fprintf(stderr, "cadre-train: GPU: no cuBLASLt algorithm for M=%d N=%d "
			    "K=%d ta=%d tb=%d batch=%d (types %d/%d): a plain kernel does it\n",
			    M, N, K, ta, tb, batch, (int)ab, (int)ct);
		else
			pl->algo = res.algo;
		g->nplans++;
	} else if (bias != NULL) {
		CKB(cublasLtMatmulDescSetAttribute(pl->desc,
		    CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
	}
	if (pl->naive) {
		dim3 grid((unsigned)(((size_t)M * N + 255) / 256), (unsigned)batch);

#define NAIVE(TA, TC) k_gemm_naive<TA, TC><<<grid, 256, 0, g->s>>>(ta, tb, M, N, K, \
	    (const TA *)A, lda, sA, (const TA *)B, ldb, sB, (TC *)C, ldc, sC, alpha, \
	    beta, (const TC *)bias)
		if (ab == CUDA_R_32F)
			NAIVE(float, float);
		else if (ab == CUDA_R_16BF && ct == CUDA_R_32F)
			NAIVE(__nv_bfloat16, float);
		else if (ab == CUDA_R_16BF)
			NAIVE(__nv_bfloat16, __nv_bfloat16);
		else if (ct == CUDA_R_32F)
			NAIVE(__half, float);
		else
			NAIVE(__half, __half);
#undef NAIVE
	} else {
		cublasStatus_t st = cublasLtMatmul(g->lt, pl->desc, &alpha, B, pl->la, A,
		    pl->lb, &beta, C, pl->lc, C, pl->lc, &pl->algo, g->ws, WORKSPACE_BYTES,
		    g->s);

		/* an algorithm the heuristic offered but the call refused:
		 * this shape goes to the plain kernel from now on */
		if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE) {
			fprintf(stderr, "cadre-train: GPU: cuBLASLt refused M=%d N=%d K=%d "
			    "(%s): a plain kernel does it\n", M, N, K,
			    cublasLtGetStatusString(st));
			pl->naive = 1;
			tend(g);
			gemm(g, ta, tb, M, N, K, A, lda, sA, B, ldb, sB, C, ldc, sC, batch,
			    alpha, beta, ab, ct, bias != NULL ? bias : late_bias);
			return;
		} else if (st != CUBLAS_STATUS_SUCCESS)
			gpu_die(__FILE__, __LINE__, "cublasLtMatmul", cublasLtGetStatusString(st));
	}
	if (late_bias != NULL) {
		unsigned nb = (unsigned)(((size_t)M * N + 255) / 256);

		if (ct == CUDA_R_32F)
			k_add_bias<float><<<nb, 256, 0, g->s>>>((float *)C,
			    (const float *)late_bias, M, N, ldc);
		else if (ct == CUDA_R_16BF)
			k_add_bias<__nv_bfloat16><<<nb, 256, 0, g->s>>>((__nv_bfloat16 *)C,
			    (const __nv_bfloat16 *)late_bias, M, N, ldc);
		else
			k_add_bias<__half><<<nb, 256, 0, g->s>>>((__half *)C,
			    (const __half *)late_bias, M, N, ldc);
	}
	tend(g);
}

/* ---------------------------------------------------------------- helpers */

static struct dkey
mkkey(const struct gpu_trainer *g, uint64_t step, int layer, int tensor,
    float p, int train)
{
	struct dkey k;

	k.k0 = (uint32_t)g->dseed;
	k.k1 = (uint32_t)(g->dseed >> 32);
	k.c1 = ((uint32_t)layer << 8) | (uint32_t)tensor;
	k.c2 = (uint32_t)step;
	k.c3 = (uint32_t)(step >> 32);
	k.p = train ? p : 0.0f;
	k.scale = 1.0f / (1.0f - k.p);
	return k;
}

static const struct dkey nokey = { 0, 0, 0, 0, 0, 0.0f, 1.0f };

#define PC(g, T, f)	((T *)(g)->pc + (g)->off.f)
#define LPC(g, T, l, f)	((T *)(g)->pc + (g)->loff[l].f)
#define GR(g, f)	((g)->g + (g)->off.f)
#define LGR(g, l, f)	((g)->g + (g)->loff[l].f)

/* out(N,OC) = inp(N,C) w(OC,C)^T + b, all of type T. */
template <typename T>
static void
linear(struct gpu_trainer *g, T *out, const T *inp, const T *w, const T *b,
    int N, int C, int OC)
{
	gemm(g, 0, 1, N, OC, C, inp, C, 0, w, C, 0, out, OC, 0, 1, 1.0f, 0.0f,
	    g->dt, g->dt, b);
}

/* Column sums of dy (N,C) added to db; with x, the LayerNorm weight's
 * gradient sum(dy * xhat) added to dw. */
template <typename T>
static void
colsum(struct gpu_trainer *g, float *dw, float *db, const T *dy, const T *x,
    const float *mean, const float *rstd, int N, int C)
{
	int chunks = (N + COLSUM_ROWS - 1) / COLSUM_ROWS;
	float *pw = g->part, *pb = g->part + (size_t)chunks * C;
	dim3 grid((C + 127) / 128, chunks);

	k_colsum_partial<T><<<grid, 128, 0, g->s>>>(dw != NULL ? pw : NULL, pb, dy,
	    dw != NULL ? x : NULL, mean, rstd, N, C);
	if (dw != NULL)
		k_partials_add<<<(C + 127) / 128, 128, 0, g->s>>>(dw, pw, chunks, C);
	k_partials_add<<<(C + 127) / 128, 128, 0, g->s>>>(db, pb, chunks, C);
}

/*
 * The backward of linear: dinp = dout w (beta 0: written, 1: added), dw +=
 * dout^T inp (fp32), db += column sums of dout. As ops.c's
 * matmul_backward.
 */
template <typename T>
static void
linear_bwd(struct gpu_trainer *g, T *dinp, float beta, float *dw, float *db,
    const T *dout, const T *inp, const T *w, int N, int C, int OC)
{
	if (dinp != NULL)
		gemm(g, 0, 0, N, C, OC, dout, OC, 0, w, C, 0, dinp, C, 0, 1, 1.0f,
		    beta, g->dt, g->dt, NULL);
	if (dw != NULL)
		gemm(g, 1, 0, OC, C, N, dout, OC, 0, inp, C, 0, dw, C, 0, 1, 1.0f,
		    1.0f, g->dt, CUDA_R_32F, NULL);
	if (db != NULL) {
		tstart(g, T_LN);
		colsum<T>(g, NULL, db, dout, (const T *)NULL, NULL, NULL, N, OC);
		tend(g);
	}
}

/* ---------------------------------------------------------------- forward */

template <typename T>
static void
layer_fwd(struct gpu_trainer *g, int l, struct lacts *A, const T *x, T *out,
    uint64_t step, int train)
{
	const struct bert_config *c = &g->c;
	int N = g->N, H = g->H, I = g->I, B = g->B, Tn = g->Tn, nh = g->nh, hs = g->hs;
	struct dkey kp = mkkey(g, step, l, DROPOUT_ATTN_PROBS, c->attn_dropout, train);
	struct dkey ka = mkkey(g, step, l, DROPOUT_ATTN_OUT, c->hidden_dropout, train);
	struct dkey kf = mkkey(g, step, l, DROPOUT_FFN_OUT, c->hidden_dropout, train);
	size_t NH = (size_t)N * H, natt = (size_t)B * nh * Tn * Tn;
	T *qs = (T *)g->qs, *att = (T *)A->att;
	T *attd = kp.p > 0.0f ? (T *)g->attd : att;

	linear<T>(g, qs, x, LPC(g, T, l, qw), LPC(g, T, l, qb), N, H, H);
	tstart(g, T_ATTN);
	k_permute<T><<<nblocks(NH), NTHREADS, 0, g->s>>>((T *)A->qp, qs, B, Tn, nh, hs);
	tend(g);
	linear<T>(g, qs, x, LPC(g, T, l, kw), LPC(g, T, l, kb), N, H, H);
	tstart(g, T_ATTN);
	k_permute<T><<<nblocks(NH), NTHREADS, 0, g->s>>>((T *)A->kp, qs, B, Tn, nh, hs);
	tend(g);
	linear<T>(g, qs, x, LPC(g, T, l, vw), LPC(g, T, l, vb), N, H, H);
	tstart(g, T_ATTN);
	k_permute<T><<<nblocks(NH), NTHREADS, 0, g->s>>>((T *)A->vp, qs, B, Tn, nh, hs);
	tend(g);
	/* scores (T,T) = q k^T per (sequence, head); scaled in the softmax */
	gemm(g, 0, 1, Tn, Tn, hs, A->qp, hs, (long long)Tn * hs, A->kp, hs,
	    (long long)Tn * hs, att, Tn, (long long)Tn * Tn, B * nh, 1.0f, 0.0f,
	    g->dt, g->dt, NULL);
	tstart(g, T_ATTN);
	k_softmax_fwd<T><<<(unsigned)(natt / Tn), 128, 0, g->s>>>(att, attd, g->mask,
	    nh, Tn, 1.0f / sqrtf((float)hs), kp);
	tend(g);
	gemm(g, 0, 0, Tn, hs, Tn, attd, Tn, (long long)Tn * Tn, A->vp, hs,
	    (long long)Tn * hs, g->ctxp, hs, (long long)Tn * hs, B * nh, 1.0f, 0.0f,
	    g->dt, g->dt, NULL);
	tstart(g, T_ATTN);
	k_unpermute<T><<<nblocks(NH), NTHREADS, 0, g->s>>>((T *)A->ctx, (T *)g->ctxp,
	    B, Tn, nh, hs);
	tend(g);
	linear<T>(g, (T *)A->r1, (T *)A->ctx, LPC(g, T, l, aow), LPC(g, T, l, aob), N, H, H);
	tstart(g, T_LN);
	k_resid_ln<T><<<N, 256, 0, g->s>>>((T *)A->h1, A->mean1, A->rstd1, (T *)A->r1,
	    x, LPC(g, T, l, aln_w), LPC(g, T, l, aln_b), H, c->ln_eps, ka);
	tend(g);
	linear<T>(g, (T *)A->i, (T *)A->h1, LPC(g, T, l, iw), LPC(g, T, l, ib), N, H, I);
	tstart(g, T_ACT);
	k_gelu<T><<<nblocks((size_t)N * I), NTHREADS, 0, g->s>>>((T *)A->gl, (T *)A->i,
	    (size_t)N * I);
	tend(g);
	linear<T>(g, (T *)A->r2, (T *)A->gl, LPC(g, T, l, ow), LPC(g, T, l, ob), N, I, H);
	tstart(g, T_LN);
	k_resid_ln<T><<<N, 256, 0, g->s>>>(out, A->mean2, A->rstd2, (T *)A->r2,
	    (T *)A->h1, LPC(g, T, l, oln_w), LPC(g, T, l, oln_b), H, c->ln_eps, kf);
	tend(g);
}

/* Forward of the whole model; with keep, the losses' gradients (times
 * the loss scale) stay in dlogits/dseq for the backward. */
template <typename T>
static void
forward_t(struct gpu_trainer *g, uint64_t step, int train, int keep,
    float mlm_scale, float seq_scale)
{
	const struct bert_config *c = &g->c;
	int N = g->N, H = g->H, B = g->B, Tn = g->Tn, l;
	struct dkey ke = mkkey(g, step, 0, DROPOUT_EMBEDDINGS, c->hidden_dropout, train);

	tstart(g, T_EMB);
	k_embed_ln<T><<<N, 256, 0, g->s>>>((T *)g->x[0], (T *)g->emb, g->emb_mean,
	    g->emb_rstd, g->ids, g->types, PC(g, T, wte), PC(g, T, wpe), PC(g, T, wtt),
	    PC(g, T, eln_w), PC(g, T, eln_b), Tn, H, c->ln_eps, ke);
	tend(g);
	for (l = 0; l < g->L; l++)
		layer_fwd<T>(g, l, &g->la[g->ckpt ? 0 : l], (const T *)g->x[l],
		    (T *)g->x[l + 1], step, train);

	/* pooler on the first token of every sequence */
	tstart(g, T_COPY);
	k_gather_rows<T><<<B, 256, 0, g->s>>>((T *)g->pin, (const T *)g->x[g->L], NULL,
	    Tn, H);
	tend(g);
	linear<T>(g, (T *)g->pool_pre, (T *)g->pin, PC(g, T, pool_w), PC(g, T, pool_b),
	    B, H, H);
	tstart(g, T_ACT);
	k_tanh<T><<<nblocks((size_t)B * H), NTHREADS, 0, g->s>>>((T *)g->pooled,
	    (T *)g->pool_pre, (size_t)B * H);
	tend(g);
	if (c->task == BERT_PRETRAIN) {
		/* NSP logits in fp32, bias from the fp32 master */
		gemm(g, 0, 1, B, 2, H, g->pooled, H, 0, PC(g, T, nsp_w), H, 0,
		    g->seq_logits, 2, 0, 1, 1.0f, 0.0f, g->dt, CUDA_R_32F,
		    g->p + g->off.nsp_b);
		if (g->M > 0) {
			int M = g->M;

			tstart(g, T_COPY);
			k_gather_rows<T><<<M, 256, 0, g->s>>>((T *)g->hm,
			    (const T *)g->x[g->L], g->mpos, 0, H);
			tend(g);
			linear<T>(g, (T *)g->t, (T *)g->hm, PC(g, T, tr_w), PC(g, T, tr_b),
			    M, H, H);
			tstart(g, T_ACT);
			k_gelu<T><<<nblocks((size_t)M * H), NTHREADS, 0, g->s>>>((T *)g->tg,
			    (T *)g->t, (size_t)M * H);
			tend(g);
			tstart(g, T_LN);
			k_resid_ln<T><<<M, 256, 0, g->s>>>((T *)g->tl, g->tmean, g->trstd,
			    (T *)g->tg, (const T *)NULL, PC(g, T, tr_ln_w), PC(g, T, tr_ln_b),
			    H, c->ln_eps, nokey);
			tend(g);
			/* the decoder, tied to the word embeddings, on the
			 * labelled positions only; logits fp32 */
			gemm(g, 0, 1, M, g->V, H, g->tl, H, 0, PC(g, T, wte), H, 0,
			    g->logits, g->V, 0, 1, 1.0f, 0.0f, g->dt, CUDA_R_32F,
			    g->p + g->off.dec_b);
			tstart(g, T_LOSS);
			k_xent<T><<<M, 512, 0, g->s>>>(keep ? (T *)g->dlogits : NULL,
			    g->d_losses, g->d_correct, g->logits, g->mtarget, g->V,
			    mlm_scale * g->loss_scale);
			tend(g);
		}
	} else {
		struct dkey kc = mkkey(g, step, c->layers, DROPOUT_CLASSIFIER,
		    c->hidden_dropout, train);

		tstart(g, T_ACT);
		k_dropout<T><<<nblocks(((size_t)B * H + 3) / 4), NTHREADS, 0, g->s>>>((T *)g->pooled_d,
		    (T *)g->pooled, (size_t)B * H, kc);
		tend(g);
		gemm(g, 0, 1, B, g->C, H, g->pooled_d, H, 0, PC(g, T, cls_w), H, 0,
		    g->seq_logits, g->C, 0, 1, 1.0f, 0.0f, g->dt, CUDA_R_32F,
		    g->p + g->off.cls_b);
	}
	tstart(g, T_LOSS);
	k_xent<T><<<B, 128, 0, g->s>>>(keep ? (T *)g->dseq : NULL, g->d_losses + g->Mcap,
	    g->d_correct + g->Mcap, g->seq_logits, g->seql, g->C,
	    seq_scale * g->loss_scale);
	tend(g);
}

/* ---------------------------------------------------------------- backward */

template <typename T>
static void
layer_bwd(struct gpu_trainer *g, int l, const struct lacts *A, const T *x,
    const T *dout, T *dx, uint64_t step, int train)
{
	const struct bert_config *c = &g->c;
	int N = g->N, H = g->H, I = g->I, B = g->B, Tn = g->Tn, nh = g->nh, hs = g->hs;
	struct dkey kp = mkkey(g, step, l, DROPOUT_ATTN_PROBS, c->attn_dropout, train);
	struct dkey ka = mkkey(g, step, l, DROPOUT_ATTN_OUT, c->hidden_dropout, train);
	struct dkey kf = mkkey(g, step, l, DROPOUT_FFN_OUT, c->hidden_dropout, train);
	size_t NH = (size_t)N * H, natt = (size_t)B * nh * Tn * Tn;
	T *dh1 = (T *)g->dh1, *drd = (T *)g->drd, *att = (T *)A->att;
	T *attd = kp.p > 0.0f ? (T *)g->attd : att, *datt = (T *)g->datt;
	T *dtmp = (T *)g->dctx;
	long long sTT = (long long)Tn * Tn, sTh = (long long)Tn * hs;

	/* out = LN(r2), r2 = drop(g Wo^T + bo) + h1 */
	tstart(g, T_LN);
	k_ln_bwd<T><<<N, 256, 0, g->s>>>(dh1, drd, dout, (T *)A->r2, LPC(g, T, l, oln_w),
	    A->mean2, A->rstd2, H, 0, kf);
	colsum<T>(g, LGR(g, l, oln_w), LGR(g, l, oln_b), dout, (T *)A->r2, A->mean2,
	    A->rstd2, N, H);
	tend(g);
	linear_bwd<T>(g, (T *)g->dg, 0.0f, LGR(g, l, ow), LGR(g, l, ob), drd,
	    (T *)A->gl, LPC(g, T, l, ow), N, I, H);
	tstart(g, T_ACT);
	k_gelu_bwd<T><<<nblocks((size_t)N * I), NTHREADS, 0, g->s>>>((T *)g->di,
	    (T *)A->i, (T *)g->dg, (size_t)N * I);
	tend(g);
	linear_bwd<T>(g, dh1, 1.0f, LGR(g, l, iw), LGR(g, l, ib), (T *)g->di,
	    (T *)A->h1, LPC(g, T, l, iw), N, H, I);
	/* h1 = LN(r1), r1 = drop(ctx Wao^T + bao) + x */
	tstart(g, T_LN);
	k_ln_bwd<T><<<N, 256, 0, g->s>>>(dx, drd, dh1, (T *)A->r1, LPC(g, T, l, aln_w),
	    A->mean1, A->rstd1, H, 0, ka);
	colsum<T>(g, LGR(g, l, aln_w), LGR(g, l, aln_b), dh1, (T *)A->r1, A->mean1,
	    A->rstd1, N, H);
	tend(g);
	linear_bwd<T>(g, (T *)g->dctx, 0.0f, LGR(g, l, aow), LGR(g, l, aob), drd,
	    (T *)A->ctx, LPC(g, T, l, aow), N, H, H);
	tstart(g, T_ATTN);
	k_permute<T><<<nblocks(NH), NTHREADS, 0, g->s>>>((T *)g->dctxp, (T *)g->dctx,
	    B, Tn, nh, hs);
	if (attd != att)	/* the dropped probabilities, recomputed */
		k_dropout<T><<<nblocks((natt + 3) / 4), NTHREADS, 0, g->s>>>(attd, att, natt, kp);
	tend(g);
	/* d(attd) = dctx v^T; dv = attd^T dctx */
	gemm(g, 0, 1, Tn, Tn, hs, g->dctxp, hs, sTh, A->vp, hs, sTh, datt, Tn, sTT,
	    B * nh, 1.0f, 0.0f, g->dt, g->dt, NULL);
	gemm(g, 1, 0, Tn, hs, Tn, attd, Tn, sTT, g->dctxp, hs, sTh, g->dvp, hs, sTh,
	    B * nh, 1.0f, 0.0f, g->dt, g->dt, NULL);
	tstart(g, T_ATTN);
	k_softmax_bwd<T><<<(unsigned)(natt / Tn), 128, 0, g->s>>>(datt, att, Tn,
	    1.0f / sqrtf((float)hs), kp);
	tend(g);
	/* dq = ds k; dk = ds^T q */
	gemm(g, 0, 0, Tn, hs, Tn, datt, Tn, sTT, A->kp, hs, sTh, g->dqp, hs, sTh,
	    B * nh, 1.0f, 0.0f, g->dt, g->dt, NULL);
	gemm(g, 1, 0, Tn, hs, Tn, datt, Tn, sTT, A->qp, hs, sTh, g->dkp, hs, sTh,
	    B * nh, 1.0f, 0.0f, g->dt, g->dt, NULL);
	tstart(g, T_ATTN);
	k_unpermute<T><<<nblocks(NH), NTHREADS, 0, g->s>>>(dtmp, (T *)g->dqp, B, Tn, nh, hs);
	tend(g);
	linear_bwd<T>(g, dx, 1.0f, LGR(g, l, qw), LGR(g, l, qb), dtmp, x,
	    LPC(g, T, l, qw), N, H, H);
	tstart(g, T_ATTN);
	k_unpermute<T><<<nblocks(NH), NTHREADS, 0, g->s>>>(dtmp, (T *)g->dkp, B, Tn, nh, hs);
	tend(g);
	linear_bwd<T>(g, dx, 1.0f, LGR(g, l, kw), LGR(g, l, kb), dtmp, x,
	    LPC(g, T, l, kw), N, H, H);
	tstart(g, T_ATTN);
	k_unpermute<T><<<nblocks(NH), NTHREADS, 0, g->s>>>(dtmp, (T *)g->dvp, B, Tn, nh, hs);
	tend(g);
	linear_bwd<T>(g, dx, 1.0f, LGR(g, l, vw), LGR(g, l, vb), dtmp, x,
	    LPC(g, T, l, vw), N, H, H);
}

/* All-reduces gradients [lo, hi) on the communication stream once the
 * compute stream has produced them (NCCL, more than one rank). */
static void
bucket_allreduce(struct gpu_trainer *g, size_t lo, size_t hi)
{
#ifdef HAVE_NCCL
	cudaEvent_t ev;

	if (g->nranks <= 1 || hi <= lo)
		return;
	ev = g->ev_bucket[g->nbucket_ev++ % 512];
	CK(cudaEventRecord(ev, g->s));
	CK(cudaStreamWaitEvent(g->sc, ev, 0));
	if (ncclAllReduce(g->g + lo, g->g + lo, hi - lo, ncclFloat, ncclSum, g->comm,
	    g->sc) != ncclSuccess)
		gpu_die(__FILE__, __LINE__, "ncclAllReduce", "failed");
#else
	(void)g;
	(void)lo;
	(void)hi;
#endif
}

template <typename T>
static void
backward_t(struct gpu_trainer *g, uint64_t step, int train, int last)
{
	const struct bert_config *c = &g->c;
	int N = g->N, H = g->H, B = g->B, Tn = g->Tn, M = g->M, l;
	size_t NH = (size_t)N * H;
	void *tmp;

	CK(cudaMemsetAsync(g->dxa, 0, NH * g->tsize, g->s));
	if (c->task == BERT_PRETRAIN && M > 0) {
		linear_bwd<T>(g, (T *)g->dM1, 0.0f, GR(g, wte), GR(g, dec_b),
		    (T *)g->dlogits, (T *)g->tl, PC(g, T, wte), M, H, g->V);
		tstart(g, T_LN);
		k_ln_bwd<T><<<M, 256, 0, g->s>>>((T *)g->dM2, (T *)NULL, (T *)g->dM1,
		    (T *)g->tg, PC(g, T, tr_ln_w), g->tmean, g->trstd, H, 0, nokey);
		colsum<T>(g, GR(g, tr_ln_w), GR(g, tr_ln_b), (T *)g->dM1, (T *)g->tg,
		    g->tmean, g->trstd, M, H);
		tend(g);
		tstart(g, T_ACT);
		k_gelu_bwd<T><<<nblocks((size_t)M * H), NTHREADS, 0, g->s>>>((T *)g->dM3,
		    (T *)g->t, (T *)g->dM2, (size_t)M * H);
		tend(g);
		linear_bwd<T>(g, (T *)g->dM1, 0.0f, GR(g, tr_w), GR(g, tr_b), (T *)g->dM3,
		    (T *)g->hm, PC(g, T, tr_w), M, H, H);
		tstart(g, T_COPY);
		k_scatter_add_rows<T><<<M, 256, 0, g->s>>>((T *)g->dxa, (T *)g->dM1,
		    g->mpos, 0, H);
		tend(g);
	}
	if (c->task == BERT_PRETRAIN) {
		linear_bwd<T>(g, (T *)g->dB1, 0.0f, GR(g, nsp_w), GR(g, nsp_b),
		    (T *)g->dseq, (T *)g->pooled, PC(g, T, nsp_w), B, H, 2);
		tstart(g, T_ACT);
		k_tanh_bwd<T><<<nblocks((size_t)B * H), NTHREADS, 0, g->s>>>((T *)g->dB2,
		    (T *)g->pooled, (T *)g->dB1, (size_t)B * H, nokey);
		tend(g);
	} else {
		struct dkey kc = mkkey(g, step, c->layers, DROPOUT_CLASSIFIER,
		    c->hidden_dropout, train);

		linear_bwd<T>(g, (T *)g->dB1, 0.0f, GR(g, cls_w), GR(g, cls_b),
		    (T *)g->dseq, (T *)g->pooled_d, PC(g, T, cls_w), B, H, g->C);
		tstart(g, T_ACT);
		k_tanh_bwd<T><<<nblocks((size_t)B * H), NTHREADS, 0, g->s>>>((T *)g->dB2,
		    (T *)g->pooled, (T *)g->dB1, (size_t)B * H, kc);
		tend(g);
	}
	linear_bwd<T>(g, (T *)g->dB3, 0.0f, GR(g, pool_w), GR(g, pool_b), (T *)g->dB2,
	    (T *)g->pin, PC(g, T, pool_w), B, H, H);
	tstart(g, T_COPY);
	k_scatter_add_rows<T><<<B, 256, 0, g->s>>>((T *)g->dxa, (T *)g->dB3, NULL, Tn, H);
	tend(g);
	/* The pooler's and heads' gradients are final (the decoder's share
	 * of the word embeddings goes with the embeddings' bucket). */
	if (last)
		bucket_allreduce(g, g->heads_beg, g->nparams);

	for (l = g->L - 1; l >= 0; l--) {
		/* checkpointing: the layer again from its saved input, the
		 * same calls on the same inputs (the same bits) */
		if (g->ckpt)
			layer_fwd<T>(g, l, &g->la[0], (const T *)g->x[l], (T *)g->x[l + 1],
			    step, train);
		layer_bwd<T>(g, l, &g->la[g->ckpt ? 0 : l], (const T *)g->x[l],
		    (const T *)g->dxa, (T *)g->dxb, step, train);
		tmp = g->dxa;
		g->dxa = g->dxb;
		g->dxb = tmp;
		if (last)
			bucket_allreduce(g, g->loff[l].qw, l + 1 < g->L ?
			    g->loff[l + 1].qw : g->heads_beg);
	}

	{
		struct dkey ke = mkkey(g, step, 0, DROPOUT_EMBEDDINGS, c->hidden_dropout,
		    train);

		tstart(g, T_EMB);
		k_dropout<T><<<nblocks((NH + 3) / 4), NTHREADS, 0, g->s>>>((T *)g->dxa, (T *)g->dxa,
		    NH, ke);
		k_ln_bwd<T><<<N, 256, 0, g->s>>>((T *)g->dxb, (T *)NULL, (T *)g->dxa,
		    (T *)g->emb, PC(g, T, eln_w), g->emb_mean, g->emb_rstd, H, 0, nokey);
		colsum<T>(g, GR(g, eln_w), GR(g, eln_b), (T *)g->dxa, (T *)g->emb,
		    g->emb_mean, g->emb_rstd, N, H);
		k_seg_rows_add<T><<<g->nwseg, 256, 0, g->s>>>(GR(g, wte), (T *)g->dxb,
		    g->wkey, g->wstart, g->wrows, H);
		k_pos_add<T><<<Tn, 256, 0, g->s>>>(GR(g, wpe), (T *)g->dxb, B, Tn, H);
		k_seg_rows_add<T><<<g->ntseg, 256, 0, g->s>>>(GR(g, wtt), (T *)g->dxb,
		    g->tkey, g->tstart, g->trows, H);
		tend(g);
	}
	if (last) {
		bucket_allreduce(g, 0, g->loff[0].qw);
#ifdef HAVE_NCCL
		if (g->nranks > 1) {
			CK(cudaEventRecord(g->ev_comm, g->sc));
			CK(cudaStreamWaitEvent(g->s, g->ev_comm, 0));
		}
#endif
	}
}

/* ---------------------------------------------------------------- batches */

/* The MLM buffers for M labelled positions (grown on demand, as
 * model.c's acts_prepare does). */
static int
mlm_alloc(struct gpu_trainer *g, int M)
{
	size_t H = (size_t)g->H, V = (size_t)g->V, ts = g->tsize, Mc;

	if (M <= g->Mcap && g->d_losses != NULL)
		return 0;
	Mc = (size_t)(M > g->Mcap ? M : g->Mcap);
	if (Mc < 64)
		Mc = 64;
	cudaFree(g->hm); cudaFree(g->t); cudaFree(g->tg); cudaFree(g->tl);
	cudaFree(g->dM1); cudaFree(g->dM2); cudaFree(g->dM3);
	cudaFree(g->tmean); cudaFree(g->trstd); cudaFree(g->logits);
	cudaFree(g->dlogits); cudaFree(g->d_losses); cudaFree(g->d_correct);
	cudaFreeHost(g->h_losses); cudaFreeHost(g->h_correct);
	g->hm = dalloc(g, Mc * H * ts);
	g->t = dalloc(g, Mc * H * ts);
	g->tg = dalloc(g, Mc * H * ts);
	g->tl = dalloc(g, Mc * H * ts);
	g->dM1 = dalloc(g, Mc * H * ts);
	g->dM2 = dalloc(g, Mc * H * ts);
	g->dM3 = dalloc(g, Mc * H * ts);
	g->tmean = (float *)dalloc(g, Mc * sizeof(float));
	g->trstd = (float *)dalloc(g, Mc * sizeof(float));
	g->logits = (float *)dalloc(g, Mc * V * sizeof(float));
	g->dlogits = dalloc(g, Mc * V * ts);
	g->d_losses = (double *)dalloc(g, (Mc + (size_t)g->B) * sizeof(double));
	g->d_correct = (int *)dalloc(g, (Mc + (size_t)g->B) * sizeof(int));
	if (cudaMallocHost(&g->h_losses, (Mc + (size_t)g->B) * sizeof(double)) != cudaSuccess ||
	    cudaMallocHost(&g->h_correct, (Mc + (size_t)g->B) * sizeof(int)) != cudaSuccess)
		return CADRE_ERR_NOMEM;
	if (g->hm == NULL || g->t == NULL || g->tg == NULL || g->tl == NULL ||
	    g->dM1 == NULL || g->dM2 == NULL || g->dM3 == NULL || g->tmean == NULL ||
	    g->trstd == NULL || g->logits == NULL || g->dlogits == NULL ||
	    g->d_losses == NULL || g->d_correct == NULL)
		return CADRE_ERR_NOMEM;
	g->Mcap = (int)Mc;
	return 0;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Segments of equal keys, rows in increasing order: the embedding
 * gradients' owner-per-row sums (k_seg_rows_add). */
static int
make_segments(struct gpu_trainer *g, const int32_t *keys, int n, int32_t *key,
    int32_t *start, int32_t *rows)
{
	int i, ns = 0;

	for (i = 0; i < n; i++)
		g->sortbuf[i] = ((int64_t)keys[i] << 32) | (int64_t)i;
	qsort(g->sortbuf, (size_t)n, sizeof *g->sortbuf, cmp_i64);
	for (i = 0; i < n; i++) {
		int32_t k = (int32_t)(g->sortbuf[i] >> 32);

		if (i == 0 || k != key[ns - 1]) {
			key[ns] = k;
			start[ns] = i;
			ns++;
		}
		rows[i] = (int32_t)(g->sortbuf[i] & 0xffffffff);
	}
	start[ns] = n;
	return ns;
}

/* The micro-batch into the pinned staging buffer, checked, then to the
 * device in one copy. */
static int
stage_batch(struct gpu_trainer *g, const struct bert_batch *b, char *err,
    size_t errlen)
{
	int32_t *h = g->h_batch;
	int N = g->N, B = g->B, i, M = 0, error;

	if (b->B != g->B || b->T != g->Tn) {
		errf(err, errlen, "a micro-batch of %d x %d, but the GPU buffers are "
		    "for %d x %d", b->B, b->T, g->B, g->Tn);
		return CADRE_ERR_INVALID;
	}
	for (i = 0; i < N; i++) {
		if (b->ids[i] < 0 || b->ids[i] >= g->V || b->types[i] < 0 ||
		    b->types[i] >= g->c.type_vocab) {
			errf(err, errlen, "token %d: id %d or type %d outside the model's "
			    "vocab (%d) or token types (%d)", i, b->ids[i], b->types[i],
			    g->V, g->c.type_vocab);
			return CADRE_ERR_INVALID;
		}
	}
	memcpy(h + (g->ids - g->d_batch), b->ids, (size_t)N * 4);
	memcpy(h + (g->types - g->d_batch), b->types, (size_t)N * 4);
	memcpy(h + (g->mask - g->d_batch), b->mask, (size_t)N * 4);
	memcpy(h + (g->seql - g->d_batch), b->seq_labels, (size_t)B * 4);
	for (i = 0; i < B; i++)
		if (b->seq_labels[i] < 0 || b->seq_labels[i] >= g->C) {
			errf(err, errlen, "sequence %d: label %d outside 0..%d", i,
			    b->seq_labels[i], g->C - 1);
			return CADRE_ERR_INVALID;
		}
	if (g->c.task == BERT_PRETRAIN) {
		int32_t *mp = h + (g->mpos - g->d_batch), *mt = h + (g->mtarget - g->d_batch);

		for (i = 0; i < N; i++) {
			if (b->labels[i] == -100)
				continue;
			if (b->labels[i] < 0 || b->labels[i] >= g->V) {
				errf(err, errlen, "token %d: MLM label %d outside the vocab (%d)",
				    i, b->labels[i], g->V);
				return CADRE_ERR_INVALID;
			}
			mp[M] = i;
			mt[M] = b->labels[i];
			M++;
		}
	}
	g->M = M;
	if ((error = mlm_alloc(g, M)) != 0) {
		errf(err, errlen, "out of GPU memory for %d labelled positions", M);
		return error;
	}
	g->nwseg = make_segments(g, b->ids, N, h + (g->wkey - g->d_batch),
	    h + (g->wstart - g->d_batch), h + (g->wrows - g->d_batch));
	g->ntseg = make_segments(g, b->types, N, h + (g->tkey - g->d_batch),
	    h + (g->tstart - g->d_batch), h + (g->trows - g->d_batch));
	tstart(g, T_COPY);
	CK(cudaMemcpyAsync(g->d_batch, h, g->batch_ints * 4, cudaMemcpyHostToDevice, g->s));
	tend(g);
	return 0;
}

/* ---------------------------------------------------------------- open, close */

int
gpu_count(void)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	return n;
}

int
gpu_device_name(int dev, char *buf, size_t len)
{
	cudaDeviceProp prop;

	if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
		(void)cudaGetLastError();
		errf(buf, len, "no CUDA device %d", dev);
		return CADRE_ERR_NOT_FOUND;
	}
	snprintf(buf, len, "%s", prop.name);
	return 0;
}

#define OFF(f)	(m->p.f != NULL ? (size_t)(m->p.f - m->params_mem) : 0)

int
gpu_open(const struct bert_model *m, int B, int T, int precision, int grad_ckpt,
    int dev, struct gpu_trainer **gp, char *err, size_t errlen)
{
	struct gpu_trainer *g;
	const struct bert_config *c = &m->cfg;
	int n = gpu_count(), l, nla;
	size_t N = (size_t)B * T, H, I, ts, natt, ti, k;
	const char *tenv = getenv("CADRE_GPU_TIMERS");

	*gp = NULL;
	if (n == 0) {
		errf(err, errlen, "no CUDA device visible (nvidia-smi -L lists none, or "
		    "CUDA_VISIBLE_DEVICES hides them): use --device cpu");
		return CADRE_ERR_NOT_FOUND;
	}
	if (precision < GPU_FP32 || precision > GPU_FP16) {
		errf(err, errlen, "precision %d: expected fp32, bf16 or fp16", precision);
		return CADRE_ERR_INVALID;
	}
	CK(cudaSetDevice(dev % n));
	g = (struct gpu_trainer *)calloc(1, sizeof *g);
	if (g == NULL)
		return CADRE_ERR_NOMEM;
	g->c = *c;
	g->dseed = m->dropout_seed;
	g->dev = dev % n;
	g->B = B;
	g->Tn = T;
	g->N = (int)N;
	g->H = c->hidden;
	g->I = c->intermediate;
	g->V = c->vocab;
	g->nh = c->heads;
	g->hs = c->hidden / c->heads;
	g->L = c->layers;
	g->C = c->task == BERT_PRETRAIN ? 2 : c->num_labels;
	g->prec = precision;
	g->ckpt = grad_ckpt;
	g->tsize = precision == GPU_FP32 ? 4 : 2;
	g->dt = precision == GPU_FP32 ? CUDA_R_32F :
	    precision == GPU_BF16 ? CUDA_R_16BF : CUDA_R_16F;
	g->nparams = m->nparams;
	g->ntensors = m->ntensors;
	g->loss_scale = precision == GPU_FP16 ? FP16_SCALE0 : 1.0f;
	g->rank = 0;
	g->nranks = 1;
	g->timing = tenv != NULL && strcmp(tenv, "1") == 0;
	H = (size_t)g->H;
	I = (size_t)g->I;
	ts = g->tsize;
	natt = (size_t)B * g->nh * T * T;

	g->off = (struct model_off){ OFF(wte), OFF(wpe), OFF(wtt), OFF(eln_w), OFF(eln_b),
		OFF(pool_w), OFF(pool_b), OFF(tr_w), OFF(tr_b), OFF(tr_ln_w),
		OFF(tr_ln_b), OFF(dec_b), OFF(nsp_w), OFF(nsp_b), OFF(cls_w), OFF(cls_b) };
	g->loff = (struct layer_off *)calloc((size_t)g->L, sizeof *g->loff);
	g->la = (struct lacts *)calloc((size_t)g->L, sizeof *g->la);
	g->x = (void **)calloc((size_t)g->L + 1, sizeof *g->x);
	if (g->loff == NULL || g->la == NULL || g->x == NULL)
		goto nomem;
	for (l = 0; l < g->L; l++) {
		const struct bert_layer_params *y = &m->p.layer[l];
		const float *b0 = m->params_mem;

		g->loff[l] = (struct layer_off){ (size_t)(y->qw - b0), (size_t)(y->qb - b0),
			(size_t)(y->kw - b0), (size_t)(y->kb - b0), (size_t)(y->vw - b0),
			(size_t)(y->vb - b0), (size_t)(y->aow - b0), (size_t)(y->aob - b0),
			(size_t)(y->aln_w - b0), (size_t)(y->aln_b - b0),
			(size_t)(y->iw - b0), (size_t)(y->ib - b0), (size_t)(y->ow - b0),
			(size_t)(y->ob - b0), (size_t)(y->oln_w - b0),
			(size_t)(y->oln_b - b0) };
	}
	g->heads_beg = g->off.pool_w;

	CK(cudaStreamCreateWithFlags(&g->s, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&g->sc, cudaStreamNonBlocking));
	for (k = 0; k < 512; k++)
		CK(cudaEventCreateWithFlags(&g->ev_bucket[k], cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&g->ev_comm, cudaEventDisableTiming));
	if (g->timing)
		for (k = 0; k < MAX_EVENTS; k++)
			CK(cudaEventCreate(&g->ev[k]));
	CKB(cublasLtCreate(&g->lt));
	if ((g->ws = dalloc(g, WORKSPACE_BYTES)) == NULL)
		goto nomem;

	/* the layout's copies */
	if ((g->p = (float *)dalloc(g, g->nparams * 4)) == NULL ||
	    (g->g = (float *)dalloc(g, g->nparams * 4)) == NULL ||
	    (g->m1 = (float *)dalloc(g, g->nparams * 4)) == NULL ||
	    (g->m2 = (float *)dalloc(g, g->nparams * 4)) == NULL)
		goto nomem;
	if (precision == GPU_FP32)
		g->pc = g->p;
	else if ((g->pc = dalloc(g, g->nparams * 2)) == NULL)
		goto nomem;

	/* activations, as model.c's acts_prepare (one layer's with
	 * checkpointing) */
	for (l = 0; l <= g->L; l++)
		if ((g->x[l] = dalloc(g, N * H * ts)) == NULL)
			goto nomem;
	nla = grad_ckpt ? 1 : g->L;
	g->nla = nla;
	for (l = 0; l < nla; l++) {
		struct lacts *A = &g->la[l];

		if ((A->qp = dalloc(g, N * H * ts)) == NULL ||
		    (A->kp = dalloc(g, N * H * ts)) == NULL ||
		    (A->vp = dalloc(g, N * H * ts)) == NULL ||
		    (A->att = dalloc(g, natt * ts)) == NULL ||
		    (A->ctx = dalloc(g, N * H * ts)) == NULL ||
		    (A->r1 = dalloc(g, N * H * ts)) == NULL ||
		    (A->h1 = dalloc(g, N * H * ts)) == NULL ||
		    (A->r2 = dalloc(g, N * H * ts)) == NULL ||
		    (A->i = dalloc(g, N * I * ts)) == NULL ||
		    (A->gl = dalloc(g, N * I * ts)) == NULL ||
		    (A->mean1 = (float *)dalloc(g, N * 4)) == NULL ||
		    (A->rstd1 = (float *)dalloc(g, N * 4)) == NULL ||
		    (A->mean2 = (float *)dalloc(g, N * 4)) == NULL ||
		    (A->rstd2 = (float *)dalloc(g, N * 4)) == NULL)
			goto nomem;
	}
	if ((g->emb = dalloc(g, N * H * ts)) == NULL ||
	    (g->emb_mean = (float *)dalloc(g, N * 4)) == NULL ||
	    (g->emb_rstd = (float *)dalloc(g, N * 4)) == NULL ||
	    (g->qs = dalloc(g, N * H * ts)) == NULL ||
	    (g->attd = dalloc(g, natt * ts)) == NULL ||
	    (g->ctxp = dalloc(g, N * H * ts)) == NULL ||
	    (g->dxa = dalloc(g, N * H * ts)) == NULL ||
	    (g->dxb = dalloc(g, N * H * ts)) == NULL ||
	    (g->dh1 = dalloc(g, N * H * ts)) == NULL ||
	    (g->drd = dalloc(g, N * H * ts)) == NULL ||
	    (g->dg = dalloc(g, N * I * ts)) == NULL ||
	    (g->di = dalloc(g, N * I * ts)) == NULL ||
	    (g->dctx = dalloc(g, N * H * ts)) == NULL ||
	    (g->dctxp = dalloc(g, N * H * ts)) == NULL ||
	    (g->datt = dalloc(g, natt * ts)) == NULL ||
	    (g->dqp = dalloc(g, N * H * ts)) == NULL ||
	    (g->dkp = dalloc(g, N * H * ts)) == NULL ||
	    (g->dvp = dalloc(g, N * H * ts)) == NULL)
		goto nomem;
	{
		size_t C = (size_t)(g->V > g->I ? g->V : g->I), chunks;

		if (C < H)
			C = H;
		chunks = (N + COLSUM_ROWS - 1) / COLSUM_ROWS;
		if ((g->part = (float *)dalloc(g, 2 * chunks * C * 4)) == NULL)
			goto nomem;
	}
	if ((g->pin = dalloc(g, (size_t)B * H * ts)) == NULL ||
	    (g->pool_pre = dalloc(g, (size_t)B * H * ts)) == NULL ||
	    (g->pooled = dalloc(g, (size_t)B * H * ts)) == NULL ||
	    (g->pooled_d = dalloc(g, (size_t)B * H * ts)) == NULL ||
	    (g->dB1 = dalloc(g, (size_t)B * H * ts)) == NULL ||
	    (g->dB2 = dalloc(g, (size_t)B * H * ts)) == NULL ||
	    (g->dB3 = dalloc(g, (size_t)B * H * ts)) == NULL ||
	    (g->dseq = dalloc(g, (size_t)B * g->C * ts)) == NULL ||
	    (g->seq_logits = (float *)dalloc(g, (size_t)B * g->C * 4)) == NULL)
		goto nomem;
	/* MLM buffers for the expected 15% of the tokens, grown on demand */
	g->Mcap = (int)(N / 5 + 64);
	if (mlm_alloc(g, g->Mcap) != 0)
		goto nomem;

	/* the batch: ids, types, mask (N), seq labels (B), mpos, mtarget (N),
	 * wte segments (key N, start N+1, rows N), type segments (same) */
	g->batch_ints = 11 * N + (size_t)B + 2;
	if ((g->d_batch = (int32_t *)dalloc(g, g->batch_ints * 4)) == NULL ||
	    cudaMallocHost(&g->h_batch, g->batch_ints * 4) != cudaSuccess)
		goto nomem;
	g->ids = g->d_batch;
	g->types = g->ids + N;
	g->mask = g->types + N;
	g->seql = g->mask + N;
	g->mpos = g->seql + B;
	g->mtarget = g->mpos + N;
	g->wkey = g->mtarget + N;
	g->wstart = g->wkey + N;
	g->wrows = g->wstart + N + 1;
	g->tkey = g->wrows + N;
	g->tstart = g->tkey + N;
	g->trows = g->tstart + N + 1;
	if ((g->sortbuf = (int64_t *)malloc(N * sizeof(int64_t))) == NULL)
		goto nomem;

	/* the optimizer's chunks: every tensor cut in OPT_CHUNK pieces */
	for (ti = 0; ti < g->ntensors; ti++)
		g->nchunks += (int)((m->table[ti].numel + OPT_CHUNK - 1) / OPT_CHUNK);
	g->h_chunks = (struct chunk *)calloc((size_t)g->nchunks, sizeof *g->h_chunks);
	if (g->h_chunks == NULL || g->ntensors > 65535)
		goto nomem;
	n = 0;
	for (ti = 0; ti < g->ntensors; ti++) {
		const struct param_info *pi = &m->table[ti];

		for (k = 0; k < pi->numel; k += OPT_CHUNK) {
			struct chunk *ch = &g->h_chunks[n++];

			ch->off = pi->offset + k;
			ch->len = (uint32_t)(pi->numel - k < OPT_CHUNK ? pi->numel - k : OPT_CHUNK);
			ch->tensor = (uint16_t)ti;
			ch->decay = (uint16_t)pi->decay;
		}
	}
	if ((g->d_chunks = (struct chunk *)dalloc(g, (size_t)g->nchunks * sizeof(struct chunk))) == NULL ||
	    (g->d_opart = (double *)dalloc(g, 2 * (size_t)g->nchunks * sizeof(double))) == NULL ||
	    (g->d_ratio = (float *)dalloc(g, g->ntensors * sizeof(float))) == NULL ||
	    (g->d_small = (double *)dalloc(g, 64 * sizeof(double))) == NULL ||
	    cudaMallocHost(&g->h_opart, 2 * (size_t)g->nchunks * sizeof(double)) != cudaSuccess ||
	    cudaMallocHost(&g->h_ratio, g->ntensors * sizeof(float)) != cudaSuccess)
		goto nomem;
	CK(cudaMemcpy(g->d_chunks, g->h_chunks, (size_t)g->nchunks * sizeof(struct chunk),
	    cudaMemcpyHostToDevice));
	CK(cudaMemset(g->g, 0, g->nparams * 4));
	/* the streams are non-blocking: the legacy stream's copies above
	 * must be done before they start */
	CK(cudaDeviceSynchronize());
	*gp = g;
	return 0;
nomem:
	{
		size_t fr = 0, tot = 0;

		(void)cudaGetLastError();
		cudaMemGetInfo(&fr, &tot);
		errf(err, errlen, "out of GPU memory: %.2f GiB allocated for the model "
		    "(%zu parameters) and a micro-batch of %d x %d when an allocation "
		    "failed (%.2f of %.2f GiB free): use a smaller batch, "
		    "--grad-checkpointing or bf16", (double)g->bytes / 1073741824.0,
		    g->nparams, B, T, (double)fr / 1073741824.0,
		    (double)tot / 1073741824.0);
	}
	gpu_close(g);
	return CADRE_ERR_NOMEM;
}

void
gpu_close(struct gpu_trainer *g)
{
	int l, k;

	if (g == NULL)
		return;
	if (g->s != NULL)
		cudaStreamSynchronize(g->s);
	if (g->sc != NULL)
		cudaStreamSynchronize(g->sc);
#ifdef HAVE_NCCL
	if (g->nranks > 1 && g->comm != NULL)
		ncclCommDestroy(g->comm);
#endif
	for (l = 0; l < g->nla; l++) {
		struct lacts *A = &g->la[l];

		cudaFree(A->qp); cudaFree(A->kp); cudaFree(A->vp); cudaFree(A->att);
		cudaFree(A->ctx); cudaFree(A->r1); cudaFree(A->h1); cudaFree(A->r2);
		cudaFree(A->i); cudaFree(A->gl); cudaFree(A->mean1); cudaFree(A->rstd1);
		cudaFree(A->mean2); cudaFree(A->rstd2);
	}
	if (g->x != NULL)
		for (l = 0; l <= g->L; l++)
			cudaFree(g->x[l]);
	cudaFree(g->emb); cudaFree(g->emb_mean); cudaFree(g->emb_rstd);
	cudaFree(g->qs); cudaFree(g->attd); cudaFree(g->ctxp);
	cudaFree(g->dxa); cudaFree(g->dxb); cudaFree(g->dh1); cudaFree(g->drd);
	cudaFree(g->dg); cudaFree(g->di); cudaFree(g->dctx); cudaFree(g->dctxp);
	cudaFree(g->datt); cudaFree(g->dqp); cudaFree(g->dkp); cudaFree(g->dvp);
	cudaFree(g->part);
	cudaFree(g->hm); cudaFree(g->t); cudaFree(g->tg); cudaFree(g->tl);
	cudaFree(g->dM1); cudaFree(g->dM2); cudaFree(g->dM3);
	cudaFree(g->tmean); cudaFree(g->trstd); cudaFree(g->logits);
	cudaFree(g->dlogits); cudaFree(g->d_losses); cudaFree(g->d_correct);
	cudaFreeHost(g->h_losses); cudaFreeHost(g->h_correct);
	cudaFree(g->pin); cudaFree(g->pool_pre); cudaFree(g->pooled);
	cudaFree(g->pooled_d); cudaFree(g->dB1); cudaFree(g->dB2); cudaFree(g->dB3);
	cudaFree(g->dseq); cudaFree(g->seq_logits);
	cudaFree(g->d_batch); cudaFreeHost(g->h_batch);
	cudaFree(g->d_chunks); cudaFree(g->d_opart); cudaFree(g->d_ratio);
	cudaFree(g->d_small);
	cudaFreeHost(g->h_opart); cudaFreeHost(g->h_ratio);
	if (g->pc != g->p)
		cudaFree(g->pc);
	cudaFree(g->p); cudaFree(g->g); cudaFree(g->m1); cudaFree(g->m2);
	cudaFree(g->ws);
	for (k = 0; k < g->nplans; k++) {
		cublasLtMatmulDescDestroy(g->plans[k].desc);
		cublasLtMatrixLayoutDestroy(g->plans[k].la);
		cublasLtMatrixLayoutDestroy(g->plans[k].lb);
		cublasLtMatrixLayoutDestroy(g->plans[k].lc);
	}
	free(g->plans);
	if (g->lt != NULL)
		cublasLtDestroy(g->lt);
	if (g->s != NULL) {
		for (k = 0; k < 512; k++)
			cudaEventDestroy(g->ev_bucket[k]);
		cudaEventDestroy(g->ev_comm);
		if (g->timing)
			for (k = 0; k < MAX_EVENTS; k++)
				cudaEventDestroy(g->ev[k]);
		cudaStreamDestroy(g->s);
		cudaStreamDestroy(g->sc);
	}
	free(g->sortbuf);
	free(g->h_chunks);
	free(g->loff);
	free(g->la);
	free(g->x);
	free(g);
}

/* ---------------------------------------------------------------- host <-> device */

static void
refresh_compute_copy(struct gpu_trainer *g)
{
	if (g->prec == GPU_BF16)
		k_convert<__nv_bfloat16><<<nblocks(g->nparams), NTHREADS, 0, g->s>>>(
		    (__nv_bfloat16 *)g->pc, g->p, g->nparams);
	else if (g->prec == GPU_FP16)
		k_convert<__half><<<nblocks(g->nparams), NTHREADS, 0, g->s>>>(
		    (__half *)g->pc, g->p, g->nparams);
}

int
gpu_upload(struct gpu_trainer *g, const struct bert_model *m, const struct optim *o)
{
	size_t bytes = g->nparams * 4;

	CK(cudaMemcpyAsync(g->p, m->params_mem, bytes, cudaMemcpyHostToDevice, g->s));
	if (o != NULL && o->m != NULL) {
		CK(cudaMemcpyAsync(g->m1, o->m, bytes, cudaMemcpyHostToDevice, g->s));
		CK(cudaMemcpyAsync(g->m2, o->v, bytes, cudaMemcpyHostToDevice, g->s));
	} else {
		CK(cudaMemsetAsync(g->m1, 0, bytes, g->s));
		CK(cudaMemsetAsync(g->m2, 0, bytes, g->s));
	}
	refresh_compute_copy(g);
	CK(cudaStreamSynchronize(g->s));
	return 0;
}

int
gpu_download(struct gpu_trainer *g, struct bert_model *m, struct optim *o)
{
	size_t bytes = g->nparams * 4;

	CK(cudaStreamSynchronize(g->sc));
	CK(cudaMemcpyAsync(m->params_mem, g->p, bytes, cudaMemcpyDeviceToHost, g->s));
	if (o != NULL && o->m != NULL) {
		CK(cudaMemcpyAsync(o->m, g->m1, bytes, cudaMemcpyDeviceToHost, g->s));
		CK(cudaMemcpyAsync(o->v, g->m2, bytes, cudaMemcpyDeviceToHost, g->s));
	}
	CK(cudaStreamSynchronize(g->s));
	return 0;
}

int
gpu_download_grads(struct gpu_trainer *g, struct bert_model *m)
{
	CK(cudaStreamSynchronize(g->sc));
	CK(cudaMemcpyAsync(m->grads_mem, g->g, g->nparams * 4, cudaMemcpyDeviceToHost, g->s));
	CK(cudaStreamSynchronize(g->s));
	return 0;
}

int
gpu_upload_grads(struct gpu_trainer *g, const struct bert_model *m)
{
	CK(cudaStreamSynchronize(g->sc));
	CK(cudaMemcpyAsync(g->g, m->grads_mem, g->nparams * 4, cudaMemcpyHostToDevice, g->s));
	CK(cudaStreamSynchronize(g->s));
	return 0;
}

void
gpu_zero_grad(struct gpu_trainer *g)
{
	CK(cudaMemsetAsync(g->g, 0, g->nparams * 4, g->s));
}

/* ---------------------------------------------------------------- steps */

/* The losses and correct counts of the micro-batch, summed on the host in
 * order (as ops.c sums its losses). */
static void
collect(struct gpu_trainer *g, struct gpu_micro_out *out)
{
	int M = g->c.task == BERT_PRETRAIN ? g->M : 0, i;

	memset(out, 0, sizeof *out);
	if (M > 0) {
		CK(cudaMemcpyAsync(g->h_losses, g->d_losses, (size_t)M * sizeof(double),
		    cudaMemcpyDeviceToHost, g->s));
		CK(cudaMemcpyAsync(g->h_correct, g->d_correct, (size_t)M * sizeof(int),
		    cudaMemcpyDeviceToHost, g->s));
	}
	CK(cudaMemcpyAsync(g->h_losses + g->Mcap, g->d_losses + g->Mcap,
	    (size_t)g->B * sizeof(double), cudaMemcpyDeviceToHost, g->s));
	CK(cudaMemcpyAsync(g->h_correct + g->Mcap, g->d_correct + g->Mcap,
	    (size_t)g->B * sizeof(int), cudaMemcpyDeviceToHost, g->s));
	CK(cudaStreamSynchronize(g->s));
	tcollect(g);
	for (i = 0; i < M; i++) {
		out->mlm_sum += g->h_losses[i];
		out->mlm_correct += g->h_correct[i];
	}
	for (i = 0; i < g->B; i++) {
		out->seq_sum += g->h_losses[g->Mcap + i];
		out->seq_correct += g->h_correct[g->Mcap + i];
	}
	out->masked = M;
}

int
gpu_micro_step(struct gpu_trainer *g, const struct bert_batch *b, uint64_t step,
    int train, float mlm_scale, float seq_scale, int last, struct gpu_micro_out *out)
{
	char err[256];
	int error;

	if ((error = stage_batch(g, b, err, sizeof err)) != 0) {
		fprintf(stderr, "cadre-train: GPU: %s\n", err);
		return error;
	}
	switch (g->prec) {
	case GPU_FP32:
		forward_t<float>(g, step, train, 1, mlm_scale, seq_scale);
		backward_t<float>(g, step, train, last);
		break;
	case GPU_BF16:
		forward_t<__nv_bfloat16>(g, step, train, 1, mlm_scale, seq_scale);
		backward_t<__nv_bfloat16>(g, step, train, last);
		break;
	default:
		forward_t<__half>(g, step, train, 1, mlm_scale, seq_scale);
		backward_t<__half>(g, step, train, last);
		break;
	}
	CK(cudaGetLastError());
	collect(g, out);
	return 0;
}

int
gpu_forward(struct gpu_trainer *g, const struct bert_batch *b,
    struct gpu_micro_out *out)
{
	char err[256];
	int error;

	if ((error = stage_batch(g, b, err, sizeof err)) != 0) {
		fprintf(stderr, "cadre-train: GPU: %s\n", err);
		return error;
	}
	switch (g->prec) {
	case GPU_FP32: forward_t<float>(g, 0, 0, 0, 1.0f, 1.0f); break;
	case GPU_BF16: forward_t<__nv_bfloat16>(g, 0, 0, 0, 1.0f, 1.0f); break;
	default: forward_t<__half>(g, 0, 0, 0, 1.0f, 1.0f); break;
	}
	CK(cudaGetLastError());
	collect(g, out);
	return 0;
}

int
gpu_optim_step(struct gpu_trainer *g, struct optim *o, double *norm, int *skipped)
{
	double sumsq = 0.0, nrm;
	float lr, bc1, bc2, gscale, ls = g->loss_scale;
	int i;

	*skipped = 0;
	tstart(g, T_OPT);
	k_sumsq<<<g->nchunks, NTHREADS, 0, g->s>>>(g->d_opart, g->g, g->d_chunks);
	tend(g);
	CK(cudaMemcpyAsync(g->h_opart, g->d_opart, (size_t)g->nchunks * sizeof(double),
	    cudaMemcpyDeviceToHost, g->s));
	CK(cudaStreamSynchronize(g->s));
	for (i = 0; i < g->nchunks; i++)
		sumsq += g->h_opart[i];
	nrm = sqrt(sumsq) / (double)ls;
	*norm = nrm;
	if (g->prec == GPU_FP16 && !isfinite(sumsq)) {
		/* dynamic loss scaling: skip the step, halve the scale */
		*skipped = 1;
		g->skipped++;
		g->good_steps = 0;
		if (g->loss_scale > 1.0f)
			g->loss_scale /= 2.0f;
		tcollect(g);
		return 0;
	}
	lr = optim_lr(o, o->t);
	/* As the CPU: clip / (norm + 1e-6) when the norm exceeds clip. */
	gscale = 1.0f / ls;
	if (o->clip > 0.0f && nrm > o->clip)
		gscale *= (float)(o->clip / (nrm + 1e-6));
	o->t++;
	bc1 = 1.0f - powf(o->beta1, (float)o->t);
	bc2 = 1.0f - powf(o->beta2, (float)o->t);
	tstart(g, T_OPT);
	if (o->kind == OPTIM_ADAMW) {
		float step = lr / bc1, sbc2 = sqrtf(bc2);

		switch (g->prec) {
		case GPU_FP32:
			k_adamw<float><<<g->nchunks, NTHREADS, 0, g->s>>>(g->p, g->g, g->m1,
			    g->m2, (float *)NULL, g->d_chunks, lr, o->beta1, o->beta2,
			    o->eps, o->weight_decay, step, sbc2, gscale);
			break;
		case GPU_BF16:
			k_adamw<__nv_bfloat16><<<g->nchunks, NTHREADS, 0, g->s>>>(g->p, g->g,
			    g->m1, g->m2, (__nv_bfloat16 *)g->pc, g->d_chunks, lr, o->beta1,
			    o->beta2, o->eps, o->weight_decay, step, sbc2, gscale);
			break;
		default:
			k_adamw<__half><<<g->nchunks, NTHREADS, 0, g->s>>>(g->p, g->g,
			    g->m1, g->m2, (__half *)g->pc, g->d_chunks, lr, o->beta1,
			    o->beta2, o->eps, o->weight_decay, step, sbc2, gscale);
			break;
		}
	} else {
		size_t ti;
		int c = 0;

		k_lamb1<<<g->nchunks, NTHREADS, 0, g->s>>>(g->p, g->g, g->m1, g->m2,
		    g->d_chunks, g->d_opart, o->beta1, o->beta2, o->eps,
		    o->weight_decay, bc1, bc2, gscale);
		CK(cudaMemcpyAsync(g->h_opart, g->d_opart, 2 * (size_t)g->nchunks *
		    sizeof(double), cudaMemcpyDeviceToHost, g->s));
		CK(cudaStreamSynchronize(g->s));
		/* the trust ratio |p| / |u| per tensor, only where decay applies */
		for (ti = 0; ti < g->ntensors; ti++) {
			double pn = 0.0, un = 0.0, ratio = 1.0;
			int decay = 0;

			while (c < g->nchunks && g->h_chunks[c].tensor == ti) {
				pn += g->h_opart[2 * c];
				un += g->h_opart[2 * c + 1];
				decay = g->h_chunks[c].decay;
				c++;
			}
			pn = sqrt(pn);
			un = sqrt(un);
			if (decay && pn > 0.0 && un > 0.0)
				ratio = pn / un;
			g->h_ratio[ti] = (float)ratio;
		}
		CK(cudaMemcpyAsync(g->d_ratio, g->h_ratio, g->ntensors * sizeof(float),
		    cudaMemcpyHostToDevice, g->s));
		switch (g->prec) {
		case GPU_FP32:
			k_lamb2<float><<<g->nchunks, NTHREADS, 0, g->s>>>(g->p, g->g,
			    (float *)NULL, g->d_chunks, g->d_ratio, lr);
			break;
		case GPU_BF16:
			k_lamb2<__nv_bfloat16><<<g->nchunks, NTHREADS, 0, g->s>>>(g->p, g->g,
			    (__nv_bfloat16 *)g->pc, g->d_chunks, g->d_ratio, lr);
			break;
		default:
			k_lamb2<__half><<<g->nchunks, NTHREADS, 0, g->s>>>(g->p, g->g,
			    (__half *)g->pc, g->d_chunks, g->d_ratio, lr);
			break;
		}
	}
	tend(g);
	CK(cudaGetLastError());
	if (g->prec == GPU_FP16 && ++g->good_steps >= FP16_GROWTH) {
		g->good_steps = 0;
		g->loss_scale *= 2.0f;
	}
	if (g->timing) {
		CK(cudaStreamSynchronize(g->s));
		tcollect(g);
		g->tsteps++;
	}
	return 0;
}

float
gpu_loss_scale(const struct gpu_trainer *g)
{
	return g->loss_scale;
}

void
gpu_set_loss_scale(struct gpu_trainer *g, float s)
{
	if (g->prec == GPU_FP16 && s >= 1.0f && isfinite(s))
		g->loss_scale = s;
}

int64_t
gpu_skipped_steps(const struct gpu_trainer *g)
{
	return g->skipped;
}

uint64_t
gpu_peak_bytes(const struct gpu_trainer *g)
{
	return g->bytes;
}

void
gpu_print_timers(const struct gpu_trainer *g, FILE *f)
{
	double total = 0.0;
	int i;

	if (!g->timing || g->tsteps == 0)
		return;
	for (i = 0; i < T_NCLASS; i++)
		total += g->tms[i];
	fprintf(f, "gpu time per step by operation class (%lld steps, cudaEvent pairs):\n",
	    (long long)g->tsteps);
	/* classes with no timed launch (the NCCL stream is not timed) are
	 * left out */
	for (i = 0; i < T_NCLASS; i++)
		if (g->tms[i] > 0.0)
			fprintf(f, "  %-32s %9.3f ms  %5.1f%%\n", op_names[i],
			    g->tms[i] / (double)g->tsteps,
			    total > 0 ? 100.0 * g->tms[i] / total : 0.0);
	fprintf(f, "  %-32s %9.3f ms\n", "total (timed)", total / (double)g->tsteps);
}

/* ---------------------------------------------------------------- self-test */

/*
 * The kernels' dropout factors (drop_factor, drop_factor4, compiled for
 * the host here) against philox.c's dropout_apply, which the CPU path and
 * the torch reference use: the same masks, element for element, for
 * several keys, probabilities and element ranges. Needs no GPU.
 */
int
gpu_selftest_dropout(char *err, size_t errlen)
{
	static const float ps[] = { 0.1f, 0.5f, 0.9f };
	static const uint64_t firsts[] = { 0, 4, 12345, (1ull << 32) + 8, 3ull << 34 };
	const size_t n = 4096;
	float *x = (float *)malloc(n * sizeof(float));
	int bad = 0;

	if (x == NULL)
		return CADRE_ERR_NOMEM;
	for (unsigned pi = 0; pi < sizeof ps / sizeof ps[0] && !bad; pi++)
	for (unsigned fi = 0; fi < sizeof firsts / sizeof firsts[0] && !bad; fi++)
	for (int t = 0; t < 5 && !bad; t++) {
		struct dropout_key ck;
		struct dkey gk;
		size_t i;

		ck.seed = 0x123456789abcdefull * (uint64_t)(t + 1);
		ck.step = ((uint64_t)t << 33) + 77u * fi;
		ck.layer = (uint32_t)(3 * t);
		ck.tensor = (uint32_t)t;
		ck.p = ps[pi];
		gk.k0 = (uint32_t)ck.seed;
		gk.k1 = (uint32_t)(ck.seed >> 32);
		gk.c1 = (ck.layer << 8) | ck.tensor;
		gk.c2 = (uint32_t)ck.step;
		gk.c3 = (uint32_t)(ck.step >> 32);
		gk.p = ck.p;
		gk.scale = 1.0f / (1.0f - ck.p);
		for (i = 0; i < n; i++)
			x[i] = 1.0f;
		dropout_apply(&ck, firsts[fi], x, n);
		for (i = 0; i < n; i++) {
			uint64_t e = firsts[fi] + i;
			float f4[4];

			drop_factor4(gk, e >> 2, f4);
			if (drop_factor(gk, e) != x[i] || f4[e & 3] != x[i]) {
				errf(err, errlen, "dropout factor of element %llu (p %g, tensor %d): "
				    "CPU %g, GPU %g / %g", (unsigned long long)e, (double)ck.p,
				    t, (double)x[i], (double)drop_factor(gk, e), (double)f4[e & 3]);
				bad = 1;
				break;
			}
		}
	}
	free(x);
	return bad ? CADRE_ERR_INVALID : 0;
}

/*
 * lt_shape_of against ops.c's sgemm_rm: cuBLASLt's semantics emulated on
 * the host (column-major D(m,n) = op(X) op(Y), op(X) of the layout rows x
 * columns with its leading dimension, m, n, k taken from the layouts as
 * cuBLASLt takes them), for every transpose pair, odd sizes and padded
 * leading dimensions, and the results compared. Needs no GPU.
 */
int
gpu_selftest_gemm_layout(char *err, size_t errlen)
{
	uint32_t x = 12345;
	int ta, tb, trial;

#define RND() (x = x * 1664525u + 1013904223u, (float)(x >> 8) / 16777216.0f - 0.5f)
	for (trial = 0; trial < 40; trial++)
	for (ta = 0; ta < 2; ta++)
	for (tb = 0; tb < 2; tb++) {
		int M = 1 + trial % 7, N = 1 + (trial / 7) % 5 + trial % 3, K = 1 + trial % 5;
		int lda = (ta ? M : K) + trial % 3, ldb = (tb ? K : N) + trial % 2;
		int ldc = N + trial % 4, i, j, k;
		size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb;
		size_t nc = (size_t)M * ldc;
		float A[64 * 8], B[64 * 8], C[64 * 8], D[64 * 8];
		struct lt_shape sh = lt_shape_of(ta, tb, M, N, K, lda, ldb, ldc);
		uint64_t m, n, kx, ky;

		for (i = 0; i < (int)na; i++)
			A[i] = RND();
		for (i = 0; i < (int)nb; i++)
			B[i] = RND();
		for (i = 0; i < (int)nc; i++)
			C[i] = D[i] = 0.0f;
		sgemm_rm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
		/* cuBLASLt's view: m x k = op(X), k x n = op(Y), m x n = D */
		m = sh.opx == CUBLAS_OP_N ? sh.rx : sh.cx;
		kx = sh.opx == CUBLAS_OP_N ? sh.cx : sh.rx;
		ky = sh.opy == CUBLAS_OP_N ? sh.ry : sh.cy;
		n = sh.opy == CUBLAS_OP_N ? sh.cy : sh.ry;
		if (m != sh.rd || n != sh.cd || kx != ky || (int64_t)sh.rx > sh.ldx ||
		    (int64_t)sh.ry > sh.ldy || (int64_t)sh.rd > sh.ldd) {
			errf(err, errlen, "GEMM layout ta=%d tb=%d M=%d N=%d K=%d: shapes do "
			    "not agree (m %llu n %llu k %llu/%llu, D %llux%llu)", ta, tb, M, N,
			    K, (unsigned long long)m, (unsigned long long)n,
			    (unsigned long long)kx, (unsigned long long)ky,
			    (unsigned long long)sh.rd, (unsigned long long)sh.cd);
			return CADRE_ERR_INVALID;
		}
		for (i = 0; i < (int)m; i++)
			for (j = 0; j < (int)n; j++) {
				float acc = 0.0f;

				for (k = 0; k < (int)kx; k++) {
					float xv = sh.opx == CUBLAS_OP_N ? B[i + k * sh.ldx] :
					    B[k + i * sh.ldx];
					float yv = sh.opy == CUBLAS_OP_N ? A[k + j * sh.ldy] :
					    A[j + k * sh.ldy];

					acc += xv * yv;
				}
				D[i + j * sh.ldd] = acc;
			}
		for (i = 0; i < (int)nc; i++)
			if (fabsf(C[i] - D[i]) > 1e-5f) {
				errf(err, errlen, "GEMM layout ta=%d tb=%d M=%d N=%d K=%d lda %d "
				    "ldb %d ldc %d: element %d is %g, sgemm_rm says %g", ta, tb,
				    M, N, K, lda, ldb, ldc, i, (double)D[i], (double)C[i]);
				return CADRE_ERR_INVALID;
			}
	}
#undef RND
	return 0;
}

/* ---------------------------------------------------------------- NCCL */

#ifdef HAVE_NCCL
int
gpu_comm_id(uint8_t id[GPU_COMM_ID_BYTES], char *err, size_t errlen)
{
	ncclUniqueId u;
	ncclResult_t r;

	static_assert(sizeof u == GPU_COMM_ID_BYTES, "ncclUniqueId size");
	if ((r = ncclGetUniqueId(&u)) != ncclSuccess) {
		errf(err, errlen, "ncclGetUniqueId: %s", ncclGetErrorString(r));
		return CADRE_ERR_SYSTEM;
	}
	memcpy(id, &u, sizeof u);
	return 0;
}

int
gpu_comm_init(struct gpu_trainer *g, const uint8_t id[GPU_COMM_ID_BYTES], int rank,
    int nranks, char *err, size_t errlen)
{
	ncclUniqueId u;
	ncclResult_t r;

	if (nranks <= 1)
		return 0;
	memcpy(&u, id, sizeof u);
	CK(cudaSetDevice(g->dev));
	if ((r = ncclCommInitRank(&g->comm, nranks, u, rank)) != ncclSuccess) {
		errf(err, errlen, "ncclCommInitRank (rank %d of %d): %s", rank, nranks,
		    ncclGetErrorString(r));
		return CADRE_ERR_SYSTEM;
	}
	g->rank = rank;
	g->nranks = nranks;
	return 0;
}

static int
env_int(const char *name, int lo, int hi, int *v, char *err, size_t errlen)
{
	const char *s = getenv(name);
	char *end;
	long x;

	if (s == NULL) {
		errf(err, errlen, "%s is not set (launch with torchrun-style MASTER_ADDR, "
		    "MASTER_PORT, RANK, WORLD_SIZE, or under mpirun)", name);
		return CADRE_ERR_INVALID;
	}
	errno = 0;
	x = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || x < lo || x > hi) {
		errf(err, errlen, "%s='%s': expected an integer in %d..%d", name, s, lo, hi);
		return CADRE_ERR_INVALID;
	}
	*v = (int)x;
	return 0;
}

static int
full_io(int fd, uint8_t *buf, size_t n, int wr)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = wr ? write(fd, buf + done, n - done) : read(fd, buf + done, n - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

int
gpu_comm_init_env(struct gpu_trainer *g, int *rank, int *nranks, char *err,
    size_t errlen)
{
	const char *addr = getenv("MASTER_ADDR"), *port = getenv("MASTER_PORT");
	struct addrinfo hints, *ai = NULL, *a;
	uint8_t id[GPU_COMM_ID_BYTES];
	int r = 0, n = 1, error, fd = -1, i, tries;

	if ((error = env_int("WORLD_SIZE", 1, 65536, &n, err, errlen)) != 0 ||
	    (error = env_int("RANK", 0, n - 1, &r, err, errlen)) != 0)
		return error;
	*rank = r;
	*nranks = n;
	if (n == 1)
		return 0;
	if (addr == NULL || port == NULL) {
		errf(err, errlen, "WORLD_SIZE is %d but MASTER_ADDR or MASTER_PORT is not "
		    "set: rank 0's address and a free port", n);
		return CADRE_ERR_INVALID;
	}
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = r == 0 ? AI_PASSIVE : 0;
	if ((error = getaddrinfo(r == 0 ? NULL : addr, port, &hints, &ai)) != 0) {
		errf(err, errlen, "MASTER_ADDR %s, MASTER_PORT %s: %s", addr, port,
		    gai_strerror(error));
		return CADRE_ERR_INVALID;
	}
	error = CADRE_ERR_SYSTEM;
	if (r == 0) {
		int one = 1, cfd;

		if ((error = gpu_comm_id(id, err, errlen)) != 0)
			goto out;
		error = CADRE_ERR_SYSTEM;
		for (a = ai; a != NULL; a = a->ai_next) {
			if ((fd = socket(a->ai_family, a->ai_socktype, 0)) < 0)
				continue;
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
			if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0)
				break;
			close(fd);
			fd = -1;
		}
		if (fd < 0) {
			errf(err, errlen, "rank 0 cannot listen on port %s: %s", port,
			    strerror(errno));
			goto out;
		}
		/* every other rank connects once and gets the id */
		for (i = 1; i < n; i++) {
			if ((cfd = accept(fd, NULL, NULL)) < 0 ||
			    full_io(cfd, id, sizeof id, 1) != 0) {
				errf(err, errlen, "rank 0: handing the NCCL id to rank %d of %d "
				    "failed: %s", i, n, strerror(errno));
				if (cfd >= 0)
					close(cfd);
				goto out;
			}
			close(cfd);
		}
	} else {
		/* rank 0 may not listen yet: try for two minutes */
		for (tries = 0; tries < 120; tries++) {
			for (a = ai; a != NULL; a = a->ai_next) {
				if ((fd = socket(a->ai_family, a->ai_socktype, 0)) < 0)
					continue;
				if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
					break;
				close(fd);
				fd = -1;
			}
			if (fd >= 0)
				break;
			sleep(1);
		}
		if (fd < 0 || full_io(fd, id, sizeof id, 0) != 0) {
			errf(err, errlen, "rank %d: no NCCL id from %s:%s after 120 s: %s",
			    r, addr, port, strerror(errno));
			goto out;
		}
	}
	error = gpu_comm_init(g, id, r, n, err, errlen);
out:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return error;
}

int
gpu_comm_sum_f64(struct gpu_trainer *g, double *x, int n)
{
	if (g->nranks <= 1)
		return 0;
	if (n > 64)
		return CADRE_ERR_RANGE;
	CK(cudaMemcpyAsync(g->d_small, x, (size_t)n * sizeof(double),
	    cudaMemcpyHostToDevice, g->sc));
	if (ncclAllReduce(g->d_small, g->d_small, (size_t)n, ncclDouble, ncclSum,
	    g->comm, g->sc) != ncclSuccess)
		return CADRE_ERR_SYSTEM;
	CK(cudaMemcpyAsync(x, g->d_small, (size_t)n * sizeof(double),
	    cudaMemcpyDeviceToHost, g->sc));
	CK(cudaStreamSynchronize(g->sc));
	return 0;
}

int
gpu_comm_max_i64(struct gpu_trainer *g, int64_t *x, int n)
{
	if (g->nranks <= 1)
		return 0;
	if (n > 64)
		return CADRE_ERR_RANGE;
	CK(cudaMemcpyAsync(g->d_small, x, (size_t)n * sizeof(int64_t),
	    cudaMemcpyHostToDevice, g->sc));
	if (ncclAllReduce(g->d_small, g->d_small, (size_t)n, ncclInt64, ncclMax,
	    g->comm, g->sc) != ncclSuccess)
		return CADRE_ERR_SYSTEM;
	CK(cudaMemcpyAsync(x, g->d_small, (size_t)n * sizeof(int64_t),
	    cudaMemcpyDeviceToHost, g->sc));
	CK(cudaStreamSynchronize(g->sc));
	return 0;
}
#else	/* !HAVE_NCCL */
int
gpu_comm_id(uint8_t id[GPU_COMM_ID_BYTES], char *err, size_t errlen)
{
	(void)id;
	errf(err, errlen, "built without NCCL (./configure --with-nccl): one GPU per run");
	return CADRE_ERR_UNSUPPORTED;
}

int
gpu_comm_init(struct gpu_trainer *g, const uint8_t id[GPU_COMM_ID_BYTES], int rank,
    int nranks, char *err, size_t errlen)
{
	(void)g; (void)id; (void)rank;
	if (nranks <= 1)
		return 0;
	errf(err, errlen, "built without NCCL (./configure --with-nccl): one GPU per run");
	return CADRE_ERR_UNSUPPORTED;
}

int
gpu_comm_init_env(struct gpu_trainer *g, int *rank, int *nranks, char *err,
    size_t errlen)
{
	const char *ws = getenv("WORLD_SIZE");

	(void)g;
	*rank = 0;
	*nranks = 1;
	if (ws == NULL || strcmp(ws, "1") == 0)
		return 0;
	errf(err, errlen, "built without NCCL (./configure --with-nccl): one GPU per run");
	return CADRE_ERR_UNSUPPORTED;
}

int
gpu_comm_sum_f64(struct gpu_trainer *g, double *x, int n)
{
	(void)g; (void)x; (void)n;
	return 0;
}

int
gpu_comm_max_i64(struct gpu_trainer *g, int64_t *x, int n)
{
	(void)g; (void)x; (void)n;
	return 0;
}
#endif
