#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "model.h"
#include "ops.h"
#include "xmalloc.h"

/* Saved by one layer's forward for its backward. N = B*T. */
struct layer_acts {
	float *q, *k, *v;		/* (N,H) */
	float *att, *attd;		/* (B,nh,T,T); attd == att without dropout */
	float *ctx;			/* (N,H) attention output before its projection */
	float *r1, *mean1, *rstd1;	/* (N,H) residual sum, (N), (N) */
	float *h1;			/* (N,H) after the attention LayerNorm */
	float *i, *g;			/* (N,I) before and after GELU */
	float *r2, *mean2, *rstd2;	/* (N,H), (N), (N) */
};

static const struct {
	const char	*name;
	int		 L, H, A, I;
} presets[] = {
	{ "bert-tiny", 2, 128, 2, 512 },
	{ "bert-mini", 4, 256, 4, 1024 },
	{ "bert-small", 4, 512, 8, 2048 },
	{ "bert-medium", 8, 512, 8, 2048 },
	{ "bert-base", 12, 768, 12, 3072 },
	{ "bert-large", 24, 1024, 16, 4096 },
};

const char *const bert_preset_names[] = { "bert-tiny", "bert-mini",
	"bert-small", "bert-medium", "bert-base", "bert-large", NULL };

int
bert_config_preset(const char *name, struct bert_config *c)
{
	size_t i;

	for (i = 0; i < sizeof presets / sizeof presets[0]; i++) {
		if (strcmp(presets[i].name, name) != 0)
			continue;
		memset(c, 0, sizeof *c);
		c->layers = presets[i].L;
		c->hidden = presets[i].H;
		c->heads = presets[i].A;
		c->intermediate = presets[i].I;
		c->vocab = 30522;
		c->max_position = 512;
		c->type_vocab = 2;
		c->num_labels = 2;
		c->task = BERT_PRETRAIN;
		c->ln_eps = 1e-12f;
		c->hidden_dropout = 0.1f;
		c->attn_dropout = 0.1f;
		return 0;
	}
	return CADRE_ERR_NOT_FOUND;
}

int
bert_config_check(const struct bert_config *c, char *err, size_t errlen)
{
#define BAD(...) do { snprintf(err, errlen, __VA_ARGS__); return CADRE_ERR_INVALID; } while (0)
	if (c->layers < 1 || c->layers > 256)
		BAD("layers (%d) must be in 1..256", c->layers);
	if (c->hidden < 1 || c->hidden > 65536)
		BAD("hidden (%d) must be in 1..65536", c->hidden);
	if (c->heads < 1 || c->heads > c->hidden)
		BAD("heads (%d) must be in 1..hidden (%d)", c->heads, c->hidden);
	if (c->hidden % c->heads != 0)
		BAD("heads (%d) do not divide hidden (%d): each head needs hidden/heads dimensions",
		    c->heads, c->hidden);
	if (c->intermediate < 1 || c->intermediate > 262144)
		BAD("intermediate (%d) must be in 1..262144", c->intermediate);
	if (c->vocab < 1 || c->vocab > 4194304)
		BAD("vocab_size (%d) must be in 1..4194304", c->vocab);
	if (c->max_position < 1 || c->max_position > 65536)
		BAD("max_position (%d) must be in 1..65536", c->max_position);
	if (c->type_vocab < 1 || c->type_vocab > 1024)
		BAD("type_vocab_size (%d) must be in 1..1024", c->type_vocab);
	if (c->task == BERT_CLASSIFY && (c->num_labels < 2 || c->num_labels > 65536))
		BAD("num_labels (%d) must be in 2..65536", c->num_labels);
	if (!(c->hidden_dropout >= 0.0f && c->hidden_dropout < 1.0f) ||
	    !(c->attn_dropout >= 0.0f && c->attn_dropout < 1.0f))
		BAD("dropout probabilities must be in [0, 1)");
	return 0;
#undef BAD
}

/* ---------------------------------------------------------------- the table */

typedef void (*param_cb)(void *ctx, const char *name, int rows, int cols,
    float **slot);

/* Visits every parameter in the order of the one allocation. cols 0 means
 * a vector of rows elements. The order is Hugging Face's state_dict order. */
