/*
 * One key's value from its YAML node: the node checked against the key's
 * type and range or values in the table, each problem reported with what
 * was expected and what was written. The table's defaults go through the
 * same checks.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "duration.h"
#include "error.h"
#include "log.h"
#include "rundir.h"
#include "size.h"
#include "strutil.h"
#include "xmalloc.h"
#include "spec_check.h"

static int
looks_numeric(const char *s)
{
	double	f;
	int	rc = str_to_double(s, &f);

	return rc == 0 || rc == CADRE_ERR_RANGE;
}

static int
is_blank(const char *s)
{
	return s[strspn(s, " \t\n\r")] == '\0';
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

/* What a key of each type takes, for "expected ...", where that does not
 * depend on the key's range or values. */
static const char *const expected_text[] = {
	[SPEC_T_BOOL] = "true or false",
	[SPEC_T_TEXT] = "text",
	[SPEC_T_NAME] = "a name of 1 to 64 letters, digits, '.', '_' or '-'",
	[SPEC_T_DURATION] = "a duration such as 90s, 20m, 1h30m or 01:30:00",
	[SPEC_T_SIZE] = "a size such as 512M, 64G or 2GiB",
	[SPEC_T_PATH] = "a path",
	[SPEC_T_WORD] = "a word",
	[SPEC_T_ENV] = "an environment variable name",
	[SPEC_T_URL] = "an http://, https:// or unix:/// URL",
	[SPEC_T_WORDS] = "a list of words, e.g. [\"--exclusive\"]",
	[SPEC_T_PATHS] = "a list of paths, e.g. [/scratch]",
	[SPEC_T_DURATIONS] = "a list of durations, e.g. [20m, 40m]",
	[SPEC_T_COMMAND] = "a list of words such as [python3, train.py], or a "
	    "string for sh -c",
	[SPEC_T_TEXTS] = "a list of strings, e.g. [\"pip install -e .\"]",
	[SPEC_T_VARS] = "a mapping of names to values, e.g. {batch: 32}",
	[SPEC_T_ENVS] = "a mapping of variable names to values, e.g. "
	    "{OMP_NUM_THREADS: 4}",
	[SPEC_T_REGEX] = "a PCRE2 pattern with named groups",
};

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
	case SPEC_T_ENUM:
	case SPEC_T_MODEL:
		cbuf_adds(&b, "one of ");
		add_values(&b, ki->values);
		if (ki->type == SPEC_T_MODEL)
			cbuf_adds(&b, ", or a mapping of dimensions");
		break;
	case SPEC_T_ENUMS:
		cbuf_adds(&b, "a list of values from ");
		add_values(&b, ki->values);
		break;
	default:
		cbuf_adds(&b, (size_t)ki->type < sizeof expected_text /
		    sizeof expected_text[0] && expected_text[ki->type] != NULL ?
		    expected_text[ki->type] : "a value");
		break;
	}
	return cbuf_detach(&b, NULL);
}

static void
type_error(struct spec_cx *cx, const struct spec_key_info *ki,
    const struct ynode *n, const char *extra)
{
	char	*exp = expected(ki), *got = spec_describe(n);

	spec_node_error(cx, n, "%s: expected %s, got %s%s", ki->path, exp, got,
	    extra != NULL ? extra : "");
	free(exp);
	free(got);
}

/* n is a node of kind with at most ki->max children (what they are:
 * "items"): 0, or CADRE_ERR_INVALID after an error. */
static int
check_collection(struct spec_cx *cx, const struct spec_key_info *ki,
    const struct ynode *n, enum ynode_kind kind, const char *what)
{
	if (n->kind != kind) {
		type_error(cx, ki, n, NULL);
		return CADRE_ERR_INVALID;
	}
	if ((int64_t)n->n > ki->max) {
		spec_node_error(cx, n, "%s: at most %" PRId64 " %s, got %zu",
		    ki->path, ki->max, what, n->n);
		return CADRE_ERR_INVALID;
	}
	return 0;
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
	return CADRE_ERR_INVALID;
}

