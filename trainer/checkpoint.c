#include "config.h"

#include <dirent.h>
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
#include "error.h"
#include "fsutil.h"
#include "log.h"
#include "modelio.h"
#include "safetensors.h"
#include "sha256.h"
#include "tjson.h"
#include "xmalloc.h"

static const char *const ckpt_files[3] = {
	"model.safetensors", "config.json", "trainer_state.safetensors"
};

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

/* Removes a checkpoint dir (files only); a failure is worth a warning,
 * never an error: the checkpoint it concerns is already given up. */
static void
remove_dir(const char *dir)
{
	if (fs_remove_flat_dir(dir) == -1)
		log_warn("%s: %s", dir, strerror(errno));
}

/*
 * Checksums without reading the files back. model.safetensors and
 * trainer_state.safetensors are 8 bytes of header length, the header, then
 * the tensors' bytes, and those bytes are the snapshot in memory: the
 * header is read back (kilobytes), parsed, each tensor's byte range mapped
 * to the memory it was written from, and the hash fed the header, then the
 * memory in file order. One pass over the data and no copy, where reading
 * the files back cost a copy of 1.3 GB on bert-base and a hash that could
 * not start before its file was written. A model's headers are the same
 * at every checkpoint: the writer thread keeps them from its first
 * checkpoint and hashes while the files are written, then checks the
 * headers on disk against the kept ones. Anything unexpected (a header
 * that differs or does not map) falls back to hashing the file.
 */
struct hash_piece {
	const char	*name;
	const void	*data;
	uint64_t	 bytes;
};

struct hash_job {
	char			*path;
	struct hash_piece	*pc;
	size_t			 npc;
	uint8_t			*hdr;		/* 8 + header bytes: kept or read */
	size_t			 hdrlen;
	int			 mapped;	/* hex is of hdr + the pieces */
	char			 hex[65];
	uint64_t		 bytes;
	int			 error, saved_errno;
};

/* The headers a writer keeps: model.safetensors, trainer_state. */
struct hdr_cache {
	uint8_t		*hdr[2];
	size_t		 len[2];
};

static int
pread_full(int fd, void *p, size_t n, off_t off)
{
	ssize_t r;

	while (n > 0) {
		if ((r = pread(fd, p, n, off)) == -1) {
			if (errno == EINTR)
				continue;
			return CADRE_ERR_SYSTEM;
		}
		if (r == 0) {
			errno = EIO;
			return CADRE_ERR_SYSTEM;
		}
		p = (char *)p + r;
		n -= (size_t)r;
		off += r;
	}
	return 0;
}

/* The first 8 + header-length bytes of a safetensors file, and its size. */
static int
read_st_header(const char *path, uint8_t **hdrp, size_t *lenp, uint64_t *sizep)
{
	struct stat	 sb;
	uint8_t		 lenb[8], *h = NULL;
	uint64_t	 hlen = 0;
	int		 fd, i, error;

	*hdrp = NULL;
	*lenp = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return CADRE_ERR_SYSTEM;
	if (fstat(fd, &sb) == -1) {
		error = CADRE_ERR_SYSTEM;
		goto out;
	}
	if ((error = pread_full(fd, lenb, 8, 0)) != 0)
		goto out;
	for (i = 0; i < 8; i++)
		hlen |= (uint64_t)lenb[i] << (8 * i);
	if (hlen > ST_MAX_HEADER || 8 + hlen > (uint64_t)sb.st_size) {
		errno = EINVAL;
		error = CADRE_ERR_SYSTEM;
		goto out;
	}
	h = xmalloc(8 + hlen);
	memcpy(h, lenb, 8);
	if ((error = pread_full(fd, h + 8, hlen, 8)) != 0)
		goto out;
	*hdrp = h;
	h = NULL;
	*lenp = 8 + hlen;
	*sizep = (uint64_t)sb.st_size;
out:
	free(h);
	close(fd);
	return error;
}

