/*
 * matrix, exclude, include and report.baseline: their entries checked
 * against the key table, and the values exclude entries name looked up
 * among the matrix values.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "strutil.h"
#include "xmalloc.h"
#include "spec_matrix.h"

#define SHOW_VALUES	10	/* matrix values listed in a message */
#define VARS_PREFIX	"program.vars."	/* of a matrix key naming one var */

/* ------------------------------------------------------------ values of a dim */

struct vref {
	char	*text;
	size_t	 idx;
};

static int
vref_cmp(const void *pa, const void *pb)
{
	const struct vref	*a = pa, *b = pb;
	int			 c;

	if ((c = strcmp(a->text, b->text)) != 0)
		return c;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* A dim's values sorted by their canonical text, for lookups by value. */
struct dim_index {
	struct vref	*refs;
	size_t		 n;
};

static void
dim_index_build(const struct spec_dim *dim, struct dim_index *ix)
{
	size_t	i;

	ix->n = dim->n;
	ix->refs = xreallocarray(NULL, dim->n, sizeof *ix->refs);
	for (i = 0; i < dim->n; i++) {
		ix->refs[i].text = spec_value_format(dim->key, &dim->vals[i]);
		ix->refs[i].idx = i;
	}
	qsort(ix->refs, ix->n, sizeof *ix->refs, vref_cmp);
}

static void
dim_index_free(struct dim_index *ix)
{
	size_t	i;

	for (i = 0; i < ix->n; i++)
		free(ix->refs[i].text);
	free(ix->refs);
	ix->refs = NULL;
	ix->n = 0;
}

static size_t
dim_index_find(const struct dim_index *ix, enum spec_key k,
    const struct spec_value *v)
{
	size_t	lo = 0, hi = ix->n, mid;
	char	*text = spec_value_format(k, v);
	int	c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = strcmp(ix->refs[mid].text, text);
		if (c == 0) {
			free(text);
			return ix->refs[mid].idx;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	free(text);
	return SIZE_MAX;
}

/* "1, 2, 4" (the first SHOW_VALUES of them). */
static char *
dim_values_text(const struct spec_dim *dim)
{
	struct cbuf	 b;
	size_t		 i;
	char		*t;

	cbuf_init(&b, SIZE_MAX);
	for (i = 0; i < dim->n && i < SHOW_VALUES; i++) {
		t = spec_value_format(dim->key, &dim->vals[i]);
		cbuf_addf(&b, "%s%s", i > 0 ? ", " : "", t);
		free(t);
	}
	if (dim->n > SHOW_VALUES)
		cbuf_addf(&b, ", ... (%zu in all)", dim->n);
	return cbuf_detach(&b, NULL);
}

/* ------------------------------------------------------------ parsing */

/* The NAME of a key "program.vars.NAME", or NULL for another key. */
static const char *
var_of(const char *key)
{
	size_t	n = strlen(VARS_PREFIX);

	return strncmp(key, VARS_PREFIX, n) == 0 ? key + n : NULL;
}

/* A matrix or entry value of key k; var_path: "program.vars.NAME" for
 * one var, else NULL. */
static int
parse_item(struct spec_cx *cx, const char *where, enum spec_key k,
    const char *var_path, const struct ynode *n, struct spec_value *v)
{
	memset(v, 0, sizeof *v);
	if (var_path != NULL)
		return spec_var_parse(cx, var_path, n, v);
	if (k == SPEC_K_MODEL && n->kind == YNODE_MAP) {
		spec_node_error(cx, n, "%s: trainer.model: only presets can vary "
		    "here; write the explicit dimensions under trainer.model",
		    where);
		v->bad = 1;
		return CADRE_ERR_INVALID;
	}
	return spec_value_parse(cx, k, n, v);
}

static void
parse_dim(struct spec_cx *cx, const struct ynode *key, const struct ynode *val)
{
	struct spec		*s = cx->s;
	const struct spec_key_info *ki;
	struct spec_dim		*dim;
	struct dim_index	 ix;
	const char		*sugg, *var, *path;
	char			*shown, *got;
	size_t			 i;
	int			 k, bad = 0;

	shown = spec_show(key->str, key->len);
	if ((var = var_of(key->str)) != NULL) {
		/* program.vars.NAME: one var, any name */
		k = SPEC_K_PROG_VARS;
		if (spec_var_name_check(cx, key, "matrix: program.vars",
		    var) != 0)
			goto bad;
	} else if ((k = spec_key_lookup(key->str)) < 0) {
		/* Past the messages kept, spare the search. */
		sugg = diags_full(cx->d) ? NULL :
		    spec_suggest_path(key->str, SPEC_F_MATRIX);
		if (sugg != NULL)
			spec_node_error(cx, key, "matrix: unknown key '%s' (did you "
			    "mean '%s'?)", shown, sugg);
		else
			spec_node_error(cx, key, "matrix: unknown key '%s'; matrix "
			    "keys are dotted paths such as trainer.batch_size "
			    "('cadre keys' marks the keys that can vary)", shown);
		goto bad;
	}
	ki = spec_key_info(k);
	path = var != NULL ? key->str : ki->path;
	if (var == NULL && (ki->flags & SPEC_F_MATRIX_NAMES)) {
		spec_node_error(cx, key, "matrix: %s varies one name at a time: "
		    "write %s.NAME", ki->path, ki->path);
		goto bad;
	}
	if (var == NULL && !(ki->flags & SPEC_F_MATRIX)) {
		spec_node_error(cx, key, "matrix: %s cannot vary in a matrix ('cadre "
		    "keys' marks the keys that can)", ki->path);
		goto bad;
	}
	if (spec_key_foreign(cx, "matrix", k, key))
		goto bad;
	if (val->kind != YNODE_SEQ) {
		got = spec_describe(val);
		spec_node_error(cx, val, "matrix: %s: expected a list of values, "
		    "e.g. [a, b], got %s", path, got);
		free(got);
		goto bad;
	}
	if (val->n == 0) {
		spec_node_error(cx, val, "matrix: %s: the list is empty; give at "
		    "least one value", path);
		goto bad;
	}
	if (s->ndims == SPEC_MAX_MATRIX_KEYS) {
		spec_node_error(cx, key, "matrix: more than %d keys",
		    SPEC_MAX_MATRIX_KEYS);
		goto bad;
	}

	s->dims = xreallocarray(s->dims, s->ndims + 1, sizeof *s->dims);
	dim = &s->dims[s->ndims++];
	memset(dim, 0, sizeof *dim);
	dim->key = k;
	dim->var = var != NULL ? xstrdup(var) : NULL;
	dim->line = key->line;
	dim->col = key->col;
	dim->vals = xcalloc(val->n, sizeof *dim->vals);
	dim->n = val->n;
	for (i = 0; i < val->n; i++) {
		if (parse_item(cx, "matrix", k, var != NULL ? path : NULL,
		    val->items[i], &dim->vals[i]) != 0)
			bad = 1;
	}
	if (bad)
		goto bad;

	/* The same value twice would make two identical configurations. */
	dim_index_build(dim, &ix);
	for (i = 1; i < ix.n; i++) {
		const struct ynode	*first, *again;
		char			*t1, *t2;

		if (strcmp(ix.refs[i].text, ix.refs[i - 1].text) != 0)
			continue;
		first = val->items[ix.refs[i - 1].idx];
		again = val->items[ix.refs[i].idx];
		t1 = spec_show(first->str, first->len);
		t2 = spec_show(again->str, again->len);
		diag_error(cx->d, cx->file, again->line, again->col, "matrix: "
		    "%s: '%s' is the same value as '%s' at line %u, column %u; "
		    "list each value once", path, t2, t1,
		    (unsigned)first->line, (unsigned)first->col);
		free(t1);
		free(t2);
		bad = 1;
	}
	dim_index_free(&ix);
	if (bad)
		goto bad;
	free(shown);
	return;

 bad:
	s->matrix_bad = 1;
	free(shown);
}

static void
parse_matrix(struct spec_cx *cx)
{
	const struct ynode	*m = cx->matrix;
	size_t			 i;
	char			*got;

	if (m->kind != YNODE_MAP) {
		got = spec_describe(m);
		spec_node_error(cx, m, "matrix: expected a mapping of dotted keys to "
		    "lists of values, e.g. trainer.batch_size: [32, 64], got %s",
		    got);
		free(got);
		cx->s->matrix_bad = 1;
		return;
	}
	for (i = 0; i < m->n; i++)
		parse_dim(cx, YMAP_KEY(m, i), YMAP_VAL(m, i));
}

static size_t
find_dim(const struct spec *s, enum spec_key k, const char *var)
{
	size_t	i;

	for (i = 0; i < s->ndims; i++) {
		if (s->dims[i].key == k && (var == NULL ?
		    s->dims[i].var == NULL : s->dims[i].var != NULL &&
		    strcmp(s->dims[i].var, var) == 0))
			return i;
	}
	return SIZE_MAX;
}

/* A misspelt key of an exclude entry: a near matrix key first. Caller
 * frees. */
static char *
suggest_dim(const struct spec *s, const char *key)
{
	size_t		 i, d, bestd = 4;
	char		*best = NULL, *path;
	const char	*sugg;

	for (i = 0; i < s->ndims; i++) {
		if (s->dims[i].var != NULL)
			xasprintf(&path, VARS_PREFIX "%s", s->dims[i].var);
		else
			path = xstrdup(spec_key_info(s->dims[i].key)->path);
		d = str_edit_distance(key, path, 3);
		if (d < bestd) {
			bestd = d;
			free(best);
			best = path;
		} else
			free(path);
	}
	if (best == NULL && (sugg = spec_suggest_path(key,
	    SPEC_F_MATRIX)) != NULL)
		best = xstrdup(sugg);
	return best;
}

enum entry_kind {
	ENTRY_EXCLUDE,
	ENTRY_INCLUDE,
	ENTRY_BASELINE
};

static void
parse_entry(struct spec_cx *cx, enum entry_kind kind, const char *where,
    const struct ynode *n, struct dim_index *ixs, struct spec_entry *e)
{
	struct spec		*s = cx->s;
	const struct ynode	*key, *val;
	struct spec_assign	*a;
	const char		*var, *path;
	char			*sugg, *shown, *got, *vals, *vtext;
	size_t			 i;
	int			 k;

	memset(e, 0, sizeof *e);
	e->line = n->line;
	e->col = n->col;
	if (n->kind != YNODE_MAP) {
		got = spec_describe(n);
		spec_node_error(cx, n, "%s: expected an entry such as {%s: 4}, got %s",
		    where, "resources.nodes", got);
		free(got);
		e->bad = 1;
		return;
	}
	if (n->n == 0 && kind != ENTRY_INCLUDE) {
		spec_node_error(cx, n, "%s: the entry is empty; it would match every "
		    "configuration", where);
		e->bad = 1;
		return;
	}
	e->a = xcalloc(n->n, sizeof *e->a);
	for (i = 0; i < n->n; i++) {
		key = YMAP_KEY(n, i);
		val = YMAP_VAL(n, i);
		shown = spec_show(key->str, key->len);
		var = var_of(key->str);
		k = var != NULL ? SPEC_K_PROG_VARS : spec_key_lookup(key->str);
		if (k < 0) {
			if (diags_full(cx->d))
				sugg = NULL;
			else if (kind == ENTRY_INCLUDE) {
				path = spec_suggest_path(key->str,
				    SPEC_F_MATRIX);
				sugg = path != NULL ? xstrdup(path) : NULL;
			} else
				sugg = suggest_dim(s, key->str);
			if (sugg != NULL)
				spec_node_error(cx, key, "%s: unknown key '%s' (did "
				    "you mean '%s'?)", where, shown, sugg);
			else
				spec_node_error(cx, key, "%s: unknown key '%s'; keys "
				    "here are dotted paths such as "
				    "resources.nodes", where, shown);
			e->bad = 1;
			free(sugg);
			free(shown);
			continue;
		}
		free(shown);
		path = var != NULL ? key->str : spec_key_info(k)->path;
		if (var != NULL ? spec_var_name_check(cx, key, where, var) != 0 :
		    !(spec_key_info(k)->flags & SPEC_F_MATRIX)) {
			if (var == NULL)
				spec_node_error(cx, key, "%s: %s cannot vary "
				    "between configurations ('cadre keys' marks "
				    "the keys that can%s)", where, path,
				    k == SPEC_K_PROG_VARS ? "; one var is "
				    "program.vars.NAME" : "");
			e->bad = 1;
			continue;
		}
		if (spec_key_foreign(cx, where, k, key)) {
			e->bad = 1;
			continue;
		}
		a = &e->a[e->n++];
		a->key = k;
		a->var = var != NULL ? xstrdup(var) : NULL;
		a->dim = find_dim(s, k, var);
		a->vidx = SIZE_MAX;
		if (kind == ENTRY_EXCLUDE && a->dim == SIZE_MAX) {
			spec_node_error(cx, key, "%s: %s is not a matrix key; an "
			    "exclude entry can only name keys under matrix",
			    where, path);
			e->bad = 1;
		}
		if (parse_item(cx, where, k, var != NULL ? path : NULL, val,
		    &a->val) != 0) {
			e->bad = 1;
			continue;
		}
		if (kind != ENTRY_EXCLUDE || a->dim == SIZE_MAX ||
		    s->matrix_bad)
			continue;
		a->vidx = dim_index_find(&ixs[a->dim], k, &a->val);
		if (a->vidx == SIZE_MAX) {
			vals = dim_values_text(&s->dims[a->dim]);
			vtext = spec_value_format(k, &a->val);
			diag_warning(cx->d, cx->file, val->line, val->col,
			    "%s: this entry matches no configuration: %s is "
			    "not one of the matrix values of %s (%s)", where,
			    vtext, path, vals);
			free(vtext);
			free(vals);
			e->nomatch = 1;
		}
	}
}

static void
parse_entries(struct spec_cx *cx, enum entry_kind kind,
    const struct ynode *list, struct dim_index *ixs,
    struct spec_entry **entries, size_t *n)
{
	const char	*where = kind == ENTRY_EXCLUDE ? "exclude" : "include";
	char		*got;
	size_t		 i;

	if (list->kind != YNODE_SEQ) {
		got = spec_describe(list);
		spec_node_error(cx, list, "%s: expected a list of entries such as "
		    "- {resources.nodes: 4, resources.gpus_per_node: 1}, got %s",
		    where, got);
		free(got);
		cx->s->matrix_bad = 1;
		return;
	}
	*entries = xcalloc(list->n, sizeof **entries);
	*n = list->n;
	for (i = 0; i < list->n; i++)
		parse_entry(cx, kind, where, list->items[i], ixs,
		    &(*entries)[i]);
}

static int
entry_sets(const struct spec_entry *e, const char *var)
{
	size_t	i;

	for (i = 0; i < e->n; i++) {
		if (e->a[i].var != NULL && strcmp(e->a[i].var, var) == 0)
			return 1;
	}
	return 0;
}

/*
 * A var that program.vars does not name is introduced by the matrix or
 * an include entry, and every configuration must still give it a value:
 * the include entries (which start from program.vars, not the matrix)
 * and, for one only include entries set, the matrix's configurations.
 */
static void
check_var_one(struct spec_cx *cx, const char *var, int in_matrix)
{
	struct spec		*s = cx->s;
	const struct spec_entry	*e;
	size_t			 i;
	int			 first = 1;

	for (i = 0; i < s->nincludes; i++) {
		e = &s->includes[i];
		if (e->bad)
			continue;
		if (entry_sets(e, var)) {
			if (first && !in_matrix && s->ndims > 0)
				diag_error(cx->d, cx->file, e->line, e->col,
				    "include: program.vars.%s has no default "
				    "under program.vars, and the matrix's "
				    "configurations do not set it; give it one",
				    var);
			first = 0;
			continue;
		}
		diag_error(cx->d, cx->file, e->line, e->col, "include: this "
		    "entry gives no value to program.vars.%s, which has no "
		    "default; add it to the entry, or give it a default under "
		    "program.vars", var);
	}
}

static void
check_var_defaults(struct spec_cx *cx)
{
	struct spec	*s = cx->s;
	size_t		 i, j, k;
	const char	*var;
	int		 seen;

	if (s->matrix_bad)
		return;
	for (i = 0; i < s->ndims; i++) {
		var = s->dims[i].var;
		if (var != NULL && spec_pairs_get(&s->v[SPEC_K_PROG_VARS],
		    var) == NULL)
			check_var_one(cx, var, 1);
	}
	/* Those only include entries introduce, each once. */
	for (i = 0; i < s->nincludes; i++) {
		for (j = 0; !s->includes[i].bad && j < s->includes[i].n; j++) {
			var = s->includes[i].a[j].var;
			if (var == NULL || spec_pairs_get(
			    &s->v[SPEC_K_PROG_VARS], var) != NULL ||
			    find_dim(s, SPEC_K_PROG_VARS, var) != SIZE_MAX)
				continue;
			for (k = seen = 0; k < i && !seen; k++)
				seen = !s->includes[k].bad &&
				    entry_sets(&s->includes[k], var);
			if (!seen)
				check_var_one(cx, var, 0);
		}
	}
}

void
spec_matrix_parse(struct spec_cx *cx)
{
	struct spec		*s = cx->s;
	struct dim_index	*ixs;
	size_t			 i;

	if (cx->matrix != NULL)
		parse_matrix(cx);
	ixs = xcalloc(s->ndims + 1, sizeof *ixs);
	if (!s->matrix_bad) {
		for (i = 0; i < s->ndims; i++)
			dim_index_build(&s->dims[i], &ixs[i]);
	}
	if (cx->exclude != NULL) {
		if (cx->matrix == NULL) {
			spec_node_error(cx, cx->exclude_key, "exclude: there is no "
			    "matrix to exclude from");
			s->matrix_bad = 1;
		} else
			parse_entries(cx, ENTRY_EXCLUDE, cx->exclude, ixs,
			    &s->excludes, &s->nexcludes);
	}
	if (cx->include != NULL)
		parse_entries(cx, ENTRY_INCLUDE, cx->include, ixs,
		    &s->includes, &s->nincludes);
	if (cx->baseline != NULL) {
		s->has_baseline = 1;
		parse_entry(cx, ENTRY_BASELINE, "report.baseline", cx->baseline,
		    ixs, &s->baseline);
	}
	for (i = 0; i < s->ndims; i++)
		dim_index_free(&ixs[i]);
	free(ixs);
	check_var_defaults(cx);
}