static int
check_path_text(struct spec_cx *cx, const struct spec_key_info *ki,
    const struct ynode *n)
{
	const unsigned char	*p = (const unsigned char *)n->str;
	size_t			 i, j;
	char			*shown;

	if (n->len == 0) {
		spec_node_error(cx, n, "%s: expected a path, got an empty string",
		    ki->path);
		return CADRE_ERR_INVALID;
	}
	if (n->len > SPEC_MAX_PATH) {
		spec_node_error(cx, n, "%s: paths are limited to %d bytes, got %zu",
		    ki->path, SPEC_MAX_PATH, n->len);
		return CADRE_ERR_INVALID;
	}
	for (i = 0; i < n->len; i++) {
		if (p[i] == '\n' || p[i] == '\r') {
			spec_node_error(cx, n, "%s: a path must not contain a line "
			    "break", ki->path);
			return CADRE_ERR_INVALID;
		}
		if (p[i] < 0x20 || p[i] == 0x7f) {
			spec_node_error(cx, n, "%s: a path must not contain control "
			    "characters (found 0x%02x)", ki->path, p[i]);
			return CADRE_ERR_INVALID;
		}
	}
	if (p[0] == '~') {
		spec_node_error(cx, n, "%s: '~' is not expanded in paths; write the "
		    "full path, or $HOME/...", ki->path);
		return CADRE_ERR_INVALID;
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
			spec_node_error(cx, n, "%s: a path may start with $NAME or "
			    "${NAME}, a variable of the job's environment, "
			    "then '/'; '%s' does not", ki->path, shown);
			free(shown);
			return CADRE_ERR_INVALID;
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
			spec_node_error(cx, n, "%s: a scheduler word must not contain "
			    "a line break", ki->path);
			return CADRE_ERR_INVALID;
		}
		if (p[i] < 0x20 || p[i] == 0x7f) {
			spec_node_error(cx, n, "%s: a scheduler word must be printable "
			    "(found control character 0x%02x)", ki->path, p[i]);
			return CADRE_ERR_INVALID;
		}
		if (p[i] != ' ')
			blank = 0;
	}
	if (blank) {
		spec_node_error(cx, n, "%s: a scheduler word must not be empty or "
		    "only spaces", ki->path);
		return CADRE_ERR_INVALID;
	}
	if (n->len > SPEC_MAX_WORD) {
		spec_node_error(cx, n, "%s: scheduler words are limited to %d bytes, "
		    "got %zu", ki->path, SPEC_MAX_WORD, n->len);
		return CADRE_ERR_INVALID;
	}
	return 0;
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
		return CADRE_ERR_INVALID;
	}
	switch (ki->type) {
	case SPEC_T_INT:
		if (!n->plain || str_to_int64(n->str, &iv) != 0 ||
		    iv < ki->min || iv > ki->max) {
			type_error(cx, ki, n, NULL);
			return CADRE_ERR_INVALID;
		}
		out->i = iv;
		break;
	case SPEC_T_FLOAT:
		if (!n->plain || str_to_double(n->str, &fv) != 0 ||
		    fv < ki->fmin || fv > ki->fmax ||
		    ((ki->flags & SPEC_F_MIN_OPEN) && fv == ki->fmin) ||
		    ((ki->flags & SPEC_F_MAX_OPEN) && fv == ki->fmax)) {
			type_error(cx, ki, n, NULL);
			return CADRE_ERR_INVALID;
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
			return CADRE_ERR_INVALID;
		}
		break;
	case SPEC_T_DURATION:
	case SPEC_T_SIZE:
		if (bare_number(n->str)) {
			shown = spec_show(n->str, n->len);
			spec_node_error(cx, n, "%s: expected a %s, got the bare number "
			    "%s; add a unit, e.g. %s", ki->path,
			    ki->type == SPEC_T_DURATION ? "duration" : "size",
			    shown, ki->type == SPEC_T_DURATION ? "90s or 20m" :
			    "64G or 512M");
			free(shown);
			return CADRE_ERR_INVALID;
		}
		if (ki->type == SPEC_T_DURATION)
			rc = duration_parse(n->str, &iv);
		else
			rc = size_parse(n->str, &iv);
		if (rc == CADRE_ERR_INVALID) {
			type_error(cx, ki, n, NULL);
			return CADRE_ERR_INVALID;
		}
		if (rc != 0 || iv < ki->min || iv > ki->max) {
			struct cbuf b;

			cbuf_init(&b, SIZE_MAX);
			spec_add_bound(&b, ki->type, ki->min);
			cbuf_adds(&b, " to ");
			spec_add_bound(&b, ki->type, ki->max);
			exp = cbuf_detach(&b, NULL);
			shown = spec_show(n->str, n->len);
			spec_node_error(cx, n, "%s: expected a %s from %s, got %s",
			    ki->path, ki->type == SPEC_T_DURATION ? "duration" :
			    "size", exp, shown);
			free(shown);
			free(exp);
			return CADRE_ERR_INVALID;
		}
		out->i = iv;
		break;
	case SPEC_T_ENUM:
	case SPEC_T_MODEL:
		if (parse_enum(cx, ki, n, &out->i) != 0)
			return CADRE_ERR_INVALID;
		break;
	case SPEC_T_REGEX:
		if (spec_regex_check(cx, ki, n) != 0)
			return CADRE_ERR_INVALID;
		break;
	case SPEC_T_TEXT:
		if ((int64_t)n->len > ki->max) {
			spec_node_error(cx, n, "%s: text is limited to %" PRId64
			    " bytes, got %zu", ki->path, ki->max, n->len);
			return CADRE_ERR_INVALID;
		}
		break;
	case SPEC_T_NAME:
		if (!str_is_name(n->str, 64)) {
			type_error(cx, ki, n, NULL);
			return CADRE_ERR_INVALID;
		}
		break;
	case SPEC_T_PATH:
		if (check_path_text(cx, ki, n) != 0)
			return CADRE_ERR_INVALID;
		break;
	case SPEC_T_WORD:
		if (check_word_text(cx, ki, n) != 0)
			return CADRE_ERR_INVALID;
		break;
	case SPEC_T_ENV:
		if (!str_is_env_name_n(n->str, n->len)) {
			type_error(cx, ki, n, " (letters, digits and '_', not "
			    "starting with a digit)");
			return CADRE_ERR_INVALID;
		}
		break;
	case SPEC_T_URL:
		if (!is_url(n->str, n->len)) {
			type_error(cx, ki, n, NULL);
			return CADRE_ERR_INVALID;
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

	if (check_collection(cx, ki, n, YNODE_SEQ, "items") != 0)
		return CADRE_ERR_INVALID;
	item.type = ki->type == SPEC_T_WORDS ? SPEC_T_WORD :
	    ki->type == SPEC_T_PATHS ? SPEC_T_PATH :
	    ki->type == SPEC_T_DURATIONS ? SPEC_T_DURATION :
	    ki->type == SPEC_T_TEXTS ? SPEC_T_TEXT : SPEC_T_ENUM;
	if (ki->type == SPEC_T_DURATIONS) {
		item.min = 1;
		item.max = 365 * 24 * 3600;
	}
	if (ki->type == SPEC_T_TEXTS)
		item.max = SPEC_MAX_TEXT;
	out->list = xcalloc(n->n + 1, sizeof *out->list);
	for (i = 0; i < n->n; i++) {
		struct spec_value	v;

		it = n->items[i];
		memset(&v, 0, sizeof v);
		if (parse_scalar(cx, &item, it, &v) != 0) {
			rc = CADRE_ERR_INVALID;
			continue;
		}
		if (ki->type == SPEC_T_TEXTS && is_blank(v.s)) {
			spec_node_error(cx, it, "%s: an empty string; remove "
			    "it, or write the command", ki->path);
			free(v.s);
			rc = CADRE_ERR_INVALID;
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
				spec_node_error(cx, it, "%s: '%s' is listed twice",
				    ki->path, shown);
				free(shown);
				free(v.s);
				rc = CADRE_ERR_INVALID;
				continue;
			}
		}
		out->list[out->n++] = v.s;
	}
	return rc;
}

