#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "safetensors.h"
#include "tjson.h"
#include "xmalloc.h"

static const struct {
	const char	*name;
	size_t		 size;
} st_dtypes[ST_DTYPE_COUNT] = {
	[ST_F32] = { "F32", 4 }, [ST_F16] = { "F16", 2 },
	[ST_BF16] = { "BF16", 2 }, [ST_F64] = { "F64", 8 },
	[ST_I64] = { "I64", 8 }, [ST_I32] = { "I32", 4 },
	[ST_I16] = { "I16", 2 }, [ST_I8] = { "I8", 1 },
	[ST_U8] = { "U8", 1 }, [ST_BOOL] = { "BOOL", 1 },
};

const char *
st_dtype_name(enum st_dtype d)
{
	return (unsigned)d < ST_DTYPE_COUNT ? st_dtypes[d].name : "?";
}

size_t
st_dtype_size(enum st_dtype d)
{
	return (unsigned)d < ST_DTYPE_COUNT ? st_dtypes[d].size : 0;
}

static void
st_free_tensors(struct st_tensor *t, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(t[i].name);
	free(t);
}

static int
st_cmp_begin(const void *a, const void *b)
{
	const struct st_tensor *x = *(const struct st_tensor *const *)a;
	const struct st_tensor *y = *(const struct st_tensor *const *)b;

	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static int
st_cmp_name(const void *a, const void *b)
{
	const struct st_tensor *x = *(const struct st_tensor *const *)a;
	const struct st_tensor *y = *(const struct st_tensor *const *)b;

	return strcmp(x->name, y->name);
}

/* One tensor's entry {"dtype":..., "shape":[...], "data_offsets":[b,e]}. */
static int
st_parse_entry(const struct tj_node *e, uint64_t data_size, struct st_tensor *t,
    char *err, size_t errlen)
{
	const struct tj_node	*dt, *sh, *off, *c;
	uint64_t		 numel = 1, bytes;
	int			 d;

	if (e->type != TJ_OBJECT) {
		snprintf(err, errlen, "tensor '%s': entry is not an object", t->name);
		return CADRE_ERR_INVALID;
	}
	dt = tj_get(e, "dtype");
	sh = tj_get(e, "shape");
	off = tj_get(e, "data_offsets");
	if (dt == NULL || dt->type != TJ_STRING) {
		snprintf(err, errlen, "tensor '%s': field 'dtype' missing or not a string", t->name);
		return CADRE_ERR_INVALID;
	}
	for (d = 0; d < ST_DTYPE_COUNT; d++)
		if (strcmp(dt->str, st_dtypes[d].name) == 0)
			break;
	if (d == ST_DTYPE_COUNT) {
		snprintf(err, errlen, "tensor '%s': field 'dtype': unknown dtype '%.32s'",
		    t->name, dt->str);
		return CADRE_ERR_INVALID;
	}
	t->dtype = (enum st_dtype)d;
	if (sh == NULL || sh->type != TJ_ARRAY) {
		snprintf(err, errlen, "tensor '%s': field 'shape' missing or not an array", t->name);
		return CADRE_ERR_INVALID;
	}
	if (sh->n > ST_MAX_DIMS) {
		snprintf(err, errlen, "tensor '%s': field 'shape': %zu dimensions, at most %d",
		    t->name, sh->n, ST_MAX_DIMS);
		return CADRE_ERR_INVALID;
	}
	t->ndim = 0;
	for (c = sh->child; c != NULL; c = c->next) {
		if (c->type != TJ_NUMBER || !c->is_uint || c->u > (uint64_t)1 << 48) {
			snprintf(err, errlen, "tensor '%s': field 'shape': not a non-negative integer below 2^48",
			    t->name);
			return CADRE_ERR_INVALID;
		}
		t->shape[t->ndim++] = (int64_t)c->u;
		if (c->u != 0 && numel > ((uint64_t)1 << 48) / c->u) {
			snprintf(err, errlen, "tensor '%s': field 'shape': too many elements", t->name);
			return CADRE_ERR_INVALID;
		}
		numel *= c->u;
	}
	if (off == NULL || off->type != TJ_ARRAY || off->n != 2 ||
	    off->child->type != TJ_NUMBER || !off->child->is_uint ||
	    off->child->next->type != TJ_NUMBER || !off->child->next->is_uint) {
		snprintf(err, errlen, "tensor '%s': field 'data_offsets' is not [begin, end]", t->name);
		return CADRE_ERR_INVALID;
	}
	t->begin = off->child->u;
	t->end = off->child->next->u;
	bytes = numel * st_dtypes[t->dtype].size;
	if (t->end < t->begin || t->end > data_size) {
		snprintf(err, errlen, "tensor '%s': field 'data_offsets' [%llu, %llu] outside the %llu data bytes",
		    t->name, (unsigned long long)t->begin, (unsigned long long)t->end,
		    (unsigned long long)data_size);
		return CADRE_ERR_INVALID;
	}
	if (t->end - t->begin != bytes) {
		snprintf(err, errlen, "tensor '%s': field 'data_offsets' spans %llu bytes, shape and dtype need %llu",
		    t->name, (unsigned long long)(t->end - t->begin), (unsigned long long)bytes);
		return CADRE_ERR_INVALID;
	}
	return 0;
}

int
st_parse_header(const char *hdr, size_t len, uint64_t data_size,
    struct st_file *f, char *err, size_t errlen)
{
	struct tj_node		 *root = NULL;
	const struct tj_node	 *e;
	struct st_tensor	 *t = NULL, **order = NULL;
	size_t			  n = 0, i;
	char			  jerr[128];
	int			  error;

	f->t = NULL;
	f->n = 0;
	if ((error = tj_parse(hdr, len, &root, jerr, sizeof jerr)) != 0) {
		snprintf(err, errlen, "header: %s", jerr);
		goto out;
	}
	if (root->type != TJ_OBJECT) {
		snprintf(err, errlen, "header: not a JSON object");
		error = CADRE_ERR_PARSE;
		goto out;
	}
	t = xcalloc(root->n + 1, sizeof *t);
	for (e = root->child; e != NULL; e = e->next) {
		if (strcmp(e->key, "__metadata__") == 0) {
			if (e->type != TJ_OBJECT) {
				snprintf(err, errlen, "header: field '__metadata__' is not an object");
				error = CADRE_ERR_INVALID;
				goto out;
			}
			continue;
		}
		t[n].name = xstrdup(e->key);
		n++;
		if ((error = st_parse_entry(e, data_size, &t[n - 1], err, errlen)) != 0)
			goto out;
	}
	/* Names unique, byte ranges disjoint. */
	order = xcalloc(n + 1, sizeof *order);
	for (i = 0; i < n; i++)
		order[i] = &t[i];
	qsort(order, n, sizeof *order, st_cmp_name);
	for (i = 1; i < n; i++) {
		if (strcmp(order[i - 1]->name, order[i]->name) == 0) {
			snprintf(err, errlen, "tensor '%s': named twice", order[i]->name);
			error = CADRE_ERR_INVALID;
			goto out;
		}
	}
	qsort(order, n, sizeof *order, st_cmp_begin);
	for (i = 1; i < n; i++) {
		if (order[i]->begin < order[i - 1]->end) {
			snprintf(err, errlen, "tensor '%s': data_offsets overlap those of '%s'",
			    order[i]->name, order[i - 1]->name);
			error = CADRE_ERR_INVALID;
			goto out;
		}
	}
	f->t = t;
	f->n = n;
	t = NULL;
	error = 0;
out:
	if (t != NULL)
		st_free_tensors(t, n);
	free(order);
	tj_free(root);
	return error;
}

int
st_open(const char *path, struct st_file **out, char *err, size_t errlen)
{
	struct st_file	*f = xcalloc(1, sizeof *f);
	struct stat	 st;
	unsigned char	 lenb[8];
	uint64_t	 hlen = 0;
	char		*hdr = NULL;
	ssize_t		 r;
	int		 i, error;

	*out = NULL;
	f->path = xstrdup(path);
	if ((f->fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s", strerror(errno));
		error = CADRE_ERR_SYSTEM;
		goto out;
	}
	if (fstat(f->fd, &st) == -1) {
		snprintf(err, errlen, "%s", strerror(errno));
		error = CADRE_ERR_SYSTEM;
		goto out;
	}
	if ((r = pread(f->fd, lenb, 8, 0)) != 8) {
		snprintf(err, errlen, "header: file too short for the 8-byte header length (%lld bytes)",
		    (long long)st.st_size);
		error = CADRE_ERR_IO;
		goto out;
	}
	for (i = 7; i >= 0; i--)
		hlen = hlen << 8 | lenb[i];
	if (hlen > ST_MAX_HEADER) {
		snprintf(err, errlen, "header: length %llu exceeds the limit of %u bytes",
		    (unsigned long long)hlen, ST_MAX_HEADER);
		error = CADRE_ERR_TOO_LARGE;
		goto out;
	}
	if (hlen > (uint64_t)st.st_size - 8) {
		snprintf(err, errlen, "header: length %llu runs past the end of the file (%lld bytes): truncated?",
		    (unsigned long long)hlen, (long long)st.st_size);
		error = CADRE_ERR_IO;
		goto out;
	}
	hdr = xmalloc(hlen + 1);
	if ((r = pread(f->fd, hdr, hlen, 8)) < 0 || (uint64_t)r != hlen) {
		snprintf(err, errlen, "header: short read");
		error = CADRE_ERR_IO;
		goto out;
	}
	f->data_start = 8 + hlen;
	f->data_size = (uint64_t)st.st_size - f->data_start;
	if ((error = st_parse_header(hdr, hlen, f->data_size, f, err, errlen)) != 0)
		goto out;
	*out = f;
	f = NULL;
out:
	free(hdr);
	st_close(f);
	return error;
}

void
st_close(struct st_file *f)
{
	if (f == NULL)
		return;
	if (f->fd != -1)
		close(f->fd);
	st_free_tensors(f->t, f->n);
	free(f->path);
	free(f);
}

const struct st_tensor *
st_find(const struct st_file *f, const char *name)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (strcmp(f->t[i].name, name) == 0)
			return &f->t[i];
	return NULL;
}

int
st_read(const struct st_file *f, const struct st_tensor *t, void *dst,
    char *err, size_t errlen)
{
	uint64_t	 done = 0, n = t->end - t->begin;
	char		*p = dst;

	while (done < n) {
		ssize_t r = pread(f->fd, p + done, n - done,
		    (off_t)(f->data_start + t->begin + done));

		if (r <= 0) {
			snprintf(err, errlen, "tensor '%s': %s", t->name,
			    r == 0 ? "short read" : strerror(errno));
			return r == 0 ? CADRE_ERR_IO : CADRE_ERR_SYSTEM;
		}
		done += (uint64_t)r;
	}
	return 0;
}

struct st_wtensor {
	char		*name;
	enum st_dtype	 dtype;
	int		 ndim;
	int64_t		 shape[ST_MAX_DIMS];
	const void	*data;
	uint64_t	 bytes;
};

struct st_writer {
	struct st_wtensor	*t;
	size_t			 n;
	char			**meta;	/* key, value pairs */
	size_t			 nmeta;
};

struct st_writer *
st_writer_new(void)
{
	return xcalloc(1, sizeof(struct st_writer));
}

void
st_writer_add(struct st_writer *w, const char *name, enum st_dtype dtype,
    int ndim, const int64_t *shape, const void *data)
{
	struct st_wtensor	*t;
	int			 i;

	w->t = xreallocarray(w->t, w->n + 1, sizeof *w->t);
	t = &w->t[w->n++];
	t->name = xstrdup(name);
	t->dtype = dtype;
	t->ndim = ndim;
	t->bytes = st_dtypes[dtype].size;
	for (i = 0; i < ndim; i++) {
		t->shape[i] = shape[i];
		t->bytes *= (uint64_t)shape[i];
	}
	t->data = data;
}

void
st_writer_meta(struct st_writer *w, const char *key, const char *value)
{
	w->meta = xreallocarray(w->meta, w->nmeta * 2 + 2, sizeof *w->meta);
	w->meta[w->nmeta * 2] = xstrdup(key);
	w->meta[w->nmeta * 2 + 1] = xstrdup(value);
	w->nmeta++;
}

static void
st_json_string(struct cbuf *b, const char *s)
{
	cbuf_addc(b, '"');
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\') {
			cbuf_addc(b, '\\');
			cbuf_addc(b, *s);
		} else if ((unsigned char)*s < 0x20)
			cbuf_addf(b, "\\u%04x", (unsigned char)*s);
		else
			cbuf_addc(b, *s);
	}
	cbuf_addc(b, '"');
}

