/* The fp32 CPU operations of BERT, each a forward and a backward.
 * Conventions (llm.c's): row-major; backward functions ADD into every
 * gradient they produce (dinp, dw, db), so callers zero what must start at
 * zero; a NULL gradient pointer skips it. N = rows (B*T tokens). */
#ifndef CADRE_OPS_H
#define CADRE_OPS_H

#include <stdint.h>

#include "philox.h"

/* C(M,N) = alpha * op(A)(M,K) * op(B)(K,N) + beta * C, row-major;
 * ta/tb non-zero transpose. OpenBLAS when built with it, else a plain loop. */
void sgemm_rm(int ta, int tb, int M, int N, int K, float alpha,
    const float *A, int lda, const float *B, int ldb, float beta,
    float *C, int ldc);

/* out(N,OC) = inp(N,C) w(OC,C)^T + b(OC); b may be NULL. */
void matmul_forward(float *out, const float *inp, const float *w,
    const float *b, int N, int C, int OC);
void matmul_backward(float *dinp, float *dw, float *db, const float *dout,
    const float *inp, const float *w, int N, int C, int OC);

/* out = (inp - mean) * rstd * w + b per row; mean, rstd (N) saved. */
void layernorm_forward(float *out, float *mean, float *rstd,
    const float *inp, const float *w, const float *b, int N, int C, float eps);
void layernorm_backward(float *dinp, float *dw, float *db, const float *dout,
    const float *inp, const float *w, const float *mean, const float *rstd,
    int N, int C);

/* GELU, erf form: x * Phi(x). */
void gelu_forward(float *out, const float *inp, int64_t n);
void gelu_backward(float *dinp, const float *inp, const float *dout, int64_t n);

void tanh_forward(float *out, const float *inp, int64_t n);
/* From the forward's output y: dinp += dout * (1 - y^2). */
void tanh_backward(float *dinp, const float *out, const float *dout, int64_t n);

/* out(B,T,C) = wte[ids] + wpe[t] + wtt[types]. */
void embedding_forward(float *out, const int32_t *ids, const int32_t *types,
    const float *wte, const float *wpe, const float *wtt, int B, int T, int C);
void embedding_backward(float *dwte, float *dwpe, float *dwtt,
    const float *dout, const int32_t *ids, const int32_t *types,
    int B, int T, int C, int V, int NT);

/*
 * Self-attention on q, k, v (B,T,C) with nh heads: att (B,nh,T,T) gets the
 * softmax of q k^T / sqrt(C/nh) over the keys whose mask (B,T) is non-zero
 * (others get exactly 0, as Hugging Face's additive float-min mask gives);
 * attd (B,nh,T,T) the probabilities after dropout (may equal att when
 * drop->p == 0); out (B,T,C) = attd v.
 */
void attention_forward(float *out, float *att, float *attd, const float *q,
    const float *k, const float *v, const int32_t *mask,
    const struct dropout_key *drop, int B, int T, int C, int nh);
void attention_backward(float *dq, float *dk, float *dv, const float *dout,
    const float *att, const float *attd, const float *q, const float *k,
    const float *v, const struct dropout_key *drop, int B, int T, int C, int nh);

/* Softmax cross-entropy of logits (M,V) against targets (M) (all valid);
 * losses (M) gets each row's loss; returns their sum; when dlogits is not
 * NULL it gets (softmax - onehot) * dscale (overwritten, not added). */
double crossentropy_forward_backward(float *dlogits, double *losses,
    const float *logits, const int32_t *targets, int M, int V, float dscale);

/* out = a + b, element-wise. */
void residual_forward(float *out, const float *a, const float *b, int64_t n);

/* The thread pools: n (> 0) threads for OpenMP and OpenBLAS both; the
 * count in use; OpenBLAS's kernel family ("SkylakeX"), or "none" when
 * built without it (plain loops). */
void ops_set_threads(int n);
int ops_threads(void);
const char *ops_blas_core(void);

#endif
