/*
 * The optimizers over the whole parameter layout, a block per chunk
 * (struct chunk, kernels.cuh): gradient norm, AdamW, LAMB (optimizer.cu).
 */
#ifndef CADRE_CUDA_KERNELS_OPTIM_CUH
#define CADRE_CUDA_KERNELS_OPTIM_CUH

#include "kernels.cuh"

/* ---------------------------------------------------------------- optimizer */

/* Per chunk: the sum of squares of g (double) and whether it is finite. */
static __global__ void
k_sumsq(double *part, const float *__restrict__ g, const chunk *ch)
{
	__shared__ double sh[32];
	chunk c = ch[blockIdx.x];
	double s = 0.0;

#pragma unroll 4
	for (uint32_t i = threadIdx.x; i < c.len; i += blockDim.x) {
		double v = g[c.off + i];

		s += v * v;
	}
	s = block_sum_d(s, sh);
	if (threadIdx.x == 0)
		part[blockIdx.x] = s;
}

/* One element of torch.optim.AdamW (k_adamw's). */
__device__ __forceinline__ float
adamw_one(float &pi, float gi, float &mi, float &vi, float lr, float b1, float b2,
    float eps, float w, float step, float sbc2)
{
	pi *= 1.0f - lr * w;
	mi = b1 * mi + (1.0f - b1) * gi;
	vi = b2 * vi + (1.0f - b2) * gi * gi;
	pi -= step * mi / (sqrtf(vi) / sbc2 + eps);
	return pi;
}

/*
 * torch.optim.AdamW on every chunk; pc (the compute copy) refreshed.
 * 16 bytes a thread where the chunk's elements are aligned to four (the
 * allocations are), the up to three elements before and after one each:
 * every element's arithmetic is the same either way.
 */
template <typename T>
__global__ void
k_adamw(float *__restrict__ p, const float *__restrict__ g, float *__restrict__ mm,
    float *__restrict__ vv, T *__restrict__ pc, const chunk *ch, float lr,
    float b1, float b2, float eps, float wd, float step, float sbc2, float gscale)
{
	chunk c = ch[blockIdx.x];
	float w = c.decay ? wd : 0.0f;
	size_t lo = c.off, hi = c.off + c.len;
	size_t a = (lo + 3) & ~(size_t)3, e;

	if (a > hi)
		a = hi;
	e = a + ((hi - a) & ~(size_t)3);
	if (threadIdx.x < 8) {
		size_t i = threadIdx.x < 4 ? lo + threadIdx.x : e + threadIdx.x - 4;

		if ((threadIdx.x < 4 && i < a) || (threadIdx.x >= 4 && i < hi)) {
			float pi = p[i], mi = mm[i], vi = vv[i];

			adamw_one(pi, g[i] * gscale, mi, vi, lr, b1, b2, eps, w, step, sbc2);
			mm[i] = mi;
			vv[i] = vi;
			p[i] = pi;
			if (pc != NULL)
				pc[i] = fromf<T>(pi);
		}
	}
	for (size_t i = a + 4 * (size_t)threadIdx.x; i < e; i += 4 * (size_t)blockDim.x) {
		float4 p4 = *(const float4 *)(p + i), g4 = *(const float4 *)(g + i);
		float4 m4 = *(const float4 *)(mm + i), v4 = *(const float4 *)(vv + i);
		float pv[4] = { p4.x, p4.y, p4.z, p4.w }, gv[4] = { g4.x, g4.y, g4.z, g4.w };
		float mv[4] = { m4.x, m4.y, m4.z, m4.w }, vw[4] = { v4.x, v4.y, v4.z, v4.w };

#pragma unroll
		for (int q = 0; q < 4; q++)
			adamw_one(pv[q], gv[q] * gscale, mv[q], vw[q], lr, b1, b2, eps, w,
			    step, sbc2);
		*(float4 *)(mm + i) = make_float4(mv[0], mv[1], mv[2], mv[3]);
		*(float4 *)(vv + i) = make_float4(vw[0], vw[1], vw[2], vw[3]);
		*(float4 *)(p + i) = make_float4(pv[0], pv[1], pv[2], pv[3]);
		if (pc != NULL)
			st4(pc + i, pv);
	}
}

/* LAMB, first pass: u into g, and per chunk the sums of squares of p and
 * u (for the per-tensor trust ratio). */
static __global__ void
k_lamb1(const float *p, float *g, float *mm, float *vv, const chunk *ch,
    double *part, float b1, float b2, float eps, float wd, float bc1,
    float bc2, float gscale)
{
	__shared__ double sh[32];
	chunk c = ch[blockIdx.x];
	float w = c.decay ? wd : 0.0f;
	double sp = 0.0, su = 0.0;

	for (uint32_t k = threadIdx.x; k < c.len; k += blockDim.x) {
		size_t i = c.off + k;
		float gi = g[i] * gscale;
		float mi = b1 * mm[i] + (1.0f - b1) * gi;
		float vi = b2 * vv[i] + (1.0f - b2) * gi * gi;
		float u = (mi / bc1) / (sqrtf(vi / bc2) + eps) + w * p[i];

		mm[i] = mi;
		vv[i] = vi;
		g[i] = u;
		sp += (double)p[i] * p[i];
		su += (double)u * u;
	}
	sp = block_sum_d(sp, sh);
	su = block_sum_d(su, sh);
	if (threadIdx.x == 0) {
		part[2 * blockIdx.x] = sp;
		part[2 * blockIdx.x + 1] = su;
	}
}

/* LAMB, second pass: p -= lr * ratio[tensor] * u. */
template <typename T>
__global__ void
k_lamb2(float *p, const float *g, T *pc, const chunk *ch, const float *ratio,
    float lr)
{
	chunk c = ch[blockIdx.x];
	float r = ratio[c.tensor];

	for (uint32_t k = threadIdx.x; k < c.len; k += blockDim.x) {
		size_t i = c.off + k;
		float pi = p[i] - lr * r * g[i];

		p[i] = pi;
		if (pc != NULL)
			pc[i] = fromf<T>(pi);
	}
}

#endif
