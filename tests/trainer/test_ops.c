/* Finite-difference checks of every operation of the CPU trainer, and of
 * the whole model's loss with respect to a sample of its parameters.
 *
 * For each op, f = sum(out * R) with R fixed and random; the analytic
 * gradient comes from the op's backward with dout = R, the numerical one
 * from central differences (f(x + e) - f(x - e)) / 2e in fp32 with f summed
 * in double. Tolerance (docs/trainer.md): |num - ana| <= 1e-2 *
 * max(|num|, |ana|, 1e-1) with e = 1e-2 for the ops (1e-3 relative error
 * typical) and a looser 2e-2 with e = 1e-2 on the model's loss. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "ops.h"
#include "philox.h"
#include "xmalloc.h"
#include "expect.h"

static uint32_t rng_state = 12345;

static float
frand(void)
{
	/* xorshift32 in [-1, 1) */
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return (float)(rng_state >> 8) / 8388608.0f - 1.0f;
}

static float *
rnd(size_t n, float scale)
{
	float *x = xmalloc(n * sizeof *x);
	size_t i;

	for (i = 0; i < n; i++)
		x[i] = frand() * scale;
	return x;
}

static float *
zeros(size_t n)
{
	return xcalloc(n, sizeof(float));
}

static double
dot(const float *a, const float *b, size_t n)
{
	double s = 0.0;
	size_t i;

	for (i = 0; i < n; i++)
		s += (double)a[i] * b[i];
	return s;
}

typedef double (*fwd_fn)(void *ctx);

/* Compares ana[] against central differences of f over (a sample of) x. */
static void
check(const char *name, float *x, const float *ana, size_t n, fwd_fn f,
    void *ctx, float eps, double tol)
{
	double	worst = 0.0;
	size_t	i, step = n > 64 ? n / 64 : 1, worst_i = 0;

	for (i = 0; i < n; i += step) {
		float	 orig = x[i];
		double	 fp, fm, num, err;

		x[i] = orig + eps;
		fp = f(ctx);
		x[i] = orig - eps;
		fm = f(ctx);
		x[i] = orig;
		num = (fp - fm) / (2.0 * (double)eps);
		err = fabs(num - ana[i]) / fmax(fmax(fabs(num), fabs(ana[i])), 1e-1);
		if (err > worst) {
			worst = err;
			worst_i = i;
		}
	}
	printf("%-28s max rel err %.2e (element %zu)%s\n", name, worst, worst_i,
	    worst > tol ? "  FAIL" : "");
	if (worst > tol)
		expect_failures++;
}

/* ------------------------------------------------------------ matmul */
struct mm { int N, C, OC; float *inp, *w, *b, *out, *R; };

static double
mm_f(void *v)
{
	struct mm *c = v;

	matmul_forward(c->out, c->inp, c->w, c->b, c->N, c->C, c->OC);
	return dot(c->out, c->R, (size_t)c->N * c->OC);
}

static void
test_matmul(void)
{
	struct mm c = { 5, 7, 3, NULL, NULL, NULL, NULL, NULL };
	float *di, *dw, *db;

	c.inp = rnd(35, 1); c.w = rnd(21, 1); c.b = rnd(3, 1);
	c.out = zeros(15); c.R = rnd(15, 1);
	di = zeros(35); dw = zeros(21); db = zeros(3);
	matmul_backward(di, dw, db, c.R, c.inp, c.w, c.N, c.C, c.OC);
	check("matmul dinp", c.inp, di, 35, mm_f, &c, 1e-2f, 1e-2);
	check("matmul dw", c.w, dw, 21, mm_f, &c, 1e-2f, 1e-2);
	check("matmul db", c.b, db, 3, mm_f, &c, 1e-2f, 1e-2);
	free(c.inp); free(c.w); free(c.b); free(c.out); free(c.R);
	free(di); free(dw); free(db);
}

/* ------------------------------------------------------------ layernorm */
struct ln { int N, C; float *inp, *w, *b, *out, *mean, *rstd, *R; };

static double
ln_f(void *v)
{
	struct ln *c = v;

	layernorm_forward(c->out, c->mean, c->rstd, c->inp, c->w, c->b, c->N, c->C, 1e-12f);
	return dot(c->out, c->R, (size_t)c->N * c->C);
}

