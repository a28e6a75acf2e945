/* libFuzzer target for --init's reading of a Hugging Face directory:
 * config.json (model_load_config) and the mapping of model.safetensors'
 * tensors onto the model (model_load_weights, every layout). The input is
 * a 2-byte little-endian length N, N bytes of config.json, then the
 * safetensors file; byte 0 of the latter's rest picks the task and the
 * strictness. Both go to files in a directory made once, as the loader
 * reads files. Built with --enable-fuzzing (CC=clang). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "log.h"
#include "model.h"
#include "modelio.h"
#include "xmalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Models above this many parameters are not built: the fuzzer looks for
 * parsing faults, not for the memory a large config.json asks for. */
#define FUZZ_MAX_PARAMS	((int64_t)1 << 20)

static char	*dir, *cfg_path, *st_path;

static void
remove_dir(void)
{
	(void)fs_remove_flat_dir(dir);
}

static int
small_enough(const struct bert_config *c)
{
	int64_t	H = c->hidden, I = c->intermediate;

	return (int64_t)(c->vocab + c->max_position + c->type_vocab +
	    c->num_labels + 8) * H +
	    (int64_t)c->layers * (4 * H * H + 2 * H * I + 16 * H) + 2 * H * H <=
	    FUZZ_MAX_PARAMS;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bert_model	m;
	struct bert_config	c;
	char			err[1024], tmpl[] = "/tmp/fuzz-modelio.XXXXXX";
	size_t			n;

	if (cfg_path == NULL) {
		log_init("fuzz_modelio", LOG_LEVEL_ERROR, LOG_TARGET_STDERR);
		if (mkdtemp(tmpl) == NULL)
			abort();
		dir = xstrdup(tmpl);
		atexit(remove_dir);
		xasprintf(&cfg_path, "%s/config.json", dir);
		xasprintf(&st_path, "%s/model.safetensors", dir);
	}
	if (size < 3)
		return 0;
	n = (size_t)data[0] | (size_t)data[1] << 8;
	if (n > size - 3)
		return 0;
	if (fs_write_atomic(cfg_path, data + 2, n, 0600) != 0 ||
	    fs_write_atomic(st_path, data + 3 + n, size - 3 - n, 0600) != 0)
		abort();
	bert_config_preset("bert-tiny", &c);
	c.layers = 1;
	c.hidden = 8;
	c.heads = 2;
	c.intermediate = 16;
	c.vocab = 16;
	c.max_position = 16;
	c.task = data[2 + n] & 1 ? BERT_CLASSIFY : BERT_PRETRAIN;
	c.num_labels = 2 + (data[2 + n] >> 2 & 3);
	if (model_load_config(cfg_path, &c, err, sizeof err) != 0 ||
	    bert_config_check(&c, err, sizeof err) != 0 || !small_enough(&c))
		return 0;
	bert_model_init(&m, &c);
	(void)model_load_weights(&m, st_path, data[2 + n] & 2 ?
	    MODEL_LOAD_STRICT : 0, err, sizeof err);
	bert_model_free(&m);
	return 0;
}
