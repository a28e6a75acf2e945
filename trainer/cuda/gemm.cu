/*
 * The products of the CUDA path through cuBLASLt: a plan (descriptor,
 * layouts, algorithm) per distinct call, cached; a plain kernel where
 * cuBLASLt has no algorithm; the linear layers and their backward on top.
 */
#include "config.h"

#include "engine_int.cuh"
#include "kernels_linear.cuh"

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

struct lt_shape
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

#define TUNE_CANDIDATES	8
#define TUNE_RUNS	5

/*
 * CADRE_GPU_GEMM_TUNE=1: of the heuristic's candidates, the one that runs
 * fastest here (one untimed call each first, since a kernel's first launch
 * loads its module; then TUNE_RUNS calls into a scratch output timed with
 * cudaEvents),
 * as torch.backends.cudnn.benchmark chooses; not the MLM head's, whose
 * shapes change with every batch. The choice depends on
 * timing, so two runs may pick algorithms that round differently: off by
 * default, where every run computes the same bits.
 */
static int
tune_pick(struct gpu_trainer *g, struct plan *pl, const cublasLtMatmulHeuristicResult_t *res,
    int nres, const void *A, const void *B, size_t cbytes)
{
	cudaEvent_t e0, e1;
	float best = 0.0f, alpha = 1.0f, beta = 0.0f;
	int i, r, pick = 0, found = 0;

	if (cbytes > g->tune_bytes) {
		cudaFree(g->tune_out);
		g->tune_out = NULL;
		g->tune_bytes = 0;
		if (cudaMalloc(&g->tune_out, cbytes) != cudaSuccess) {
			(void)cudaGetLastError();
			return 0;
		}
		g->tune_bytes = cbytes;
	}
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	for (i = 0; i < nres; i++) {
		cublasStatus_t st;
		float ms;

		st = cublasLtMatmul(g->lt, pl->desc, &alpha, B, pl->la, A, pl->lb, &beta,
		    g->tune_out, pl->lc, g->tune_out, pl->lc, &res[i].algo, g->ws,
		    WORKSPACE_BYTES, g->s);
		if (st != CUBLAS_STATUS_SUCCESS)
			continue;
		CK(cudaEventRecord(e0, g->s));
		for (r = 0; r < TUNE_RUNS && st == CUBLAS_STATUS_SUCCESS; r++)
			st = cublasLtMatmul(g->lt, pl->desc, &alpha, B, pl->la, A, pl->lb,
			    &beta, g->tune_out, pl->lc, g->tune_out, pl->lc, &res[i].algo,
			    g->ws, WORKSPACE_BYTES, g->s);
		CK(cudaEventRecord(e1, g->s));
		CK(cudaEventSynchronize(e1));
		if (st != CUBLAS_STATUS_SUCCESS)
			continue;
		CK(cudaEventElapsedTime(&ms, e0, e1));
		if (!found || ms < best) {
			best = ms;
			pick = i;
			found = 1;
		}
	}
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	return pick;
}

/* A product gemm() gives its own kernels (plan.naive says which). */
struct plain_gemm {
	int		 kind, ta, tb, M, N, K;
	const void	*A;
	int		 lda;
	long long	 sA;
	const void	*B;
	int		 ldb;
	long long	 sB;
	void		*C;
	int		 ldc;
	long long	 sC;
	int		 batch;
	float		 alpha, beta;
	const void	*bias;
	long long	 sbias;
};

template <typename TA, typename TC>
static void
plain_gemm(cudaStream_t st, const struct plain_gemm *q)
{
	if (q->kind == PLAN_WARP) {
		unsigned nb = (unsigned)(((size_t)q->M * q->N * 32 + 255) / 256);

		k_gemm_warp<TA, TC><<<nb, 256, 0, st>>>(q->ta, q->tb, q->M, q->N, q->K,
		    (const TA *)q->A, q->lda, (const TA *)q->B, q->ldb, (TC *)q->C, q->ldc,
		    q->alpha, q->beta, (const TC *)q->bias);
	} else {
		dim3 grid((unsigned)(((size_t)q->M * q->N + 255) / 256), (unsigned)q->batch);

		k_gemm_naive<TA, TC><<<grid, 256, 0, st>>>(q->ta, q->tb, q->M, q->N, q->K,
		    (const TA *)q->A, q->lda, q->sA, (const TA *)q->B, q->ldb, q->sB,
		    (TC *)q->C, q->ldc, q->sC, q->alpha, q->beta, (const TC *)q->bias,
		    q->sbias);
	}
}

/*
 * Row-major C(M,N) = alpha op(A)(M,K) op(B)(K,N) + beta C (+ bias(N) on
 * every row), batch of them at strides sA, sB, sC (and sbias, the bias's,
 * in elements); A and B of type ab, C of type ct, fp32 accumulation.
 * cuBLASLt is column-major: it computes C^T = op(B)^T op(A)^T, i.e. B is
 * its first operand.
 */
