/*
 * One encoder layer on the device, forward and backward, as model.c's:
 * Q, K, V, the masked softmax and its dropout, the context, the attention
 * output and its LayerNorm, the FFN and its LayerNorm.
 */
#include "config.h"

#include "engine_int.cuh"
#include "kernels_norm.cuh"
#include "kernels_act.cuh"
#include "kernels_attn.cuh"
#include "kernels_attn_fused.cuh"

/* ---------------------------------------------------------------- dropout keys */

struct dkey
mkkey(const struct gpu_trainer *g, uint64_t step, int layer, int tensor,
    float p, int train)
{
	struct dkey k;

	k.k0 = (uint32_t)g->dseed;
	k.k1 = (uint32_t)(g->dseed >> 32);
	k.c1 = ((uint32_t)layer << 8) | (uint32_t)tensor;
	k.c2 = (uint32_t)step;
	k.c3 = (uint32_t)(step >> 32);
	k.p = train ? p : 0.0f;
	k.scale = 1.0f / (1.0f - k.p);
	return k;
}

/* ---------------------------------------------------------------- forward */

/* Q, K, V of layer l as one strided-batched product (g->qkv_batched):
 * every layer spaces their weights and biases equally in the layout; out
 * gets the three (N, H) results one after another. */
template <typename T>
static void
qkv_forward(struct gpu_trainer *g, int l, const T *x, T *out)
{
	gemm(g, 0, 1, g->N, g->H, g->H, x, g->H, 0, LPC(g, T, l, qw), g->H, g->qkv_sw,
	    out, g->H, (long long)g->N * g->H, 3, 1.0f, 0.0f, g->dt, g->dt,
	    LPC(g, T, l, qb), g->qkv_sb);
}

/* Its backward from d, the three (N, H) gradients one after another: the
 * weights' gradients by one batched product, the input's added to dx by
 * three (a batch cannot sum into one output); the biases' are the
 * caller's. */
template <typename T>
static void
qkv_backward(struct gpu_trainer *g, int l, const T *x, const T *d, T *dx)
{
	int N = g->N, H = g->H;
	size_t NH = (size_t)N * H;

	gemm(g, 1, 0, H, H, N, d, H, (long long)NH, x, H, 0, LGR(g, l, qw), H,
	    g->qkv_sw, 3, 1.0f, 1.0f, g->dt, CUDA_R_32F, NULL, 0);
	linear_bwd<T>(g, dx, 1.0f, NULL, NULL, d, x, LPC(g, T, l, qw), N, H, H);
	linear_bwd<T>(g, dx, 1.0f, NULL, NULL, d + NH, x, LPC(g, T, l, kw), N, H, H);
	linear_bwd<T>(g, dx, 1.0f, NULL, NULL, d + 2 * NH, x, LPC(g, T, l, vw), N, H, H);
}

/* Q, K, V and the context of layer l: the fused kernels where they
 * apply (2-byte T only; g->fused_attn), else the permutes, batched
 * products and softmax kernels. */
