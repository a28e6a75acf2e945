/* The model's files: model.safetensors with Hugging Face's names and
 * config.json as Hugging Face's BertConfig. */
#ifndef CADRE_MODELIO_H
#define CADRE_MODELIO_H

#include <stddef.h>

#include "model.h"

/* Writes DIR/model.safetensors and DIR/config.json. */
int model_save(const struct bert_model *m, const char *dir, char *err, size_t errlen);
/* Reads the dimensions of DIR/config.json (or FILE) into c, keeping c's
 * task, labels' default and dropout unless the file says otherwise. */
int model_load_config(const char *path, struct bert_config *c, char *err, size_t errlen);
/* Loads every parameter of m from a safetensors file: names, shapes and
 * dtype (F32) must match; a tensor of the model's other head is ignored
 * when present and left as initialised when missing, with a warning. */
int model_load_weights(struct bert_model *m, const char *path, char *err, size_t errlen);

#endif
