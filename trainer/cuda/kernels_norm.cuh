/*
 * The embeddings and LayerNorm kernels, forward and backward, dropout
 * fused (layer.cu, forward.cu, backward.cu).
 */
#ifndef CADRE_CUDA_KERNELS_NORM_CUH
#define CADRE_CUDA_KERNELS_NORM_CUH

#include "kernels.cuh"

/* ---------------------------------------------------------------- embeddings */

/* One block per token: emb = wte[id] + wpe[t] + wtt[type] (kept for the
 * LayerNorm backward), its LayerNorm, then the embeddings' dropout
 * (element n*H + j) into x0. */
template <typename T>
__global__ void
k_embed_ln(T *x0, T *emb, float *mean, float *rstd, const int32_t *ids,
    const int32_t *types, const T *wte, const T *wpe, const T *wtt,
    const T *lw, const T *lb, int Tn, int H, float eps, dkey dk)
{
	__shared__ float sh[32];
	int n = blockIdx.x, t = n % Tn;
	const T *we = wte + (size_t)ids[n] * H, *pe = wpe + (size_t)t * H;
	const T *te = wtt + (size_t)types[n] * H;
	T *e = emb + (size_t)n * H, *y = x0 + (size_t)n * H;
	float s = 0.0f, m, v = 0.0f, r;

	/* ops.c adds in the order wte + wtt + wpe */
	for (int j = threadIdx.x; j < H; j += blockDim.x) {
		T ev = fromf<T>(tof(we[j]) + tof(te[j]) + tof(pe[j]));

		e[j] = ev;
		s += tof(ev);
	}
	m = block_sum(s, sh) / (float)H;
	for (int j = threadIdx.x; j < H; j += blockDim.x) {
		float d = tof(e[j]) - m;

		v += d * d;
	}
	v = block_sum(v, sh) / (float)H;
	r = rsqrtf(v + eps);
	for (int j = threadIdx.x; j < H; j += blockDim.x) {
		float o = (tof(e[j]) - m) * r * tof(lw[j]) + tof(lb[j]);

		y[j] = fromf<T>(o * drop_factor(dk, (uint64_t)n * H + j));
	}
	if (threadIdx.x == 0) {
		mean[n] = m;
		rstd[n] = r;
	}
}

/*
 * dW rows by segments: seg_start[s]..seg_start[s+1] of rows (token
 * indices, in increasing order) all add into row key[s] of dw (fp32).
 * One block per segment, threads over columns: every sum has one owner
 * and the order of the tokens, as ops.c's embedding_backward.
 */
template <typename T>
__global__ void
k_seg_rows_add(float *dw, const T *dout, const int32_t *key,
    const int32_t *seg_start, const int32_t *rows, int H)
{
	int s = blockIdx.x, lo = seg_start[s], hi = seg_start[s + 1];
	float *d = dw + (size_t)key[s] * H;

	for (int j = threadIdx.x; j < H; j += blockDim.x) {
		float acc = d[j];

		for (int i = lo; i < hi; i++)
			acc += tof(dout[(size_t)rows[i] * H + j]);
		d[j] = acc;
	}
}

/* dwpe[t] += sum over b of dout[b, t] (the positions of every sequence). */
template <typename T>
__global__ void
k_pos_add(float *dwpe, const T *dout, int B, int Tn, int H)
{
	int t = blockIdx.x;

	for (int j = threadIdx.x; j < H; j += blockDim.x) {
		float acc = dwpe[(size_t)t * H + j];

		for (int b = 0; b < B; b++)
			acc += tof(dout[((size_t)b * Tn + t) * H + j]);
		dwpe[(size_t)t * H + j] = acc;
	}
}

/* ---------------------------------------------------------------- LayerNorm */

/*
 * The fused end of an attention or FFN block, one block per row:
 * r = drop(y) + res (kept in y, the LayerNorm backward's input), then
 * out = LayerNorm(r), mean and rstd saved. With res NULL: out = LN(y)
 * (the MLM transform).
 */
template <typename T>
__global__ void
k_resid_ln(T *out, float *mean, float *rstd, T *y, const T *res, const T *lw,
    const T *lb, int H, float eps, dkey dk)
{
	__shared__ float sh[32];
	int n = blockIdx.x;
	T *yr = y + (size_t)n * H, *o = out + (size_t)n * H;
	float s = 0.0f, m, v = 0.0f, r;

	for (int j = threadIdx.x; j < H; j += blockDim.x) {
		float x = tof(yr[j]);

		if (res != NULL) {
			x = x * drop_factor(dk, (uint64_t)n * H + j) +
			    tof(res[(size_t)n * H + j]);
			yr[j] = fromf<T>(x);
			x = tof(yr[j]);
		}
		s += x;
	}
	m = block_sum(s, sh) / (float)H;
	for (int j = threadIdx.x; j < H; j += blockDim.x) {
		float d = tof(yr[j]) - m;

		v += d * d;
	}
	v = block_sum(v, sh) / (float)H;
	r = rsqrtf(v + eps);
	for (int j = threadIdx.x; j < H; j += blockDim.x)
		o[j] = fromf<T>((tof(yr[j]) - m) * r * tof(lw[j]) + tof(lb[j]));
	if (threadIdx.x == 0) {
		mean[n] = m;
		rstd[n] = r;
	}
}

/*
 * LayerNorm backward of the input, one block per row: dx = r * (g -
 * mean(g) - xhat * mean(g * xhat)) with g = dy * w; dres gets dx (added
 * when add is set), ddrop (when not NULL) dx times the dropout mask of dk.
 */
template <typename T>
__global__ void
k_ln_bwd(T *dres, T *ddrop, const T *dout, const T *x, const T *lw,
    const float *mean, const float *rstd, int H, int add, dkey dk)
{
	__shared__ float sh[32];
	int n = blockIdx.x;
	const T *dy = dout + (size_t)n * H, *xr = x + (size_t)n * H;
	float m = mean[n], r = rstd[n], sg = 0.0f, sgx = 0.0f, a, c;

	for (int j = threadIdx.x; j < H; j += blockDim.x) {
		float g = tof(dy[j]) * tof(lw[j]);

		sg += g;
		sgx += g * (tof(xr[j]) - m) * r;
	}
	a = block_sum(sg, sh) / (float)H;
	c = block_sum(sgx, sh) / (float)H;
	for (int j = threadIdx.x; j < H; j += blockDim.x) {
		float xh = (tof(xr[j]) - m) * r;
		float d = r * (tof(dy[j]) * tof(lw[j]) - a - xh * c);
		size_t idx = (size_t)n * H + j;

		if (add)
			d += tof(dres[idx]);
		dres[idx] = fromf<T>(d);
		if (ddrop != NULL)
			ddrop[idx] = fromf<T>(d * drop_factor(dk, (uint64_t)idx));
	}
}

#endif
