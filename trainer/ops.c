#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef HAVE_OPENBLAS
#include <cblas.h>
#endif

#include "ops.h"
#include "xmalloc.h"

#define COLS	64	/* column block of the parameter-gradient sums */

void
sgemm_rm(int ta, int tb, int M, int N, int K, float alpha,
    const float *A, int lda, const float *B, int ldb, float beta,
    float *C, int ldc)
{
#ifdef HAVE_OPENBLAS
	cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
	    tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb,
	    beta, C, ldc);
#else
	int i;

#pragma omp parallel for schedule(static)
	for (i = 0; i < M; i++) {
		int j, p;

		for (j = 0; j < N; j++) {
			float s = 0.0f;

			for (p = 0; p < K; p++) {
				float a = ta ? A[(size_t)p * lda + i] : A[(size_t)i * lda + p];
				float b = tb ? B[(size_t)j * ldb + p] : B[(size_t)p * ldb + j];
				s += a * b;
			}
			C[(size_t)i * ldc + j] = alpha * s +
			    (beta == 0.0f ? 0.0f : beta * C[(size_t)i * ldc + j]);
		}
	}
#endif
}

void
matmul_forward(float *out, const float *inp, const float *w, const float *b,
    int N, int C, int OC)
{
	int n;

	sgemm_rm(0, 1, N, OC, C, 1.0f, inp, C, w, C, 0.0f, out, OC);
	if (b == NULL)
		return;
#pragma omp parallel for schedule(static)
	for (n = 0; n < N; n++) {
		float *o = out + (size_t)n * OC;
		int j;

		for (j = 0; j < OC; j++)
			o[j] += b[j];
	}
}

void
matmul_backward(float *dinp, float *dw, float *db, const float *dout,
    const float *inp, const float *w, int N, int C, int OC)
{
	int o;

	if (dinp != NULL)	/* (N,OC) x (OC,C) */
		sgemm_rm(0, 0, N, C, OC, 1.0f, dout, OC, w, C, 1.0f, dinp, C);
	if (dw != NULL)		/* (OC,N) x (N,C) */
		sgemm_rm(1, 0, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dw, C);
	if (db == NULL)
		return;
	/* Column sums in blocks of COLS, rows in order: each sum has one
	 * owner and a fixed order, and the rows are read contiguously. */
#pragma omp parallel for schedule(static)
	for (o = 0; o < OC; o += COLS) {
		double	acc[COLS] = { 0 };
		int	n, j, cw = OC - o < COLS ? OC - o : COLS;

		for (n = 0; n < N; n++) {
			const float *r = dout + (size_t)n * OC + o;

			for (j = 0; j < cw; j++)
				acc[j] += r[j];
		}
		for (j = 0; j < cw; j++)
			db[o + j] += (float)acc[j];
	}
}

void
layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
    const float *w, const float *b, int N, int C, float eps)
{
	int n;

#pragma omp parallel for schedule(static)
	for (n = 0; n < N; n++) {
		const float *x = inp + (size_t)n * C;
		float *y = out + (size_t)n * C;
		double m = 0.0, v = 0.0;
		float fm, fr;
		int i;

		for (i = 0; i < C; i++)
			m += x[i];
		m /= C;
		for (i = 0; i < C; i++)
			v += (x[i] - m) * (x[i] - m);
		v /= C;
		fm = (float)m;
		fr = (float)(1.0 / sqrt(v + eps));
		for (i = 0; i < C; i++)
			y[i] = (x[i] - fm) * fr * w[i] + b[i];
		mean[n] = fm;
		rstd[n] = fr;
	}
}

