/*
 * Attention: the head permutes and the masked softmax with its dropout,
 * forward and backward (layer.cu).
 */
#ifndef CADRE_CUDA_KERNELS_ATTN_CUH
#define CADRE_CUDA_KERNELS_ATTN_CUH

#include "kernels.cuh"
#include "kernels_act.cuh"

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

/* ---------------------------------------------------------------- a warp per row */

/* Groups of four keys a lane holds: rows of up to 512 keys (T % 4 == 0)
 * take the warp kernels. */
#define SOFTMAX_GROUPS	4

/* The permutes 16 bytes a thread: hs is a multiple of 16 / sizeof(T) and
 * both tensors 16-byte aligned. inverse: (B,nh,T,hs) -> (B,T,nh,hs). */
template <typename T>
__global__ void
k_permute16(uint4 *dst, const uint4 *src, int B, int Tn, int nh, int hv,
    int inverse)
{
	size_t n = (size_t)B * Tn * nh * hv;

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	    i += (size_t)gridDim.x * blockDim.x) {
		int d = (int)(i % hv);
		size_t r = i / hv;
		int t = (int)(r % Tn);
		r /= Tn;
		int h = (int)(r % nh);
		size_t b = r / nh;
		size_t o = ((b * Tn + t) * nh + h) * hv + d;

		if (inverse)
			dst[o] = src[i];
		else
			dst[i] = src[o];
	}
}

/*
 * k_softmax_fwd with a warp per row, the row in registers: one read of
 * the scores, one Philox block per four keys.
 */
