/*
 * From the YAML tree to typed values: every key checked against the table
 * in spec_keys.c, every problem reported in one pass, then the checks that
 * involve several keys, run on each configuration of the matrix.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "duration.h"
#include "error.h"
#include "log.h"
#include "size.h"
#include "strutil.h"
#include "xmalloc.h"
#define SPEC_INTERNAL
#include "spec.h"
#include "spec_yaml.h"

#define SHOW_MAX	40	/* characters of a value quoted in a message */

static void
node_error(struct spec_cx *cx, const struct ynode *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
node_error(struct spec_cx *cx, const struct ynode *n, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	diag_vadd(cx->d, DIAG_ERROR, cx->file, n != NULL ? n->line : 0,
	    n != NULL ? n->col : 0, fmt, ap);
	va_end(ap);
}

/* s (len bytes) for a message: control characters escaped, long values cut
 * at SHOW_MAX characters with "...". */
char *
spec_show(const char *s, size_t len)
{
	struct cbuf		 b;
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 i, chars = 0;

	cbuf_init(&b, SIZE_MAX);
	for (i = 0; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80 && chars++ == SHOW_MAX) {
			cbuf_adds(&b, "...");
			break;
		}
		if (p[i] == '\n')
			cbuf_adds(&b, "\\n");
		else if (p[i] == '\t')
			cbuf_adds(&b, "\\t");
		else if (p[i] == '\r')
			cbuf_adds(&b, "\\r");
		else if (p[i] < 0x20 || p[i] == 0x7f)
			cbuf_addf(&b, "\\x%02x", p[i]);
		else
			cbuf_addc(&b, (char)p[i]);
	}
	return cbuf_detach(&b, NULL);
}

static int
looks_numeric(const char *s)
{
	double	f;
	int	rc = str_to_double(s, &f);

	return rc == 0 || rc == CADRE_ERR_RANGE;
}

/* What a node is, for "got ...": 0, 'abc', a list, an empty value. */
char *
spec_describe(const struct ynode *n)
{
	char	*shown, *r;

	if (ynode_is_null(n))
		return xstrdup("an empty value");
	if (n->kind == YNODE_MAP)
		return xstrdup("a mapping");
	if (n->kind == YNODE_SEQ)
		return xstrdup("a list");
	shown = spec_show(n->str, n->len);
	if (n->plain && looks_numeric(n->str))
		return shown;
	if (!n->plain && looks_numeric(n->str))
		xasprintf(&r, "the quoted string \"%s\" (remove the quotes)",
		    shown);
	else
		xasprintf(&r, "'%s'", shown);
	free(shown);
	return r;
}

static void
add_float(struct cbuf *b, double f)
{
	cbuf_addf(b, "%.15g", f);
}

static void
add_values(struct cbuf *b, const char *const *values)
{
	size_t	i;

	for (i = 0; values[i] != NULL; i++)
		cbuf_addf(b, "%s%s", i > 0 ? ", " : "", values[i]);
}

/* What a key takes, for "expected ...". */
static char *
expected(const struct spec_key_info *ki)
{
	struct cbuf	b;
	int		lo_open = ki->flags & SPEC_F_MIN_OPEN;
	int		hi_open = ki->flags & SPEC_F_MAX_OPEN;

	cbuf_init(&b, SIZE_MAX);
	switch (ki->type) {
	case SPEC_T_INT:
		cbuf_addf(&b, "an integer from %" PRId64 " to %" PRId64,
		    ki->min, ki->max);
		break;
	case SPEC_T_FLOAT:
		if (!lo_open && !hi_open) {
			cbuf_adds(&b, "a number from ");
			add_float(&b, ki->fmin);
			cbuf_adds(&b, " to ");
			add_float(&b, ki->fmax);
			break;
		}
		cbuf_adds(&b, lo_open ? "a number greater than " :
		    "a number of at least ");
		add_float(&b, ki->fmin);
		cbuf_adds(&b, hi_open ? " and less than " : " and at most ");
		add_float(&b, ki->fmax);
		break;
	case SPEC_T_BOOL:
		cbuf_adds(&b, "true or false");
		break;
	case SPEC_T_TEXT:
		cbuf_adds(&b, "text");
		break;
	case SPEC_T_NAME:
		cbuf_adds(&b, "a name of 1 to 64 letters, digits, '.', '_' or "
		    "'-'");
		break;
	case SPEC_T_ENUM:
		cbuf_adds(&b, "one of ");
		add_values(&b, ki->values);
		break;
	case SPEC_T_MODEL:
		cbuf_adds(&b, "one of ");
		add_values(&b, ki->values);
		cbuf_adds(&b, ", or a mapping of dimensions");
		break;
	case SPEC_T_DURATION:
		cbuf_adds(&b, "a duration such as 90s, 20m, 1h30m or 01:30:00");
		break;
	case SPEC_T_SIZE:
		cbuf_adds(&b, "a size such as 512M, 64G or 2GiB");
		break;
	case SPEC_T_PATH:
		cbuf_adds(&b, "a path");
		break;
	case SPEC_T_WORD:
		cbuf_adds(&b, "a word");
		break;
	case SPEC_T_ENV:
		cbuf_adds(&b, "an environment variable name");
		break;
	case SPEC_T_URL:
		cbuf_adds(&b, "an http://, https:// or unix:/// URL");
		break;
	case SPEC_T_WORDS:
		cbuf_adds(&b, "a list of words, e.g. [\"--exclusive\"]");
		break;
	case SPEC_T_PATHS:
		cbuf_adds(&b, "a list of paths, e.g. [/scratch]");
		break;
	case SPEC_T_DURATIONS:
		cbuf_adds(&b, "a list of durations, e.g. [20m, 40m]");
		break;
	case SPEC_T_ENUMS:
		cbuf_adds(&b, "a list of values from ");
		add_values(&b, ki->values);
		break;
	default:
		cbuf_adds(&b, "a value");
		break;
	}
	return cbuf_detach(&b, NULL);
}

