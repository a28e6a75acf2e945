/*
 * The element-wise, normalisation, attention-softmax, loss and optimizer
 * kernels of the CUDA path, each the device twin of a loop in ops.c,
 * model.c or optim.c (docs/gpu.md). Templated on the activation type T
 * (float, __nv_bfloat16, __half); statistics, losses and parameter
 * gradients are fp32 (partial sums in fixed order, no atomics: the
 * gradients are the same bits every run).
 *
 * This header holds what every kernel uses (the types, the Philox
 * dropout masks, the block reductions) and the shapes the host shares
 * with the kernels. The kernels are in kernels_linear.cuh,
 * kernels_norm.cuh, kernels_act.cuh, kernels_attn.cuh, kernels_loss.cuh
 * and kernels_optim.cuh, each included only by the files that launch
 * them: every .cu file is a device program of its own (no -rdc).
 */
#ifndef CADRE_CUDA_KERNELS_CUH
#define CADRE_CUDA_KERNELS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

/* ---------------------------------------------------------------- types */

__device__ __forceinline__ float tof(float x) { return x; }
__device__ __forceinline__ float tof(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float tof(__half x) { return __half2float(x); }

template <typename T> __device__ __forceinline__ T fromf(float x);
template <> __device__ __forceinline__ float fromf<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 fromf<__nv_bfloat16>(float x) { return __float2bfloat16(x); }
template <> __device__ __forceinline__ __half fromf<__half>(float x) { return __float2half(x); }

/* Four consecutive elements as one 16-byte (fp32) or 8-byte (bf16, fp16)
 * access; p is aligned to four elements (vec4_ok on the host). The
 * conversions round as fromf does, so a kernel using them writes the
 * same bits as one writing element by element. */
__device__ __forceinline__ void
ld4(const float *p, float f[4])
{
	float4 v = *(const float4 *)p;

	f[0] = v.x; f[1] = v.y; f[2] = v.z; f[3] = v.w;
}

__device__ __forceinline__ void
st4(float *p, const float f[4])
{
	*(float4 *)p = make_float4(f[0], f[1], f[2], f[3]);
}

/* Two floats as one 32-bit word of two T (bf16, fp16), the first in the
 * low half (the lower column of an operand pair), and back. */
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);

template <>
__device__ __forceinline__ uint32_t
pack2<__nv_bfloat16>(float lo, float hi)
{
	__nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);

	return *(const uint32_t *)&v;
}

template <>
__device__ __forceinline__ uint32_t
pack2<__half>(float lo, float hi)
{
	__half2 v = __floats2half2_rn(lo, hi);

	return *(const uint32_t *)&v;
}

template <typename T>
__device__ __forceinline__ void
unpack2(uint32_t w, float &lo, float &hi)
{
	const T *p = (const T *)&w;

	lo = tof(p[0]);
	hi = tof(p[1]);
}

/* ld4, st4 for bf16 and fp16: one 8-byte access */
template <typename T>
__device__ __forceinline__ void
ld4(const T *p, float f[4])
{
	uint2 v = *(const uint2 *)p;

	unpack2<T>(v.x, f[0], f[1]);
	unpack2<T>(v.y, f[2], f[3]);
}

template <typename T>
__device__ __forceinline__ void
st4(T *p, const float f[4])
{
	*(uint2 *)p = make_uint2(pack2<T>(f[0], f[1]), pack2<T>(f[2], f[3]));
}

/* x as the activation type stores it */
template <typename T>
__device__ __forceinline__ float
roundt(float x)
{
	return tof(fromf<T>(x));
}

/* Whether every pointer given is aligned to four elements of tsize
 * bytes and n is a multiple of four: the ld4/st4 kernels' condition. */
static inline int
vec4_ok(size_t tsize, size_t n, const void *a, const void *b = NULL,
    const void *c = NULL, const void *d = NULL)
{
	uintptr_t al = (uintptr_t)(4 * tsize);

	return n % 4 == 0 && (uintptr_t)a % al == 0 && (uintptr_t)b % al == 0 &&
	    (uintptr_t)c % al == 0 && (uintptr_t)d % al == 0;
}

