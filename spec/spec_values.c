/*
 * The values of a parsed spec: a configuration's (its own for the keys it
 * varies, the base ones for the others) and the spec's base values, typed
 * as spec.h's getters promise; and the spec's other accessors.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "log.h"
#include "xmalloc.h"
#include "spec_int.h"

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
		ok = spec_type_is_list(t) || t == SPEC_T_COMMAND;
	else if (strcmp(want, "pairs") == 0)
		ok = spec_type_is_pairs(t);
	else
		ok = t == SPEC_T_TEXT || t == SPEC_T_NAME || t == SPEC_T_ENUM ||
		    t == SPEC_T_PATH || t == SPEC_T_WORD || t == SPEC_T_ENV ||
		    t == SPEC_T_URL || t == SPEC_T_MODEL ||
		    t == SPEC_T_REGEX || t == SPEC_T_COMMAND;
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

char *const *
spec_cfg_pairs(const struct spec *s, const struct spec_config *cfg,
    enum spec_key k, size_t *n)
{
	const struct spec_value	*v = typed_value(s, cfg, k, "pairs");
	static char		*empty[] = { NULL };

	if (n != NULL)
		*n = v->set ? v->n / 2 : 0;
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

size_t
spec_nvaried_vars(const struct spec *s)
{
	return s->nvaried_vars;
}

const char *
spec_varied_var(const struct spec *s, size_t i)
{
	if (i >= s->nvaried_vars)
		fatalx("spec_varied_var: %zu out of range", i);
	return s->varied_vars[i];
}

int
spec_is_program(const struct spec *s)
{
	return s->program;
}