static void
bert_walk(const struct bert_config *c, struct bert_params *p, param_cb cb,
    void *ctx)
{
	char	name[96];
	int	H = c->hidden, I = c->intermediate, l;

	cb(ctx, "bert.embeddings.word_embeddings.weight", c->vocab, H, &p->wte);
	cb(ctx, "bert.embeddings.position_embeddings.weight", c->max_position, H, &p->wpe);
	cb(ctx, "bert.embeddings.token_type_embeddings.weight", c->type_vocab, H, &p->wtt);
	cb(ctx, "bert.embeddings.LayerNorm.weight", H, 0, &p->eln_w);
	cb(ctx, "bert.embeddings.LayerNorm.bias", H, 0, &p->eln_b);
	for (l = 0; l < c->layers; l++) {
		struct bert_layer_params *y = &p->layer[l];
#define P(suffix, r, cc, field) do { \
		snprintf(name, sizeof name, "bert.encoder.layer.%d.%s", l, suffix); \
		cb(ctx, name, r, cc, &y->field); \
	} while (0)
		P("attention.self.query.weight", H, H, qw);
		P("attention.self.query.bias", H, 0, qb);
		P("attention.self.key.weight", H, H, kw);
		P("attention.self.key.bias", H, 0, kb);
		P("attention.self.value.weight", H, H, vw);
		P("attention.self.value.bias", H, 0, vb);
		P("attention.output.dense.weight", H, H, aow);
		P("attention.output.dense.bias", H, 0, aob);
		P("attention.output.LayerNorm.weight", H, 0, aln_w);
		P("attention.output.LayerNorm.bias", H, 0, aln_b);
		P("intermediate.dense.weight", I, H, iw);
		P("intermediate.dense.bias", I, 0, ib);
		P("output.dense.weight", H, I, ow);
		P("output.dense.bias", H, 0, ob);
		P("output.LayerNorm.weight", H, 0, oln_w);
		P("output.LayerNorm.bias", H, 0, oln_b);
#undef P
	}
	cb(ctx, "bert.pooler.dense.weight", H, H, &p->pool_w);
	cb(ctx, "bert.pooler.dense.bias", H, 0, &p->pool_b);
	if (c->task == BERT_PRETRAIN) {
		cb(ctx, "cls.predictions.bias", c->vocab, 0, &p->dec_b);
		cb(ctx, "cls.predictions.transform.dense.weight", H, H, &p->tr_w);
		cb(ctx, "cls.predictions.transform.dense.bias", H, 0, &p->tr_b);
		cb(ctx, "cls.predictions.transform.LayerNorm.weight", H, 0, &p->tr_ln_w);
		cb(ctx, "cls.predictions.transform.LayerNorm.bias", H, 0, &p->tr_ln_b);
		cb(ctx, "cls.seq_relationship.weight", 2, H, &p->nsp_w);
		cb(ctx, "cls.seq_relationship.bias", 2, 0, &p->nsp_b);
	} else {
		cb(ctx, "classifier.weight", c->num_labels, H, &p->cls_w);
		cb(ctx, "classifier.bias", c->num_labels, 0, &p->cls_b);
	}
}

struct table_ctx {
	struct param_info	*t;
	size_t			 n, cap, off;
};

static void
table_add(void *vctx, const char *name, int rows, int cols, float **slot)
{
	struct table_ctx	*tc = vctx;
	struct param_info	*pi;

	(void)slot;
	if (tc->n == tc->cap) {
		tc->cap = tc->cap ? tc->cap * 2 : 64;
		tc->t = xreallocarray(tc->t, tc->cap, sizeof *tc->t);
	}
	pi = &tc->t[tc->n++];
	memset(pi, 0, sizeof *pi);
	snprintf(pi->name, sizeof pi->name, "%s", name);
	pi->ndim = cols ? 2 : 1;
	pi->shape[0] = rows;
	pi->shape[1] = cols;
	pi->numel = (size_t)rows * (size_t)(cols ? cols : 1);
	pi->offset = tc->off;
	/* No weight decay (nor LAMB trust ratio) on biases and LayerNorm. */
	pi->decay = strstr(name, "bias") == NULL && strstr(name, "LayerNorm") == NULL;
	tc->off += pi->numel;
}

struct point_ctx {
	const struct param_info	*t;
	size_t			 i;
	float			*base;
};

