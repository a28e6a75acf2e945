/*
 * The checks of the CUDA path that need no GPU (gpu-masks.sh, test_gpu
 * --host): the kernels' dropout masks and the cuBLASLt layout mapping,
 * each against the CPU's code.
 */
#include "config.h"

#include "engine_int.cuh"

/* ---------------------------------------------------------------- self-test */

/*
 * The kernels' dropout factors (drop_factor, drop_factor4, compiled for
 * the host here) against philox.c's dropout_apply, which the CPU path and
 * the torch reference use: the same masks, element for element, for
 * several keys, probabilities and element ranges. Needs no GPU.
 */
int
gpu_selftest_dropout(char *err, size_t errlen)
{
	static const float ps[] = { 0.1f, 0.5f, 0.9f };
	static const uint64_t firsts[] = { 0, 4, 12345, (1ull << 32) + 8, 3ull << 34 };
	const size_t n = 4096;
	float *x = (float *)malloc(n * sizeof(float));
	int bad = 0;

	if (x == NULL)
		return CADRE_ERR_NOMEM;
	for (unsigned pi = 0; pi < sizeof ps / sizeof ps[0] && !bad; pi++)
	for (unsigned fi = 0; fi < sizeof firsts / sizeof firsts[0] && !bad; fi++)
	for (int t = 0; t < 5 && !bad; t++) {
		struct dropout_key ck;
		struct dkey gk;
		size_t i;

		ck.seed = 0x123456789abcdefull * (uint64_t)(t + 1);
		ck.step = ((uint64_t)t << 33) + 77u * fi;
		ck.layer = (uint32_t)(3 * t);
		ck.tensor = (uint32_t)t;
		ck.p = ps[pi];
		gk.k0 = (uint32_t)ck.seed;
		gk.k1 = (uint32_t)(ck.seed >> 32);
		gk.c1 = (ck.layer << 8) | ck.tensor;
		gk.c2 = (uint32_t)ck.step;
		gk.c3 = (uint32_t)(ck.step >> 32);
		gk.p = ck.p;
		gk.scale = 1.0f / (1.0f - ck.p);
		for (i = 0; i < n; i++)
			x[i] = 1.0f;
		dropout_apply(&ck, firsts[fi], x, n);
		for (i = 0; i < n; i++) {
			uint64_t e = firsts[fi] + i;
			float f4[4];

			drop_factor4(gk, e >> 2, f4);
			if (drop_factor(gk, e) != x[i] || f4[e & 3] != x[i]) {
				errf(err, errlen, "dropout factor of element %llu (p %g, tensor %d): "
				    "CPU %g, GPU %g / %g", (unsigned long long)e, (double)ck.p,
				    t, (double)x[i], (double)drop_factor(gk, e), (double)f4[e & 3]);
				bad = 1;
				break;
			}
		}
	}
	free(x);
	return bad ? CADRE_ERR_INVALID : 0;
}

/*
 * lt_shape_of against ops.c's sgemm_rm: cuBLASLt's semantics emulated on
 * the host (column-major D(m,n) = op(X) op(Y), op(X) of the layout rows x
 * columns with its leading dimension, m, n, k taken from the layouts as
 * cuBLASLt takes them), for every transpose pair, odd sizes and padded
 * leading dimensions, and the results compared. Needs no GPU.
 */
int
gpu_selftest_gemm_layout(char *err, size_t errlen)
{
	uint32_t x = 12345;
	int ta, tb, trial;

#define RND() (x = x * 1664525u + 1013904223u, (float)(x >> 8) / 16777216.0f - 0.5f)
	for (trial = 0; trial < 40; trial++)
	for (ta = 0; ta < 2; ta++)
	for (tb = 0; tb < 2; tb++) {
		int M = 1 + trial % 7, N = 1 + (trial / 7) % 5 + trial % 3, K = 1 + trial % 5;
		int lda = (ta ? M : K) + trial % 3, ldb = (tb ? K : N) + trial % 2;
		int ldc = N + trial % 4, i, j, k;
		size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb;
		size_t nc = (size_t)M * ldc;
		float A[64 * 8], B[64 * 8], C[64 * 8], D[64 * 8];
		struct lt_shape sh = lt_shape_of(ta, tb, M, N, K, lda, ldb, ldc);
		uint64_t m, n, kx, ky;

		for (i = 0; i < (int)na; i++)
			A[i] = RND();
		for (i = 0; i < (int)nb; i++)
			B[i] = RND();
		for (i = 0; i < (int)nc; i++)
			C[i] = D[i] = 0.0f;
		sgemm_rm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
		/* cuBLASLt's view: m x k = op(X), k x n = op(Y), m x n = D */
		m = sh.opx == CUBLAS_OP_N ? sh.rx : sh.cx;
		kx = sh.opx == CUBLAS_OP_N ? sh.cx : sh.rx;
		ky = sh.opy == CUBLAS_OP_N ? sh.ry : sh.cy;
		n = sh.opy == CUBLAS_OP_N ? sh.cy : sh.ry;
		if (m != sh.rd || n != sh.cd || kx != ky || (int64_t)sh.rx > sh.ldx ||
		    (int64_t)sh.ry > sh.ldy || (int64_t)sh.rd > sh.ldd) {
			errf(err, errlen, "GEMM layout ta=%d tb=%d M=%d N=%d K=%d: shapes do "
			    "not agree (m %llu n %llu k %llu/%llu, D %llux%llu)", ta, tb, M, N,
			    K, (unsigned long long)m, (unsigned long long)n,
			    (unsigned long long)kx, (unsigned long long)ky,
			    (unsigned long long)sh.rd, (unsigned long long)sh.cd);
			return CADRE_ERR_INVALID;
		}
		for (i = 0; i < (int)m; i++)
			for (j = 0; j < (int)n; j++) {
				float acc = 0.0f;

				for (k = 0; k < (int)kx; k++) {
					float xv = sh.opx == CUBLAS_OP_N ? B[i + k * sh.ldx] :
					    B[k + i * sh.ldx];
					float yv = sh.opy == CUBLAS_OP_N ? A[k + j * sh.ldy] :
					    A[j + k * sh.ldy];

					acc += xv * yv;
				}
				D[i + j * sh.ldd] = acc;
			}
		for (i = 0; i < (int)nc; i++)
			if (fabsf(C[i] - D[i]) > 1e-5f) {
				errf(err, errlen, "GEMM layout ta=%d tb=%d M=%d N=%d K=%d lda %d "
				    "ldb %d ldc %d: element %d is %g, sgemm_rm says %g", ta, tb,
				    M, N, K, lda, ldb, ldc, i, (double)D[i], (double)C[i]);
				return CADRE_ERR_INVALID;
			}
	}
#undef RND
	return 0;
}
