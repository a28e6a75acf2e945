/*
 * The whole model's backward on the device: the heads, the layers in
 * reverse (each recomputed first with gradient checkpointing), the
 * embeddings; on the last micro-batch each bucket's all-reduce starts as
 * soon as its gradients are final (comm.cu).
 */
#include "config.h"

#include "engine_int.cuh"
#include "kernels_norm.cuh"
#include "kernels_act.cuh"

/* An embedding table's gradient rows += the tokens' (struct segs). */
template <typename T>
static void
seg_rows_add(struct gpu_trainer *g, float *dw, const T *dout, const struct segs *sg)
{
	k_seg_pieces<T><<<sg->np, 256, 0, g->s>>>(dw, g->segpart, dout, sg->rows,
	    sg->pbeg, sg->pend, sg->pout, g->H);
	if (sg->nm > 0)
		k_seg_parts_add<<<sg->nm, 256, 0, g->s>>>(dw, g->segpart, sg->mkey,
		    sg->mslot, sg->mcount, g->H);
}

template <typename T>
void
backward_t(struct gpu_trainer *g, uint64_t step, int train, int last)
{
	const struct bert_config *c = &g->c;
	int N = g->N, H = g->H, B = g->B, Tn = g->Tn, M = g->M, l;
	size_t NH = (size_t)N * H;
	void *tmp;

	CK(cudaMemsetAsync(g->dxa, 0, NH * g->tsize, g->s));
	if (c->task == BERT_PRETRAIN && M > 0) {
		linear_bwd<T>(g, (T *)g->dM1, 0.0f, GR(g, wte), GR(g, dec_b),
		    (T *)g->dlogits, (T *)g->tl, PC(g, T, wte), M, H, g->V);
		tstart(g, T_LN);
		ln_bwd<T>(g->s, (T *)g->dM2, (T *)NULL, (T *)g->dM1, (T *)g->tg,
		    PC(g, T, tr_ln_w), g->tmean, g->trstd, M, H, 0, nokey);
		tend(g);
		colsum<T>(g, GR(g, tr_ln_w), GR(g, tr_ln_b), (T *)g->dM1, (T *)g->tg,
		    g->tmean, g->trstd, M, H);
		tstart(g, T_ACT);
		gelu_bwd<T>(g->s, (T *)g->dM3, (T *)g->t, (T *)g->dM2, (size_t)M * H);
		tend(g);
		linear_bwd<T>(g, (T *)g->dM1, 0.0f, GR(g, tr_w), GR(g, tr_b), (T *)g->dM3,
		    (T *)g->hm, PC(g, T, tr_w), M, H, H);
		tstart(g, T_COPY);
		k_scatter_add_rows<T><<<M, 256, 0, g->s>>>((T *)g->dxa, (T *)g->dM1,
		    g->mpos, 0, H);
		tend(g);
	}
	if (c->task == BERT_PRETRAIN) {
		linear_bwd<T>(g, (T *)g->dB1, 0.0f, GR(g, nsp_w), GR(g, nsp_b),
		    (T *)g->dseq, (T *)g->pooled, PC(g, T, nsp_w), B, H, 2);
		tstart(g, T_ACT);
		k_tanh_bwd<T><<<nblocks((size_t)B * H), NTHREADS, 0, g->s>>>((T *)g->dB2,
		    (T *)g->pooled, (T *)g->dB1, (size_t)B * H, nokey);
		tend(g);
	} else {
		struct dkey kc = mkkey(g, step, c->layers, DROPOUT_CLASSIFIER,
		    c->hidden_dropout, train);

		linear_bwd<T>(g, (T *)g->dB1, 0.0f, GR(g, cls_w), GR(g, cls_b),
		    (T *)g->dseq, (T *)g->pooled_d, PC(g, T, cls_w), B, H, g->C);
		tstart(g, T_ACT);
		k_tanh_bwd<T><<<nblocks((size_t)B * H), NTHREADS, 0, g->s>>>((T *)g->dB2,
		    (T *)g->pooled, (T *)g->dB1, (size_t)B * H, kc);
		tend(g);
	}
	linear_bwd<T>(g, (T *)g->dB3, 0.0f, GR(g, pool_w), GR(g, pool_b), (T *)g->dB2,
	    (T *)g->pin, PC(g, T, pool_w), B, H, H);
	tstart(g, T_COPY);
	k_scatter_add_rows<T><<<B, 256, 0, g->s>>>((T *)g->dxa, (T *)g->dB3, NULL, Tn, H);
	tend(g);
	/* The pooler's and heads' gradients are final (the decoder's share
	 * of the word embeddings goes with the embeddings' bucket). */
	if (last)
		bucket_allreduce(g, g->heads_beg, g->nparams);

	for (l = g->L - 1; l >= 0; l--) {
		/* checkpointing: the layer again from its saved input, the
		 * same calls on the same inputs (the same bits) */
		if (g->ckpt)
			layer_fwd<T>(g, l, &g->la[0], (const T *)g->x[l], (T *)g->x[l + 1],
			    step, train);
		layer_bwd<T>(g, l, &g->la[g->ckpt ? 0 : l], (const T *)g->x[l],
		    (const T *)g->dxa, (T *)g->dxb, step, train);
		tmp = g->dxa;
		g->dxa = g->dxb;
		g->dxb = tmp;
		if (last)
			bucket_allreduce(g, g->loff[l].qw, l + 1 < g->L ?
			    g->loff[l + 1].qw : g->heads_beg);
	}

	{
		struct dkey ke = mkkey(g, step, 0, DROPOUT_EMBEDDINGS, c->hidden_dropout,
		    train);

		tstart(g, T_EMB);
		k_dropout<T><<<nblocks((NH + 3) / 4), NTHREADS, 0, g->s>>>((T *)g->dxa, (T *)g->dxa,
		    NH, ke);
		ln_bwd<T>(g->s, (T *)g->dxb, (T *)NULL, (T *)g->dxa, (T *)g->emb,
		    PC(g, T, eln_w), g->emb_mean, g->emb_rstd, N, H, 0, nokey);
		tend(g);
		colsum<T>(g, GR(g, eln_w), GR(g, eln_b), (T *)g->dxa, (T *)g->emb,
		    g->emb_mean, g->emb_rstd, N, H);
		tstart(g, T_EMB);
		seg_rows_add<T>(g, GR(g, wte), (T *)g->dxb, &g->wseg);
		k_pos_add<T><<<Tn, 256, 0, g->s>>>(GR(g, wpe), (T *)g->dxb, B, Tn, H);
		seg_rows_add<T>(g, GR(g, wtt), (T *)g->dxb, &g->tseg);
		tend(g);
	}
	if (last) {
		bucket_allreduce(g, 0, g->loff[0].qw);
#ifdef HAVE_NCCL
		if (g->comm != NULL) {
			CK(cudaEventRecord(g->ev_comm, g->sc));
			CK(cudaStreamWaitEvent(g->s, g->ev_comm, 0));
		}
#endif
	}
}

/* The activation types of enum gpu_precision: the callers are in other
 * files. */
#define INSTANTIATE(T) \
	template void backward_t<T>(struct gpu_trainer *, uint64_t, int, int);
INSTANTIATE(float)
INSTANTIATE(__nv_bfloat16)
INSTANTIATE(__half)
#undef INSTANTIATE
