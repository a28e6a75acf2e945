/*
 * `cadre-train train`: the step loop on shards. Every optimizer step takes
 * grad_accum micro-batches on every rank; the loss is a mean over the whole
 * global batch (all labelled MLM positions, all sequences), so the ranks'
 * gradients are summed, not averaged, and one rank with batch 2B, two
 * ranks with batch B and one rank with batch B and two micro-batches
 * compute the same step. Checkpoints are written by a thread from a
 * snapshot; a stop signal ends the step, checkpoints and exits 75.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

#include "buf.h"
#include "checkpoint.h"
#include "commit.h"
#include "dist.h"
#include "duration.h"
#include "error.h"
#include "gpu.h"
#include "loader.h"
#include "log.h"
#include "metrics.h"
#include "model.h"
#include "modelio.h"
#include "ops.h"
#include "strutil.h"
#include "optim.h"
#include "train.h"
#include "traincfg.h"
#include "xmalloc.h"

static volatile sig_atomic_t stop_signal;

static void
on_stop(int sig)
{
	stop_signal = sig;
}

static double
mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --min-step-ms: a stop signal cuts the wait short, the step ends then. */
static void
sleep_until_mono(double until)
{
	double left = until - mono_s();

	if (left > 0 && stop_signal == 0) {
		struct timespec ts = { (time_t)left,
		    (long)((left - (double)(time_t)left) * 1e9) };

		nanosleep(&ts, NULL);
	}
}

/*
 * The test hook: CADRE_TRAIN_TEST_SLOW_START=MS (at most a minute) holds
 * startup right after the signal handlers are set, before MPI, the data
 * and a resume, and says so on stderr, so that a test's signal surely
 * lands in startup. A signal ends the hold.
 */
static void
hold_startup(void)
{
	const char	*v = getenv("CADRE_TRAIN_TEST_SLOW_START");
	double		 ms;

	if (v == NULL || (ms = strtod(v, NULL)) <= 0)
		return;
	if (ms > 60000)
		ms = 60000;
	/* the line tells the test when to send its signal */
	fprintf(stderr, "cadre-train: test hook: startup held for %.0f ms\n", ms);
	sleep_until_mono(mono_s() + ms / 1e3);
}

static const char *
commit_id(void)
{
	const char *c = getenv("CADRE_COMMIT");

	return c != NULL && *c != '\0' ? c : CADRE_COMMIT_ID;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, size_t n)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void
usage_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "cadre-train: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(TRAIN_EXIT_USAGE);
}

long long
opt_int(const char *opt, const char *s, long long lo, long long hi)
{
	char		*end;
	long long	 v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		usage_fail("%s: '%s' is not an integer in %lld..%lld", opt, s, lo, hi);
	return v;
}

static double
opt_num(const char *opt, const char *s, double lo, double hi)
{
	char	*end;
	double	 v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < lo || v > hi)
		usage_fail("%s: '%s' is not a number in %g..%g", opt, s, lo, hi);
	return v;
}

