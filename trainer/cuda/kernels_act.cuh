/*
 * The element-wise kernels (GELU, tanh, dropout) and the row gathers and
 * scatters of the pooler and the MLM head (layer.cu, forward.cu,
 * backward.cu).
 */
#ifndef CADRE_CUDA_KERNELS_ACT_CUH
#define CADRE_CUDA_KERNELS_ACT_CUH

#include "kernels.cuh"

/* ---------------------------------------------------------------- GELU, tanh */

#define GELU_INV_SQRT2		0.70710678118654752440f
#define GELU_INV_SQRT2PI	0.39894228040143267794f

/* The erf GELU of Hugging Face's BERT ("gelu"): cuBLASLt's GELU epilogue
 * is the tanh approximation, so it is not used (docs/gpu.md). */
template <typename T>
__global__ void
k_gelu(T *out, const T *in, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	    i += (size_t)gridDim.x * blockDim.x) {
		float x = tof(in[i]);

		out[i] = fromf<T>(0.5f * x * (1.0f + erff(x * GELU_INV_SQRT2)));
	}
}

template <typename T>
__global__ void
k_gelu_bwd(T *din, const T *in, const T *dout, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	    i += (size_t)gridDim.x * blockDim.x) {
		float x = tof(in[i]);
		float cdf = 0.5f * (1.0f + erff(x * GELU_INV_SQRT2));
		float pdf = GELU_INV_SQRT2PI * expf(-0.5f * x * x);

		din[i] = fromf<T>(tof(dout[i]) * (cdf + x * pdf));
	}
}

/* The same four elements a thread (ld4/st4): n4 groups of four. */
template <typename T>
__global__ void
k_gelu4(T *out, const T *in, size_t n4)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4;
	    i += (size_t)gridDim.x * blockDim.x) {
		float x[4];

		ld4(in + 4 * i, x);
#pragma unroll
		for (int q = 0; q < 4; q++)
			x[q] = 0.5f * x[q] * (1.0f + erff(x[q] * GELU_INV_SQRT2));
		st4(out + 4 * i, x);
	}
}

template <typename T>
__global__ void
k_gelu_bwd4(T *din, const T *in, const T *dout, size_t n4)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4;
	    i += (size_t)gridDim.x * blockDim.x) {
		float x[4], d[4];

		ld4(in + 4 * i, x);
		ld4(dout + 4 * i, d);
#pragma unroll
		for (int q = 0; q < 4; q++) {
			float cdf = 0.5f * (1.0f + erff(x[q] * GELU_INV_SQRT2));
			float pdf = GELU_INV_SQRT2PI * expf(-0.5f * x[q] * x[q]);

			d[q] = d[q] * (cdf + x[q] * pdf);
		}
		st4(din + 4 * i, d);
	}
}

/* The launchers (nblocks and NTHREADS are engine_int.cuh's). */
template <typename T>
static inline void
gelu(cudaStream_t st, T *out, const T *in, size_t n)
{
	if (vec4_ok(sizeof(T), n, out, in))
		k_gelu4<T><<<nblocks(n / 4), NTHREADS, 0, st>>>(out, in, n / 4);
	else
		k_gelu<T><<<nblocks(n), NTHREADS, 0, st>>>(out, in, n);
}

template <typename T>
static inline void
gelu_bwd(cudaStream_t st, T *din, const T *in, const T *dout, size_t n)
{
	if (vec4_ok(sizeof(T), n, din, in, dout))
		k_gelu_bwd4<T><<<nblocks(n / 4), NTHREADS, 0, st>>>(din, in, dout, n / 4);
	else
		k_gelu_bwd<T><<<nblocks(n), NTHREADS, 0, st>>>(din, in, dout, n);
}

template <typename T>
__global__ void
k_tanh(T *out, const T *in, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	    i += (size_t)gridDim.x * blockDim.x)
		out[i] = fromf<T>(tanhf(tof(in[i])));
}

/* din = dout * (1 - y^2) * drop (the classifier's dropout, or none). */
template <typename T>
__global__ void
k_tanh_bwd(T *din, const T *y, const T *dout, size_t n, dkey dk)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	    i += (size_t)gridDim.x * blockDim.x) {
		float yy = tof(y[i]);

		din[i] = fromf<T>(tof(dout[i]) * drop_factor(dk, i) * (1.0f - yy * yy));
	}
}

/* dst = src * mask (dst may be src); a thread per four elements (one
 * Philox block). */
template <typename T>
__global__ void
k_dropout(T *dst, const T *src, size_t n, dkey dk)
{
	for (size_t b = blockIdx.x * (size_t)blockDim.x + threadIdx.x; 4 * b < n;
	    b += (size_t)gridDim.x * blockDim.x) {
		float f[4];

		drop_factor4(dk, b, f);
		for (int q = 0; q < 4 && 4 * b + q < n; q++)
			dst[4 * b + q] = fromf<T>(tof(src[4 * b + q]) * f[q]);
	}
}

/* ---------------------------------------------------------------- rows */

/* dst[i] = src[idx[i]] (rows of H); idx NULL: src row i * stride. */
template <typename T>
__global__ void
k_gather_rows(T *dst, const T *src, const int32_t *idx, int stride, int H)
{
	int i = blockIdx.x;
	size_t s = idx != NULL ? (size_t)idx[i] : (size_t)i * stride;

	for (int j = threadIdx.x; j < H; j += blockDim.x)
		dst[(size_t)i * H + j] = src[s * H + j];
}

/* dst[idx[i]] += src[i] (distinct rows: no two blocks meet). */
template <typename T>
__global__ void
k_scatter_add_rows(T *dst, const T *src, const int32_t *idx, int stride, int H)
{
	int i = blockIdx.x;
	size_t d = idx != NULL ? (size_t)idx[i] : (size_t)i * stride;

	for (int j = threadIdx.x; j < H; j += blockDim.x)
		dst[d * H + j] = fromf<T>(tof(dst[d * H + j]) + tof(src[(size_t)i * H + j]));
}

#endif