void
layernorm_backward(float *dinp, float *dw, float *db, const float *dout,
    const float *inp, const float *w, const float *mean, const float *rstd,
    int N, int C)
{
	int n, i;

	if (dinp != NULL) {
#pragma omp parallel for schedule(static)
		for (n = 0; n < N; n++) {
			const float *x = inp + (size_t)n * C;
			const float *dy = dout + (size_t)n * C;
			float *dx = dinp + (size_t)n * C;
			double sg = 0.0, sgx = 0.0;
			float m = mean[n], r = rstd[n], a, c;
			int j;

			/* g = dy * w; dx = r * (g - mean(g) - xhat * mean(g * xhat)) */
			for (j = 0; j < C; j++) {
				float g = dy[j] * w[j];

				sg += g;
				sgx += g * (x[j] - m) * r;
			}
			a = (float)(sg / C);
			c = (float)(sgx / C);
			for (j = 0; j < C; j++) {
				float xh = (x[j] - m) * r;

				dx[j] += r * (dy[j] * w[j] - a - xh * c);
			}
		}
	}
	/* Parameter gradients by column blocks so that each sum has one
	 * owner and a fixed order. */
#pragma omp parallel for schedule(static)
	for (i = 0; i < C; i += COLS) {
		double	sw[COLS] = { 0 }, sb[COLS] = { 0 };
		int	j, cw = C - i < COLS ? C - i : COLS;

		for (n = 0; n < N; n++) {
			const float *dy = dout + (size_t)n * C + i;
			const float *x = inp + (size_t)n * C + i;
			float m = mean[n], r = rstd[n];

			for (j = 0; j < cw; j++) {
				sw[j] += dy[j] * (x[j] - m) * r;
				sb[j] += dy[j];
			}
		}
		for (j = 0; j < cw; j++) {
			if (dw != NULL)
				dw[i + j] += (float)sw[j];
			if (db != NULL)
				db[i + j] += (float)sb[j];
		}
	}
}

#define INV_SQRT2	0.70710678118654752440f
#define INV_SQRT2PI	0.39894228040143267794f

void
gelu_forward(float *out, const float *inp, int64_t n)
{
	int64_t i;

#pragma omp parallel for schedule(static)
	for (i = 0; i < n; i++)
		out[i] = 0.5f * inp[i] * (1.0f + erff(inp[i] * INV_SQRT2));
}

void
gelu_backward(float *dinp, const float *inp, const float *dout, int64_t n)
{
	int64_t i;

#pragma omp parallel for schedule(static)
	for (i = 0; i < n; i++) {
		float x = inp[i];
		float cdf = 0.5f * (1.0f + erff(x * INV_SQRT2));
		float pdf = INV_SQRT2PI * expf(-0.5f * x * x);

		dinp[i] += dout[i] * (cdf + x * pdf);
	}
}

void
tanh_forward(float *out, const float *inp, int64_t n)
{
	int64_t i;

#pragma omp parallel for schedule(static)
	for (i = 0; i < n; i++)
		out[i] = tanhf(inp[i]);
}

void
tanh_backward(float *dinp, const float *out, const float *dout, int64_t n)
{
	int64_t i;

#pragma omp parallel for schedule(static)
	for (i = 0; i < n; i++)
		dinp[i] += dout[i] * (1.0f - out[i] * out[i]);
}

void
embedding_forward(float *out, const int32_t *ids, const int32_t *types,
    const float *wte, const float *wpe, const float *wtt, int B, int T, int C)
{
	int bt;

#pragma omp parallel for schedule(static)
	for (bt = 0; bt < B * T; bt++) {
		const float *we = wte + (size_t)ids[bt] * C;
		const float *pe = wpe + (size_t)(bt % T) * C;
		const float *te = wtt + (size_t)types[bt] * C;
		float *o = out + (size_t)bt * C;
		int i;

		for (i = 0; i < C; i++)
			o[i] = we[i] + te[i] + pe[i];
	}
}

