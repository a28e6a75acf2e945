/*
 * Writing a checkpoint: the files into .tmp-step-N, meta.json with their
 * checksums, the rename to step-N, latest, then the rotation; and the
 * thread that does it from a snapshot while the step loop goes on.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "checkpoint.h"
#include "checkpoint_int.h"
#include "error.h"
#include "fsutil.h"
#include "modelio.h"
#include "rundir.h"
#include "safetensors.h"
#include "tokenizer.h"
#include "xmalloc.h"

static double
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The test hook: CADRE_TRAIN_TEST_SLOW_WRITE=MS sleeps between files. */
static void
slow_write(void)
{
	const char	*s = getenv("CADRE_TRAIN_TEST_SLOW_WRITE");
	long		 ms;

	if (s == NULL || (ms = strtol(s, NULL, 10)) <= 0)
		return;
	if (ms > 600000)
		ms = 600000;
	{
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
			;
	}
}

static int
write_text(const char *path, const char *text)
{
	char	*tmp;
	size_t	 len = strlen(text), off = 0;
	ssize_t	 n;
	int	 fd, error = 0;

	xasprintf(&tmp, "%s.tmp", path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) == -1) {
		free(tmp);
		return CADRE_ERR_SYSTEM;
	}
	while (off < len) {
		if ((n = write(fd, text + off, len - off)) == -1) {
			if (errno == EINTR)
				continue;
			error = CADRE_ERR_SYSTEM;
			break;
		}
		off += (size_t)n;
	}
	if (error == 0 && fsync(fd) == -1)
		error = CADRE_ERR_SYSTEM;
	if (close(fd) == -1 && error == 0)
		error = CADRE_ERR_SYSTEM;
	if (error == 0 && rename(tmp, path) == -1)
		error = CADRE_ERR_SYSTEM;
	if (error != 0) {
		int saved = errno;

		unlink(tmp);
		errno = saved;
	}
	free(tmp);
	return error;
}

/* The tensors of trainer_state.safetensors, added to its writer and to
 * its hash job alike. */
static void
state_add(struct st_writer *w, struct hash_job *j, const char *name,
    enum st_dtype dt, int64_t numel, const int64_t *shape, const void *data)
{
	st_writer_add(w, name, dt, 1, shape, data);
	j->pc[j->npc].name = name;
	j->pc[j->npc].data = data;
	j->pc[j->npc].bytes = (uint64_t)numel * st_dtype_size(dt);
	j->npc++;
}

/* Whether CDIR/step-N is a timed checkpoint; one whose meta.json does
 * not read is not known to be, and the rotation may take it. */
static int
timed_checkpoint(const char *cdir, int64_t step)
{
	struct ckpt_state	 st;
	char			*dir, sums[3][65], err[256];
	int			 timed;

	xasprintf(&dir, "%s/" CKPT_DIR_PREFIX "%" PRId64, cdir, step);
	timed = ckpt_read_meta(dir, &st, sums, err, sizeof err) == 0 &&
	    st.due_s > 0;
	free(dir);
	return timed;
}

/* Once latest names the new checkpoint: the one it replaced (set aside as
 * .old-step-N) and those beyond the newest keep go, but for the timed
 * ones with keep_timed. */
static void
prune(const char *out, int keep, int keep_timed, int64_t step)
{
	char	*cdir, *path;
	int64_t	*steps;
	size_t	 i, n;

	xasprintf(&cdir, "%s/checkpoints", out);
	xasprintf(&path, "%s/" CKPT_OLD_PREFIX CKPT_DIR_PREFIX "%" PRId64, cdir,
	    step);
	ckpt_remove_dir(path);
	free(path);
	n = ckpt_list_steps(cdir, &steps);
	for (i = 0; i < n; i++) {
		if ((int)i < keep || steps[i] == step ||
		    (keep_timed && timed_checkpoint(cdir, steps[i])))
			continue;
		xasprintf(&path, "%s/" CKPT_DIR_PREFIX "%" PRId64, cdir,
		    steps[i]);
		ckpt_remove_dir(path);
		free(path);
	}
	free(steps);
	free(cdir);
}