/* ------------------------------------------------------------ programs */

static int
text_bound(struct spec_cx *cx, const char *path, const struct ynode *n)
{
	if (n->len <= SPEC_MAX_TEXT)
		return 0;
	spec_node_error(cx, n, "%s: text is limited to %d bytes, got %zu",
	    path, SPEC_MAX_TEXT, n->len);
	return CADRE_ERR_INVALID;
}

/* A word list, or one string for sh -c. */
static int
parse_command(struct spec_cx *cx, const struct spec_key_info *ki,
    const struct ynode *n, struct spec_value *out)
{
	const struct ynode	*it;
	char			*got;
	size_t			 i;
	int			 rc = 0;

	if (n->kind == YNODE_SCALAR && !ynode_is_null(n)) {
		if (is_blank(n->str)) {
			spec_node_error(cx, n, "%s: the command is empty; write "
			    "the program and its arguments, e.g. [python3, "
			    "train.py]", ki->path);
			return CADRE_ERR_INVALID;
		}
		if (text_bound(cx, ki->path, n) != 0)
			return CADRE_ERR_INVALID;
		out->s = xstrdup(n->str);
		return 0;
	}
	if (check_collection(cx, ki, n, YNODE_SEQ, "words") != 0)
		return CADRE_ERR_INVALID;
	if (n->n == 0) {
		spec_node_error(cx, n, "%s: the list is empty; write the program "
		    "and its arguments, e.g. [python3, train.py]", ki->path);
		return CADRE_ERR_INVALID;
	}
	out->list = xcalloc(n->n + 1, sizeof *out->list);
	for (i = 0; i < n->n; i++) {
		it = n->items[i];
		if (it->kind != YNODE_SCALAR || ynode_is_null(it)) {
			got = spec_describe(it);
			spec_node_error(cx, it, "%s: expected a word (text), got "
			    "%s", ki->path, got);
			free(got);
			rc = CADRE_ERR_INVALID;
			continue;
		}
		if (text_bound(cx, ki->path, it) != 0) {
			rc = CADRE_ERR_INVALID;
			continue;
		}
		if (i == 0 && is_blank(it->str)) {
			spec_node_error(cx, it, "%s: the first word, the program, "
			    "is empty", ki->path);
			rc = CADRE_ERR_INVALID;
			continue;
		}
		out->list[out->n++] = xstrdup(it->str);
	}
	return rc;
}