struct hash_order {
	uint64_t	begin;
	size_t		piece;
};

static int
cmp_begin(const void *a, const void *b)
{
	const struct hash_order *x = a, *y = b;

	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* The hash of j->hdr and the pieces where the header places them; 0 with
 * j->mapped unset when the header does not hold exactly the pieces. */
static void
hash_memory(struct hash_job *j)
{
	struct st_file		 f;
	struct sha256_ctx	 c;
	struct hash_order	*ord;
	uint64_t		 total = 0;
	uint8_t			 dg[SHA256_DIGEST_LEN];
	char			 err[256];
	size_t			 i, k;

	j->mapped = 0;
	for (i = 0; i < j->npc; i++)
		total += j->pc[i].bytes;
	memset(&f, 0, sizeof f);
	f.fd = -1;
	/* It checks what makes the mapping whole: names unique, each range
	 * numel * size long, inside total, none overlapping. */
	if (st_parse_header((const char *)j->hdr + 8, j->hdrlen - 8, total, &f,
	    err, sizeof err) != 0) {
		log_debug("%s: %s", j->path, err);
		return;
	}
	ord = xcalloc(f.n > 0 ? f.n : 1, sizeof *ord);
	for (i = 0; i < f.n; i++) {
		for (k = 0; k < j->npc; k++)
			if (strcmp(f.t[i].name, j->pc[k].name) == 0)
				break;
		if (k == j->npc || f.t[i].end - f.t[i].begin != j->pc[k].bytes)
			goto out;
		ord[i].begin = f.t[i].begin;
		ord[i].piece = k;
	}
	if (f.n != j->npc)
		goto out;
	qsort(ord, f.n, sizeof *ord, cmp_begin);
	sha256_init(&c);
	sha256_update(&c, j->hdr, j->hdrlen);
	for (i = 0; i < f.n; i++)
		sha256_update(&c, j->pc[ord[i].piece].data, j->pc[ord[i].piece].bytes);
	sha256_final(&c, dg);
	sha256_hex(dg, SHA256_DIGEST_LEN, j->hex);
	j->bytes = j->hdrlen + total;
	j->mapped = 1;
out:
	for (i = 0; i < f.n; i++)
		free(f.t[i].name);
	free(f.t);
	free(ord);
}

/* A job whose file is written: its header read back (unless kept), then
 * the hash from memory. */
static void *
hash_main(void *arg)
{
	struct hash_job	*j = arg;
	uint64_t	 size;

	if (j->hdr == NULL && (j->error = read_st_header(j->path, &j->hdr,
	    &j->hdrlen, &size)) != 0) {
		j->saved_errno = errno;
		return NULL;
	}
	hash_memory(j);
	return NULL;
}

/* hashing: bit 0 set while hth[0] hashes job 0, bit 2 while hth[1]
 * hashes job 2. */
static void
join_hashing(pthread_t hth[2], int *hashing)
{
	int i;

	for (i = 0; i < 3; i += 2)
		if (*hashing & 1 << i)
			pthread_join(hth[i / 2], NULL);
	*hashing = 0;
}

/*
 * After the writes: config.json hashed from its file; each large file's
 * header and size on disk checked against what was hashed, the file hashed
 * instead where they differ. The headers go into hc (when there is one)
 * for the next checkpoint.
 */
static int
hash_jobs_finish(struct hash_job j[3], struct hdr_cache *hc, char sums[3][65],
    uint64_t *bytes, char *err, size_t errlen)
{
	uint8_t		*h = NULL;
	size_t		 hl;
	uint64_t	 size;
	int		 i, error = 0;

	for (i = 0; i < 3; i++) {
		if (i == 1) {
			if ((error = sha256_file(j[i].path, j[i].hex, &j[i].bytes)) != 0) {
				snprintf(err, errlen, "%s: %s", j[i].path, strerror(errno));
				goto out;
			}
			continue;
		}
		if ((error = j[i].error) != 0) {
			snprintf(err, errlen, "%s: %s", j[i].path, strerror(j[i].saved_errno));
			goto out;
		}
		if ((error = read_st_header(j[i].path, &h, &hl, &size)) != 0) {
			snprintf(err, errlen, "%s: %s", j[i].path, strerror(errno));
			goto out;
		}
		if (!j[i].mapped || hl != j[i].hdrlen || memcmp(h, j[i].hdr, hl) != 0 ||
		    size != j[i].bytes) {
			log_debug("%s: hashing the file (its header %s)", j[i].path,
			    j[i].mapped ? "changed" : "does not map to the snapshot");
			if ((error = sha256_file(j[i].path, j[i].hex, &j[i].bytes)) != 0) {
				snprintf(err, errlen, "%s: %s", j[i].path, strerror(errno));
				goto out;
			}
		}
		if (hc != NULL) {
			free(hc->hdr[i / 2]);
			hc->hdr[i / 2] = h;
			hc->len[i / 2] = hl;
			h = NULL;
		}
		free(h);
		h = NULL;
	}
	for (i = 0; i < 3; i++) {
		memcpy(sums[i], j[i].hex, sizeof j[i].hex);
		*bytes += j[i].bytes;
	}
out:
	free(h);
	return error;
}

static void
hash_jobs_free(struct hash_job j[3])
{
	int i;

	for (i = 0; i < 3; i++) {
		free(j[i].path);
		free(j[i].pc);
		free(j[i].hdr);
	}
	memset(j, 0, 3 * sizeof *j);
}

/* step-N -> N, or -1 when name is not one. */
static int64_t
step_of(const char *name)
{
	char	*end;
	long long v;

	if (strncmp(name, "step-", 5) != 0 || name[5] < '0' || name[5] > '9')
		return -1;
	errno = 0;
	v = strtoll(name + 5, &end, 10);
	if (errno != 0 || *end != '\0' || v < 0)
		return -1;
	return v;
}

static int
cmp_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The steps of the step-N dirs of cdir, newest first. */
static size_t
list_steps(const char *cdir, int64_t **out)
{
	DIR		*d;
	struct dirent	*e;
	int64_t		*v = NULL, s;
	size_t		 n = 0;

	*out = NULL;
	if ((d = opendir(cdir)) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		if ((s = step_of(e->d_name)) < 0)
			continue;
		v = xreallocarray(v, n + 1, sizeof *v);
		v[n++] = s;
	}
	closedir(d);
	if (n > 0)
		qsort(v, n, sizeof *v, cmp_desc);
	*out = v;
	return n;
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

	xasprintf(&dir, "%s/step-%" PRId64, cdir, step);
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
	xasprintf(&path, "%s/.old-step-%" PRId64, cdir, step);
	remove_dir(path);
	free(path);
	n = list_steps(cdir, &steps);
	for (i = 0; i < n; i++) {
		if ((int)i < keep || steps[i] == step ||
		    (keep_timed && timed_checkpoint(cdir, steps[i])))
			continue;
		xasprintf(&path, "%s/step-%" PRId64, cdir, steps[i]);
		remove_dir(path);
		free(path);
	}
	free(steps);
	free(cdir);
}

/* A checkpoint, up to latest naming it; prune() then removes the old. */
static int
write_checkpoint(const char *out, const struct bert_model *m,
    const float *params, const float *mom1, const float *mom2,
    const struct ckpt_state *st, struct hdr_cache *hc, uint64_t *bytes,
    char *err, size_t errlen)
{
	struct bert_model	 snap = *m;
	struct st_writer	*w = NULL;
	struct cbuf		 meta;
	char			*cdir = NULL, *tmp = NULL, *fin = NULL, *path = NULL;
	char			*old = NULL, sums[3][65], line[32];
	int64_t			 one = 1, np = (int64_t)m->nparams;
	int64_t			 i64[5];
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
	xasprintf(&tmp, "%s/.tmp-step-%" PRId64, cdir, st->step);
	xasprintf(&fin, "%s/step-%" PRId64, cdir, st->step);
	if (mkdir(cdir, 0755) == -1 && errno != EEXIST) {
		error = CADRE_ERR_SYSTEM;
		snprintf(err, errlen, "%s: %s", cdir, strerror(errno));
		goto out;
	}
	remove_dir(tmp);
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
			if (pthread_create(&hth[i / 2], NULL, hash_main, &hj[i]) == 0)
				hashing |= 1 << i;
		}
	}
	if ((error = st_writer_write(w, hj[2].path)) != 0) {
		snprintf(err, errlen, "%s: %s", hj[2].path, strerror(errno));
		goto out;
	}
	slow_write();
	if (!kept && pthread_create(&hth[1], NULL, hash_main, &hj[2]) == 0)
		hashing |= 1 << 2;
	/* model_save reads the parameters through the table: point a copy
	 * of the model at the snapshot. */
	snap.params_mem = (float *)(uintptr_t)params;
	if ((error = model_save(&snap, tmp, err, errlen)) != 0)
		goto out;
	slow_write();
	for (i = 0; i < 3; i += 2)
		if (!(hashing & 1 << i))
			hash_main(&hj[i]);
	join_hashing(hth, &hashing);
	if ((error = hash_jobs_finish(hj, hc, sums, bytes, err, errlen)) != 0)
		goto out;
	cbuf_addf(&meta, "{\n  \"version\": %d,\n  \"step\": %" PRId64 ",\n"
	    "  \"time\": %.3f,\n  \"elapsed_s\": %.17g,\n  \"samples\": %" PRId64 ",\n"
	    "  \"data\": {\"epoch\": %" PRIu64 ", \"consumed\": %" PRIu64 "},\n"
	    "  \"seed\": %" PRIu64 ",\n  \"parameters\": %zu,\n",
	    CKPT_VERSION, st->step, st->wall_time, st->elapsed_s, st->samples,
	    st->epoch, st->consumed, st->seed, m->nparams);
	/* only a timed one has it: cadred records those (contract C9) */
	if (st->due_s > 0)
		cbuf_addf(&meta, "  \"due_s\": %.17g,\n", st->due_s);
	cbuf_adds(&meta, "  \"files\": {\n");
	for (i = 0; i < 3; i++)
		cbuf_addf(&meta, "    \"%s\": \"%s\"%s\n", ckpt_files[i], sums[i],
		    i < 2 ? "," : "");
	cbuf_adds(&meta, "  }\n}\n");
	free(path);
	xasprintf(&path, "%s/meta.json", tmp);
	if ((error = write_text(path, meta.data)) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	*bytes += meta.len;
	if (fs_fsync_dir(tmp) == -1) {
		error = CADRE_ERR_SYSTEM;
		snprintf(err, errlen, "%s: fsync: %s", tmp, strerror(errno));
		goto out;
	}
	/* A checkpoint of this step may exist (a run stopped right after
	 * one): set it aside, then put the new one in its place. */
	xasprintf(&old, "%s/.old-step-%" PRId64, cdir, st->step);
	remove_dir(old);
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
	if (fs_fsync_dir(cdir) == -1) {
		error = CADRE_ERR_SYSTEM;
		snprintf(err, errlen, "%s: fsync: %s", cdir, strerror(errno));
		goto out;
	}
	snprintf(line, sizeof line, "step-%" PRId64 "\n", st->step);
	free(path);
	xasprintf(&path, "%s/latest", cdir);
	if ((error = write_text(path, line)) == 0 && fs_fsync_dir(cdir) == -1)
		error = CADRE_ERR_SYSTEM;
	if (error != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
out:
	join_hashing(hth, &hashing);
	hash_jobs_free(hj);
	if (error != 0 && tmp != NULL)
		remove_dir(tmp);
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

	if ((error = write_checkpoint(out, m, params, mom1, mom2, st, NULL, bytes,
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
		    &w->st, &w->hc, &r.bytes, r.message, sizeof r.message);
		/* write_ms ends with latest naming the checkpoint; the old
		 * ones' removal (a third of a second for a bert-base
		 * checkpoint here) is housekeeping after it, though a submit
		 * still waits for it. */
		r.write_ms = mono_ms() - t0;
		if (r.error == 0)
			prune(w->out, w->keep, w->keep_timed, w->st.step);

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
	free(w->out);
	free(w);
}

/* ---------------------------------------------------------------- reading */

static int
meta_u64(const struct tj_node *obj, const char *key, uint64_t *v,
    const char *name, char *err, size_t errlen)
{
	const struct tj_node *n = tj_get(obj, key);

	if (n == NULL || n->type != TJ_NUMBER || !n->is_uint) {
		snprintf(err, errlen, "%s: field '%s': expected a non-negative integer",
		    name, key);
		return CADRE_ERR_INVALID;
	}
	*v = n->u;
	return 0;
}

static int
meta_num(const struct tj_node *obj, const char *key, double *v,
    const char *name, char *err, size_t errlen)
{
	const struct tj_node *n = tj_get(obj, key);

	if (n == NULL || n->type != TJ_NUMBER || n->num < 0) {
		snprintf(err, errlen, "%s: field '%s': expected a non-negative number",
		    name, key);
		return CADRE_ERR_INVALID;
	}
	*v = n->num;
	return 0;
}

int
ckpt_meta_parse(const char *text, size_t len, const char *name,
    struct ckpt_state *st, char sums[3][65], char *err, size_t errlen)
{
	struct tj_node		*root = NULL;
	const struct tj_node	*n, *files, *data;
	char			 jerr[128];
	uint64_t		 u;
	size_t			 i, k;
	int			 error;

	memset(st, 0, sizeof *st);
	if (len > CKPT_META_MAX) {
		snprintf(err, errlen, "%s: larger than %d bytes", name, CKPT_META_MAX);
		return CADRE_ERR_TOO_LARGE;
	}
	if ((error = tj_parse(text, len, &root, jerr, sizeof jerr)) != 0) {
		snprintf(err, errlen, "%s: %s", name, jerr);
		goto out;
	}
	error = CADRE_ERR_INVALID;
	if (root->type != TJ_OBJECT) {
		snprintf(err, errlen, "%s: not a JSON object", name);
		goto out;
	}
	if ((error = meta_u64(root, "version", &u, name, err, errlen)) != 0)
		goto out;
	if (u > CKPT_VERSION) {
		snprintf(err, errlen, "%s: version %" PRIu64 " is newer than this cadre-train "
		    "reads (%d)", name, u, CKPT_VERSION);
		error = CADRE_ERR_VERSION;
		goto out;
	}
	if ((error = meta_u64(root, "step", &u, name, err, errlen)) != 0)
		goto out;
	if (u > INT64_MAX) {
		snprintf(err, errlen, "%s: field 'step': out of range", name);
		error = CADRE_ERR_INVALID;
		goto out;
	}
	st->step = (int64_t)u;
	if ((error = meta_u64(root, "samples", &u, name, err, errlen)) != 0)
		goto out;
	st->samples = (int64_t)(u > INT64_MAX ? INT64_MAX : u);
	if ((error = meta_num(root, "elapsed_s", &st->elapsed_s, name, err, errlen)) != 0 ||
	    (error = meta_num(root, "time", &st->wall_time, name, err, errlen)) != 0)
		goto out;
	/* a timed checkpoint's mark; older files have none */
	st->due_s = 0;
	if (tj_get(root, "due_s") != NULL &&
	    (error = meta_num(root, "due_s", &st->due_s, name, err, errlen)) != 0)
		goto out;
	error = CADRE_ERR_INVALID;
	if ((data = tj_get(root, "data")) == NULL || data->type != TJ_OBJECT) {
		snprintf(err, errlen, "%s: field 'data': expected an object", name);
		goto out;
	}
	if ((error = meta_u64(data, "epoch", &st->epoch, name, err, errlen)) != 0 ||
	    (error = meta_u64(data, "consumed", &st->consumed, name, err, errlen)) != 0)
		goto out;
	error = CADRE_ERR_INVALID;
	if ((files = tj_get(root, "files")) == NULL || files->type != TJ_OBJECT) {
		snprintf(err, errlen, "%s: field 'files': expected an object", name);
		goto out;
	}
	for (i = 0; i < 3; i++) {
		n = tj_get(files, ckpt_files[i]);
		if (n == NULL || n->type != TJ_STRING || strlen(n->str) != 64) {
			snprintf(err, errlen, "%s: field 'files.%s': expected a SHA-256 "
			    "(64 hex digits)", name, ckpt_files[i]);
			goto out;
		}
		for (k = 0; k < 64; k++)
			if (!((n->str[k] >= '0' && n->str[k] <= '9') ||
			    (n->str[k] >= 'a' && n->str[k] <= 'f'))) {
				snprintf(err, errlen, "%s: field 'files.%s': expected a SHA-256 "
				    "(64 lower-case hex digits)", name, ckpt_files[i]);
				goto out;
			}
		memcpy(sums[i], n->str, 65);
	}
	error = 0;
out:
	tj_free(root);
	return error;
}

static void
dims(const struct bert_config *c, char *s, size_t n)
{
	snprintf(s, n, "L%d H%d A%d I%d V%d P%d", c->layers, c->hidden, c->heads,
	    c->intermediate, c->vocab, c->max_position);
}

int
ckpt_read_meta(const char *dir, struct ckpt_state *st, char sums[3][65],
    char *err, size_t errlen)
{
	struct cbuf	 b;
	char		*path;
	int		 error;

	cbuf_init(&b, CKPT_META_MAX);
	xasprintf(&path, "%s/meta.json", dir);
	if ((error = cbuf_read_file(&b, path)) != 0)
		snprintf(err, errlen, "%s: %s", path, error == CADRE_ERR_TOO_LARGE ?
		    "too large" : strerror(errno));
	else
		error = ckpt_meta_parse(b.data != NULL ? b.data : "", b.len, path,
		    st, sums, err, errlen);
	cbuf_free(&b);
	free(path);
	return error != 0 ? CADRE_ERR_IO : 0;
}

int
ckpt_verify(const char *dir, const struct bert_config *cfg,
    struct ckpt_state *st, char *err, size_t errlen)
{
	struct bert_config	 c = *cfg;
	char			*path = NULL, sums[3][65], hex[65], a[96], bb[96];
	uint64_t		 bytes;
	size_t			 i;
	int			 error;

	if ((error = ckpt_read_meta(dir, st, sums, err, errlen)) != 0)
		goto out;
	for (i = 0; i < 3; i++) {
		free(path);
		xasprintf(&path, "%s/%s", dir, ckpt_files[i]);
		if (sha256_file(path, hex, &bytes) != 0) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			error = CADRE_ERR_IO;
			goto out;
		}
		if (strcmp(hex, sums[i]) != 0) {
			snprintf(err, errlen, "%s: SHA-256 %.12s... does not match meta.json's "
			    "%.12s...: the file is corrupt", path, hex, sums[i]);
			error = CADRE_ERR_IO;
			goto out;
		}
	}
	free(path);
	xasprintf(&path, "%s/config.json", dir);
	if (model_load_config(path, &c, err, errlen) != 0) {
		error = CADRE_ERR_IO;
		goto out;
	}
	if (c.layers != cfg->layers || c.hidden != cfg->hidden || c.heads != cfg->heads ||
	    c.intermediate != cfg->intermediate || c.vocab != cfg->vocab ||
	    c.max_position != cfg->max_position || c.type_vocab != cfg->type_vocab) {
		dims(&c, a, sizeof a);
		dims(cfg, bb, sizeof bb);
		snprintf(err, errlen, "%s: the checkpoint's model is %s but this run's is %s: "
		    "train with the checkpoint's model, or use another out directory",
		    dir, a, bb);
		error = CADRE_ERR_INVALID;
		goto out;
	}
	error = 0;
out:
	free(path);
	return error;
}

static int
read_scalar(const struct st_file *f, const char *name, enum st_dtype dt,
    void *dst, char *err, size_t errlen)
{
	const struct st_tensor *t = st_find(f, name);

	if (t == NULL || t->dtype != dt || t->ndim != 1 || t->shape[0] != 1) {
		snprintf(err, errlen, "%s: tensor '%s' missing or not a %s [1]", f->path,
		    name, st_dtype_name(dt));
		return CADRE_ERR_INVALID;
	}
	return st_read(f, t, dst, err, errlen);
}

int
ckpt_load(const char *dir, struct bert_model *m, struct optim *o,
    struct ckpt_state *st, char *err, size_t errlen)
{
	struct st_file		*f = NULL;
	const struct st_tensor	*t;
	char			*path = NULL;
	int64_t			 v;
	int			 error, i;

	xasprintf(&path, "%s/model.safetensors", dir);
	if ((error = model_load_weights(m, path, err, errlen)) != 0)
		goto out;
	free(path);
	xasprintf(&path, "%s/trainer_state.safetensors", dir);
	if ((error = st_open(path, &f, err, errlen)) != 0)
		goto out;
	for (i = 0; i < 2; i++) {
		const char *name = i == 0 ? "optimizer.exp_avg" : "optimizer.exp_avg_sq";

		t = st_find(f, name);
		if (t == NULL || t->dtype != ST_F32 || t->ndim != 1 ||
		    t->shape[0] != (int64_t)m->nparams) {
			snprintf(err, errlen, "%s: tensor '%s' missing or not F32 [%zu]",
			    path, name, m->nparams);
			error = CADRE_ERR_INVALID;
			goto out;
		}
		if ((error = st_read(f, t, i == 0 ? o->m : o->v, err, errlen)) != 0)
			goto out;
	}
	if ((error = read_scalar(f, "step", ST_I64, &st->step, err, errlen)) != 0 ||
	    (error = read_scalar(f, "samples", ST_I64, &st->samples, err, errlen)) != 0 ||
	    (error = read_scalar(f, "elapsed_s", ST_F64, &st->elapsed_s, err, errlen)) != 0 ||
	    (error = read_scalar(f, "loss_scale", ST_F32, &st->loss_scale, err, errlen)) != 0)
		goto out;
	if ((error = read_scalar(f, "loader.epoch", ST_I64, &v, err, errlen)) != 0)
		goto out;
	st->epoch = (uint64_t)v;
	if ((error = read_scalar(f, "loader.consumed", ST_I64, &v, err, errlen)) != 0)
		goto out;
	st->consumed = (uint64_t)v;
	if ((error = read_scalar(f, "seed", ST_I64, &v, err, errlen)) != 0)
		goto out;
	st->seed = (uint64_t)v;
	if (st->step < 0 || st->samples < 0) {
		snprintf(err, errlen, "%s: negative step or samples", path);
		error = CADRE_ERR_INVALID;
		goto out;
	}
	o->t = st->step;
	error = 0;
out:
	if (f != NULL)
		st_close(f);
	free(path);
	return error;
}

/* Sets a checkpoint that does not verify aside, out of the way of the
 * search and of the pruning. */
static void
set_aside(const char *cdir, int64_t step)
{
	char *from, *to;

	xasprintf(&from, "%s/step-%" PRId64, cdir, step);
	xasprintf(&to, "%s/.corrupt-step-%" PRId64, cdir, step);
	remove_dir(to);
	if (rename(from, to) == -1)
		log_warn("%s: %s", from, strerror(errno));
	free(from);
	free(to);
}

void
ckpt_cleanup(const char *out)
{
	DIR		*d;
	struct dirent	*e;
	char		*cdir, *p, *q;

	xasprintf(&cdir, "%s/checkpoints", out);
	if ((d = opendir(cdir)) == NULL) {
		free(cdir);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, ".tmp-step-", 10) == 0) {
			xasprintf(&p, "%s/%s", cdir, e->d_name);
			log_warn("removing %s, left by a checkpoint write that did not finish", p);
			remove_dir(p);
			free(p);
		} else if (strncmp(e->d_name, ".old-step-", 10) == 0) {
			xasprintf(&p, "%s/%s", cdir, e->d_name);
			xasprintf(&q, "%s/%s", cdir, e->d_name + 5);
			if (access(q, F_OK) != 0 && rename(p, q) == 0)
				log_warn("put %s back as %s", p, q);
			else
				remove_dir(p);
			free(p);
			free(q);
		}
	}
	closedir(d);
	free(cdir);
}

