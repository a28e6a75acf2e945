/*
 * The fused attention (kernels_attn_fused.cuh) against a plain one on the
 * same device: one thread per row, fp32 throughout, written from the
 * definitions (model.c's attention): the probabilities, the context and
 * the gradients of Q, K and V, with the padding mask and the dropout of
 * every other path. Run by test_gpu (gpu-check.sh).
 */
#include "config.h"

#include "engine_int.cuh"
#include "kernels_attn_fused.cuh"

/* One thread per query row (b, h, i): P, the context, ds and dq. */
template <typename T>
__global__ void
k_ref_rows(float *P, float *ctx, float *ds, float *dq, const T *q, const T *k,
    const T *v, const T *dctx, const int32_t *mask, int B, int nh, int Tn, int H,
    float scale, dkey dk)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;

	if (r >= B * nh * Tn)
		return;
	int i = r % Tn, bh = r / Tn, b = bh / nh, h = bh % nh;
	size_t base = (size_t)b * Tn * H + (size_t)h * FA_HS, row = (size_t)r * Tn;
	const T *qi = q + base + (size_t)i * H, *oi = dctx + base + (size_t)i * H;
	float mx = -INFINITY, sum = 0.0f, dot = 0.0f;

	for (int j = 0; j < Tn; j++) {
		float s = 0.0f;

		for (int d = 0; d < FA_HS; d++)
			s += tof(qi[d]) * tof(k[base + (size_t)j * H + d]);
		P[row + j] = s * scale;
		if (mask[b * Tn + j])
			mx = fmaxf(mx, s * scale);
	}
	for (int j = 0; j < Tn; j++) {
		P[row + j] = mask[b * Tn + j] ? expf(P[row + j] - mx) : 0.0f;
		sum += P[row + j];
	}
	for (int j = 0; j < Tn; j++)
		P[row + j] = sum > 0.0f ? P[row + j] / sum : 0.0f;
	for (int d = 0; d < FA_HS; d++) {
		float c = 0.0f;

		for (int j = 0; j < Tn; j++)
			c += P[row + j] * drop_factor(dk, row + j) *
			    tof(v[base + (size_t)j * H + d]);
		ctx[base + (size_t)i * H + d] = c;
	}
	for (int j = 0; j < Tn; j++) {
		float gj = 0.0f;

		for (int d = 0; d < FA_HS; d++)
			gj += tof(oi[d]) * tof(v[base + (size_t)j * H + d]);
		ds[row + j] = gj * drop_factor(dk, row + j);
		dot += P[row + j] * ds[row + j];
	}
	for (int j = 0; j < Tn; j++)
		ds[row + j] = P[row + j] * (ds[row + j] - dot) * scale;
	for (int d = 0; d < FA_HS; d++) {
		float a = 0.0f;

		for (int j = 0; j < Tn; j++)
			a += ds[row + j] * tof(k[base + (size_t)j * H + d]);
		dq[base + (size_t)i * H + d] = a;
	}
}

/* One thread per key row (b, h, j): dk = ds^T q, dv = (P f)^T dctx. */
template <typename T>
__global__ void
k_ref_cols(float *dk, float *dv, const float *P, const float *ds, const T *q,
    const T *dctx, int B, int nh, int Tn, int H, dkey key)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;

	if (r >= B * nh * Tn)
		return;
	int j = r % Tn, bh = r / Tn, b = bh / nh, h = bh % nh;
	size_t base = (size_t)b * Tn * H + (size_t)h * FA_HS;

	for (int d = 0; d < FA_HS; d++) {
		float a = 0.0f, c = 0.0f;

		for (int i = 0; i < Tn; i++) {
			size_t e = ((size_t)bh * Tn + i) * Tn + j;

			a += ds[e] * tof(q[base + (size_t)i * H + d]);
			c += P[e] * drop_factor(key, e) * tof(dctx[base + (size_t)i * H + d]);
		}
		dk[base + (size_t)j * H + d] = a;
		dv[base + (size_t)j * H + d] = c;
	}
}

template <typename T>
__global__ void
k_to_float(float *dst, const T *src, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	    i += (size_t)gridDim.x * blockDim.x)
		dst[i] = tof(src[i]);
}