/* ---------------------------------------------------------------- Philox dropout */

/* The host builds it from struct dropout_key exactly as philox.h keys a
 * mask: key {seed lo, seed hi}, counter {e/4, layer<<8|tensor, step lo,
 * step hi}, word e%4, kept when (word >> 8) * 2^-24 >= p. */
struct dkey {
	uint32_t	k0, k1, c1, c2, c3;
	float		p, scale;
};

/* The high word of a 32x32 product, on the device and on the host (the
 * host's copy of the mask code is checked against philox.c). */
__host__ __device__ __forceinline__ uint32_t
mulhi32(uint32_t a, uint32_t b)
{
#ifdef __CUDA_ARCH__
	return __umulhi(a, b);
#else
	return (uint32_t)(((uint64_t)a * b) >> 32);
#endif
}

__host__ __device__ __forceinline__ float
drop_factor(const dkey &k, uint64_t e)
{
	uint32_t c0 = (uint32_t)(e >> 2), c1 = k.c1, c2 = k.c2, c3 = k.c3;
	uint32_t k0 = k.k0, k1 = k.k1, w;

	if (k.p <= 0.0f)
		return 1.0f;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
	for (int r = 0; r < 10; r++) {
		uint32_t lo0 = 0xD2511F53u * c0, hi0 = mulhi32(0xD2511F53u, c0);
		uint32_t lo1 = 0xCD9E8D57u * c2, hi1 = mulhi32(0xCD9E8D57u, c2);

		c0 = hi1 ^ c1 ^ k0;
		c1 = lo1;
		c2 = hi0 ^ c3 ^ k1;
		c3 = lo0;
		k0 += 0x9E3779B9u;
		k1 += 0xBB67AE85u;
	}
	switch (e & 3) {
	case 0: w = c0; break;
	case 1: w = c1; break;
	case 2: w = c2; break;
	default: w = c3; break;
	}
	return (float)(w >> 8) * (1.0f / 16777216.0f) >= k.p ? k.scale : 0.0f;
}

/* The factors of elements 4*blk .. 4*blk+3: one Philox block for four
 * elements (drop_factor computes the block for each element alone). */
__host__ __device__ __forceinline__ void
drop_factor4(const dkey &k, uint64_t blk, float f[4])
{
	uint32_t c0 = (uint32_t)blk, c1 = k.c1, c2 = k.c2, c3 = k.c3;
	uint32_t k0 = k.k0, k1 = k.k1;

#ifdef __CUDA_ARCH__
#pragma unroll
#endif
	for (int r = 0; r < 10; r++) {
		uint32_t lo0 = 0xD2511F53u * c0, hi0 = mulhi32(0xD2511F53u, c0);
		uint32_t lo1 = 0xCD9E8D57u * c2, hi1 = mulhi32(0xCD9E8D57u, c2);

		c0 = hi1 ^ c1 ^ k0;
		c1 = lo1;
		c2 = hi0 ^ c3 ^ k1;
		c3 = lo0;
		k0 += 0x9E3779B9u;
		k1 += 0xBB67AE85u;
	}
	f[0] = (float)(c0 >> 8) * (1.0f / 16777216.0f) >= k.p ? k.scale : 0.0f;
	f[1] = (float)(c1 >> 8) * (1.0f / 16777216.0f) >= k.p ? k.scale : 0.0f;
	f[2] = (float)(c2 >> 8) * (1.0f / 16777216.0f) >= k.p ? k.scale : 0.0f;
	f[3] = (float)(c3 >> 8) * (1.0f / 16777216.0f) >= k.p ? k.scale : 0.0f;
}

/* ---------------------------------------------------------------- reductions */

/* A block-wide sum in a fixed order (butterfly in warps, then warp 0 over
 * the warps' sums); every thread gets the result. sh: 32 floats. */
