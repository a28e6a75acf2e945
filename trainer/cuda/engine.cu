/*
 * The CUDA path of cadre-train: BERT forward and backward on one GPU,
 * operation by operation as model.c does on the CPU (docs/gpu.md), the
 * linear layers and attention products through cuBLASLt, the rest in
 * kernels_*.cuh; the optimizers over the whole parameter layout in one
 * launch; NCCL for data parallelism. The C interface is trainer/gpu.h.
 *
 * This file opens and closes a trainer and runs a micro-batch through it;
 * engine_int.cuh lists what the others hold.
 */
#include "config.h"

#include <stdarg.h>

#include "engine_int.cuh"

/* ---------------------------------------------------------------- errors */

void __attribute__((noreturn))
gpu_die(const char *file, int line, const char *call, const char *msg)
{
	fprintf(stderr, "cadre-train: CUDA: %s:%d: %s: %s\n", file, line, call, msg);
	exit(1);
}

void
errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ---------------------------------------------------------------- open, close */

int
gpu_count(void)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	return n;
}

int
gpu_device_name(int dev, char *buf, size_t len)
{
	cudaDeviceProp prop;

	if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
		(void)cudaGetLastError();
		errf(buf, len, "no CUDA device %d", dev);
		return CADRE_ERR_NOT_FOUND;
	}
	snprintf(buf, len, "%s", prop.name);
	return 0;
}

#define OFF(f)	(m->p.f != NULL ? (size_t)(m->p.f - m->params_mem) : 0)

