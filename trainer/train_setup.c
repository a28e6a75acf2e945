/*
 * `cadre-train train` up to its first step: the model's configuration,
 * the memory check, the device and the ranks, the data, the weights and
 * the optimizer, the GPU, and the checkpoint resumed from.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "checkpoint.h"
#include "dist.h"
#include "error.h"
#include "gpu.h"
#include "loader.h"
#include "log.h"
#include "metrics.h"
#include "model.h"
#include "modelio.h"
#include "ops.h"
#include "optim.h"
#include "rundir.h"
#include "train.h"
#include "train_int.h"
#include "traincfg.h"
#include "xmalloc.h"

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
		/* the shards decide the labels; a classifier of another
		 * number is started afresh (model_load_weights) */
		c->num_labels = tc->task == TASK_CLASSIFY ? (int)si->num_labels : 2;
	}
	c->hidden_dropout = c->attn_dropout = (float)tc->dropout;
	c->label_names = tc->task == TASK_CLASSIFY ? si->label_names : NULL;
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
		mx_begin(mx, MX_EV_ERROR);
		mx_str(mx, MX_KIND, REASON_OOM);
		mx_str(mx, "message", msg);
		mx_end(mx);
	}
	dist_abort(d, TRAIN_EXIT_OOM);
}

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
 * WORLD_SIZE=1 is a plain run, unless CADRE_FORCE_NCCL=1 asks for a
 * one-rank NCCL communicator anyway (a test of the NCCL path on one GPU,
 * docs/gpu.md).
 */
static int
env_ranks(struct run *r)
{
	const char	*ws = getenv("WORLD_SIZE"), *rk = getenv("RANK");
	const char	*force = getenv("CADRE_FORCE_NCCL");
	long long	 w, k;

	if (!r->cuda || r->d.mpi || ws == NULL)
		return 0;
	w = opt_int("WORLD_SIZE", ws, 1, 65536);
	if (w == 1 && (force == NULL || strcmp(force, "1") != 0))
		return 0;
	if (rk == NULL)
		usage_fail("WORLD_SIZE is %lld but RANK is not set", w);
	k = opt_int("RANK", rk, 0, w - 1);
	r->d.rank = (int)k;
	r->d.nranks = (int)w;
	return 1;
}

/* The model's buffers on the GPU and NCCL among the ranks (MPI's, or
 * the environment's); the weights come with run_gpu_upload, after a
 * resume loaded them on the host. */
void
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
			mx_error(r->mx, REASON_OOM, err);
			dist_abort(&r->d, TRAIN_EXIT_OOM);
		}
		dist_abort(&r->d, TRAIN_EXIT_ERROR);
	}
	if (r->ncclenv && r->d.nranks == 1) {
		/* CADRE_FORCE_NCCL=1 with WORLD_SIZE=1: no one to hand the id
		 * to, so no rendezvous; a communicator of this rank alone */
		uint8_t	id[GPU_COMM_ID_BYTES];

		if (gpu_comm_id(id, err, sizeof err) != 0 ||
		    gpu_comm_init(r->gpu, id, 0, 1, err, sizeof err) != 0) {
			fprintf(stderr, "cadre-train: GPU: %s\n", err);
			dist_abort(&r->d, TRAIN_EXIT_ERROR);
		}
		fprintf(stderr, "cadre-train: NCCL: one rank (CADRE_FORCE_NCCL=1)\n");
	} else if (r->ncclenv) {
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

void
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
void
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
		if (model_load_weights(&r->m, path, 0, err, sizeof err) != 0)
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

/* metrics.jsonl's record of a checkpoint resume passed over. */
static void
mx_skipped(void *ctx, int64_t step, const char *why)
{
	struct metrics_writer	*mx = ctx;
	char			 path[64];

	if (mx == NULL)
		return;
	snprintf(path, sizeof path, RUNDIR_CHECKPOINTS "/" CKPT_DIR_PREFIX
	    "%" PRId64, step);
	mx_begin(mx, MX_EV_CHECKPOINT_SKIPPED);
	mx_str(mx, MX_PATH, path);
	mx_str(mx, MX_WHY, why);
	if (mx_end(mx) != 0)
		log_warn("metrics.jsonl: %s", strerror(errno));
}

/* Resume: rank 0 picks the checkpoint, every rank loads that one (the
 * weights, the moments, the counters, the loader's position). */
void
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
			if (ckpt_find(tc->out, &r->c, &dir, mx_skipped, r->mx,
			    err, sizeof err) != 0)
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
		xasprintf(&dir, "%s/" RUNDIR_CHECKPOINTS "/" CKPT_DIR_PREFIX "%lld",
		    tc->out, (long long)hdr[0]);
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
		xasprintf(&r->resumed, RUNDIR_CHECKPOINTS "/" CKPT_DIR_PREFIX "%lld",
		    (long long)r->st.step);
	else
		r->resumed = xstrdup(dir);
	if (r->d.rank == 0 && !r->ro.quiet)
		log_info("resuming from %s (step %lld)", dir, (long long)r->st.step);
	free(dir);
}