int
spec_var_name_check(struct spec_cx *cx, const struct ynode *at,
    const char *where, const char *name)
{
	char	*shown;

	if (!str_is_env_name(name) || strlen(name) > RUNDIR_NAME_MAX) {
		shown = spec_show(name, strlen(name));
		spec_node_error(cx, at, "%s: '%s' is not a var name (1 to 64 "
		    "letters, digits and '_', not starting with a digit)",
		    where, shown);
		free(shown);
		return CADRE_ERR_INVALID;
	}
	if (rundir_placeholder_env(name) != NULL) {
		spec_node_error(cx, at, "%s: %s is a built-in {%s}, set by cadre; "
		    "name the var otherwise", where, name, name);
		return CADRE_ERR_INVALID;
	}
	return 0;
}

int
spec_var_parse(struct spec_cx *cx, const char *path, const struct ynode *n,
    struct spec_value *out)
{
	char	*got;

	memset(out, 0, sizeof *out);
	out->line = n->line;
	out->col = n->col;
	if (n->kind != YNODE_SCALAR || ynode_is_null(n)) {
		got = spec_describe(n);
		spec_node_error(cx, n, "%s: expected a value (text, a number or "
		    "true/false), got %s", path, got);
		free(got);
		out->bad = 1;
		return CADRE_ERR_INVALID;
	}
	if (text_bound(cx, path, n) != 0) {
		out->bad = 1;
		return CADRE_ERR_INVALID;
	}
	out->s = xstrdup(n->str);
	out->set = 1;
	return 0;
}

/* program.env: variable names, none of cadre's own. */
static int
env_pair_name(struct spec_cx *cx, const struct spec_key_info *ki,
    const struct ynode *key)
{
	char	*shown;

	if (!str_is_env_name_n(key->str, key->len)) {
		shown = spec_show(key->str, key->len);
		spec_node_error(cx, key, "%s: '%s' is not a variable name "
		    "(letters, digits and '_', not starting with a digit)",
		    ki->path, shown);
		free(shown);
		return CADRE_ERR_INVALID;
	}
	if (strncmp(key->str, "CADRE_", 6) == 0) {
		spec_node_error(cx, key, "%s: %s: CADRE_* variables are cadre's "
		    "own (the program gets %s, %s, ...); use another name",
		    ki->path, key->str, ENV_RUN_DIR, ENV_CHECKPOINT_DIR);
		return CADRE_ERR_INVALID;
	}
	return 0;
}

