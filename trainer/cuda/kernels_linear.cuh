/*
 * The kernels of the linear layers besides cuBLASLt (gemm.cu): the GEMM
 * fallback, a bias its epilogue cannot read, and the column sums of the
 * bias and LayerNorm weight gradients.
 */
#ifndef CADRE_CUDA_KERNELS_LINEAR_CUH
#define CADRE_CUDA_KERNELS_LINEAR_CUH

#include "kernels.cuh"

/* ---------------------------------------------------------------- GEMM fallback */

/*
 * Row-major C = alpha op(A) op(B) + beta C (+ bias per column), one
 * thread per element, fp32 sums: for the shapes cuBLASLt has no algorithm
 * for (tiny or oddly aligned products; gemm() in gemm.cu says when).
 */
template <typename TA, typename TC>
__global__ void
k_gemm_naive(int ta, int tb, int M, int N, int K, const TA *A, int lda,
    long long sA, const TA *B, int ldb, long long sB, TC *C, int ldc,
    long long sC, float alpha, float beta, const TC *bias, long long sbias)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	int z = blockIdx.y, r, c;
	float s = 0.0f;

	if (i >= (size_t)M * N)
		return;
	r = (int)(i / N);
	c = (int)(i % N);
	A += z * sA;
	B += z * sB;
	C += z * sC;
	if (bias != NULL)
		bias += z * sbias;
	for (int k = 0; k < K; k++) {
		float a = tof(ta ? A[(size_t)k * lda + r] : A[(size_t)r * lda + k]);
		float b = tof(tb ? B[(size_t)c * ldb + k] : B[(size_t)k * ldb + c]);

		s += a * b;
	}
	s *= alpha;
	if (beta != 0.0f)
		s += beta * tof(C[(size_t)r * ldc + c]);
	if (bias != NULL)
		s += tof(bias[c]);
	C[(size_t)r * ldc + c] = fromf<TC>(s);
}

/*
 * k_gemm_naive's product with a warp per element of C (no batch): the
 * lanes take every 32nd k and meet in warp_sum's fixed order. For skinny
 * products (a head's two logits over K = H), where one thread walking K
 * alone is a chain of K dependent loads.
 */
template <typename TA, typename TC>
__global__ void
k_gemm_warp(int ta, int tb, int M, int N, int K, const TA *A, int lda,
    const TA *B, int ldb, TC *C, int ldc, float alpha, float beta, const TC *bias)
{
	size_t w = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5;
	int lane = threadIdx.x & 31, r, c;
	float s = 0.0f;

	if (w >= (size_t)M * N)
		return;
	r = (int)(w / N);
	c = (int)(w % N);
	for (int k = lane; k < K; k += 32) {
		float a = tof(ta ? A[(size_t)k * lda + r] : A[(size_t)r * lda + k]);
		float b = tof(tb ? B[(size_t)c * ldb + k] : B[(size_t)k * ldb + c]);

		s += a * b;
	}
	s = warp_sum(s) * alpha;
	if (lane != 0)
		return;
	if (beta != 0.0f)
		s += beta * tof(C[(size_t)r * ldc + c]);
	if (bias != NULL)
		s += tof(bias[c]);
	C[(size_t)r * ldc + c] = fromf<TC>(s);
}

/* C(M,N) += bias(N) per row: for a bias cuBLASLt's epilogue cannot
 * read (less than 16-byte aligned); grid.y the batch (strides sC, sbias). */
template <typename TC>
__global__ void
k_add_bias(TC *C, const TC *bias, int M, int N, int ldc, long long sC,
    long long sbias)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	C += blockIdx.y * sC;
	bias += blockIdx.y * sbias;
	if (i >= (size_t)M * N)
		return;
	size_t r = i / N;
	int c = (int)(i % N);

	C[r * ldc + c] = fromf<TC>(tof(C[r * ldc + c]) + tof(bias[c]));
}

/*
 * Column sums in two passes, fixed order: partial[c][j] over rows
 * c*COLSUM_ROWS.. (grid.y = chunks), then k_partials_add adds the chunks
 * into dst (fp32 gradients). With x given, the LayerNorm weight's
 * gradient dy * xhat goes to pw and dy to pb; else dy to pb alone (a bias).
 * Blocks of COLSUM_TX columns x COLSUM_TY rows: a warp reads 32 adjacent
 * columns of a row, the COLSUM_TY row lanes' sums meet in shared memory
 * in lane order.
 */
#define COLSUM_TX	32
#define COLSUM_TY	8

