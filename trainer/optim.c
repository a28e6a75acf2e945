#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optim.h"
#include "xmalloc.h"

/* The element-wise optimizer loops vectorise with gcc when asked (sqrtf,
 * division); clang -O1 cannot and would warn that it did not. */
#if defined(__GNUC__) && !defined(__clang__)
#define OMP_FOR_SIMD	_Pragma("omp parallel for simd schedule(static)")
#else
#define OMP_FOR_SIMD	_Pragma("omp parallel for schedule(static)")
#endif

void
optim_init(struct optim *o, const struct bert_model *m)
{
	o->m = xcalloc(m->nparams, sizeof(float));
	o->v = xcalloc(m->nparams, sizeof(float));
	o->t = 0;
}

void
optim_free(struct optim *o)
{
	free(o->m);
	free(o->v);
	o->m = o->v = NULL;
}

float
optim_lr(const struct optim *o, int64_t s)
{
	double f = 1.0, rem;

	if (o->warmup > 0 && s < o->warmup)
		return (float)(o->lr * (double)(s + 1) / (double)o->warmup);
	if (o->schedule == SCHED_CONSTANT || o->total <= o->warmup)
		return o->lr;
	rem = (double)(o->total - s) / (double)(o->total - o->warmup);
	if (rem < 0.0)
		rem = 0.0;
	if (o->schedule == SCHED_LINEAR)
		f = rem;
	else
		f = pow(rem, o->power);
	return (float)(o->lr * f);
}

#define NORM_CHUNKS	64

double
vec_norm(const float *x, size_t n)
{
	double	part[NORM_CHUNKS], s = 0.0;
	size_t	per = (n + NORM_CHUNKS - 1) / NORM_CHUNKS;
	int	c;

#pragma omp parallel for schedule(static)
	for (c = 0; c < NORM_CHUNKS; c++) {
		size_t lo = (size_t)c * per, hi = lo + per, i;
		double a = 0.0;

		if (hi > n)
			hi = n;
		for (i = lo; i < hi; i++)
			a += (double)x[i] * x[i];
		part[c] = a;
	}
	for (c = 0; c < NORM_CHUNKS; c++)
		s += part[c];
	return sqrt(s);
}

double
optim_step(struct optim *o, struct bert_model *m)
{
	double	norm = vec_norm(m->grads_mem, m->nparams);
	float	lr = optim_lr(o, o->t);
	float	bc1, bc2, gscale = 1.0f;
	size_t	ti;

	/* As torch.nn.utils.clip_grad_norm_: scale by clip / (norm + 1e-6). */
	if (o->clip > 0.0f && norm > o->clip)
		gscale = (float)(o->clip / (norm + 1e-6));
	o->t++;
	bc1 = 1.0f - powf(o->beta1, (float)o->t);
	bc2 = 1.0f - powf(o->beta2, (float)o->t);

	for (ti = 0; ti < m->ntensors; ti++) {
		const struct param_info *pi = &m->table[ti];
		float	*p = m->params_mem + pi->offset;
		float	*g = m->grads_mem + pi->offset;
		float	*mm = o->m + pi->offset, *vv = o->v + pi->offset;
		float	 wd = pi->decay ? o->weight_decay : 0.0f;
		int64_t	 i, n = (int64_t)pi->numel;

		if (o->kind == OPTIM_ADAMW) {
			/* torch.optim.AdamW: decay first, then the Adam step. */
			float step = lr / bc1, sbc2 = sqrtf(bc2);

OMP_FOR_SIMD
			for (i = 0; i < n; i++) {
				float gi = g[i] * gscale;

				p[i] *= 1.0f - lr * wd;
				mm[i] = o->beta1 * mm[i] + (1.0f - o->beta1) * gi;
				vv[i] = o->beta2 * vv[i] + (1.0f - o->beta2) * gi * gi;
				p[i] -= step * mm[i] / (sqrtf(vv[i]) / sbc2 + o->eps);
			}
		} else {
			/* LAMB: u = mhat / (sqrt(vhat) + eps) + wd p; the trust
			 * ratio |p| / |u| only where weight decay applies (NVIDIA's
			 * FusedLAMB default); u is kept in g. */
			double pn, un, ratio = 1.0;

OMP_FOR_SIMD
			for (i = 0; i < n; i++) {
				float gi = g[i] * gscale;

				mm[i] = o->beta1 * mm[i] + (1.0f - o->beta1) * gi;
				vv[i] = o->beta2 * vv[i] + (1.0f - o->beta2) * gi * gi;
				g[i] = (mm[i] / bc1) / (sqrtf(vv[i] / bc2) + o->eps) + wd * p[i];
			}
			if (pi->decay) {
				pn = vec_norm(p, (size_t)n);
				un = vec_norm(g, (size_t)n);
				if (pn > 0.0 && un > 0.0)
					ratio = pn / un;
			}
#pragma omp parallel for schedule(static)
			for (i = 0; i < n; i++)
				p[i] -= lr * (float)ratio * g[i];
		}
	}
	return norm;
}