static void
type_error(struct spec_cx *cx, const struct spec_key_info *ki,
    const struct ynode *n, const char *extra)
{
	char	*exp = expected(ki), *got = spec_describe(n);

	node_error(cx, n, "%s: expected %s, got %s%s", ki->path, exp, got,
	    extra != NULL ? extra : "");
	free(exp);
	free(got);
}

/* ------------------------------------------------------------ scalars */

/* 'bert_base' and 'BF16' are near misses of 'bert-base' and 'bf16'. */
static const char *
enum_near(const char *const *values, const char *s)
{
	size_t	i, j;
	char	a, b;

	for (i = 0; values[i] != NULL; i++) {
		for (j = 0; s[j] != '\0' && values[i][j] != '\0'; j++) {
			a = s[j] >= 'A' && s[j] <= 'Z' ? s[j] - 'A' + 'a' : s[j];
			b = values[i][j];
			if (a == '_')
				a = '-';
			if (a != b)
				break;
		}
		if (s[j] == '\0' && values[i][j] == '\0')
			return values[i];
	}
	return NULL;
}

static int
parse_enum(struct spec_cx *cx, const struct spec_key_info *ki,
    const struct ynode *n, int64_t *idx)
{
	const char	*near;
	char		*extra = NULL;
	int64_t		 i;

	for (i = 0; ki->values[i] != NULL; i++) {
		if (strcmp(ki->values[i], n->str) == 0) {
			*idx = i;
			return 0;
		}
	}
	if ((near = enum_near(ki->values, n->str)) != NULL)
		xasprintf(&extra, " (did you mean '%s'?)", near);
	type_error(cx, ki, n, extra);
	free(extra);
	return -1;
}

static int
check_path_text(struct spec_cx *cx, const struct spec_key_info *ki,
    const struct ynode *n)
{
	const unsigned char	*p = (const unsigned char *)n->str;
	size_t			 i, j;
	char			*shown;

	if (n->len == 0) {
		node_error(cx, n, "%s: expected a path, got an empty string",
		    ki->path);
		return -1;
	}
	if (n->len > SPEC_MAX_PATH) {
		node_error(cx, n, "%s: paths are limited to %d bytes, got %zu",
		    ki->path, SPEC_MAX_PATH, n->len);
		return -1;
	}
	for (i = 0; i < n->len; i++) {
		if (p[i] == '\n' || p[i] == '\r') {
			node_error(cx, n, "%s: a path must not contain a line "
			    "break", ki->path);
			return -1;
		}
		if (p[i] < 0x20 || p[i] == 0x7f) {
			node_error(cx, n, "%s: a path must not contain control "
			    "characters (found 0x%02x)", ki->path, p[i]);
			return -1;
		}
	}
	if (p[0] == '~') {
		node_error(cx, n, "%s: '~' is not expanded in paths; write the "
		    "full path, or $HOME/...", ki->path);
		return -1;
	}
	if (p[0] == '$') {
		/* $NAME or ${NAME}, then '/' or the end. */
		i = p[1] == '{' ? 2 : 1;
		j = i;
		if ((p[j] >= 'A' && p[j] <= 'Z') || (p[j] >= 'a' &&
		    p[j] <= 'z') || p[j] == '_') {
			while ((p[j] >= 'A' && p[j] <= 'Z') || (p[j] >= 'a' &&
			    p[j] <= 'z') || (p[j] >= '0' && p[j] <= '9') ||
			    p[j] == '_')
				j++;
		}
		if (j > i && i == 2 && p[j] == '}')
			j++;
		else if (i == 2)
			j = i;
		if (j == i || (p[j] != '/' && p[j] != '\0')) {
			shown = spec_show(n->str, n->len);
			node_error(cx, n, "%s: a path may start with $NAME or "
			    "${NAME}, a variable of the job's environment, "
			    "then '/'; '%s' does not", ki->path, shown);
			free(shown);
			return -1;
		}
	}
	return 0;
}

static int
check_word_text(struct spec_cx *cx, const struct spec_key_info *ki,
    const struct ynode *n)
{
	const unsigned char	*p = (const unsigned char *)n->str;
	size_t			 i;
	int			 blank = 1;

	for (i = 0; i < n->len; i++) {
		if (p[i] == '\n' || p[i] == '\r') {
			node_error(cx, n, "%s: a scheduler word must not contain "
			    "a line break", ki->path);
			return -1;
		}
		if (p[i] < 0x20 || p[i] == 0x7f) {
			node_error(cx, n, "%s: a scheduler word must be printable "
			    "(found control character 0x%02x)", ki->path, p[i]);
			return -1;
		}
		if (p[i] != ' ')
			blank = 0;
	}
	if (blank) {
		node_error(cx, n, "%s: a scheduler word must not be empty or "
		    "only spaces", ki->path);
		return -1;
	}
	if (n->len > SPEC_MAX_WORD) {
		node_error(cx, n, "%s: scheduler words are limited to %d bytes, "
		    "got %zu", ki->path, SPEC_MAX_WORD, n->len);
		return -1;
	}
	return 0;
}

static int
is_env_name(const char *s, size_t len)
{
	size_t	i;

	if (len == 0 || len > 256 || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (i = 0; i < len; i++) {
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' &&
		    s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		    s[i] == '_'))
			return 0;
	}
	return 1;
}

static int
is_url(const char *s, size_t len)
{
	const char	*rest;
	size_t		 i;

	if (len > SPEC_MAX_PATH)
		return 0;
	for (i = 0; i < len; i++) {
		if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f)
			return 0;
	}
	if (strncmp(s, "http://", 7) == 0)
		rest = s + 7;
	else if (strncmp(s, "https://", 8) == 0)
		rest = s + 8;
	else if (strncmp(s, "unix:///", 8) == 0)
		return s[8] != '\0';
	else
		return 0;
	return *rest != '\0' && *rest != '/';
}

