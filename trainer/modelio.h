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
/*
 * Loads the parameters of m from a safetensors file saved by Hugging
 * Face's BertModel (names without "bert."), BertForPreTraining,
 * BertForMaskedLM or BertForSequenceClassification, or by cadre: dtype F32
 * and the shapes of m's configuration. Buffers, the tied decoder and the
 * other task's head are ignored; a pooler or head the file lacks stays as
 * initialised (one notice says which), a classifier of another number of
 * labels too (a warning). With MODEL_LOAD_STRICT (a checkpoint of this
 * run) every parameter must be there with its shape.
 */
#define MODEL_LOAD_STRICT	0x1
int model_load_weights(struct bert_model *m, const char *path, int flags,
    char *err, size_t errlen);

#endif