int
ckpt_find(const char *out, const struct bert_config *cfg, char **dirp,
    char *err, size_t errlen)
{
	struct ckpt_state	 st;
	struct cbuf		 b;
	char			*cdir = NULL, *path = NULL, why[512] = "";
	int64_t			*steps = NULL, *bad = NULL, first = -1;
	size_t			 n, i, k, nbad = 0;
	int			 error = 0, tried = 0;

	*dirp = NULL;
	cbuf_init(&b, 64);
	xasprintf(&cdir, "%s/checkpoints", out);
	xasprintf(&path, "%s/latest", cdir);
	if (cbuf_read_file(&b, path) == 0 && b.len > 0) {
		while (b.len > 0 && b.data[b.len - 1] == '\n')
			b.data[--b.len] = '\0';
		if ((first = step_of(b.data)) < 0)
			log_warn("%s: '%s' is not step-N; looking at the step-N directories",
			    path, b.data);
	}
	n = list_steps(cdir, &steps);
	/* latest's first (it may be older than a step-N left by a crash
	 * before latest moved), then newest first */
	for (i = 0; i <= n; i++) {
		int64_t s = i == 0 ? first : steps[i - 1];

		if (s < 0 || (i > 0 && s == first))
			continue;
		free(path);
		xasprintf(&path, "%s/step-%" PRId64, cdir, s);
		if (i == 0 && access(path, F_OK) != 0) {
			log_warn("%s/latest names step-%" PRId64 ", which is missing", cdir, s);
			continue;
		}
		tried++;
		error = ckpt_verify(path, cfg, &st, why, sizeof why);
		if (error == 0) {
			/* Only with a good one found: those newer are set aside
			 * (all bad ones are left for the user to look at). */
			for (k = 0; k < nbad; k++)
				set_aside(cdir, bad[k]);
			*dirp = path;
			path = NULL;
			goto out;
		}
		if (error == CADRE_ERR_INVALID) {
			snprintf(err, errlen, "%s", why);
			goto out;
		}
		log_warn("checkpoint %s is unusable (%s): trying the previous one", path, why);
		bad = xreallocarray(bad, nbad + 1, sizeof *bad);
		bad[nbad++] = s;
	}
	if (tried > 0) {
		snprintf(err, errlen, "%s: none of the %d checkpoints verifies (the last "
		    "reason: %s): remove the checkpoints directory to start afresh", cdir,
		    tried, why);
		error = CADRE_ERR_IO;
	} else
		error = 0;
out:
	cbuf_free(&b);
	free(bad);
	free(steps);
	free(path);
	free(cdir);
	return error;
}