static void
test_layernorm(void)
{
	struct ln c = { 4, 9, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
	float *di, *dw, *db;

	c.inp = rnd(36, 2); c.w = rnd(9, 1); c.b = rnd(9, 1);
	c.out = zeros(36); c.mean = zeros(4); c.rstd = zeros(4); c.R = rnd(36, 1);
	di = zeros(36); dw = zeros(9); db = zeros(9);
	ln_f(&c);
	layernorm_backward(di, dw, db, c.R, c.inp, c.w, c.mean, c.rstd, c.N, c.C);
	check("layernorm dinp", c.inp, di, 36, ln_f, &c, 1e-2f, 1e-2);
	check("layernorm dw", c.w, dw, 9, ln_f, &c, 1e-2f, 1e-2);
	check("layernorm db", c.b, db, 9, ln_f, &c, 1e-2f, 1e-2);
	free(c.inp); free(c.w); free(c.b); free(c.out); free(c.mean);
	free(c.rstd); free(c.R); free(di); free(dw); free(db);
}

/* ------------------------------------------------------------ gelu, tanh */
struct ew { size_t n; float *inp, *out, *R; int is_tanh; };

static double
ew_f(void *v)
{
	struct ew *c = v;

	if (c->is_tanh)
		tanh_forward(c->out, c->inp, (int64_t)c->n);
	else
		gelu_forward(c->out, c->inp, (int64_t)c->n);
	return dot(c->out, c->R, c->n);
}

static void
test_elementwise(void)
{
	struct ew c = { 40, NULL, NULL, NULL, 0 };
	float *di;

	c.inp = rnd(40, 3); c.out = zeros(40); c.R = rnd(40, 1);
	di = zeros(40);
	gelu_backward(di, c.inp, c.R, 40);
	check("gelu", c.inp, di, 40, ew_f, &c, 1e-2f, 1e-2);
	c.is_tanh = 1;
	memset(di, 0, 40 * sizeof *di);
	ew_f(&c);
	tanh_backward(di, c.out, c.R, 40);
	check("tanh", c.inp, di, 40, ew_f, &c, 1e-2f, 1e-2);
	free(c.inp); free(c.out); free(c.R); free(di);
}

/* ------------------------------------------------------------ embeddings */
struct emb { int B, T, C, V; int32_t *ids, *types; float *wte, *wpe, *wtt, *out, *R; };

static double
emb_f(void *v)
{
	struct emb *c = v;

	embedding_forward(c->out, c->ids, c->types, c->wte, c->wpe, c->wtt, c->B, c->T, c->C);
	return dot(c->out, c->R, (size_t)c->B * c->T * c->C);
}

static void
test_embedding(void)
{
	struct emb c = { 2, 3, 4, 5, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
	int32_t ids[6] = { 1, 4, 1, 0, 2, 1 }, types[6] = { 0, 0, 1, 0, 1, 1 };
	float *dte, *dpe, *dtt;

	c.ids = ids; c.types = types;
	c.wte = rnd(20, 1); c.wpe = rnd(12, 1); c.wtt = rnd(8, 1);
	c.out = zeros(24); c.R = rnd(24, 1);
	dte = zeros(20); dpe = zeros(12); dtt = zeros(8);
	embedding_backward(dte, dpe, dtt, c.R, ids, types, 2, 3, 4, 5, 2);
	check("embedding dwte", c.wte, dte, 20, emb_f, &c, 1e-2f, 1e-2);
	check("embedding dwpe", c.wpe, dpe, 12, emb_f, &c, 1e-2f, 1e-2);
	check("embedding dwtt", c.wtt, dtt, 8, emb_f, &c, 1e-2f, 1e-2);
	free(c.wte); free(c.wpe); free(c.wtt); free(c.out); free(c.R);
	free(dte); free(dpe); free(dtt);
}

/* ------------------------------------------------------------ attention */
struct at { int B, T, C, nh; float *q, *k, *v, *out, *att, *attd, *R;
	int32_t *mask; struct dropout_key drop; };

static double
at_f(void *v)
{
	struct at *c = v;

	attention_forward(c->out, c->att, c->attd, c->q, c->k, c->v, c->mask,
	    &c->drop, c->B, c->T, c->C, c->nh);
	return dot(c->out, c->R, (size_t)c->B * c->T * c->C);
}

static void
test_attention(float p)
{
	struct at c = { 2, 5, 6, 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
		{ 7, 3, 1, DROPOUT_ATTN_PROBS, 0.0f } };
	int32_t mask[10] = { 1, 1, 1, 1, 1, 1, 1, 1, 0, 0 };
	size_t n = 60, na = 2 * 2 * 25;
	float *dq, *dk, *dv;

	c.drop.p = p;
	c.mask = mask;
	c.q = rnd(n, 1); c.k = rnd(n, 1); c.v = rnd(n, 1);
	c.out = zeros(n); c.att = zeros(na);
	c.attd = p > 0.0f ? zeros(na) : c.att;
	c.R = rnd(n, 1);
	dq = zeros(n); dk = zeros(n); dv = zeros(n);
	at_f(&c);
	attention_backward(dq, dk, dv, c.R, c.att, c.attd, c.q, c.k, c.v,
	    &c.drop, c.B, c.T, c.C, c.nh);
	check(p > 0 ? "attention+dropout dq" : "attention dq", c.q, dq, n, at_f, &c, 1e-2f, 1e-2);
	check(p > 0 ? "attention+dropout dk" : "attention dk", c.k, dk, n, at_f, &c, 1e-2f, 1e-2);
	check(p > 0 ? "attention+dropout dv" : "attention dv", c.v, dv, n, at_f, &c, 1e-2f, 1e-2);
	if (c.attd != c.att)
		free(c.attd);
	free(c.q); free(c.k); free(c.v); free(c.out); free(c.att); free(c.R);
	free(dq); free(dk); free(dv);
}

/* ------------------------------------------------------------ cross-entropy */
struct ce { int M, V; float *logits; int32_t *tg; double *losses; };

static double
ce_f(void *v)
{
	struct ce *c = v;

	return crossentropy_forward_backward(NULL, c->losses, c->logits, c->tg,
	    c->M, c->V, 1.0f);
}

static void
test_crossentropy(void)
{
	int32_t tg[3] = { 2, 0, 6 };
	struct ce c = { 3, 7, NULL, tg, NULL };
	float *d = zeros(21);

	c.logits = rnd(21, 3);
	c.losses = xcalloc(3, sizeof(double));
	crossentropy_forward_backward(d, c.losses, c.logits, tg, 3, 7, 1.0f);
	check("crossentropy", c.logits, d, 21, ce_f, &c, 1e-2f, 1e-2);
	free(c.logits); free(c.losses); free(d);
}

/* ------------------------------------------------------------ dropout */
static void
test_dropout(void)
{
	struct dropout_key k = { 42, 9, 3, DROPOUT_FFN_OUT, 0.25f };
	float *x = xmalloc(100000 * sizeof *x), *y = xmalloc(50 * sizeof *y);
	size_t i, kept = 0;

	for (i = 0; i < 100000; i++)
		x[i] = 1.0f;
	dropout_apply(&k, 0, x, 100000);
	for (i = 0; i < 100000; i++)
		kept += x[i] != 0.0f;
	/* keyed by element: a slice gives the same mask as the whole */
	for (i = 0; i < 50; i++)
		y[i] = 1.0f;
	dropout_apply(&k, 777, y, 50);
	for (i = 0; i < 50; i++)
		if (y[i] != x[777 + i])
			expect_failures++;
	printf("%-28s kept %.4f (expect 0.75), slice %s\n", "dropout",
	    kept / 100000.0, memcmp(y, x + 777, 50 * sizeof *y) ? "DIFFERS  FAIL" : "equal");
	if (fabs(kept / 100000.0 - 0.75) > 0.01)
		expect_failures++;
	free(x); free(y);
}

/* ------------------------------------------------------------ whole model */
struct whole { struct bert_model *m; struct bert_batch *b; };

static double
whole_f(void *v)
{
	struct whole *w = v;

	return bert_forward(w->m, w->b, 0, 1, 0.0f);
}

static void
test_model(enum bert_task task, int ckpt)
{
	struct bert_config c = { 2, 8, 2, 12, 11, 6, 2, 3, task, 1e-5f, 0.1f, 0.1f, NULL };
	struct bert_model m;
	int32_t ids[10] = { 1, 3, 5, 7, 0, 1, 9, 2, 4, 10 };
	int32_t types[10] = { 0, 0, 1, 1, 0, 0, 0, 1, 1, 1 };
	int32_t mask[10] = { 1, 1, 1, 1, 0, 1, 1, 1, 1, 1 };
	int32_t labels[10] = { -100, 4, -100, 2, -100, -100, 6, -100, -100, 1 };
	int32_t seq[2] = { 1, 0 };
	struct bert_batch b = { 2, 5, ids, types, mask, labels, seq };
	struct whole w = { &m, &b };
	float *ana;
	size_t t;
	char name[160];

	bert_model_init(&m, &c);
	m.grad_ckpt = ckpt;
	m.dropout_seed = 5;
	bert_init_weights(&m, 3, 0.5f, 1);
	bert_zero_grad(&m);
	bert_forward(&m, &b, 0, 1, 1.0f);
	bert_backward(&m, &b, 0, 1);
	ana = xmalloc(m.nparams * sizeof *ana);
	memcpy(ana, m.grads_mem, m.nparams * sizeof *ana);
	for (t = 0; t < m.ntensors; t++) {
		const struct param_info *pi = &m.table[t];

		snprintf(name, sizeof name, "model%s %s", ckpt ? "/ckpt" : "",
		    pi->name + (strncmp(pi->name, "bert.", 5) ? 0 : 5));
		check(name, m.params_mem + pi->offset, ana + pi->offset,
		    pi->numel, whole_f, &w, 1e-2f, 2e-2);
	}
	free(ana);
	bert_model_free(&m);
}

int
main(void)
{
	test_matmul();
	test_layernorm();
	test_elementwise();
	test_embedding();
	test_attention(0.0f);
	test_attention(0.3f);
	test_crossentropy();
	test_dropout();
	test_model(BERT_PRETRAIN, 0);
	test_model(BERT_CLASSIFY, 1);
	return expect_summary("test_ops");
}
