/* Timed checkpoints into the database (daemon/collect.h). */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "collect.h"
#include "error.h"
#include "fsutil.h"
#include "json.h"
#include "log.h"
#include "rundir.h"
#include "rundir_read.h"
#include "sha256.h"
#include "state.h"
#include "strutil.h"
#include "xmalloc.h"

/* A name meta.json may list: a plain file of the checkpoint dir. */
static int
plain_name(const char *s)
{
	size_t	n = strlen(s);

	return n > 0 && n < 64 && s[0] != '.' && strchr(s, '/') == NULL;
}

static int
hex64(const char *s)
{
	size_t	i;

	for (i = 0; i < 64; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	}
	return s[64] == '\0';
}

int
collect_parse_meta(const char *text, size_t len, struct collect_meta *m,
    char *msg, size_t msglen)
{
	json_error_t	 je;
	json_t		*o = NULL, *files, *v;
	const char	*k;
	int		 rc;

	memset(m, 0, sizeof *m);
	m->due_s = -1;
	if ((rc = cjson_loadb(text, len, COLLECT_META_MAX, &o, &je)) != 0) {
		if (rc == CADRE_ERR_TOO_LARGE)
			return cadre_errf(msg, msglen, rc, "over %zu bytes",
			    COLLECT_META_MAX);
		return cadre_errf(msg, msglen, CADRE_ERR_PARSE, "line %d column %d: %s",
		    je.line, je.column, je.text);
	}
	rc = CADRE_ERR_INVALID;
	if (!json_is_object(o)) {
		cadre_errf(msg, msglen, rc, "not a JSON object");
		goto out;
	}
	if (cjson_get_int(o, "step", &m->step) != 0 || m->step < 0 ||
	    cjson_get_real(o, "elapsed_s", &m->elapsed_s) != 0 ||
	    !isfinite(m->elapsed_s) || m->elapsed_s < 0 ||
	    cjson_get_int(o, "samples", &m->samples) != 0 || m->samples < 0) {
		cadre_errf(msg, msglen, rc, "step, elapsed_s and samples must be "
		    "numbers >= 0");
		goto out;
	}
	switch (cjson_get_real(o, "due_s", &m->due_s)) {
	case 0:
		if (!isfinite(m->due_s) || m->due_s <= 0) {
			cadre_errf(msg, msglen, rc, "due_s must be a number > 0");
			goto out;
		}
		break;
	case CADRE_ERR_NOT_FOUND:
		m->due_s = -1;
		break;
	default:
		cadre_errf(msg, msglen, rc, "due_s must be a number > 0");
		goto out;
	}
	files = json_object_get(o, "files");
	if (!json_is_object(files) || json_object_size(files) == 0) {
		cadre_errf(msg, msglen, rc, "no \"files\" object of checksums");
		goto out;
	}
	json_object_foreach(files, k, v) {
		if (m->nfiles == COLLECT_FILES_MAX) {
			cadre_errf(msg, msglen, rc, "more than %d files", COLLECT_FILES_MAX);
			goto out;
		}
		if (!plain_name(k) || !json_is_string(v) ||
		    json_string_length(v) != 64 || !hex64(json_string_value(v))) {
			cadre_errf(msg, msglen, rc, "files: each member must be a plain "
			    "file name with a lower-case SHA-256 hex digest");
			goto out;
		}
		snprintf(m->file[m->nfiles], sizeof m->file[0], "%s", k);
		snprintf(m->sha256[m->nfiles], sizeof m->sha256[0], "%s",
		    json_string_value(v));
		m->nfiles++;
	}
	rc = 0;
out:
	json_decref(o);
	return rc;
}

/* The steps already recorded, sorted (state_list_checkpoints orders). */
struct known {
	int64_t	*step;
	int	*evaluated;
	size_t	 n, cap;
};

static int
add_known(void *ctx, const struct state_checkpoint *c)
{
	struct known	*k = ctx;

	if (k->n == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 16;
		k->step = xreallocarray(k->step, k->cap, sizeof *k->step);
		k->evaluated = xreallocarray(k->evaluated, k->cap,
		    sizeof *k->evaluated);
	}
	k->step[k->n] = c->step;
	k->evaluated[k->n] = c->evaluated || c->eval_error != NULL;
	k->n++;
	return 0;
}