/* The duration or size text is a bare number: the unit was forgotten. */
static int
bare_number(const char *s)
{
	int64_t	v;

	return str_to_int64(s, &v) == 0 && v != 0;
}

static int
parse_scalar(struct spec_cx *cx, const struct spec_key_info *ki,
    const struct ynode *n, struct spec_value *out)
{
	int64_t	 iv;
	double	 fv;
	int	 rc;
	char	*shown, *exp;

	if (n->kind != YNODE_SCALAR || ynode_is_null(n)) {
		type_error(cx, ki, n, NULL);
		return -1;
	}
	switch (ki->type) {
	case SPEC_T_INT:
		if (!n->plain || str_to_int64(n->str, &iv) != 0 ||
		    iv < ki->min || iv > ki->max) {
			type_error(cx, ki, n, NULL);
			return -1;
		}
		out->i = iv;
		break;
	case SPEC_T_FLOAT:
		if (!n->plain || str_to_double(n->str, &fv) != 0 ||
		    fv < ki->fmin || fv > ki->fmax ||
		    ((ki->flags & SPEC_F_MIN_OPEN) && fv == ki->fmin) ||
		    ((ki->flags & SPEC_F_MAX_OPEN) && fv == ki->fmax)) {
			type_error(cx, ki, n, NULL);
			return -1;
		}
		out->f = fv;
		break;
	case SPEC_T_BOOL:
		if (n->plain && (strcmp(n->str, "true") == 0 ||
		    strcmp(n->str, "True") == 0 || strcmp(n->str, "TRUE") == 0))
			out->i = 1;
		else if (n->plain && (strcmp(n->str, "false") == 0 ||
		    strcmp(n->str, "False") == 0 ||
		    strcmp(n->str, "FALSE") == 0))
			out->i = 0;
		else {
			type_error(cx, ki, n, NULL);
			return -1;
		}
		break;
	case SPEC_T_DURATION:
	case SPEC_T_SIZE:
		if (bare_number(n->str)) {
			shown = spec_show(n->str, n->len);
			node_error(cx, n, "%s: expected a %s, got the bare number "
			    "%s; add a unit, e.g. %s", ki->path,
			    ki->type == SPEC_T_DURATION ? "duration" : "size",
			    shown, ki->type == SPEC_T_DURATION ? "90s or 20m" :
			    "64G or 512M");
			free(shown);
			return -1;
		}
		if (ki->type == SPEC_T_DURATION)
			rc = duration_parse(n->str, &iv);
		else
			rc = size_parse(n->str, &iv);
		if (rc == CADRE_ERR_INVALID) {
			type_error(cx, ki, n, NULL);
			return -1;
		}
		if (rc != 0 || iv < ki->min || iv > ki->max) {
			struct cbuf b;

			cbuf_init(&b, SIZE_MAX);
			spec_add_bound(&b, ki->type, ki->min);
			cbuf_adds(&b, " to ");
			spec_add_bound(&b, ki->type, ki->max);
			exp = cbuf_detach(&b, NULL);
			shown = spec_show(n->str, n->len);
			node_error(cx, n, "%s: expected a %s from %s, got %s",
			    ki->path, ki->type == SPEC_T_DURATION ? "duration" :
			    "size", exp, shown);
			free(shown);
			free(exp);
			return -1;
		}
		out->i = iv;
		break;
	case SPEC_T_ENUM:
	case SPEC_T_MODEL:
		if (parse_enum(cx, ki, n, &out->i) != 0)
			return -1;
		break;
	case SPEC_T_TEXT:
		if ((int64_t)n->len > ki->max) {
			node_error(cx, n, "%s: text is limited to %" PRId64
			    " bytes, got %zu", ki->path, ki->max, n->len);
			return -1;
		}
		break;
	case SPEC_T_NAME:
		if (!str_is_name(n->str, 64)) {
			type_error(cx, ki, n, NULL);
			return -1;
		}
		break;
	case SPEC_T_PATH:
		if (check_path_text(cx, ki, n) != 0)
			return -1;
		break;
	case SPEC_T_WORD:
		if (check_word_text(cx, ki, n) != 0)
			return -1;
		break;
	case SPEC_T_ENV:
		if (!is_env_name(n->str, n->len)) {
			type_error(cx, ki, n, " (letters, digits and '_', not "
			    "starting with a digit)");
			return -1;
		}
		break;
	case SPEC_T_URL:
		if (!is_url(n->str, n->len)) {
			type_error(cx, ki, n, NULL);
			return -1;
		}
		break;
	default:
		fatalx("spec: parse_scalar: %s is not a scalar key", ki->path);
	}
	out->s = xstrdup(n->str);
	return 0;
}