static int
st_write_all(int fd, const void *p, uint64_t n)
{
	const char *c = p;

	while (n > 0) {
		ssize_t r = write(fd, c, n > (1u << 30) ? (1u << 30) : n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return CADRE_ERR_SYSTEM;
		}
		c += r;
		n -= (uint64_t)r;
	}
	return 0;
}

int
st_writer_write(struct st_writer *w, const char *path)
{
	struct cbuf	 b;
	unsigned char	 lenb[8];
	uint64_t	 off = 0, hlen;
	char		*tmp = NULL;
	size_t		 i;
	int		 fd = -1, d, error, saved;

	cbuf_init(&b, ST_MAX_HEADER);
	cbuf_addc(&b, '{');
	if (w->nmeta > 0) {
		cbuf_adds(&b, "\"__metadata__\":{");
		for (i = 0; i < w->nmeta; i++) {
			if (i > 0)
				cbuf_addc(&b, ',');
			st_json_string(&b, w->meta[2 * i]);
			cbuf_addc(&b, ':');
			st_json_string(&b, w->meta[2 * i + 1]);
		}
		cbuf_addc(&b, '}');
	}
	for (i = 0; i < w->n; i++) {
		struct st_wtensor *t = &w->t[i];

		if (i > 0 || w->nmeta > 0)
			cbuf_addc(&b, ',');
		st_json_string(&b, t->name);
		cbuf_addf(&b, ":{\"dtype\":\"%s\",\"shape\":[", st_dtypes[t->dtype].name);
		for (d = 0; d < t->ndim; d++)
			cbuf_addf(&b, "%s%lld", d ? "," : "", (long long)t->shape[d]);
		cbuf_addf(&b, "],\"data_offsets\":[%llu,%llu]}",
		    (unsigned long long)off, (unsigned long long)(off + t->bytes));
		off += t->bytes;
	}
	cbuf_addc(&b, '}');
	/* Pad with spaces so that the data starts 8-byte aligned. */
	while (b.len % 8 != 0)
		cbuf_addc(&b, ' ');
	if (b.len >= b.max) {
		error = CADRE_ERR_TOO_LARGE;
		goto out;
	}
	hlen = b.len;
	for (i = 0; i < 8; i++)
		lenb[i] = (unsigned char)(hlen >> (8 * i));

	xasprintf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) == -1) {
		error = CADRE_ERR_SYSTEM;
		goto out;
	}
	if ((error = st_write_all(fd, lenb, 8)) != 0 ||
	    (error = st_write_all(fd, b.data, b.len)) != 0)
		goto out;
	for (i = 0; i < w->n; i++)
		if ((error = st_write_all(fd, w->t[i].data, w->t[i].bytes)) != 0)
			goto out;
	if (fsync(fd) == -1 || close(fd) == -1) {
		fd = -1;
		error = CADRE_ERR_SYSTEM;
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) == -1) {
		error = CADRE_ERR_SYSTEM;
		goto out;
	}
	error = 0;
out:
	saved = errno;
	if (fd != -1)
		close(fd);
	if (error != 0 && tmp != NULL)
		unlink(tmp);
	free(tmp);
	cbuf_free(&b);
	errno = saved;
	return error;
}

void
st_writer_free(struct st_writer *w)
{
	size_t i;

	if (w == NULL)
		return;
	for (i = 0; i < w->n; i++)
		free(w->t[i].name);
	for (i = 0; i < 2 * w->nmeta; i++)
		free(w->meta[i]);
	free(w->meta);
	free(w->t);
	free(w);
}
