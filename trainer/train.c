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
#include "rundir.h"
#include "strutil.h"
#include "optim.h"
#include "train.h"
#include "train_int.h"
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

	snprintf(path, sizeof path, RUNDIR_CHECKPOINTS "/" CKPT_DIR_PREFIX "%lld",
	    (long long)r->step);
	mx_begin(mx, MX_EV_CHECKPOINT);
	mx_int(mx, MX_STEP, r->step);
	mx_num(mx, MX_ELAPSED_S, r->elapsed_s);
	mx_int(mx, MX_SAMPLES, r->samples);
	mx_str(mx, MX_PATH, path);
	mx_str(mx, "reason", r->reason);
	if (r->due_s > 0)
		mx_num(mx, MX_DUE_S, r->due_s);
	mx_num(mx, "stall_ms", r->stall_ms);
	mx_num(mx, "write_ms", r->write_ms);
	mx_int(mx, "bytes", (int64_t)r->bytes);
	if (mx_end(mx) != 0)
		log_warn("metrics.jsonl: %s", strerror(errno));
}

void
mx_error(struct metrics_writer *mx, const char *kind, const char *msg)
{
	if (mx == NULL)
		return;
	mx_begin(mx, MX_EV_ERROR);
	mx_str(mx, MX_KIND, kind);
	mx_str(mx, "message", msg);
	mx_end(mx);
}

/*
 * A finished checkpoint write: its metrics line, or, when it failed, the
 * error. A failed write went to a temporary directory, so the previous
 * checkpoint is intact and training goes on; the next interval writes
 * again. CADRE_ERR_IO only when CKPT_MAX_FAILURES failed in a row.
 */
static int
checkpoint_done(struct run *run, const struct ckpt_result *r)
{
	struct metrics_writer	*mx = run->mx;

	if (r->error != 0) {
		run->ckpt_failures++;
		log_error("checkpoint at step %lld failed (%d in a row): %s (the "
		    "previous checkpoint is intact)", (long long)r->step,
		    run->ckpt_failures, r->message);
		mx_error(mx, REASON_IO, r->message);
		return run->ckpt_failures >= CKPT_MAX_FAILURES ? CADRE_ERR_IO : 0;
	}
	run->ckpt_failures = 0;
	if (!run->ro.quiet)
		log_info("checkpoint step-%lld (%s): %.1f MB in %.0f ms, loop held %.0f ms",
		    (long long)r->step, r->reason, (double)r->bytes / 1e6, r->write_ms,
		    r->stall_ms);
	mx_checkpoint(mx, r);
	return 0;
}

/* The vocabulary the checkpoints carry: train.json's vocab (checked
 * against the shards' hash), else the one prep stored with the shards. */