static int
opt_enum(const char *opt, const char *s, const char *const *names)
{
	int i;

	for (i = 0; names[i] != NULL; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	usage_fail("%s: '%s' is not one of the values --help lists", opt, s);
}

static void
set_str(char **dst, const char *s, int abs_path, const char *opt)
{
	/* $NAME/... is left for traincfg_expand_paths() */
	if (abs_path && s[0] != '/' && s[0] != '$') {
		char *cwd = getcwd(NULL, 0);

		if (cwd == NULL)
			usage_fail("%s: %s: cannot make it absolute: %s", opt, s, strerror(errno));
		free(*dst);
		xasprintf(dst, "%s/%s", cwd, s);
		free(cwd);
		return;
	}
	free(*dst);
	*dst = xstrdup(s);
}

static void
train_usage(FILE *f)
{
	fprintf(f,
"usage: cadre-train train [--config train.json] [options]\n"
"\n"
"Trains on shards made by cadre-train prep; options override train.json.\n"
"  --config FILE          train.json (docs/trainer.md \"train.json\")\n"
"  --data DIR             training shards          --eval-data DIR   evaluated at the end\n"
"  --vocab FILE           vocab.txt the shards must match\n"
"  --out DIR              run directory: metrics.jsonl, checkpoints/\n"
"  --resume auto|none|DIR auto: the newest valid checkpoint of --out, if any\n"
"  --model NAME           bert-tiny ... bert-large (default bert-tiny)\n"
"  --init DIR             start from a Hugging Face directory (config.json,\n"
"                         model.safetensors)\n"
"  --task pretrain|mlm|classify\n"
"  --steps N --batch N --seq N --grad-accum N\n"
"  --precision fp32|bf16|fp16  (bf16, fp16: the CUDA path)\n"
"  --device auto|cpu|cuda auto: cuda for bf16/fp16 or when a GPU is visible\n"
"  --optimizer adamw|lamb --lr X --weight-decay X --beta1 X --beta2 X --eps X\n"
"  --warmup FRACTION      of the steps; --schedule linear|poly|constant; --poly-power X\n"
"  --grad-clip X          global norm bound (0: none)\n"
"  --dropout X            --grad-checkpointing\n"
"  --checkpoint-every S   seconds of training between checkpoints (0: at the end)\n"
"  --keep N               checkpoints kept (default 2)\n"
"  --keep-timed           and every timed one (at multiples of --checkpoint-every)\n"
"  --log-every N          steps per metrics line   --skip-steps N  warm-up steps\n"
"                         left out of the summary's medians\n"
"  --seed N               weights, data order, masking and dropout\n"
"  --threads N            OpenMP and OpenBLAS threads\n"
"  --stop-after N         (tests) raise SIGTERM after step N\n"
"  --min-step-ms N        (tests) a step takes at least N ms of wall time\n"
"  --quiet                no progress lines on stderr\n"
"  -h, --help             this text\n"
"Exit: 0 done, 1 error, 2 usage or bad input, 3 out of memory, 75 preempted\n"
"(stopped by SIGTERM or SIGUSR1 after a checkpoint; resumable).\n");
}

enum {
	O_CONFIG = 256, O_DATA, O_EVAL, O_VOCAB, O_OUT, O_RESUME, O_MODEL, O_INIT,
	O_TASK, O_STEPS, O_BATCH, O_SEQ, O_ACCUM, O_PREC, O_OPT, O_LR, O_WD, O_B1,
	O_B2, O_EPS, O_WARMUP, O_SCHED, O_POWER, O_CLIP, O_DROPOUT, O_GCKPT, O_KEEPTIMED,
	O_CKEVERY, O_KEEP, O_LOGEVERY, O_SKIP, O_SEED, O_THREADS, O_STOPAFTER,
	O_MINSTEP, O_QUIET, O_DEVICE
};

static const struct option train_opts[] = {
	{ "config", required_argument, NULL, O_CONFIG },
	{ "data", required_argument, NULL, O_DATA },
	{ "eval-data", required_argument, NULL, O_EVAL },
	{ "vocab", required_argument, NULL, O_VOCAB },
	{ "out", required_argument, NULL, O_OUT },
	{ "resume", required_argument, NULL, O_RESUME },
	{ "model", required_argument, NULL, O_MODEL },
	{ "init", required_argument, NULL, O_INIT },
	{ "task", required_argument, NULL, O_TASK },
	{ "steps", required_argument, NULL, O_STEPS },
	{ "batch", required_argument, NULL, O_BATCH },
	{ "seq", required_argument, NULL, O_SEQ },
	{ "grad-accum", required_argument, NULL, O_ACCUM },
	{ "precision", required_argument, NULL, O_PREC },
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
	{ "grad-checkpointing", no_argument, NULL, O_GCKPT },
	{ "keep-timed", no_argument, NULL, O_KEEPTIMED },
	{ "checkpoint-every", required_argument, NULL, O_CKEVERY },
	{ "keep", required_argument, NULL, O_KEEP },
	{ "log-every", required_argument, NULL, O_LOGEVERY },
	{ "skip-steps", required_argument, NULL, O_SKIP },
	{ "seed", required_argument, NULL, O_SEED },
	{ "threads", required_argument, NULL, O_THREADS },
	{ "stop-after", required_argument, NULL, O_STOPAFTER },
	{ "min-step-ms", required_argument, NULL, O_MINSTEP },
	{ "quiet", no_argument, NULL, O_QUIET },
	{ "device", required_argument, NULL, O_DEVICE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

struct run_opts {
	int	threads;
	int64_t	stop_after;
	int64_t	min_step_ms;
	int	quiet;
};

static const char *const task_names[] = { "pretrain", "mlm", "classify", NULL };
static const char *const prec_names[] = { "fp32", "bf16", "fp16", NULL };
static const char *const opt_names[] = { "adamw", "lamb", NULL };
static const char *const device_names[] = { "auto", "cpu", "cuda", NULL };
static const char *const sched_names[] = { "constant", "linear", "poly", NULL };

/* train.json first (wherever --config stands), then the flags over it. */
static void
parse_train_args(int argc, char **argv, struct train_config *tc, struct run_opts *ro)
{
	char	err[1024];
	int	ch, i;

	traincfg_defaults(tc);
	memset(ro, 0, sizeof *ro);
	ro->stop_after = -1;
	for (i = 1; i < argc; i++) {
		const char *file = NULL;

		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			file = argv[++i];
		else if (strncmp(argv[i], "--config=", 9) == 0)
			file = argv[i] + 9;
		if (file != NULL && traincfg_load(tc, file, err, sizeof err) != 0)
			usage_fail("%s", err);
	}
	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", train_opts, NULL)) != -1) {
		switch (ch) {
		case O_CONFIG: break;
		case O_DATA: set_str(&tc->data, optarg, 1, "--data"); break;
		case O_EVAL: set_str(&tc->eval_data, optarg, 1, "--eval-data"); break;
		case O_VOCAB: set_str(&tc->vocab, optarg, 1, "--vocab"); break;
		case O_OUT: set_str(&tc->out, optarg, 1, "--out"); break;
		case O_RESUME:
			if (strcmp(optarg, "auto") == 0 || strcmp(optarg, "none") == 0)
				set_str(&tc->resume, optarg, 0, "--resume");
			else
				set_str(&tc->resume, optarg, 1, "--resume");
			break;
		case O_MODEL:
			{
				struct bert_config bc;

				if (bert_config_preset(optarg, &bc) != 0)
					usage_fail("--model: unknown model '%s': expected bert-tiny, "
					    "bert-mini, bert-small, bert-medium, bert-base or "
					    "bert-large", optarg);
				set_str(&tc->model, optarg, 0, "--model");
			}
			break;
		case O_INIT: set_str(&tc->init, optarg, 1, "--init"); break;
		case O_TASK: tc->task = (enum train_task)opt_enum("--task", optarg, task_names); break;
		case O_STEPS: tc->steps = opt_int("--steps", optarg, 1, 1000000000000LL); break;
		case O_BATCH: tc->batch_size = (int)opt_int("--batch", optarg, 1, 65536); break;
		case O_SEQ: tc->seq_len = (int)opt_int("--seq", optarg, 2, 65536); break;
		case O_ACCUM: tc->grad_accum = (int)opt_int("--grad-accum", optarg, 1, 65536); break;
		case O_PREC: tc->precision = (enum train_precision)opt_enum("--precision", optarg, prec_names); break;
		case O_OPT: tc->optimizer = (enum optim_kind)opt_enum("--optimizer", optarg, opt_names); break;
		case O_LR: tc->lr = opt_num("--lr", optarg, 0, 10); break;
		case O_WD: tc->weight_decay = opt_num("--weight-decay", optarg, 0, 10); break;
		case O_B1: tc->beta1 = opt_num("--beta1", optarg, 0, 0.999999); break;
		case O_B2: tc->beta2 = opt_num("--beta2", optarg, 0, 0.999999999); break;
		case O_EPS: tc->eps = opt_num("--eps", optarg, 1e-30, 1); break;
		case O_WARMUP: tc->warmup = opt_num("--warmup", optarg, 0, 1); break;
		case O_SCHED: tc->schedule = (enum lr_schedule)opt_enum("--schedule", optarg, sched_names); break;
		case O_POWER: tc->power = opt_num("--poly-power", optarg, 0, 100); break;
		case O_CLIP: tc->grad_clip = opt_num("--grad-clip", optarg, 0, 1e9); break;
		case O_DROPOUT: tc->dropout = opt_num("--dropout", optarg, 0, 0.99); break;
		case O_GCKPT: tc->grad_checkpointing = 1; break;
		case O_KEEPTIMED: tc->keep_timed = 1; break;
		case O_CKEVERY: tc->checkpoint_every = opt_num("--checkpoint-every", optarg, 0, 1e9); break;
		case O_KEEP: tc->keep_checkpoints = (int)opt_int("--keep", optarg, 1, 1000000); break;
		case O_LOGEVERY: tc->log_every = (int)opt_int("--log-every", optarg, 1, 1000000000); break;
		case O_SKIP: tc->skip_steps = opt_int("--skip-steps", optarg, 0, 1000000000000LL); break;
		case O_SEED: tc->seed = (uint64_t)opt_int("--seed", optarg, 0, 0x7fffffffffffffffLL); break;
		case O_THREADS: ro->threads = (int)opt_int("--threads", optarg, 1, 4096); break;
		case O_STOPAFTER: ro->stop_after = opt_int("--stop-after", optarg, 1, 1000000000000LL); break;
		case O_MINSTEP: ro->min_step_ms = opt_int("--min-step-ms", optarg, 0, 3600000); break;
		case O_QUIET: ro->quiet = 1; break;
		case O_DEVICE: tc->device = (enum train_device)opt_enum("--device", optarg, device_names); break;
		case 'h': train_usage(stdout); exit(0);
		default: train_usage(stderr); exit(TRAIN_EXIT_USAGE);
		}
	}
	if (optind != argc)
		usage_fail("train: unexpected argument '%s' (see cadre-train train --help)",
		    argv[optind]);
	if (traincfg_check(tc, err, sizeof err) != 0 ||
	    traincfg_expand_paths(tc, err, sizeof err) != 0)
		usage_fail("%s", err);
	if (tc->model != NULL) {
		struct bert_config bc;

		if (bert_config_preset(tc->model, &bc) != 0)
			usage_fail("model: unknown preset '%s': expected bert-tiny, bert-mini, "
			    "bert-small, bert-medium, bert-base, bert-large or an object of "
			    "dimensions", tc->model);
	}
}

/* The model's configuration from the preset or dimensions, the init
 * directory's config.json and the shards. */
static void
model_config(const struct train_config *tc, const struct shard_info *si,
    struct bert_config *c)
{
	char	err[1024], *path;

	if (tc->model != NULL) {
		if (bert_config_preset(tc->model, c) != 0)
			usage_fail("model: unknown preset '%s'", tc->model);
	} else {
		bert_config_preset("bert-tiny", c);
		c->layers = tc->layers;
		c->hidden = tc->hidden;
		c->heads = tc->heads;
		c->intermediate = tc->intermediate;
		c->vocab = tc->vocab_size;
		c->max_position = tc->max_position;
	}
	c->task = tc->task == TASK_CLASSIFY ? BERT_CLASSIFY : BERT_PRETRAIN;
	c->num_labels = tc->task == TASK_CLASSIFY ? (int)si->num_labels : 2;
	if (tc->init != NULL) {
		xasprintf(&path, "%s/config.json", tc->init);
		if (model_load_config(path, c, err, sizeof err) != 0)
			usage_fail("init: %s", err);
		free(path);
	}
	c->hidden_dropout = c->attn_dropout = (float)tc->dropout;
	if (bert_config_check(c, err, sizeof err) != 0)
		usage_fail("bad model configuration: %s", err);
	if (tc->seq_len > c->max_position)
		usage_fail("seq_len %d exceeds the model's %d positions", tc->seq_len,
		    c->max_position);
	if (si->vocab_size > (uint32_t)c->vocab)
		usage_fail("%s: the shards' vocab has %u tokens but the model's embedding "
		    "table %d: use a model with vocab_size >= %u", tc->data, si->vocab_size,
		    c->vocab, si->vocab_size);
	if (tc->task == TASK_CLASSIFY && si->kind != SHARD_CLASSIFY)
		usage_fail("%s: pretraining shards, but task is classify: make them with "
		    "cadre-train prep --task classify, or set task pretrain", tc->data);
	if (tc->task != TASK_CLASSIFY && si->kind != SHARD_PRETRAIN)
		usage_fail("%s: classification shards, but task is %s: set task classify",
		    tc->data, traincfg_task_name(tc->task));
}

/* The memory this process may use: the smallest of RLIMIT_AS, RLIMIT_DATA
 * and the cgroup's memory.max (Slurm's and PBS's job limit), or 0 when
 * none is set. CADRE_TRAIN_TEST_MEMORY_LIMIT=BYTES stands in for them in
 * tests (the sanitizers reserve more address space than any limit). */
static uint64_t
memory_limit(const char **what)
{
	struct rlimit	 rl;
	uint64_t	 lim = 0, v;
	const char	*env = getenv("CADRE_TRAIN_TEST_MEMORY_LIMIT");
	FILE		*f;
	char		 line[64];

	*what = "none";
	if (env != NULL) {
		*what = "CADRE_TRAIN_TEST_MEMORY_LIMIT";
		return strtoull(env, NULL, 10);
	}
	if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		lim = rl.rlim_cur;
		*what = "the address-space limit (ulimit -v)";
	}
	if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (lim == 0 || rl.rlim_cur < lim)) {
		lim = rl.rlim_cur;
		*what = "the data limit (ulimit -d)";
	}
	if ((f = fopen("/sys/fs/cgroup/memory.max", "r")) != NULL) {
		if (fgets(line, sizeof line, f) != NULL && line[0] >= '0' && line[0] <= '9' &&
		    (v = strtoull(line, NULL, 10)) > 0 && (lim == 0 || v < lim)) {
			lim = v;
			*what = "the cgroup's memory.max (the job's memory limit)";
		}
		fclose(f);
	}
	return lim;
}