void
embedding_backward(float *dwte, float *dwpe, float *dwtt, const float *dout,
    const int32_t *ids, const int32_t *types, int B, int T, int C, int V,
    int NT)
{
	int i;

	(void)V;
	(void)NT;
	/* Rows of dwte repeat across tokens: parallel over channels instead,
	 * so every sum has one owner and a fixed order. */
#pragma omp parallel for schedule(static)
	for (i = 0; i < C; i += COLS) {
		int bt, j, w = C - i < COLS ? C - i : COLS;

		for (bt = 0; bt < B * T; bt++) {
			const float *g = dout + (size_t)bt * C + i;
			float *a = dwte + (size_t)ids[bt] * C + i;
			float *p = dwpe + (size_t)(bt % T) * C + i;
			float *t = dwtt + (size_t)types[bt] * C + i;

			for (j = 0; j < w; j++) {
				a[j] += g[j];
				p[j] += g[j];
				t[j] += g[j];
			}
		}
	}
}

static void
softmax_rows(float *att, const int32_t *mask, int T, float scale)
{
	int t;

#pragma omp parallel for schedule(static)
	for (t = 0; t < T; t++) {
		float *row = att + (size_t)t * T;
		float mx = -INFINITY;
		double sum = 0.0;
		float inv;
		int j;

		for (j = 0; j < T; j++)
			if (mask[j] && row[j] * scale > mx)
				mx = row[j] * scale;
		for (j = 0; j < T; j++) {
			float e = mask[j] ? expf(row[j] * scale - mx) : 0.0f;

			row[j] = e;
			sum += e;
		}
		inv = sum > 0.0 ? (float)(1.0 / sum) : 0.0f;
		for (j = 0; j < T; j++)
			row[j] *= inv;
	}
}

/*
 * The attention of each (sequence, head) is small (T x T x hs GEMMs), so
 * the pairs are spread over the OpenMP threads, each calling OpenBLAS on
 * one thread of its own; OpenBLAS's pool is set to one thread meanwhile
 * (its setting is global) and restored after. Every pair writes its own
 * columns of out (and of dq, dk, dv), so no two threads touch one value.
 */
static int
blas_single_begin(void)
{
#ifdef HAVE_OPENBLAS
	int n = openblas_get_num_threads();

	if (n > 1)
		openblas_set_num_threads(1);
	return n;
#else
	return 0;
#endif
}

static void
blas_single_end(int n)
{
#ifdef HAVE_OPENBLAS
	if (n > 1)
		openblas_set_num_threads(n);
#else
	(void)n;
#endif
}

void
attention_forward(float *out, float *att, float *attd, const float *q,
    const float *k, const float *v, const int32_t *mask,
    const struct dropout_key *drop, int B, int T, int C, int nh)
{
	int	hs = C / nh, bh, saved = blas_single_begin();
	float	scale = 1.0f / sqrtf((float)hs);

#pragma omp parallel for schedule(static)
	for (bh = 0; bh < B * nh; bh++) {
		int	 b = bh / nh, h = bh % nh;
		size_t	 off = (size_t)b * T * C + (size_t)h * hs;
		size_t	 aoff = (size_t)bh * T * T;
		float	*a = att + aoff, *ad = attd + aoff;

		/* (T,hs) x (hs,T) -> scores, scaled in the softmax */
		sgemm_rm(0, 1, T, T, hs, 1.0f, q + off, C, k + off, C, 0.0f, a, T);
		softmax_rows(a, mask + (size_t)b * T, T, scale);
		if (ad != a) {
			memcpy(ad, a, (size_t)T * T * sizeof *a);
			dropout_apply(drop, aoff, ad, (uint64_t)T * T);
		}
		/* (T,T) x (T,hs) */
		sgemm_rm(0, 0, T, hs, T, 1.0f, ad, T, v + off, C, 0.0f, out + off, C);
	}
	blas_single_end(saved);
}

