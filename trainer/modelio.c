#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "log.h"
#include "modelio.h"
#include "safetensors.h"
#include "tjson.h"
#include "xmalloc.h"

#define CONFIG_MAX	(1024 * 1024)

static int
write_config(const struct bert_model *m, const char *path)
{
	const struct bert_config *c = &m->cfg;
	char	*tmp = NULL;
	FILE	*f;
	int	 i, error = 0;

	xasprintf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	if ((f = fopen(tmp, "w")) == NULL) {
		free(tmp);
		return CADRE_ERR_SYSTEM;
	}
	fprintf(f, "{\n  \"architectures\": [\"%s\"],\n",
	    c->task == BERT_PRETRAIN ? "BertForPreTraining" : "BertForSequenceClassification");
	fprintf(f, "  \"model_type\": \"bert\",\n");
	fprintf(f, "  \"vocab_size\": %d,\n  \"hidden_size\": %d,\n", c->vocab, c->hidden);
	fprintf(f, "  \"num_hidden_layers\": %d,\n  \"num_attention_heads\": %d,\n",
	    c->layers, c->heads);
	fprintf(f, "  \"intermediate_size\": %d,\n  \"hidden_act\": \"gelu\",\n", c->intermediate);
	fprintf(f, "  \"hidden_dropout_prob\": %.9g,\n  \"attention_probs_dropout_prob\": %.9g,\n",
	    c->hidden_dropout, c->attn_dropout);
	fprintf(f, "  \"max_position_embeddings\": %d,\n  \"type_vocab_size\": %d,\n",
	    c->max_position, c->type_vocab);
	fprintf(f, "  \"initializer_range\": 0.02,\n  \"layer_norm_eps\": %.9g,\n", c->ln_eps);
	fprintf(f, "  \"pad_token_id\": 0,\n  \"position_embedding_type\": \"absolute\",\n");
	if (c->task == BERT_CLASSIFY) {
		fprintf(f, "  \"id2label\": {");
		for (i = 0; i < c->num_labels; i++)
			fprintf(f, "%s\"%d\": \"LABEL_%d\"", i ? ", " : "", i, i);
		fprintf(f, "},\n  \"label2id\": {");
		for (i = 0; i < c->num_labels; i++)
			fprintf(f, "%s\"LABEL_%d\": %d", i ? ", " : "", i, i);
		fprintf(f, "},\n");
	}
	fprintf(f, "  \"torch_dtype\": \"float32\"\n}\n");
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		error = CADRE_ERR_SYSTEM;
	if (fclose(f) != 0)
		error = CADRE_ERR_SYSTEM;
	if (error == 0 && rename(tmp, path) != 0)
		error = CADRE_ERR_SYSTEM;
	if (error != 0)
		unlink(tmp);
	free(tmp);
	return error;
}