/*
 * A run that cannot fit fails now with exit 3 rather than being killed by
 * the kernel later (which looks like a lost node). The estimate is a lower
 * bound: parameters, gradients, two moments and the checkpoint snapshot's
 * three copies, and the activations the layers keep (eight (N,H) and two
 * (N,I) arrays a layer, one layer's with checkpointing).
 */
static void
check_memory(const struct bert_model *m, int B, int T, int rank,
    struct metrics_writer *mx, struct dist *d)
{
	const struct bert_config	*c = &m->cfg;
	const char			*what;
	uint64_t			 lim = memory_limit(&what), need, N = (uint64_t)B * T;
	char				 msg[512];

	if (lim == 0)
		return;
	need = (uint64_t)m->nparams * 4 * (rank == 0 ? 7 : 4) +
	    (uint64_t)(m->grad_ckpt ? 1 : c->layers) * N *
	    (8 * (uint64_t)c->hidden + 2 * (uint64_t)c->intermediate) * 4;
	if (need <= lim)
		return;
	snprintf(msg, sizeof msg, "out of memory: the model (%zu parameters) and a "
	    "micro-batch of %d x %d need at least %.2f GiB, more than %s allows "
	    "(%.2f GiB): use a smaller batch, --grad-checkpointing, or more memory",
	    m->nparams, B, T, (double)need / 1073741824.0, what,
	    (double)lim / 1073741824.0);
	fprintf(stderr, "cadre-train: %s\n", msg);
	if (mx != NULL) {
		mx_begin(mx, "error");
		mx_str(mx, "kind", "oom");
		mx_str(mx, "message", msg);
		mx_end(mx);
	}
	dist_abort(d, TRAIN_EXIT_OOM);
}

/* Counts the labelled positions whose arg-max logit is the target. */
static double
mlm_correct(const struct bert_model *m)
{
	const struct bert_acts	*a = &m->a;
	double			 ok = 0;
	int			 i, j, V = m->cfg.vocab;

	for (i = 0; i < a->M; i++) {
		const float	*row = a->mlm_logits + (size_t)i * V;
		int		 best = 0;

		for (j = 1; j < V; j++)
			if (row[j] > row[best])
				best = j;
		ok += best == a->mtarget[i];
	}
	return ok;
}

