/*
 * The attention of one (sequence, head) in one block, bf16 or fp16 with
 * fp32 accumulation on the tensor cores (mma.sync m16n8k16, sm_80 and
 * later), forward and backward (layer.cu). It replaces, for head size 64
 * and up to 128 positions, the path of kernels_attn.cuh: the head
 * permutes, the batched score and context products and the separate
 * softmax kernels, each of which went through global memory.
 *
 * Q, K, V, the context and their gradients stay in the linear layers'
 * (B*T, H) layout, head h at columns h*64: no permutes. The scores stay
 * in registers and are fp32 (the unfused path rounds them to T); the
 * probabilities before dropout are written to att as before, because the
 * backward reads them rather than recomputing the scores. The dropout
 * mask is the one of every other path: element (b, h, i, j) of the
 * (B, nh, T, T) probabilities, Philox block e/4 (kernels.cuh).
 *
 * A warp owns 16 query rows. In a warp, lane = 4 g + t holds, of a 16x8
 * accumulator tile, rows g and g+8, columns 2t and 2t+1: the layout of
 * the instruction's C operand, which is also, two tiles side by side, the
 * layout of its A operand. So the probabilities go from the scores'
 * accumulators to the next product's operand without shared memory.
 */
#ifndef CADRE_CUDA_KERNELS_ATTN_FUSED_CUH
#define CADRE_CUDA_KERNELS_ATTN_FUSED_CUH

#include "kernels.cuh"

#define FA_NT		(FA_TMAX / 8)	/* most 8-column tiles of a score row */
#define FA_LDK		(FA_HS + 8)	/* padded row of a (T, 64) tile in shared memory */

/* Padded row of a (64, T) or (T, T) tile: (T + 8) / 2 words is 4 modulo
 * 8, so the 8 rows x 4 words an operand load touches are 32 banks. */
__host__ __device__ __forceinline__ int
fa_ldt(int Tn)
{
	return Tn + 8;
}

__device__ __forceinline__ uint32_t
ld32(const void *p)
{
	return *(const uint32_t *)p;
}

/* c += a b: a 16x16 (row), b 16x8 (column), c 16x8 fp32. */
template <typename T>
__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4],
    uint32_t b0, uint32_t b1);

template <>
__device__ __forceinline__ void
mma16816<__nv_bfloat16>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
	    "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
	    : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
	    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <>
__device__ __forceinline__ void
mma16816<__half>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
	    "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
	    : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
	    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/*
 * The dropout factors of a lane's four elements of tile nt: (row g,
 * columns 2t, 2t+1) in fa[], (row g+8, the same columns) in fb[]. Two
 * lanes t, t^1 share the Philox blocks of columns 4(t>>1)..+3 of both
 * rows: the even lane computes row g's, the odd row g+8's, and each
 * passes the other the half it needs.
 */
__device__ __forceinline__ void
fa_drop(const dkey &dk, size_t row0, int Tn, int nt, int t, float fa[2], float fb[2])
{
	float f[4], s0, s1, r0, r1;
	size_t row = row0 + ((t & 1) ? 8 : 0);

	if (dk.p <= 0.0f) {
		fa[0] = fa[1] = fb[0] = fb[1] = 1.0f;
		return;
	}
	drop_factor4(dk, (row * Tn + nt * 8 + 4 * (t >> 1)) >> 2, f);
	s0 = (t & 1) ? f[0] : f[2];
	s1 = (t & 1) ? f[1] : f[3];
	r0 = __shfl_xor_sync(0xffffffffu, s0, 1);
	r1 = __shfl_xor_sync(0xffffffffu, s1, 1);
	if ((t & 1) == 0) {
		fa[0] = f[0]; fa[1] = f[1]; fb[0] = r0; fb[1] = r1;
	} else {
		fa[0] = r0; fa[1] = r1; fb[0] = f[2]; fb[1] = f[3];
	}
}

