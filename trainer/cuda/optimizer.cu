/*
 * The optimizer step on the device: the gradient norm, clipping, AdamW or
 * LAMB with every tensor in one launch per pass (the compute copy
 * refreshed in the same pass), and fp16's dynamic loss scale.
 */
#include "config.h"

#include "engine_int.cuh"
#include "kernels_optim.cuh"

/* ---------------------------------------------------------------- optimizer */

int
gpu_optim_step(struct gpu_trainer *g, struct optim *o, double *norm, int *skipped)
{
	double sumsq = 0.0, nrm;
	float lr, bc1, bc2, gscale, ls = g->loss_scale;
	int i;

	*skipped = 0;
	tstart(g, T_OPT);
	k_sumsq<<<g->nchunks, NTHREADS, 0, g->s>>>(g->d_opart, g->g, g->d_chunks);
	tend(g);
	CK(cudaMemcpyAsync(g->h_opart, g->d_opart, (size_t)g->nchunks * sizeof(double),
	    cudaMemcpyDeviceToHost, g->s));
	CK(cudaStreamSynchronize(g->s));
	for (i = 0; i < g->nchunks; i++)
		sumsq += g->h_opart[i];
	nrm = sqrt(sumsq) / (double)ls;
	*norm = nrm;
	if (g->prec == GPU_FP16 && !isfinite(sumsq)) {
		/* dynamic loss scaling: skip the step, halve the scale */
		*skipped = 1;
		g->skipped++;
		g->good_steps = 0;
		if (g->loss_scale > 1.0f)
			g->loss_scale /= 2.0f;
		tcollect(g);
		return 0;
	}
	lr = optim_lr(o, o->t);
	/* As the CPU: clip / (norm + 1e-6) when the norm exceeds clip. */
	gscale = 1.0f / ls;
	if (o->clip > 0.0f && nrm > o->clip)
		gscale *= (float)(o->clip / (nrm + 1e-6));
	o->t++;
	bc1 = 1.0f - powf(o->beta1, (float)o->t);
	bc2 = 1.0f - powf(o->beta2, (float)o->t);
	tstart(g, T_OPT);
	if (o->kind == OPTIM_ADAMW) {
		float step = lr / bc1, sbc2 = sqrtf(bc2);

		switch (g->prec) {
		case GPU_FP32:
			k_adamw<float><<<g->nchunks, NTHREADS, 0, g->s>>>(g->p, g->g, g->m1,
			    g->m2, (float *)NULL, g->d_chunks, lr, o->beta1, o->beta2,
			    o->eps, o->weight_decay, step, sbc2, gscale);
			break;
		case GPU_BF16:
			k_adamw<__nv_bfloat16><<<g->nchunks, NTHREADS, 0, g->s>>>(g->p, g->g,
			    g->m1, g->m2, (__nv_bfloat16 *)g->pc, g->d_chunks, lr, o->beta1,
			    o->beta2, o->eps, o->weight_decay, step, sbc2, gscale);
			break;
		default:
			k_adamw<__half><<<g->nchunks, NTHREADS, 0, g->s>>>(g->p, g->g,
			    g->m1, g->m2, (__half *)g->pc, g->d_chunks, lr, o->beta1,
			    o->beta2, o->eps, o->weight_decay, step, sbc2, gscale);
			break;
		}
	} else {
		size_t ti;
		int c = 0;

		k_lamb1<<<g->nchunks, NTHREADS, 0, g->s>>>(g->p, g->g, g->m1, g->m2,
		    g->d_chunks, g->d_opart, o->beta1, o->beta2, o->eps,
		    o->weight_decay, bc1, bc2, gscale);
		CK(cudaMemcpyAsync(g->h_opart, g->d_opart, 2 * (size_t)g->nchunks *
		    sizeof(double), cudaMemcpyDeviceToHost, g->s));
		CK(cudaStreamSynchronize(g->s));
		/* the trust ratio |p| / |u| per tensor, only where decay applies */
		for (ti = 0; ti < g->ntensors; ti++) {
			double pn = 0.0, un = 0.0, ratio = 1.0;
			int decay = 0;

			while (c < g->nchunks && g->h_chunks[c].tensor == ti) {
				pn += g->h_opart[2 * c];
				un += g->h_opart[2 * c + 1];
				decay = g->h_chunks[c].decay;
				c++;
			}
			pn = sqrt(pn);
			un = sqrt(un);
			if (decay && pn > 0.0 && un > 0.0)
				ratio = pn / un;
			g->h_ratio[ti] = (float)ratio;
		}
		CK(cudaMemcpyAsync(g->d_ratio, g->h_ratio, g->ntensors * sizeof(float),
		    cudaMemcpyHostToDevice, g->s));
		switch (g->prec) {
		case GPU_FP32:
			k_lamb2<float><<<g->nchunks, NTHREADS, 0, g->s>>>(g->p, g->g,
			    (float *)NULL, g->d_chunks, g->d_ratio, lr);
			break;
		case GPU_BF16:
			k_lamb2<__nv_bfloat16><<<g->nchunks, NTHREADS, 0, g->s>>>(g->p, g->g,
			    (__nv_bfloat16 *)g->pc, g->d_chunks, g->d_ratio, lr);
			break;
		default:
			k_lamb2<__half><<<g->nchunks, NTHREADS, 0, g->s>>>(g->p, g->g,
			    (__half *)g->pc, g->d_chunks, g->d_ratio, lr);
			break;
		}
	}
	tend(g);
	CK(cudaGetLastError());
	if (g->prec == GPU_FP16 && ++g->good_steps >= FP16_GROWTH) {
		g->good_steps = 0;
		g->loss_scale *= 2.0f;
	}
	if (g->timing) {
		CK(cudaStreamSynchronize(g->s));
		tcollect(g);
		g->tsteps++;
	}
	return 0;
}

float
gpu_loss_scale(const struct gpu_trainer *g)
{
	return g->loss_scale;
}

void
gpu_set_loss_scale(struct gpu_trainer *g, float s)
{
	if (g->prec == GPU_FP16 && s >= 1.0f && isfinite(s))
		g->loss_scale = s;
}

int64_t
gpu_skipped_steps(const struct gpu_trainer *g)
{
	return g->skipped;
}