/* program.vars and program.env: NAME: scalar, kept as text. */
static int
parse_pairs(struct spec_cx *cx, const struct spec_key_info *ki,
    const struct ynode *n, struct spec_value *out)
{
	const struct ynode	*key;
	struct spec_value	 one;
	char			*path;
	size_t			 i;
	int			 rc = 0;

	if (check_collection(cx, ki, n, YNODE_MAP, "entries") != 0)
		return CADRE_ERR_INVALID;
	for (i = 0; i < n->n; i++) {
		key = YMAP_KEY(n, i);
		if ((ki->type == SPEC_T_ENVS ? env_pair_name(cx, ki, key) :
		    spec_var_name_check(cx, key, ki->path, key->str)) != 0) {
			rc = CADRE_ERR_INVALID;
			continue;
		}
		xasprintf(&path, "%s.%s", ki->path, key->str);
		if (spec_var_parse(cx, path, YMAP_VAL(n, i), &one) == 0)
			spec_pairs_set(out, key->str, one.s);
		else
			rc = CADRE_ERR_INVALID;
		spec_value_free(&one);
		free(path);
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
		spec_node_error(cx, n, "version: this cadre reads spec version %d, "
		    "got %s", SPEC_VERSION, got);
		free(got);
		rc = CADRE_ERR_INVALID;
	} else if (spec_type_is_list(ki->type))
		rc = parse_list(cx, ki, n, out);
	else if (ki->type == SPEC_T_COMMAND)
		rc = parse_command(cx, ki, n, out);
	else if (spec_type_is_pairs(ki->type))
		rc = parse_pairs(cx, ki, n, out);
	else
		rc = parse_scalar(cx, ki, n, out);
	if (rc != 0) {
		spec_value_free(out);
		out->line = n->line;
		out->col = n->col;
		out->bad = 1;
		return CADRE_ERR_INVALID;
	}
	out->set = 1;
	return 0;
}

/* Defaults are written as a spec would write them and go through the same
 * checks: a default the checks refuse is a bug in the key table. */
void
spec_defaults(struct spec_value def[SPEC_KEY_COUNT])
{
	const struct spec_key_info *ki;
	struct diags	 d;
	struct spec_cx	 cx;
	struct ynode	 scalar, seq, *items[SPEC_MAX_LIST];
	struct ynode	 itemv[SPEC_MAX_LIST];
	char		*text, *p, *q;
	size_t		 n;
	int		 k;

	diags_init(&d);
	memset(&cx, 0, sizeof cx);
	cx.file = "(defaults)";
	cx.d = &d;
	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		ki = spec_key_info(k);
		memset(&def[k], 0, sizeof def[k]);
		if (ki->def == NULL)
			continue;
		text = xstrdup(ki->def);
		if (spec_type_is_list(ki->type)) {
			memset(&seq, 0, sizeof seq);
			seq.kind = YNODE_SEQ;
			seq.items = items;
			n = 0;
			for (p = text; p != NULL && n < SPEC_MAX_LIST; p = q) {
				if ((q = strchr(p, ',')) != NULL)
					*q++ = '\0';
				memset(&itemv[n], 0, sizeof itemv[n]);
				itemv[n].kind = YNODE_SCALAR;
				itemv[n].plain = 1;
				itemv[n].str = p;
				itemv[n].len = strlen(p);
				items[n] = &itemv[n];
				n++;
			}
			seq.n = n;
			if (spec_value_parse(&cx, k, &seq, &def[k]) != 0)
				fatalx("spec: bad default for %s", ki->path);
		} else {
			memset(&scalar, 0, sizeof scalar);
			scalar.kind = YNODE_SCALAR;
			scalar.plain = 1;
			scalar.str = text;
			scalar.len = strlen(text);
			if (spec_value_parse(&cx, k, &scalar, &def[k]) != 0)
				fatalx("spec: bad default for %s", ki->path);
		}
		def[k].line = def[k].col = 0;
		free(text);
	}
	diags_free(&d);
}
