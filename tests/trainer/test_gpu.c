/*
 * With --host: only the checks that need no GPU (the dropout masks).
 * The fp32 CUDA path against the CPU reference (model.c, optim.c) on the
 * same weights and batch, dropout 0.1 (the GPU draws the CPU's Philox
 * masks): every parameter's gradient within 1e-4 of the largest value of
 * its tensor (the measure of tests/trainer/reference.sh), the losses, and
 * the weights after an AdamW and a LAMB step. bert-tiny, bert-mini and
 * bert-base, pretraining and classification. Exits 77 without a CUDA
 * device.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "model.h"
#include "optim.h"
#include "xmalloc.h"

static int failures;

static void
check(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "PASS" : "FAIL", what);
	if (!ok)
		failures++;
}

/* A batch of B x T: random tokens after [CLS]=2, padding at the end of
 * every other sequence, a second segment, ~15% labelled. */
struct tbatch {
	int32_t *ids, *types, *mask, *labels, *seq;
};

static void
make_batch(struct tbatch *tb, struct bert_batch *b, int B, int T, int V, int C,
    uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 12345u;
	int i, t;

	tb->ids = xcalloc((size_t)B * T, 4);
	tb->types = xcalloc((size_t)B * T, 4);
	tb->mask = xcalloc((size_t)B * T, 4);
	tb->labels = xcalloc((size_t)B * T, 4);
	tb->seq = xcalloc((size_t)B, 4);
#define NEXT() (x = x * 1664525u + 1013904223u, x >> 8)
	for (i = 0; i < B; i++) {
		int len = i % 2 ? T - 1 - (int)(NEXT() % (unsigned)(T / 3)) : T;

		tb->seq[i] = (int32_t)(NEXT() % (unsigned)C);
		for (t = 0; t < T; t++) {
			size_t k = (size_t)i * T + t;

			tb->ids[k] = t == 0 ? 2 % V : (int32_t)(NEXT() % (unsigned)V);
			tb->types[k] = t >= len / 2;
			tb->mask[k] = t < len;
			tb->labels[k] = -100;
			if (t > 0 && t < len && NEXT() % 100 < 15)
				tb->labels[k] = (int32_t)(NEXT() % (unsigned)V);
		}
	}
#undef NEXT
	b->B = B;
	b->T = T;
	b->ids = tb->ids;
	b->types = tb->types;
	b->mask = tb->mask;
	b->labels = tb->labels;
	b->seq_labels = tb->seq;
}

static void
free_batch(struct tbatch *tb)
{
	free(tb->ids); free(tb->types); free(tb->mask); free(tb->labels); free(tb->seq);
}

/* The worst over the tensors of max|a - b| / max(max|b|, 1e-5). */
static double
worst_err(const struct bert_model *m, const float *a, const float *b,
    const char **name)
{
	double worst = 0.0;
	size_t t, i;

	*name = "none";
	for (t = 0; t < m->ntensors; t++) {
		const struct param_info *pi = &m->table[t];
		double mx = 0.0, d = 0.0, e;

		for (i = 0; i < pi->numel; i++) {
			double r = fabs((double)b[pi->offset + i]);
			double x = fabs((double)a[pi->offset + i] - (double)b[pi->offset + i]);

			if (r > mx)
				mx = r;
			if (x > d || isnan(x))
				d = isnan(x) ? INFINITY : x;
		}
		e = d / (mx > 1e-5 ? mx : 1e-5);
		if (e > worst || isnan(e)) {
			worst = e;
			*name = pi->name;
		}
	}
	return worst;
}