static void
point_at(void *vctx, const char *name, int rows, int cols, float **slot)
{
	struct point_ctx *pc = vctx;

	(void)name;
	(void)rows;
	(void)cols;
	*slot = pc->base + pc->t[pc->i++].offset;
}

void
bert_model_init(struct bert_model *m, const struct bert_config *c)
{
	struct table_ctx	tc = { 0 };
	struct point_ctx	pc;
	struct bert_params	dummy;

	memset(m, 0, sizeof *m);
	m->cfg = *c;
	dummy.layer = xcalloc((size_t)c->layers, sizeof *dummy.layer);
	bert_walk(c, &dummy, table_add, &tc);
	free(dummy.layer);
	m->table = tc.t;
	m->ntensors = tc.n;
	m->nparams = tc.off;
	m->params_mem = xcalloc(m->nparams, sizeof(float));
	m->grads_mem = xcalloc(m->nparams, sizeof(float));
	m->p.layer = xcalloc((size_t)c->layers, sizeof *m->p.layer);
	m->g.layer = xcalloc((size_t)c->layers, sizeof *m->g.layer);
	pc = (struct point_ctx){ m->table, 0, m->params_mem };
	bert_walk(c, &m->p, point_at, &pc);
	pc = (struct point_ctx){ m->table, 0, m->grads_mem };
	bert_walk(c, &m->g, point_at, &pc);
}

static void acts_free(struct bert_acts *a, int L);

void
bert_model_free(struct bert_model *m)
{
	acts_free(&m->a, m->cfg.layers);
	free(m->table);
	free(m->params_mem);
	free(m->grads_mem);
	free(m->p.layer);
	free(m->g.layer);
	memset(m, 0, sizeof *m);
}

const struct param_info *
bert_find_param(const struct bert_model *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->ntensors; i++)
		if (strcmp(m->table[i].name, name) == 0)
			return &m->table[i];
	return NULL;
}

void
bert_zero_grad(struct bert_model *m)
{
	memset(m->grads_mem, 0, m->nparams * sizeof(float));
}

/* Standard normal from two Philox words (Box-Muller). */
static float
normal_from(uint32_t a, uint32_t b)
{
	double u1 = ((double)(a >> 8) + 1.0) / 16777217.0;	/* (0, 1] */
	double u2 = (double)(b >> 8) / 16777216.0;

	return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

void
bert_init_weights(struct bert_model *m, uint64_t seed, float std, int random_all)
{
	const uint32_t	key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };
	size_t		t;

	for (t = 0; t < m->ntensors; t++) {
		const struct param_info *pi = &m->table[t];
		float	*w = m->params_mem + pi->offset;
		int	 is_ln = strstr(pi->name, "LayerNorm") != NULL;
		int	 is_bias = strstr(pi->name, "bias") != NULL;
		int64_t	 i;

#pragma omp parallel for schedule(static)
		for (i = 0; i < (int64_t)pi->numel; i++) {
			uint32_t ctr[4] = { (uint32_t)i, (uint32_t)((uint64_t)i >> 32),
			    (uint32_t)t, 0x1417u };
			uint32_t r[4];
			float z;

			philox4x32_10(ctr, key, r);
			z = normal_from(r[0], r[1]);
			if (is_ln && !is_bias)
				w[i] = random_all ? 1.0f + 0.1f * z : 1.0f;
			else if (is_ln || is_bias)
				w[i] = random_all ? std * z : 0.0f;
			else
				w[i] = std * z;
		}
	}
}

/* ---------------------------------------------------------------- activations */

static void
la_alloc(struct layer_acts *A, const struct bert_config *c, int B, int T,
    size_t *bytes)
{
	size_t N = (size_t)B * T, H = (size_t)c->hidden, I = (size_t)c->intermediate;
	size_t att = (size_t)B * c->heads * T * T;

	A->q = xmalloc(N * H * sizeof(float));
	A->k = xmalloc(N * H * sizeof(float));
	A->v = xmalloc(N * H * sizeof(float));
	A->att = xmalloc(att * sizeof(float));
	A->attd = c->attn_dropout > 0.0f ? xmalloc(att * sizeof(float)) : A->att;
	A->ctx = xmalloc(N * H * sizeof(float));
	A->r1 = xmalloc(N * H * sizeof(float));
	A->mean1 = xmalloc(N * sizeof(float));
	A->rstd1 = xmalloc(N * sizeof(float));
	A->h1 = xmalloc(N * H * sizeof(float));
	A->i = xmalloc(N * I * sizeof(float));
	A->g = xmalloc(N * I * sizeof(float));
	A->r2 = xmalloc(N * H * sizeof(float));
	A->mean2 = xmalloc(N * sizeof(float));
	A->rstd2 = xmalloc(N * sizeof(float));
	*bytes += (N * H * 7 + N * I * 2 + N * 4 +
	    att * (A->attd != A->att ? 2 : 1)) * sizeof(float);
}