static double
seq_correct(const struct bert_model *m, const struct bert_batch *b)
{
	const struct bert_acts	*a = &m->a;
	int			 C = m->cfg.task == BERT_PRETRAIN ? 2 : m->cfg.num_labels;
	int			 i, j;
	double			 ok = 0;

	for (i = 0; i < b->B; i++) {
		const float	*row = a->seq_logits + (size_t)i * C;
		int		 best = 0;

		for (j = 1; j < C; j++)
			if (row[j] > row[best])
				best = j;
		ok += best == b->seq_labels[i];
	}
	return ok;
}

int
evaluate(struct bert_model *m, struct loader *l, struct dist *d, int batch,
    double out[6])
{
	uint64_t	n, k;
	int		error, masked;

	memset(out, 0, 6 * sizeof *out);
	n = loader_epoch_sequences(l) / ((uint64_t)d->nranks * (uint64_t)batch);
	for (k = 0; k < n; k++) {
		struct bert_batch bb;

		if ((error = loader_next(l, &bb, &masked)) != 0)
			return error;
		bert_forward(m, &bb, 0, 0, 0.0f);
		out[0] += m->mlm_sum;
		out[2] += m->a.M;
		if (m->cfg.task == BERT_PRETRAIN)
			out[1] += mlm_correct(m);
		out[3] += m->seq_sum;
		out[4] += seq_correct(m, &bb);
		out[5] += bb.B;
	}
	dist_sum_f64(d, out, 6);
	return 0;
}

static void
mx_checkpoint(struct metrics_writer *mx, const struct ckpt_result *r)
{
	char path[64];

	snprintf(path, sizeof path, "checkpoints/step-%lld", (long long)r->step);
	mx_begin(mx, "checkpoint");
	mx_int(mx, "step", r->step);
	mx_num(mx, "elapsed_s", r->elapsed_s);
	mx_int(mx, "samples", r->samples);
	mx_str(mx, "path", path);
	mx_str(mx, "reason", r->reason);
	if (r->due_s > 0)
		mx_num(mx, "due_s", r->due_s);
	mx_num(mx, "stall_ms", r->stall_ms);
	mx_num(mx, "write_ms", r->write_ms);
	mx_int(mx, "bytes", (int64_t)r->bytes);
	if (mx_end(mx) != 0)
		log_warn("metrics.jsonl: %s", strerror(errno));
}

static void
mx_error(struct metrics_writer *mx, const char *kind, const char *msg)
{
	if (mx == NULL)
		return;
	mx_begin(mx, "error");
	mx_str(mx, "kind", kind);
	mx_str(mx, "message", msg);
	mx_end(mx);
}

/* A finished checkpoint write: its metrics line, or, when it failed,
 * the error (the previous checkpoint is intact: the write went to a
 * temporary directory). */
static int
checkpoint_done(struct metrics_writer *mx, const struct ckpt_result *r,
    int quiet)
{
	if (r->error != 0) {
		log_error("checkpoint at step %lld failed: %s (the previous checkpoint is "
		    "intact)", (long long)r->step, r->message);
		mx_error(mx, "io", r->message);
		return -1;
	}
	if (!quiet)
		log_info("checkpoint step-%lld (%s): %.1f MB in %.0f ms, loop held %.0f ms",
		    (long long)r->step, r->reason, (double)r->bytes / 1e6, r->write_ms,
		    r->stall_ms);
	mx_checkpoint(mx, r);
	return 0;
}

/* What the parts of `train` share. */
struct run {
	struct train_config	 tc;
	struct run_opts		 ro;
	struct dist		 d;
	struct loader_config	 lc;
	struct loader		*l;
	struct bert_config	 c;
	struct bert_model	 m;
	struct optim		 o;
	struct ckpt_state	 st;	/* the counters after the last step */
	struct ckpt_writer	*w;	/* rank 0 */
	struct metrics_writer	*mx;	/* rank 0 */
	char			*resumed;	/* the checkpoint resumed from */
	int			 B, A, T, mlm;
	int64_t			 gB;	/* sequences per optimizer step, all ranks */
	int			 cuda;	/* the step runs on the GPU (docs/gpu.md) */
	int			 ncclenv;	/* ranks from WORLD_SIZE/RANK, not MPI */
	struct gpu_trainer	*gpu;
	int64_t			 skipped;	/* fp16 steps skipped (inf/NaN) */
};

/* The process's GPU among the node's: the local rank (Open MPI, Slurm,
 * torchrun), modulo the devices. */
static int
local_rank(void)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_LOCAL_RANK",
		"SLURM_LOCALID", "LOCAL_RANK", NULL };
	int i;

	for (i = 0; vars[i] != NULL; i++) {
		const char *v = getenv(vars[i]);

		if (v != NULL && *v >= '0' && *v <= '9')
			return atoi(v);
	}
	return 0;
}

/* --device auto|cpu|cuda resolved: 1 for the GPU. */
static int
choose_device(const struct train_config *tc)
{
	int n;

	if (tc->device == DEV_CPU)	/* no CUDA call at all */
		return 0;
	n = gpu_count();
	if (tc->device == DEV_CUDA || tc->precision != PREC_FP32) {
		if (n == 0)
			usage_fail("%s: %s", tc->precision != PREC_FP32 ?
			    "the CPU trainer computes in fp32 only (bf16 and fp16 are the "
			    "CUDA path's)" : "device cuda", "no CUDA device is visible "
			    "(nvidia-smi -L lists none, CUDA_VISIBLE_DEVICES hides them, or "
			    "this cadre-train was built without CUDA): use --device cpu "
			    "--precision fp32");
		return 1;
	}
	return n > 0;
}

/*
 * GPU ranks started without MPI, as torchrun starts them (WORLD_SIZE,
 * RANK; MASTER_ADDR and MASTER_PORT for NCCL's rendezvous): the ranks
 * come from the environment and every reduction goes through NCCL.
 */
static int
env_ranks(struct run *r)
{
	const char	*ws = getenv("WORLD_SIZE"), *rk = getenv("RANK");
	long long	 w, k;

	if (!r->cuda || r->d.mpi || ws == NULL)
		return 0;
	w = opt_int("WORLD_SIZE", ws, 1, 65536);
	if (w == 1)
		return 0;
	if (rk == NULL)
		usage_fail("WORLD_SIZE is %lld but RANK is not set", w);
	k = opt_int("RANK", rk, 0, w - 1);
	r->d.rank = (int)k;
	r->d.nranks = (int)w;
	return 1;
}

/* dist.c's reductions, or NCCL's for ranks from the environment. */
static void
run_sum_f64(struct run *r, double *x, int n)
{
	if (r->ncclenv)
		gpu_comm_sum_f64(r->gpu, x, n);
	else
		dist_sum_f64(&r->d, x, n);
}

static void
run_max_i64(struct run *r, int64_t *x, int n)
{
	if (r->ncclenv)
		gpu_comm_max_i64(r->gpu, x, n);
	else
		dist_max_i64(&r->d, x, n);
}