static void
one_model(const char *preset, enum bert_task task, enum optim_kind ok, int ckpt)
{
	struct bert_config	 c;
	struct bert_model	 m;
	struct gpu_trainer	*g = NULL;
	struct optim		 o;
	struct tbatch		 tb;
	struct bert_batch	 b;
	struct gpu_micro_out	 out;
	char			 err[512], what[256];
	const char		*name;
	float			*cpu_grads, *cpu_params;
	double			 e, norm_c, norm_g;
	int			 B = 4, T = 32, M = 0, i, skipped;
	float			 loss_c;

	bert_config_preset(preset, &c);
	c.task = task;
	c.num_labels = task == BERT_CLASSIFY ? 3 : 2;
	bert_model_init(&m, &c);
	m.dropout_seed = 7;
	m.grad_ckpt = ckpt;
	bert_init_weights(&m, 11, 0.02f, 1);
	make_batch(&tb, &b, B, T, c.vocab, c.num_labels, 5);
	for (i = 0; i < B * T; i++)
		M += task == BERT_PRETRAIN && tb.labels[i] != -100;

	/* the CPU: one micro-batch at step 3 (dropout on) */
	bert_zero_grad(&m);
	loss_c = bert_forward_scaled(&m, &b, 3, 1, M ? 1.0f / (float)M : 0.0f,
	    1.0f / (float)B);
	bert_backward(&m, &b, 3, 1);
	cpu_grads = xmalloc(m.nparams * sizeof(float));
	memcpy(cpu_grads, m.grads_mem, m.nparams * sizeof(float));

	snprintf(what, sizeof what, "%s %s%s%s", preset,
	    task == BERT_PRETRAIN ? "pretrain" : "classify", ckpt ? " checkpointing" : "",
	    getenv("CADRE_GPU_QKV") != NULL ? " (Q, K, V one batched product)" : "");
	if (gpu_open(&m, B, T, GPU_FP32, ckpt, 0, &g, err, sizeof err) != 0) {
		printf("FAIL: %s: gpu_open: %s\n", what, err);
		failures++;
		goto out;
	}
	memset(&o, 0, sizeof o);
	optim_init(&o, &m);
	gpu_upload(g, &m, &o);
	gpu_zero_grad(g);
	if (gpu_micro_step(g, &b, 3, 1, M ? 1.0f / (float)M : 0.0f, 1.0f / (float)B, 1,
	    &out) != 0) {
		printf("FAIL: %s: gpu_micro_step\n", what);
		failures++;
		goto out;
	}
	{
		double lg = (M ? out.mlm_sum / M : 0.0) + out.seq_sum / B;
		double el = fabs(lg - loss_c) / fabs((double)loss_c);
		char msg[512];

		snprintf(msg, sizeof msg, "%s: loss GPU %.9g CPU %.9g (relative %.2g <= 1e-5)",
		    what, lg, (double)loss_c, el);
		check(el <= 1e-5, msg);
	}
	gpu_download_grads(g, &m);
	e = worst_err(&m, m.grads_mem, cpu_grads, &name);
	{
		char msg[512];

		snprintf(msg, sizeof msg, "%s: gradients, worst %s %.2g <= 1e-4", what, name, e);
		check(e <= 1e-4, msg);
	}

	/* one optimizer step on both, from the CPU's gradients */
	o.kind = ok;
	o.lr = 1e-3f;
	o.beta1 = 0.9f;
	o.beta2 = 0.999f;
	o.eps = 1e-6f;
	o.weight_decay = 0.01f;
	o.schedule = SCHED_CONSTANT;
	o.clip = 0.05f;	/* small: the clipping path is taken */
	o.warmup = 0;
	o.total = 10;
	memcpy(m.grads_mem, cpu_grads, m.nparams * sizeof(float));
	gpu_upload_grads(g, &m);
	o.t = 0;
	gpu_optim_step(g, &o, &norm_g, &skipped);
	o.t = 0;
	norm_c = optim_step(&o, &m);
	cpu_params = xmalloc(m.nparams * sizeof(float));
	memcpy(cpu_params, m.params_mem, m.nparams * sizeof(float));
	gpu_download(g, &m, NULL);
	e = worst_err(&m, m.params_mem, cpu_params, &name);
	{
		char msg[512];

		snprintf(msg, sizeof msg, "%s: %s step, norm GPU %.6g CPU %.6g, weights worst "
		    "%s %.2g <= 1e-5", what, ok == OPTIM_ADAMW ? "AdamW" : "LAMB", norm_g,
		    norm_c, name, e);
		check(e <= 1e-5 && fabs(norm_g - norm_c) <= 1e-4 * norm_c, msg);
	}
	free(cpu_params);
	optim_free(&o);
out:
	gpu_close(g);
	free(cpu_grads);
	free_batch(&tb);
	bert_model_free(&m);
}

int
main(int argc, char **argv)
{
	char name[256], err[512];
	int e;

	/* the host half: the kernels' Philox masks against philox.c's */
	e = gpu_selftest_dropout(err, sizeof err);
	check(e == 0, e == 0 ? "GPU dropout masks equal the CPU's (5 keys x 3 p x 5 "
	    "ranges x 4096 elements, per element and four at a time)" : err);
	e = gpu_selftest_gemm_layout(err, sizeof err);
	check(e == 0, e == 0 ? "row-major GEMMs mapped to cuBLASLt's column-major "
	    "layouts (4 transpose pairs x 40 shapes, padded leading dimensions) "
	    "agree with sgemm_rm" : err);
	if (argc > 1 && strcmp(argv[1], "--host") == 0)
		return failures ? 1 : 0;
	if (gpu_count() == 0) {
		printf("SKIP: no CUDA device\n");
		return 77;
	}
	gpu_device_name(0, name, sizeof name);
	printf("device: %s\n", name);
	for (int prec = GPU_BF16; prec <= GPU_FP16; prec++) {
		double w[6];
		char what[512];

		e = gpu_check_attention(prec, w, err, sizeof err);
		snprintf(what, sizeof what, "fused attention, %s, against a plain fp32 "
		    "one (4 shapes, padding, dropout): worst relative error P %.2g, "
		    "context %.2g, dq %.2g, dk %.2g, dv %.2g, q/k/v bias gradients %.2g",
		    prec == GPU_BF16 ? "bf16" : "fp16", w[0], w[1], w[2], w[3], w[4], w[5]);
		check(e == 0, e == 0 ? what : err);
	}
	one_model("bert-tiny", BERT_PRETRAIN, OPTIM_ADAMW, 0);
	one_model("bert-tiny", BERT_CLASSIFY, OPTIM_LAMB, 0);
	one_model("bert-tiny", BERT_PRETRAIN, OPTIM_LAMB, 1);
	one_model("bert-mini", BERT_PRETRAIN, OPTIM_ADAMW, 0);
	one_model("bert-mini", BERT_CLASSIFY, OPTIM_ADAMW, 1);
	/* the widths the throughput runs use (H 768, 12 heads), on the CPU
	 * too: a second or two on a GPU machine's cores */
	one_model("bert-base", BERT_PRETRAIN, OPTIM_ADAMW, 0);
	/* CADRE_GPU_QKV=batched: the strided batch over the weights, its
	 * bias stride, the unpermuted gradients one after another */
	setenv("CADRE_GPU_QKV", "batched", 1);
	one_model("bert-tiny", BERT_PRETRAIN, OPTIM_ADAMW, 0);
	one_model("bert-mini", BERT_CLASSIFY, OPTIM_LAMB, 1);
	unsetenv("CADRE_GPU_QKV");
	return failures ? 1 : 0;
}