static int
parse_list(struct spec_cx *cx, const struct spec_key_info *ki,
    const struct ynode *n, struct spec_value *out)
{
	struct spec_key_info	 item = *ki;
	const struct ynode	*it;
	size_t			 i, j;
	int			 rc = 0;
	char			*shown;

	if (n->kind != YNODE_SEQ) {
		type_error(cx, ki, n, NULL);
		return -1;
	}
	if ((int64_t)n->n > ki->max) {
		node_error(cx, n, "%s: at most %" PRId64 " items, got %zu",
		    ki->path, ki->max, n->n);
		return -1;
	}
	item.type = ki->type == SPEC_T_WORDS ? SPEC_T_WORD :
	    ki->type == SPEC_T_PATHS ? SPEC_T_PATH :
	    ki->type == SPEC_T_DURATIONS ? SPEC_T_DURATION : SPEC_T_ENUM;
	if (ki->type == SPEC_T_DURATIONS) {
		item.min = 1;
		item.max = 365 * 24 * 3600;
	}
	out->list = xcalloc(n->n + 1, sizeof *out->list);
	for (i = 0; i < n->n; i++) {
		struct spec_value	v;

		it = n->items[i];
		memset(&v, 0, sizeof v);
		if (parse_scalar(cx, &item, it, &v) != 0) {
			rc = -1;
			continue;
		}
		if (ki->type == SPEC_T_DURATIONS) {
			free(v.s);
			xasprintf(&v.s, "%" PRId64, v.i);
		}
		if (ki->type == SPEC_T_ENUMS || ki->type == SPEC_T_DURATIONS) {
			for (j = 0; j < out->n; j++) {
				if (strcmp(out->list[j], v.s) == 0)
					break;
			}
			if (j < out->n) {
				shown = ki->type == SPEC_T_DURATIONS ?
				    spec_show(it->str, strlen(it->str)) :
				    spec_show(v.s, strlen(v.s));
				node_error(cx, it, "%s: '%s' is listed twice",
				    ki->path, shown);
				free(shown);
				free(v.s);
				rc = -1;
				continue;
			}
		}
		out->list[out->n++] = v.s;
	}
	return rc;
}

int
spec_value_parse(struct spec_cx *cx, enum spec_key k, const struct ynode *n,
    struct spec_value *out)
{
	const struct spec_key_info	*ki = spec_key_info(k);
	int				 rc;
	char				*got;

	memset(out, 0, sizeof *out);
	out->line = n->line;
	out->col = n->col;
	if (k == SPEC_K_VERSION && (n->kind != YNODE_SCALAR || !n->plain ||
	    strcmp(n->str, "1") != 0)) {
		got = spec_describe(n);
		node_error(cx, n, "version: this cadre reads spec version %d, "
		    "got %s", SPEC_VERSION, got);
		free(got);
		rc = -1;
	} else if (ki->type == SPEC_T_WORDS || ki->type == SPEC_T_PATHS ||
	    ki->type == SPEC_T_ENUMS || ki->type == SPEC_T_DURATIONS)
		rc = parse_list(cx, ki, n, out);
	else
		rc = parse_scalar(cx, ki, n, out);
	if (rc != 0) {
		spec_value_free(out);
		out->line = n->line;
		out->col = n->col;
		out->bad = 1;
		return -1;
	}
	out->set = 1;
	return 0;
}

/* ------------------------------------------------------------ keys */

static size_t
suggest_limit(const char *s)
{
	size_t	n = strlen(s);

	return n <= 3 ? 1 : n <= 6 ? 2 : 3;
}

/* Whether some key lies under path. */
static int
is_section(const char *path)
{
	size_t	n = strlen(path);
	int	k;

	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		if (strncmp(spec_key_info(k)->path, path, n) == 0 &&
		    spec_key_info(k)->path[n] == '.')
			return 1;
	}
	return 0;
}

/* The next component after prefix of a key path under it, in buf. */
static int
child_name(const char *path, const char *prefix, char *buf, size_t len)
{
	size_t		 n = prefix != NULL ? strlen(prefix) : 0;
	const char	*rest, *dot;

	if (prefix != NULL) {
		if (strncmp(path, prefix, n) != 0 || path[n] != '.')
			return 0;
		rest = path + n + 1;
	} else
		rest = path;
	dot = strchr(rest, '.');
	n = dot != NULL ? (size_t)(dot - rest) : strlen(rest);
	if (n >= len)
		return 0;
	memcpy(buf, rest, n);
	buf[n] = '\0';
	return 1;
}

const char *
spec_suggest_path(const char *path, unsigned flags)
{
	const struct spec_key_info	*ki;
	const char			*best = NULL, *leaf, *dot;
	size_t				 d, bestd, lim = suggest_limit(path);
	int				 k;

	bestd = lim + 1;
	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		ki = spec_key_info(k);
		if ((ki->flags & flags) != flags)
			continue;
		d = str_edit_distance(path, ki->path, lim);
		if (d < bestd) {
			bestd = d;
			best = ki->path;
		}
	}
	if (best != NULL)
		return best;
	/* "batch_size" for "trainer.batch_size". */
	leaf = (dot = strrchr(path, '.')) != NULL ? dot + 1 : path;
	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		ki = spec_key_info(k);
		if ((ki->flags & flags) != flags)
			continue;
		dot = strrchr(ki->path, '.');
		if (strcmp(dot != NULL ? dot + 1 : ki->path, leaf) == 0)
			return ki->path;
	}
	return NULL;
}

void
spec_unknown_key(struct spec_cx *cx, const char *section, const char *key,
    uint32_t line, uint32_t col)
{
	const struct spec_key_info	*ki;
	char				 name[128], *best = NULL, *shown, *in;
	const char			*leaf;
	size_t				 d, bestd, lim;
	int				 k;

	shown = spec_show(key, strlen(key));
	if (section != NULL)
		xasprintf(&in, " in %s", section);
	else
		in = xstrdup("");
	if (diags_full(cx->d)) {
		/* Counted, not shown: spare the search. */
		diag_error(cx->d, cx->file, line, col, "unknown key '%s'%s",
		    shown, in);
		goto out;
	}
	if (strcmp(key, "<<") == 0) {
		diag_error(cx->d, cx->file, line, col, "merge keys ('<<') are "
		    "not supported; write the keys out, or alias a whole value");
		goto out;
	}

	/* A near miss among the names of this section. */
	lim = suggest_limit(key);
	bestd = lim + 1;
	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		ki = spec_key_info(k);
		if (!child_name(ki->path, section, name, sizeof name))
			continue;
		d = str_edit_distance(key, name, lim);
		if (d < bestd) {
			bestd = d;
			free(best);
			best = xstrdup(name);
		}
	}
	if (best != NULL && bestd <= 1) {
		diag_error(cx->d, cx->file, line, col, "unknown key '%s'%s (did "
		    "you mean '%s'?)", shown, in, best);
		goto out;
	}

	/* The same name in another section: a misplaced key. That beats a
	 * looser near miss: 'nodes' in trainer is not 'model'. */
	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		ki = spec_key_info(k);
		leaf = strrchr(ki->path, '.');
		leaf = leaf != NULL ? leaf + 1 : ki->path;
		if (strcmp(leaf, key) == 0 && strchr(ki->path, '.') != NULL) {
			diag_error(cx->d, cx->file, line, col, "unknown key "
			    "'%s'%s (did you mean '%s'?)", shown, in, ki->path);
			goto out;
		}
	}
	if (best != NULL) {
		diag_error(cx->d, cx->file, line, col, "unknown key '%s'%s (did "
		    "you mean '%s'?)", shown, in, best);
		goto out;
	}
	diag_error(cx->d, cx->file, line, col, "unknown key '%s'%s; 'cadre "
	    "keys' lists the keys", shown, in);

 out:
	free(best);
	free(in);
	free(shown);
}