template <typename T>
static void
attn_forward(struct gpu_trainer *g, int l, struct lacts *A, const T *x, struct dkey kp)
{
	int N = g->N, H = g->H, B = g->B, Tn = g->Tn, nh = g->nh, hs = g->hs;
	size_t natt = (size_t)B * nh * Tn * Tn;
	T *qs = (T *)g->qs, *att = (T *)A->att;
	T *attd = kp.p > 0.0f ? (T *)g->attd : att;

	if constexpr (sizeof(T) == 2) {
		if (g->fused_attn) {
			if (g->qkv_batched)
				qkv_forward<T>(g, l, x, (T *)A->qp);
			else {
				linear<T>(g, (T *)A->qp, x, LPC(g, T, l, qw), LPC(g, T, l, qb),
				    N, H, H);
				linear<T>(g, (T *)A->kp, x, LPC(g, T, l, kw), LPC(g, T, l, kb),
				    N, H, H);
				linear<T>(g, (T *)A->vp, x, LPC(g, T, l, vw), LPC(g, T, l, vb),
				    N, H, H);
			}
			tstart(g, T_ATTN);
			attn_fwd<T>(g->s, (T *)A->ctx, att, A->dmask, (T *)A->qp,
			    (T *)A->kp, (T *)A->vp, g->mask, B, nh, Tn, H,
			    1.0f / sqrtf((float)hs), kp);
			tend(g);
			return;
		}
	}
	if (g->qkv_batched) {
		size_t NH = (size_t)N * H;

		qkv_forward<T>(g, l, x, qs);
		tstart(g, T_ATTN);
		permute<T>(g->s, (T *)A->qp, qs, B, Tn, nh, hs, 0);
		permute<T>(g->s, (T *)A->kp, qs + NH, B, Tn, nh, hs, 0);
		permute<T>(g->s, (T *)A->vp, qs + 2 * NH, B, Tn, nh, hs, 0);
		tend(g);
	} else {
		linear<T>(g, qs, x, LPC(g, T, l, qw), LPC(g, T, l, qb), N, H, H);
		tstart(g, T_ATTN);
		permute<T>(g->s, (T *)A->qp, qs, B, Tn, nh, hs, 0);
		tend(g);
		linear<T>(g, qs, x, LPC(g, T, l, kw), LPC(g, T, l, kb), N, H, H);
		tstart(g, T_ATTN);
		permute<T>(g->s, (T *)A->kp, qs, B, Tn, nh, hs, 0);
		tend(g);
		linear<T>(g, qs, x, LPC(g, T, l, vw), LPC(g, T, l, vb), N, H, H);
		tstart(g, T_ATTN);
		permute<T>(g->s, (T *)A->vp, qs, B, Tn, nh, hs, 0);
		tend(g);
	}
	/* scores (T,T) = q k^T per (sequence, head); scaled in the softmax */
	gemm(g, 0, 1, Tn, Tn, hs, A->qp, hs, (long long)Tn * hs, A->kp, hs,
	    (long long)Tn * hs, att, Tn, (long long)Tn * Tn, B * nh, 1.0f, 0.0f,
	    g->dt, g->dt, NULL, 0);
	tstart(g, T_ATTN);
	softmax_fwd<T>(g->s, att, attd, g->mask, natt / Tn, nh, Tn,
	    1.0f / sqrtf((float)hs), kp);
	tend(g);
	gemm(g, 0, 0, Tn, hs, Tn, attd, Tn, (long long)Tn * Tn, A->vp, hs,
	    (long long)Tn * hs, g->ctxp, hs, (long long)Tn * hs, B * nh, 1.0f, 0.0f,
	    g->dt, g->dt, NULL, 0);
	tstart(g, T_ATTN);
	permute<T>(g->s, (T *)A->ctx, (T *)g->ctxp, B, Tn, nh, hs, 1);
	tend(g);
}

template <typename T>
void
layer_fwd(struct gpu_trainer *g, int l, struct lacts *A, const T *x, T *out,
    uint64_t step, int train)
{
	const struct bert_config *c = &g->c;
	int N = g->N, H = g->H, I = g->I;
	struct dkey kp = mkkey(g, step, l, DROPOUT_ATTN_PROBS, c->attn_dropout, train);
	struct dkey ka = mkkey(g, step, l, DROPOUT_ATTN_OUT, c->hidden_dropout, train);
	struct dkey kf = mkkey(g, step, l, DROPOUT_FFN_OUT, c->hidden_dropout, train);

	attn_forward<T>(g, l, A, x, kp);
	linear<T>(g, (T *)A->r1, (T *)A->ctx, LPC(g, T, l, aow), LPC(g, T, l, aob), N, H, H);
	tstart(g, T_LN);
	resid_ln<T>(g->s, (T *)A->h1, A->mean1, A->rstd1, (T *)A->r1, x,
	    LPC(g, T, l, aln_w), LPC(g, T, l, aln_b), N, H, c->ln_eps, ka);
	tend(g);
	linear<T>(g, (T *)A->i, (T *)A->h1, LPC(g, T, l, iw), LPC(g, T, l, ib), N, H, I);
	tstart(g, T_ACT);
	gelu<T>(g->s, (T *)A->gl, (T *)A->i, (size_t)N * I);
	tend(g);
	linear<T>(g, (T *)A->r2, (T *)A->gl, LPC(g, T, l, ow), LPC(g, T, l, ob), N, I, H);
	tstart(g, T_LN);
	resid_ln<T>(g->s, out, A->mean2, A->rstd2, (T *)A->r2, (T *)A->h1,
	    LPC(g, T, l, oln_w), LPC(g, T, l, oln_b), N, H, c->ln_eps, kf);
	tend(g);
}

/* ---------------------------------------------------------------- backward */

/* The attention's backward from g->dctx: dx gets the Q, K, V inputs'
 * gradient added, the weights theirs. */
