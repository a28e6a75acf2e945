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

int
cjson_write_atomic(const char *path, const json_t *obj, int mode)
{
	char	*text;
	size_t	 n;
	int	 error;

	if (obj == NULL)
		return CADRE_ERR_INVALID;
	if ((text = json_dumps(obj, JSON_SORT_KEYS | JSON_INDENT(2) |
	    JSON_ENCODE_ANY)) == NULL) {
		errno = ENOMEM;
		return CADRE_ERR_SYSTEM;
	}
	n = strlen(text);
	text = xreallocarray(text, n + 2, 1);
	text[n++] = '\n';
	error = fs_write_atomic(path, text, n, mode != 0 ? mode : 0600);
	free(text);
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
