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

/* Two floats as one register of two T, the first in the low half (the
 * lower column of an operand pair). */
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
 * Forward, one block per (b, h), Tn / 16 warps: att (B, nh, T, T) gets
 * the probabilities (masked keys exactly 0; a row with no key kept all
 * 0), ctx (B*T, H) the dropped probabilities times V.
 */
template <typename T>
__global__ void __launch_bounds__(32 * FA_TMAX / 16, 2)
k_attn_fwd(T *ctx, T *att, const T *q, const T *k, const T *v,
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
			s[nt][0] *= fa[0];
			s[nt][1] *= fa[1];
			s[nt][2] *= fb[0];
			s[nt][3] *= fb[1];
		}
	}

	/* context = dropped probabilities x V */
#pragma unroll
	for (int dt = 0; dt < FA_HS / 8; dt++)
		o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;
#pragma unroll
	for (int kk = 0; kk < FA_NT / 2; kk++) {
		uint32_t a[4];

		if (kk >= nt8 / 2)
			break;
		a[0] = pack2<T>(s[2 * kk][0], s[2 * kk][1]);
		a[1] = pack2<T>(s[2 * kk][2], s[2 * kk][3]);
		a[2] = pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
		a[3] = pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
		for (int dt = 0; dt < FA_HS / 8; dt++) {
			const T *vr = vt + (dt * 8 + g) * ldt + kk * 16 + 2 * t;

			mma16816<T>(o[dt], a, ld32(vr), ld32(vr + 8));
		}
	}
	fa_store<T>(ctx + base, H, r0, g, t, o);
}

/*
 * Backward, one block per (b, h). Per warp and its 16 query rows: dPd =
 * dctx V^T; with the probabilities P read back and the dropout factors f,
 * ds = (P dPd f - P sum(P dPd f)) scale; dq = ds K. The dropped
 * probabilities P f and ds go to shared memory transposed, and then per
 * warp and its 16 keys: dk = ds^T Q, dv = (P f)^T dctx.
 */