template <typename T>
static void
attn_backward(struct gpu_trainer *g, int l, const struct lacts *A, const T *x, T *dx,
    struct dkey kp)
{
	int N = g->N, H = g->H, B = g->B, Tn = g->Tn, nh = g->nh, hs = g->hs;
	size_t natt = (size_t)B * nh * Tn * Tn;
	T *att = (T *)A->att, *attd = kp.p > 0.0f ? (T *)g->attd : att;
	T *datt = (T *)g->datt, *dtmp = (T *)g->dctx;
	long long sTT = (long long)Tn * Tn, sTh = (long long)Tn * hs;

	if constexpr (sizeof(T) == 2) {
		if (g->fused_attn) {
			/* the q, k, v bias gradients come from the kernel's
			 * column sums, not colsum's pass over dq, dk, dv */
			tstart(g, T_ATTN_BWD);
			attn_bwd<T>(g->s, (T *)g->dqp, (T *)g->dkp, (T *)g->dvp,
			    LGR(g, l, qb), LGR(g, l, kb), LGR(g, l, vb), g->part,
			    (T *)g->dctx, att, A->dmask, (T *)A->qp, (T *)A->kp, (T *)A->vp,
			    B, nh, Tn, H, 1.0f / sqrtf((float)hs), kp);
			tend(g);
			if (g->qkv_batched) {
				qkv_backward<T>(g, l, x, (T *)g->dqp, dx);
				return;
			}
			linear_bwd<T>(g, dx, 1.0f, LGR(g, l, qw), NULL, (T *)g->dqp, x,
			    LPC(g, T, l, qw), N, H, H);
			linear_bwd<T>(g, dx, 1.0f, LGR(g, l, kw), NULL, (T *)g->dkp, x,
			    LPC(g, T, l, kw), N, H, H);
			linear_bwd<T>(g, dx, 1.0f, LGR(g, l, vw), NULL, (T *)g->dvp, x,
			    LPC(g, T, l, vw), N, H, H);
			return;
		}
	}
	tstart(g, T_ATTN);
	permute<T>(g->s, (T *)g->dctxp, (T *)g->dctx, B, Tn, nh, hs, 0);
	tend(g);
	/* d(attd) = dctx v^T; its softmax backward also writes attd (the
	 * dropped probabilities, recomputed); dv = attd^T dctx */
	gemm(g, 0, 1, Tn, Tn, hs, g->dctxp, hs, sTh, A->vp, hs, sTh, datt, Tn, sTT,
	    B * nh, 1.0f, 0.0f, g->dt, g->dt, NULL, 0);
	tstart(g, T_ATTN);
	softmax_bwd<T>(g->s, datt, att, attd, natt / Tn, Tn, 1.0f / sqrtf((float)hs), kp);
	tend(g);
	gemm(g, 1, 0, Tn, hs, Tn, attd, Tn, sTT, g->dctxp, hs, sTh, g->dvp, hs, sTh,
	    B * nh, 1.0f, 0.0f, g->dt, g->dt, NULL, 0);
	/* dq = ds k; dk = ds^T q */
	gemm(g, 0, 0, Tn, hs, Tn, datt, Tn, sTT, A->kp, hs, sTh, g->dqp, hs, sTh,
	    B * nh, 1.0f, 0.0f, g->dt, g->dt, NULL, 0);
	gemm(g, 1, 0, Tn, hs, Tn, datt, Tn, sTT, A->qp, hs, sTh, g->dkp, hs, sTh,
	    B * nh, 1.0f, 0.0f, g->dt, g->dt, NULL, 0);
	if (g->qkv_batched) {
		/* back to (N, H), one after another in the forward's scratch */
		T *d3 = (T *)g->qs;
		size_t NH = (size_t)N * H;

		tstart(g, T_ATTN);
		permute<T>(g->s, d3, (T *)g->dqp, B, Tn, nh, hs, 1);
		permute<T>(g->s, d3 + NH, (T *)g->dkp, B, Tn, nh, hs, 1);
		permute<T>(g->s, d3 + 2 * NH, (T *)g->dvp, B, Tn, nh, hs, 1);
		tend(g);
		qkv_backward<T>(g, l, x, d3, dx);
		colsum<T>(g, NULL, LGR(g, l, qb), d3, (const T *)NULL, NULL, NULL, N, H);
		colsum<T>(g, NULL, LGR(g, l, kb), d3 + NH, (const T *)NULL, NULL, NULL, N, H);
		colsum<T>(g, NULL, LGR(g, l, vb), d3 + 2 * NH, (const T *)NULL, NULL, NULL,
		    N, H);
		return;
	}
	tstart(g, T_ATTN);
	permute<T>(g->s, dtmp, (T *)g->dqp, B, Tn, nh, hs, 1);
	tend(g);
	linear_bwd<T>(g, dx, 1.0f, LGR(g, l, qw), LGR(g, l, qb), dtmp, x,
	    LPC(g, T, l, qw), N, H, H);
	tstart(g, T_ATTN);
	permute<T>(g->s, dtmp, (T *)g->dkp, B, Tn, nh, hs, 1);
	tend(g);
	linear_bwd<T>(g, dx, 1.0f, LGR(g, l, kw), LGR(g, l, kb), dtmp, x,
	    LPC(g, T, l, kw), N, H, H);
	tstart(g, T_ATTN);
	permute<T>(g->s, dtmp, (T *)g->dvp, B, Tn, nh, hs, 1);
	tend(g);
	linear_bwd<T>(g, dx, 1.0f, LGR(g, l, vw), LGR(g, l, vb), dtmp, x,
	    LPC(g, T, l, vw), N, H, H);
}