int
gpu_open(const struct bert_model *m, int B, int T, int precision, int grad_ckpt,
    int dev, struct gpu_trainer **gp, char *err, size_t errlen)
{
	struct gpu_trainer *g;
	const struct bert_config *c = &m->cfg;
	int n = gpu_count(), l, nla;
	size_t N = (size_t)B * T, H, I, ts, natt, ti, k;
	const char *tenv = getenv("CADRE_GPU_TIMERS");

	*gp = NULL;
	if (n == 0) {
		errf(err, errlen, "no CUDA device visible (nvidia-smi -L lists none, or "
		    "CUDA_VISIBLE_DEVICES hides them): use --device cpu");
		return CADRE_ERR_NOT_FOUND;
	}
	if (precision < GPU_FP32 || precision > GPU_FP16) {
		errf(err, errlen, "precision %d: expected fp32, bf16 or fp16", precision);
		return CADRE_ERR_INVALID;
	}
	CK(cudaSetDevice(dev % n));
	g = (struct gpu_trainer *)calloc(1, sizeof *g);
	if (g == NULL)
		return CADRE_ERR_NOMEM;
	g->c = *c;
	g->dseed = m->dropout_seed;
	g->dev = dev % n;
	g->B = B;
	g->Tn = T;
	g->N = (int)N;
	g->H = c->hidden;
	g->I = c->intermediate;
	g->V = c->vocab;
	g->nh = c->heads;
	g->hs = c->hidden / c->heads;
	g->L = c->layers;
	g->C = c->task == BERT_PRETRAIN ? 2 : c->num_labels;
	g->prec = precision;
	g->ckpt = grad_ckpt;
	g->tsize = precision == GPU_FP32 ? 4 : 2;
	g->dt = precision == GPU_FP32 ? CUDA_R_32F :
	    precision == GPU_BF16 ? CUDA_R_16BF : CUDA_R_16F;
	g->nparams = m->nparams;
	g->ntensors = m->ntensors;
	g->loss_scale = precision == GPU_FP16 ? FP16_SCALE0 : 1.0f;
	g->rank = 0;
	g->nranks = 1;
	g->timing = tenv != NULL && strcmp(tenv, "1") == 0;
	g->tune = getenv("CADRE_GPU_GEMM_TUNE") != NULL &&
	    strcmp(getenv("CADRE_GPU_GEMM_TUNE"), "1") == 0;
	H = (size_t)g->H;
	I = (size_t)g->I;
	ts = g->tsize;
	/* CADRE_GPU_ATTN=unfused: the permutes, batched products and softmax
	 * kernels even where the fused attention applies (to compare) */
	g->fused_attn = attn_fused_ok(ts, T, g->H, g->nh) &&
	    !(getenv("CADRE_GPU_ATTN") != NULL &&
	    strcmp(getenv("CADRE_GPU_ATTN"), "unfused") == 0);
	natt = (size_t)B * g->nh * T * T;

	g->off = (struct model_off){ OFF(wte), OFF(wpe), OFF(wtt), OFF(eln_w), OFF(eln_b),
		OFF(pool_w), OFF(pool_b), OFF(tr_w), OFF(tr_b), OFF(tr_ln_w),
		OFF(tr_ln_b), OFF(dec_b), OFF(nsp_w), OFF(nsp_b), OFF(cls_w), OFF(cls_b) };
	g->loff = (struct layer_off *)calloc((size_t)g->L, sizeof *g->loff);
	g->la = (struct lacts *)calloc((size_t)g->L, sizeof *g->la);
	g->x = (void **)calloc((size_t)g->L + 1, sizeof *g->x);
	if (g->loff == NULL || g->la == NULL || g->x == NULL)
		goto nomem;
	for (l = 0; l < g->L; l++) {
		const struct bert_layer_params *y = &m->p.layer[l];
		const float *b0 = m->params_mem;

		g->loff[l] = (struct layer_off){ (size_t)(y->qw - b0), (size_t)(y->qb - b0),
			(size_t)(y->kw - b0), (size_t)(y->kb - b0), (size_t)(y->vw - b0),
			(size_t)(y->vb - b0), (size_t)(y->aow - b0), (size_t)(y->aob - b0),
			(size_t)(y->aln_w - b0), (size_t)(y->aln_b - b0),
			(size_t)(y->iw - b0), (size_t)(y->ib - b0), (size_t)(y->ow - b0),
			(size_t)(y->ob - b0), (size_t)(y->oln_w - b0),
			(size_t)(y->oln_b - b0) };
	}
	g->heads_beg = g->off.pool_w;
	/* CADRE_GPU_QKV=batched: Q, K and V as one strided-batched product,
	 * where every layer spaces their weights and biases equally */
	if (getenv("CADRE_GPU_QKV") != NULL && strcmp(getenv("CADRE_GPU_QKV"), "batched") == 0) {
		const struct layer_off *o0 = &g->loff[0];

		g->qkv_sw = (long long)(o0->kw - o0->qw);
		g->qkv_sb = (long long)(o0->kb - o0->qb);
		g->qkv_batched = 1;
		for (l = 0; l < g->L; l++) {
			const struct layer_off *o = &g->loff[l];

			if ((long long)(o->kw - o->qw) != g->qkv_sw ||
			    (long long)(o->vw - o->kw) != g->qkv_sw ||
			    (long long)(o->kb - o->qb) != g->qkv_sb ||
			    (long long)(o->vb - o->kb) != g->qkv_sb)
				g->qkv_batched = 0;
		}
	}

	CK(cudaStreamCreateWithFlags(&g->s, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&g->sc, cudaStreamNonBlocking));
	for (k = 0; k < 512; k++)
		CK(cudaEventCreateWithFlags(&g->ev_bucket[k], cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&g->ev_comm, cudaEventDisableTiming));
	if (g->timing)
		for (k = 0; k < MAX_EVENTS; k++)
			CK(cudaEventCreate(&g->ev[k]));
	CKB(cublasLtCreate(&g->lt));
	if ((g->ws = dalloc(g, WORKSPACE_BYTES)) == NULL)
		goto nomem;

	/* the layout's copies */
	if ((g->p = (float *)dalloc(g, g->nparams * 4)) == NULL ||
	    (g->g = (float *)dalloc(g, g->nparams * 4)) == NULL ||
	    (g->m1 = (float *)dalloc(g, g->nparams * 4)) == NULL ||
	    (g->m2 = (float *)dalloc(g, g->nparams * 4)) == NULL)
		goto nomem;
	if (precision == GPU_FP32)
		g->pc = g->p;
	else if ((g->pc = dalloc(g, g->nparams * 2)) == NULL)
		goto nomem;

	/* activations, as model.c's acts_prepare (one layer's with
	 * checkpointing) */
	for (l = 0; l <= g->L; l++)
		if ((g->x[l] = dalloc(g, N * H * ts)) == NULL)
			goto nomem;
	nla = grad_ckpt ? 1 : g->L;
	g->nla = nla;
	for (l = 0; l < nla; l++) {
		struct lacts *A = &g->la[l];

		if ((A->qp = dalloc(g, (g->qkv_batched ? 3 : 1) * N * H * ts)) == NULL ||
		    (!g->qkv_batched && (A->kp = dalloc(g, N * H * ts)) == NULL) ||
		    (!g->qkv_batched && (A->vp = dalloc(g, N * H * ts)) == NULL) ||
		    (A->att = dalloc(g, natt * ts)) == NULL ||
		    (g->fused_attn && (A->dmask = (uint32_t *)dalloc(g,
		    attn_mask_words(B, g->nh, T) * 4)) == NULL) ||
		    (A->ctx = dalloc(g, N * H * ts)) == NULL ||
		    (A->r1 = dalloc(g, N * H * ts)) == NULL ||
		    (A->h1 = dalloc(g, N * H * ts)) == NULL ||
		    (A->r2 = dalloc(g, N * H * ts)) == NULL ||
		    (A->i = dalloc(g, N * I * ts)) == NULL ||
		    (A->gl = dalloc(g, N * I * ts)) == NULL ||
		    (A->mean1 = (float *)dalloc(g, N * 4)) == NULL ||
		    (A->rstd1 = (float *)dalloc(g, N * 4)) == NULL ||
		    (A->mean2 = (float *)dalloc(g, N * 4)) == NULL ||
		    (A->rstd2 = (float *)dalloc(g, N * 4)) == NULL)
			goto nomem;
		if (g->qkv_batched) {
			A->kp = (char *)A->qp + N * H * ts;
			A->vp = (char *)A->kp + N * H * ts;
		}
	}
	if ((g->emb = dalloc(g, N * H * ts)) == NULL ||
	    (g->emb_mean = (float *)dalloc(g, N * 4)) == NULL ||
	    (g->emb_rstd = (float *)dalloc(g, N * 4)) == NULL ||
	    (g->dxa = dalloc(g, N * H * ts)) == NULL ||
	    (g->dxb = dalloc(g, N * H * ts)) == NULL ||
	    (g->dh1 = dalloc(g, N * H * ts)) == NULL ||
	    (g->drd = dalloc(g, N * H * ts)) == NULL ||
	    (g->dg = dalloc(g, N * I * ts)) == NULL ||
	    (g->di = dalloc(g, N * I * ts)) == NULL ||
	    (g->dctx = dalloc(g, N * H * ts)) == NULL ||
	    (g->dqp = dalloc(g, (g->qkv_batched ? 3 : 1) * N * H * ts)) == NULL ||
	    (!g->qkv_batched && (g->dkp = dalloc(g, N * H * ts)) == NULL) ||
	    (!g->qkv_batched && (g->dvp = dalloc(g, N * H * ts)) == NULL))
		goto nomem;
	if (g->qkv_batched) {
		g->dkp = (char *)g->dqp + N * H * ts;
		g->dvp = (char *)g->dkp + N * H * ts;
	}
	/* the unfused attention's scratch */
	if (!g->fused_attn &&
	    ((g->qs = dalloc(g, (g->qkv_batched ? 3 : 1) * N * H * ts)) == NULL ||
	    (g->attd = dalloc(g, natt * ts)) == NULL ||
	    (g->ctxp = dalloc(g, N * H * ts)) == NULL ||
	    (g->dctxp = dalloc(g, N * H * ts)) == NULL ||
	    (g->datt = dalloc(g, natt * ts)) == NULL))
		goto nomem;
	{
		size_t C = (size_t)(g->V > g->I ? g->V : g->I), chunks;

		if (C < H)
			C = H;
		chunks = (N + COLSUM_ROWS - 1) / COLSUM_ROWS;
		/* and the fused attention's bias sums, 3 x B x H */
		if (2 * chunks * C < 3 * (size_t)B * H)
			chunks = (3 * (size_t)B * H + 2 * C - 1) / (2 * C);
		if ((g->part = (float *)dalloc(g, 2 * chunks * C * 4)) == NULL)
			goto nomem;
	}
	if ((g->pin = dalloc(g, (size_t)B * H * ts)) == NULL ||
	    (g->pool_pre = dalloc(g, (size_t)B * H * ts)) == NULL ||
	    (g->pooled = dalloc(g, (size_t)B * H * ts)) == NULL ||
	    (g->pooled_d = dalloc(g, (size_t)B * H * ts)) == NULL ||
	    (g->dB1 = dalloc(g, (size_t)B * H * ts)) == NULL ||
	    (g->dB2 = dalloc(g, (size_t)B * H * ts)) == NULL ||
	    (g->dB3 = dalloc(g, (size_t)B * H * ts)) == NULL ||
	    (g->dseq = dalloc(g, (size_t)B * g->C * ts)) == NULL ||
	    (g->seq_logits = (float *)dalloc(g, (size_t)B * g->C * 4)) == NULL)
		goto nomem;
	/* MLM buffers for the expected 15% of the tokens, grown on demand */
	g->Mcap = (int)(N / 5 + 64);
	if (mlm_alloc(g, g->Mcap) != 0)
		goto nomem;

	/* the batch: ids, types, mask (N), seq labels (B), mpos, mtarget (N),
	 * then the word and token type tables' segments (struct segs) */
	{
		size_t np = N + N / SEG_PIECE + 1, nm = N / SEG_PIECE + 1;
		size_t nseg_ints = 3 * N + 1 + 3 * np + 3 * nm;
		struct segs *sg[2] = { &g->wseg, &g->tseg };
		int32_t *q;

		g->batch_ints = 5 * N + (size_t)B + 2 * nseg_ints;
		if ((g->d_batch = (int32_t *)dalloc(g, g->batch_ints * 4)) == NULL ||
		    cudaMallocHost(&g->h_batch, g->batch_ints * 4) != cudaSuccess ||
		    (g->segpart = (float *)dalloc(g, (2 * N / SEG_PIECE + 1) * H * 4)) == NULL)
			goto nomem;
		g->ids = g->d_batch;
		g->types = g->ids + N;
		g->mask = g->types + N;
		g->seql = g->mask + N;
		g->mpos = g->seql + B;
		g->mtarget = g->mpos + N;
		q = g->mtarget + N;
		for (int k = 0; k < 2; k++) {
			sg[k]->key = q; q += N;
			sg[k]->start = q; q += N + 1;
			sg[k]->rows = q; q += N;
			sg[k]->pbeg = q; q += np;
			sg[k]->pend = q; q += np;
			sg[k]->pout = q; q += np;
			sg[k]->mkey = q; q += nm;
			sg[k]->mslot = q; q += nm;
			sg[k]->mcount = q; q += nm;
		}
	}
	if ((g->keycount = (int32_t *)malloc(((size_t)(g->V > g->c.type_vocab ? g->V :
	    g->c.type_vocab) + 1) * sizeof(int32_t))) == NULL)
		goto nomem;

	/* the optimizer's chunks: every tensor cut in OPT_CHUNK pieces */
	for (ti = 0; ti < g->ntensors; ti++)
		g->nchunks += (int)((m->table[ti].numel + OPT_CHUNK - 1) / OPT_CHUNK);
	g->h_chunks = (struct chunk *)calloc((size_t)g->nchunks, sizeof *g->h_chunks);
	if (g->h_chunks == NULL || g->ntensors > 65535)
		goto nomem;
	n = 0;
	for (ti = 0; ti < g->ntensors; ti++) {
		const struct param_info *pi = &m->table[ti];

		for (k = 0; k < pi->numel; k += OPT_CHUNK) {
			struct chunk *ch = &g->h_chunks[n++];

			ch->off = pi->offset + k;
			ch->len = (uint32_t)(pi->numel - k < OPT_CHUNK ? pi->numel - k : OPT_CHUNK);
			ch->tensor = (uint16_t)ti;
			ch->decay = (uint16_t)pi->decay;
		}
	}
	if ((g->d_chunks = (struct chunk *)dalloc(g, (size_t)g->nchunks * sizeof(struct chunk))) == NULL ||
	    (g->d_opart = (double *)dalloc(g, 2 * (size_t)g->nchunks * sizeof(double))) == NULL ||
	    (g->d_ratio = (float *)dalloc(g, g->ntensors * sizeof(float))) == NULL ||
	    (g->d_small = (double *)dalloc(g, 64 * sizeof(double))) == NULL ||
	    cudaMallocHost(&g->h_opart, 2 * (size_t)g->nchunks * sizeof(double)) != cudaSuccess ||
	    cudaMallocHost(&g->h_ratio, g->ntensors * sizeof(float)) != cudaSuccess)
		goto nomem;
	CK(cudaMemcpy(g->d_chunks, g->h_chunks, (size_t)g->nchunks * sizeof(struct chunk),
	    cudaMemcpyHostToDevice));
	CK(cudaMemset(g->g, 0, g->nparams * 4));
	/* the streams are non-blocking: the legacy stream's copies above
	 * must be done before they start */
	CK(cudaDeviceSynchronize());
	*gp = g;
	return 0;
nomem:
	{
		size_t fr = 0, tot = 0;

		(void)cudaGetLastError();
		cudaMemGetInfo(&fr, &tot);
		errf(err, errlen, "out of GPU memory: %.2f GiB allocated for the model "
		    "(%zu parameters) and a micro-batch of %d x %d when an allocation "
		    "failed (%.2f of %.2f GiB free): use a smaller batch, "
		    "--grad-checkpointing or bf16", (double)g->bytes / 1073741824.0,
		    g->nparams, B, T, (double)fr / 1073741824.0,
		    (double)tot / 1073741824.0);
	}
	gpu_close(g);
	return CADRE_ERR_NOMEM;
}

