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
 * The embedding tables' gradients by the pieces of struct segs: a block
 * per piece adds its rows (token indices, in increasing order) into its
 * gradient row, or into a partial sum that k_seg_parts_add then adds in
 * piece order. Every sum has one owner and a fixed order: no atomics.
 */
template <typename T>
__global__ void
k_seg_pieces(float *dw, float *part, const T *dout, const int32_t *rows,
    const int32_t *pbeg, const int32_t *pend, const int32_t *pout, int H)
{
	int p = blockIdx.x, lo = pbeg[p], hi = pend[p], o = pout[p];
	float *d = o >= 0 ? dw + (size_t)o * H : part + (size_t)(-o - 1) * H;

	for (int j = threadIdx.x; j < H; j += blockDim.x) {
		float acc = o >= 0 ? d[j] : 0.0f;

		for (int i = lo; i < hi; i++)
			acc += tof(dout[(size_t)rows[i] * H + j]);
		d[j] = acc;
	}
}

static __global__ void
k_seg_parts_add(float *dw, const float *part, const int32_t *mkey,
    const int32_t *mslot, const int32_t *mcount, int H)
{
	int m = blockIdx.x, s0 = mslot[m], ns = mcount[m];
	float *d = dw + (size_t)mkey[m] * H;

	for (int j = threadIdx.x; j < H; j += blockDim.x) {
		float acc = d[j];

		for (int s = s0; s < s0 + ns; s++)
			acc += part[(size_t)s * H + j];
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

/* ---------------------------------------------------------------- LayerNorm, a warp per row */

/* Groups of four elements a lane holds in registers: rows of up to
 * 32 * 4 * ROW_GROUPS elements take the warp kernels below. */
#define ROW_GROUPS	8

/*
 * k_resid_ln with a warp per row and the row in registers: one read of
 * y and res, one Philox block per four elements, no block barriers.
 * Rows are 4-element aligned (vec4_ok); the LayerNorm parameters are
 * read element by element (they may be less aligned).
 */
template <typename T>
__global__ void
k_resid_ln_w(T *out, float *mean, float *rstd, T *y, const T *res, const T *lw,
    const T *lb, int N, int H, float eps, dkey dk)
{
	int lane = threadIdx.x & 31, ng = H >> 2;
	int n = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
	float v[ROW_GROUPS][4], s = 0.0f, m, var = 0.0f, r;

	if (n >= N)
		return;
	T *yr = y + (size_t)n * H, *o = out + (size_t)n * H;
#pragma unroll
	for (int k = 0; k < ROW_GROUPS; k++) {
		int gi = lane + 32 * k;

		if (gi >= ng)
			break;
		ld4(yr + 4 * gi, v[k]);
		if (res != NULL) {
			float rv[4], f[4] = { 1.0f, 1.0f, 1.0f, 1.0f };

			ld4(res + (size_t)n * H + 4 * gi, rv);
			if (dk.p > 0.0f)
				drop_factor4(dk, (((size_t)n * H) >> 2) + gi, f);
#pragma unroll
			for (int q = 0; q < 4; q++)
				v[k][q] = roundt<T>(v[k][q] * f[q] + rv[q]);
			st4(yr + 4 * gi, v[k]);
		}
		s += (v[k][0] + v[k][1]) + (v[k][2] + v[k][3]);
	}
	m = warp_sum(s) / (float)H;
#pragma unroll
	for (int k = 0; k < ROW_GROUPS; k++) {
		if (lane + 32 * k >= ng)
			break;
#pragma unroll
		for (int q = 0; q < 4; q++) {
			float d = v[k][q] - m;

			var += d * d;
		}
	}
	var = warp_sum(var) / (float)H;
	r = rsqrtf(var + eps);
#pragma unroll
	for (int k = 0; k < ROW_GROUPS; k++) {
		int gi = lane + 32 * k;
		float ov[4];

		if (gi >= ng)
			break;
#pragma unroll
		for (int q = 0; q < 4; q++) {
			int j = 4 * gi + q;

			ov[q] = (v[k][q] - m) * r * tof(lw[j]) + tof(lb[j]);
		}
		st4(o + 4 * gi, ov);
	}
	if (lane == 0) {
		mean[n] = m;
		rstd[n] = r;
	}
}

/* k_ln_bwd with a warp per row, the row's g and xhat in registers. */
template <typename T>
__global__ void
k_ln_bwd_w(T *dres, T *ddrop, const T *dout, const T *x, const T *lw,
    const float *mean, const float *rstd, int N, int H, int add, dkey dk)
{
	int lane = threadIdx.x & 31, ng = H >> 2;
	int n = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
	float gv[ROW_GROUPS][4], xh[ROW_GROUPS][4], sg = 0.0f, sgx = 0.0f, m, r, a, c;

	if (n >= N)
		return;
	size_t row = (size_t)n * H;
	m = mean[n];
	r = rstd[n];
#pragma unroll
	for (int k = 0; k < ROW_GROUPS; k++) {
		int gi = lane + 32 * k;

		if (gi >= ng)
			break;
		ld4(dout + row + 4 * gi, gv[k]);
		ld4(x + row + 4 * gi, xh[k]);
#pragma unroll
		for (int q = 0; q < 4; q++) {
			gv[k][q] *= tof(lw[4 * gi + q]);
			xh[k][q] = (xh[k][q] - m) * r;
			sg += gv[k][q];
			sgx += gv[k][q] * xh[k][q];
		}
	}
	a = warp_sum(sg) / (float)H;
	c = warp_sum(sgx) / (float)H;
#pragma unroll
	for (int k = 0; k < ROW_GROUPS; k++) {
		int gi = lane + 32 * k;
		float d[4], f[4] = { 1.0f, 1.0f, 1.0f, 1.0f };

		if (gi >= ng)
			break;
		if (add)
			ld4(dres + row + 4 * gi, d);
#pragma unroll
		for (int q = 0; q < 4; q++) {
			float dq = r * (gv[k][q] - a - xh[k][q] * c);

			d[q] = add ? dq + d[q] : dq;
		}
		st4(dres + row + 4 * gi, d);
		if (ddrop != NULL) {
			if (dk.p > 0.0f)
				drop_factor4(dk, (row >> 2) + gi, f);
#pragma unroll
			for (int q = 0; q < 4; q++)
				f[q] *= d[q];
			st4(ddrop + row + 4 * gi, f);
		}
	}
}

/* The launchers: the warp kernels where the rows allow them. */
template <typename T>
static inline void
resid_ln(cudaStream_t st, T *out, float *mean, float *rstd, T *y, const T *res,
    const T *lw, const T *lb, int N, int H, float eps, dkey dk)
{
	if (H <= 32 * 4 * ROW_GROUPS && vec4_ok(sizeof(T), (size_t)H, out, y, res))
		k_resid_ln_w<T><<<(N + 3) / 4, 128, 0, st>>>(out, mean, rstd, y, res, lw,
		    lb, N, H, eps, dk);
	else
		k_resid_ln<T><<<N, 256, 0, st>>>(out, mean, rstd, y, res, lw, lb, H, eps, dk);
}

template <typename T>
static inline void
ln_bwd(cudaStream_t st, T *dres, T *ddrop, const T *dout, const T *x, const T *lw,
    const float *mean, const float *rstd, int N, int H, int add, dkey dk)
{
	if (H <= 32 * 4 * ROW_GROUPS && vec4_ok(sizeof(T), (size_t)H, dres, ddrop, dout, x))
		k_ln_bwd_w<T><<<(N + 3) / 4, 128, 0, st>>>(dres, ddrop, dout, x, lw, mean,
		    rstd, N, H, add, dk);
	else
		k_ln_bwd<T><<<N, 256, 0, st>>>(dres, ddrop, dout, x, lw, mean, rstd, H,
		    add, dk);
}

#endif