static void check_map(struct spec_cx *cx, const char *prefix,
    const struct ynode *key, const struct ynode *map);

/* Marks where each key's section is, for "missing required key" errors. */
static void
note_section(struct spec_cx *cx, const char *prefix, const struct ynode *key)
{
	size_t	n = strlen(prefix);
	int	k;

	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		/* Nested sections come later and win: the nearest one. */
		if (strncmp(spec_key_info(k)->path, prefix, n) == 0 &&
		    spec_key_info(k)->path[n] == '.') {
			cx->s->sect_line[k] = key->line;
			cx->s->sect_col[k] = key->col;
		}
	}
}

static void
check_pair(struct spec_cx *cx, const char *prefix, const struct ynode *key,
    const struct ynode *val)
{
	struct spec		*s = cx->s;
	const struct spec_key_info *ki;
	char			*path, *shown, *got;
	int			 k;

	if (prefix == NULL && strncmp(key->str, "x-", 2) == 0)
		return;	/* extension keys: a place for anchors */
	if (prefix != NULL)
		xasprintf(&path, "%s.%s", prefix, key->str);
	else
		path = xstrdup(key->str);

	if (strchr(key->str, '.') != NULL &&
	    (spec_key_lookup(path) >= 0 || is_section(path) ||
	    spec_key_lookup(key->str) >= 0)) {
		shown = spec_show(key->str, key->len);
		node_error(cx, key, "dotted key '%s': dotted paths are only for "
		    "matrix, exclude, include and report.baseline; write it "
		    "nested, one level per line", shown);
		free(shown);
		goto out;
	}
	if ((k = spec_key_lookup(path)) >= 0) {
		ki = spec_key_info(k);
		switch (ki->type) {
		case SPEC_T_MATRIX:
			cx->matrix = val;
			cx->matrix_key = key;
			break;
		case SPEC_T_EXCLUDE:
			cx->exclude = val;
			cx->exclude_key = key;
			break;
		case SPEC_T_INCLUDE:
			cx->include = val;
			cx->include_key = key;
			break;
		case SPEC_T_ASSIGN:
			cx->baseline = val;
			cx->baseline_key = key;
			break;
		case SPEC_T_MODEL:
			if (val->kind == YNODE_MAP) {
				spec_value_free(&s->v[k]);
				s->v[k].set = 1;
				s->v[k].s = xstrdup("custom");
				s->v[k].i = -1;
				s->v[k].line = val->line;
				s->v[k].col = val->col;
				s->custom_model = 1;
				check_map(cx, path, key, val);
				break;
			}
			/* FALLTHROUGH */
		default:
			if (k == SPEC_K_VERSION)
				break;	/* checked first */
			spec_value_free(&s->v[k]);
			spec_value_parse(cx, k, val, &s->v[k]);
			break;
		}
	} else if (is_section(path)) {
		if (val->kind != YNODE_MAP) {
			got = spec_describe(val);
			node_error(cx, val, "%s: expected a mapping of keys, got "
			    "%s", path, got);
			free(got);
		} else
			check_map(cx, path, key, val);
	} else
		spec_unknown_key(cx, prefix, key->str, key->line, key->col);

 out:
	free(path);
}

static void
check_map(struct spec_cx *cx, const char *prefix, const struct ynode *key,
    const struct ynode *map)
{
	size_t	i;

	if (prefix != NULL)
		note_section(cx, prefix, key);
	for (i = 0; i < map->n; i++)
		check_pair(cx, prefix, YMAP_KEY(map, i), YMAP_VAL(map, i));
}

static void
check_required(struct spec_cx *cx)
{
	struct spec			*s = cx->s;
	const struct spec_key_info	*ki;
	const char			*hint;
	int				 k;

	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		ki = spec_key_info(k);
		if (!(ki->flags & SPEC_F_REQUIRED) || s->v[k].set ||
		    s->v[k].bad)
			continue;
		hint = "";
		if (k == SPEC_K_VERSION)
			hint = " (add 'version: 1' at the top)";
		else if (k == SPEC_K_NAME)
			hint = " (the experiment's name, e.g. 'name: "
			    "bert-scaling')";
		else if (k == SPEC_K_DATA)
			hint = " (the directory of training shards)";
		else if (k >= SPEC_K_MODEL_LAYERS &&
		    k <= SPEC_K_MODEL_MAX_POSITION) {
			if (!s->custom_model)
				continue;
			hint = " (an explicit model needs layers, hidden and "
			    "heads)";
		}
		diag_error(cx->d, cx->file, s->sect_line[k], s->sect_col[k],
		    "missing required key '%s'%s", ki->path, hint);
	}
}

