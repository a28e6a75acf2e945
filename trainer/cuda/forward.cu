/*
 * The whole model's forward on the device: embeddings, the layers, the
 * pooler, the MLM and NSP heads (or the classifier) and their losses.
 */
#include "config.h"

#include "engine_int.cuh"
#include "kernels_norm.cuh"
#include "kernels_act.cuh"
#include "kernels_loss.cuh"

/* Forward of the whole model; with keep, the losses' gradients (times
 * the loss scale) stay in dlogits/dseq for the backward. */
template <typename T>
void
forward_t(struct gpu_trainer *g, uint64_t step, int train, int keep,
    float mlm_scale, float seq_scale)
{
	const struct bert_config *c = &g->c;
	int N = g->N, H = g->H, B = g->B, Tn = g->Tn, l;
	struct dkey ke = mkkey(g, step, 0, DROPOUT_EMBEDDINGS, c->hidden_dropout, train);

	tstart(g, T_EMB);
	k_embed_ln<T><<<N, 256, 0, g->s>>>((T *)g->x[0], (T *)g->emb, g->emb_mean,
	    g->emb_rstd, g->ids, g->types, PC(g, T, wte), PC(g, T, wpe), PC(g, T, wtt),
	    PC(g, T, eln_w), PC(g, T, eln_b), Tn, H, c->ln_eps, ke);
	tend(g);
	for (l = 0; l < g->L; l++)
		layer_fwd<T>(g, l, &g->la[g->ckpt ? 0 : l], (const T *)g->x[l],
		    (T *)g->x[l + 1], step, train);

	/* pooler on the first token of every sequence */
	tstart(g, T_COPY);
	k_gather_rows<T><<<B, 256, 0, g->s>>>((T *)g->pin, (const T *)g->x[g->L], NULL,
	    Tn, H);
	tend(g);
	linear<T>(g, (T *)g->pool_pre, (T *)g->pin, PC(g, T, pool_w), PC(g, T, pool_b),
	    B, H, H);
	tstart(g, T_ACT);
	k_tanh<T><<<nblocks((size_t)B * H), NTHREADS, 0, g->s>>>((T *)g->pooled,
	    (T *)g->pool_pre, (size_t)B * H);
	tend(g);
	if (c->task == BERT_PRETRAIN) {
		/* NSP logits in fp32, bias from the fp32 master */
		gemm(g, 0, 1, B, 2, H, g->pooled, H, 0, PC(g, T, nsp_w), H, 0,
		    g->seq_logits, 2, 0, 1, 1.0f, 0.0f, g->dt, CUDA_R_32F,
		    g->p + g->off.nsp_b, 0);
		if (g->M > 0) {
			int M = g->M;

			tstart(g, T_COPY);
			k_gather_rows<T><<<M, 256, 0, g->s>>>((T *)g->hm,
			    (const T *)g->x[g->L], g->mpos, 0, H);
			tend(g);
			linear<T>(g, (T *)g->t, (T *)g->hm, PC(g, T, tr_w), PC(g, T, tr_b),
			    M, H, H);
			tstart(g, T_ACT);
			gelu<T>(g->s, (T *)g->tg, (T *)g->t, (size_t)M * H);
			tend(g);
			tstart(g, T_LN);
			resid_ln<T>(g->s, (T *)g->tl, g->tmean, g->trstd, (T *)g->tg,
			    (const T *)NULL, PC(g, T, tr_ln_w), PC(g, T, tr_ln_b), M, H,
			    c->ln_eps, nokey);
			tend(g);
			/* the decoder, tied to the word embeddings, on the
			 * labelled positions only; logits fp32 */
			gemm(g, 0, 1, M, g->V, H, g->tl, H, 0, PC(g, T, wte), H, 0,
			    g->logits, g->V, 0, 1, 1.0f, 0.0f, g->dt, CUDA_R_32F,
			    g->p + g->off.dec_b, 0);
			tstart(g, T_LOSS);
			k_xent<T><<<M, 512, 0, g->s>>>(keep ? (T *)g->dlogits : NULL,
			    g->d_losses, g->d_correct, g->logits, g->mtarget, g->V,
			    mlm_scale * g->loss_scale);
			tend(g);
		}
	} else {
		struct dkey kc = mkkey(g, step, c->layers, DROPOUT_CLASSIFIER,
		    c->hidden_dropout, train);

		tstart(g, T_ACT);
		k_dropout<T><<<nblocks(((size_t)B * H + 3) / 4), NTHREADS, 0, g->s>>>((T *)g->pooled_d,
		    (T *)g->pooled, (size_t)B * H, kc);
		tend(g);
		gemm(g, 0, 1, B, g->C, H, g->pooled_d, H, 0, PC(g, T, cls_w), H, 0,
		    g->seq_logits, g->C, 0, 1, 1.0f, 0.0f, g->dt, CUDA_R_32F,
		    g->p + g->off.cls_b, 0);
	}
	tstart(g, T_LOSS);
	k_xent<T><<<B, 128, 0, g->s>>>(keep ? (T *)g->dseq : NULL, g->d_losses + g->Mcap,
	    g->d_correct + g->Mcap, g->seq_logits, g->seql, g->C,
	    seq_scale * g->loss_scale);
	tend(g);
}

/* The activation types of enum gpu_precision: the callers are in other
 * files. */
#define INSTANTIATE(T) \
	template void forward_t<T>(struct gpu_trainer *, uint64_t, int, int, \
	    float, float);
INSTANTIATE(float)
INSTANTIATE(__nv_bfloat16)
INSTANTIATE(__half)
#undef INSTANTIATE