template <typename T>
void
layer_bwd(struct gpu_trainer *g, int l, const struct lacts *A, const T *x,
    const T *dout, T *dx, uint64_t step, int train)
{
	const struct bert_config *c = &g->c;
	int N = g->N, H = g->H, I = g->I;
	struct dkey kp = mkkey(g, step, l, DROPOUT_ATTN_PROBS, c->attn_dropout, train);
	struct dkey ka = mkkey(g, step, l, DROPOUT_ATTN_OUT, c->hidden_dropout, train);
	struct dkey kf = mkkey(g, step, l, DROPOUT_FFN_OUT, c->hidden_dropout, train);
	T *dh1 = (T *)g->dh1, *drd = (T *)g->drd;

	/* out = LN(r2), r2 = drop(g Wo^T + bo) + h1 */
	tstart(g, T_LN);
	ln_bwd<T>(g->s, dh1, drd, dout, (T *)A->r2, LPC(g, T, l, oln_w), A->mean2,
	    A->rstd2, N, H, 0, kf);
	tend(g);
	colsum<T>(g, LGR(g, l, oln_w), LGR(g, l, oln_b), dout, (T *)A->r2, A->mean2,
	    A->rstd2, N, H);
	linear_bwd<T>(g, (T *)g->dg, 0.0f, LGR(g, l, ow), LGR(g, l, ob), drd,
	    (T *)A->gl, LPC(g, T, l, ow), N, I, H);
	tstart(g, T_ACT);
	gelu_bwd<T>(g->s, (T *)g->di, (T *)A->i, (T *)g->dg, (size_t)N * I);
	tend(g);
	linear_bwd<T>(g, dh1, 1.0f, LGR(g, l, iw), LGR(g, l, ib), (T *)g->di,
	    (T *)A->h1, LPC(g, T, l, iw), N, H, I);
	/* h1 = LN(r1), r1 = drop(ctx Wao^T + bao) + x */
	tstart(g, T_LN);
	ln_bwd<T>(g->s, dx, drd, dh1, (T *)A->r1, LPC(g, T, l, aln_w), A->mean1,
	    A->rstd1, N, H, 0, ka);
	tend(g);
	colsum<T>(g, LGR(g, l, aln_w), LGR(g, l, aln_b), dh1, (T *)A->r1, A->mean1,
	    A->rstd1, N, H);
	linear_bwd<T>(g, (T *)g->dctx, 0.0f, LGR(g, l, aow), LGR(g, l, aob), drd,
	    (T *)A->ctx, LPC(g, T, l, aow), N, H, H);
	attn_backward<T>(g, l, A, x, dx, kp);
}

/* The activation types of enum gpu_precision: the callers are in other
 * files. */
#define INSTANTIATE(T) \
	template void layer_fwd<T>(struct gpu_trainer *, int, struct lacts *, \
	    const T *, T *, uint64_t, int); \
	template void layer_bwd<T>(struct gpu_trainer *, int, \
	    const struct lacts *, const T *, const T *, T *, uint64_t, int);
INSTANTIATE(float)
INSTANTIATE(__nv_bfloat16)
INSTANTIATE(__half)
#undef INSTANTIATE