/* Rank 0's values to every rank (the others' are replaced). */
static void
run_bcast_i64(struct run *r, int64_t *x, int n)
{
	double	v[8];
	int	i;

	if (!r->ncclenv || n > 8) {
		dist_bcast_i64(&r->d, x, n);
		return;
	}
	/* a sum where only rank 0 contributes (small integers: exact) */
	for (i = 0; i < n; i++)
		v[i] = r->d.rank == 0 ? (double)x[i] : 0.0;
	gpu_comm_sum_f64(r->gpu, v, n);
	for (i = 0; i < n; i++)
		x[i] = (int64_t)v[i];
}

/* The model's buffers on the GPU and NCCL among the ranks (MPI's, or
 * the environment's); the weights come with run_gpu_upload, after a
 * resume loaded them on the host. */
static void
run_gpu_open(struct run *r)
{
	char	err[1024];
	int	error;

	if (!r->cuda)
		return;
	if ((error = gpu_open(&r->m, r->B, r->T, (int)r->tc.precision,
	    r->tc.grad_checkpointing, local_rank(), &r->gpu, err, sizeof err)) != 0) {
		fprintf(stderr, "cadre-train: GPU: %s\n", err);
		if (error == CADRE_ERR_NOMEM) {
			mx_error(r->mx, "oom", err);
			dist_abort(&r->d, TRAIN_EXIT_OOM);
		}
		dist_abort(&r->d, TRAIN_EXIT_ERROR);
	}
	if (r->ncclenv) {
		int rank, n;

		if (gpu_comm_init_env(r->gpu, &rank, &n, err, sizeof err) != 0) {
			fprintf(stderr, "cadre-train: GPU: %s\n", err);
			dist_abort(&r->d, TRAIN_EXIT_ERROR);
		}
	} else if (r->d.nranks > 1) {
		uint8_t	id[GPU_COMM_ID_BYTES];
		int64_t	w[GPU_COMM_ID_BYTES / 8];

		memset(id, 0, sizeof id);
		if (r->d.rank == 0 && gpu_comm_id(id, err, sizeof err) != 0) {
			fprintf(stderr, "cadre-train: GPU: %s\n", err);
			dist_abort(&r->d, TRAIN_EXIT_ERROR);
		}
		memcpy(w, id, sizeof w);
		dist_bcast_i64(&r->d, w, GPU_COMM_ID_BYTES / 8);
		memcpy(id, w, sizeof id);
		if (gpu_comm_init(r->gpu, id, r->d.rank, r->d.nranks, err, sizeof err) != 0) {
			fprintf(stderr, "cadre-train: GPU: %s\n", err);
			dist_abort(&r->d, TRAIN_EXIT_ERROR);
		}
	}
}

static void
run_gpu_upload(struct run *r)
{
	if (r->gpu == NULL)
		return;
	gpu_upload(r->gpu, &r->m, &r->o);
	if (r->st.loss_scale > 0.0f)
		gpu_set_loss_scale(r->gpu, r->st.loss_scale);
}

/* Flags, the loader, the model, the optimizer: everything but the
 * checkpoint to resume from. */
static void
run_open(struct run *r, int argc, char **argv)
{
	struct train_config	*tc = &r->tc;
	char			 err[1024];

	parse_train_args(argc, argv, tc, &r->ro);
	r->cuda = choose_device(tc);
	if (dist_init(&r->d, &argc, &argv, err, sizeof err) != 0)
		fatalx("%s", err);
	r->ncclenv = env_ranks(r);
	ops_set_threads(r->ro.threads);
	r->B = tc->batch_size;
	r->A = tc->grad_accum;
	r->T = tc->seq_len;
	r->mlm = tc->task != TASK_CLASSIFY;
	r->gB = (int64_t)r->B * r->d.nranks * r->A;
	if (r->d.rank == 0 && mkdir(tc->out, 0755) == -1 && errno != EEXIST)
		usage_fail("out: %s: %s", tc->out, strerror(errno));

	r->lc.dir = tc->data;
	r->lc.vocab = tc->vocab;
	r->lc.seq_len = r->T;
	r->lc.batch = r->B;
	r->lc.rank = r->d.rank;
	r->lc.nranks = r->d.nranks;
	r->lc.seed = tc->seed;
	r->lc.mlm = r->mlm;
	r->lc.mask_prob = 0.15f;
	r->lc.prefetch = 2;
	if (loader_open(&r->lc, &r->l, err, sizeof err) != 0)
		usage_fail("%s", err);
	model_config(tc, loader_info(r->l), &r->c);

	bert_model_init(&r->m, &r->c);
	r->m.grad_ckpt = tc->grad_checkpointing;
	r->m.dropout_seed = tc->seed;
	if (r->d.rank == 0 && metrics_open(tc->out, &r->mx, err, sizeof err) != 0) {
		fprintf(stderr, "cadre-train: %s\n", err);
		dist_abort(&r->d, TRAIN_EXIT_ERROR);
	}
	/* on the GPU the activations are in device memory (gpu_open checks) */
	check_memory(&r->m, r->cuda ? 0 : r->B, r->T, r->d.rank, r->mx, &r->d);
	bert_init_weights(&r->m, tc->seed, 0.02f, 0);
	if (tc->init != NULL) {
		char *path;

		xasprintf(&path, "%s/model.safetensors", tc->init);
		if (model_load_weights(&r->m, path, err, sizeof err) != 0)
			usage_fail("init: %s", err);
		free(path);
	}
	r->o.kind = tc->optimizer;
	r->o.lr = (float)tc->lr;
	r->o.beta1 = (float)tc->beta1;
	r->o.beta2 = (float)tc->beta2;
	r->o.eps = (float)tc->eps;
	r->o.weight_decay = (float)tc->weight_decay;
	r->o.schedule = tc->schedule;
	r->o.power = (float)tc->power;
	r->o.clip = (float)tc->grad_clip;
	optim_init(&r->o, &r->m);
	r->o.warmup = llround(tc->warmup * (double)tc->steps);
	r->o.total = tc->steps;
	r->st.seed = tc->seed;
	r->st.loss_scale = 1.0f;
}

/* Resume: rank 0 picks the checkpoint, every rank loads that one (the
 * weights, the moments, the counters, the loader's position). */
