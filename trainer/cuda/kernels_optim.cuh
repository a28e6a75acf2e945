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

/* torch.optim.AdamW on every chunk; pc (the compute copy) refreshed.
 * The four arrays never alias (__restrict__): four elements' loads go out
 * before the first element's stores. */
template <typename T>
__global__ void
k_adamw(float *__restrict__ p, const float *__restrict__ g, float *__restrict__ mm,
    float *__restrict__ vv, T *__restrict__ pc, const chunk *ch, float lr,
    float b1, float b2, float eps, float wd, float step, float sbc2, float gscale)
{
	chunk c = ch[blockIdx.x];
	float w = c.decay ? wd : 0.0f;

#pragma unroll 4
	for (uint32_t k = threadIdx.x; k < c.len; k += blockDim.x) {
		size_t i = c.off + k;
		float gi = g[i] * gscale, pi = p[i] * (1.0f - lr * w);
		float mi = b1 * mm[i] + (1.0f - b1) * gi;
		float vi = b2 * vv[i] + (1.0f - b2) * gi * gi;

		pi -= step * mi / (sqrtf(vi) / sbc2 + eps);
		mm[i] = mi;
		vv[i] = vi;
		p[i] = pi;
		if (pc != NULL)
			pc[i] = fromf<T>(pi);
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
