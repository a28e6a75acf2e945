#include "config.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "rundir.h"
#include "strutil.h"
#include "tjson.h"
#include "traincfg.h"
#include "xmalloc.h"

enum key_type { K_STR, K_PATH, K_INT, K_I64, K_U64, K_DBL, K_BOOL, K_ENUM };

/* One key of train.json: where its value goes and what it may be. */
struct key {
	const char	*name;
	enum key_type	 type;
	size_t		 off;
	double		 lo, hi;	/* numbers */
	int		 nullable;	/* strings: null allowed */
	const char	*const *names;	/* enums, in value order */
};

static const char *const task_names[] = { "pretrain", "mlm", "classify", NULL };
static const char *const prec_names[] = { "fp32", "bf16", "fp16", NULL };
static const char *const opt_names[] = { "adamw", "lamb", NULL };
static const char *const device_names[] = { "auto", "cpu", "cuda", NULL };
/* enum lr_schedule's order: constant, linear, poly */
static const char *const sched_names[] = { "constant", "linear", "poly", NULL };

#define O(f) offsetof(struct train_config, f)
static const struct key top_keys[] = {
	{ TJ_VERSION, K_INT, O(version), 1, 1e9, 0, NULL },
	{ TJ_TASK, K_ENUM, O(task), 0, 0, 0, task_names },
	{ TJ_DATA, K_PATH, O(data), 0, 0, 0, NULL },
	{ TJ_EVAL_DATA, K_PATH, O(eval_data), 0, 0, 1, NULL },
	{ TJ_VOCAB, K_PATH, O(vocab), 0, 0, 1, NULL },
	{ TJ_INIT, K_PATH, O(init), 0, 0, 1, NULL },
	{ TJ_SEQ_LEN, K_INT, O(seq_len), 2, 65536, 0, NULL },
	{ TJ_BATCH_SIZE, K_INT, O(batch_size), 1, 65536, 0, NULL },
	{ TJ_GRAD_ACCUM, K_INT, O(grad_accum), 1, 65536, 0, NULL },
	{ TJ_STEPS, K_I64, O(steps), 1, 1e12, 0, NULL },
	{ TJ_PRECISION, K_ENUM, O(precision), 0, 0, 0, prec_names },
	{ TJ_DEVICE, K_ENUM, O(device), 0, 0, 0, device_names },
	{ TJ_GRAD_CLIP, K_DBL, O(grad_clip), 0, 1e9, 0, NULL },
	{ TJ_GRAD_CHECKPOINTING, K_BOOL, O(grad_checkpointing), 0, 0, 0, NULL },
	{ TJ_DROPOUT, K_DBL, O(dropout), 0, 0.99, 0, NULL },
	{ TJ_CHECKPOINT_EVERY, K_DBL, O(checkpoint_every), 0, 1e9, 0, NULL },
	{ TJ_KEEP_CHECKPOINTS, K_INT, O(keep_checkpoints), 1, 1000000, 0, NULL },
	{ TJ_KEEP_TIMED, K_BOOL, O(keep_timed), 0, 0, 0, NULL },
	{ TJ_LOG_EVERY, K_INT, O(log_every), 1, 1e9, 0, NULL },
	{ TJ_SEED, K_U64, O(seed), 0, 0, 0, NULL },
	{ TJ_SKIP_STEPS, K_I64, O(skip_steps), 0, 1e12, 0, NULL },
	{ TJ_OUT, K_PATH, O(out), 0, 0, 0, NULL },
	{ TJ_RESUME, K_STR, O(resume), 0, 0, 0, NULL },
	{ NULL, 0, 0, 0, 0, 0, NULL }
};
static const struct key opt_keys[] = {
	{ TJ_OPT_NAME, K_ENUM, O(optimizer), 0, 0, 0, opt_names },
	{ TJ_OPT_LR, K_DBL, O(lr), 0, 10, 0, NULL },
	{ TJ_OPT_WEIGHT_DECAY, K_DBL, O(weight_decay), 0, 10, 0, NULL },
	{ TJ_OPT_BETA1, K_DBL, O(beta1), 0, 0.999999, 0, NULL },
	{ TJ_OPT_BETA2, K_DBL, O(beta2), 0, 0.999999999, 0, NULL },
	{ TJ_OPT_EPS, K_DBL, O(eps), 1e-30, 1, 0, NULL },
	{ TJ_OPT_WARMUP, K_DBL, O(warmup), 0, 1, 0, NULL },
	{ TJ_OPT_SCHEDULE, K_ENUM, O(schedule), 0, 0, 0, sched_names },
	{ TJ_OPT_POWER, K_DBL, O(power), 0, 100, 0, NULL },
	{ NULL, 0, 0, 0, 0, 0, NULL }
};
#undef O
#define D(f) offsetof(struct train_config, f)
static const struct key dim_keys[] = {
	{ TJ_MODEL_LAYERS, K_INT, D(layers), 1, 256, 0, NULL },
	{ TJ_MODEL_HIDDEN, K_INT, D(hidden), 1, 65536, 0, NULL },
	{ TJ_MODEL_HEADS, K_INT, D(heads), 1, 65536, 0, NULL },
	{ TJ_MODEL_INTERMEDIATE, K_INT, D(intermediate), 1, 262144, 0, NULL },
	{ TJ_MODEL_VOCAB_SIZE, K_INT, D(vocab_size), 1, 4194304, 0, NULL },
	{ TJ_MODEL_MAX_POSITION, K_INT, D(max_position), 1, 65536, 0, NULL },
	{ NULL, 0, 0, 0, 0, 0, NULL }
};
#undef D