static void
la_free(struct layer_acts *A)
{
	if (A->attd != A->att)
		free(A->attd);
	free(A->q); free(A->k); free(A->v); free(A->att); free(A->ctx);
	free(A->r1); free(A->mean1); free(A->rstd1); free(A->h1);
	free(A->i); free(A->g); free(A->r2); free(A->mean2); free(A->rstd2);
}

static void
acts_free(struct bert_acts *a, int L)
{
	int l;

	if (a->x == NULL)
		return;
	for (l = 0; l <= L; l++)
		free(a->x[l]);
	free(a->x);
	for (l = 0; l < a->nla; l++)
		la_free(&a->la[l]);
	free(a->la);
	free(a->emb); free(a->emb_mean); free(a->emb_rstd); free(a->emb_ln);
	free(a->pin); free(a->pool_pre); free(a->pooled); free(a->pooled_d);
	free(a->seq_logits); free(a->dseq_logits);
	free(a->mpos); free(a->mtarget);
	free(a->hm); free(a->t); free(a->tg); free(a->tl); free(a->tmean); free(a->trstd);
	free(a->mlm_logits); free(a->dmlm_logits); free(a->losses);
	free(a->dxa); free(a->dxb); free(a->dr); free(a->dh1); free(a->dctx);
	free(a->dq); free(a->dk); free(a->dv); free(a->di); free(a->dg);
	free(a->dM1); free(a->dM2); free(a->dM3);
	free(a->dB1); free(a->dB2); free(a->dB3); free(a->demb);
	memset(a, 0, sizeof *a);
}

#define FALLOC(n) xmalloc((size_t)(n) * sizeof(float))

/* Allocates activations for B x T (once per shape), and MLM buffers for
 * M masked positions (grown on demand). */