static void
run_vocab(struct run *r)
{
	char	*path, err[1024];

	if (r->tc.vocab != NULL)
		path = xstrdup(r->tc.vocab);
	else
		xasprintf(&path, "%s/" HF_VOCAB, r->tc.data);
	if (access(path, R_OK) != 0)
		log_warn("%s: %s: the checkpoints hold no tokenizer", path,
		    strerror(errno));
	else if (ckpt_writer_vocab(r->w, path, err, sizeof err) != 0)
		log_warn("%s: the checkpoints hold no tokenizer", err);
	free(path);
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
void
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

static void
mx_start(struct run *r)
{
	struct metrics_writer *mx = r->mx;

	mx_begin(mx, MX_EV_START);
	mx_num(mx, "time", wall_now());
	mx_int(mx, MX_STEP, r->st.step);
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
	/* the gradients' all-reduce: NCCL among GPU ranks (also one rank,
	 * CADRE_FORCE_NCCL=1); absent when there is none */
	if (r->cuda && (r->ncclenv || r->d.nranks > 1))
		mx_str(mx, "comm", "nccl");
	mx_str(mx, "commit", commit_id());
	if (mx_end(mx) != 0)
		fatal(RUNDIR_METRICS);
}

/* One step's figures. */
struct step_out {
	double	loss, acc, norm;
	float	lr;
};

/* A shard failed its verification: the run stops before it trains on
 * it, naming the shard (and the offset where one is known). */
static void
data_failed(struct run *r)
{
	char	msg[1200];

	snprintf(msg, sizeof msg, "reading the next batch failed: %s",
	    loader_error(r->l));
	mx_error(r->mx, "data", msg);
	fprintf(stderr, "cadre-train: %s\n", msg);
	dist_abort(&r->d, TRAIN_EXIT_ERROR);
}

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

		if (loader_next(r->l, &bb, &masked) != 0)
			data_failed(r);
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

	if (Mg < 0)
		data_failed(r);

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

		if (loader_next(r->l, &bb, &masked) != 0)
			data_failed(r);
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
	mx_begin(mx, MX_EV_STEP);
	mx_int(mx, MX_STEP, r->st.step);
	mx_num(mx, "epoch", (double)pos.epoch + (double)pos.consumed /
	    (double)loader_epoch_sequences(r->l));
	mx_num(mx, MX_LOSS, so->loss);
	if (r->mlm)
		mx_num(mx, "mlm_acc", so->acc);
	else
		mx_null(mx, "mlm_acc");
	mx_num(mx, "lr", so->lr);
	mx_num(mx, "grad_norm", so->norm);
	mx_num(mx, MX_SAMPLES_PER_S, sps);
	mx_num(mx, "tokens_per_s", sps * r->T);
	mx_num(mx, "step_ms", iv->s * 1e3 / (double)iv->steps);
	mx_num(mx, MX_ELAPSED_S, r->st.elapsed_s);
	mx_int(mx, MX_SAMPLES, r->st.samples);
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
	mx_begin(mx, MX_EV_EVAL);
	mx_int(mx, MX_STEP, r->st.step);
	mx_num(mx, MX_ELAPSED_S, r->st.elapsed_s);
	if (r->mlm) {
		mx_num(mx, MX_LOSS, ev[2] > 0 ? ev[0] / ev[2] : NAN);
		mx_num(mx, MX_ACCURACY, ev[2] > 0 ? ev[1] / ev[2] : NAN);
		mx_int(mx, "masked", (int64_t)ev[2]);
	} else {
		mx_num(mx, MX_LOSS, ev[5] > 0 ? ev[3] / ev[5] : NAN);
		mx_num(mx, MX_ACCURACY, ev[5] > 0 ? ev[4] / ev[5] : NAN);
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
	mx_begin(mx, MX_EV_SUMMARY);
	mx_int(mx, MX_STEP, r->st.step);
	mx_bool(mx, MX_COMPLETE, r->st.step >= r->tc.steps);
	mx_str(mx, MX_EXIT, rc == TRAIN_EXIT_PREEMPTED ? REASON_PREEMPTED : REASON_DONE);
	mx_int(mx, MX_SAMPLES, r->st.samples);
	mx_int(mx, "steps_this_attempt", r->st.step - start);
	mx_int(mx, "skip_steps", r->tc.skip_steps);
	mx_num(mx, "median_samples_per_s", med);
	mx_num(mx, "median_tokens_per_s", med * r->T);
	mx_num(mx, "final_loss", last->loss);
	if (r->mlm)
		mx_num(mx, "mlm_acc", last->acc);
	else
		mx_null(mx, "mlm_acc");
	mx_int(mx, MX_PEAK_RSS, (int64_t)ru.ru_maxrss * 1024);
	if (r->gpu != NULL) {
		mx_int(mx, "gpu_bytes", (int64_t)gpu_peak_bytes(r->gpu));
		mx_int(mx, "skipped_steps", r->skipped);
	}
	mx_num(mx, MX_ELAPSED_S, r->st.elapsed_s);
	mx_obj_begin(mx, MX_ENV);
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
	if (done && checkpoint_done(r, &cr) != 0)
		dist_abort(&r->d, TRAIN_EXIT_IO);
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
	if (r.w != NULL)
		run_vocab(&r);

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
	 * time over all attempts (docs/contracts.md): a resumed attempt aims at
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
		    checkpoint_done(&r, &cr) != 0)
			dist_abort(&r.d, TRAIN_EXIT_IO);
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
	/* The last checkpoint has no next interval: it is written again
	 * (after a pause, the old ones pruned) until it is, or has failed
	 * CKPT_MAX_FAILURES times in a row. */
	while (r.w != NULL && ckpt_collect(r.w, 1, &cr) &&
	    (status = checkpoint_done(&r, &cr)) == 0 && cr.error != 0) {
		char	reason[sizeof cr.reason];
		double	stall;
		int	done;

		memcpy(reason, cr.reason, sizeof reason);
		sleep_until_mono(mono_s() + 1.0);
		ckpt_submit(r.w, &r.m, &r.o, &r.st, reason, &stall, &done, &cr);
	}
	/* rank 0's last write is part of the attempt: the others wait */
	run_max_i64(&r, &zero, 1);
	if (status != 0)
		dist_abort(&r.d, TRAIN_EXIT_IO);
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