static void
run_resume(struct run *r)
{
	struct train_config	*tc = &r->tc;
	struct loader_pos	 pos;
	char			 err[1024] = "", *dir = NULL;
	int64_t			 hdr[2] = { -1, 0 };	/* step (-1: none), failed */
	int			 autom = strcmp(tc->resume, "auto") == 0;

	if (r->d.rank == 0 && strcmp(tc->resume, "none") != 0) {
		struct ckpt_state tmp;

		if (autom) {
			ckpt_cleanup(tc->out);
			if (ckpt_find(tc->out, &r->c, &dir, err, sizeof err) != 0)
				hdr[1] = 1;
			else if (dir != NULL)
				hdr[0] = strtoll(strrchr(dir, '/') + 6, NULL, 10);
			free(dir);
			dir = NULL;
		} else if (ckpt_verify(tc->resume, &r->c, &tmp, err, sizeof err) != 0)
			hdr[1] = 1;
		else
			hdr[0] = tmp.step;
	}
	run_bcast_i64(r, hdr, 2);
	if (hdr[1] != 0) {
		if (r->d.rank == 0)
			fprintf(stderr, "cadre-train: resume: %s\n", err);
		dist_finalize(&r->d);
		exit(TRAIN_EXIT_USAGE);
	}
	if (hdr[0] < 0)
		return;
	if (autom)
		xasprintf(&dir, "%s/checkpoints/step-%lld", tc->out, (long long)hdr[0]);
	else
		dir = xstrdup(tc->resume);
	if (ckpt_load(dir, &r->m, &r->o, &r->st, err, sizeof err) != 0) {
		fprintf(stderr, "cadre-train: resume: %s\n", err);
		dist_abort(&r->d, TRAIN_EXIT_USAGE);
	}
	if (r->st.seed != tc->seed && r->d.rank == 0)
		log_warn("resume: the checkpoint was trained with seed %llu, this run "
		    "says %llu: the data order and dropout follow the run's",
		    (unsigned long long)r->st.seed, (unsigned long long)tc->seed);
	pos.epoch = r->st.epoch;
	pos.consumed = r->st.consumed;
	if (loader_seek(r->l, &pos) != 0) {
		fprintf(stderr, "cadre-train: resume: %s: data position (epoch %llu, "
		    "sequence %llu) is outside %s\n", dir, (unsigned long long)pos.epoch,
		    (unsigned long long)pos.consumed, tc->data);
		dist_abort(&r->d, TRAIN_EXIT_USAGE);
	}
	if (autom)
		xasprintf(&r->resumed, "checkpoints/step-%lld", (long long)r->st.step);
	else
		r->resumed = xstrdup(dir);
	if (r->d.rank == 0 && !r->ro.quiet)
		log_info("resuming from %s (step %lld)", dir, (long long)r->st.step);
	free(dir);
}

static void
mx_start(struct run *r)
{
	struct metrics_writer *mx = r->mx;

	mx_begin(mx, "start");
	mx_num(mx, "time", wall_now());
	mx_int(mx, "step", r->st.step);
	mx_str(mx, "resumed_from", r->resumed);
	mx_int(mx, "ranks", r->d.nranks);
	mx_int(mx, "threads", ops_threads());
	mx_str(mx, "model", r->tc.model != NULL ? r->tc.model : "custom");
	mx_str(mx, "task", traincfg_task_name(r->tc.task));
	mx_int(mx, "batch_size", r->B);
	mx_int(mx, "seq_len", r->T);
	mx_int(mx, "grad_accum", r->A);
	mx_int(mx, "global_batch", r->gB);
	mx_str(mx, "precision", traincfg_precision_name(r->tc.precision));
	mx_str(mx, "device", r->cuda ? "cuda" : "cpu");
	mx_str(mx, "commit", commit_id());
	if (mx_end(mx) != 0)
		fatal("metrics.jsonl");
}

/* One step's figures. */
struct step_out {
	double	loss, acc, norm;
	float	lr;
};

/* run_step on the GPU: the same micro-batches, the gradients summed by
 * NCCL during the last backward, the optimizer on the device. */
static void
run_step_gpu(struct run *r, int64_t s, struct step_out *so, int64_t Mg,
    float mlm_scale, float seq_scale)
{
	struct gpu_micro_out	go;
	double			sums[4] = { 0, 0, 0, 0 };
	int			u, masked, skipped = 0;

	gpu_zero_grad(r->gpu);
	for (u = 0; u < r->A; u++) {
		struct bert_batch	bb;
		uint64_t		mb = ((uint64_t)s * (uint64_t)r->A + (uint64_t)u) *
		    (uint64_t)r->d.nranks + (uint64_t)r->d.rank;

		if (loader_next(r->l, &bb, &masked) != 0) {
			mx_error(r->mx, "data", "reading the next batch failed");
			fprintf(stderr, "cadre-train: reading the next batch failed\n");
			dist_abort(&r->d, TRAIN_EXIT_ERROR);
		}
		if (gpu_micro_step(r->gpu, &bb, mb, 1, mlm_scale, seq_scale,
		    u == r->A - 1, &go) != 0) {
			mx_error(r->mx, "data", "a batch the GPU path refused");
			dist_abort(&r->d, TRAIN_EXIT_ERROR);
		}
		sums[0] += go.mlm_sum;
		sums[1] += go.seq_sum;
		sums[2] += go.mlm_correct;
		sums[3] += go.seq_correct;
	}
	run_sum_f64(r, sums, 4);
	gpu_optim_step(r->gpu, &r->o, &so->norm, &skipped);
	r->skipped += skipped;
	so->loss = (Mg > 0 ? sums[0] / (double)Mg : 0.0) +
	    (r->tc.task == TASK_MLM ? 0.0 : sums[1] / (double)r->gB);
	so->acc = r->mlm ? (Mg > 0 ? sums[2] / (double)Mg : NAN) : sums[3] / (double)r->gB;
}

/*
 * Optimizer step s: A micro-batches on every rank, the loss a mean over
 * the global batch (the labelled positions of all of them, counted ahead
 * by loader_peek_masked, and all sequences), the gradients summed over
 * the ranks, one optimizer step.
 */
static void
run_step(struct run *r, int64_t s, struct step_out *so)
{
	double		sums[4] = { 0, 0, 0, 0 };	/* MLM, seq loss; MLM, seq right */
	int64_t		Mg = r->mlm ? loader_peek_masked(r->l, r->A) : 0;
	float		mlm_scale = Mg > 0 ? 1.0f / (float)Mg : 0.0f;
	float		seq_scale = r->tc.task == TASK_MLM ? 0.0f : 1.0f / (float)r->gB;
	int		u, masked;

	so->lr = optim_lr(&r->o, r->o.t);
	if (r->gpu != NULL) {
		run_step_gpu(r, s, so, Mg, mlm_scale, seq_scale);
		return;
	}
	bert_zero_grad(&r->m);
	for (u = 0; u < r->A; u++) {
		struct bert_batch	bb;
		/* the dropout stream: one per micro-batch of every rank,
		 * numbered as the global micro-batches are */
		uint64_t		mb = ((uint64_t)s * (uint64_t)r->A + (uint64_t)u) *
		    (uint64_t)r->d.nranks + (uint64_t)r->d.rank;

		if (loader_next(r->l, &bb, &masked) != 0) {
			mx_error(r->mx, "data", "reading the next batch failed");
			fprintf(stderr, "cadre-train: reading the next batch failed\n");
			dist_abort(&r->d, TRAIN_EXIT_ERROR);
		}
		bert_forward_scaled(&r->m, &bb, mb, 1, mlm_scale, seq_scale);
		sums[0] += r->m.mlm_sum;
		sums[1] += r->m.seq_sum;
		if (r->mlm)
			sums[2] += mlm_correct(&r->m);
		sums[3] += seq_correct(&r->m, &bb);
		bert_backward(&r->m, &bb, mb, 1);
	}
	dist_sum_grads(&r->d, &r->m);
	dist_sum_f64(&r->d, sums, 4);
	so->norm = optim_step(&r->o, &r->m);
	so->loss = (Mg > 0 ? sums[0] / (double)Mg : 0.0) +
	    (r->tc.task == TASK_MLM ? 0.0 : sums[1] / (double)r->gB);
	so->acc = r->mlm ? (Mg > 0 ? sums[2] / (double)Mg : NAN) : sums[3] / (double)r->gB;
}