__device__ __forceinline__ float
block_sum(float v, float *sh)
{
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	int nw = (blockDim.x + 31) >> 5;

	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	__syncthreads();
	if (lane == 0)
		sh[warp] = v;
	__syncthreads();
	v = lane < nw ? sh[lane] : 0.0f;
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ __forceinline__ double
block_sum_d(double v, double *sh)
{
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	int nw = (blockDim.x + 31) >> 5;

	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	__syncthreads();
	if (lane == 0)
		sh[warp] = v;
	__syncthreads();
	v = lane < nw ? sh[lane] : 0.0;
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ __forceinline__ float
block_max(float v, float *sh)
{
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	int nw = (blockDim.x + 31) >> 5;

	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	__syncthreads();
	if (lane == 0)
		sh[warp] = v;
	__syncthreads();
	v = lane < nw ? sh[lane] : -INFINITY;
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

/* Within one warp, every lane gets the result (butterfly: a fixed order). */
__device__ __forceinline__ float
warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ __forceinline__ float
warp_max(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

/* Max and the first index holding it (as ops.c's `>` scan). */
__device__ __forceinline__ void
block_argmax(float &v, int &i, float *shv, int *shi)
{
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	int nw = (blockDim.x + 31) >> 5;

	for (int o = 16; o > 0; o >>= 1) {
		float ov = __shfl_xor_sync(0xffffffffu, v, o);
		int oi = __shfl_xor_sync(0xffffffffu, i, o);

		if (ov > v || (ov == v && oi < i)) {
			v = ov;
			i = oi;
		}
	}
	__syncthreads();
	if (lane == 0) {
		shv[warp] = v;
		shi[warp] = i;
	}
	__syncthreads();
	v = lane < nw ? shv[lane] : -INFINITY;
	i = lane < nw ? shi[lane] : 0x7fffffff;
	for (int o = 16; o > 0; o >>= 1) {
		float ov = __shfl_xor_sync(0xffffffffu, v, o);
		int oi = __shfl_xor_sync(0xffffffffu, i, o);

		if (ov > v || (ov == v && oi < i)) {
			v = ov;
			i = oi;
		}
	}
}

/* ---------------------------------------------------------------- conversions */

template <typename T>
__global__ void
k_convert(T *dst, const float *src, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	    i += (size_t)gridDim.x * blockDim.x)
		dst[i] = fromf<T>(src[i]);
}

/* ---------------------------------------------------------------- shared with the host */

/* Rows per partial sum of the column reductions. */
#define COLSUM_ROWS	256

/* A piece of one tensor: the optimizer kernels take a block per chunk, so
 * one launch covers every tensor (multi-tensor apply). */
struct chunk {
	uint64_t	off;	/* floats from the start of the layout */
	uint32_t	len;
	uint16_t	tensor;
	uint16_t	decay;
};

#define OPT_CHUNK	65536

/* The fused attention (kernels_attn_fused.cuh): head size, most positions
 * (a warp per 16 query rows, 8 warps). */
#define FA_HS		64
#define FA_TMAX		128

/* Its dropout mask, a bit an element (kernels_attn_fused.cuh): the words
 * of a warp's 16 rows, and of one layer. */
#define FA_MASK_WORDS(Tn)	((Tn) / 8 * 4)

static inline size_t
attn_mask_words(int B, int nh, int Tn)
{
	return (size_t)B * nh * (Tn / 16) * FA_MASK_WORDS(Tn);
}

/* Whether it takes an attention of this shape: 2-byte T, head size 64, T
 * a multiple of 16 up to FA_TMAX, rows of 16-byte multiples. */
static inline int
attn_fused_ok(size_t tsize, int Tn, int H, int nh)
{
	return tsize == 2 && nh > 0 && H % nh == 0 && H / nh == FA_HS &&
	    Tn % 16 == 0 && Tn >= 16 && Tn <= FA_TMAX && H % 8 == 0;
}

#endif