void
traincfg_defaults(struct train_config *c)
{
	memset(c, 0, sizeof *c);
	c->version = TRAINCFG_VERSION;
	c->model = xstrdup("bert-tiny");
	c->task = TASK_PRETRAIN;
	c->seq_len = 128;
	c->batch_size = 32;
	c->grad_accum = 1;
	c->steps = 1000;
	c->precision = PREC_FP32;
	c->device = DEV_AUTO;
	c->optimizer = OPTIM_ADAMW;
	c->lr = 1e-4;
	c->weight_decay = 0.01;
	c->beta1 = 0.9;
	c->beta2 = 0.999;
	c->eps = 1e-6;
	c->warmup = 0.01;
	c->schedule = SCHED_LINEAR;
	c->power = 1.0;
	c->grad_clip = 1.0;
	c->dropout = 0.1;
	c->checkpoint_every = 1200;
	c->keep_checkpoints = 2;
	c->log_every = 10;
	c->seed = 42;
	c->skip_steps = 100;
	c->resume = xstrdup("auto");
}

void
traincfg_free(struct train_config *c)
{
	free(c->model);
	free(c->data);
	free(c->eval_data);
	free(c->vocab);
	free(c->init);
	free(c->out);
	free(c->resume);
	memset(c, 0, sizeof *c);
}

const char *
traincfg_task_name(enum train_task t)
{
	return task_names[t];
}

const char *
traincfg_precision_name(enum train_precision p)
{
	return prec_names[p];
}

static const char *
type_name(enum tj_type t)
{
	switch (t) {
	case TJ_NULL: return "null";
	case TJ_BOOL: return "a boolean";
	case TJ_NUMBER: return "a number";
	case TJ_STRING: return "a string";
	case TJ_ARRAY: return "an array";
	case TJ_OBJECT: return "an object";
	}
	return "?";
}