/* The log interval: steps, their seconds, checkpoint stalls. */
struct interval {
	int64_t	steps;
	double	s, stall;
	int	ckpt;
};

static void
mx_step(struct run *r, const struct step_out *so, struct interval *iv)
{
	struct metrics_writer	*mx = r->mx;
	struct loader_pos	 pos;
	double			 sps = (double)(r->gB * iv->steps) / iv->s;
	double			 eta = (double)(r->tc.steps - r->st.step) * iv->s /
	    (double)iv->steps;

	loader_tell(r->l, &pos);
	mx_begin(mx, "step");
	mx_int(mx, "step", r->st.step);
	mx_num(mx, "epoch", (double)pos.epoch + (double)pos.consumed /
	    (double)loader_epoch_sequences(r->l));
	mx_num(mx, "loss", so->loss);
	if (r->mlm)
		mx_num(mx, "mlm_acc", so->acc);
	else
		mx_null(mx, "mlm_acc");
	mx_num(mx, "lr", so->lr);
	mx_num(mx, "grad_norm", so->norm);
	mx_num(mx, "samples_per_s", sps);
	mx_num(mx, "tokens_per_s", sps * r->T);
	mx_num(mx, "step_ms", iv->s * 1e3 / (double)iv->steps);
	mx_num(mx, "elapsed_s", r->st.elapsed_s);
	mx_int(mx, "samples", r->st.samples);
	if (iv->ckpt)
		mx_num(mx, "checkpoint_ms", iv->stall);
	if (r->tc.precision == PREC_FP16)
		mx_int(mx, "skipped_steps", r->skipped);
	if (mx_end(mx) != 0)
		log_warn("metrics.jsonl: %s", strerror(errno));
	if (!r->ro.quiet)
		fprintf(stderr, "step %lld/%lld  loss %.4f  %.1f samples/s  ETA %d:%02d:%02d\n",
		    (long long)r->st.step, (long long)r->tc.steps, so->loss, sps,
		    (int)(eta / 3600), (int)fmod(eta / 60, 60), (int)fmod(eta, 60));
	memset(iv, 0, sizeof *iv);
}

/* eval_data after the last step: an "eval" line. */
static void
run_eval_data(struct run *r)
{
	struct loader_config	 lc = r->lc;
	struct loader		*el = NULL;
	struct metrics_writer	*mx = r->mx;
	char			 err[1024] = "reading the shards failed";
	double			 ev[6];

	lc.dir = r->tc.eval_data;
	lc.prefetch = 0;
	lc.seed = 1;
	if (loader_open(&lc, &el, err, sizeof err) != 0 ||
	    evaluate(&r->m, el, &r->d, r->B, ev) != 0) {
		fprintf(stderr, "cadre-train: eval: %s\n", err);
		mx_error(mx, "data", err);
		dist_abort(&r->d, TRAIN_EXIT_ERROR);
	}
	loader_close(el);
	if (r->ncclenv)	/* evaluate summed over MPI ranks only */
		gpu_comm_sum_f64(r->gpu, ev, 6);
	if (mx == NULL)
		return;
	mx_begin(mx, "eval");
	mx_int(mx, "step", r->st.step);
	mx_num(mx, "elapsed_s", r->st.elapsed_s);
	if (r->mlm) {
		mx_num(mx, "loss", ev[2] > 0 ? ev[0] / ev[2] : NAN);
		mx_num(mx, "accuracy", ev[2] > 0 ? ev[1] / ev[2] : NAN);
		mx_int(mx, "masked", (int64_t)ev[2]);
	} else {
		mx_num(mx, "loss", ev[5] > 0 ? ev[3] / ev[5] : NAN);
		mx_num(mx, "accuracy", ev[5] > 0 ? ev[4] / ev[5] : NAN);
	}
	mx_int(mx, "sequences", (int64_t)ev[5]);
	if (mx_end(mx) != 0)
		log_warn("metrics.jsonl: %s", strerror(errno));
}

static void
mx_summary(struct run *r, int rc, int64_t start, double *sps, size_t nsps,
    const struct step_out *last)
{
	struct metrics_writer	*mx = r->mx;
	struct rusage		 ru;
	double			 med = median(sps, nsps);

	getrusage(RUSAGE_SELF, &ru);
	mx_begin(mx, "summary");
	mx_int(mx, "step", r->st.step);
	mx_bool(mx, "complete", r->st.step >= r->tc.steps);
	mx_str(mx, "exit", rc == TRAIN_EXIT_PREEMPTED ? "preempted" : "done");
	mx_int(mx, "samples", r->st.samples);
	mx_int(mx, "steps_this_attempt", r->st.step - start);
	mx_int(mx, "skip_steps", r->tc.skip_steps);
	mx_num(mx, "median_samples_per_s", med);
	mx_num(mx, "median_tokens_per_s", med * r->T);
	mx_num(mx, "final_loss", last->loss);
	if (r->mlm)
		mx_num(mx, "mlm_acc", last->acc);
	else
		mx_null(mx, "mlm_acc");
	mx_int(mx, "peak_rss_bytes", (int64_t)ru.ru_maxrss * 1024);
	if (r->gpu != NULL) {
		mx_int(mx, "gpu_bytes", (int64_t)gpu_peak_bytes(r->gpu));
		mx_int(mx, "skipped_steps", r->skipped);
	}
	mx_num(mx, "elapsed_s", r->st.elapsed_s);
	mx_obj_begin(mx, "env");
	mx_str(mx, "commit", commit_id());
	mx_int(mx, "threads", ops_threads());
	mx_int(mx, "ranks", r->d.nranks);
	mx_str(mx, "device", r->cuda ? "cuda" : "cpu");
	mx_str(mx, "blas", ops_blas_core());
	mx_str(mx, "mpi", dist_library(&r->d));
	mx_obj_end(mx);
	if (mx_end(mx) != 0)
		log_warn("metrics.jsonl: %s", strerror(errno));
}

/* Starts a checkpoint of r->st (rank 0: the writer; every rank agrees on
 * the step beforehand). */