static void
acts_prepare(struct bert_model *m, int B, int T, int M)
{
	struct bert_acts	 *a = &m->a;
	const struct bert_config *c = &m->cfg;
	size_t			  N = (size_t)B * T, H = (size_t)c->hidden;
	size_t			  I = (size_t)c->intermediate;
	int			  l, C = c->task == BERT_PRETRAIN ? 2 : c->num_labels;

	if (a->x != NULL && (a->B != B || a->T != T))
		acts_free(a, c->layers);
	if (a->x == NULL) {
		a->B = B;
		a->T = T;
		a->bytes = 0;
		a->emb = FALLOC(N * H);
		a->emb_mean = FALLOC(N);
		a->emb_rstd = FALLOC(N);
		a->emb_ln = FALLOC(N * H);
		a->x = xcalloc((size_t)c->layers + 1, sizeof *a->x);
		for (l = 0; l <= c->layers; l++)
			a->x[l] = FALLOC(N * H);
		a->bytes += (N * H * (3 + (size_t)c->layers) + 2 * N) * sizeof(float);
		a->nla = m->grad_ckpt ? 1 : c->layers;
		a->la = xcalloc((size_t)a->nla, sizeof *a->la);
		for (l = 0; l < a->nla; l++)
			la_alloc(&a->la[l], c, B, T, &a->bytes);
		a->pin = FALLOC(B * H);
		a->pool_pre = FALLOC(B * H);
		a->pooled = FALLOC(B * H);
		a->pooled_d = FALLOC(B * H);
		a->seq_logits = FALLOC(B * C);
		a->dseq_logits = FALLOC(B * C);
		a->mpos = xcalloc(N, sizeof *a->mpos);
		a->mtarget = xcalloc(N, sizeof *a->mtarget);
		a->losses = xcalloc(N + (size_t)B, sizeof *a->losses);
		a->dxa = FALLOC(N * H);
		a->dxb = FALLOC(N * H);
		a->dr = FALLOC(N * H);
		a->dh1 = FALLOC(N * H);
		a->dctx = FALLOC(N * H);
		a->dq = FALLOC(N * H);
		a->dk = FALLOC(N * H);
		a->dv = FALLOC(N * H);
		a->demb = FALLOC(N * H);
		a->di = FALLOC(N * I);
		a->dg = FALLOC(N * I);
		a->dB1 = FALLOC(B * H);
		a->dB2 = FALLOC(B * H);
		a->dB3 = FALLOC(B * H);
		a->bytes += (N * H * 9 + N * I * 2 +
		    (size_t)B * H * 7 + (size_t)B * C * 2) * sizeof(float);
		a->M_cap = 0;
	}
	if (M > a->M_cap) {
		size_t Mc = (size_t)M, V = (size_t)c->vocab;

		free(a->hm); free(a->t); free(a->tg); free(a->tl);
		free(a->tmean); free(a->trstd);
		free(a->mlm_logits); free(a->dmlm_logits);
		free(a->dM1); free(a->dM2); free(a->dM3);
		a->hm = FALLOC(Mc * H);
		a->t = FALLOC(Mc * H);
		a->tg = FALLOC(Mc * H);
		a->tl = FALLOC(Mc * H);
		a->tmean = FALLOC(Mc);
		a->trstd = FALLOC(Mc);
		a->mlm_logits = FALLOC(Mc * V);
		a->dmlm_logits = FALLOC(Mc * V);
		a->dM1 = FALLOC(Mc * H);
		a->dM2 = FALLOC(Mc * H);
		a->dM3 = FALLOC(Mc * H);
		a->bytes += (Mc * H * 7 + Mc * 2 + Mc * V * 2) * sizeof(float);
		a->M_cap = M;
	}
}

static struct dropout_key
dkey(const struct bert_model *m, uint64_t step, int layer, int tensor, float p,
    int train)
{
	struct dropout_key k;

	k.seed = m->dropout_seed;
	k.step = step;
	k.layer = (uint32_t)layer;
	k.tensor = (uint32_t)tensor;
	k.p = train ? p : 0.0f;
	return k;
}

/* ---------------------------------------------------------------- forward */

static void
layer_forward(const struct bert_model *m, int l, struct layer_acts *A,
    const float *x, float *out, const int32_t *mask, int B, int T,
    uint64_t step, int train)
{
	const struct bert_config	*c = &m->cfg;
	const struct bert_layer_params	*w = &m->p.layer[l];
	struct dropout_key		 kp, ka, kf;
	int				 N = B * T, H = c->hidden, I = c->intermediate;

	kp = dkey(m, step, l, DROPOUT_ATTN_PROBS, c->attn_dropout, train);
	ka = dkey(m, step, l, DROPOUT_ATTN_OUT, c->hidden_dropout, train);
	kf = dkey(m, step, l, DROPOUT_FFN_OUT, c->hidden_dropout, train);

	matmul_forward(A->q, x, w->qw, w->qb, N, H, H);
	matmul_forward(A->k, x, w->kw, w->kb, N, H, H);
	matmul_forward(A->v, x, w->vw, w->vb, N, H, H);
	/* attd must not alias att when dropout is on: see la_alloc */
	attention_forward(A->ctx, A->att, kp.p > 0.0f ? A->attd : A->att,
	    A->q, A->k, A->v, mask, &kp, B, T, H, c->heads);
	matmul_forward(A->r1, A->ctx, w->aow, w->aob, N, H, H);
	dropout_apply(&ka, 0, A->r1, (uint64_t)N * H);
	residual_forward(A->r1, A->r1, x, (int64_t)N * H);
	layernorm_forward(A->h1, A->mean1, A->rstd1, A->r1, w->aln_w, w->aln_b,
	    N, H, c->ln_eps);
	matmul_forward(A->i, A->h1, w->iw, w->ib, N, H, I);
	gelu_forward(A->g, A->i, (int64_t)N * I);
	matmul_forward(A->r2, A->g, w->ow, w->ob, N, I, H);
	dropout_apply(&kf, 0, A->r2, (uint64_t)N * H);
	residual_forward(A->r2, A->r2, A->h1, (int64_t)N * H);
	layernorm_forward(out, A->mean2, A->rstd2, A->r2, w->oln_w, w->oln_b,
	    N, H, c->ln_eps);
}

