/*
 * `cadre-train train`'s command line: the option table and --help, and
 * the flags over train.json; a usage error exits 2 with its message.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "train.h"
#include "train_int.h"
#include "traincfg.h"
#include "xmalloc.h"

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

static const char *const task_names[] = { "pretrain", "mlm", "classify", NULL };
static const char *const prec_names[] = { "fp32", "bf16", "fp16", NULL };
static const char *const opt_names[] = { "adamw", "lamb", NULL };
static const char *const device_names[] = { "auto", "cpu", "cuda", NULL };
static const char *const sched_names[] = { "constant", "linear", "poly", NULL };

/* train.json first (wherever --config stands), then the flags over it. */
void
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
