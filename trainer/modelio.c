#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "fsutil.h"
#include "log.h"
#include "modelio.h"
#include "safetensors.h"
#include "tjson.h"
#include "xmalloc.h"

#define CONFIG_MAX	(1024 * 1024)

/* A label's name: the shards' (labels.txt), else Hugging Face's default. */
static void
label_name(struct cbuf *b, const struct bert_config *c, int i)
{
	char	def[32];

	snprintf(def, sizeof def, "LABEL_%d", i);
	tj_quote(b, c->label_names != NULL ? c->label_names[i] : def);
}

static int
write_config(const struct bert_model *m, const char *path)
{
	const struct bert_config *c = &m->cfg;
	struct cbuf	 b;
	int		 i, error;

	cbuf_init(&b, SIZE_MAX);
	cbuf_addf(&b, "{\n  \"architectures\": [\"%s\"],\n",
	    c->task == BERT_PRETRAIN ? "BertForPreTraining" : "BertForSequenceClassification");
	cbuf_addf(&b, "  \"model_type\": \"bert\",\n");
	cbuf_addf(&b, "  \"vocab_size\": %d,\n  \"hidden_size\": %d,\n", c->vocab, c->hidden);
	cbuf_addf(&b, "  \"num_hidden_layers\": %d,\n  \"num_attention_heads\": %d,\n",
	    c->layers, c->heads);
	cbuf_addf(&b, "  \"intermediate_size\": %d,\n  \"hidden_act\": \"gelu\",\n", c->intermediate);
	cbuf_addf(&b, "  \"hidden_dropout_prob\": %.9g,\n  \"attention_probs_dropout_prob\": %.9g,\n",
	    c->hidden_dropout, c->attn_dropout);
	cbuf_addf(&b, "  \"max_position_embeddings\": %d,\n  \"type_vocab_size\": %d,\n",
	    c->max_position, c->type_vocab);
	cbuf_addf(&b, "  \"initializer_range\": 0.02,\n  \"layer_norm_eps\": %.9g,\n", c->ln_eps);
	cbuf_addf(&b, "  \"pad_token_id\": 0,\n  \"position_embedding_type\": \"absolute\",\n");
	if (c->task == BERT_CLASSIFY) {
		cbuf_adds(&b, "  \"id2label\": {");
		for (i = 0; i < c->num_labels; i++) {
			cbuf_addf(&b, "%s\"%d\": ", i ? ", " : "", i);
			label_name(&b, c, i);
		}
		cbuf_adds(&b, "},\n  \"label2id\": {");
		for (i = 0; i < c->num_labels; i++) {
			cbuf_adds(&b, i ? ", " : "");
			label_name(&b, c, i);
			cbuf_addf(&b, ": %d", i);
		}
		cbuf_adds(&b, "},\n");
	}
	cbuf_adds(&b, "  \"torch_dtype\": \"float32\"\n}\n");
	error = fs_write_atomic(path, b.data, b.len, 0644);
	cbuf_free(&b);
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
	if ((n = tj_get(root, "model_type")) != NULL &&
	    (n->type != TJ_STRING || strcmp(n->str, "bert") != 0)) {
		snprintf(err, errlen, "%s: field 'model_type': %s%s%s, expected \"bert\": "
		    "cadre-train starts only from BERT checkpoints", path,
		    n->type == TJ_STRING ? "\"" : "", n->type == TJ_STRING ? n->str :
		    "not a string", n->type == TJ_STRING ? "\"" : "");
		error = CADRE_ERR_UNSUPPORTED;
		goto out;
	}
	if ((n = tj_get(root, "position_embedding_type")) != NULL &&
	    (n->type != TJ_STRING || strcmp(n->str, "absolute") != 0)) {
		snprintf(err, errlen, "%s: field 'position_embedding_type': only "
		    "\"absolute\" is supported", path);
		error = CADRE_ERR_UNSUPPORTED;
		goto out;
	}
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

/*
 * Hugging Face's BERT classes save the encoder under "bert." except
 * BertModel, which saves it bare ("embeddings.", "encoder.", "pooler.").
 * A file's name in cadre's naming, or NULL when it is none of these.
 */
static const char *
hf_name(const char *name, int bare, char *buf, size_t len)
{
	static const char *const enc[] = { "embeddings.", "encoder.", "pooler." };
	size_t	i;

	if (!bare)
		return name;
	for (i = 0; i < sizeof enc / sizeof enc[0]; i++)
		if (strncmp(name, enc[i], strlen(enc[i])) == 0) {
			snprintf(buf, len, "bert.%s", name);
			return buf;
		}
	return NULL;
}

/* Tensors a Hugging Face checkpoint may hold that cadre does not keep:
 * the decoder tied to the word embeddings, and the embeddings' buffers. */
static int
ignorable(const char *name)
{
	return strcmp(name, "cls.predictions.decoder.weight") == 0 ||
	    strcmp(name, "cls.predictions.decoder.bias") == 0 ||
	    strcmp(name, "bert.embeddings.position_ids") == 0 ||
	    strcmp(name, "bert.embeddings.token_type_ids") == 0;
}

/* The parts a checkpoint may lack, initialised as Hugging Face does. */
static const struct {
	const char	*prefix;
	const char	*what;
} optional_parts[] = {
	{ "bert.pooler.", "pooler" },
	{ "cls.predictions.", "MLM head" },
	{ "cls.seq_relationship.", "NSP head" },
	{ "classifier.", "classifier" },
};
#define NOPTIONAL (sizeof optional_parts / sizeof optional_parts[0])

static int
optional_part(const char *name)
{
	size_t	i;

	for (i = 0; i < NOPTIONAL; i++)
		if (strncmp(name, optional_parts[i].prefix,
		    strlen(optional_parts[i].prefix)) == 0)
			return (int)i;
	return -1;
}

/* A tensor of the other task's head: loadable into one, ignored by the
 * other. */
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

/* The error for a directory without model.safetensors: the fix when it
 * holds PyTorch's pickle instead. */
static void
no_safetensors(const char *path, const char *serr, char *err, size_t errlen)
{
	const char	*slash = strrchr(path, '/');
	char		*bin;

	if (slash == NULL)
		xasprintf(&bin, "pytorch_model.bin");
	else
		xasprintf(&bin, "%.*s/pytorch_model.bin", (int)(slash - path), path);
	if (access(bin, F_OK) == 0)
		snprintf(err, errlen, "%s: missing; %s is PyTorch's pickle, which "
		    "cadre-train does not read (it can run code): convert it once "
		    "with python3 -c \"import torch; from safetensors.torch import "
		    "save_file; save_file({k: v.clone().contiguous() for k, v in "
		    "torch.load('%s', map_location='cpu').items()}, '%s', "
		    "metadata={'format': 'pt'})\"", path, bin, bin, path);
	else
		snprintf(err, errlen, "%s: %s", path, serr);
	free(bin);
}

int
model_load_weights(struct bert_model *m, const char *path, int flags,
    char *err, size_t errlen)
{
	struct st_file		 *f = NULL;
	const struct st_tensor	**from = NULL;	/* per parameter, or NULL */
	const struct param_info	 *pi;
	char			  serr[512], s1[64], s2[64], nbuf[160], said[256];
	const char		 *cn;
	size_t			  i, o;
	int			  error, d, bare = 1, missing[NOPTIONAL] = { 0 };

	if ((error = st_open(path, &f, serr, sizeof serr)) != 0) {
		if (access(path, F_OK) != 0 && errno == ENOENT)
			no_safetensors(path, serr, err, errlen);
		else
			snprintf(err, errlen, "%s: %s", path, serr);
		return error;
	}
	for (i = 0; i < f->n; i++)
		if (strncmp(f->t[i].name, "bert.", 5) == 0)
			bare = 0;
	from = xcalloc(m->ntensors > 0 ? m->ntensors : 1, sizeof *from);
	for (i = 0; i < f->n; i++) {
		const struct st_tensor *t = &f->t[i];

		cn = hf_name(t->name, bare, nbuf, sizeof nbuf);
		if (cn == NULL && bare && head_tensor(t->name))
			cn = t->name;
		if (cn != NULL && ignorable(cn))
			continue;
		if (cn == NULL || (pi = bert_find_param(m, cn)) == NULL) {
			if (cn != NULL && head_tensor(cn) && !(flags & MODEL_LOAD_STRICT))
				continue;
			snprintf(err, errlen, "%s: tensor '%s' is not a parameter of "
			    "this model: expected the names of Hugging Face's "
			    "BertModel ('embeddings.word_embeddings.weight'), "
			    "BertForPreTraining, BertForMaskedLM or "
			    "BertForSequenceClassification "
			    "('bert.embeddings.word_embeddings.weight'); is it a BERT "
			    "checkpoint?", path, t->name);
			error = CADRE_ERR_INVALID;
			goto out;
		}
		from[pi - m->table] = t;
	}
	for (i = 0; i < m->ntensors; i++) {
		const struct st_tensor	*t = from[i];
		int			 same = 1, part;

		pi = &m->table[i];
		part = optional_part(pi->name);
		if (t == NULL) {
			if (part >= 0 && !(flags & MODEL_LOAD_STRICT)) {
				missing[part] = 1;
				continue;
			}
			snprintf(err, errlen, "%s: tensor '%s' missing", path,
			    pi->name + (bare && strncmp(pi->name, "bert.", 5) == 0 ? 5 : 0));
			error = CADRE_ERR_NOT_FOUND;
			goto out;
		}
		if (t->dtype != ST_F32) {
			snprintf(err, errlen, "%s: tensor '%s': dtype %s, expected F32 "
			    "(save the model in float32)", path, t->name,
			    st_dtype_name(t->dtype));
			error = CADRE_ERR_UNSUPPORTED;
			goto out;
		}
		if (t->ndim != pi->ndim)
			same = 0;
		for (d = 0; same && d < pi->ndim; d++)
			same = t->shape[d] == pi->shape[d];
		shape_str(s1, sizeof s1, t->ndim, t->shape);
		shape_str(s2, sizeof s2, pi->ndim, pi->shape);
		if (!same && strncmp(pi->name, "classifier.", 11) == 0 &&
		    !(flags & MODEL_LOAD_STRICT)) {
			/* another number of labels: Hugging Face's
			 * ignore_mismatched_sizes */
			log_warn("%s: tensor '%s' has shape %s, this run's classifier "
			    "%s (%d labels): initialised afresh", path, t->name, s1,
			    s2, m->cfg.num_labels);
			continue;
		}
		if (!same) {
			snprintf(err, errlen, "%s: tensor '%s': shape %s, expected %s "
			    "by the model's configuration (config.json)", path,
			    t->name, s1, s2);
			error = CADRE_ERR_INVALID;
			goto out;
		}
		if ((error = st_read(f, t, m->params_mem + pi->offset, serr, sizeof serr)) != 0) {
			snprintf(err, errlen, "%s: %s", path, serr);
			goto out;
		}
	}
	said[0] = '\0';
	for (i = 0, o = 0; i < NOPTIONAL; i++) {
		if (!missing[i] || o >= sizeof said)
			continue;
		o += (size_t)snprintf(said + o, sizeof said - o, "%s%s",
		    o > 0 ? ", " : "", optional_parts[i].what);
	}
	if (said[0] != '\0')
		log_notice("%s has no %s: initialised as Hugging Face does "
		    "(normal(0, 0.02) weights, zero biases, LayerNorm 1 and 0)", path,
		    said);
	error = 0;
out:
	free(from);
	st_close(f);
	return error;
}