/*
 * The forward of both entry points. With per_batch the losses' gradients
 * are dscale_mlm / M and dscale_seq / B (a mean over this micro-batch),
 * else dscale_mlm and dscale_seq per position and sequence as given (a
 * mean over a larger batch whose counts the caller knows). The division
 * stays where it was so that bert_forward's bits do not change.
 */
static float
forward_impl(struct bert_model *m, const struct bert_batch *b, uint64_t step,
    int train, int keep, int per_batch, float dscale_mlm, float dscale_seq)
{
	const struct bert_config	*c = &m->cfg;
	struct bert_acts		*a = &m->a;
	const struct bert_params	*p = &m->p;
	int				 B = b->B, T = b->T, N = B * T, H = c->hidden;
	int				 M = 0, l, i, C;
	struct dropout_key		 k;
	double				 sum;

	if (c->task == BERT_PRETRAIN)
		for (i = 0; i < N; i++)
			M += b->labels[i] != -100;
	acts_prepare(m, B, T, M);
	a->M = M;

	embedding_forward(a->emb, b->ids, b->types, p->wte, p->wpe, p->wtt, B, T, H);
	layernorm_forward(a->emb_ln, a->emb_mean, a->emb_rstd, a->emb, p->eln_w,
	    p->eln_b, N, H, c->ln_eps);
	memcpy(a->x[0], a->emb_ln, (size_t)N * H * sizeof(float));
	k = dkey(m, step, 0, DROPOUT_EMBEDDINGS, c->hidden_dropout, train);
	dropout_apply(&k, 0, a->x[0], (uint64_t)N * H);

	for (l = 0; l < c->layers; l++)
		layer_forward(m, l, &a->la[m->grad_ckpt ? 0 : l], a->x[l], a->x[l + 1],
		    b->mask, B, T, step, train);

	/* pooler: the first token of every sequence */
	for (i = 0; i < B; i++)
		memcpy(a->pin + (size_t)i * H, a->x[c->layers] + (size_t)i * T * H,
		    (size_t)H * sizeof(float));
	matmul_forward(a->pool_pre, a->pin, p->pool_w, p->pool_b, B, H, H);
	tanh_forward(a->pooled, a->pool_pre, (int64_t)B * H);

	if (c->task == BERT_PRETRAIN) {
		const float *xl = a->x[c->layers];

		C = 2;
		matmul_forward(a->seq_logits, a->pooled, p->nsp_w, p->nsp_b, B, H, 2);
		/* The MLM head on the labelled positions only. */
		M = 0;
		for (i = 0; i < N; i++) {
			if (b->labels[i] == -100)
				continue;
			a->mpos[M] = i;
			a->mtarget[M] = b->labels[i];
			memcpy(a->hm + (size_t)M * H, xl + (size_t)i * H,
			    (size_t)H * sizeof(float));
			M++;
		}
		if (M > 0) {
			matmul_forward(a->t, a->hm, p->tr_w, p->tr_b, M, H, H);
			gelu_forward(a->tg, a->t, (int64_t)M * H);
			layernorm_forward(a->tl, a->tmean, a->trstd, a->tg,
			    p->tr_ln_w, p->tr_ln_b, M, H, c->ln_eps);
			matmul_forward(a->mlm_logits, a->tl, p->wte, p->dec_b,
			    M, H, c->vocab);
			sum = crossentropy_forward_backward(
			    keep ? a->dmlm_logits : NULL, a->losses,
			    a->mlm_logits, a->mtarget, M, c->vocab,
			    per_batch ? dscale_mlm / (float)M : dscale_mlm);
			m->mlm_sum = sum;
			m->mlm_loss = (float)(sum / M);
		} else {
			m->mlm_sum = 0.0;
			m->mlm_loss = 0.0f;
		}
	} else {
		C = c->num_labels;
		memcpy(a->pooled_d, a->pooled, (size_t)B * H * sizeof(float));
		k = dkey(m, step, c->layers, DROPOUT_CLASSIFIER, c->hidden_dropout, train);
		dropout_apply(&k, 0, a->pooled_d, (uint64_t)B * H);
		matmul_forward(a->seq_logits, a->pooled_d, p->cls_w, p->cls_b, B, H, C);
		m->mlm_sum = 0.0;
		m->mlm_loss = 0.0f;
	}
	sum = crossentropy_forward_backward(
	    keep ? a->dseq_logits : NULL, a->losses, a->seq_logits,
	    b->seq_labels, B, C, per_batch ? dscale_seq / (float)B : dscale_seq);
	m->seq_sum = sum;
	m->seq_loss = (float)(sum / B);
	m->loss = m->mlm_loss + m->seq_loss;
	return m->loss;
}