void
gpu_close(struct gpu_trainer *g)
{
	int l, k;

	if (g == NULL)
		return;
	if (g->s != NULL)
		cudaStreamSynchronize(g->s);
	if (g->sc != NULL)
		cudaStreamSynchronize(g->sc);
#ifdef HAVE_NCCL
	if (g->comm != NULL)
		ncclCommDestroy(g->comm);
#endif
	for (l = 0; l < g->nla; l++) {
		struct lacts *A = &g->la[l];

		cudaFree(A->qp); cudaFree(A->att);
		if (!g->qkv_batched) {
			cudaFree(A->kp);
			cudaFree(A->vp);
		}
		cudaFree(A->dmask);
		cudaFree(A->ctx); cudaFree(A->r1); cudaFree(A->h1); cudaFree(A->r2);
		cudaFree(A->i); cudaFree(A->gl); cudaFree(A->mean1); cudaFree(A->rstd1);
		cudaFree(A->mean2); cudaFree(A->rstd2);
	}
	if (g->x != NULL)
		for (l = 0; l <= g->L; l++)
			cudaFree(g->x[l]);
	cudaFree(g->emb); cudaFree(g->emb_mean); cudaFree(g->emb_rstd);
	cudaFree(g->qs); cudaFree(g->attd); cudaFree(g->ctxp);
	cudaFree(g->dxa); cudaFree(g->dxb); cudaFree(g->dh1); cudaFree(g->drd);
	cudaFree(g->dg); cudaFree(g->di); cudaFree(g->dctx); cudaFree(g->dctxp);
	cudaFree(g->datt); cudaFree(g->dqp);
	if (!g->qkv_batched) {
		cudaFree(g->dkp);
		cudaFree(g->dvp);
	}
	cudaFree(g->part);
	cudaFree(g->segpart);
	cudaFree(g->hm); cudaFree(g->t); cudaFree(g->tg); cudaFree(g->tl);
	cudaFree(g->dM1); cudaFree(g->dM2); cudaFree(g->dM3);
	cudaFree(g->tmean); cudaFree(g->trstd); cudaFree(g->logits);
	cudaFree(g->dlogits); cudaFree(g->d_losses); cudaFree(g->d_correct);
	cudaFreeHost(g->h_losses); cudaFreeHost(g->h_correct);
	cudaFree(g->pin); cudaFree(g->pool_pre); cudaFree(g->pooled);
	cudaFree(g->pooled_d); cudaFree(g->dB1); cudaFree(g->dB2); cudaFree(g->dB3);
	cudaFree(g->dseq); cudaFree(g->seq_logits);
	cudaFree(g->d_batch); cudaFreeHost(g->h_batch);
	cudaFree(g->d_chunks); cudaFree(g->d_opart); cudaFree(g->d_ratio);
	cudaFree(g->d_small);
	cudaFreeHost(g->h_opart); cudaFreeHost(g->h_ratio);
	if (g->pc != g->p)
		cudaFree(g->pc);
	cudaFree(g->p); cudaFree(g->g); cudaFree(g->m1); cudaFree(g->m2);
	cudaFree(g->ws);
	cudaFree(g->tune_out);
	for (k = 0; k < g->nplans; k++) {
		cublasLtMatmulDescDestroy(g->plans[k].desc);
		cublasLtMatrixLayoutDestroy(g->plans[k].la);
		cublasLtMatrixLayoutDestroy(g->plans[k].lb);
		cublasLtMatrixLayoutDestroy(g->plans[k].lc);
	}
	free(g->plans);
	if (g->lt != NULL)
		cublasLtDestroy(g->lt);
	if (g->s != NULL) {
		for (k = 0; k < 512; k++)
			cudaEventDestroy(g->ev_bucket[k]);
		cudaEventDestroy(g->ev_comm);
		if (g->timing)
			for (k = 0; k < MAX_EVENTS; k++)
				cudaEventDestroy(g->ev[k]);
		cudaStreamDestroy(g->s);
		cudaStreamDestroy(g->sc);
	}
	free(g->keycount);
	free(g->h_chunks);
	free(g->loff);
	free(g->la);
	free(g->x);
	free(g);
}