/* The tokenizer beside the weights, so that transformers' AutoTokenizer
 * loads the checkpoint directory as it is. */
static int
write_tokenizer(const char *dir, const struct cbuf *vocab, uint64_t *bytes,
    char *err, size_t errlen)
{
	static const char	 tc[] = HF_TOKENIZER_CONFIG "\n";
	char			*path;
	int			 error;

	xasprintf(&path, "%s/" HF_VOCAB, dir);
	if ((error = fs_write_atomic(path, vocab->data, vocab->len, 0644)) == 0) {
		free(path);
		xasprintf(&path, "%s/" HF_TOKENIZER_CONFIG_FILE, dir);
		error = fs_write_atomic(path, tc, sizeof tc - 1, 0644);
	}
	if (error != 0)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	else
		*bytes += vocab->len + sizeof tc - 1;
	free(path);
	return error;
}

/* A checkpoint, up to latest naming it; prune() then removes the old.
 * vocab: the run's vocab.txt, written beside the weights; NULL: none. */
static int
write_checkpoint(const char *out, const struct bert_model *m,
    const float *params, const float *mom1, const float *mom2,
    const struct ckpt_state *st, struct hdr_cache *hc,
    const struct cbuf *vocab, uint64_t *bytes, char *err, size_t errlen)
{
	struct bert_model	 snap = *m;
	struct st_writer	*w = NULL;
	struct cbuf		 meta;
	char			*cdir = NULL, *tmp = NULL, *fin = NULL, *path = NULL;
	char			*old = NULL, sums[3][65], line[32];
	int64_t			 one = 1, np = (int64_t)m->nparams;
	int64_t			 i64[5];
	uint64_t		 tokbytes = 0;
	double			 f64 = st->elapsed_s;
	float			 ls = st->loss_scale;
	struct hash_job		 hj[3];
	pthread_t		 hth[2];
	size_t			 i;
	int			 error, hashing = 0, kept;

	*bytes = 0;
	memset(hj, 0, sizeof hj);
	cbuf_init(&meta, CKPT_META_MAX);
	xasprintf(&cdir, "%s/checkpoints", out);
	xasprintf(&tmp, "%s/" CKPT_TMP_PREFIX CKPT_DIR_PREFIX "%" PRId64, cdir,
	    st->step);
	xasprintf(&fin, "%s/" CKPT_DIR_PREFIX "%" PRId64, cdir, st->step);
	if (mkdir(cdir, 0755) == -1 && errno != EEXIST) {
		error = CADRE_ERR_SYSTEM;
		snprintf(err, errlen, "%s: %s", cdir, strerror(errno));
		goto out;
	}
	ckpt_remove_dir(tmp);
	if (mkdir(tmp, 0755) == -1) {
		error = CADRE_ERR_SYSTEM;
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		goto out;
	}

	for (i = 0; i < 3; i++)
		xasprintf(&hj[i].path, "%s/%s", tmp, ckpt_files[i]);
	hj[0].pc = xcalloc(m->ntensors > 0 ? m->ntensors : 1, sizeof *hj[0].pc);
	for (i = 0; i < m->ntensors; i++) {
		hj[0].pc[i].name = m->table[i].name;
		hj[0].pc[i].data = params + m->table[i].offset;
		hj[0].pc[i].bytes = (uint64_t)m->table[i].numel * sizeof(float);
	}
	hj[0].npc = m->ntensors;
	w = st_writer_new();
	hj[2].pc = xcalloc(9, sizeof *hj[2].pc);
	i64[0] = st->step;
	i64[1] = st->samples;
	i64[2] = (int64_t)st->epoch;
	i64[3] = (int64_t)st->consumed;
	i64[4] = (int64_t)st->seed;
	state_add(w, &hj[2], "optimizer.exp_avg", ST_F32, np, &np, mom1);
	state_add(w, &hj[2], "optimizer.exp_avg_sq", ST_F32, np, &np, mom2);
	state_add(w, &hj[2], "step", ST_I64, 1, &one, &i64[0]);
	state_add(w, &hj[2], "samples", ST_I64, 1, &one, &i64[1]);
	state_add(w, &hj[2], "loader.epoch", ST_I64, 1, &one, &i64[2]);
	state_add(w, &hj[2], "loader.consumed", ST_I64, 1, &one, &i64[3]);
	state_add(w, &hj[2], "seed", ST_I64, 1, &one, &i64[4]);
	state_add(w, &hj[2], "elapsed_s", ST_F64, 1, &one, &f64);
	state_add(w, &hj[2], "loss_scale", ST_F32, 1, &one, &ls);

	/*
	 * With the headers of the last checkpoint, each large file is hashed
	 * on a thread of its own beside both writes (one thread hashing both
	 * took longer than the writes). Without, the optimizer state (two
	 * thirds of the bytes) is written first, then hashed beside the
	 * model's write, and the model hashed last: the hash that cannot
	 * overlap a write is the smaller one.
	 */
	kept = hc != NULL && hc->hdr[0] != NULL && hc->hdr[1] != NULL;
	if (kept) {
		for (i = 0; i < 3; i += 2) {
			hj[i].hdrlen = hc->len[i / 2];
			hj[i].hdr = xmalloc(hj[i].hdrlen);
			memcpy(hj[i].hdr, hc->hdr[i / 2], hj[i].hdrlen);
			if (pthread_create(&hth[i / 2], NULL, ckpt_hash_main, &hj[i]) == 0)
				hashing |= 1 << i;
		}
	}
	if ((error = st_writer_write(w, hj[2].path)) != 0) {
		snprintf(err, errlen, "%s: %s", hj[2].path, strerror(errno));
		goto out;
	}
	slow_write();
	if (!kept && pthread_create(&hth[1], NULL, ckpt_hash_main, &hj[2]) == 0)
		hashing |= 1 << 2;
	/* model_save reads the parameters through the table: point a copy
	 * of the model at the snapshot. */
	snap.params_mem = (float *)(uintptr_t)params;
	if ((error = model_save(&snap, tmp, err, errlen)) != 0)
		goto out;
	if (vocab != NULL && (error = write_tokenizer(tmp, vocab, &tokbytes,
	    err, errlen)) != 0)
		goto out;
	slow_write();
	for (i = 0; i < 3; i += 2)
		if (!(hashing & 1 << i))
			ckpt_hash_main(&hj[i]);
	ckpt_join_hashing(hth, &hashing);
	if ((error = ckpt_hash_jobs_finish(hj, hc, sums, bytes, err, errlen)) != 0)
		goto out;
	*bytes += tokbytes;
	cbuf_addf(&meta, "{\n  \"version\": %d,\n  \"step\": %" PRId64 ",\n"
	    "  \"time\": %.3f,\n  \"elapsed_s\": %.17g,\n  \"samples\": %" PRId64 ",\n"
	    "  \"data\": {\"epoch\": %" PRIu64 ", \"consumed\": %" PRIu64 "},\n"
	    "  \"seed\": %" PRIu64 ",\n  \"parameters\": %zu,\n",
	    CKPT_VERSION, st->step, st->wall_time, st->elapsed_s, st->samples,
	    st->epoch, st->consumed, st->seed, m->nparams);
	/* only a timed one has it: cadred records those (docs/contracts.md) */
	if (st->due_s > 0)
		cbuf_addf(&meta, "  \"due_s\": %.17g,\n", st->due_s);
	cbuf_adds(&meta, "  \"files\": {\n");
	for (i = 0; i < 3; i++)
		cbuf_addf(&meta, "    \"%s\": \"%s\"%s\n", ckpt_files[i], sums[i],
		    i < 2 ? "," : "");
	cbuf_adds(&meta, "  }\n}\n");
	free(path);
	xasprintf(&path, "%s/" CKPT_META, tmp);
	if ((error = write_text(path, meta.data)) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	*bytes += meta.len;
	if (fs_fsync_dir(tmp) != 0) {
		error = CADRE_ERR_SYSTEM;
		snprintf(err, errlen, "%s: fsync: %s", tmp, strerror(errno));
		goto out;
	}
	/* A checkpoint of this step may exist (a run stopped right after
	 * one): set it aside, then put the new one in its place. */
	xasprintf(&old, "%s/" CKPT_OLD_PREFIX CKPT_DIR_PREFIX "%" PRId64, cdir,
	    st->step);
	ckpt_remove_dir(old);
	if (rename(fin, old) == -1 && errno != ENOENT) {
		error = CADRE_ERR_SYSTEM;
		snprintf(err, errlen, "%s: %s", fin, strerror(errno));
		goto out;
	}
	if (rename(tmp, fin) == -1) {
		error = CADRE_ERR_SYSTEM;
		snprintf(err, errlen, "rename %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (fs_fsync_dir(cdir) != 0) {
		error = CADRE_ERR_SYSTEM;
		snprintf(err, errlen, "%s: fsync: %s", cdir, strerror(errno));
		goto out;
	}
	snprintf(line, sizeof line, CKPT_DIR_PREFIX "%" PRId64 "\n", st->step);
	free(path);
	xasprintf(&path, "%s/" CKPT_LATEST, cdir);
	if ((error = write_text(path, line)) == 0 && fs_fsync_dir(cdir) != 0)
		error = CADRE_ERR_SYSTEM;
	if (error != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
out:
	ckpt_join_hashing(hth, &hashing);
	ckpt_hash_jobs_free(hj);
	if (error != 0 && tmp != NULL)
		ckpt_remove_dir(tmp);
	if (w != NULL)
		st_writer_free(w);
	cbuf_free(&meta);
	free(old);
	free(path);
	free(fin);
	free(tmp);
	free(cdir);
	return error;
}

int
ckpt_write(const char *out, int keep, const struct bert_model *m,
    const float *params, const float *mom1, const float *mom2,
    const struct ckpt_state *st, uint64_t *bytes, char *err, size_t errlen)
{
	int error;

	if ((error = write_checkpoint(out, m, params, mom1, mom2, st, NULL, NULL, bytes,
	    err, errlen)) == 0)
		prune(out, keep, 0, st->step);
	return error;
}

/* ---------------------------------------------------------------- the writer thread */

struct ckpt_writer {
	char			*out;
	int			 keep;
	int			 keep_timed;
	pthread_t		 thread;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	int			 busy;		/* a write in flight */
	int			 have_result;	/* a finished write not yet collected */
	int			 quit;
	/* the snapshot, owned by the thread while busy */
	struct bert_model	 model;		/* shallow: table and config */
	float			*params, *m, *v;
	size_t			 cap;
	struct ckpt_state	 st;
	struct ckpt_result	 res;
	struct hdr_cache	 hc;		/* the thread's */
	struct cbuf		 vocab;		/* data NULL: none */
};

static void *
writer_main(void *arg)
{
	struct ckpt_writer	*w = arg;
	struct ckpt_result	 r;
	double			 t0;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->busy && !w->quit)
			pthread_cond_wait(&w->cv, &w->mu);
		if (!w->busy)
			break;
		r = w->res;
		pthread_mutex_unlock(&w->mu);

		t0 = mono_ms();
		r.error = write_checkpoint(w->out, &w->model, w->params, w->m, w->v,
		    &w->st, &w->hc, w->vocab.data != NULL ? &w->vocab : NULL,
		    &r.bytes, r.message, sizeof r.message);
		/* write_ms ends with latest naming the checkpoint; the old
		 * ones' removal (a third of a second for a bert-base
		 * checkpoint here) is housekeeping after it, though a submit
		 * still waits for it. */
		r.write_ms = mono_ms() - t0;
		/* after a failure too: the space of the old ones helps the
		 * next write (-1: no step of this write is kept) */
		prune(w->out, w->keep, w->keep_timed, r.error == 0 ? w->st.step : -1);

		pthread_mutex_lock(&w->mu);
		w->res = r;
		w->busy = 0;
		w->have_result = 1;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int
ckpt_writer_new(const char *out, int keep, size_t nparams,
    struct ckpt_writer **wp, char *err, size_t errlen)
{
	struct ckpt_writer	*w;
	int			 e;

	*wp = NULL;
	w = xcalloc(1, sizeof *w);
	w->out = xstrdup(out);
	w->keep = keep;
	/* Allocated and touched now: page faults in the first snapshot
	 * would be part of the stall (a third of it on bert-mini). */
	if (nparams > 0) {
		w->params = xmalloc(nparams * sizeof(float));
		w->m = xmalloc(nparams * sizeof(float));
		w->v = xmalloc(nparams * sizeof(float));
		memset(w->params, 0, nparams * sizeof(float));
		memset(w->m, 0, nparams * sizeof(float));
		memset(w->v, 0, nparams * sizeof(float));
		w->cap = nparams;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	if ((e = pthread_create(&w->thread, NULL, writer_main, w)) != 0) {
		snprintf(err, errlen, "checkpoint writer thread: %s", strerror(e));
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		free(w->params);
		free(w->m);
		free(w->v);
		free(w->out);
		free(w);
		return CADRE_ERR_SYSTEM;
	}
	*wp = w;
	return 0;
}

int
ckpt_writer_vocab(struct ckpt_writer *w, const char *path, char *err,
    size_t errlen)
{
	int	error;

	pthread_mutex_lock(&w->mu);
	cbuf_free(&w->vocab);
	cbuf_init(&w->vocab, TOK_VOCAB_MAX_FILE);
	if ((error = cbuf_read_file(&w->vocab, path)) != 0) {
		snprintf(err, errlen, "%s: %s", path, error == CADRE_ERR_TOO_LARGE ?
		    "larger than 64 MiB" : strerror(errno));
		cbuf_free(&w->vocab);
	}
	pthread_mutex_unlock(&w->mu);
	return error;
}

void
ckpt_writer_keep_timed(struct ckpt_writer *w)
{
	pthread_mutex_lock(&w->mu);
	w->keep_timed = 1;
	pthread_mutex_unlock(&w->mu);
}

int
ckpt_collect(struct ckpt_writer *w, int wait, struct ckpt_result *r)
{
	int got = 0;

	pthread_mutex_lock(&w->mu);
	while (wait && w->busy)
		pthread_cond_wait(&w->cv, &w->mu);
	if (w->have_result) {
		*r = w->res;
		w->have_result = 0;
		got = 1;
	}
	pthread_mutex_unlock(&w->mu);
	return got;
}

void
ckpt_submit(struct ckpt_writer *w, const struct bert_model *m,
    const struct optim *o, const struct ckpt_state *st, const char *reason,
    double *stall_ms, int *done, struct ckpt_result *prev)
{
	double	t0 = mono_ms();
	size_t	n = m->nparams;

	*done = ckpt_collect(w, 1, prev);
	/* The thread is idle: the buffers are ours until busy is set. */
	if (w->cap < n) {
		free(w->params);
		free(w->m);
		free(w->v);
		w->params = xcalloc(n, sizeof(float));
		w->m = xcalloc(n, sizeof(float));
		w->v = xcalloc(n, sizeof(float));
		w->cap = n;
	}
	memcpy(w->params, m->params_mem, n * sizeof(float));
	memcpy(w->m, o->m, n * sizeof(float));
	memcpy(w->v, o->v, n * sizeof(float));
	w->model = *m;
	w->st = *st;
	pthread_mutex_lock(&w->mu);
	memset(&w->res, 0, sizeof w->res);
	w->res.step = st->step;
	w->res.elapsed_s = st->elapsed_s;
	w->res.samples = st->samples;
	w->res.due_s = st->due_s;
	snprintf(w->res.reason, sizeof w->res.reason, "%s", reason);
	*stall_ms = mono_ms() - t0;
	w->res.stall_ms = *stall_ms;
	w->busy = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

void
ckpt_writer_free(struct ckpt_writer *w)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->quit = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w->hc.hdr[0]);
	free(w->hc.hdr[1]);
	free(w->params);
	free(w->m);
	free(w->v);
	cbuf_free(&w->vocab);
	free(w->out);
	free(w);
}