int
model_save(const struct bert_model *m, const char *dir, char *err, size_t errlen)
{
	struct st_writer	*w = st_writer_new();
	char			*path = NULL;
	size_t			 i;
	int			 error;

	for (i = 0; i < m->ntensors; i++) {
		const struct param_info *pi = &m->table[i];

		st_writer_add(w, pi->name, ST_F32, pi->ndim, pi->shape,
		    m->params_mem + pi->offset);
	}
	/* transformers refuses safetensors files without a format. */
	st_writer_meta(w, "format", "pt");
	xasprintf(&path, "%s/model.safetensors", dir);
	if ((error = st_writer_write(w, path)) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	free(path);
	xasprintf(&path, "%s/config.json", dir);
	if ((error = write_config(m, path)) != 0)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
out:
	free(path);
	st_writer_free(w);
	return error;
}

static int
cfg_int(const struct tj_node *root, const char *key, int *out, const char *path,
    char *err, size_t errlen)
{
	const struct tj_node *n = tj_get(root, key);

	if (n == NULL)
		return 0;
	if (n->type != TJ_NUMBER || !n->is_uint || n->u > 1u << 30) {
		snprintf(err, errlen, "%s: field '%s': expected a non-negative integer", path, key);
		return CADRE_ERR_INVALID;
	}
	*out = (int)n->u;
	return 0;
}

static int
cfg_float(const struct tj_node *root, const char *key, float *out,
    const char *path, char *err, size_t errlen)
{
	const struct tj_node *n = tj_get(root, key);

	if (n == NULL)
		return 0;
	if (n->type != TJ_NUMBER) {
		snprintf(err, errlen, "%s: field '%s': expected a number", path, key);
		return CADRE_ERR_INVALID;
	}
	*out = (float)n->num;
	return 0;
}

int
model_load_config(const char *path, struct bert_config *c, char *err, size_t errlen)
{
	struct cbuf		 b;
	struct tj_node		*root = NULL;
	const struct tj_node	*n;
	char			 jerr[128];
	int			 error;

	cbuf_init(&b, CONFIG_MAX);
	if ((error = cbuf_read_file(&b, path)) != 0) {
		snprintf(err, errlen, "%s: %s", path, error == CADRE_ERR_TOO_LARGE ?
		    "larger than 1 MiB" : strerror(errno));
		goto out;
	}
	if ((error = tj_parse(b.data, b.len, &root, jerr, sizeof jerr)) != 0) {
		snprintf(err, errlen, "%s: %s", path, jerr);
		goto out;
	}
	if (root->type != TJ_OBJECT) {
		snprintf(err, errlen, "%s: not a JSON object", path);
		error = CADRE_ERR_INVALID;
		goto out;
	}
	if ((error = cfg_int(root, "vocab_size", &c->vocab, path, err, errlen)) != 0 ||
	    (error = cfg_int(root, "hidden_size", &c->hidden, path, err, errlen)) != 0 ||
	    (error = cfg_int(root, "num_hidden_layers", &c->layers, path, err, errlen)) != 0 ||
	    (error = cfg_int(root, "num_attention_heads", &c->heads, path, err, errlen)) != 0 ||
	    (error = cfg_int(root, "intermediate_size", &c->intermediate, path, err, errlen)) != 0 ||
	    (error = cfg_int(root, "max_position_embeddings", &c->max_position, path, err, errlen)) != 0 ||
	    (error = cfg_int(root, "type_vocab_size", &c->type_vocab, path, err, errlen)) != 0 ||
	    (error = cfg_float(root, "layer_norm_eps", &c->ln_eps, path, err, errlen)) != 0 ||
	    (error = cfg_float(root, "hidden_dropout_prob", &c->hidden_dropout, path, err, errlen)) != 0 ||
	    (error = cfg_float(root, "attention_probs_dropout_prob", &c->attn_dropout, path, err, errlen)) != 0)
		goto out;
	if ((n = tj_get(root, "hidden_act")) != NULL &&
	    (n->type != TJ_STRING || strcmp(n->str, "gelu") != 0)) {
		snprintf(err, errlen, "%s: field 'hidden_act': only \"gelu\" (the erf form) is supported", path);
		error = CADRE_ERR_UNSUPPORTED;
		goto out;
	}
	if ((n = tj_get(root, "id2label")) != NULL && n->type == TJ_OBJECT && n->n >= 2)
		c->num_labels = (int)n->n;
	error = 0;
out:
	tj_free(root);
	cbuf_free(&b);
	return error;
}

/* Tensors a Hugging Face checkpoint may hold that cadre does not keep. */
static int
ignorable(const char *name)
{
	return strcmp(name, "cls.predictions.decoder.weight") == 0 ||
	    strcmp(name, "cls.predictions.decoder.bias") == 0 ||
	    strcmp(name, "bert.embeddings.position_ids") == 0;
}

/* A head's tensor: loadable into one task, ignored by the other. */
static int
head_tensor(const char *name)
{
	return strncmp(name, "cls.", 4) == 0 || strncmp(name, "classifier.", 11) == 0;
}

static void
shape_str(char *buf, size_t len, int ndim, const int64_t *shape)
{
	size_t	o = 0;
	int	d;

	o += (size_t)snprintf(buf + o, len - o, "[");
	for (d = 0; d < ndim && o < len; d++)
		o += (size_t)snprintf(buf + o, len - o, "%s%lld", d ? ", " : "",
		    (long long)shape[d]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
}

int
model_load_weights(struct bert_model *m, const char *path, char *err, size_t errlen)
{
	struct st_file	*f = NULL;
	char		 serr[512], s1[64], s2[64];
	size_t		 i;
	int		 error, d;

	if ((error = st_open(path, &f, serr, sizeof serr)) != 0) {
		snprintf(err, errlen, "%s: %s", path, serr);
		return error;
	}
	for (i = 0; i < f->n; i++) {
		const struct st_tensor *t = &f->t[i];

		if (bert_find_param(m, t->name) == NULL && !ignorable(t->name) &&
		    !head_tensor(t->name)) {
			snprintf(err, errlen, "%s: tensor '%s' is not a parameter of this model "
			    "(expected Hugging Face BertForPreTraining names, e.g. "
			    "'bert.embeddings.word_embeddings.weight')", path, t->name);
			error = CADRE_ERR_INVALID;
			goto out;
		}
	}
	for (i = 0; i < m->ntensors; i++) {
		const struct param_info *pi = &m->table[i];
		const struct st_tensor	*t = st_find(f, pi->name);
		int			 same = 1;

		if (t == NULL) {
			if (head_tensor(pi->name)) {
				log_warn("%s: no tensor '%s': keeping its initial values",
				    path, pi->name);
				continue;
			}
			snprintf(err, errlen, "%s: tensor '%s' missing", path, pi->name);
			error = CADRE_ERR_NOT_FOUND;
			goto out;
		}
		if (t->dtype != ST_F32) {
			snprintf(err, errlen, "%s: tensor '%s': dtype %s, expected F32",
			    path, pi->name, st_dtype_name(t->dtype));
			error = CADRE_ERR_UNSUPPORTED;
			goto out;
		}
		if (t->ndim != pi->ndim)
			same = 0;
		for (d = 0; same && d < pi->ndim; d++)
			same = t->shape[d] == pi->shape[d];
		if (!same) {
			shape_str(s1, sizeof s1, t->ndim, t->shape);
			shape_str(s2, sizeof s2, pi->ndim, pi->shape);
			snprintf(err, errlen, "%s: tensor '%s': shape %s, expected %s",
			    path, pi->name, s1, s2);
			error = CADRE_ERR_INVALID;
			goto out;
		}
		if ((error = st_read(f, t, m->params_mem + pi->offset, serr, sizeof serr)) != 0) {
			snprintf(err, errlen, "%s: %s", path, serr);
			goto out;
		}
	}
	error = 0;
out:
	st_close(f);
	return error;
}