template <typename T>
__global__ void
k_colsum_partial(float *pw, float *pb, const T *dy, const T *x,
    const float *mean, const float *rstd, int N, int C)
{
	__shared__ float shw[COLSUM_TY][COLSUM_TX], shb[COLSUM_TY][COLSUM_TX];
	int tx = threadIdx.x, ty = threadIdx.y, j = blockIdx.x * COLSUM_TX + tx;
	int c = blockIdx.y, lo = c * COLSUM_ROWS, hi = min(N, lo + COLSUM_ROWS);
	float sw = 0.0f, sb = 0.0f;

	if (j < C) {
#pragma unroll 4
		for (int n = lo + ty; n < hi; n += COLSUM_TY) {
			float d = tof(dy[(size_t)n * C + j]);

			sb += d;
			if (x != NULL)
				sw += d * (tof(x[(size_t)n * C + j]) - mean[n]) * rstd[n];
		}
	}
	shw[ty][tx] = sw;
	shb[ty][tx] = sb;
	__syncthreads();
	if (ty != 0 || j >= C)
		return;
	for (int k = 1; k < COLSUM_TY; k++) {
		sw += shw[k][tx];
		sb += shb[k][tx];
	}
	pb[(size_t)c * C + j] = sb;
	if (x != NULL)
		pw[(size_t)c * C + j] = sw;
}

/*
 * k_colsum_partial for a 2-byte T, 16 bytes a thread: blocks of
 * COLSUM8_TX groups of 8 columns x COLSUM8_TY row lanes, so that a warp
 * reads four rows of 128 contiguous bytes (k_colsum_partial's warp reads
 * 64 bytes of a row). C a multiple of 8, dy and x 16-byte aligned. The
 * order is fixed, though not k_colsum_partial's.
 */
#define COLSUM8_TX	8
#define COLSUM8_TY	32
#define COLSUM8_COLS	(8 * COLSUM8_TX)

template <typename T>
__global__ void __launch_bounds__(COLSUM8_TX * COLSUM8_TY)
k_colsum_partial8(float *pw, float *pb, const T *dy, const T *x,
    const float *mean, const float *rstd, int N, int C)
{
	__shared__ float shw[COLSUM8_TY][COLSUM8_COLS], shb[COLSUM8_TY][COLSUM8_COLS];
	int tx = threadIdx.x, ty = threadIdx.y, j0 = blockIdx.x * COLSUM8_COLS + 8 * tx;
	int c = blockIdx.y, lo = c * COLSUM_ROWS, hi = min(N, lo + COLSUM_ROWS);
	int t = ty * COLSUM8_TX + tx;
	float sw[8], sb[8];

#pragma unroll
	for (int q = 0; q < 8; q++)
		sw[q] = sb[q] = 0.0f;
	if (j0 < C) {
		for (int n = lo + ty; n < hi; n += COLSUM8_TY) {
			uint4 dv = *(const uint4 *)(dy + (size_t)n * C + j0);
			const T *d = (const T *)&dv;

			if (x != NULL) {
				uint4 xv = *(const uint4 *)(x + (size_t)n * C + j0);
				const T *xe = (const T *)&xv;
				float mu = mean[n], rs = rstd[n];

#pragma unroll
				for (int q = 0; q < 8; q++) {
					sb[q] += tof(d[q]);
					sw[q] += tof(d[q]) * (tof(xe[q]) - mu) * rs;
				}
			} else {
#pragma unroll
				for (int q = 0; q < 8; q++)
					sb[q] += tof(d[q]);
			}
		}
	}
#pragma unroll
	for (int q = 0; q < 8; q++) {
		shw[ty][8 * tx + q] = sw[q];
		shb[ty][8 * tx + q] = sb[q];
	}
	__syncthreads();
	/* threads 0..63 the bias sums of the block's columns, 64..127 the
	 * weight's: the row lanes in order */
	if (t >= 2 * COLSUM8_COLS || (t >= COLSUM8_COLS && x == NULL))
		return;
	int col = t % COLSUM8_COLS, j = blockIdx.x * COLSUM8_COLS + col;
	float (*sh)[COLSUM8_COLS] = t < COLSUM8_COLS ? shb : shw;
	float s = 0.0f;

	if (j >= C)
		return;
	for (int k = 0; k < COLSUM8_TY; k++)
		s += sh[k][col];
	(t < COLSUM8_COLS ? pb : pw)[(size_t)c * C + j] = s;
}

/* dst[j] += the chunks' partial sums, the same block shape over chunks. */
static __global__ void
k_partials_add(float *dst, const float *part, int chunks, int C)
{
	__shared__ float sh[COLSUM_TY][COLSUM_TX];
	int tx = threadIdx.x, ty = threadIdx.y, j = blockIdx.x * COLSUM_TX + tx;
	float s = 0.0f;

	if (j < C)
		for (int c = ty; c < chunks; c += COLSUM_TY)
			s += part[(size_t)c * C + j];
	sh[ty][tx] = s;
	__syncthreads();
	if (ty != 0 || j >= C)
		return;
	for (int k = 1; k < COLSUM_TY; k++)
		s += sh[k][tx];
	dst[j] += s;
}

#endif
