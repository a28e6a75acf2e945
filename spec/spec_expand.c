/*
 * The matrix expanded into configurations: the cartesian product in the
 * order the keys appear (the first key varying slowest) less the excluded
 * ones, then the included ones not already there; each configuration
 * hashed and checked, and report.baseline looked for among them.
 */
#include "config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "log.h"
#include "xmalloc.h"
#include "spec_matrix.h"

/* ------------------------------------------------------------ expansion */

/* The runs the matrix asks for, refused before anything is expanded: 0,
 * or CADRE_ERR_TOO_LARGE after an error in cx's diags. */
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
	return CADRE_ERR_TOO_LARGE;
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

/* One of program.vars varies: the key program.vars does, and the name
 * is listed once. */
static void
add_varied_var(struct spec *s, const char *name)
{
	size_t	i;

	add_varied(s, SPEC_K_PROG_VARS);
	for (i = 0; i < s->nvaried_vars; i++) {
		if (strcmp(s->varied_vars[i], name) == 0)
			return;
	}
	s->varied_vars = xreallocarray(s->varied_vars, s->nvaried_vars + 1,
	    sizeof *s->varied_vars);
	s->varied_vars[s->nvaried_vars++] = xstrdup(name);
}

static void
add_varied_assign(struct spec *s, enum spec_key k, const char *var)
{
	if (var != NULL)
		add_varied_var(s, var);
	else
		add_varied(s, k);
}

static int
var_varies(const struct spec *s, const char *name)
{
	size_t	i;

	for (i = 0; i < s->nvaried_vars; i++) {
		if (strcmp(s->varied_vars[i], name) == 0)
			return 1;
	}
	return 0;
}

/* Gives configuration cfg value v of key k, or of the var named var: into
 * cfg's own copy of program.vars. */
static void
cfg_set(const struct spec *s, struct spec_config *cfg, enum spec_key k,
    const char *var, const struct spec_value *v)
{
	if (var == NULL) {
		cfg->v[s->varied_index[k]] = v;
		return;
	}
	if (!cfg->vars.set) {
		spec_value_copy(&cfg->vars, &s->v[SPEC_K_PROG_VARS]);
		cfg->vars.set = 1;
	}
	spec_pairs_set(&cfg->vars, var, v->s);
	cfg->v[s->varied_index[k]] = &cfg->vars;
}

/* "program.vars.NAME" or the key's path. Caller frees. */
static char *
assign_path(const struct spec_assign *a)
{
	char	*p;

	if (a->var == NULL)
		return xstrdup(spec_key_info(a->key)->path);
	xasprintf(&p, "%s.%s", spec_key_info(a->key)->path, a->var);
	return p;
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
	const char		*t;
	size_t			 i;

	for (i = 0; i < e->n; i++) {
		if (e->a[i].var != NULL) {
			t = spec_pairs_get(spec_cfg_value(s, cfg,
			    SPEC_K_PROG_VARS), e->a[i].var);
			if (t == NULL || strcmp(t, e->a[i].val.s) != 0)
				return 0;
		} else if (!spec_value_equal(e->a[i].key, &e->a[i].val,
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
	const struct spec_assign *a;
	unsigned char		*excluded;
	char			**fixed, *path;
	size_t			 i, j, idx, max;

	if (check_bound(cx, &product) != 0)
		return;
	for (i = 0; i < s->ndims; i++)
		add_varied_assign(s, s->dims[i].key, s->dims[i].var);
	for (i = 0; i < s->nincludes; i++) {
		for (j = 0; j < s->includes[i].n; j++)
			add_varied_assign(s, s->includes[i].a[j].key,
			    s->includes[i].a[j].var);
	}
	if (s->has_baseline && !s->baseline.bad) {
		for (j = 0; j < s->baseline.n; j++) {
			a = &s->baseline.a[j];
			if (a->var != NULL ? var_varies(s, a->var) :
			    s->varied_index[a->key] >= 0)
				continue;
			path = assign_path(a);
			diag_error(cx->d, cx->file, cx->baseline_key->line,
			    cx->baseline_key->col, "report.baseline: %s does "
			    "not vary (it is under neither matrix nor include)",
			    path);
			free(path);
			s->baseline.bad = 1;
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
			cfg_set(s, cfg, s->dims[i].key, s->dims[i].var,
			    &s->dims[i].vals[(c / stride[i]) % s->dims[i].n]);
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
	fixed = spec_fixed_entries(s);
	for (i = 0; i < s->nconfigs; i++) {
		spec_hash_config(s, fixed, &s->configs[i]);
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
		for (j = 0; j < e->n; j++)
			cfg_set(s, cfg, e->a[j].key, e->a[j].var, &e->a[j].val);
		spec_hash_config(s, fixed, cfg);
		if (!digest_set_add(&ds, cfg->digest)) {
			free(cfg->v);	/* already there: dropped */
			free(cfg->canon);
			spec_value_free(&cfg->vars);
			memset(cfg, 0, sizeof *cfg);
			continue;
		}
		s->nconfigs++;
	}
	free(ds.slots);
	spec_fixed_entries_free(fixed);

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
				a = &s->baseline.a[j];
				t = spec_value_format(a->key, &a->val);
				path = assign_path(a);
				cbuf_addf(&b, "%s%s=%s", j > 0 ? ", " : "",
				    path, t);
				free(path);
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

	for (i = 0; i < e->n; i++) {
		spec_value_free(&e->a[i].val);
		free(e->a[i].var);
	}
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
		free(s->dims[i].var);
	}
	free(s->dims);
	for (i = 0; i < s->nexcludes; i++)
		entry_free(&s->excludes[i]);
	free(s->excludes);
	for (i = 0; i < s->nincludes; i++)
		entry_free(&s->includes[i]);
	free(s->includes);
	entry_free(&s->baseline);
	for (i = 0; i < s->nconfigs; i++) {
		free(s->configs[i].v);
		free(s->configs[i].canon);
		spec_value_free(&s->configs[i].vars);
	}
	free(s->configs);
	free(s->varied);
	for (i = 0; i < s->nvaried_vars; i++)
		free(s->varied_vars[i]);
	free(s->varied_vars);
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