/* Checks between keys that cannot vary in a matrix. */
static void
check_base(struct spec_cx *cx)
{
	struct spec		*s = cx->s;
	const struct spec_value	*rt = &s->v[SPEC_K_CONTAINER_RUNTIME];
	const struct spec_value	*be = &s->v[SPEC_K_SCHED_BACKEND];

	if (rt->set && strcmp(rt->s, "none") != 0 &&
	    !s->v[SPEC_K_CONTAINER_IMAGE].set &&
	    !s->v[SPEC_K_CONTAINER_IMAGE].bad)
		diag_error(cx->d, cx->file, rt->line, rt->col, "container.image "
		    "is required when container.runtime is %s", rt->s);
	if (be->set && strcmp(be->s, "slurm-rest") == 0 &&
	    !s->v[SPEC_K_SCHED_REST_URL].set &&
	    !s->v[SPEC_K_SCHED_REST_URL].bad)
		diag_error(cx->d, cx->file, be->line, be->col,
		    "scheduler.rest.url is required when scheduler.backend is "
		    "slurm-rest");
}

/* ------------------------------------------------------------ configurations */

const struct spec_value *
spec_cfg_value(const struct spec *s, const struct spec_config *cfg,
    enum spec_key k)
{
	int	idx = s->varied_index[k];

	if (cfg != NULL && idx >= 0)
		return cfg->v[idx];
	return &s->v[k];
}

void
spec_cfg_model(const struct spec *s, const struct spec_config *cfg,
    struct spec_model_dims *m)
{
	const struct spec_value	*model = spec_cfg_value(s, cfg, SPEC_K_MODEL);

	memset(m, 0, sizeof *m);
	if (model->set && model->i >= 0 && spec_model_preset(model->s, m) == 0)
		return;
	m->layers = s->v[SPEC_K_MODEL_LAYERS].i;
	m->hidden = s->v[SPEC_K_MODEL_HIDDEN].i;
	m->heads = s->v[SPEC_K_MODEL_HEADS].i;
	m->intermediate = s->v[SPEC_K_MODEL_INTERMEDIATE].i;
	if (m->intermediate == 0)
		m->intermediate = 4 * m->hidden;
	m->vocab_size = s->v[SPEC_K_MODEL_VOCAB_SIZE].i;
	m->max_position = s->v[SPEC_K_MODEL_MAX_POSITION].i;
}

/* One cross-key problem in a configuration: reported at the value that
 * varies when one does (naming the configuration), else at the first key. */