void
gemm(struct gpu_trainer *g, int ta, int tb, int M, int N, int K,
    const void *A, int lda, long long sA, const void *B, int ldb, long long sB,
    void *C, int ldc, long long sC, int batch, float alpha, float beta,
    cudaDataType_t ab, cudaDataType_t ct, const void *bias, long long sbias)
{
	int key[PLAN_KEY] = { ta, tb, M, N, K, lda, ldb, ldc, batch, (int)ab, (int)ct,
		bias != NULL, align_of(A), align_of(B), align_of(C),
		bias != NULL ? align_of(bias) : 0, (int)(sA % 1000003),
		(int)(sB % 1000003), (int)(sC % 1000003), beta != 0.0f,
		(int)(sbias % 1000003) };
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
	for (i = 0; i < g->nplans; i++)
		if (memcmp(g->plans[i].key, key, sizeof key) == 0) {
			pl = &g->plans[i];
			break;
		}
	if (pl == NULL) {
		struct lt_shape sh = lt_shape_of(ta, tb, M, N, K, lda, ldb, ldc);
		cublasLtMatmulPreference_t pref;
		cublasLtMatmulHeuristicResult_t res[TUNE_CANDIDATES];
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
		memset(pl, 0, sizeof *pl);
		memcpy(pl->key, key, sizeof key);
		pl->dims[0] = M; pl->dims[1] = N; pl->dims[2] = K;
		pl->dims[3] = ta; pl->dims[4] = tb; pl->dims[5] = batch;
		pl->flops = 2.0 * M * N * (double)K * batch;
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
			if (batch > 1) {
				int64_t bs = sbias;

				CKB(cublasLtMatmulDescSetAttribute(pl->desc,
				    CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bs, sizeof bs));
			}
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
		/* a skinny product (a head's logits) takes k_gemm_warp: what
		 * cuBLASLt offers for it at the heads' 4-byte alignment took
		 * 0.7 ms a step for bert-large's 64 x 2 x 1024 on an H200 */
		if (batch == 1 && (M <= 8 || N <= 8) && K >= 128)
			pl->naive = PLAN_WARP;
		else if (cublasLtMatmulAlgoGetHeuristic(g->lt, pl->desc, pl->la, pl->lb,
		    pl->lc, pl->lc, pref, g->tune ? TUNE_CANDIDATES : 1, res, &nres) !=
		    CUBLAS_STATUS_SUCCESS || nres < 1)
			pl->naive = PLAN_NAIVE;
		CKB(cublasLtMatmulPreferenceDestroy(pref));
		if (pl->naive == PLAN_NAIVE)
			fprintf(stderr, "cadre-train: GPU: no cuBLASLt algorithm for M=%d N=%d "
			    "K=%d ta=%d tb=%d batch=%d (types %d/%d): a plain kernel does it\n",
			    M, N, K, ta, tb, batch, (int)ab, (int)ct);
		else if (pl->naive == 0) {
			size_t es = ct == CUDA_R_32F ? 4 : 2;
			size_t cb = ((size_t)(batch - 1) * (size_t)sC + (size_t)(M - 1) * ldc +
			    (size_t)N) * es;

			/* the MLM head's shapes change with every batch's count
			 * of labelled positions (g->M): timing them would cost
			 * more than it saves, so they take the heuristic's */
			int fixed = M != g->M && N != g->M && K != g->M;

			pl->algo = res[nres > 1 && fixed ?
			    tune_pick(g, pl, res, nres, A, B, cb) : 0].algo;
		}
		g->nplans++;
	} else if (bias != NULL) {
		CKB(cublasLtMatmulDescSetAttribute(pl->desc,
		    CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
	}
	tstart(g, T_GEMM);
	tplan(g, (int)(pl - g->plans));
	if (pl->naive) {
		const struct plain_gemm pg = { pl->naive, ta, tb, M, N, K, A, lda, sA, B,
			ldb, sB, C, ldc, sC, batch, alpha, beta, bias, sbias };

		if (ab == CUDA_R_32F)
			plain_gemm<float, float>(g->s, &pg);
		else if (ab == CUDA_R_16BF && ct == CUDA_R_32F)
			plain_gemm<__nv_bfloat16, float>(g->s, &pg);
		else if (ab == CUDA_R_16BF)
			plain_gemm<__nv_bfloat16, __nv_bfloat16>(g->s, &pg);
		else if (ct == CUDA_R_32F)
			plain_gemm<__half, float>(g->s, &pg);
		else
			plain_gemm<__half, __half>(g->s, &pg);
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
			pl->naive = PLAN_NAIVE;
			tend(g);
			gemm(g, ta, tb, M, N, K, A, lda, sA, B, ldb, sB, C, ldc, sC, batch,
			    alpha, beta, ab, ct, bias != NULL ? bias : late_bias, sbias);
			return;
		} else if (st != CUBLAS_STATUS_SUCCESS)
			gpu_die(__FILE__, __LINE__, "cublasLtMatmul", cublasLtGetStatusString(st));
	}
	if (late_bias != NULL) {
		dim3 nb((unsigned)(((size_t)M * N + 255) / 256), (unsigned)batch);

		if (ct == CUDA_R_32F)
			k_add_bias<float><<<nb, 256, 0, g->s>>>((float *)C,
			    (const float *)late_bias, M, N, ldc, sC, sbias);
		else if (ct == CUDA_R_16BF)
			k_add_bias<__nv_bfloat16><<<nb, 256, 0, g->s>>>((__nv_bfloat16 *)C,
			    (const __nv_bfloat16 *)late_bias, M, N, ldc, sC, sbias);
		else
			k_add_bias<__half><<<nb, 256, 0, g->s>>>((__half *)C,
			    (const __half *)late_bias, M, N, ldc, sC, sbias);
	}
	tend(g);
}

/* ---------------------------------------------------------------- linear layers */

/* out(N,OC) = inp(N,C) w(OC,C)^T + b, all of type T. */
template <typename T>
void
linear(struct gpu_trainer *g, T *out, const T *inp, const T *w, const T *b,
    int N, int C, int OC)
{
	gemm(g, 0, 1, N, OC, C, inp, C, 0, w, C, 0, out, OC, 0, 1, 1.0f, 0.0f,
	    g->dt, g->dt, b, 0);
}

/* k_colsum_partial8 where it applies (2-byte T, C a multiple of 8,
 * 16-byte aligned rows): whether it was launched. */
template <typename T>
static int
colsum8(cudaStream_t st, float *pw, float *pb, const T *dy, const T *x,
    const float *mean, const float *rstd, int N, int C, int chunks)
{
	if constexpr (sizeof(T) == 2) {
		if (C % 8 == 0 && (uintptr_t)dy % 16 == 0 && (uintptr_t)x % 16 == 0) {
			dim3 grid((C + COLSUM8_COLS - 1) / COLSUM8_COLS, chunks);
			dim3 blk(COLSUM8_TX, COLSUM8_TY);

			k_colsum_partial8<T><<<grid, blk, 0, st>>>(pw, pb, dy, x, mean, rstd,
			    N, C);
			return 1;
		}
	}
	return 0;
}

/* Column sums of dy (N,C) added to db; with x, the LayerNorm weight's
 * gradient sum(dy * xhat) added to dw. */
template <typename T>
void
colsum(struct gpu_trainer *g, float *dw, float *db, const T *dy, const T *x,
    const float *mean, const float *rstd, int N, int C)
{
	int chunks = (N + COLSUM_ROWS - 1) / COLSUM_ROWS;
	float *pw = g->part, *pb = g->part + (size_t)chunks * C;
	dim3 grid((C + COLSUM_TX - 1) / COLSUM_TX, chunks), blk(COLSUM_TX, COLSUM_TY);
	unsigned cb = (unsigned)((C + COLSUM_TX - 1) / COLSUM_TX);

	tstart(g, T_COLSUM);
	if (!colsum8<T>(g->s, dw != NULL ? pw : NULL, pb, dy, dw != NULL ? x : NULL,
	    mean, rstd, N, C, chunks))
		k_colsum_partial<T><<<grid, blk, 0, g->s>>>(dw != NULL ? pw : NULL, pb, dy,
		    dw != NULL ? x : NULL, mean, rstd, N, C);
	if (dw != NULL)
		k_partials_add<<<cb, blk, 0, g->s>>>(dw, pw, chunks, C);
	k_partials_add<<<cb, blk, 0, g->s>>>(db, pb, chunks, C);
	tend(g);
}

/*
 * The backward of linear: dinp = dout w (beta 0: written, 1: added), dw +=
 * dout^T inp (fp32), db += column sums of dout. As ops.c's
 * matmul_backward.
 */
template <typename T>
void
linear_bwd(struct gpu_trainer *g, T *dinp, float beta, float *dw, float *db,
    const T *dout, const T *inp, const T *w, int N, int C, int OC)
{
	if (dinp != NULL)
		gemm(g, 0, 0, N, C, OC, dout, OC, 0, w, C, 0, dinp, C, 0, 1, 1.0f,
		    beta, g->dt, g->dt, NULL, 0);
	if (dw != NULL)
		gemm(g, 1, 0, OC, C, N, dout, OC, 0, inp, C, 0, dw, C, 0, 1, 1.0f,
		    1.0f, g->dt, CUDA_R_32F, NULL, 0);
	if (db != NULL) {
		colsum<T>(g, NULL, db, dout, (const T *)NULL, NULL, NULL, N, OC);
	}
}

/* The activation types of enum gpu_precision: the callers are in other
 * files. */
#define INSTANTIATE(T) \
	template void linear<T>(struct gpu_trainer *, T *, const T *, \
	    const T *, const T *, int, int, int); \
	template void colsum<T>(struct gpu_trainer *, float *, float *, \
	    const T *, const T *, const float *, const float *, int, int); \
	template void linear_bwd<T>(struct gpu_trainer *, T *, float, float *, \
	    float *, const T *, const T *, const T *, int, int, int);
INSTANTIATE(float)
INSTANTIATE(__nv_bfloat16)
INSTANTIATE(__half)
#undef INSTANTIATE