/* max |a - b| / max |b| over n elements, copied to the host */
static double
rel_err(const float *da, const float *db, size_t n, float *ha, float *hb)
{
	double worst = 0.0, big = 0.0;

	CK(cudaMemcpy(ha, da, n * 4, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hb, db, n * 4, cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < n; i++) {
		double e = fabs((double)ha[i] - hb[i]);

		if (!(e <= worst))	/* NaN too */
			worst = e != e ? INFINITY : e;
		if (fabs(hb[i]) > big)
			big = fabs(hb[i]);
	}
	return worst / (big > 0.0 ? big : 1.0);
}

struct fa_case { int B, nh, Tn; float p; };

template <typename T>
static int
one_case(const struct fa_case *fc, double tol, double worst[7], char *err,
    size_t errlen)
{
	static const char *names[7] = { "probabilities", "context", "dq", "dk", "dv",
		"masked probabilities", "q, k, v bias gradients" };
	int B = fc->B, nh = fc->nh, Tn = fc->Tn, H = nh * FA_HS, rows = B * nh * Tn;
	size_t nx = (size_t)B * Tn * H, np = (size_t)rows * Tn, nbig = np > nx ? np : nx;
	float scale = 1.0f / sqrtf((float)FA_HS), *hx, *ha, *hb;
	int32_t *hm, *mask;
	uint32_t *dmask;
	float *dbias, *bpart;	/* 3 x H; 3 x B x H */
	dkey key = { 0x9e3779b9u, 0x7f4a7c15u, (3u << 8) | 1u, 11u, 0u, fc->p,
		1.0f / (1.0f - fc->p) };
	T *in[4], *out[5];	/* q k v dctx; ctx att dq dk dv */
	float *fin, *ref[6], *got;	/* P ctx ds dq dk dv */
	uint32_t x = 2463534242u;
	int bad = 0;

	hx = (float *)malloc(nx * 4);
	ha = (float *)malloc(nbig * 4);
	hb = (float *)malloc(nbig * 4);
	hm = (int32_t *)malloc((size_t)B * Tn * 4);
	if (hx == NULL || ha == NULL || hb == NULL || hm == NULL) {
		free(hx); free(ha); free(hb); free(hm);
		return CADRE_ERR_NOMEM;
	}
	/* sequence lengths: all, all but 13, 5 */
	for (int b = 0; b < B; b++)
		for (int j = 0; j < Tn; j++)
			hm[b * Tn + j] = j < (b == 0 ? Tn : b == 1 ? Tn - 13 : 5);
	CK(cudaMalloc((void **)&mask, (size_t)B * Tn * 4));
	CK(cudaMemcpy(mask, hm, (size_t)B * Tn * 4, cudaMemcpyHostToDevice));
	CK(cudaMalloc((void **)&fin, nx * 4));
	for (int a = 0; a < 4; a++) {
		/* q and k wider, for peaked rows */
		float amp = a < 2 ? 2.0f : 1.0f;

		for (size_t i = 0; i < nx; i++) {
			x ^= x << 13; x ^= x >> 17; x ^= x << 5;
			hx[i] = amp * ((float)(x >> 8) / 8388608.0f - 1.0f);
		}
		CK(cudaMalloc((void **)&in[a], nx * sizeof(T)));
		CK(cudaMemcpy(fin, hx, nx * 4, cudaMemcpyHostToDevice));
		k_convert<T><<<nblocks(nx), NTHREADS>>>(in[a], fin, nx);
	}
	for (int a = 0; a < 5; a++)
		CK(cudaMalloc((void **)&out[a], (a == 1 ? np : nx) * sizeof(T)));
	for (int a = 0; a < 6; a++)
		CK(cudaMalloc((void **)&ref[a], (a == 0 || a == 2 ? np : nx) * 4));
	CK(cudaMalloc((void **)&got, nbig * 4));

	CK(cudaMalloc((void **)&dmask, attn_mask_words(B, nh, Tn) * 4));
	attn_fwd<T>(0, out[0], out[1], dmask, in[0], in[1], in[2], mask, B, nh, Tn, H,
	    scale, key);
	CK(cudaMalloc((void **)&dbias, 3 * (size_t)H * 4));
	CK(cudaMemset(dbias, 0, 3 * (size_t)H * 4));
	CK(cudaMalloc((void **)&bpart, 3 * (size_t)B * H * 4));
	attn_bwd<T>(0, out[2], out[3], out[4], dbias, dbias + H, dbias + 2 * H, bpart,
	    in[3], out[1], dmask, in[0], in[1], in[2], B, nh, Tn, H, scale, key);
	k_ref_rows<T><<<(rows + 127) / 128, 128>>>(ref[0], ref[1], ref[2], ref[3], in[0],
	    in[1], in[2], in[3], mask, B, nh, Tn, H, scale, key);
	k_ref_cols<T><<<(rows + 127) / 128, 128>>>(ref[4], ref[5], ref[0], ref[2], in[0],
	    in[3], B, nh, Tn, H, key);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());

	/* fused outputs in the reference's order: P ctx dq dk dv */
	{
		T *fo[5] = { out[1], out[0], out[2], out[3], out[4] };
		float *ro[5] = { ref[0], ref[1], ref[3], ref[4], ref[5] };
		size_t n[5] = { np, nx, nx, nx, nx };

		for (int a = 0; a < 5 && !bad; a++) {
			k_to_float<T><<<nblocks(n[a]), NTHREADS>>>(got, fo[a], n[a]);
			CK(cudaDeviceSynchronize());
			worst[a] = rel_err(got, ro[a], n[a], ha, hb);
			if (!(worst[a] <= tol)) {
				errf(err, errlen, "fused attention, B %d heads %d T %d dropout %g: "
				    "%s differ from the plain attention's by %.3g of their "
				    "largest (more than %g)", B, nh, Tn, (double)fc->p, names[a],
				    worst[a], tol);
				bad = 1;
			}
		}
		/* the bias gradients: the reference's dq, dk, dv summed over
		 * the rows here, in double */
		if (!bad) {
			double big = 0.0, e = 0.0;

			CK(cudaMemcpy(hb, dbias, 3 * (size_t)H * 4, cudaMemcpyDeviceToHost));
			for (int a = 0; a < 3; a++) {
				CK(cudaMemcpy(ha, ref[3 + a], nx * 4, cudaMemcpyDeviceToHost));
				for (int c = 0; c < H; c++) {
					double sum = 0.0;

					for (int r = 0; r < B * Tn; r++)
						sum += ha[(size_t)r * H + c];
					big = fmax(big, fabs(sum));
					e = fmax(e, fabs(sum - hb[a * H + c]));
					if (hb[a * H + c] != hb[a * H + c])
						e = INFINITY;
				}
			}
			worst[6] = e / (big > 0.0 ? big : 1.0);
			if (!(worst[6] <= tol)) {
				errf(err, errlen, "fused attention, B %d heads %d T %d dropout %g: "
				    "%s differ from the plain attention's by %.3g of their "
				    "largest (more than %g)", B, nh, Tn, (double)fc->p, names[6],
				    worst[6], tol);
				bad = 1;
			}
		}
		/* a masked key's probability is exactly 0 (ha: the fused P) */
		k_to_float<T><<<nblocks(np), NTHREADS>>>(got, out[1], np);
		CK(cudaMemcpy(ha, got, np * 4, cudaMemcpyDeviceToHost));
		worst[5] = 0.0;
		for (size_t e = 0; e < np && !bad; e++) {
			int b = (int)(e / ((size_t)nh * Tn * Tn)), j = (int)(e % Tn);

			if (!hm[b * Tn + j] && ha[e] != 0.0f) {
				worst[5] = fabs(ha[e]);
				errf(err, errlen, "fused attention, B %d heads %d T %d: %s: "
				    "element %zu is %g, not 0", B, nh, Tn, names[5], e,
				    (double)ha[e]);
				bad = 1;
			}
		}
	}
	for (int a = 0; a < 4; a++)
		cudaFree(in[a]);
	for (int a = 0; a < 5; a++)
		cudaFree(out[a]);
	for (int a = 0; a < 6; a++)
		cudaFree(ref[a]);
	cudaFree(got);
	cudaFree(fin);
	cudaFree(mask);
	cudaFree(dmask);
	cudaFree(dbias);
	cudaFree(bpart);
	free(hx); free(ha); free(hb); free(hm);
	return bad ? CADRE_ERR_INVALID : 0;
}

