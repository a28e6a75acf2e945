/* cadre-train: the BERT trainer's command line. The subcommands that fit
 * in a few lines (synthetic, inspect) are here; prep, vocab, tokenize,
 * train and eval have files of their own. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef HAVE_OPENBLAS
#include <cblas.h>
#endif

#ifdef HAVE_UTF8PROC
#include "cmd_tokenize.h"
#include "prep.h"
#endif
#include "error.h"
#include "gpu.h"
#include "log.h"
#include "model.h"
#include "modelio.h"
#include "ops.h"
#include "optim.h"
#include "safetensors.h"
#include "train.h"
#include "xmalloc.h"

static void
usage(FILE *f)
{
	fprintf(f,
"usage: cadre-train train [options]       train on shards (train --help)\n"
"       cadre-train eval [options]        loss and accuracy of a checkpoint (eval --help)\n"
"       cadre-train synthetic [options]   train on generated batches, dump tensors\n"
"       cadre-train inspect FILE.safetensors\n"
#ifdef HAVE_UTF8PROC
"       cadre-train vocab [options] FILE...    build a WordPiece vocab.txt from text\n"
"       cadre-train tokenize [options]        text lines -> WordPiece token ids\n"
"       cadre-train prep [options] FILE...     text, TSV or JSON lines -> shards\n"
#endif
"       cadre-train --help | --version\n"
"\n"
"synthetic options:\n"
"  --model NAME          bert-tiny|bert-mini|bert-small|bert-medium|bert-base|bert-large\n"
"                        (default bert-tiny)\n"
"  --layers N --hidden N --heads N --intermediate N --vocab-size N --max-position N\n"
"                        explicit dimensions (override the preset)\n"
"  --task pretrain|classify   MLM+NSP heads, or sequence classification\n"
"  --num-labels N        classes for classify (default 2)\n"
"  --init PATH           start from a safetensors file, or a directory with\n"
"                        model.safetensors and config.json\n"
"  --init-std X          std of the random initial weights (default 0.02)\n"
"  --init-all            random biases and LayerNorm too (for tests)\n"
"  --batch N --seq N     micro-batch size and sequence length (default 4, 32)\n"
"  --steps N             optimizer steps (default 1)\n"
"  --grad-accum N        micro-batches per step (default 1)\n"
"  --optimizer adamw|lamb, --lr X, --weight-decay X, --beta1 X, --beta2 X, --eps X\n"
"  --warmup N            warm-up steps; --schedule constant|linear|poly; --poly-power X\n"
"  --grad-clip X         global gradient norm bound (0: none; default 1.0)\n"
"  --dropout X           hidden and attention dropout (default 0.1)\n"
"  --grad-checkpointing  keep layer inputs only, recompute in backward\n"
"  --seed N              weights, data and dropout seed (default 1)\n"
"  --threads N           OpenMP and OpenBLAS threads (default OMP_NUM_THREADS)\n"
"  --device cpu|cuda     where the steps run (default cpu); cuda: fp32 on GPU 0\n"
"                        (trainer/gpu.h), the same files dumped but no logits\n"
"  --out DIR             write config.json, model.safetensors (initial weights),\n"
"                        batch.safetensors, step0.safetensors (losses, logits,\n"
"                        grad.NAME of the first step), final.safetensors, losses.txt,\n"
"                        run.json\n"
"  --quiet               no per-step lines\n");
}

/*
 * OpenMP's and OpenBLAS's thread pools both spin after their work: with
 * GEMMs and element-wise loops taking turns, each pool's spinning threads
 * take the cores the other needs (a step was 4x slower on 2 cores). And
 * OpenBLAS 0.3.21 falls back to its Prescott (SSE3) kernels on CPUs newer
 * than it knows. Both libraries read their settings from the environment
 * when they load, before main, so cadre-train sets what the user did not
 * and executes itself again, once. CADRE_TRAIN_TUNED=1 turns this off.
 */
