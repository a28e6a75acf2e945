/* Verification records (filerec.h): the text format, bounded parsing and
 * lookup. */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "filerec.h"
#include "fsutil.h"
#include "sha256.h"
#include "xmalloc.h"

static int64_t
ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

void
filerec_add(struct filerec_set *s, const char *path, const struct stat *sb,
    const char *sha256)
{
	struct filerec	*r;

	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->v = xreallocarray(s->v, s->cap, sizeof *s->v);
	}
	r = &s->v[s->n++];
	r->path = xstrdup(path);
	memcpy(r->sha256, sha256, 64);
	r->sha256[64] = '\0';
	r->size = (int64_t)sb->st_size;
	r->mtime_ns = ts_ns(&sb->st_mtim);
	r->ctime_ns = ts_ns(&sb->st_ctim);
	r->ino = (uint64_t)sb->st_ino;
	r->dev = (uint64_t)sb->st_dev;
}

int
filerec_same(const struct filerec *r, const struct stat *sb)
{
	return r->size == (int64_t)sb->st_size &&
	    r->mtime_ns == ts_ns(&sb->st_mtim) &&
	    r->ctime_ns == ts_ns(&sb->st_ctim) &&
	    r->ino == (uint64_t)sb->st_ino && r->dev == (uint64_t)sb->st_dev;
}

static int
cmp_path(const void *a, const void *b)
{
	return strcmp(((const struct filerec *)a)->path,
	    ((const struct filerec *)b)->path);
}

void
filerec_sort(struct filerec_set *s)
{
	if (s->n > 1)
		qsort(s->v, s->n, sizeof *s->v, cmp_path);
}

const struct filerec *
filerec_find(const struct filerec_set *s, const char *path)
{
	struct filerec	key;

	key.path = (char *)path;
	if (s->n == 0)
		return NULL;
	return bsearch(&key, s->v, s->n, sizeof *s->v, cmp_path);
}

void
filerec_free(struct filerec_set *s)
{
	size_t	i;

	for (i = 0; i < s->n; i++)
		free(s->v[i].path);
	free(s->v);
	memset(s, 0, sizeof *s);
}

/* One line "HEX SIZE MTIME CTIME INO DEV PATH" (no newline) into r. */
static int
parse_line(const char *p, size_t len, struct filerec *r)
{
	char		 num[5][24];
	const char	*e = p + len;
	size_t		 i, k;
	char		*end;

	if (len < 65 || p[64] != ' ' || !sha256_hex_ok(p, 64))
		return 0;
	memcpy(r->sha256, p, 64);
	r->sha256[64] = '\0';
	p += 65;
	for (k = 0; k < 5; k++) {
		for (i = 0; p + i < e && p[i] != ' '; i++)
			if (i >= sizeof num[k] - 1 || p[i] < '0' || p[i] > '9')
				return 0;
		if (i == 0 || p + i >= e)
			return 0;
		memcpy(num[k], p, i);
		num[k][i] = '\0';
		p += i + 1;
	}
	errno = 0;
	r->size = (int64_t)strtoll(num[0], &end, 10);
	r->mtime_ns = (int64_t)strtoll(num[1], &end, 10);
	r->ctime_ns = (int64_t)strtoll(num[2], &end, 10);
	r->ino = (uint64_t)strtoull(num[3], &end, 10);
	r->dev = (uint64_t)strtoull(num[4], &end, 10);
	if (errno != 0 || p >= e || (size_t)(e - p) >= FILEREC_PATH_MAX ||
	    memchr(p, '\0', (size_t)(e - p)) != NULL)
		return 0;
	r->path = xstrndup(p, (size_t)(e - p));
	return 1;
}

int
filerec_parse(const char *text, size_t len, struct filerec_set *s,
    char *msg, size_t msglen)
{
	const char	*p = text, *e = text + len, *nl;
	struct filerec	 r;
	size_t		 line = 1, mlen = strlen(FILEREC_MAGIC);

	memset(s, 0, sizeof *s);
	if (len > FILEREC_MAX)
		return cadre_errf(msg, msglen, CADRE_ERR_TOO_LARGE,
		    "over %zu bytes", FILEREC_MAX);
	if (len < mlen + 1 || memcmp(text, FILEREC_MAGIC, mlen) != 0 ||
	    text[mlen] != '\n')
		return cadre_errf(msg, msglen, CADRE_ERR_PARSE,
		    "line 1: expected \"%s\"", FILEREC_MAGIC);
	for (p = text + mlen + 1; p < e; p = nl + 1) {
		line++;
		if ((nl = memchr(p, '\n', (size_t)(e - p))) == NULL ||
		    !parse_line(p, (size_t)(nl - p), &r)) {
			filerec_free(s);
			return cadre_errf(msg, msglen, CADRE_ERR_PARSE,
			    "line %zu: expected SHA256HEX SIZE MTIME_NS "
			    "CTIME_NS INODE DEVICE PATH and a newline", line);
		}
		if (s->n == s->cap) {
			s->cap = s->cap ? 2 * s->cap : 64;
			s->v = xreallocarray(s->v, s->cap, sizeof *s->v);
		}
		s->v[s->n++] = r;
	}
	return 0;
}

int
filerec_load(const char *path, struct filerec_set *s, char *msg,
    size_t msglen)
{
	struct cbuf	b;
	char		why[256];
	int		error;

	memset(s, 0, sizeof *s);
	cbuf_init(&b, FILEREC_MAX);
	if ((error = cbuf_read_file(&b, path)) != 0) {
		if (error == CADRE_ERR_SYSTEM && errno == ENOENT)
			error = CADRE_ERR_NOT_FOUND;
		cadre_errf(msg, msglen, error, "%s: %s", path,
		    error == CADRE_ERR_SYSTEM ? strerror(errno) :
		    cadre_strerror(error));
	} else if ((error = filerec_parse(b.data, b.len, s, why,
	    sizeof why)) != 0)
		cadre_errf(msg, msglen, error, "%s: %s", path, why);
	else
		filerec_sort(s);
	cbuf_free(&b);
	return error;
}

int
filerec_save(const char *path, const struct filerec_set *s)
{
	struct cbuf	b;
	size_t		i;
	int		error;

	cbuf_init(&b, FILEREC_MAX);
	error = cbuf_adds(&b, FILEREC_MAGIC "\n");
	for (i = 0; i < s->n && error == 0; i++) {
		const struct filerec *r = &s->v[i];

		error = cbuf_addf(&b, "%s %" PRId64 " %" PRId64 " %" PRId64 " %"
		    PRIu64 " %" PRIu64 " %s\n", r->sha256, r->size,
		    r->mtime_ns, r->ctime_ns, r->ino, r->dev, r->path);
	}
	if (error == 0)
		error = fs_write_atomic(path, b.data, b.len, 0644);
	cbuf_free(&b);
	return error;
}