template <typename T>
__global__ void __launch_bounds__(32 * FA_TMAX / 16)
k_attn_bwd(T *dq, T *dk, T *dv, const T *dctx, const T *att, const T *q,
    const T *k, const T *v, int nh, int Tn, int H, float scale, dkey key)
{
	extern __shared__ __align__(16) unsigned char fa_sh[];
	int ldt = fa_ldt(Tn);
	T *vs = (T *)fa_sh;			/* (T, 64) */
	T *kt = vs + Tn * FA_LDK;		/* (64, T) each */
	T *qt = kt + FA_HS * ldt;
	T *ot = qt + FA_HS * ldt;
	T *dst = ot + FA_HS * ldt;		/* (T, T) each, [key][query] */
	T *pdt = dst + Tn * ldt;
	int bh = blockIdx.x, b = bh / nh, h = bh % nh, nt8 = Tn / 8;
	int w = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
	int r0 = 16 * w, i0 = r0 + g;
	size_t base = (size_t)b * Tn * H + (size_t)h * FA_HS;
	size_t prow = (size_t)bh * Tn + i0;
	const T *a0 = att + prow * Tn, *a1 = a0 + (size_t)8 * Tn;
	uint32_t oa[FA_HS / 16][4];
	float dp[FA_NT][4], acc[FA_HS / 8][4], acc2[FA_HS / 8][4];
	float dot0 = 0.0f, dot1 = 0.0f;

	uint32_t pw[FA_NT][2];	/* P of the warp's rows, as stored */

	{
		uint4 x0[FA_PIECES], x1[FA_PIECES], x2[FA_PIECES], x3[FA_PIECES];

		fa_fetch<T>(x0, v + base, Tn, H, 0);
		fa_fetch<T>(x1, k + base, Tn, H, 1);
		fa_fetch<T>(x2, q + base, Tn, H, 1);
		fa_fetch<T>(x3, dctx + base, Tn, H, 1);
#pragma unroll
		for (int kk = 0; kk < FA_HS / 16; kk++)
			fa_afrag<T>(oa[kk], dctx + base, H, r0, kk * 16, g, t);
#pragma unroll
		for (int nt = 0; nt < FA_NT; nt++)
			if (nt < nt8) {
				pw[nt][0] = ld32(a0 + nt * 8 + 2 * t);
				pw[nt][1] = ld32(a1 + nt * 8 + 2 * t);
			}
		fa_put<T>(vs, x0, Tn, 0);
		fa_put<T>(kt, x1, Tn, 1);
		fa_put<T>(qt, x2, Tn, 1);
		fa_put<T>(ot, x3, Tn, 1);
	}
	__syncthreads();

	/* dPd = dctx V^T; g = dPd f; dp keeps P g, the dots sum it; the
	 * dropped probabilities go out transposed, pdt[key][query] */
#pragma unroll
	for (int nt = 0; nt < FA_NT; nt++) {
		const T *vr = vs + (nt * 8 + g) * FA_LDK + 2 * t;
		float p[4], fa[2], fb[2];
		int j = nt * 8 + 2 * t;

		if (nt >= nt8)
			break;
		dp[nt][0] = dp[nt][1] = dp[nt][2] = dp[nt][3] = 0.0f;
#pragma unroll
		for (int kk = 0; kk < FA_HS / 16; kk++)
			mma16816<T>(dp[nt], oa[kk], ld32(vr + kk * 16), ld32(vr + kk * 16 + 8));
		unpack2<T>(pw[nt][0], p[0], p[1]);
		unpack2<T>(pw[nt][1], p[2], p[3]);
		fa_drop(key, prow, Tn, nt, t, fa, fb);
		dp[nt][0] *= fa[0] * p[0];
		dp[nt][1] *= fa[1] * p[1];
		dp[nt][2] *= fb[0] * p[2];
		dp[nt][3] *= fb[1] * p[3];
		dot0 += dp[nt][0] + dp[nt][1];
		dot1 += dp[nt][2] + dp[nt][3];
		pdt[j * ldt + i0] = fromf<T>(p[0] * fa[0]);
		pdt[(j + 1) * ldt + i0] = fromf<T>(p[1] * fa[1]);
		pdt[j * ldt + i0 + 8] = fromf<T>(p[2] * fb[0]);
		pdt[(j + 1) * ldt + i0 + 8] = fromf<T>(p[3] * fb[1]);
	}
	dot0 = quad_sum(dot0);
	dot1 = quad_sum(dot1);
	/* ds, kept as the dq product's operand and stored transposed */
#pragma unroll
	for (int nt = 0; nt < FA_NT; nt++) {
		float p[4];
		int j = nt * 8 + 2 * t;

		if (nt >= nt8)
			break;
		unpack2<T>(pw[nt][0], p[0], p[1]);
		unpack2<T>(pw[nt][1], p[2], p[3]);
		dp[nt][0] = roundt<T>((dp[nt][0] - p[0] * dot0) * scale);
		dp[nt][1] = roundt<T>((dp[nt][1] - p[1] * dot0) * scale);
		dp[nt][2] = roundt<T>((dp[nt][2] - p[2] * dot1) * scale);
		dp[nt][3] = roundt<T>((dp[nt][3] - p[3] * dot1) * scale);
		dst[j * ldt + i0] = fromf<T>(dp[nt][0]);
		dst[(j + 1) * ldt + i0] = fromf<T>(dp[nt][1]);
		dst[j * ldt + i0 + 8] = fromf<T>(dp[nt][2]);
		dst[(j + 1) * ldt + i0 + 8] = fromf<T>(dp[nt][3]);
	}
	/* dq = ds K */
#pragma unroll
	for (int dt = 0; dt < FA_HS / 8; dt++)
		acc[dt][0] = acc[dt][1] = acc[dt][2] = acc[dt][3] = 0.0f;
#pragma unroll
	for (int kk = 0; kk < FA_NT / 2; kk++) {
		uint32_t a[4];

		if (kk >= nt8 / 2)
			break;
		a[0] = pack2<T>(dp[2 * kk][0], dp[2 * kk][1]);
		a[1] = pack2<T>(dp[2 * kk][2], dp[2 * kk][3]);
		a[2] = pack2<T>(dp[2 * kk + 1][0], dp[2 * kk + 1][1]);
		a[3] = pack2<T>(dp[2 * kk + 1][2], dp[2 * kk + 1][3]);
#pragma unroll
		for (int dt = 0; dt < FA_HS / 8; dt++) {
			const T *kr = kt + (dt * 8 + g) * ldt + kk * 16 + 2 * t;

			mma16816<T>(acc[dt], a, ld32(kr), ld32(kr + 8));
		}
	}
	fa_store<T>(dq + base, H, r0, g, t, acc);
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
}

/* ---------------------------------------------------------------- launchers */

static inline size_t
attn_fwd_smem(int Tn, size_t tsize)
{
	return ((size_t)Tn * FA_LDK + (size_t)FA_HS * fa_ldt(Tn)) * tsize +
	    (size_t)Tn * sizeof(int);
}

static inline size_t
attn_bwd_smem(int Tn, size_t tsize)
{
	return ((size_t)Tn * FA_LDK + 3 * (size_t)FA_HS * fa_ldt(Tn) +
	    2 * (size_t)Tn * fa_ldt(Tn)) * tsize;
}

template <typename T>
static inline void
attn_fwd(cudaStream_t st, T *ctx, T *att, const T *q, const T *k, const T *v,
    const int32_t *mask, int B, int nh, int Tn, int H, float scale, dkey dk)
{
	size_t sm = attn_fwd_smem(Tn, sizeof(T));

	if (sm > 48 * 1024)
		cudaFuncSetAttribute(k_attn_fwd<T>,
		    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm);
	k_attn_fwd<T><<<(unsigned)(B * nh), 32 * (Tn / 16), sm, st>>>(ctx, att, q, k,
	    v, mask, nh, Tn, H, scale, dk);
}

template <typename T>
static inline void
attn_bwd(cudaStream_t st, T *dq, T *dk, T *dv, const T *dctx, const T *att,
    const T *q, const T *k, const T *v, int B, int nh, int Tn, int H, float scale,
    dkey key)
{
	size_t sm = attn_bwd_smem(Tn, sizeof(T));

	if (sm > 48 * 1024)
		cudaFuncSetAttribute(k_attn_bwd<T>,
		    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm);
	k_attn_bwd<T><<<(unsigned)(B * nh), 32 * (Tn / 16), sm, st>>>(dq, dk, dv, dctx,
	    att, q, k, v, nh, Tn, H, scale, key);
}

#endif