/* Sets one key from node n; prefix names the enclosing object. */
static int
set_key(struct train_config *c, const struct key *k, const struct tj_node *n,
    const char *name, const char *prefix, char *err, size_t errlen)
{
	char	*base = (char *)c + k->off;
	size_t	 i;

	switch (k->type) {
	case K_STR:
	case K_PATH:
		if (n->type == TJ_NULL && k->nullable) {
			free(*(char **)base);
			*(char **)base = NULL;
			return 0;
		}
		if (n->type != TJ_STRING || n->str[0] == '\0') {
			snprintf(err, errlen, "%s: key '%s%s': expected a non-empty string%s, got %s",
			    name, prefix, k->name, k->nullable ? " or null" : "",
			    n->type == TJ_STRING ? "\"\"" : type_name(n->type));
			return CADRE_ERR_INVALID;
		}
		if (strlen(n->str) > 4095) {
			snprintf(err, errlen, "%s: key '%s%s': longer than 4095 bytes",
			    name, prefix, k->name);
			return CADRE_ERR_INVALID;
		}
		/* $NAME/...: expanded in the trainer's environment
		 * (traincfg_expand_paths) */
		if (k->type == K_PATH && n->str[0] != '/' && n->str[0] != '$') {
			snprintf(err, errlen, "%s: key '%s%s': '%s' is not an absolute path "
			    "(or $NAME/...)", name, prefix, k->name, n->str);
			return CADRE_ERR_INVALID;
		}
		free(*(char **)base);
		*(char **)base = xstrdup(n->str);
		return 0;
	case K_BOOL:
		if (n->type != TJ_BOOL) {
			snprintf(err, errlen, "%s: key '%s%s': expected true or false, got %s",
			    name, prefix, k->name, type_name(n->type));
			return CADRE_ERR_INVALID;
		}
		*(int *)base = n->num != 0.0;
		return 0;
	case K_ENUM:
		if (n->type == TJ_STRING)
			for (i = 0; k->names[i] != NULL; i++)
				if (strcmp(n->str, k->names[i]) == 0) {
					*(int *)base = (int)i;
					return 0;
				}
		snprintf(err, errlen, "%s: key '%s%s': expected one of", name, prefix, k->name);
		for (i = 0; k->names[i] != NULL; i++) {
			size_t l = strlen(err);

			snprintf(err + l, errlen - l, "%s \"%s\"", i ? "," : "", k->names[i]);
		}
		return CADRE_ERR_INVALID;
	case K_U64:
		if (n->type != TJ_NUMBER || !n->is_uint) {
			snprintf(err, errlen, "%s: key '%s%s': expected a non-negative integer, got %s",
			    name, prefix, k->name, type_name(n->type));
			return CADRE_ERR_INVALID;
		}
		*(uint64_t *)base = n->u;
		return 0;
	case K_INT:
	case K_I64:
		if (n->type != TJ_NUMBER || !n->is_uint || (double)n->u < k->lo ||
		    (double)n->u > k->hi) {
			snprintf(err, errlen, "%s: key '%s%s': expected an integer in %.0f..%.0f",
			    name, prefix, k->name, k->lo, k->hi);
			return CADRE_ERR_INVALID;
		}
		if (k->type == K_INT)
			*(int *)base = (int)n->u;
		else
			*(int64_t *)base = (int64_t)n->u;
		return 0;
	case K_DBL:
		if (n->type != TJ_NUMBER || !isfinite(n->num) || n->num < k->lo ||
		    n->num > k->hi) {
			snprintf(err, errlen, "%s: key '%s%s': expected a number in %g..%g",
			    name, prefix, k->name, k->lo, k->hi);
			return CADRE_ERR_INVALID;
		}
		*(double *)base = n->num;
		return 0;
	}
	return CADRE_ERR_INVALID;
}

/* Sets every member of obj from table, refusing unknown and duplicate
 * keys. */
static int
set_object(struct train_config *c, const struct key *table,
    const struct tj_node *obj, const char *name, const char *prefix,
    char *err, size_t errlen)
{
	const struct tj_node	*n, *p;
	const struct key	*k;
	int			 error;

	for (n = obj->child; n != NULL; n = n->next) {
		for (p = obj->child; p != n; p = p->next)
			if (strcmp(p->key, n->key) == 0) {
				snprintf(err, errlen, "%s: key '%s%s' appears twice", name,
				    prefix, n->key);
				return CADRE_ERR_INVALID;
			}
		/* "model" and "optimizer" are objects handled apart */
		if (table == top_keys && (strcmp(n->key, TJ_MODEL) == 0 ||
		    strcmp(n->key, TJ_OPTIMIZER) == 0))
			continue;
		for (k = table; k->name != NULL; k++)
			if (strcmp(k->name, n->key) == 0)
				break;
		if (k->name == NULL) {
			const struct key *best = NULL;
			size_t d, bestd = 3;

			for (k = table; k->name != NULL; k++)
				if ((d = str_edit_distance(n->key, k->name, 3)) < bestd) {
					bestd = d;
					best = k;
				}
			if (best != NULL)
				snprintf(err, errlen, "%s: unknown key '%s%s' (did you mean '%s%s'?)",
				    name, prefix, n->key, prefix, best->name);
			else
				snprintf(err, errlen, "%s: unknown key '%s%s'", name, prefix, n->key);
			return CADRE_ERR_INVALID;
		}
		if ((error = set_key(c, k, n, name, prefix, err, errlen)) != 0)
			return error;
	}
	return 0;
}

