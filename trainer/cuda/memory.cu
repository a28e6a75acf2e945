/*
 * Device memory of the CUDA path: the counted allocations, the MLM
 * buffers grown on demand, and the copies of parameters, moments and
 * gradients between host and device (one cudaMemcpy each: the device
 * keeps the host's layout).
 */
#include "config.h"

#include "engine_int.cuh"

/* ---------------------------------------------------------------- allocations */

/* A device allocation counted in g->bytes; NULL when the device is full. */
void *
dalloc(struct gpu_trainer *g, size_t bytes)
{
	void *p = NULL;

	if (bytes == 0)
		bytes = 16;
	if (cudaMalloc(&p, bytes) != cudaSuccess) {
		(void)cudaGetLastError();
		return NULL;
	}
	g->bytes += bytes;
	return p;
}

/* The MLM buffers for M labelled positions (grown on demand, as
 * model.c's acts_prepare does). */
int
mlm_alloc(struct gpu_trainer *g, int M)
{
	size_t H = (size_t)g->H, V = (size_t)g->V, ts = g->tsize, Mc;

	if (M <= g->Mcap && g->d_losses != NULL)
		return 0;
	Mc = (size_t)(M > g->Mcap ? M : g->Mcap);
	if (Mc < 64)
		Mc = 64;
	cudaFree(g->hm); cudaFree(g->t); cudaFree(g->tg); cudaFree(g->tl);
	cudaFree(g->dM1); cudaFree(g->dM2); cudaFree(g->dM3);
	cudaFree(g->tmean); cudaFree(g->trstd); cudaFree(g->logits);
	cudaFree(g->dlogits); cudaFree(g->d_losses); cudaFree(g->d_correct);
	cudaFreeHost(g->h_losses); cudaFreeHost(g->h_correct);
	g->hm = dalloc(g, Mc * H * ts);
	g->t = dalloc(g, Mc * H * ts);
	g->tg = dalloc(g, Mc * H * ts);
	g->tl = dalloc(g, Mc * H * ts);
	g->dM1 = dalloc(g, Mc * H * ts);
	g->dM2 = dalloc(g, Mc * H * ts);
	g->dM3 = dalloc(g, Mc * H * ts);
	g->tmean = (float *)dalloc(g, Mc * sizeof(float));
	g->trstd = (float *)dalloc(g, Mc * sizeof(float));
	g->logits = (float *)dalloc(g, Mc * V * sizeof(float));
	g->dlogits = dalloc(g, Mc * V * ts);
	g->d_losses = (double *)dalloc(g, (Mc + (size_t)g->B) * sizeof(double));
	g->d_correct = (int *)dalloc(g, (Mc + (size_t)g->B) * sizeof(int));
	if (cudaMallocHost(&g->h_losses, (Mc + (size_t)g->B) * sizeof(double)) != cudaSuccess ||
	    cudaMallocHost(&g->h_correct, (Mc + (size_t)g->B) * sizeof(int)) != cudaSuccess)
		return CADRE_ERR_NOMEM;
	if (g->hm == NULL || g->t == NULL || g->tg == NULL || g->tl == NULL ||
	    g->dM1 == NULL || g->dM2 == NULL || g->dM3 == NULL || g->tmean == NULL ||
	    g->trstd == NULL || g->logits == NULL || g->dlogits == NULL ||
	    g->d_losses == NULL || g->d_correct == NULL)
		return CADRE_ERR_NOMEM;
	g->Mcap = (int)Mc;
	return 0;
}

/* ---------------------------------------------------------------- host <-> device */

static void
refresh_compute_copy(struct gpu_trainer *g)
{
	if (g->prec == GPU_BF16)
		k_convert<__nv_bfloat16><<<nblocks(g->nparams), NTHREADS, 0, g->s>>>(
		    (__nv_bfloat16 *)g->pc, g->p, g->nparams);
	else if (g->prec == GPU_FP16)
		k_convert<__half><<<nblocks(g->nparams), NTHREADS, 0, g->s>>>(
		    (__half *)g->pc, g->p, g->nparams);
}

int
gpu_upload(struct gpu_trainer *g, const struct bert_model *m, const struct optim *o)
{
	size_t bytes = g->nparams * 4;

	CK(cudaMemcpyAsync(g->p, m->params_mem, bytes, cudaMemcpyHostToDevice, g->s));
	if (o != NULL && o->m != NULL) {
		CK(cudaMemcpyAsync(g->m1, o->m, bytes, cudaMemcpyHostToDevice, g->s));
		CK(cudaMemcpyAsync(g->m2, o->v, bytes, cudaMemcpyHostToDevice, g->s));
	} else {
		CK(cudaMemsetAsync(g->m1, 0, bytes, g->s));
		CK(cudaMemsetAsync(g->m2, 0, bytes, g->s));
	}
	refresh_compute_copy(g);
	CK(cudaStreamSynchronize(g->s));
	return 0;
}

int
gpu_download(struct gpu_trainer *g, struct bert_model *m, struct optim *o)
{
	size_t bytes = g->nparams * 4;

	CK(cudaStreamSynchronize(g->sc));
	CK(cudaMemcpyAsync(m->params_mem, g->p, bytes, cudaMemcpyDeviceToHost, g->s));
	if (o != NULL && o->m != NULL) {
		CK(cudaMemcpyAsync(o->m, g->m1, bytes, cudaMemcpyDeviceToHost, g->s));
		CK(cudaMemcpyAsync(o->v, g->m2, bytes, cudaMemcpyDeviceToHost, g->s));
	}
	CK(cudaStreamSynchronize(g->s));
	return 0;
}

int
gpu_download_grads(struct gpu_trainer *g, struct bert_model *m)
{
	CK(cudaStreamSynchronize(g->sc));
	CK(cudaMemcpyAsync(m->grads_mem, g->g, g->nparams * 4, cudaMemcpyDeviceToHost, g->s));
	CK(cudaStreamSynchronize(g->s));
	return 0;
}

int
gpu_upload_grads(struct gpu_trainer *g, const struct bert_model *m)
{
	CK(cudaStreamSynchronize(g->sc));
	CK(cudaMemcpyAsync(g->g, m->grads_mem, g->nparams * 4, cudaMemcpyHostToDevice, g->s));
	CK(cudaStreamSynchronize(g->s));
	return 0;
}

void
gpu_zero_grad(struct gpu_trainer *g)
{
	CK(cudaMemsetAsync(g->g, 0, g->nparams * 4, g->s));
}

uint64_t
gpu_peak_bytes(const struct gpu_trainer *g)
{
	return g->bytes;
}
