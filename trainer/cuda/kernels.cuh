/*
 * The element-wise, normalisation, attention-softmax, loss and optimizer
 * kernels of the CUDA path, each the device twin of a loop in ops.c,
 * model.c or optim.c (docs/gpu.md). Templated on the activation type T
 * (float, __nv_bfloat16, __half); statistics, losses and parameter
 * gradients are fp32 (partial sums in fixed order, no atomics: the
 * gradients are the same bits every run).
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

/* ---------------------------------------------------------------- GEMM fallback */

/*
 * Row-major C = alpha op(A) op(B) + beta C (+ bias per column), one
 * thread per element, fp32 sums: for the shapes cuBLASLt has no algorithm
 * for (tiny or oddly aligned products; gemm() in engine.cu says when).
 */
template <typename TA, typename TC>
__global__ void
k_gemm_naive(int ta, int tb, int M, int N, int K, const TA *A, int lda,
    long long sA, const TA *B, int ldb, long long sB, TC *C, int ldc,
    long long sC, float alpha, float beta, const TC *bias)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	int z = blockIdx.y, r, c;
	float s = 0.0f;

	if (i >= (size_t)M * N)
		return;
	r = (int)(i / N);
	c = (int)(i % N);
	A += z * sA;
	B += z * sB;
	C += z * sC;
	for (int k = 0; k < K; k++) {
		float a = tof(ta ? A[(size_t)k * lda + r] : A[(size_t)r * lda + k]);
		float b = tof(tb ? B[(size_t)c * ldb + k] : B[(size_t)k * ldb + c]);

		s += a * b;
	}
	s *= alpha;
	if (beta != 0.0f)
		s += beta * tof(C[(size_t)r * ldc + c]);
	if (bias != NULL)
		s += tof(bias[c]);
	C[(size_t)r * ldc + c] = fromf<TC>(s);
}

/* C(M,N) += bias(N) per row: for a bias cuBLASLt's epilogue cannot
 * read (less than 16-byte aligned). */
template <typename TC>
__global__ void
k_add_bias(TC *C, const TC *bias, int M, int N, int ldc)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	if (i >= (size_t)M * N)
		return;
	size_t r = i / N;
	int c = (int)(i % N);

	C[r * ldc + c] = fromf<TC>(tof(C[r * ldc + c]) + tof(bias[c]));
}

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

/* Rows per partial sum of the column reductions. */
#define COLSUM_ROWS	256

/*
 * Column sums in two passes, fixed order: partial[c][j] over rows
 * c*COLSUM_ROWS.. (grid.y = chunks), then k_partials_add adds the chunks
 * in order into dst (fp32 gradients). With x given, the LayerNorm weight's
 * gradient dy * xhat goes to pw and dy to pb; else dy to pb alone (a bias).
 */
template <typename T>
__global__ void
k_colsum_partial(float *pw, float *pb, const T *dy, const T *x,
    const float *mean, const float *rstd, int N, int C)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y;
	int lo = c * COLSUM_ROWS, hi = min(N, lo + COLSUM_ROWS);
	float sw = 0.0f, sb = 0.0f;

	if (j >= C)
		return;
	for (int n = lo; n < hi; n++) {
		float d = tof(dy[(size_t)n * C + j]);

		sb += d;
		if (x != NULL)
			sw += d * (tof(x[(size_t)n * C + j]) - mean[n]) * rstd[n];
	}
	pb[(size_t)c * C + j] = sb;
	if (x != NULL)
		pw[(size_t)c * C + j] = sw;
}

__global__ void
k_partials_add(float *dst, const float *part, int chunks, int C)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	float s = 0.0f;

	if (j >= C)
		return;
	for (int c = 0; c < chunks; c++)
		s += part[(size_t)c * C + j];
	dst[j] += s;
}

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

/* ---------------------------------------------------------------- loss */

/*
 * Softmax cross-entropy, one block per row of logits (fp32, M x V):
 * losses[m] (double), correct[m] (arg-max == target), and when dlogits is
 * not NULL (softmax - onehot) * dscale, as ops.c's
 * crossentropy_forward_backward.
 */
template <typename T>
__global__ void
k_xent(T *dlogits, double *losses, int *correct, const float *logits,
    const int32_t *targets, int V, float dscale)
{
	__shared__ float sh[32];
	__shared__ int shi[32];
	int m = blockIdx.x, arg = 0x7fffffff;
	const float *l = logits + (size_t)m * V;
	float mx = -INFINITY, s = 0.0f, f;
	int tg = targets[m];

	for (int j = threadIdx.x; j < V; j += blockDim.x)
		if (l[j] > mx) {
			mx = l[j];
			arg = j;
		}
	block_argmax(mx, arg, sh, shi);
	__syncthreads();
	for (int j = threadIdx.x; j < V; j += blockDim.x)
		s += expf(l[j] - mx);
	s = block_sum(s, sh);
	if (threadIdx.x == 0) {
		losses[m] = (double)mx + log((double)s) - (double)l[tg];
		correct[m] = arg == tg;
	}
	if (dlogits == NULL)
		return;
	f = dscale / s;
	for (int j = threadIdx.x; j < V; j += blockDim.x) {
		float d = expf(l[j] - mx) * f;

		if (j == tg)
			d -= dscale;
		dlogits[(size_t)m * V + j] = fromf<T>(d);
	}
}

/* ---------------------------------------------------------------- optimizer */

/* A piece of one tensor: the optimizer kernels take a block per chunk, so
 * one launch covers every tensor (multi-tensor apply). */
struct chunk {
	uint64_t	off;	/* floats from the start of the layout */
	uint32_t	len;
	uint16_t	tensor;
	uint16_t	decay;
};

#define OPT_CHUNK	65536

/* Per chunk: the sum of squares of g (double) and whether it is finite. */
__global__ void
k_sumsq(double *part, const float *g, const chunk *ch)
{
	__shared__ double sh[32];
	chunk c = ch[blockIdx.x];
	double s = 0.0;

	for (uint32_t i = threadIdx.x; i < c.len; i += blockDim.x) {
		double v = g[c.off + i];

		s += v * v;
	}
	s = block_sum_d(s, sh);
	if (threadIdx.x == 0)
		part[blockIdx.x] = s;
}

/* torch.optim.AdamW on every chunk; pc (the compute copy) refreshed. */
template <typename T>
__global__ void
k_adamw(float *p, const float *g, float *mm, float *vv, T *pc, const chunk *ch,
    float lr, float b1, float b2, float eps, float wd, float step, float sbc2,
    float gscale)
{
	chunk c = ch[blockIdx.x];
	float w = c.decay ? wd : 0.0f;

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
__global__ void
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