void
attention_backward(float *dq, float *dk, float *dv, const float *dout,
    const float *att, const float *attd, const float *q, const float *k,
    const float *v, const struct dropout_key *drop, int B, int T, int C, int nh)
{
	int	 hs = C / nh, bh, nthreads = 1, saved;
	float	 scale = 1.0f / sqrtf((float)hs);
	float	*scratch;

#ifdef _OPENMP
	nthreads = omp_get_max_threads();
#endif
	scratch = xmalloc((size_t)nthreads * T * T * sizeof *scratch);
	saved = blas_single_begin();
#pragma omp parallel for schedule(static)
	for (bh = 0; bh < B * nh; bh++) {
		int	 b = bh / nh, h = bh % nh, t, tid = 0;
		size_t	 off = (size_t)b * T * C + (size_t)h * hs;
		size_t	 aoff = (size_t)bh * T * T;
		const float *a = att + aoff, *ad = attd + aoff;
		float	*ds;

#ifdef _OPENMP
		tid = omp_get_thread_num();
#endif
		ds = scratch + (size_t)tid * T * T;
		/* d(attd) (T,T) = dout (T,hs) x v^T */
		sgemm_rm(0, 1, T, T, hs, 1.0f, dout + off, C, v + off, C, 0.0f, ds, T);
		/* dv += attd^T dout */
		sgemm_rm(1, 0, T, hs, T, 1.0f, ad, T, dout + off, C, 1.0f, dv + off, C);
		if (ad != a)
			dropout_apply(drop, aoff, ds, (uint64_t)T * T);
		/* softmax backward, with the 1/sqrt(hs) scale folded in */
		for (t = 0; t < T; t++) {
			const float *p = a + (size_t)t * T;
			float *g = ds + (size_t)t * T;
			double dot = 0.0;
			float fd;
			int j;

			for (j = 0; j < T; j++)
				dot += p[j] * g[j];
			fd = (float)dot;
			for (j = 0; j < T; j++)
				g[j] = p[j] * (g[j] - fd) * scale;
		}
		/* dq += ds k; dk += ds^T q */
		sgemm_rm(0, 0, T, hs, T, 1.0f, ds, T, k + off, C, 1.0f, dq + off, C);
		sgemm_rm(1, 0, T, hs, T, 1.0f, ds, T, q + off, C, 1.0f, dk + off, C);
	}
	blas_single_end(saved);
	free(scratch);
}

double
crossentropy_forward_backward(float *dlogits, double *losses,
    const float *logits, const int32_t *targets, int M, int V, float dscale)
{
	double	total = 0.0;
	int	m;

#pragma omp parallel for schedule(static)
	for (m = 0; m < M; m++) {
		const float *l = logits + (size_t)m * V;
		float mx = -INFINITY;
		double sum = 0.0, lse;
		int j;

		for (j = 0; j < V; j++)
			if (l[j] > mx)
				mx = l[j];
		if (dlogits == NULL) {
			for (j = 0; j < V; j++)
				sum += expf(l[j] - mx);
		} else {
			/* keep the exponentials: one expf per logit */
			float *d = dlogits + (size_t)m * V, f;

			for (j = 0; j < V; j++) {
				d[j] = expf(l[j] - mx);
				sum += d[j];
			}
			f = (float)(dscale / sum);
			for (j = 0; j < V; j++)
				d[j] *= f;
			d[targets[m]] -= dscale;
		}
		lse = mx + log(sum);
		losses[m] = lse - l[targets[m]];
	}
	/* Summed in order, not by an OpenMP reduction: the same bits every run. */
	for (m = 0; m < M; m++)
		total += losses[m];
	return total;
}

void
residual_forward(float *out, const float *a, const float *b, int64_t n)
{
	int64_t i;

#pragma omp parallel for schedule(static)
	for (i = 0; i < n; i++)
		out[i] = a[i] + b[i];
}

void
ops_set_threads(int n)
{
	if (n <= 0)
		return;
#ifdef _OPENMP
	omp_set_num_threads(n);
#endif
#ifdef HAVE_OPENBLAS
	openblas_set_num_threads(n);
#endif
}

int
ops_threads(void)
{
#ifdef _OPENMP
	return omp_get_max_threads();
#else
	return 1;
#endif
}

const char *
ops_blas_core(void)
{
#ifdef HAVE_OPENBLAS
	return openblas_get_corename();
#else
	return "none";
#endif
}
