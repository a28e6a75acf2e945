/*
 * Attention: the head permutes and the masked softmax with its dropout,
 * forward and backward (layer.cu).
 */
#ifndef CADRE_CUDA_KERNELS_ATTN_CUH
#define CADRE_CUDA_KERNELS_ATTN_CUH

#include "kernels.cuh"

/* ---------------------------------------------------------------- attention */

/* (B,T,nh,hs) -> (B,nh,T,hs), one thread per element. */
template <typename T>
__global__ void
k_permute(T *dst, const T *src, int B, int Tn, int nh, int hs)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	size_t n = (size_t)B * Tn * nh * hs;

	if (i >= n)
		return;
	int d = (int)(i % hs);
	size_t r = i / hs;
	int t = (int)(r % Tn);
	r /= Tn;
	int h = (int)(r % nh);
	int b = (int)(r / nh);

	dst[i] = src[(((size_t)b * Tn + t) * nh + h) * hs + d];
}

/* (B,nh,T,hs) -> (B,T,nh,hs). */
template <typename T>
__global__ void
k_unpermute(T *dst, const T *src, int B, int Tn, int nh, int hs)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	size_t n = (size_t)B * Tn * nh * hs;

	if (i >= n)
		return;
	int d = (int)(i % hs);
	size_t r = i / hs;
	int t = (int)(r % Tn);
	r /= Tn;
	int h = (int)(r % nh);
	int b = (int)(r / nh);

	dst[(((size_t)b * Tn + t) * nh + h) * hs + d] = src[i];
}

/*
 * One block per row (b, h, t) of the scores: the softmax of s * scale over
 * the keys the mask keeps (the others exactly 0), into att in place; attd
 * gets the probabilities times the dropout mask (element index over
 * (B, nh, T, T), as ops.c's attention_forward).
 */
template <typename T>
__global__ void
k_softmax_fwd(T *att, T *attd, const int32_t *mask, int nh, int Tn,
    float scale, dkey dk)
{
	__shared__ float sh[32];
	size_t row = blockIdx.x;
	int b = (int)(row / ((size_t)nh * Tn));
	const int32_t *mk = mask + (size_t)b * Tn;
	T *a = att + row * Tn, *ad = attd + row * Tn;
	float mx = -INFINITY, s = 0.0f, inv;

	for (int j = threadIdx.x; j < Tn; j += blockDim.x)
		if (mk[j])
			mx = fmaxf(mx, tof(a[j]) * scale);
	mx = block_max(mx, sh);
	for (int j = threadIdx.x; j < Tn; j += blockDim.x)
		if (mk[j])
			s += expf(tof(a[j]) * scale - mx);
	s = block_sum(s, sh);
	inv = s > 0.0f ? 1.0f / s : 0.0f;
	if (ad != a && (Tn & 3) == 0) {
		/* rows start on a Philox block: four elements a thread */
		for (int j4 = 4 * threadIdx.x; j4 < Tn; j4 += 4 * blockDim.x) {
			float f[4];

			drop_factor4(dk, (row * Tn + j4) >> 2, f);
			for (int q = 0; q < 4; q++) {
				int j = j4 + q;
				float p = mk[j] ? expf(tof(a[j]) * scale - mx) * inv : 0.0f;

				a[j] = fromf<T>(p);
				ad[j] = fromf<T>(p * f[q]);
			}
		}
		return;
	}
	for (int j = threadIdx.x; j < Tn; j += blockDim.x) {
		float p = mk[j] ? expf(tof(a[j]) * scale - mx) * inv : 0.0f;

		a[j] = fromf<T>(p);
		if (ad != a)
			ad[j] = fromf<T>(p * drop_factor(dk, row * Tn + j));
	}
}

/*
 * Softmax backward, one block per row: g = dattd * mask (the dropout's
 * backward), ds = p * (g - sum(p * g)) * scale, in place of datt.
 */
template <typename T>
__global__ void
k_softmax_bwd(T *datt, const T *att, int Tn, float scale, dkey dk)
{
	__shared__ float sh[32];
	size_t row = blockIdx.x;
	T *g = datt + row * Tn;
	const T *p = att + row * Tn;
	float dot = 0.0f;

	if (dk.p > 0.0f && (Tn & 3) == 0) {
		/* the masked gradient kept in registers between the passes:
		 * one Philox block per four elements, computed once */
		float gv[4 * 4], f[4];
		int n = 0;

		for (int j4 = 4 * threadIdx.x; j4 < Tn; j4 += 4 * blockDim.x) {
			drop_factor4(dk, (row * Tn + j4) >> 2, f);
			for (int q = 0; q < 4; q++) {
				float gj = tof(g[j4 + q]) * f[q];

				if (n < 16)
					gv[n] = gj;
				n++;
				dot += tof(p[j4 + q]) * gj;
			}
		}
		dot = block_sum(dot, sh);
		n = 0;
		for (int j4 = 4 * threadIdx.x; j4 < Tn; j4 += 4 * blockDim.x) {
			if (n >= 16)
				drop_factor4(dk, (row * Tn + j4) >> 2, f);
			for (int q = 0; q < 4; q++) {
				float gj = n < 16 ? gv[n] : tof(g[j4 + q]) * f[q];

				g[j4 + q] = fromf<T>(tof(p[j4 + q]) * (gj - dot) * scale);
				n++;
			}
		}
		return;
	}
	for (int j = threadIdx.x; j < Tn; j += blockDim.x)
		dot += tof(p[j]) * tof(g[j]) * drop_factor(dk, row * Tn + j);
	dot = block_sum(dot, sh);
	for (int j = threadIdx.x; j < Tn; j += blockDim.x) {
		float gj = tof(g[j]) * drop_factor(dk, row * Tn + j);

		g[j] = fromf<T>(tof(p[j]) * (gj - dot) * scale);
	}
}

#endif