/*
 * The forward keeps the dropout mask for the backward, one bit an
 * element, in the warps' own order: per (b, h), warp w and tile nt, four
 * words, the ballots of the lanes' elements (row g col 2t, row g col
 * 2t+1, row g+8 col 2t, row g+8 col 2t+1), bit 4g + t. The backward's
 * warps own the same rows, so each lane reads its bits back; no Philox
 * block is computed twice.
 */

__device__ __forceinline__ void
fa_mask_put(uint32_t *dm, int nt, int lane, const float fa[2], const float fb[2])
{
	uint32_t w0 = __ballot_sync(0xffffffffu, fa[0] != 0.0f);
	uint32_t w1 = __ballot_sync(0xffffffffu, fa[1] != 0.0f);
	uint32_t w2 = __ballot_sync(0xffffffffu, fb[0] != 0.0f);
	uint32_t w3 = __ballot_sync(0xffffffffu, fb[1] != 0.0f);

	if (lane < 4)
		dm[4 * nt + lane] = lane == 0 ? w0 : lane == 1 ? w1 : lane == 2 ? w2 : w3;
}

__device__ __forceinline__ void
fa_mask_get(const uint32_t *dm, int nt, int lane, float scale, float fa[2], float fb[2])
{
	uint4 w = *(const uint4 *)(dm + 4 * nt);

	fa[0] = (w.x >> lane) & 1u ? scale : 0.0f;
	fa[1] = (w.y >> lane) & 1u ? scale : 0.0f;
	fb[0] = (w.z >> lane) & 1u ? scale : 0.0f;
	fb[1] = (w.w >> lane) & 1u ? scale : 0.0f;
}

