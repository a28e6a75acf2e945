/*
 * Reading checkpoints back: meta.json, the checksums and the model's
 * size verified, the load, the search for the newest that verifies, and
 * the clean-up of what a killed writer left.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "checkpoint.h"
#include "checkpoint_int.h"
#include "error.h"
#include "fsutil.h"
#include "log.h"
#include "modelio.h"
#include "rundir.h"
#include "safetensors.h"
#include "sha256.h"
#include "tjson.h"
#include "xmalloc.h"

const char *const ckpt_files[3] = {
	"model.safetensors", "config.json", "trainer_state.safetensors"
};

/* Removes a checkpoint dir (files only); a failure is worth a warning,
 * never an error: the checkpoint it concerns is already given up. */
void
ckpt_remove_dir(const char *dir)
{
	if (fs_remove_flat_dir(dir) != 0)
		log_warn("%s: %s", dir, strerror(errno));
}

static int
cmp_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The steps of the step-N dirs of cdir, newest first. */
size_t
ckpt_list_steps(const char *cdir, int64_t **out)
{
	DIR		*d;
	struct dirent	*e;
	int64_t		*v = NULL, s;
	size_t		 n = 0;

	*out = NULL;
	if ((d = opendir(cdir)) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		if ((s = rundir_ckpt_step(e->d_name)) < 0)
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
	xasprintf(&path, "%s/" CKPT_META, dir);
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
	if ((error = model_load_weights(m, path, MODEL_LOAD_STRICT, err, errlen)) != 0)
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

	xasprintf(&from, "%s/" CKPT_DIR_PREFIX "%" PRId64, cdir, step);
	xasprintf(&to, "%s/" CKPT_CORRUPT_PREFIX CKPT_DIR_PREFIX "%" PRId64,
	    cdir, step);
	ckpt_remove_dir(to);
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
		if (strncmp(e->d_name, CKPT_TMP_PREFIX CKPT_DIR_PREFIX,
		    sizeof CKPT_TMP_PREFIX CKPT_DIR_PREFIX - 1) == 0) {
			xasprintf(&p, "%s/%s", cdir, e->d_name);
			log_warn("removing %s, left by a checkpoint write that did not finish", p);
			ckpt_remove_dir(p);
			free(p);
		} else if (strncmp(e->d_name, CKPT_OLD_PREFIX CKPT_DIR_PREFIX,
		    sizeof CKPT_OLD_PREFIX CKPT_DIR_PREFIX - 1) == 0) {
			xasprintf(&p, "%s/%s", cdir, e->d_name);
			xasprintf(&q, "%s/%s", cdir, e->d_name +
			    sizeof CKPT_OLD_PREFIX - 1);
			if (access(q, F_OK) != 0 && rename(p, q) == 0)
				log_warn("put %s back as %s", p, q);
			else
				ckpt_remove_dir(p);
			free(p);
			free(q);
		}
	}
	closedir(d);
	free(cdir);
}

int
ckpt_find(const char *out, const struct bert_config *cfg, char **dirp,
    ckpt_skip_fn skipped, void *ctx, char *err, size_t errlen)
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
	xasprintf(&path, "%s/" CKPT_LATEST, cdir);
	if (cbuf_read_file(&b, path) == 0 && b.len > 0) {
		while (b.len > 0 && b.data[b.len - 1] == '\n')
			b.data[--b.len] = '\0';
		if ((first = rundir_ckpt_step(b.data)) < 0)
			log_warn("%s: '%s' is not step-N; looking at the step-N directories",
			    path, b.data);
	}
	n = ckpt_list_steps(cdir, &steps);
	/* latest's first (it may be older than a step-N left by a crash
	 * before latest moved), then newest first */
	for (i = 0; i <= n; i++) {
		int64_t s = i == 0 ? first : steps[i - 1];

		if (s < 0 || (i > 0 && s == first))
			continue;
		free(path);
		xasprintf(&path, "%s/" CKPT_DIR_PREFIX "%" PRId64, cdir, s);
		if (i == 0 && access(path, F_OK) != 0) {
			log_warn("%s/latest names step-%" PRId64 ", which is missing", cdir, s);
			if (skipped != NULL)
				skipped(ctx, s, "missing (latest names it)");
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
		if (skipped != NULL)
			skipped(ctx, s, why);
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
