/*
 * matrix, exclude, include and report.baseline: their entries checked
 * against the key table, the matrix expanded into configurations (the
 * cartesian product in the order the keys appear, the first key varying
 * slowest), run ids, the plan's runs, and the typed values of a spec and
 * of its runs.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "log.h"
#include "sha256.h"
#include "strutil.h"
#include "xmalloc.h"
#define SPEC_INTERNAL
#include "spec.h"
#include "spec_yaml.h"

#define ID_PREFIX	"cadre-spec-v1\n"
#define SHOW_VALUES	10	/* matrix values listed in a message */

struct spec_run {
	const struct spec		*spec;
	const struct spec_config	*cfg;
	size_t				 config;
	unsigned			 repeat;
	char				 id[SPEC_ID_LEN + 1];
};

struct spec_plan {
	const struct spec	*spec;
	struct spec_run		*runs;
	size_t			 nruns;
};

static void
node_error(struct spec_cx *cx, const struct ynode *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
node_error(struct spec_cx *cx, const struct ynode *n, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	diag_vadd(cx->d, DIAG_ERROR, cx->file, n->line, n->col, fmt, ap);
	va_end(ap);
}

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

static int
parse_item(struct spec_cx *cx, const char *where, enum spec_key k,
    const struct ynode *n, struct spec_value *v)
{
	memset(v, 0, sizeof *v);
	if (k == SPEC_K_MODEL && n->kind == YNODE_MAP) {
		node_error(cx, n, "%s: trainer.model: only presets can vary "
		    "here; write the explicit dimensions under trainer.model",
		    where);
		v->bad = 1;
		return -1;
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
	const char		*sugg;
	char			*shown, *got;
	size_t			 i;
	int			 k, bad = 0;

	shown = spec_show(key->str, key->len);
	if ((k = spec_key_lookup(key->str)) < 0) {
		/* Past the messages kept, spare the search. */
		sugg = diags_full(cx->d) ? NULL :
		    spec_suggest_path(key->str, SPEC_F_MATRIX);
		if (sugg != NULL)
			node_error(cx, key, "matrix: unknown key '%s' (did you "
			    "mean '%s'?)", shown, sugg);
		else
			node_error(cx, key, "matrix: unknown key '%s'; matrix "
			    "keys are dotted paths such as trainer.batch_size "
			    "('cadre keys' marks the keys that can vary)", shown);
		goto bad;
	}
	ki = spec_key_info(k);
	if (!(ki->flags & SPEC_F_MATRIX)) {
		node_error(cx, key, "matrix: %s cannot vary in a matrix ('cadre "
		    "keys' marks the keys that can)", ki->path);
		goto bad;
	}
	if (val->kind != YNODE_SEQ) {
		got = spec_describe(val);
		node_error(cx, val, "matrix: %s: expected a list of values, "
		    "e.g. [a, b], got %s", ki->path, got);
		free(got);
		goto bad;
	}
	if (val->n == 0) {
		node_error(cx, val, "matrix: %s: the list is empty; give at "
		    "least one value", ki->path);
		goto bad;
	}
	if (s->ndims == SPEC_MAX_MATRIX_KEYS) {
		node_error(cx, key, "matrix: more than %d keys",
		    SPEC_MAX_MATRIX_KEYS);
		goto bad;
	}

	s->dims = xreallocarray(s->dims, s->ndims + 1, sizeof *s->dims);
	dim = &s->dims[s->ndims++];
	memset(dim, 0, sizeof *dim);
	dim->key = k;
	dim->line = key->line;
	dim->col = key->col;
	dim->vals = xcalloc(val->n, sizeof *dim->vals);
	dim->n = val->n;
	for (i = 0; i < val->n; i++) {
		if (parse_item(cx, "matrix", k, val->items[i],
		    &dim->vals[i]) != 0)
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
		    "list each value once", ki->path, t2, t1,
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
		node_error(cx, m, "matrix: expected a mapping of dotted keys to "
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
find_dim(const struct spec *s, enum spec_key k)
{
	size_t	i;

	for (i = 0; i < s->ndims; i++) {
		if (s->dims[i].key == k)
			return i;
	}
	return SIZE_MAX;
}

/* A misspelt key of an exclude entry: a near matrix key first. */
static const char *
suggest_dim(const struct spec *s, const char *key)
{
	size_t		 i, d, bestd = 4;
	const char	*best = NULL;

	for (i = 0; i < s->ndims; i++) {
		d = str_edit_distance(key, spec_key_info(s->dims[i].key)->path,
		    3);
		if (d < bestd) {
			bestd = d;
			best = spec_key_info(s->dims[i].key)->path;
		}
	}
	return best != NULL ? best : spec_suggest_path(key, SPEC_F_MATRIX);
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
	const char		*sugg;
	char			*shown, *got, *vals, *vtext;
	size_t			 i;
	int			 k;

	memset(e, 0, sizeof *e);
	e->line = n->line;
	e->col = n->col;
	if (n->kind != YNODE_MAP) {
		got = spec_describe(n);
		node_error(cx, n, "%s: expected an entry such as {%s: 4}, got %s",
		    where, "resources.nodes", got);
		free(got);
		e->bad = 1;
		return;
	}
	if (n->n == 0 && kind != ENTRY_INCLUDE) {
		node_error(cx, n, "%s: the entry is empty; it would match every "
		    "configuration", where);
		e->bad = 1;
		return;
	}
	e->a = xcalloc(n->n, sizeof *e->a);
	for (i = 0; i < n->n; i++) {
		key = YMAP_KEY(n, i);
		val = YMAP_VAL(n, i);
		shown = spec_show(key->str, key->len);
		k = spec_key_lookup(key->str);
		if (k < 0) {
			sugg = diags_full(cx->d) ? NULL :
			    kind == ENTRY_INCLUDE ?
			    spec_suggest_path(key->str, SPEC_F_MATRIX) :
			    suggest_dim(s, key->str);
			if (sugg != NULL)
				node_error(cx, key, "%s: unknown key '%s' (did "
				    "you mean '%s'?)", where, shown, sugg);
			else
				node_error(cx, key, "%s: unknown key '%s'; keys "
				    "here are dotted paths such as "
				    "resources.nodes", where, shown);
			e->bad = 1;
			free(shown);
			continue;
		}
		free(shown);
		if (!(spec_key_info(k)->flags & SPEC_F_MATRIX)) {
			node_error(cx, key, "%s: %s cannot vary between "
			    "configurations ('cadre keys' marks the keys that "
			    "can)", where, spec_key_info(k)->path);
			e->bad = 1;
			continue;
		}
		a = &e->a[e->n++];
		a->key = k;
		a->dim = find_dim(s, k);
		a->vidx = SIZE_MAX;
		if (kind == ENTRY_EXCLUDE && a->dim == SIZE_MAX) {
			node_error(cx, key, "%s: %s is not a matrix key; an "
			    "exclude entry can only name keys under matrix",
			    where, spec_key_info(k)->path);
			e->bad = 1;
		}
		if (parse_item(cx, where, k, val, &a->val) != 0) {
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
			    vtext, spec_key_info(k)->path, vals);
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
		node_error(cx, list, "%s: expected a list of entries such as "
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
			node_error(cx, cx->exclude_key, "exclude: there is no "
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
}

/* ------------------------------------------------------------ expansion */

/* The runs the matrix asks for, refused before anything is expanded. */
static int
check_bound(struct spec_cx *cx, uint64_t *product)
{
	struct spec		*s = cx->s;
	const struct ynode	*at;
	struct cbuf		 b;
	uint64_t		 p = 1, runs, repeats;
	size_t			 i, nincl = 0;
	char			*msg;

	for (i = 0; i < s->nincludes; i++)
		nincl += !s->includes[i].bad;
	for (i = 0; i < s->ndims; i++) {
		p *= s->dims[i].n;
		if (p > SPEC_MAX_RUNS + 1)
			p = SPEC_MAX_RUNS + 1;	/* saturate: over either way */
	}
	/* Without a matrix, the include entries are the configurations. */
	if (s->ndims == 0 && nincl > 0)
		p = 0;
	repeats = s->v[SPEC_K_REPEATS].set ? (uint64_t)s->v[SPEC_K_REPEATS].i :
	    1;
	runs = (p + nincl) * repeats;
	*product = p;
	if (runs <= SPEC_MAX_RUNS)
		return 0;

	cbuf_init(&b, SIZE_MAX);
	if (s->ndims > 0) {
		cbuf_adds(&b, "matrix: ");
		if (nincl > 0)
			cbuf_addc(&b, '(');
		for (i = 0; i < s->ndims; i++)
			cbuf_addf(&b, "%s%zu", i > 0 ? " x " : "",
			    s->dims[i].n);
		if (nincl > 0)
			cbuf_addf(&b, " + %zu included)", nincl);
		cbuf_adds(&b, " configurations");
	} else
		cbuf_addf(&b, "include: %zu configurations", nincl);
	if (repeats > 1)
		cbuf_addf(&b, " x %" PRIu64 " repeats", repeats);
	if (p > SPEC_MAX_RUNS)
		cbuf_addf(&b, " make more than %d runs", SPEC_MAX_RUNS);
	else
		cbuf_addf(&b, " = %" PRIu64 " runs, over the limit of %d",
		    runs, SPEC_MAX_RUNS);
	cbuf_adds(&b, "; shrink the matrix or the repeats");
	msg = cbuf_detach(&b, NULL);
	at = cx->matrix_key != NULL ? cx->matrix_key : cx->include_key;
	diag_error(cx->d, cx->file, at != NULL ? at->line : 0,
	    at != NULL ? at->col : 0, "%s", msg);
	free(msg);
	return -1;
}

static void
add_varied(struct spec *s, enum spec_key k)
{
	if (s->varied_index[k] >= 0)
		return;
	s->varied = xreallocarray(s->varied, s->nvaried + 1,
	    sizeof *s->varied);
	s->varied_index[k] = (int)s->nvaried;
	s->varied[s->nvaried++] = k;
}

struct xentry {
	uint32_t	mask;	/* dims the entry fixes */
	uint64_t	base;	/* its config index with the others at 0 */
};

static int
xentry_cmp(const void *pa, const void *pb)
{
	const struct xentry	*a = pa, *b = pb;

	if (a->mask != b->mask)
		return a->mask < b->mask ? -1 : 1;
	if (a->base != b->base)
		return a->base < b->base ? -1 : 1;
	return 0;
}

/*
 * Marks the configurations each exclude entry matches. An entry fixing some
 * dims matches the product of the others: enumerating exactly those, after
 * dropping repeated entries, costs no more than the entries can name.
 */
static void
apply_excludes(struct spec *s, const uint64_t *stride, unsigned char *out)
{
	struct xentry	*xs;
	size_t		 nx = 0, i, j, nfree;
	size_t		 freed[SPEC_MAX_MATRIX_KEYS], cnt[SPEC_MAX_MATRIX_KEYS];
	uint64_t	 c;
	struct spec_entry *e;

	xs = xcalloc(s->nexcludes + 1, sizeof *xs);
	for (i = 0; i < s->nexcludes; i++) {
		e = &s->excludes[i];
		if (e->bad || e->nomatch)
			continue;
		xs[nx].mask = 0;
		xs[nx].base = 0;
		for (j = 0; j < e->n; j++) {
			xs[nx].mask |= (uint32_t)1 << e->a[j].dim;
			xs[nx].base += e->a[j].vidx * stride[e->a[j].dim];
		}
		nx++;
	}
	qsort(xs, nx, sizeof *xs, xentry_cmp);
	for (i = 0; i < nx; i++) {
		if (i > 0 && xentry_cmp(&xs[i], &xs[i - 1]) == 0)
			continue;
		nfree = 0;
		for (j = 0; j < s->ndims; j++) {
			if (!(xs[i].mask & ((uint32_t)1 << j)))
				freed[nfree++] = j;
		}
		memset(cnt, 0, sizeof cnt);
		for (;;) {
			c = xs[i].base;
			for (j = 0; j < nfree; j++)
				c += cnt[j] * stride[freed[j]];
			out[c] = 1;
			/* Next combination of the free dims, last fastest. */
			for (j = nfree; j > 0; j--) {
				if (++cnt[j - 1] < s->dims[freed[j - 1]].n)
					break;
				cnt[j - 1] = 0;
			}
			if (j == 0)
				break;
		}
	}
	free(xs);
}

/* Whether key k enters run ids at all. */
static int
in_ids(enum spec_key k)
{
	const struct spec_key_info	*ki = spec_key_info(k);

	return !(ki->flags & SPEC_F_NOID) && k != SPEC_K_REPEATS &&
	    ki->type != SPEC_T_MATRIX && ki->type != SPEC_T_EXCLUDE &&
	    ki->type != SPEC_T_INCLUDE && ki->type != SPEC_T_ASSIGN;
}

/* The canonical entry of one value ("" for a default: defaults are left
 * out, so a key added later with a default that keeps today's behaviour
 * keeps today's ids). */
static void
canon_entry(const struct spec *s, enum spec_key k, const struct spec_value *v,
    struct cbuf *b)
{
	if (!spec_value_equal(k, v, &s->def[k]))
		spec_value_canon(k, v, b);
}

/*
 * Entries of the keys that do not vary, made once: every configuration
 * hashes the same bytes for them (scheduler.extra may be long).
 */
static char **
fixed_entries(const struct spec *s)
{
	char		**fixed = xcalloc(SPEC_KEY_COUNT, sizeof *fixed);
	struct cbuf	  b;
	int		  k;

	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		if (!in_ids(k) || s->varied_index[k] >= 0)
			continue;
		cbuf_init(&b, SIZE_MAX);
		canon_entry(s, k, &s->v[k], &b);
		fixed[k] = cbuf_detach(&b, NULL);
	}
	return fixed;
}

static void
fixed_entries_free(char **fixed)
{
	int	k;

	for (k = 0; k < SPEC_KEY_COUNT; k++)
		free(fixed[k]);
	free(fixed);
}

static void
hash_config(const struct spec *s, char *const *fixed, struct spec_config *cfg)
{
	const struct spec_value	*v;
	struct sha256_ctx	 c;
	struct cbuf		 b;
	int			 k, custom;

	v = spec_cfg_value(s, cfg, SPEC_K_MODEL);
	custom = v->set && strcmp(v->s, "custom") == 0;
	sha256_init(&c);
	sha256_update(&c, ID_PREFIX, strlen(ID_PREFIX));
	cbuf_init(&b, SIZE_MAX);
	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		if (!in_ids(k))
			continue;
		if (k >= SPEC_K_MODEL_LAYERS && k <= SPEC_K_MODEL_MAX_POSITION &&
		    !custom)
			continue;	/* follow from the preset */
		if (fixed[k] != NULL) {
			sha256_update(&c, fixed[k], strlen(fixed[k]));
			continue;
		}
		cbuf_reset(&b);
		canon_entry(s, k, spec_cfg_value(s, cfg, k), &b);
		sha256_update(&c, b.data != NULL ? b.data : "", b.len);
	}
	cbuf_free(&b);
	cfg->ctx = c;
	sha256_final(&c, cfg->digest);
	sha256_hex(cfg->digest, SPEC_ID_LEN / 2, cfg->id);
}

/* Digests of the configurations so far, for dropping duplicate includes. */
struct digest_set {
	const uint8_t	**slots;
	size_t		  cap;
};

static int
digest_set_add(struct digest_set *ds, const uint8_t *dg)
{
	size_t	i;
	uint64_t h;

	memcpy(&h, dg, sizeof h);
	i = (size_t)h & (ds->cap - 1);
	while (ds->slots[i] != NULL) {
		if (memcmp(ds->slots[i], dg, SHA256_DIGEST_LEN) == 0)
			return 0;
		i = (i + 1) & (ds->cap - 1);
	}
	ds->slots[i] = dg;
	return 1;
}

static int
baseline_matches(const struct spec *s, const struct spec_config *cfg)
{
	const struct spec_entry	*e = &s->baseline;
	size_t			 i;

	for (i = 0; i < e->n; i++) {
		if (!spec_value_equal(e->a[i].key, &e->a[i].val,
		    spec_cfg_value(s, cfg, e->a[i].key)))
			return 0;
	}
	return 1;
}

void
spec_matrix_expand(struct spec_cx *cx)
{
	struct spec		*s = cx->s;
	struct spec_config	*cfg;
	struct spec_entry	*e;
	struct digest_set	 ds;
	uint64_t		 product, stride[SPEC_MAX_MATRIX_KEYS], c, rem;
	unsigned char		*excluded;
	char			**fixed;
	size_t			 i, j, idx, max;
	int			 vi;

	if (check_bound(cx, &product) != 0)
		return;
	for (i = 0; i < s->ndims; i++)
		add_varied(s, s->dims[i].key);
	for (i = 0; i < s->nincludes; i++) {
		for (j = 0; j < s->includes[i].n; j++)
			add_varied(s, s->includes[i].a[j].key);
	}
	if (s->has_baseline && !s->baseline.bad) {
		for (j = 0; j < s->baseline.n; j++) {
			if (s->varied_index[s->baseline.a[j].key] < 0) {
				diag_error(cx->d, cx->file, cx->baseline_key->line,
				    cx->baseline_key->col, "report.baseline: %s "
				    "does not vary (it is under neither matrix "
				    "nor include)",
				    spec_key_info(s->baseline.a[j].key)->path);
				s->baseline.bad = 1;
			}
		}
	}

	rem = 1;
	for (i = s->ndims; i > 0; i--) {
		stride[i - 1] = rem;
		rem *= s->dims[i - 1].n;
	}
	excluded = xcalloc(product + 1, 1);
	apply_excludes(s, stride, excluded);

	max = product + s->nincludes;
	s->configs = xcalloc(max, sizeof *s->configs);
	for (c = 0; c < product; c++) {
		if (excluded[c])
			continue;
		cfg = &s->configs[s->nconfigs++];
		cfg->v = xcalloc(s->nvaried + 1, sizeof *cfg->v);
		for (i = 0; i < s->nvaried; i++)
			cfg->v[i] = &s->v[s->varied[i]];
		for (i = 0; i < s->ndims; i++)
			cfg->v[i] = &s->dims[i].vals[(c / stride[i]) %
			    s->dims[i].n];
	}
	free(excluded);
	if (s->nconfigs == 0 && s->nincludes == 0) {
		diag_error(cx->d, cx->file, cx->exclude_key->line,
		    cx->exclude_key->col, "exclude: every configuration of the "
		    "matrix is excluded");
		return;
	}

	ds.cap = 16;
	while (ds.cap < 2 * max)
		ds.cap *= 2;
	ds.slots = xcalloc(ds.cap, sizeof *ds.slots);
	fixed = fixed_entries(s);
	for (i = 0; i < s->nconfigs; i++) {
		hash_config(s, fixed, &s->configs[i]);
		digest_set_add(&ds, s->configs[i].digest);
	}
	for (i = 0; i < s->nincludes; i++) {
		e = &s->includes[i];
		if (e->bad)
			continue;
		cfg = &s->configs[s->nconfigs];
		cfg->v = xcalloc(s->nvaried + 1, sizeof *cfg->v);
		for (j = 0; j < s->nvaried; j++)
			cfg->v[j] = &s->v[s->varied[j]];
		for (j = 0; j < e->n; j++) {
			vi = s->varied_index[e->a[j].key];
			cfg->v[vi] = &e->a[j].val;
		}
		hash_config(s, fixed, cfg);
		if (!digest_set_add(&ds, cfg->digest)) {
			free(cfg->v);	/* already there: dropped */
			memset(cfg, 0, sizeof *cfg);
			continue;
		}
		s->nconfigs++;
	}
	free(ds.slots);
	fixed_entries_free(fixed);

	for (i = 0; i < s->nconfigs; i++)
		spec_check_config(cx, &s->configs[i]);

	if (s->has_baseline && !s->baseline.bad) {
		for (idx = 0; idx < s->nconfigs; idx++) {
			if (baseline_matches(s, &s->configs[idx]))
				break;
		}
		if (idx == s->nconfigs) {
			struct cbuf	 b;
			char		*t, *msg;

			cbuf_init(&b, SIZE_MAX);
			for (j = 0; j < s->baseline.n; j++) {
				t = spec_value_format(s->baseline.a[j].key,
				    &s->baseline.a[j].val);
				cbuf_addf(&b, "%s%s=%s", j > 0 ? ", " : "",
				    spec_key_info(s->baseline.a[j].key)->path,
				    t);
				free(t);
			}
			msg = cbuf_detach(&b, NULL);
			diag_warning(cx->d, cx->file, cx->baseline_key->line,
			    cx->baseline_key->col, "report.baseline: no "
			    "configuration has %s; reports will show no "
			    "speedups", msg);
			free(msg);
		}
	}
}

static void
entry_free(struct spec_entry *e)
{
	size_t	i;

	for (i = 0; i < e->n; i++)
		spec_value_free(&e->a[i].val);
	free(e->a);
	memset(e, 0, sizeof *e);
}

void
spec_matrix_free(struct spec *s)
{
	size_t	i, j;

	for (i = 0; i < s->ndims; i++) {
		for (j = 0; j < s->dims[i].n; j++)
			spec_value_free(&s->dims[i].vals[j]);
		free(s->dims[i].vals);
	}
	free(s->dims);
	for (i = 0; i < s->nexcludes; i++)
		entry_free(&s->excludes[i]);
	free(s->excludes);
	for (i = 0; i < s->nincludes; i++)
		entry_free(&s->includes[i]);
	free(s->includes);
	entry_free(&s->baseline);
	for (i = 0; i < s->nconfigs; i++)
		free(s->configs[i].v);
	free(s->configs);
	free(s->varied);
}

int
spec_has_baseline(const struct spec *s)
{
	return s->has_baseline && !s->baseline.bad;
}

int
spec_baseline_matches(const struct spec *s, size_t config)
{
	if (config >= s->nconfigs)
		fatalx("spec_baseline_matches: %zu out of range", config);
	return baseline_matches(s, &s->configs[config]);
}

/* ------------------------------------------------------------ plans */

int
spec_expand(const struct spec *s, struct diags *d, struct spec_plan **out)
{
	struct spec_plan	*p;
	struct spec_run		*r;
	struct sha256_ctx	 c;
	uint8_t			 dg[SHA256_DIGEST_LEN];
	char			 buf[32];
	size_t			 i;
	unsigned		 rep, repeats = (unsigned)spec_repeats(s);

	*out = NULL;
	if (s->nconfigs == 0) {
		diag_error(d, s->file, 0, 0, "the spec has no configurations");
		return CADRE_ERR_INVALID;
	}
	p = xcalloc(1, sizeof *p);
	p->spec = s;
	p->nruns = s->nconfigs * repeats;
	p->runs = xcalloc(p->nruns, sizeof *p->runs);
	r = p->runs;
	for (i = 0; i < s->nconfigs; i++) {
		for (rep = 1; rep <= repeats; rep++, r++) {
			r->spec = s;
			r->cfg = &s->configs[i];
			r->config = i;
			r->repeat = rep;
			c = s->configs[i].ctx;
			snprintf(buf, sizeof buf, "repeat=%u\n", rep);
			sha256_update(&c, buf, strlen(buf));
			sha256_final(&c, dg);
			sha256_hex(dg, SPEC_ID_LEN / 2, r->id);
		}
	}
	*out = p;
	return 0;
}

void
spec_plan_free(struct spec_plan *p)
{
	if (p == NULL)
		return;
	free(p->runs);
	free(p);
}

size_t
spec_plan_nruns(const struct spec_plan *p)
{
	return p->nruns;
}

size_t
spec_plan_nconfigs(const struct spec_plan *p)
{
	return p->spec->nconfigs;
}

const struct spec *
spec_plan_spec(const struct spec_plan *p)
{
	return p->spec;
}

const struct spec_run *
spec_plan_run(const struct spec_plan *p, size_t i)
{
	if (i >= p->nruns)
		fatalx("spec_plan_run: %zu out of range", i);
	return &p->runs[i];
}

int64_t
spec_plan_gpu_seconds(const struct spec_plan *p)
{
	int64_t	total = 0;
	size_t	i;

	for (i = 0; i < p->nruns; i++)
		total += spec_run_total_gpus(&p->runs[i]) *
		    spec_run_int(&p->runs[i], SPEC_K_SCHED_TIME_LIMIT);
	return total;
}

const char *
spec_run_id(const struct spec_run *r)
{
	return r->id;
}

const char *
spec_run_config_id(const struct spec_run *r)
{
	return r->cfg->id;
}

size_t
spec_run_config(const struct spec_run *r)
{
	return r->config;
}

unsigned
spec_run_repeat(const struct spec_run *r)
{
	return r->repeat;
}

int
spec_run_is_set(const struct spec_run *r, enum spec_key k)
{
	return spec_cfg_is_set(r->spec, r->cfg, k);
}

int64_t
spec_run_int(const struct spec_run *r, enum spec_key k)
{
	return spec_cfg_int(r->spec, r->cfg, k);
}

double
spec_run_double(const struct spec_run *r, enum spec_key k)
{
	return spec_cfg_double(r->spec, r->cfg, k);
}

int
spec_run_bool(const struct spec_run *r, enum spec_key k)
{
	return spec_cfg_bool(r->spec, r->cfg, k);
}

const char *
spec_run_string(const struct spec_run *r, enum spec_key k)
{
	return spec_cfg_string(r->spec, r->cfg, k);
}

char *const *
spec_run_list(const struct spec_run *r, enum spec_key k, size_t *n)
{
	return spec_cfg_list(r->spec, r->cfg, k, n);
}

char *
spec_run_format(const struct spec_run *r, enum spec_key k)
{
	char	buf[32];

	if (k >= SPEC_K_MODEL_LAYERS && k <= SPEC_K_MODEL_MAX_POSITION) {
		snprintf(buf, sizeof buf, "%" PRId64, spec_run_int(r, k));
		return xstrdup(buf);
	}
	return spec_value_format(k, spec_cfg_value(r->spec, r->cfg, k));
}

void
spec_run_model(const struct spec_run *r, struct spec_model_dims *m)
{
	spec_cfg_model(r->spec, r->cfg, m);
}

int64_t
spec_run_ranks_per_node(const struct spec_run *r)
{
	int64_t	rpn = spec_run_int(r, SPEC_K_RES_RANKS_PER_NODE);
	int64_t	gpus = spec_run_int(r, SPEC_K_RES_GPUS_PER_NODE);

	if (rpn != 0)
		return rpn;
	return gpus > 0 ? gpus : 1;
}

int64_t
spec_run_ranks(const struct spec_run *r)
{
	return spec_run_int(r, SPEC_K_RES_NODES) * spec_run_ranks_per_node(r);
}

int64_t
spec_run_total_gpus(const struct spec_run *r)
{
	return spec_run_int(r, SPEC_K_RES_NODES) *
	    spec_run_int(r, SPEC_K_RES_GPUS_PER_NODE);
}

int64_t
spec_run_global_batch(const struct spec_run *r)
{
	return spec_run_int(r, SPEC_K_BATCH_SIZE) *
	    spec_run_int(r, SPEC_K_GRAD_ACCUM) * spec_run_ranks(r);
}

/* ------------------------------------------------------------ values of a spec */

static const struct spec_value *
typed_value(const struct spec *s, const struct spec_config *cfg,
    enum spec_key k, const char *want)
{
	enum spec_type	t = spec_key_info(k)->type;
	int		ok;

	if (strcmp(want, "int") == 0)
		ok = t == SPEC_T_INT || t == SPEC_T_DURATION ||
		    t == SPEC_T_SIZE;
	else if (strcmp(want, "double") == 0)
		ok = t == SPEC_T_FLOAT || t == SPEC_T_INT;
	else if (strcmp(want, "bool") == 0)
		ok = t == SPEC_T_BOOL;
	else if (strcmp(want, "list") == 0)
		ok = t == SPEC_T_WORDS || t == SPEC_T_PATHS ||
		    t == SPEC_T_ENUMS || t == SPEC_T_DURATIONS;
	else
		ok = t == SPEC_T_TEXT || t == SPEC_T_NAME || t == SPEC_T_ENUM ||
		    t == SPEC_T_PATH || t == SPEC_T_WORD || t == SPEC_T_ENV ||
		    t == SPEC_T_URL || t == SPEC_T_MODEL;
	if (!ok)
		fatalx("spec: %s is a %s, not read as %s",
		    spec_key_info(k)->path, spec_type_name(t), want);
	return spec_cfg_value(s, cfg, k);
}

static int
is_model_dim(enum spec_key k)
{
	return k >= SPEC_K_MODEL_LAYERS && k <= SPEC_K_MODEL_MAX_POSITION;
}

static int64_t
model_dim(const struct spec *s, const struct spec_config *cfg,
    enum spec_key k)
{
	struct spec_model_dims	m;

	spec_cfg_model(s, cfg, &m);
	switch (k) {
	case SPEC_K_MODEL_LAYERS:
		return m.layers;
	case SPEC_K_MODEL_HIDDEN:
		return m.hidden;
	case SPEC_K_MODEL_HEADS:
		return m.heads;
	case SPEC_K_MODEL_INTERMEDIATE:
		return m.intermediate;
	case SPEC_K_MODEL_VOCAB_SIZE:
		return m.vocab_size;
	default:
		return m.max_position;
	}
}

int
spec_cfg_is_set(const struct spec *s, const struct spec_config *cfg,
    enum spec_key k)
{
	if (is_model_dim(k))
		return 1;
	return spec_cfg_value(s, cfg, k)->set;
}

int64_t
spec_cfg_int(const struct spec *s, const struct spec_config *cfg,
    enum spec_key k)
{
	const struct spec_value	*v = typed_value(s, cfg, k, "int");

	if (is_model_dim(k))
		return model_dim(s, cfg, k);
	return v->i;
}

double
spec_cfg_double(const struct spec *s, const struct spec_config *cfg,
    enum spec_key k)
{
	const struct spec_value	*v = typed_value(s, cfg, k, "double");

	if (spec_key_info(k)->type == SPEC_T_INT)
		return (double)spec_cfg_int(s, cfg, k);
	return v->f;
}

int
spec_cfg_bool(const struct spec *s, const struct spec_config *cfg,
    enum spec_key k)
{
	return typed_value(s, cfg, k, "bool")->i != 0;
}

const char *
spec_cfg_string(const struct spec *s, const struct spec_config *cfg,
    enum spec_key k)
{
	const struct spec_value	*v = typed_value(s, cfg, k, "string");

	return v->set ? v->s : NULL;
}

char *const *
spec_cfg_list(const struct spec *s, const struct spec_config *cfg,
    enum spec_key k, size_t *n)
{
	const struct spec_value	*v = typed_value(s, cfg, k, "list");
	static char		*empty[] = { NULL };

	if (n != NULL)
		*n = v->set ? v->n : 0;
	return v->set && v->list != NULL ? v->list : empty;
}

int
spec_is_set(const struct spec *s, enum spec_key k)
{
	return spec_cfg_is_set(s, NULL, k);
}

int64_t
spec_get_int(const struct spec *s, enum spec_key k)
{
	return spec_cfg_int(s, NULL, k);
}

double
spec_get_double(const struct spec *s, enum spec_key k)
{
	return spec_cfg_double(s, NULL, k);
}

int
spec_get_bool(const struct spec *s, enum spec_key k)
{
	return spec_cfg_bool(s, NULL, k);
}

const char *
spec_get_string(const struct spec *s, enum spec_key k)
{
	return spec_cfg_string(s, NULL, k);
}

char *const *
spec_get_list(const struct spec *s, enum spec_key k, size_t *n)
{
	return spec_cfg_list(s, NULL, k, n);
}

const char *
spec_file(const struct spec *s)
{
	return s->file;
}

const char *
spec_dir(const struct spec *s)
{
	return s->dir;
}

char *
spec_resolve_path(const struct spec *s, const char *path)
{
	char	*r;

	if (path[0] == '/' || path[0] == '$')
		return xstrdup(path);
	xasprintf(&r, "%s/%s", s->dir, path);
	return r;
}

int64_t
spec_repeats(const struct spec *s)
{
	return s->v[SPEC_K_REPEATS].i;
}

size_t
spec_nconfigs(const struct spec *s)
{
	return s->nconfigs;
}

size_t
spec_nvaried(const struct spec *s)
{
	return s->nvaried;
}

enum spec_key
spec_varied(const struct spec *s, size_t i)
{
	if (i >= s->nvaried)
		fatalx("spec_varied: %zu out of range", i);
	return s->varied[i];
}