/* The sum or max over the four lanes of a row (t = 0..3). */
__device__ __forceinline__ float
quad_sum(float v)
{
	v += __shfl_xor_sync(0xffffffffu, v, 1);
	return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

__device__ __forceinline__ float
quad_max(float v)
{
	v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
	return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

/*
 * A (T, 64) head slice of x (row stride H) into shared memory, as is (dst
 * row stride FA_LDK) or transposed (dst (64, T), row stride fa_ldt(T)):
 * T x 8 pieces of 16 bytes over the block's 2T threads, FA_PIECES each.
 * fa_fetch issues a thread's loads at once (the load of every tile a
 * kernel needs before any store: one memory latency, not one a tile);
 * fa_put stores them. Consecutive threads take consecutive rows for the
 * transposed copy, so that its 2-byte stores fall in distinct banks.
 */
#define FA_PIECES	4

__device__ __forceinline__ void
fa_piece(int k, int Tn, int transpose, int &r, int &c8)
{
	int i = threadIdx.x + k * blockDim.x;

	r = transpose ? i % Tn : i / (FA_HS / 8);
	c8 = transpose ? i / Tn : i % (FA_HS / 8);
}

template <typename T>
__device__ __forceinline__ void
fa_fetch(uint4 v[FA_PIECES], const T *x, int Tn, int H, int transpose)
{
#pragma unroll
	for (int k = 0; k < FA_PIECES; k++) {
		int r, c8;

		fa_piece(k, Tn, transpose, r, c8);
		v[k] = *(const uint4 *)(x + (size_t)r * H + c8 * 8);
	}
}

template <typename T>
__device__ __forceinline__ void
fa_put(T *dst, const uint4 v[FA_PIECES], int Tn, int transpose)
{
	int ld = fa_ldt(Tn);

#pragma unroll
	for (int k = 0; k < FA_PIECES; k++) {
		int r, c8;

		fa_piece(k, Tn, transpose, r, c8);
		if (!transpose) {
			*(uint4 *)(dst + r * FA_LDK + c8 * 8) = v[k];
			continue;
		}
		const T *e = (const T *)&v[k];

#pragma unroll
		for (int q = 0; q < 8; q++)
			dst[(c8 * 8 + q) * ld + r] = e[q];
	}
}

/* The A operand of 16 rows x 16 columns (k0..k0+15) of a row-major x
 * with row stride ld (in elements), rows r0.. */
template <typename T>
__device__ __forceinline__ void
fa_afrag(uint32_t a[4], const T *x, int ld, int r0, int k0, int g, int t)
{
	const T *p = x + (size_t)(r0 + g) * ld + k0 + 2 * t;

	a[0] = ld32(p);
	a[1] = ld32(p + (size_t)8 * ld);
	a[2] = ld32(p + 8);
	a[3] = ld32(p + (size_t)8 * ld + 8);
}

/* A warp's 16 rows x 64 columns of fp32 accumulators (row r0 + g and
 * r0 + g + 8, columns 8 dt + 2t, +1) into a (rows, H) head slice. */
template <typename T>
__device__ __forceinline__ void
fa_store(T *x, int H, int r0, int g, int t, const float acc[FA_HS / 8][4])
{
	T *c0 = x + (size_t)(r0 + g) * H + 2 * t, *c1 = c0 + (size_t)8 * H;

#pragma unroll
	for (int dt = 0; dt < FA_HS / 8; dt++) {
		*(uint32_t *)(c0 + dt * 8) = pack2<T>(acc[dt][0], acc[dt][1]);
		*(uint32_t *)(c1 + dt * 8) = pack2<T>(acc[dt][2], acc[dt][3]);
	}
}

/*
 * acc = a warp's 16 rows x T (pk: pairs of T in the C layout, nt8 tiles
 * of 8 columns) times a (T, 64) matrix held transposed in shared memory
 * (bt: (64, T), row stride ldt). Two adjacent C tiles are the A operand
 * of a k-step of 16.
 */
template <typename T>
__device__ __forceinline__ void
fa_rows_times(float acc[FA_HS / 8][4], const uint32_t pk[FA_NT][2], const T *bt,
    int ldt, int nt8, int g, int t)
{
#pragma unroll
	for (int dt = 0; dt < FA_HS / 8; dt++)
		acc[dt][0] = acc[dt][1] = acc[dt][2] = acc[dt][3] = 0.0f;
#pragma unroll
	for (int kk = 0; kk < FA_NT / 2; kk++) {
		uint32_t a[4];

		if (kk >= nt8 / 2)
			break;
		a[0] = pk[2 * kk][0];
		a[1] = pk[2 * kk][1];
		a[2] = pk[2 * kk + 1][0];
		a[3] = pk[2 * kk + 1][1];
#pragma unroll
		for (int dt = 0; dt < FA_HS / 8; dt++) {
			const T *br = bt + (dt * 8 + g) * ldt + kk * 16 + 2 * t;

			mma16816<T>(acc[dt], a, ld32(br), ld32(br + 8));
		}
	}
}

/*
 * Forward, one block per (b, h), Tn / 16 warps: att (B, nh, T, T) gets
 * the probabilities (masked keys exactly 0; a row with no key kept all
 * 0), ctx (B*T, H) the dropped probabilities times V.
 */
template <typename T>
__global__ void __launch_bounds__(32 * FA_TMAX / 16, 2)
k_attn_fwd(T *ctx, T *att, uint32_t *dmask, const T *q, const T *k, const T *v,
    const int32_t *mask, int nh, int Tn, int H, float scale, dkey dk)
{
	extern __shared__ __align__(16) unsigned char fa_sh[];
	T *ks = (T *)fa_sh;				/* (T, 64) */
	T *vt = ks + Tn * FA_LDK;			/* (64, T) */
	int ldt = fa_ldt(Tn);
	int *mk = (int *)(vt + FA_HS * ldt);		/* (T) */
	int bh = blockIdx.x, b = bh / nh, h = bh % nh, nt8 = Tn / 8;
	int w = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
	int r0 = 16 * w;
	size_t base = (size_t)b * Tn * H + (size_t)h * FA_HS;
	uint32_t qa[FA_HS / 16][4];
	float s[FA_NT][4], o[FA_HS / 8][4];
	uint32_t pd[FA_NT][2];	/* the dropped probabilities, pairs of T */
	float mx0 = -INFINITY, mx1 = -INFINITY, sum0 = 0.0f, sum1 = 0.0f, inv0, inv1;

	{
		uint4 kv[FA_PIECES], vv[FA_PIECES];
		int m = threadIdx.x < Tn ? mask[(size_t)b * Tn + threadIdx.x] : 0;

		fa_fetch<T>(kv, k + base, Tn, H, 0);
		fa_fetch<T>(vv, v + base, Tn, H, 1);
#pragma unroll
		for (int kk = 0; kk < FA_HS / 16; kk++)
			fa_afrag<T>(qa[kk], q + base, H, r0, kk * 16, g, t);
		fa_put<T>(ks, kv, Tn, 0);
		fa_put<T>(vt, vv, Tn, 1);
		if (threadIdx.x < Tn)
			mk[threadIdx.x] = m;
	}
	__syncthreads();

	/* scores, scaled and masked */
#pragma unroll
	for (int nt = 0; nt < FA_NT; nt++) {
		if (nt >= nt8)
			break;
		const T *kr = ks + (nt * 8 + g) * FA_LDK + 2 * t;
		int j = nt * 8 + 2 * t;
		int m0 = mk[j], m1 = mk[j + 1];

		s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
		for (int kk = 0; kk < FA_HS / 16; kk++)
			mma16816<T>(s[nt], qa[kk], ld32(kr + kk * 16), ld32(kr + kk * 16 + 8));
		s[nt][0] = m0 ? s[nt][0] * scale : -INFINITY;
		s[nt][1] = m1 ? s[nt][1] * scale : -INFINITY;
		s[nt][2] = m0 ? s[nt][2] * scale : -INFINITY;
		s[nt][3] = m1 ? s[nt][3] * scale : -INFINITY;
		mx0 = fmaxf(mx0, fmaxf(s[nt][0], s[nt][1]));
		mx1 = fmaxf(mx1, fmaxf(s[nt][2], s[nt][3]));
	}
	mx0 = quad_max(mx0);
	mx1 = quad_max(mx1);
#pragma unroll
	for (int nt = 0; nt < FA_NT; nt++) {
		if (nt >= nt8)
			break;
		s[nt][0] = s[nt][0] == -INFINITY ? 0.0f : expf(s[nt][0] - mx0);
		s[nt][1] = s[nt][1] == -INFINITY ? 0.0f : expf(s[nt][1] - mx0);
		s[nt][2] = s[nt][2] == -INFINITY ? 0.0f : expf(s[nt][2] - mx1);
		s[nt][3] = s[nt][3] == -INFINITY ? 0.0f : expf(s[nt][3] - mx1);
		sum0 += s[nt][0] + s[nt][1];
		sum1 += s[nt][2] + s[nt][3];
	}
	sum0 = quad_sum(sum0);
	sum1 = quad_sum(sum1);
	inv0 = sum0 > 0.0f ? 1.0f / sum0 : 0.0f;
	inv1 = sum1 > 0.0f ? 1.0f / sum1 : 0.0f;

	/* probabilities out; the dropped ones stay for the product */
	{
		size_t prow = (size_t)bh * Tn + r0 + g;
		T *a0 = att + prow * Tn, *a1 = a0 + (size_t)8 * Tn;
		uint32_t *dm = dmask + ((size_t)bh * (Tn / 16) + w) * FA_MASK_WORDS(Tn);

#pragma unroll
		for (int nt = 0; nt < FA_NT; nt++) {
			float fa[2], fb[2];

			if (nt >= nt8)
				break;
			s[nt][0] *= inv0;
			s[nt][1] *= inv0;
			s[nt][2] *= inv1;
			s[nt][3] *= inv1;
			*(uint32_t *)(a0 + nt * 8 + 2 * t) = pack2<T>(s[nt][0], s[nt][1]);
			*(uint32_t *)(a1 + nt * 8 + 2 * t) = pack2<T>(s[nt][2], s[nt][3]);
			fa_drop(dk, prow, Tn, nt, t, fa, fb);
			if (dk.p > 0.0f)
				fa_mask_put(dm, nt, lane, fa, fb);
			pd[nt][0] = pack2<T>(s[nt][0] * fa[0], s[nt][1] * fa[1]);
			pd[nt][1] = pack2<T>(s[nt][2] * fb[0], s[nt][3] * fb[1]);
		}
	}

	/* context = dropped probabilities x V */
	fa_rows_times<T>(o, pd, vt, ldt, nt8, g, t);
	fa_store<T>(ctx + base, H, r0, g, t, o);
}

/*
 * The column sums of a warp's 16 rows x 64 columns of accumulators (the
 * bias gradients of q, k, v): over the rows in a lane, then over g in
 * butterfly order; then the warps' sums in warp order (red: nw x 64
 * floats of shared memory) into out[0..63]. Every thread of the block
 * calls it.
 */
__device__ __forceinline__ void
fa_colsum(const float acc[FA_HS / 8][4], float *red, float *out, int w, int nw,
    int lane)
{
	int t = lane & 3;

#pragma unroll
	for (int dt = 0; dt < FA_HS / 8; dt++) {
		float c0 = acc[dt][0] + acc[dt][2], c1 = acc[dt][1] + acc[dt][3];

		for (int o = 4; o < 32; o <<= 1) {
			c0 += __shfl_xor_sync(0xffffffffu, c0, o);
			c1 += __shfl_xor_sync(0xffffffffu, c1, o);
		}
		if (lane < 4) {
			red[w * FA_HS + dt * 8 + 2 * t] = c0;
			red[w * FA_HS + dt * 8 + 2 * t + 1] = c1;
		}
	}
	__syncthreads();
	/* T 16 is one warp: fewer threads than columns */
	for (int c = threadIdx.x; c < FA_HS; c += blockDim.x) {
		float s = 0.0f;

		for (int k = 0; k < nw; k++)
			s += red[k * FA_HS + c];
		out[c] = s;
	}
	__syncthreads();
}

/* A backward lane's tile nt: dPd (or ds) as kept, P as stored (p0, p1:
 * its two rows' pairs), the dropout factors. */
template <typename T>
__device__ __forceinline__ void
fa_bwd_tile(const uint32_t dpk[2], const T *p0, const T *p1, const uint32_t *wm,
    int nt, int lane, const dkey &key, float d[4], float p[4], float fa[2],
    float fb[2])
{
	unpack2<T>(dpk[0], d[0], d[1]);
	unpack2<T>(dpk[1], d[2], d[3]);
	unpack2<T>(ld32(p0), p[0], p[1]);
	unpack2<T>(ld32(p1), p[2], p[3]);
	if (key.p > 0.0f)
		fa_mask_get(wm, nt, lane, key.scale, fa, fb);
	else
		fa[0] = fa[1] = fb[0] = fb[1] = 1.0f;
}

/*
 * Backward, one block per (b, h), two blocks an SM. Per warp and its 16
 * query rows: dPd = dctx V^T (rounded to T, as the unfused path stores
 * it); with the probabilities P read back and the dropout factors f,
 * ds = P (dPd f - sum(P dPd f)) scale; dq = ds K. The dropped
 * probabilities P f and ds go to shared memory transposed; then, Q and
 * dctx loaded over V and K, per warp and its 16 keys: dk = ds^T Q,
 * dv = (P f)^T dctx.
 */
template <typename T>
__global__ void __launch_bounds__(32 * FA_TMAX / 16, 2)
k_attn_bwd(T *dq, T *dk, T *dv, float *bpart, const T *dctx, const T *att,
    const uint32_t *dmask, const T *q, const T *k, const T *v, int B, int nh, int Tn,
    int H, float scale, dkey key)
{
	extern __shared__ __align__(16) unsigned char fa_sh[];
	int ldt = fa_ldt(Tn);
	T *dst = (T *)fa_sh;			/* (T, T) each, [key][query] */
	T *pdt = dst + Tn * ldt;
	uint32_t *dms = (uint32_t *)(pdt + Tn * ldt);	/* the block's mask words */
	float *red = (float *)(dms + (Tn / 16) * FA_MASK_WORDS(Tn));	/* (Tn / 16, 64) */
	T *vs = (T *)(red + (Tn / 16) * FA_HS);		/* (T, 64) */
	T *kt = vs + Tn * FA_LDK;		/* (64, T) */
	T *qt = vs, *ot = vs + FA_HS * ldt;	/* (64, T) each, after V and K */
	int bh = blockIdx.x, b = bh / nh, h = bh % nh, nt8 = Tn / 8;
	int w = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
	int r0 = 16 * w, i0 = r0 + g;
	size_t base = (size_t)b * Tn * H + (size_t)h * FA_HS;
	size_t prow = (size_t)bh * Tn + i0;
	const T *a0 = att + prow * Tn, *a1 = a0 + (size_t)8 * Tn;
	const uint32_t *wm = dms + w * FA_MASK_WORDS(Tn);
	uint32_t oa[FA_HS / 16][4];
	uint32_t dpk[FA_NT][2];	/* dPd, then ds: pairs of T, the C layout */
	float acc[FA_HS / 8][4], acc2[FA_HS / 8][4];
	float dot0 = 0.0f, dot1 = 0.0f;

	{
		uint4 x0[FA_PIECES], x1[FA_PIECES];

		fa_fetch<T>(x0, v + base, Tn, H, 0);
		fa_fetch<T>(x1, k + base, Tn, H, 1);
#pragma unroll
		for (int kk = 0; kk < FA_HS / 16; kk++)
			fa_afrag<T>(oa[kk], dctx + base, H, r0, kk * 16, g, t);
		if (key.p > 0.0f) {
			const uint32_t *src = dmask + (size_t)bh * (Tn / 16) * FA_MASK_WORDS(Tn);

			for (int i = threadIdx.x; i < (Tn / 16) * FA_MASK_WORDS(Tn); i += blockDim.x)
				dms[i] = src[i];
		}
		fa_put<T>(vs, x0, Tn, 0);
		fa_put<T>(kt, x1, Tn, 1);
	}
	__syncthreads();

	/* dPd = dctx V^T, kept rounded; g = dPd f; the row dots sum P g; the
	 * dropped probabilities go out transposed, pdt[key][query] */
#pragma unroll
	for (int nt = 0; nt < FA_NT; nt++) {
		const T *vr = vs + (nt * 8 + g) * FA_LDK + 2 * t;
		float d[4], p[4], fa[2], fb[2];
		int j = nt * 8 + 2 * t;

		if (nt >= nt8)
			break;
		d[0] = d[1] = d[2] = d[3] = 0.0f;
#pragma unroll
		for (int kk = 0; kk < FA_HS / 16; kk++)
			mma16816<T>(d, oa[kk], ld32(vr + kk * 16), ld32(vr + kk * 16 + 8));
		dpk[nt][0] = pack2<T>(d[0], d[1]);
		dpk[nt][1] = pack2<T>(d[2], d[3]);
		fa_bwd_tile<T>(dpk[nt], a0 + j, a1 + j, wm, nt, lane, key, d, p, fa, fb);
		dot0 += p[0] * (d[0] * fa[0]) + p[1] * (d[1] * fa[1]);
		dot1 += p[2] * (d[2] * fb[0]) + p[3] * (d[3] * fb[1]);
		pdt[j * ldt + i0] = fromf<T>(p[0] * fa[0]);
		pdt[(j + 1) * ldt + i0] = fromf<T>(p[1] * fa[1]);
		pdt[j * ldt + i0 + 8] = fromf<T>(p[2] * fb[0]);
		pdt[(j + 1) * ldt + i0 + 8] = fromf<T>(p[3] * fb[1]);
	}
	dot0 = quad_sum(dot0);
	dot1 = quad_sum(dot1);
	/* ds, stored transposed and kept (rounded) as the dq product's operand */
#pragma unroll
	for (int nt = 0; nt < FA_NT; nt++) {
		float d[4], p[4], fa[2], fb[2];
		int j = nt * 8 + 2 * t;

		if (nt >= nt8)
			break;
		fa_bwd_tile<T>(dpk[nt], a0 + j, a1 + j, wm, nt, lane, key, d, p, fa, fb);
		d[0] = p[0] * (d[0] * fa[0] - dot0) * scale;
		d[1] = p[1] * (d[1] * fa[1] - dot0) * scale;
		d[2] = p[2] * (d[2] * fb[0] - dot1) * scale;
		d[3] = p[3] * (d[3] * fb[1] - dot1) * scale;
		dpk[nt][0] = pack2<T>(d[0], d[1]);
		dpk[nt][1] = pack2<T>(d[2], d[3]);
		dst[j * ldt + i0] = fromf<T>(d[0]);
		dst[(j + 1) * ldt + i0] = fromf<T>(d[1]);
		dst[j * ldt + i0 + 8] = fromf<T>(d[2]);
		dst[(j + 1) * ldt + i0 + 8] = fromf<T>(d[3]);
	}
	/* dq = ds K */
	fa_rows_times<T>(acc, dpk, kt, ldt, nt8, g, t);
	fa_store<T>(dq + base, H, r0, g, t, acc);
	if (bpart != NULL)
		fa_colsum(acc, red, bpart + (size_t)b * H + h * FA_HS, w, Tn / 16, lane);
	__syncthreads();

	/* Q and dctx, transposed, where V and K were */
	{
		uint4 x0[FA_PIECES], x1[FA_PIECES];

		fa_fetch<T>(x0, q + base, Tn, H, 1);
		fa_fetch<T>(x1, dctx + base, Tn, H, 1);
		fa_put<T>(qt, x0, Tn, 1);
		fa_put<T>(ot, x1, Tn, 1);
	}
	__syncthreads();

	/* per warp, keys r0..r0+15: dk = ds^T Q, dv = (P f)^T dctx */
#pragma unroll
	for (int dt = 0; dt < FA_HS / 8; dt++) {
		acc[dt][0] = acc[dt][1] = acc[dt][2] = acc[dt][3] = 0.0f;
		acc2[dt][0] = acc2[dt][1] = acc2[dt][2] = acc2[dt][3] = 0.0f;
	}
	for (int kk = 0; kk < nt8 / 2; kk++) {
		uint32_t as[4], ap[4];

		fa_afrag<T>(as, dst, ldt, r0, kk * 16, g, t);
		fa_afrag<T>(ap, pdt, ldt, r0, kk * 16, g, t);
#pragma unroll
		for (int dt = 0; dt < FA_HS / 8; dt++) {
			const T *qr = qt + (dt * 8 + g) * ldt + kk * 16 + 2 * t;
			const T *orow = ot + (dt * 8 + g) * ldt + kk * 16 + 2 * t;

			mma16816<T>(acc[dt], as, ld32(qr), ld32(qr + 8));
			mma16816<T>(acc2[dt], ap, ld32(orow), ld32(orow + 8));
		}
	}
	fa_store<T>(dk + base, H, r0, g, t, acc);
	fa_store<T>(dv + base, H, r0, g, t, acc2);
	if (bpart != NULL) {
		fa_colsum(acc, red, bpart + (size_t)(B + b) * H + h * FA_HS, w, Tn / 16, lane);
		fa_colsum(acc2, red, bpart + (size_t)(2 * B + b) * H + h * FA_HS, w, Tn / 16,
		    lane);
	}
}

/* The bias gradients of q, k, v from k_attn_bwd's partial sums (bpart:
 * 3 x B x H), added in sequence order. */
static __global__ void
k_attn_bias(float *dbq, float *dbk, float *dbv, const float *bpart, int B, int H)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x, tensor = i / H, c = i % H;
	float s = 0.0f;

	if (i >= 3 * H)
		return;
	for (int b = 0; b < B; b++)
		s += bpart[((size_t)tensor * B + b) * H + c];
	(tensor == 0 ? dbq : tensor == 1 ? dbk : dbv)[c] += s;
}

/* ---------------------------------------------------------------- launchers */

static inline size_t
attn_fwd_smem(int Tn, size_t tsize)
{
	return ((size_t)Tn * FA_LDK + (size_t)FA_HS * fa_ldt(Tn)) * tsize +
	    (size_t)Tn * sizeof(int);
}

/* ds and P f; the mask words; the column sums' scratch; V and K^T, later
 * Q^T and dctx^T */
static inline size_t
attn_bwd_smem(int Tn, size_t tsize)
{
	size_t ph1 = (size_t)Tn * FA_LDK + (size_t)FA_HS * fa_ldt(Tn);
	size_t ph2 = 2 * (size_t)FA_HS * fa_ldt(Tn);

	return (2 * (size_t)Tn * fa_ldt(Tn) + (ph1 > ph2 ? ph1 : ph2)) * tsize +
	    (size_t)(Tn / 16) * (FA_MASK_WORDS(Tn) * sizeof(uint32_t) +
	    FA_HS * sizeof(float));
}

/* Shared memory past 48 KB is asked for once per kernel (the process
 * uses one device). */
template <typename K>
static inline void
fa_smem(K kernel, size_t bytes, size_t *granted)
{
	if (bytes > 48 * 1024 && bytes > *granted) {
		cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
		    (int)bytes);
		*granted = bytes;
	}
}