/* ---------------------------------------------------------------- steps */

/* The losses and correct counts of the micro-batch, summed on the host in
 * order (as ops.c sums its losses). */
static void
collect(struct gpu_trainer *g, struct gpu_micro_out *out)
{
	int M = g->c.task == BERT_PRETRAIN ? g->M : 0, i;

	memset(out, 0, sizeof *out);
	if (M > 0) {
		CK(cudaMemcpyAsync(g->h_losses, g->d_losses, (size_t)M * sizeof(double),
		    cudaMemcpyDeviceToHost, g->s));
		CK(cudaMemcpyAsync(g->h_correct, g->d_correct, (size_t)M * sizeof(int),
		    cudaMemcpyDeviceToHost, g->s));
	}
	CK(cudaMemcpyAsync(g->h_losses + g->Mcap, g->d_losses + g->Mcap,
	    (size_t)g->B * sizeof(double), cudaMemcpyDeviceToHost, g->s));
	CK(cudaMemcpyAsync(g->h_correct + g->Mcap, g->d_correct + g->Mcap,
	    (size_t)g->B * sizeof(int), cudaMemcpyDeviceToHost, g->s));
	CK(cudaStreamSynchronize(g->s));
	tcollect(g);
	for (i = 0; i < M; i++) {
		out->mlm_sum += g->h_losses[i];
		out->mlm_correct += g->h_correct[i];
	}
	for (i = 0; i < g->B; i++) {
		out->seq_sum += g->h_losses[g->Mcap + i];
		out->seq_correct += g->h_correct[g->Mcap + i];
	}
	out->masked = M;
}