static void
run_checkpoint(struct run *r, const char *reason, struct interval *iv)
{
	struct ckpt_result	cr;
	double			stall;
	int			done;

	r->st.wall_time = wall_now();
	/* the device's weights and moments to the host: every rank (the
	 * evaluation after the last step runs on the host's copy) */
	if (r->gpu != NULL) {
		double t0 = mono_s();

		gpu_download(r->gpu, &r->m, &r->o);
		r->st.loss_scale = gpu_loss_scale(r->gpu);
		iv->stall += (mono_s() - t0) * 1e3;
	}
	if (r->w == NULL)
		return;
	ckpt_submit(r->w, &r->m, &r->o, &r->st, reason, &stall, &done, &cr);
	if (done && checkpoint_done(r->mx, &cr, r->ro.quiet) != 0)
		dist_abort(&r->d, TRAIN_EXIT_ERROR);
	iv->stall += stall;
	iv->ckpt = 1;
}

int
cmd_train(int argc, char **argv)
{
	struct run		 r;
	struct ckpt_result	 cr;
	struct loader_pos	 pos;
	struct sigaction	 sa;
	struct interval		 iv;
	struct step_out		 so = { NAN, NAN, NAN, 0.0f };
	char			 err[1024];
	double			 t_attempt, elapsed0, next_mark, *sps;
	int64_t			 s, start, ctl[2], zero = 0;
	size_t			 nsps = 0;
	int			 rc = TRAIN_EXIT_DONE, status = 0;

	memset(&r, 0, sizeof r);
	memset(&iv, 0, sizeof iv);
	/* Before anything slow (MPI, the data, a resume, the GPU): Slurm's
	 * SIGUSR1 comes once, and one during startup must neither kill the
	 * rank nor be lost. The first step then checkpoints and stops. */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	hold_startup();
	run_open(&r, argc, argv);
	run_gpu_open(&r);
	run_resume(&r);
	run_gpu_upload(&r);
	if (r.d.rank == 0 && ckpt_writer_new(r.tc.out, r.tc.keep_checkpoints,
	    r.m.nparams, &r.w, err, sizeof err) != 0) {
		fprintf(stderr, "cadre-train: %s\n", err);
		dist_abort(&r.d, TRAIN_EXIT_ERROR);
	}
	if (r.w != NULL && r.tc.keep_timed)
		ckpt_writer_keep_timed(r.w);

	start = r.st.step;
	if (r.mx != NULL)
		mx_start(&r);
	if (r.d.rank == 0 && !r.ro.quiet)
		log_info("%s L%d H%d A%d, %zu parameters, %d rank(s) x %d thread(s), global "
		    "batch %lld x %d, steps %lld..%lld", r.tc.model != NULL ? r.tc.model :
		    "model", r.c.layers, r.c.hidden, r.c.heads, r.m.nparams, r.d.nranks,
		    ops_threads(), (long long)r.gB, r.T, (long long)start,
		    (long long)r.tc.steps);

	sps = xcalloc((size_t)(r.tc.steps - start > 0 ? r.tc.steps - start : 1), sizeof *sps);
	t_attempt = mono_s();
	elapsed0 = r.st.elapsed_s;
	/* Timed checkpoints at multiples of checkpoint_every of training
	 * time over all attempts (contract C9): a resumed attempt aims at
	 * the next multiple, so a requeue does not shift the marks. */
	next_mark = r.tc.checkpoint_every > 0 ? (floor(elapsed0 /
	    r.tc.checkpoint_every) + 1) * r.tc.checkpoint_every : INFINITY;
	for (s = start; s < r.tc.steps; s++) {
		double		t0 = mono_s(), dt;
		const char	*reason = NULL;

		run_step(&r, s, &so);
		if (r.ro.min_step_ms > 0)
			sleep_until_mono(t0 + (double)r.ro.min_step_ms / 1000.0);
		dt = mono_s() - t0;
		r.st.step = s + 1;
		r.st.samples += r.gB;
		loader_tell(r.l, &pos);
		r.st.epoch = pos.epoch;
		r.st.consumed = pos.consumed;
		r.st.elapsed_s = elapsed0 + (mono_s() - t_attempt);
		if (r.st.step > r.tc.skip_steps)
			sps[nsps++] = (double)r.gB / dt;
		iv.s += dt;
		iv.steps++;

		/* Every rank stops, and checkpoints, at the same step. */
		if (r.ro.stop_after == r.st.step)
			raise(SIGTERM);
		ctl[0] = stop_signal != 0;
		ctl[1] = r.st.elapsed_s >= next_mark;
		run_max_i64(&r, ctl, 2);

		if (r.w != NULL && ckpt_collect(r.w, 0, &cr) &&
		    checkpoint_done(r.mx, &cr, r.ro.quiet) != 0)
			dist_abort(&r.d, TRAIN_EXIT_ERROR);
		if (r.mx != NULL && (r.st.step % r.tc.log_every == 0 ||
		    r.st.step == r.tc.steps || ctl[0]))
			mx_step(&r, &so, &iv);

		if (r.st.step == r.tc.steps)
			reason = "final";
		else if (ctl[0])
			reason = "signal";
		else if (ctl[1])
			reason = "timed";
		r.st.due_s = 0;
		if (ctl[1]) {
			/* the highest mark crossed: a step may span several */
			r.st.due_s = fmax(next_mark, floor(r.st.elapsed_s /
			    r.tc.checkpoint_every) * r.tc.checkpoint_every);
			next_mark = r.st.due_s + r.tc.checkpoint_every;
		}
		if (reason != NULL)
			run_checkpoint(&r, reason, &iv);
		if (ctl[0] && r.st.step < r.tc.steps) {
			rc = TRAIN_EXIT_PREEMPTED;
			break;
		}
	}
	if (r.w != NULL && ckpt_collect(r.w, 1, &cr))
		status = checkpoint_done(r.mx, &cr, r.ro.quiet);
	/* rank 0's last write is part of the attempt: the others wait */
	run_max_i64(&r, &zero, 1);
	if (status != 0)
		dist_abort(&r.d, TRAIN_EXIT_ERROR);
	if (r.d.rank == 0 && rc == TRAIN_EXIT_PREEMPTED && !r.ro.quiet)
		log_info("stopped by signal %d after step %lld: checkpoint written, exit 75",
		    (int)stop_signal, (long long)r.st.step);
	if (rc == TRAIN_EXIT_DONE && r.tc.eval_data != NULL && r.st.step >= r.tc.steps)
		run_eval_data(&r);
	if (r.mx != NULL)
		mx_summary(&r, rc, start, sps, nsps, &so);

	if (r.gpu != NULL && r.d.rank == 0)
		gpu_print_timers(r.gpu, stderr);
	gpu_close(r.gpu);
	free(sps);
	free(r.resumed);
	ckpt_writer_free(r.w);
	metrics_close(r.mx);
	loader_close(r.l);
	optim_free(&r.o);
	bert_model_free(&r.m);
	traincfg_free(&r.tc);
	dist_finalize(&r.d);
	return rc;
}
