/*
 * The matrix of a spec and what it expands to, shared by the files of
 * spec/ above the checks: the entries of matrix, exclude, include and
 * report.baseline (spec_matrix.c), the configurations (spec_expand.c) and
 * their ids (spec_id.c). spec_plan.c and spec_load.c, the entry points,
 * sit on top.
 */
#ifndef CADRE_SPEC_MATRIX_H
#define CADRE_SPEC_MATRIX_H

#include "spec_check.h"

/* spec_matrix.c */
void spec_matrix_parse(struct spec_cx *cx);

/* spec_expand.c */
void spec_matrix_expand(struct spec_cx *cx);
void spec_matrix_free(struct spec *s);

/* spec_id.c: the canonical entries of the keys no configuration varies,
 * hashed alike into every configuration's id; then a configuration's id
 * and hash, which a run's id continues with its repeat (id: SPEC_ID_LEN
 * + 1 bytes). */
char **spec_fixed_entries(const struct spec *s);
void spec_fixed_entries_free(char **fixed);
void spec_hash_config(const struct spec *s, char *const *fixed,
    struct spec_config *cfg);
void spec_hash_run(const struct spec_config *cfg, unsigned repeat, char *id);

#endif