static int
set_model(struct train_config *c, const struct tj_node *n, const char *name,
    char *err, size_t errlen)
{
	const struct key	*k;
	int			 error;

	/* A preset's name is checked against model.c's table by the caller:
	 * this file stays free of the model (the fuzzer builds it alone). */
	if (n->type == TJ_STRING && n->str[0] != '\0' && strlen(n->str) < 64) {
		free(c->model);
		c->model = xstrdup(n->str);
		return 0;
	}
	if (n->type != TJ_OBJECT) {
		snprintf(err, errlen, "%s: key 'model': expected a preset name or an object "
		    "{\"layers\", \"hidden\", \"heads\", \"intermediate\", \"vocab_size\", "
		    "\"max_position\"}, got %s", name, type_name(n->type));
		return CADRE_ERR_INVALID;
	}
	free(c->model);
	c->model = NULL;
	c->layers = c->hidden = c->heads = c->intermediate = 0;
	c->vocab_size = c->max_position = 0;
	if ((error = set_object(c, dim_keys, n, name, "model.", err, errlen)) != 0)
		return error;
	for (k = dim_keys; k->name != NULL; k++)
		if (*(int *)((char *)c + k->off) == 0) {
			snprintf(err, errlen, "%s: key 'model': '%s' is missing", name, k->name);
			return CADRE_ERR_INVALID;
		}
	return 0;
}

int
traincfg_parse(struct train_config *c, const char *text, size_t len,
    const char *name, char *err, size_t errlen)
{
	struct tj_node		*root = NULL;
	const struct tj_node	*n, *opt = NULL, *model = NULL, *ver;
	char			 perr[256];
	int			 error;

	if (len > TRAINCFG_MAX_BYTES) {
		snprintf(err, errlen, "%s: %zu bytes exceeds the limit of %d", name, len,
		    TRAINCFG_MAX_BYTES);
		return CADRE_ERR_TOO_LARGE;
	}
	if ((error = tj_parse(text, len, &root, perr, sizeof perr)) != 0) {
		size_t off = 0, line = 0, col = 0;

		if (sscanf(perr, "offset %zu", &off) == 1 && off <= len) {
			const char *colon = strchr(perr, ':');

			str_line_col(text, len, off, &line, &col);
			snprintf(err, errlen, "%s:%zu:%zu: error: %s", name, line, col,
			    colon != NULL ? colon + 2 : perr);
		} else
			snprintf(err, errlen, "%s: %s", name, perr);
		goto out;
	}
	if (root->type != TJ_OBJECT) {
		snprintf(err, errlen, "%s: expected a JSON object at the top", name);
		error = CADRE_ERR_INVALID;
		goto out;
	}
	/* The version first: a newer file's other keys may not be ours. */
	if ((ver = tj_get(root, TJ_VERSION)) != NULL && ver->type == TJ_NUMBER &&
	    ver->is_uint && ver->u > TRAINCFG_VERSION) {
		snprintf(err, errlen, "%s: version %llu is newer than this cadre-train "
		    "reads (%d): upgrade cadre-train", name, (unsigned long long)ver->u,
		    TRAINCFG_VERSION);
		error = CADRE_ERR_VERSION;
		goto out;
	}
	for (n = root->child; n != NULL; n = n->next) {
		if (strcmp(n->key, TJ_MODEL) == 0)
			model = n;
		else if (strcmp(n->key, TJ_OPTIMIZER) == 0)
			opt = n;
	}
	if ((error = set_object(c, top_keys, root, name, "", err, errlen)) != 0)
		goto out;
	if (model != NULL && (error = set_model(c, model, name, err, errlen)) != 0)
		goto out;
	if (opt != NULL) {
		if (opt->type != TJ_OBJECT) {
			snprintf(err, errlen, "%s: key 'optimizer': expected an object, got %s",
			    name, type_name(opt->type));
			error = CADRE_ERR_INVALID;
			goto out;
		}
		if ((error = set_object(c, opt_keys, opt, name, "optimizer.", err, errlen)) != 0)
			goto out;
	}
	error = 0;
out:
	tj_free(root);
	return error;
}