float
bert_forward(struct bert_model *m, const struct bert_batch *b,
    uint64_t step, int train, float grad_scale)
{
	return forward_impl(m, b, step, train, grad_scale != 0.0f, 1, grad_scale,
	    grad_scale);
}

float
bert_forward_scaled(struct bert_model *m, const struct bert_batch *b,
    uint64_t step, int train, float mlm_scale, float seq_scale)
{
	return forward_impl(m, b, step, train, 1, 0, mlm_scale, seq_scale);
}

/* ---------------------------------------------------------------- backward */

#define ZERO(p, n) memset((p), 0, (size_t)(n) * sizeof(float))

/* dx = d(loss)/d(x) from dout = d(loss)/d(out) for layer l. */
static void
layer_backward(struct bert_model *m, int l, const struct layer_acts *A,
    const float *x, const float *dout, float *dx, const int32_t *mask,
    int B, int T, uint64_t step, int train)
{
	const struct bert_config	*c = &m->cfg;
	const struct bert_layer_params	*w = &m->p.layer[l];
	struct bert_layer_params	*gw = &m->g.layer[l];
	struct bert_acts		*a = &m->a;
	struct dropout_key		 kp, ka, kf;
	int				 N = B * T, H = c->hidden, I = c->intermediate;
	size_t				 NH = (size_t)N * H;

	(void)mask;
	kp = dkey(m, step, l, DROPOUT_ATTN_PROBS, c->attn_dropout, train);
	ka = dkey(m, step, l, DROPOUT_ATTN_OUT, c->hidden_dropout, train);
	kf = dkey(m, step, l, DROPOUT_FFN_OUT, c->hidden_dropout, train);

	/* out = LN(r2), r2 = drop(g Wo^T + bo) + h1 */
	ZERO(a->dr, NH);
	layernorm_backward(a->dr, gw->oln_w, gw->oln_b, dout, A->r2, w->oln_w,
	    A->mean2, A->rstd2, N, H);
	memcpy(a->dh1, a->dr, NH * sizeof(float));
	dropout_apply(&kf, 0, a->dr, NH);
	ZERO(a->dg, (size_t)N * I);
	matmul_backward(a->dg, gw->ow, gw->ob, a->dr, A->g, w->ow, N, I, H);
	ZERO(a->di, (size_t)N * I);
	gelu_backward(a->di, A->i, a->dg, (int64_t)N * I);
	matmul_backward(a->dh1, gw->iw, gw->ib, a->di, A->h1, w->iw, N, H, I);
	/* h1 = LN(r1), r1 = drop(ctx Wao^T + bao) + x */
	ZERO(a->dr, NH);
	layernorm_backward(a->dr, gw->aln_w, gw->aln_b, a->dh1, A->r1, w->aln_w,
	    A->mean1, A->rstd1, N, H);
	memcpy(dx, a->dr, NH * sizeof(float));
	dropout_apply(&ka, 0, a->dr, NH);
	ZERO(a->dctx, NH);
	matmul_backward(a->dctx, gw->aow, gw->aob, a->dr, A->ctx, w->aow, N, H, H);
	ZERO(a->dq, NH);
	ZERO(a->dk, NH);
	ZERO(a->dv, NH);
	attention_backward(a->dq, a->dk, a->dv, a->dctx, A->att,
	    kp.p > 0.0f ? A->attd : A->att, A->q, A->k, A->v, &kp, B, T, H,
	    c->heads);
	matmul_backward(dx, gw->qw, gw->qb, a->dq, x, w->qw, N, H, H);
	matmul_backward(dx, gw->kw, gw->kb, a->dk, x, w->kw, N, H, H);
	matmul_backward(dx, gw->vw, gw->vb, a->dv, x, w->vw, N, H, H);
}