static void
tune_runtime(char **argv)
{
	int changed = 0;

	if (getenv("CADRE_TRAIN_TUNED") != NULL)
		return;
	if (getenv("OMP_WAIT_POLICY") == NULL) {
		setenv("OMP_WAIT_POLICY", "passive", 1);
		changed = 1;
	}
#ifdef HAVE_OPENBLAS
	if (getenv("OPENBLAS_THREAD_TIMEOUT") == NULL) {
		setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
		changed = 1;
	}
#if defined(__x86_64__) && defined(__GNUC__)
	if (getenv("OPENBLAS_CORETYPE") == NULL &&
	    strcasecmp(openblas_get_corename(), "prescott") == 0) {
		__builtin_cpu_init();
		if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		    __builtin_cpu_supports("avx512vl")) {
			setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
			changed = 1;
		} else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
			setenv("OPENBLAS_CORETYPE", "Haswell", 1);
			changed = 1;
		}
	}
#endif
#endif
	if (!changed)
		return;
	setenv("CADRE_TRAIN_TUNED", "1", 1);
	execv("/proc/self/exe", argv);
	/* Not fatal: go on untuned. */
	log_debug("re-executing with tuned threading failed: %s", strerror(errno));
}

static const char *
blas_name(void)
{
#ifdef HAVE_OPENBLAS
	return openblas_get_corename();
#else
	return "none (plain loops)";
#endif
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long
parse_long(const char *opt, const char *s, long lo, long hi)
{
	char	*end;
	long	 v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		fatalx("%s: '%s' is not an integer in %ld..%ld", opt, s, lo, hi);
	return v;
}

static float
parse_float(const char *opt, const char *s)
{
	char	*end;
	double	 v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(v))
		fatalx("%s: '%s' is not a number", opt, s);
	return (float)v;
}

/* ---------------------------------------------------------------- synthetic data */

struct synth {
	int	 B, T, S;	/* S micro-batches in all */
	int32_t	*ids, *types, *mask, *labels, *seq;	/* (S,B,T), (S,B) */
};

/* Generated micro-batch s: random tokens after [CLS], padding on three
 * sequences of four, segment B on the second half, 15% of the tokens
 * masked for MLM (at least one per sequence), random NSP/class labels. */
static void
synth_make(struct synth *d, const struct bert_config *c, uint64_t seed)
{
	const uint32_t	key[2] = { (uint32_t)seed ^ 0x5eedu, (uint32_t)(seed >> 32) };
	size_t		BT = (size_t)d->B * d->T;
	int		cls_id = c->vocab > 103 ? 101 : 1 % c->vocab;
	int		mask_id = c->vocab > 103 ? 103 : 2 % c->vocab;
	int		classes = c->task == BERT_PRETRAIN ? 2 : c->num_labels;
	int		s, b, t;

	d->ids = xcalloc((size_t)d->S * BT, sizeof(int32_t));
	d->types = xcalloc((size_t)d->S * BT, sizeof(int32_t));
	d->mask = xcalloc((size_t)d->S * BT, sizeof(int32_t));
	d->labels = xcalloc((size_t)d->S * BT, sizeof(int32_t));
	d->seq = xcalloc((size_t)d->S * d->B, sizeof(int32_t));
	for (s = 0; s < d->S; s++) {
		for (b = 0; b < d->B; b++) {
			size_t	 o = (size_t)s * BT + (size_t)b * d->T;
			int	 len = d->T - (b % 4) * (d->T / 8), nmask = 0;
			uint32_t r[4], ctr[4] = { (uint32_t)b, (uint32_t)s, 0, 0x5eedu };

			if (len < 2)
				len = d->T < 2 ? d->T : 2;
			philox4x32_10(ctr, key, r);
			d->seq[(size_t)s * d->B + b] = (int32_t)(r[0] % (uint32_t)classes);
			for (t = 0; t < d->T; t++) {
				ctr[2] = (uint32_t)t + 1;
				philox4x32_10(ctr, key, r);
				d->labels[o + t] = -100;
				if (t >= len) {
					d->ids[o + t] = 0;
					continue;
				}
				d->mask[o + t] = 1;
				d->types[o + t] = (t >= len / 2 && c->type_vocab > 1);
				d->ids[o + t] = t == 0 ? cls_id :
				    (int32_t)(r[0] % (uint32_t)c->vocab);
				if (t > 0 && c->task == BERT_PRETRAIN &&
				    philox_uniform(r[1]) < 0.15f) {
					d->labels[o + t] = d->ids[o + t];
					d->ids[o + t] = mask_id;
					nmask++;
				}
			}
			if (c->task == BERT_PRETRAIN && nmask == 0 && len > 1) {
				d->labels[o + 1] = d->ids[o + 1];
				d->ids[o + 1] = mask_id;
			}
		}
	}
}

