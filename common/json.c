#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "fsutil.h"
#include "json.h"
#include "log.h"
#include "xmalloc.h"

int
cjson_loadb(const char *text, size_t len, size_t max, json_t **out,
    json_error_t *err)
{
	json_error_t	 local;
	json_t		*v;

	*out = NULL;
	if (err == NULL)
		err = &local;
	if (len > max)
		return CADRE_ERR_TOO_LARGE;
	if ((v = json_loadb(text, len, JSON_REJECT_DUPLICATES, err)) == NULL)
		return CADRE_ERR_PARSE;
	*out = v;
	return 0;
}

/* Fills err for a failure that is not jansson's, so callers can print it. */
static void
cjson_set_error(json_error_t *err, const char *path, const char *what)
{
	if (err == NULL)
		return;
	memset(err, 0, sizeof *err);
	err->line = -1;
	err->column = -1;
	snprintf(err->source, sizeof err->source, "%s", path);
	snprintf(err->text, sizeof err->text, "%s", what);
}

int
cjson_load_file(const char *path, size_t max, json_t **out, json_error_t *err)
{
	struct cbuf	b;
	int		error, saved;

	*out = NULL;
	cbuf_init(&b, max);
	if ((error = cbuf_read_file(&b, path)) != 0) {
		saved = errno;
		cjson_set_error(err, path, error == CADRE_ERR_SYSTEM ?
		    strerror(saved) : cadre_strerror(error));
		errno = saved;
		goto out;
	}
	error = cjson_loadb(b.data, b.len, max, out, err);
 out:
	cbuf_free(&b);
	return error;
}

/* The member key of obj, or NULL when it is missing or null. */
static json_t *
cjson_member(const json_t *obj, const char *key)
{
	json_t	*v;

	if (obj == NULL || (v = json_object_get(obj, key)) == NULL ||
	    json_is_null(v))
		return NULL;
	return v;
}

int
cjson_get_string(const json_t *obj, const char *key, const char **out)
{
	json_t	*v;

	if ((v = cjson_member(obj, key)) == NULL)
		return CADRE_ERR_NOT_FOUND;
	if (!json_is_string(v))
		return CADRE_ERR_INVALID;
	*out = json_string_value(v);
	return 0;
}

int
cjson_get_int(const json_t *obj, const char *key, int64_t *out)
{
	json_t	*v;

	if ((v = cjson_member(obj, key)) == NULL)
		return CADRE_ERR_NOT_FOUND;
	if (!json_is_integer(v))
		return CADRE_ERR_INVALID;
	*out = (int64_t)json_integer_value(v);
	return 0;
}

int
cjson_get_real(const json_t *obj, const char *key, double *out)
{
	json_t	*v;

	if ((v = cjson_member(obj, key)) == NULL)
		return CADRE_ERR_NOT_FOUND;
	if (!json_is_number(v))
		return CADRE_ERR_INVALID;
	*out = json_number_value(v);
	return 0;
}

int
cjson_get_bool(const json_t *obj, const char *key, int *out)
{
	json_t	*v;

	if ((v = cjson_member(obj, key)) == NULL)
		return CADRE_ERR_NOT_FOUND;
	if (!json_is_boolean(v))
		return CADRE_ERR_INVALID;
	*out = json_is_true(v);
	return 0;
}

/* fsync the directory holding path, so that a rename into it is durable:
 * 0, or CADRE_ERR_SYSTEM with errno set. */
static int
cjson_sync_dir(const char *path)
{
	char		*dir;
	const char	*slash;
	int		 r, saved;

	if ((slash = strrchr(path, '/')) == NULL)
		dir = xstrdup(".");
	else if (slash == path)
		dir = xstrdup("/");
	else
		dir = xstrndup(path, (size_t)(slash - path));
	r = fs_fsync_dir(dir);
	saved = errno;
	free(dir);
	errno = saved;
	return r;
}

int
cjson_write_atomic(const char *path, const json_t *obj, int mode)
{
	char	*tmp = NULL;
	FILE	*f = NULL;
	int	 fd = -1, error = CADRE_ERR_SYSTEM, saved, r;

	if (obj == NULL)
		return CADRE_ERR_INVALID;
	if (mode == 0)
		mode = 0600;

	xasprintf(&tmp, "%s.tmp.XXXXXX", path);
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1) {
		free(tmp);
		tmp = NULL;	/* nothing to unlink */
		goto out;
	}
	if (fchmod(fd, (mode_t)mode) == -1)
		goto out;
	if ((f = fdopen(fd, "w")) == NULL)
		goto out;
	fd = -1;	/* f owns it now */

	/*
	 * jansson does not always set errno when it fails; EIO stands in
	 * for "it failed without saying why".
	 */
	errno = 0;
	if (json_dumpf(obj, f, JSON_SORT_KEYS | JSON_INDENT(2) |
	    JSON_ENCODE_ANY) == -1 || fputc('\n', f) == EOF ||
	    fflush(f) == EOF) {
		if (errno == 0)
			errno = EIO;
		goto out;
	}
	if (fsync(fileno(f)) == -1)
		goto out;
	r = fclose(f);
	f = NULL;
	if (r == EOF)
		goto out;
	if (rename(tmp, path) == -1)
		goto out;
	free(tmp);
	tmp = NULL;	/* renamed: nothing to unlink */
	if (cjson_sync_dir(path) != 0)
		goto out;
	error = 0;

 out:
	saved = errno;
	if (f != NULL)
		fclose(f);
	if (fd != -1)
		close(fd);
	if (tmp != NULL) {
		unlink(tmp);
		free(tmp);
	}
	errno = saved;
	return error;
}

char *
cjson_dumps_sorted(const json_t *obj)
{
	char	*s;

	if (obj == NULL)
		return NULL;
	s = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	if (s == NULL)
		fatalx("cjson_dumps_sorted: out of memory");
	return s;
}