/* Index of step in k, or -1. */
static ssize_t
known_find(const struct known *k, int64_t step)
{
	size_t	lo = 0, hi = k->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (k->step[mid] == step)
			return (ssize_t)mid;
		if (k->step[mid] < step)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* The regular file at path, up to max bytes (cbuf_read_file): 0 and *buf
 * (NUL-terminated, caller frees), CADRE_ERR_NOT_FOUND, CADRE_ERR_INVALID
 * for anything but a regular file (a FIFO would block the daemon's loop),
 * CADRE_ERR_TOO_LARGE or CADRE_ERR_SYSTEM. */
static int
read_regular(const char *path, size_t max, char **buf, size_t *len)
{
	struct stat	sb;
	struct cbuf	b;
	int		rc;

	*buf = NULL;
	*len = 0;
	if (lstat(path, &sb) != 0)
		return errno == ENOENT ? CADRE_ERR_NOT_FOUND : CADRE_ERR_SYSTEM;
	if (!S_ISREG(sb.st_mode))
		return CADRE_ERR_INVALID;
	cbuf_init(&b, max);
	if ((rc = cbuf_read_file(&b, path)) != 0) {
		cbuf_free(&b);
		return rc;
	}
	*buf = cbuf_detach(&b, len);
	return 0;
}

int
collect_verify(const char *dir, const struct collect_meta *m, char *msg,
    size_t msglen)
{
	char		*path, hex[65];
	uint64_t	 bytes;
	size_t		 i;
	int		 rc = 0;

	for (i = 0; i < m->nfiles && rc == 0; i++) {
		xasprintf(&path, "%s/%s", dir, m->file[i]);
		if ((rc = sha256_file(path, hex, &bytes)) != 0)
			cadre_errf(msg, msglen, rc, "%s: %s", path,
			    strerror(errno));
		else if (strcmp(hex, m->sha256[i]) != 0)
			rc = cadre_errf(msg, msglen, CADRE_ERR_IO, "%s: SHA-256 "
			    "%.12s..., meta.json says %.12s...", path, hex,
			    m->sha256[i]);
		free(path);
	}
	return rc;
}

static int
record_checkpoints(struct state *st, const char *run_id, const char *run_dir,
    int64_t attempt, const struct known *k, int *added)
{
	struct state_checkpoint	 c;
	struct collect_meta	 m;
	struct dirent		*de;
	DIR			*d;
	char			*cdir, *dir, *path, *text, msg[512];
	size_t			 len, seen = 0;
	int64_t			 step;
	int			 rc = 0, rr, ins;

	xasprintf(&cdir, "%s/checkpoints", run_dir);
	if ((d = opendir(cdir)) == NULL) {
		free(cdir);
		return 0;
	}
	while ((de = readdir(d)) != NULL && seen < COLLECT_STEPS_MAX) {
		if ((step = rundir_ckpt_step(de->d_name)) < 0)
			continue;
		seen++;
		if (known_find(k, step) >= 0)
			continue;
		xasprintf(&dir, "%s/%s", cdir, de->d_name);
		xasprintf(&path, "%s/" CKPT_META, dir);
		rr = read_regular(path, COLLECT_META_MAX, &text, &len);
		if (rr == 0)
			rr = collect_parse_meta(text, len, &m, msg, sizeof msg);
		else
			snprintf(msg, sizeof msg, "%s", rr == CADRE_ERR_TOO_LARGE ?
			    "too large" : cadre_strerror(rr));
		free(text);
		if (rr == CADRE_ERR_NOT_FOUND)
			;	/* a program's own checkpoint (docs/program.md) */
		else if (rr != 0)
			log_warn("run %s: %s: %s: not recorded", run_id, path, msg);
		else if (m.due_s > 0 && m.step != step)
			log_warn("run %s: %s: says step %" PRId64 ": not recorded",
			    run_id, path, m.step);
		else if (m.due_s > 0 && collect_verify(dir, &m, msg, sizeof msg) !=
		    0)
			log_warn("run %s: checkpoint step-%" PRId64 " not "
			    "recorded: %s", run_id, step, msg);
		else if (m.due_s > 0) {
			memset(&c, 0, sizeof c);
			c.step = step;
			c.due_s = m.due_s;
			c.elapsed_s = m.elapsed_s;
			c.samples = m.samples;
			xasprintf(&c.path, RUNDIR_CHECKPOINTS "/%s", de->d_name);
			c.attempt = attempt;
			rc = state_add_checkpoint(st, run_id, &c, &ins);
			free(c.path);
			if (rc != 0) {
				free(path);
				free(dir);
				break;
			}
			if (ins && added != NULL)
				(*added)++;
		}
		free(path);
		free(dir);
	}
	closedir(d);
	free(cdir);
	return rc;
}

struct evals {
	struct state		*st;
	const char		*run_id, *path;
	const struct known	*k;
};

static int
record_eval(void *ctx, const struct rundir_eval *e)
{
	struct evals	*v = ctx;
	ssize_t		 i;
	int		 rc;

	if ((i = known_find(v->k, e->step)) < 0 || v->k->evaluated[i])
		return 0;
	rc = state_set_checkpoint_eval(v->st, v->run_id, e->step, e->loss,
	    e->accuracy, e->error);
	return rc == CADRE_ERR_NOT_FOUND ? 0 : rc;
}

static void
warn_eval(void *ctx, size_t lineno, const char *msg)
{
	struct evals	*v = ctx;

	log_warn("run %s: %s:%zu: %s", v->run_id, v->path, lineno, msg);
}

static int
record_evals(struct state *st, const char *run_id, const char *run_dir,
    const struct known *k)
{
	struct evals	v = { st, run_id, NULL, k };
	char		*path;
	int		 rc;

	xasprintf(&path, "%s/" RUNDIR_EVAL, run_dir);
	v.path = path;
	rc = rundir_read_eval(path, &v, record_eval, warn_eval);
	if (rc == CADRE_ERR_NOT_FOUND)
		rc = 0;
	else if (rc == CADRE_ERR_TOO_LARGE || rc == CADRE_ERR_SYSTEM ||
	    rc == CADRE_ERR_INVALID) {
		log_warn("run %s: %s: %s", run_id, path, rc ==
		    CADRE_ERR_TOO_LARGE ? "over the size bound, not read" :
		    cadre_strerror(rc));
		rc = 0;
	}
	free(path);
	return rc;
}

int
collect_run(struct state *st, const char *run_id, const char *run_dir,
    int64_t attempt, int *added)
{
	struct known	k;
	int		rc;

	if (added != NULL)
		*added = 0;
	memset(&k, 0, sizeof k);
	if ((rc = state_list_checkpoints(st, run_id, add_known, &k)) != 0)
		goto out;
	if ((rc = record_checkpoints(st, run_id, run_dir, attempt, &k,
	    added)) != 0)
		goto out;
	/* again: the ones just recorded take their figures too */
	free(k.step);
	free(k.evaluated);
	memset(&k, 0, sizeof k);
	if ((rc = state_list_checkpoints(st, run_id, add_known, &k)) != 0)
		goto out;
	if (k.n > 0)
		rc = record_evals(st, run_id, run_dir, &k);
out:
	free(k.step);
	free(k.evaluated);
	return rc;
}

struct thin {
	int64_t	*step;
	double	*due;
	int	*removed;
	size_t	 n, cap;
};

static int
add_thin(void *ctx, const struct state_checkpoint *c)
{
	struct thin	*t = ctx;

	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 16;
		t->step = xreallocarray(t->step, t->cap, sizeof *t->step);
		t->due = xreallocarray(t->due, t->cap, sizeof *t->due);
		t->removed = xreallocarray(t->removed, t->cap,
		    sizeof *t->removed);
	}
	t->step[t->n] = c->step;
	t->due[t->n] = c->due_s;
	t->removed[t->n] = c->removed;
	t->n++;
	return 0;
}

int
collect_thin(struct state *st, const char *run_id, const char *run_dir,
    char *const *at, size_t nat, int *removed)
{
	struct thin	 t;
	char		*path, *latest = NULL, *dir;
	size_t		 i, j, len;
	int		 rc, keep;

	*removed = 0;
	memset(&t, 0, sizeof t);
	if ((rc = state_list_checkpoints(st, run_id, add_thin, &t)) != 0)
		goto out;
	xasprintf(&path, "%s/" RUNDIR_CHECKPOINTS "/" CKPT_LATEST, run_dir);
	if (read_regular(path, 256, &latest, &len) == 0)
		latest[strcspn(latest, "\n")] = '\0';
	free(path);
	for (i = 0; i < t.n; i++) {
		if (t.removed[i])
			continue;
		keep = 0;
		for (j = 0; j < nat && !keep; j++)
			keep = fabs(t.due[i] - (double)strtoll(at[j], NULL,
			    10)) < 0.5;
		if (keep || (latest != NULL && rundir_ckpt_step(latest) == t.step[i]))
			continue;
		xasprintf(&dir, "%s/" RUNDIR_CHECKPOINTS "/" CKPT_DIR_PREFIX "%" PRId64, run_dir,
		    t.step[i]);
		if (fs_remove_flat_dir(dir) != 0)
			log_warn("run %s: %s: %s", run_id, dir, strerror(errno));
		else if ((rc = state_set_checkpoint_removed(st, run_id,
		    t.step[i])) == 0)
			(*removed)++;
		free(dir);
		if (rc != 0)
			break;
	}
out:
	free(latest);
	free(t.step);
	free(t.due);
	free(t.removed);
	return rc;
}