int
gpu_micro_step(struct gpu_trainer *g, const struct bert_batch *b, uint64_t step,
    int train, float mlm_scale, float seq_scale, int last, struct gpu_micro_out *out)
{
	char err[256];
	int error;

	if ((error = stage_batch(g, b, err, sizeof err)) != 0) {
		fprintf(stderr, "cadre-train: GPU: %s\n", err);
		return error;
	}
	switch (g->prec) {
	case GPU_FP32:
		forward_t<float>(g, step, train, 1, mlm_scale, seq_scale);
		backward_t<float>(g, step, train, last);
		break;
	case GPU_BF16:
		forward_t<__nv_bfloat16>(g, step, train, 1, mlm_scale, seq_scale);
		backward_t<__nv_bfloat16>(g, step, train, last);
		break;
	default:
		forward_t<__half>(g, step, train, 1, mlm_scale, seq_scale);
		backward_t<__half>(g, step, train, last);
		break;
	}
	CK(cudaGetLastError());
	collect(g, out);
	return 0;
}

int
gpu_forward(struct gpu_trainer *g, const struct bert_batch *b,
    struct gpu_micro_out *out)
{
	char err[256];
	int error;

	if ((error = stage_batch(g, b, err, sizeof err)) != 0) {
		fprintf(stderr, "cadre-train: GPU: %s\n", err);
		return error;
	}
	switch (g->prec) {
	case GPU_FP32: forward_t<float>(g, 0, 0, 0, 1.0f, 1.0f); break;
	case GPU_BF16: forward_t<__nv_bfloat16>(g, 0, 0, 0, 1.0f, 1.0f); break;
	default: forward_t<__half>(g, 0, 0, 0, 1.0f, 1.0f); break;
	}
	CK(cudaGetLastError());
	collect(g, out);
	return 0;
}