int
traincfg_load(struct train_config *c, const char *path, char *err, size_t errlen)
{
	struct cbuf	b;
	int		error;

	cbuf_init(&b, TRAINCFG_MAX_BYTES);
	if ((error = cbuf_read_file(&b, path)) != 0) {
		if (error == CADRE_ERR_TOO_LARGE)
			snprintf(err, errlen, "%s: larger than %d bytes: not a train.json",
			    path, TRAINCFG_MAX_BYTES);
		else
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	error = traincfg_parse(c, b.data != NULL ? b.data : "", b.len, path, err, errlen);
out:
	cbuf_free(&b);
	return error;
}

int
traincfg_check(const struct train_config *c, char *err, size_t errlen)
{
	if (c->data == NULL) {
		snprintf(err, errlen, "no training data: set \"data\" in train.json or --data DIR");
		return CADRE_ERR_INVALID;
	}
	if (c->out == NULL) {
		snprintf(err, errlen, "no output directory: set \"out\" in train.json or --out DIR");
		return CADRE_ERR_INVALID;
	}
	/* bf16 and fp16 are the CUDA path's: refused on the CPU, and by a
	 * build without CUDA; whether a GPU is there, train.c finds out. */
#ifdef HAVE_CUDA
	if (c->precision != PREC_FP32 && c->device == DEV_CPU) {
#else
	if (c->precision != PREC_FP32) {
#endif
		snprintf(err, errlen, "precision \"%s\": the CPU trainer computes in fp32 only "
		    "(bf16 and fp16 are the CUDA path's%s)", prec_names[c->precision],
		    c->device == DEV_CPU ? ": set device cuda or auto" :
		    ": this cadre-train was built without CUDA");
		return CADRE_ERR_UNSUPPORTED;
	}
#ifndef HAVE_CUDA
	if (c->device == DEV_CUDA) {
		snprintf(err, errlen, "device \"cuda\": this cadre-train was built without "
		    "CUDA (./configure --with-cuda): set device cpu or auto");
		return CADRE_ERR_UNSUPPORTED;
	}
#endif
	if (strcmp(c->resume, "auto") != 0 && strcmp(c->resume, "none") != 0 &&
	    c->resume[0] != '/') {
		snprintf(err, errlen, "resume: '%s': expected \"auto\", \"none\" or the "
		    "absolute path of a checkpoint directory", c->resume);
		return CADRE_ERR_INVALID;
	}
	return 0;
}

int
traincfg_expand_paths(struct train_config *c, char *err, size_t errlen)
{
	struct { const char *key; char **p; } paths[] = {
		{ TJ_DATA, &c->data }, { TJ_EVAL_DATA, &c->eval_data },
		{ TJ_VOCAB, &c->vocab }, { TJ_INIT, &c->init },
		{ TJ_OUT, &c->out }, { TJ_RESUME, &c->resume },
	};
	size_t	 i;
	char	*x, *var;
	int	 rc;

	for (i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		if (*paths[i].p == NULL)
			continue;
		if ((rc = path_expand_env(*paths[i].p, &x, &var)) != 0) {
			snprintf(err, errlen, "%s \"%s\": %s", paths[i].key,
			    *paths[i].p, rc == CADRE_ERR_NOT_FOUND ?
			    "the variable is not set in this environment" :
			    "expected an absolute path, or $NAME/... naming a "
			    "variable that holds one");
			free(var);
			return CADRE_ERR_INVALID;
		}
		free(var);
		free(*paths[i].p);
		*paths[i].p = x;
	}
	return 0;
}