static void
synth_free(struct synth *d)
{
	free(d->ids);
	free(d->types);
	free(d->mask);
	free(d->labels);
	free(d->seq);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void
write_or_die(struct st_writer *w, const char *dir, const char *file)
{
	char *path;

	xasprintf(&path, "%s/%s", dir, file);
	if (st_writer_write(w, path) != 0)
		fatal("%s", path);
	free(path);
}

/* --out's files before the first step: the initial weights, every
 * micro-batch (batch.safetensors) and the settings (run.json); returns
 * losses.txt, opened for the steps' lines. */
static FILE *
synth_write_inputs(const char *out, const struct bert_model *m,
    const struct synth *d, const struct optim *o, int task, int steps,
    int accum, float dropout, uint64_t seed)
{
	int B = d->B, T = d->T;
	FILE *lf;
	char err[1024], *path;
	struct st_writer *w;
	int64_t sh[3] = { d->S, B, T };
	int64_t *tmp = xcalloc((size_t)d->S * B * T, sizeof *tmp);
	int64_t *tmps = xcalloc((size_t)d->S * B, sizeof *tmps);
	int64_t *tm = xcalloc((size_t)d->S * B * T, sizeof *tm);
	int64_t *tt = xcalloc((size_t)d->S * B * T, sizeof *tt);
	int64_t *tl = xcalloc((size_t)d->S * B * T, sizeof *tl);
	size_t i;

	if (mkdir(out, 0755) == -1 && errno != EEXIST)
		fatal("%s", out);
	if (model_save(m, out, err, sizeof err) != 0)
		fatalx("%s", err);
	for (i = 0; i < (size_t)d->S * B * T; i++) {
		tmp[i] = d->ids[i];
		tm[i] = d->mask[i];
		tt[i] = d->types[i];
		tl[i] = d->labels[i];
	}
	for (i = 0; i < (size_t)d->S * B; i++)
		tmps[i] = d->seq[i];
	w = st_writer_new();
	st_writer_add(w, "input_ids", ST_I64, 3, sh, tmp);
	st_writer_add(w, "token_type_ids", ST_I64, 3, sh, tt);
	st_writer_add(w, "attention_mask", ST_I64, 3, sh, tm);
	st_writer_add(w, "labels", ST_I64, 3, sh, tl);
	st_writer_add(w, "seq_labels", ST_I64, 2, sh, tmps);
	write_or_die(w, out, "batch.safetensors");
	st_writer_free(w);
	free(tmp); free(tmps); free(tm); free(tt); free(tl);

	xasprintf(&path, "%s/run.json", out);
	if ((lf = fopen(path, "w")) == NULL)
		fatal("%s", path);
	fprintf(lf, "{\"task\": \"%s\", \"steps\": %d, \"grad_accum\": %d, "
	    "\"batch\": %d, \"seq\": %d, \"optimizer\": \"%s\", \"lr\": %.9g, "
	    "\"weight_decay\": %.9g, \"beta1\": %.9g, \"beta2\": %.9g, \"eps\": %.9g, "
	    "\"warmup\": %lld, \"schedule\": \"%s\", \"poly_power\": %.9g, "
	    "\"grad_clip\": %.9g, \"dropout\": %.9g, \"threads\": %d, \"seed\": %llu}\n",
	    task == BERT_PRETRAIN ? "pretrain" : "classify", steps, accum, B, T,
	    o->kind == OPTIM_ADAMW ? "adamw" : "lamb", o->lr, o->weight_decay,
	    o->beta1, o->beta2, o->eps, (long long)o->warmup,
	    o->schedule == SCHED_CONSTANT ? "constant" :
	    o->schedule == SCHED_LINEAR ? "linear" : "poly", o->power, o->clip,
	    dropout, ops_threads(), (unsigned long long)seed);
	fclose(lf);
	free(path);
	xasprintf(&path, "%s/losses.txt", out);
	if ((lf = fopen(path, "w")) == NULL)
		fatal("%s", path);
	free(path);
	return lf;
}

/* Losses, last micro-batch's logits and every gradient of the first
 * step, before the optimizer touches them. */
static void
synth_write_step0(const char *out, const struct bert_model *m,
    const struct bert_config *c, int task, int B, double loss, double mlm,
    double seqloss, int logits)
{
	struct st_writer *w = st_writer_new();
	float	lv[3] = { (float)loss, (float)mlm, (float)seqloss };
	int64_t	one = 1, sl[2], ml[2];
	char	name[128];
	size_t	i;

	st_writer_add(w, "loss", ST_F32, 1, &one, &lv[0]);
	st_writer_add(w, "mlm_loss", ST_F32, 1, &one, &lv[1]);
	st_writer_add(w, "seq_loss", ST_F32, 1, &one, &lv[2]);
	sl[0] = B;
	sl[1] = task == BERT_PRETRAIN ? 2 : c->num_labels;
	/* the GPU's logits stay on the device (gpu.h has no copy of them) */
	if (logits)
		st_writer_add(w, "seq_logits", ST_F32, 2, sl, m->a.seq_logits);
	if (logits && task == BERT_PRETRAIN) {
		ml[0] = m->a.M;
		ml[1] = c->vocab;
		st_writer_add(w, "mlm_logits", ST_F32, 2, ml, m->a.mlm_logits);
	}
	for (i = 0; i < m->ntensors; i++) {
		snprintf(name, sizeof name, "grad.%s", m->table[i].name);
		st_writer_add(w, name, ST_F32, m->table[i].ndim,
		    m->table[i].shape, m->grads_mem + m->table[i].offset);
	}
	write_or_die(w, out, "step0.safetensors");
	st_writer_free(w);
}

/* The weights after the last step. */
static void
synth_write_final(const char *out, const struct bert_model *m)
{
	struct st_writer *w = st_writer_new();
	size_t i;

	for (i = 0; i < m->ntensors; i++)
		st_writer_add(w, m->table[i].name, ST_F32, m->table[i].ndim,
		    m->table[i].shape, m->params_mem + m->table[i].offset);
	write_or_die(w, out, "final.safetensors");
	st_writer_free(w);
}

/*
 * Step s's micro-batches on the GPU (--device cuda): the same scaling as
 * bert_forward's per-micro-batch mean (1/accum over this micro-batch's
 * labelled positions and sequences) and the same dropout keys (the
 * micro-batch's index); the losses summed as the CPU path sums them.
 */
static int
synth_gpu_step(struct gpu_trainer *g, const struct bert_model *m,
    const struct synth *d, int s, int accum, double *loss, double *mlm,
    double *seqloss)
{
	int B = d->B, T = d->T, u, i;

	gpu_zero_grad(g);
	for (u = 0; u < accum; u++) {
		size_t			mb = (size_t)s * accum + u;
		size_t			off = mb * B * T;
		struct bert_batch	bb = { B, T, d->ids + off, d->types + off,
		    d->mask + off, d->labels + off, d->seq + mb * B };
		struct gpu_micro_out	mo;
		float			gs = 1.0f / accum, ml, sl;
		int			M = 0;

		if (m->cfg.task == BERT_PRETRAIN)
			for (i = 0; i < B * T; i++)
				M += bb.labels[i] != -100;
		if (gpu_micro_step(g, &bb, mb, 1, M > 0 ? gs / (float)M : 0.0f,
		    gs / (float)B, u == accum - 1, &mo) != 0)
			return -1;
		ml = M > 0 ? (float)(mo.mlm_sum / M) : 0.0f;
		sl = (float)(mo.seq_sum / B);
		*loss += ml + sl;
		*mlm += ml;
		*seqloss += sl;
	}
	return 0;
}

static int
cmd_synthetic(int argc, char **argv)
{
	enum { O_MODEL = 256, O_LAYERS, O_HIDDEN, O_HEADS, O_INTER, O_VOCAB,
		O_MAXPOS, O_TASK, O_LABELS, O_INIT, O_INITSTD, O_INITALL, O_BATCH,
		O_SEQ, O_STEPS, O_ACCUM, O_OPT, O_LR, O_WD, O_B1, O_B2, O_EPS,
		O_WARMUP, O_SCHED, O_POWER, O_CLIP, O_DROPOUT, O_CKPT, O_SEED,
		O_THREADS, O_OUT, O_QUIET, O_DEVICE };
	static const struct option longopts[] = {
		{ "model", required_argument, NULL, O_MODEL },
		{ "layers", required_argument, NULL, O_LAYERS },
		{ "hidden", required_argument, NULL, O_HIDDEN },
		{ "heads", required_argument, NULL, O_HEADS },
		{ "intermediate", required_argument, NULL, O_INTER },
		{ "vocab-size", required_argument, NULL, O_VOCAB },
		{ "max-position", required_argument, NULL, O_MAXPOS },
		{ "task", required_argument, NULL, O_TASK },
		{ "num-labels", required_argument, NULL, O_LABELS },
		{ "init", required_argument, NULL, O_INIT },
		{ "init-std", required_argument, NULL, O_INITSTD },
		{ "init-all", no_argument, NULL, O_INITALL },
		{ "batch", required_argument, NULL, O_BATCH },
		{ "seq", required_argument, NULL, O_SEQ },
		{ "steps", required_argument, NULL, O_STEPS },
		{ "grad-accum", required_argument, NULL, O_ACCUM },
		{ "optimizer", required_argument, NULL, O_OPT },
		{ "lr", required_argument, NULL, O_LR },
		{ "weight-decay", required_argument, NULL, O_WD },
		{ "beta1", required_argument, NULL, O_B1 },
		{ "beta2", required_argument, NULL, O_B2 },
		{ "eps", required_argument, NULL, O_EPS },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "schedule", required_argument, NULL, O_SCHED },
		{ "poly-power", required_argument, NULL, O_POWER },
		{ "grad-clip", required_argument, NULL, O_CLIP },
		{ "dropout", required_argument, NULL, O_DROPOUT },
		{ "grad-checkpointing", no_argument, NULL, O_CKPT },
		{ "seed", required_argument, NULL, O_SEED },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "out", required_argument, NULL, O_OUT },
		{ "quiet", no_argument, NULL, O_QUIET },
		{ "device", required_argument, NULL, O_DEVICE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct bert_config	 c;
	struct bert_model	 m;
	struct optim		 o;
	struct synth		 d;
	const char		*model = "bert-tiny", *init = NULL, *out = NULL;
	int			 nL = 0, nH = 0, nA = 0, nI = 0, nV = 0, nP = 0, labels = 2;
	int			 task = BERT_PRETRAIN, init_all = 0, ckpt = 0, quiet = 0;
	int			 B = 4, T = 32, steps = 1, accum = 1, threads = 0, ch, s, u;
	int			 skip, nt, cuda = 0;
	struct gpu_trainer	*g = NULL;
	double			 fwd_ms = 0.0, bwd_ms = 0.0, opt_ms = 0.0;
	float			 init_std = 0.02f, dropout = 0.1f;
	uint64_t		 seed = 1;
	double			*step_ms;
	char			 err[1024], *path;
	FILE			*lf = NULL;
	struct rusage		 ru;

	memset(&o, 0, sizeof o);
	o.kind = OPTIM_ADAMW;
	o.lr = 1e-3f;
	o.beta1 = 0.9f;
	o.beta2 = 0.999f;
	o.eps = 1e-6f;
	o.weight_decay = 0.01f;
	o.schedule = SCHED_LINEAR;
	o.power = 0.5f;
	o.clip = 1.0f;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case O_MODEL: model = optarg; break;
		case O_LAYERS: nL = (int)parse_long("--layers", optarg, 1, 256); break;
		case O_HIDDEN: nH = (int)parse_long("--hidden", optarg, 1, 65536); break;
		case O_HEADS: nA = (int)parse_long("--heads", optarg, 1, 65536); break;
		case O_INTER: nI = (int)parse_long("--intermediate", optarg, 1, 262144); break;
		case O_VOCAB: nV = (int)parse_long("--vocab-size", optarg, 1, 4194304); break;
		case O_MAXPOS: nP = (int)parse_long("--max-position", optarg, 1, 65536); break;
		case O_TASK:
			if (strcmp(optarg, "pretrain") == 0)
				task = BERT_PRETRAIN;
			else if (strcmp(optarg, "classify") == 0)
				task = BERT_CLASSIFY;
			else
				fatalx("--task: '%s': expected pretrain or classify", optarg);
			break;
		case O_LABELS: labels = (int)parse_long("--num-labels", optarg, 2, 65536); break;
		case O_INIT: init = optarg; break;
		case O_INITSTD: init_std = parse_float("--init-std", optarg); break;
		case O_INITALL: init_all = 1; break;
		case O_BATCH: B = (int)parse_long("--batch", optarg, 1, 65536); break;
		case O_SEQ: T = (int)parse_long("--seq", optarg, 1, 65536); break;
		case O_STEPS: steps = (int)parse_long("--steps", optarg, 0, 100000000); break;
		case O_ACCUM: accum = (int)parse_long("--grad-accum", optarg, 1, 65536); break;
		case O_OPT:
			if (strcmp(optarg, "adamw") == 0)
				o.kind = OPTIM_ADAMW;
			else if (strcmp(optarg, "lamb") == 0)
				o.kind = OPTIM_LAMB;
			else
				fatalx("--optimizer: '%s': expected adamw or lamb", optarg);
			break;
		case O_LR: o.lr = parse_float("--lr", optarg); break;
		case O_WD: o.weight_decay = parse_float("--weight-decay", optarg); break;
		case O_B1: o.beta1 = parse_float("--beta1", optarg); break;
		case O_B2: o.beta2 = parse_float("--beta2", optarg); break;
		case O_EPS: o.eps = parse_float("--eps", optarg); break;
		case O_WARMUP: o.warmup = parse_long("--warmup", optarg, 0, 100000000); break;
		case O_SCHED:
			if (strcmp(optarg, "constant") == 0)
				o.schedule = SCHED_CONSTANT;
			else if (strcmp(optarg, "linear") == 0)
				o.schedule = SCHED_LINEAR;
			else if (strcmp(optarg, "poly") == 0)
				o.schedule = SCHED_POLY;
			else
				fatalx("--schedule: '%s': expected constant, linear or poly", optarg);
			break;
		case O_POWER: o.power = parse_float("--poly-power", optarg); break;
		case O_CLIP: o.clip = parse_float("--grad-clip", optarg); break;
		case O_DROPOUT: dropout = parse_float("--dropout", optarg); break;
		case O_CKPT: ckpt = 1; break;
		case O_SEED: seed = (uint64_t)parse_long("--seed", optarg, 0, 0x7fffffffL); break;
		case O_THREADS: threads = (int)parse_long("--threads", optarg, 1, 4096); break;
		case O_OUT: out = optarg; break;
		case O_QUIET: quiet = 1; break;
		case O_DEVICE:
			if (strcmp(optarg, "cpu") == 0)
				cuda = 0;
			else if (strcmp(optarg, "cuda") == 0)
				cuda = 1;
			else
				fatalx("--device: '%s': expected cpu or cuda", optarg);
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc)
		fatalx("synthetic: unexpected argument '%s' (see cadre-train --help)", argv[optind]);
	ops_set_threads(threads);
	if (cuda && gpu_count() == 0) {
#ifdef HAVE_CUDA
		fprintf(stderr, "cadre-train: synthetic --device cuda: no CUDA device is "
		    "visible (nvidia-smi -L lists none, or CUDA_VISIBLE_DEVICES hides "
		    "them): use --device cpu\n");
#else
		fprintf(stderr, "cadre-train: synthetic --device cuda: this cadre-train was "
		    "built without CUDA (./configure --with-cuda): use --device cpu\n");
#endif
		return 2;
	}

	if (bert_config_preset(model, &c) != 0)
		fatalx("--model: unknown model '%s': expected bert-tiny, bert-mini, bert-small, "
		    "bert-medium, bert-base or bert-large", model);
	c.task = (enum bert_task)task;
	c.num_labels = labels;
	c.hidden_dropout = c.attn_dropout = dropout;
	if (init != NULL) {
		struct stat st;

		if (stat(init, &st) == 0 && S_ISDIR(st.st_mode)) {
			xasprintf(&path, "%s/config.json", init);
			if (model_load_config(path, &c, err, sizeof err) != 0)
				fatalx("%s", err);
			free(path);
			c.hidden_dropout = c.attn_dropout = dropout;
		}
	}
	if (nL) c.layers = nL;
	if (nH) c.hidden = nH;
	if (nA) c.heads = nA;
	if (nI) c.intermediate = nI;
	if (nV) c.vocab = nV;
	if (nP) c.max_position = nP;
	if (bert_config_check(&c, err, sizeof err) != 0)
		fatalx("bad model configuration: %s", err);
	if ((int64_t)B * T > (1 << 24))
		fatalx("--batch %d x --seq %d: at most 2^24 tokens per micro-batch", B, T);
	if (T > c.max_position)
		fatalx("--seq %d exceeds the model's %d positions", T, c.max_position);

	bert_model_init(&m, &c);
	m.grad_ckpt = ckpt;
	m.dropout_seed = seed;
	bert_init_weights(&m, seed, init_std, init_all);
	if (init != NULL) {
		struct stat st;

		if (stat(init, &st) == 0 && S_ISDIR(st.st_mode))
			xasprintf(&path, "%s/model.safetensors", init);
		else
			path = xstrdup(init);
		if (model_load_weights(&m, path, 0, err, sizeof err) != 0)
			fatalx("%s", err);
		free(path);
	}
	optim_init(&o, &m);
	o.total = steps;
	if (cuda) {
		/* fp32 on GPU 0: the weights (and zero moments) uploaded once */
		if (gpu_open(&m, B, T, GPU_FP32, ckpt, 0, &g, err, sizeof err) != 0 ||
		    gpu_upload(g, &m, &o) != 0) {
			fprintf(stderr, "cadre-train: synthetic --device cuda: %s\n",
			    g == NULL ? err : "uploading the weights failed");
			gpu_close(g);
			return 2;
		}
	}

	d.B = B;
	d.T = T;
	d.S = (steps > 0 ? steps : 1) * accum;
	synth_make(&d, &c, seed);

	if (!quiet)
		printf("cadre-train: %s L%d H%d A%d I%d V%d, %zu parameters, batch %d x %d, "
		    "%d threads, OpenBLAS core %s%s%s\n", init ? init : model, c.layers, c.hidden,
		    c.heads, c.intermediate, c.vocab, m.nparams, B, T, ops_threads(),
		    blas_name(), ckpt ? ", gradient checkpointing" : "",
		    cuda ? ", device cuda (fp32)" : "");
	if (out != NULL)
		lf = synth_write_inputs(out, &m, &d, &o, task, steps, accum, dropout,
		    seed);

	step_ms = xcalloc((size_t)(steps > 0 ? steps : 1), sizeof *step_ms);
	for (s = 0; s < steps || (s == 0 && steps == 0); s++) {
		double	t0 = now_ms(), loss = 0.0, mlm = 0.0, seqloss = 0.0, norm = 0.0;
		float	lr = optim_lr(&o, o.t);

		if (g != NULL) {
			if (synth_gpu_step(g, &m, &d, s, accum, &loss, &mlm, &seqloss) != 0) {
				fprintf(stderr, "cadre-train: synthetic --device cuda: step %d "
				    "failed on the GPU\n", s);
				return 1;
			}
			fwd_ms += (s > 0 || steps <= 2) ? now_ms() - t0 : 0.0;
			if (s == 0 && out != NULL && gpu_download_grads(g, &m) != 0) {
				fprintf(stderr, "cadre-train: synthetic --device cuda: "
				    "downloading the gradients failed\n");
				return 1;
			}
		} else
			bert_zero_grad(&m);
		for (u = 0; g == NULL && u < accum; u++) {
			size_t		   mb = (size_t)s * accum + u;
			size_t		   off = mb * B * T;
			struct bert_batch  bb = { B, T, d.ids + off, d.types + off,
			    d.mask + off, d.labels + off, d.seq + mb * B };

			double	ta = now_ms(), tb;

			loss += bert_forward(&m, &bb, mb, 1, 1.0f / accum);
			mlm += m.mlm_loss;
			seqloss += m.seq_loss;
			tb = now_ms();
			bert_backward(&m, &bb, mb, 1);
			if (s > 0 || steps <= 2) {
				fwd_ms += tb - ta;
				bwd_ms += now_ms() - tb;
			}
		}
		loss /= accum;
		mlm /= accum;
		seqloss /= accum;
		if (s == 0 && out != NULL)
			synth_write_step0(out, &m, &c, task, B, loss, mlm, seqloss, g == NULL);
		if (steps > 0) {
			double ta = now_ms();
			int skipped = 0;

			if (g != NULL) {
				if (gpu_optim_step(g, &o, &norm, &skipped) != 0) {
					fprintf(stderr, "cadre-train: synthetic --device cuda: "
					    "the optimizer step %d failed on the GPU\n", s);
					return 1;
				}
			} else
				norm = optim_step(&o, &m);
			if (s > 0 || steps <= 2)
				opt_ms += now_ms() - ta;
		}
		step_ms[s] = now_ms() - t0;
		if (lf != NULL)
			fprintf(lf, "%d %.9g %.9g %.9g %.9g %.3f\n", s, loss, mlm, seqloss,
			    norm, step_ms[s]);
		if (!quiet)
			printf("step %d: loss %.6f (mlm %.6f, seq %.6f) lr %.3g grad norm %.4f, %.1f ms\n",
			    s, loss, mlm, seqloss, lr, norm, step_ms[s]);
		if (steps == 0)
			break;
	}
	if (lf != NULL)
		fclose(lf);
	if (g != NULL && gpu_download(g, &m, &o) != 0) {
		fprintf(stderr, "cadre-train: synthetic --device cuda: downloading the "
		    "weights failed\n");
		return 1;
	}
	gpu_close(g);
	if (out != NULL)
		synth_write_final(out, &m);
	/* The median skips the first step (allocations, cold caches) when
	 * there are more than two. */
	skip = steps > 2 ? 1 : 0;
	nt = (steps > 0 ? steps : 1) - skip;
	qsort(step_ms + skip, (size_t)nt, sizeof *step_ms, cmp_double);
	getrusage(RUSAGE_SELF, &ru);
	printf("summary: steps %d median_step_ms %.3f peak_rss_mib %.1f activations_mib %.1f "
	    "parameters %zu threads %d forward_ms %.1f backward_ms %.1f optimizer_ms %.1f\n",
	    steps, step_ms[skip + nt / 2], (double)ru.ru_maxrss / 1024.0,
	    (double)m.a.bytes / 1048576.0, m.nparams, ops_threads(),
	    fwd_ms / nt, bwd_ms / nt, opt_ms / nt);
	free(step_ms);
	synth_free(&d);
	optim_free(&o);
	bert_model_free(&m);
	return 0;
}