void
bert_backward(struct bert_model *m, const struct bert_batch *b,
    uint64_t step, int train)
{
	const struct bert_config	*c = &m->cfg;
	struct bert_acts		*a = &m->a;
	const struct bert_params	*p = &m->p;
	struct bert_params		*g = &m->g;
	int				 B = b->B, T = b->T, N = B * T, H = c->hidden;
	int				 M = a->M, i, l;
	size_t				 NH = (size_t)N * H;
	struct dropout_key		 k;
	float				*tmp;

	ZERO(a->dxa, NH);
	/* heads -> d(x[L]) in dxa */
	if (c->task == BERT_PRETRAIN && M > 0) {
		ZERO(a->dM1, (size_t)M * H);
		matmul_backward(a->dM1, g->wte, g->dec_b, a->dmlm_logits, a->tl,
		    p->wte, M, H, c->vocab);
		ZERO(a->dM2, (size_t)M * H);
		layernorm_backward(a->dM2, g->tr_ln_w, g->tr_ln_b, a->dM1, a->tg,
		    p->tr_ln_w, a->tmean, a->trstd, M, H);
		ZERO(a->dM3, (size_t)M * H);
		gelu_backward(a->dM3, a->t, a->dM2, (int64_t)M * H);
		ZERO(a->dM1, (size_t)M * H);
		matmul_backward(a->dM1, g->tr_w, g->tr_b, a->dM3, a->hm, p->tr_w,
		    M, H, H);
		for (i = 0; i < M; i++) {
			float *d = a->dxa + (size_t)a->mpos[i] * H;
			const float *s = a->dM1 + (size_t)i * H;
			int j;

			for (j = 0; j < H; j++)
				d[j] += s[j];
		}
	}
	ZERO(a->dB1, (size_t)B * H);
	if (c->task == BERT_PRETRAIN) {
		matmul_backward(a->dB1, g->nsp_w, g->nsp_b, a->dseq_logits,
		    a->pooled, p->nsp_w, B, H, 2);
	} else {
		matmul_backward(a->dB1, g->cls_w, g->cls_b, a->dseq_logits,
		    a->pooled_d, p->cls_w, B, H, c->num_labels);
		k = dkey(m, step, c->layers, DROPOUT_CLASSIFIER, c->hidden_dropout, train);
		dropout_apply(&k, 0, a->dB1, (uint64_t)B * H);
	}
	ZERO(a->dB2, (size_t)B * H);
	tanh_backward(a->dB2, a->pooled, a->dB1, (int64_t)B * H);
	ZERO(a->dB3, (size_t)B * H);
	matmul_backward(a->dB3, g->pool_w, g->pool_b, a->dB2, a->pin, p->pool_w,
	    B, H, H);
	for (i = 0; i < B; i++) {
		float *d = a->dxa + (size_t)i * T * H;
		int j;

		for (j = 0; j < H; j++)
			d[j] += a->dB3[(size_t)i * H + j];
	}

	for (l = c->layers - 1; l >= 0; l--) {
		const struct layer_acts *A = &a->la[m->grad_ckpt ? 0 : l];

		/* Checkpointing: recompute this layer from its saved input;
		 * the same calls on the same inputs give the same bits. */
		if (m->grad_ckpt)
			layer_forward(m, l, &a->la[0], a->x[l], a->x[l + 1],
			    b->mask, B, T, step, train);
		layer_backward(m, l, A, a->x[l], a->dxa, a->dxb, b->mask, B, T,
		    step, train);
		tmp = a->dxa;
		a->dxa = a->dxb;
		a->dxb = tmp;
	}

	k = dkey(m, step, 0, DROPOUT_EMBEDDINGS, c->hidden_dropout, train);
	dropout_apply(&k, 0, a->dxa, NH);
	ZERO(a->demb, NH);
	layernorm_backward(a->demb, g->eln_w, g->eln_b, a->dxa, a->emb, p->eln_w,
	    a->emb_mean, a->emb_rstd, N, H);
	embedding_backward(g->wte, g->wpe, g->wtt, a->demb, b->ids, b->types,
	    B, T, H, c->vocab, c->type_vocab);
}