int
gpu_check_attention(int precision, double worst[6], char *err, size_t errlen)
{
	static const struct fa_case cases[] = {
		{ 3, 2, 128, 0.1f }, { 3, 3, 64, 0.1f }, { 2, 1, 48, 0.0f },
		{ 3, 2, 16, 0.5f },
	};
	/* bf16 keeps 8 bits, fp16 11: P, ds and the products' operands are
	 * rounded to them; a wrong index is off by the values themselves */
	double tol = precision == GPU_BF16 ? 3e-2 : 1e-2, w[7];
	static const int shown[6] = { 0, 1, 2, 3, 4, 6 };
	int e;

	if (precision != GPU_BF16 && precision != GPU_FP16) {
		errf(err, errlen, "the fused attention takes bf16 or fp16");
		return CADRE_ERR_INVALID;
	}
	for (int a = 0; a < 6; a++)
		worst[a] = 0.0;
	for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		e = precision == GPU_BF16 ?
		    one_case<__nv_bfloat16>(&cases[c], tol, w, err, errlen) :
		    one_case<__half>(&cases[c], tol, w, err, errlen);
		if (e != 0)
			return e;
		for (int a = 0; a < 6; a++)
			if (w[shown[a]] > worst[a])
				worst[a] = w[shown[a]];
	}
	return 0;
}