template <typename T>
__global__ void
k_softmax_fwd_w(T *att, T *attd, const int32_t *mask, size_t nrows, int nh,
    int Tn, float scale, dkey dk)
{
	int lane = threadIdx.x & 31, ng = Tn >> 2;
	size_t row = blockIdx.x * (size_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
	float v[SOFTMAX_GROUPS][4], mx = -INFINITY, s = 0.0f, inv;
	unsigned keep = 0;

	if (row >= nrows)
		return;
	const int32_t *mk = mask + (row / ((size_t)nh * Tn)) * Tn;
	T *a = att + row * Tn, *ad = attd + row * Tn;
#pragma unroll
	for (int k = 0; k < SOFTMAX_GROUPS; k++) {
		int gi = lane + 32 * k;

		if (gi >= ng)
			break;
		ld4(a + 4 * gi, v[k]);
#pragma unroll
		for (int q = 0; q < 4; q++)
			if (mk[4 * gi + q]) {
				keep |= 1u << (4 * k + q);
				v[k][q] *= scale;
				mx = fmaxf(mx, v[k][q]);
			}
	}
	mx = warp_max(mx);
#pragma unroll
	for (int k = 0; k < SOFTMAX_GROUPS; k++) {
		if (lane + 32 * k >= ng)
			break;
#pragma unroll
		for (int q = 0; q < 4; q++) {
			v[k][q] = keep >> (4 * k + q) & 1u ? expf(v[k][q] - mx) : 0.0f;
			s += v[k][q];
		}
	}
	s = warp_sum(s);
	inv = s > 0.0f ? 1.0f / s : 0.0f;
#pragma unroll
	for (int k = 0; k < SOFTMAX_GROUPS; k++) {
		int gi = lane + 32 * k;
		float f[4];

		if (gi >= ng)
			break;
#pragma unroll
		for (int q = 0; q < 4; q++)
			v[k][q] *= inv;
		st4(a + 4 * gi, v[k]);
		if (ad != a) {
			drop_factor4(dk, ((row * Tn) >> 2) + gi, f);
#pragma unroll
			for (int q = 0; q < 4; q++)
				f[q] *= v[k][q];
			st4(ad + 4 * gi, f);
		}
	}
}

/*
 * k_softmax_bwd with a warp per row; with attd given it also writes the
 * dropped probabilities (att times the mask, as k_dropout computes them)
 * that the dV product needs, so the backward recomputes no mask twice.
 */
template <typename T>
__global__ void
k_softmax_bwd_w(T *datt, const T *att, T *attd, size_t nrows, int Tn, float scale,
    dkey dk)
{
	int lane = threadIdx.x & 31, ng = Tn >> 2;
	size_t row = blockIdx.x * (size_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
	float gv[SOFTMAX_GROUPS][4], pv[SOFTMAX_GROUPS][4], dot = 0.0f;

	if (row >= nrows)
		return;
	T *gr = datt + row * Tn;
	const T *p = att + row * Tn;
#pragma unroll
	for (int k = 0; k < SOFTMAX_GROUPS; k++) {
		int gi = lane + 32 * k;
		float f[4] = { 1.0f, 1.0f, 1.0f, 1.0f };

		if (gi >= ng)
			break;
		ld4(gr + 4 * gi, gv[k]);
		ld4(p + 4 * gi, pv[k]);
		if (dk.p > 0.0f) {
			drop_factor4(dk, ((row * Tn) >> 2) + gi, f);
			if (attd != NULL) {
				float dp[4];

#pragma unroll
				for (int q = 0; q < 4; q++)
					dp[q] = pv[k][q] * f[q];
				st4(attd + row * Tn + 4 * gi, dp);
			}
		}
#pragma unroll
		for (int q = 0; q < 4; q++) {
			gv[k][q] *= f[q];
			dot += pv[k][q] * gv[k][q];
		}
	}
	dot = warp_sum(dot);
#pragma unroll
	for (int k = 0; k < SOFTMAX_GROUPS; k++) {
		int gi = lane + 32 * k;

		if (gi >= ng)
			break;
#pragma unroll
		for (int q = 0; q < 4; q++)
			gv[k][q] = pv[k][q] * (gv[k][q] - dot) * scale;
		st4(gr + 4 * gi, gv[k]);
	}
}

/* ---------------------------------------------------------------- launchers */

template <typename T>
static inline void
permute(cudaStream_t st, T *dst, const T *src, int B, int Tn, int nh, int hs,
    int inverse)
{
	size_t U = 16 / sizeof(T), NH = (size_t)B * Tn * nh * hs;

	if (hs % (int)U == 0 && (uintptr_t)dst % 16 == 0 && (uintptr_t)src % 16 == 0)
		k_permute16<T><<<nblocks(NH / U), NTHREADS, 0, st>>>((uint4 *)dst,
		    (const uint4 *)src, B, Tn, nh, hs / (int)U, inverse);
	else if (inverse)
		k_unpermute<T><<<nblocks(NH), NTHREADS, 0, st>>>(dst, src, B, Tn, nh, hs);
	else
		k_permute<T><<<nblocks(NH), NTHREADS, 0, st>>>(dst, src, B, Tn, nh, hs);
}

static inline int
softmax_warp_ok(int Tn, size_t tsize, const void *a, const void *b)
{
	return Tn <= 32 * 4 * SOFTMAX_GROUPS && vec4_ok(tsize, (size_t)Tn, a, b);
}

template <typename T>
static inline void
softmax_fwd(cudaStream_t st, T *att, T *attd, const int32_t *mask, size_t nrows,
    int nh, int Tn, float scale, dkey dk)
{
	if (softmax_warp_ok(Tn, sizeof(T), att, attd))
		k_softmax_fwd_w<T><<<(unsigned)((nrows + 3) / 4), 128, 0, st>>>(att, attd,
		    mask, nrows, nh, Tn, scale, dk);
	else
		k_softmax_fwd<T><<<(unsigned)nrows, 128, 0, st>>>(att, attd, mask, nh, Tn,
		    scale, dk);
}

/* datt becomes the scores' gradient; attd (when dropout is on) the
 * dropped probabilities. */
template <typename T>
static inline void
softmax_bwd(cudaStream_t st, T *datt, const T *att, T *attd, size_t nrows, int Tn,
    float scale, dkey dk)
{
	if (softmax_warp_ok(Tn, sizeof(T), datt, att) && vec4_ok(sizeof(T), 4, attd)) {
		k_softmax_bwd_w<T><<<(unsigned)((nrows + 3) / 4), 128, 0, st>>>(datt, att,
		    dk.p > 0.0f ? attd : NULL, nrows, Tn, scale, dk);
		return;
	}
	if (dk.p > 0.0f)
		k_dropout<T><<<nblocks((nrows * Tn + 3) / 4), NTHREADS, 0, st>>>(attd, att,
		    nrows * Tn, dk);
	k_softmax_bwd<T><<<(unsigned)nrows, 128, 0, st>>>(datt, att, Tn, scale, dk);
}

#endif