static int
cmd_inspect(int argc, char **argv)
{
	struct st_file	*f;
	char		 err[512];
	size_t		 i;
	int		 d;

	if (argc != 2)
		fatalx("usage: cadre-train inspect FILE.safetensors");
	if (st_open(argv[1], &f, err, sizeof err) != 0)
		fatalx("%s: %s", argv[1], err);
	for (i = 0; i < f->n; i++) {
		printf("%s %s [", f->t[i].name, st_dtype_name(f->t[i].dtype));
		for (d = 0; d < f->t[i].ndim; d++)
			printf("%s%lld", d ? ", " : "", (long long)f->t[i].shape[d]);
		printf("]\n");
	}
	st_close(f);
	return 0;
}

int
main(int argc, char **argv)
{
	log_init("cadre-train", LOG_LEVEL_INFO, LOG_TARGET_STDERR);
	tune_runtime(argv);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("cadre-train %s (OpenBLAS core: %s)\n", PACKAGE_VERSION, blas_name());
		return 0;
	}
	if (strcmp(argv[1], "synthetic") == 0)
		return cmd_synthetic(argc - 1, argv + 1);
	if (strcmp(argv[1], "inspect") == 0)
		return cmd_inspect(argc - 1, argv + 1);
	if (strcmp(argv[1], "train") == 0)
		return cmd_train(argc - 1, argv + 1);
	if (strcmp(argv[1], "eval") == 0)
		return cmd_eval(argc - 1, argv + 1);
#ifdef HAVE_UTF8PROC
	if (strcmp(argv[1], "vocab") == 0)
		return cmd_vocab(argc - 1, argv + 1);
	if (strcmp(argv[1], "tokenize") == 0)
		return cmd_tokenize(argc - 1, argv + 1);
	if (strcmp(argv[1], "prep") == 0)
		return cmd_prep(argc - 1, argv + 1);
#endif
	fprintf(stderr, "cadre-train: unknown command '%s' (see cadre-train --help)\n", argv[1]);
	return 2;
}
