/* Helpers on jansson: bounded loading, typed lookups, atomic writes. */
#ifndef CADRE_JSON_H
#define CADRE_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

/* Parses at most max bytes of text; refuses more with CADRE_ERR_TOO_LARGE.
 * On CADRE_ERR_PARSE, err (when not NULL) gets jansson's message, line and
 * column. *out is NULL on failure. */
int cjson_loadb(const char *text, size_t len, size_t max, json_t **out,
    json_error_t *err);
int cjson_load_file(const char *path, size_t max, json_t **out,
    json_error_t *err);

/* Typed members of an object: 0, CADRE_ERR_NOT_FOUND (missing or null) or
 * CADRE_ERR_INVALID (wrong type). Strings stay owned by obj. *out is only
 * written on success, so it may hold a default beforehand. */
int cjson_get_string(const json_t *obj, const char *key, const char **out);
int cjson_get_int(const json_t *obj, const char *key, int64_t *out);
int cjson_get_real(const json_t *obj, const char *key, double *out);	/* ints too */
int cjson_get_bool(const json_t *obj, const char *key, int *out);

/* Writes obj to path atomically (temporary file in the same directory,
 * fsync, rename) with keys sorted, indented, mode 0600 unless mode != 0. */
int cjson_write_atomic(const char *path, const json_t *obj, int mode);
/* Compact, sorted keys; caller frees. */
char *cjson_dumps_sorted(const json_t *obj);

#endif