static void
cfg_error(struct spec_cx *cx, const struct spec_config *cfg,
    const enum spec_key *ks, size_t nk, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void
cfg_error(struct spec_cx *cx, const struct spec_config *cfg,
    const enum spec_key *ks, size_t nk, const char *fmt, ...)
{
	struct spec		*s = cx->s;
	const struct spec_value	*v, *at = NULL;
	struct cbuf		 b;
	va_list			 ap;
	size_t			 i, nvar = 0;
	char			*val, *msg;

	cbuf_init(&b, SIZE_MAX);
	va_start(ap, fmt);
	cbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	for (i = 0; i < nk; i++) {
		v = spec_cfg_value(s, cfg, ks[i]);
		if (v == &s->v[ks[i]])
			continue;
		if (at == NULL)
			at = v;
		val = spec_value_format(ks[i], v);
		cbuf_addf(&b, "%s%s=%s", nvar++ == 0 ?
		    " (in the configuration with " : ", ",
		    spec_key_info(ks[i])->path, val);
		free(val);
	}
	if (nvar > 0)
		cbuf_addc(&b, ')');
	for (i = 0; i < nk && at == NULL; i++) {
		if (s->v[ks[i]].line != 0)
			at = &s->v[ks[i]];
	}
	msg = cbuf_detach(&b, NULL);
	diag_error(cx->d, cx->file, at != NULL ? at->line : 0,
	    at != NULL ? at->col : 0, "%s", msg);
	free(msg);
}

static int
all_good(const struct spec *s, const struct spec_config *cfg,
    const enum spec_key *ks, size_t nk)
{
	size_t	i;

	for (i = 0; i < nk; i++) {
		if (spec_cfg_value(s, cfg, ks[i])->bad)
			return 0;
	}
	return 1;
}

#define NKEYS(a)	(sizeof (a) / sizeof (a)[0])

void
spec_check_config(struct spec_cx *cx, const struct spec_config *cfg)
{
	static const enum spec_key grace[] = { SPEC_K_SCHED_SIGNAL_GRACE,
	    SPEC_K_SCHED_TIME_LIMIT };
	static const enum spec_key startup[] = { SPEC_K_AGENT_STARTUP_TIMEOUT,
	    SPEC_K_SCHED_TIME_LIMIT };
	static const enum spec_key skip[] = { SPEC_K_MEASURE_SKIP_STEPS,
	    SPEC_K_STEPS };
	static const enum spec_key heads[] = { SPEC_K_MODEL_HIDDEN,
	    SPEC_K_MODEL_HEADS };
	static const enum spec_key seq[] = { SPEC_K_SEQ_LEN, SPEC_K_MODEL,
	    SPEC_K_MODEL_MAX_POSITION };
	static const enum spec_key ranks[] = { SPEC_K_RES_RANKS_PER_NODE,
	    SPEC_K_RES_GPUS_PER_NODE };
	static const enum spec_key prec[] = { SPEC_K_PRECISION,
	    SPEC_K_RES_GPUS_PER_NODE };
	static const enum spec_key launch[] = { SPEC_K_LAUNCHER,
	    SPEC_K_SCHED_BACKEND };
	static const enum spec_key at[] = { SPEC_K_CKPT_EVAL_AT,
	    SPEC_K_CHECKPOINT_EVERY };
	static const enum spec_key ev[] = { SPEC_K_CKPT_EVAL_AT,
	    SPEC_K_CKPT_EVAL_DATA };
	static const enum spec_key keep[] = { SPEC_K_KEEP_TIMED,
	    SPEC_K_CKPT_EVAL_AT };
	const struct spec_value	*v;
	size_t			 i;
	const struct spec	*s = cx->s;
	struct spec_model_dims	 m;
	char			 a[64], b[64];
	int64_t			 x, y;
	const char		*str;

	if (all_good(s, cfg, grace, NKEYS(grace))) {
		x = spec_cfg_int(s, cfg, SPEC_K_SCHED_SIGNAL_GRACE);
		y = spec_cfg_int(s, cfg, SPEC_K_SCHED_TIME_LIMIT);
		if (x >= y) {
			duration_format(x, a, sizeof a);
			duration_format(y, b, sizeof b);
			cfg_error(cx, cfg, grace, NKEYS(grace),
			    "scheduler.signal_grace (%s) must be shorter than "
			    "scheduler.time_limit (%s)", a, b);
		}
	}
	if (all_good(s, cfg, startup, NKEYS(startup))) {
		x = spec_cfg_int(s, cfg, SPEC_K_AGENT_STARTUP_TIMEOUT);
		y = spec_cfg_int(s, cfg, SPEC_K_SCHED_TIME_LIMIT);
		if (x >= y) {
			duration_format(x, a, sizeof a);
			duration_format(y, b, sizeof b);
			cfg_error(cx, cfg, startup, NKEYS(startup),
			    "agent.startup_timeout (%s) must be shorter than "
			    "scheduler.time_limit (%s)", a, b);
		}
	}
	if (all_good(s, cfg, skip, NKEYS(skip))) {
		x = spec_cfg_int(s, cfg, SPEC_K_MEASURE_SKIP_STEPS);
		y = spec_cfg_int(s, cfg, SPEC_K_STEPS);
		if (x >= y)
			cfg_error(cx, cfg, skip, NKEYS(skip),
			    "measure.skip_steps (%" PRId64 ") must be less than "
			    "trainer.steps (%" PRId64 "), or no step is "
			    "measured", x, y);
	}
	str = spec_cfg_string(s, cfg, SPEC_K_MODEL);
	if (all_good(s, cfg, seq, NKEYS(seq)) && str != NULL &&
	    (strcmp(str, "custom") != 0 || (s->v[SPEC_K_MODEL_LAYERS].set &&
	    s->v[SPEC_K_MODEL_HIDDEN].set && s->v[SPEC_K_MODEL_HEADS].set))) {
		spec_cfg_model(s, cfg, &m);
		if (strcmp(str, "custom") == 0 && !s->v[SPEC_K_MODEL_HEADS].bad &&
		    !s->v[SPEC_K_MODEL_HIDDEN].bad && m.hidden % m.heads != 0)
			cfg_error(cx, cfg, heads, NKEYS(heads),
			    "trainer.model.hidden (%" PRId64 ") must be a "
			    "multiple of trainer.model.heads (%" PRId64 ")",
			    m.hidden, m.heads);
		x = spec_cfg_int(s, cfg, SPEC_K_SEQ_LEN);
		if (x > m.max_position)
			cfg_error(cx, cfg, seq, NKEYS(seq), "trainer.seq_len "
			    "(%" PRId64 ") is longer than the model's "
			    "max_position (%" PRId64 ")", x, m.max_position);
	}
	if (all_good(s, cfg, ranks, NKEYS(ranks))) {
		x = spec_cfg_int(s, cfg, SPEC_K_RES_RANKS_PER_NODE);
		y = spec_cfg_int(s, cfg, SPEC_K_RES_GPUS_PER_NODE);
		if (x != 0 && y != 0 && x != y)
			cfg_error(cx, cfg, ranks, NKEYS(ranks),
			    "resources.ranks_per_node (%" PRId64 ") must equal "
			    "resources.gpus_per_node (%" PRId64 "); each rank "
			    "drives one GPU, which 0 chooses", x, y);
	}
	if (all_good(s, cfg, prec, NKEYS(prec))) {
		str = spec_cfg_string(s, cfg, SPEC_K_PRECISION);
		y = spec_cfg_int(s, cfg, SPEC_K_RES_GPUS_PER_NODE);
		if (strcmp(str, "fp32") != 0 && y == 0)
			cfg_error(cx, cfg, prec, NKEYS(prec),
			    "trainer.precision %s needs GPUs, but "
			    "resources.gpus_per_node is 0; CPU runs train in "
			    "fp32", str);
	}
	if (all_good(s, cfg, launch, NKEYS(launch))) {
		str = spec_cfg_string(s, cfg, SPEC_K_SCHED_BACKEND);
		if (strcmp(spec_cfg_string(s, cfg, SPEC_K_LAUNCHER), "srun") ==
		    0 && strcmp(str, "slurm") != 0 &&
		    strcmp(str, "slurm-rest") != 0)
			cfg_error(cx, cfg, launch, NKEYS(launch),
			    "launcher srun needs a Slurm backend, but "
			    "scheduler.backend is %s; use mpirun", str);
	}
	/* A checkpoint is "at T" when T is one of its timed marks, the
	 * multiples of checkpoint_every: another T would never match. */
	v = spec_cfg_value(s, cfg, SPEC_K_CKPT_EVAL_AT);
	if (all_good(s, cfg, at, NKEYS(at)) && v->set) {
		y = spec_cfg_int(s, cfg, SPEC_K_CHECKPOINT_EVERY);
		for (i = 0; i < v->n; i++) {
			x = strtoll(v->list[i], NULL, 10);
			if (y > 0 && x % y == 0)
				continue;
			duration_format(x, a, sizeof a);
			duration_format(y, b, sizeof b);
			cfg_error(cx, cfg, at, NKEYS(at), y == 0 ?
			    "eval.at %s: trainer.checkpoint_every is 0, so no "
			    "checkpoint is timed; set it (e.g. 20m)%s" :
			    "eval.at %s is not a multiple of "
			    "trainer.checkpoint_every (%s): timed checkpoints "
			    "are taken at its multiples only", a, y == 0 ? "" : b);
			break;
		}
	}
	if (all_good(s, cfg, ev, NKEYS(ev)) && v->set &&
	    !spec_cfg_value(s, cfg, SPEC_K_CKPT_EVAL_DATA)->set)
		cfg_error(cx, cfg, ev, NKEYS(ev), "eval.at is set but "
		    "eval.data is not: name the held-out shards to evaluate "
		    "the checkpoints on");
	if (all_good(s, cfg, keep, NKEYS(keep)) && !v->set &&
	    strcmp(spec_cfg_string(s, cfg, SPEC_K_KEEP_TIMED), "at") == 0)
		cfg_error(cx, cfg, keep, NKEYS(keep), "trainer.keep_timed: "
		    "at keeps the checkpoints at eval.at, which is not set; "
		    "set eval.at or keep all");
}

/* ------------------------------------------------------------ entry points */

static char *
dir_of(const char *file)
{
	char	*copy, *dir;

	if (file == NULL || strcmp(file, "-") == 0 ||
	    strchr(file, '/') == NULL)
		return xstrdup(".");
	copy = xstrdup(file);
	dir = xstrdup(dirname(copy));
	free(copy);
	return dir;
}

int
spec_parse(const char *filename, const char *text, size_t len,
    struct diags *d, struct spec **out)
{
	struct spec_cx		 cx;
	struct spec		*s = NULL;
	struct ydoc		*doc = NULL;
	const struct ynode	*root, *version;
	size_t			 errors = diags_errors(d);
	char			*got;
	int			 rc, k;

	*out = NULL;
	if (filename == NULL)
		filename = "-";
	if ((rc = ydoc_parse(filename, text, len, SPEC_MAX_BYTES, d,
	    &doc)) != 0)
		return rc;
	root = doc->root;
	if (root == NULL || ynode_is_null(root)) {
		diag_error(d, filename, 0, 0, "the spec is empty; it needs at "
		    "least 'version: 1', a name and trainer.data");
		rc = CADRE_ERR_INVALID;
		goto out;
	}
	if (root->kind != YNODE_MAP) {
		got = spec_describe(root);
		diag_error(d, filename, root->line, root->col, "the top level "
		    "must be a mapping of keys (version: 1, name: ...), not %s",
		    got);
		free(got);
		rc = CADRE_ERR_INVALID;
		goto out;
	}

	s = xcalloc(1, sizeof *s);
	s->file = xstrdup(filename);
	s->dir = dir_of(filename);
	spec_defaults(s->def);
	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		spec_value_copy(&s->v[k], &s->def[k]);
		s->varied_index[k] = -1;
	}
	memset(&cx, 0, sizeof cx);
	cx.file = filename;
	cx.d = d;
	cx.s = s;

	/* Another version may mean other keys: say only that. */
	if ((version = ymap_get(root, "version")) != NULL &&
	    spec_value_parse(&cx, SPEC_K_VERSION, version,
	    &s->v[SPEC_K_VERSION]) != 0) {
		rc = CADRE_ERR_INVALID;
		goto out;
	}
	check_map(&cx, NULL, NULL, root);
	check_required(&cx);
	check_base(&cx);
	spec_matrix_parse(&cx);
	if (!s->matrix_bad)
		spec_matrix_expand(&cx);

	rc = diags_errors(d) > errors ? CADRE_ERR_INVALID : 0;
	if (rc == 0) {
		*out = s;
		s = NULL;
	}

 out:
	spec_free(s);
	ydoc_free(doc);
	return rc;
}

