/*
 * A parsed spec's runs: every configuration once per repeat, each with its
 * run id; and the accessors of a plan and of its runs.
 */
#include "config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "xmalloc.h"
#include "spec_matrix.h"

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

/* ------------------------------------------------------------ plans */

int
spec_expand(const struct spec *s, struct diags *d, struct spec_plan **out)
{
	struct spec_plan	*p;
	struct spec_run		*r;
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
			spec_hash_run(&s->configs[i], rep, r->id);
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

char *const *
spec_run_pairs(const struct spec_run *r, enum spec_key k, size_t *n)
{
	return spec_cfg_pairs(r->spec, r->cfg, k, n);
}

const char *
spec_run_var(const struct spec_run *r, const char *name)
{
	return spec_pairs_get(spec_cfg_value(r->spec, r->cfg,
	    SPEC_K_PROG_VARS), name);
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

size_t
spec_plan_diff(const struct spec_plan *a, const struct spec_plan *b,
    void (*fn)(void *ctx, enum spec_key k, const char *va, const char *vb),
    void *ctx)
{
	const struct spec_run	*ra, *rb;
	unsigned char		 seen[SPEC_KEY_COUNT] = { 0 };
	char			*va, *vb;
	size_t			 i, j, nb = spec_plan_nruns(b), ndiff = 0;
	int			 k;

	for (i = 0; i < spec_plan_nruns(a) && ndiff < SPEC_KEY_COUNT; i++) {
		ra = spec_plan_run(a, i);
		/* the same runs in the same order unless the matrix moved */
		rb = i < nb && strcmp(spec_run_id(spec_plan_run(b, i)),
		    spec_run_id(ra)) == 0 ? spec_plan_run(b, i) : NULL;
		for (j = 0; rb == NULL && j < nb; j++) {
			if (strcmp(spec_run_id(spec_plan_run(b, j)),
			    spec_run_id(ra)) == 0)
				rb = spec_plan_run(b, j);
		}
		if (rb == NULL)
			continue;
		for (k = 0; k < SPEC_KEY_COUNT; k++) {
			if (seen[k])
				continue;
			va = spec_run_format(ra, (enum spec_key)k);
			vb = spec_run_format(rb, (enum spec_key)k);
			if (strcmp(va, vb) != 0) {
				seen[k] = 1;
				ndiff++;
				fn(ctx, (enum spec_key)k, va, vb);
			}
			free(va);
			free(vb);
		}
	}
	return ndiff;
}

void
spec_key_at(const struct spec *s, enum spec_key k, size_t *line, size_t *col)
{
	*line = s->v[k].line;
	*col = s->v[k].col;
}

size_t
spec_diff(const struct spec *a, const struct spec *b,
    void (*fn)(void *ctx, enum spec_key k, const char *va, const char *vb),
    void *ctx)
{
	char	*va, *vb;
	size_t	 n = 0;
	int	 k;

	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		if (a->varied_index[k] >= 0 || b->varied_index[k] >= 0)
			continue;
		va = spec_value_format((enum spec_key)k, spec_cfg_value(a, NULL,
		    (enum spec_key)k));
		vb = spec_value_format((enum spec_key)k, spec_cfg_value(b, NULL,
		    (enum spec_key)k));
		if (strcmp(va, vb) != 0) {
			n++;
			fn(ctx, (enum spec_key)k, va, vb);
		}
		free(va);
		free(vb);
	}
	return n;
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