/* dmask: attn_mask_words(B, nh, Tn) words, written where dropout is on
 * and read by attn_bwd with the same key. */
template <typename T>
static inline void
attn_fwd(cudaStream_t st, T *ctx, T *att, uint32_t *dmask, const T *q, const T *k,
    const T *v, const int32_t *mask, int B, int nh, int Tn, int H, float scale,
    dkey dk)
{
	static size_t granted;
	size_t sm = attn_fwd_smem(Tn, sizeof(T));

	fa_smem(k_attn_fwd<T>, sm, &granted);
	k_attn_fwd<T><<<(unsigned)(B * nh), 32 * (Tn / 16), sm, st>>>(ctx, att, dmask,
	    q, k, v, mask, nh, Tn, H, scale, dk);
}

/* dbq, dbk, dbv (the bias gradients, fp32, added to) given: bpart, 3 x B x
 * H floats of scratch, takes the blocks' column sums. */
template <typename T>
static inline void
attn_bwd(cudaStream_t st, T *dq, T *dk, T *dv, float *dbq, float *dbk, float *dbv,
    float *bpart, const T *dctx, const T *att, const uint32_t *dmask, const T *q,
    const T *k, const T *v, int B, int nh, int Tn, int H, float scale, dkey key)
{
	static size_t granted;
	size_t sm = attn_bwd_smem(Tn, sizeof(T));
	int bias = dbq != NULL;

	fa_smem(k_attn_bwd<T>, sm, &granted);
	k_attn_bwd<T><<<(unsigned)(B * nh), 32 * (Tn / 16), sm, st>>>(dq, dk, dv,
	    bias ? bpart : NULL, dctx, att, dmask, q, k, v, B, nh, Tn, H, scale, key);
	if (bias)
		k_attn_bias<<<(unsigned)((3 * H + 255) / 256), 256, 0, st>>>(dbq, dbk, dbv,
		    bpart, B, H);
}

#endif