int
spec_load(const char *path, struct diags *d, struct spec **out)
{
	struct cbuf	 b;
	struct stat	 st;
	const char	*name = strcmp(path, "-") == 0 ? "<stdin>" : path;
	char		*dir, real[PATH_MAX];
	int		 rc;

	*out = NULL;
	if (strcmp(path, "-") != 0) {
		if (stat(path, &st) != 0) {
			diag_error(d, name, 0, 0, "cannot read the spec: %s",
			    strerror(errno));
			return CADRE_ERR_SYSTEM;
		}
		if (S_ISDIR(st.st_mode)) {
			diag_error(d, name, 0, 0, "is a directory, not a spec "
			    "file");
			return CADRE_ERR_INVALID;
		}
		if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size >
		    SPEC_MAX_BYTES) {
			diag_error(d, name, 0, 0, "file is %jd bytes; specs are "
			    "limited to 1 MiB", (intmax_t)st.st_size);
			return CADRE_ERR_TOO_LARGE;
		}
	}
	cbuf_init(&b, SPEC_MAX_BYTES);
	rc = cbuf_read_file(&b, path);
	if (rc == CADRE_ERR_TOO_LARGE)
		diag_error(d, name, 0, 0, "file is more than %zu bytes; specs "
		    "are limited to 1 MiB", SPEC_MAX_BYTES);
	else if (rc != 0)
		diag_error(d, name, 0, 0, "cannot read the spec: %s",
		    strerror(errno));
	else
		rc = spec_parse(name, b.data != NULL ? b.data : "", b.len, d,
		    out);
	cbuf_free(&b);
	if (rc == 0 && strcmp(path, "-") != 0) {
		/* Relative paths in the spec mean: next to the spec. */
		dir = dir_of(path);
		if (realpath(dir, real) != NULL) {
			free((*out)->dir);
			(*out)->dir = xstrdup(real);
		}
		free(dir);
	}
	return rc;
}

void
spec_free(struct spec *s)
{
	int	k;

	if (s == NULL)
		return;
	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		spec_value_free(&s->v[k]);
		spec_value_free(&s->def[k]);
	}
	spec_matrix_free(s);
	free(s->file);
	free(s->dir);
	free(s);
}
