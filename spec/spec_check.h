/*
 * The checks of a spec, shared by the files of spec/ above them: the YAML
 * tree to typed values key by key (spec_check_value.c), the tree's keys
 * against the table (spec_check.c), and the checks between keys
 * (spec_check_cross.c).
 */
#ifndef CADRE_SPEC_CHECK_H
#define CADRE_SPEC_CHECK_H

#include <stdint.h>

#include "diag.h"
#include "spec_int.h"
#include "spec_yaml.h"

/* Parsing context. */
struct spec_cx {
	const char	*file;
	struct diags	*d;
	struct spec	*s;
	/* the YAML nodes of the sections handled after the walk */
	const struct ynode *matrix, *matrix_key;
	const struct ynode *exclude, *exclude_key;
	const struct ynode *include, *include_key;
	const struct ynode *baseline, *baseline_key;
};

/* An error at node n (no line and column for NULL). */
void spec_node_error(struct spec_cx *cx, const struct ynode *n,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* spec_check_value.c */
/* Checks n as key k's value into out: 0, or CADRE_ERR_INVALID after the
 * errors were added to cx's diags (out->bad set). */
int spec_value_parse(struct spec_cx *cx, enum spec_key k,
    const struct ynode *n, struct spec_value *out);
/* What a node is, for "got ...": 0, 'abc', a list, an empty value. */
char *spec_describe(const struct ynode *n);
void spec_defaults(struct spec_value def[SPEC_KEY_COUNT]);

/* spec_check.c */
/* The closest key to a misspelt dotted path among those with all of
 * flags, or NULL. */
const char *spec_suggest_path(const char *path, unsigned flags);
void spec_unknown_key(struct spec_cx *cx, const char *section,
    const char *key, uint32_t line, uint32_t col);
/* The keys under the root mapping into cx->s, then the required ones that
 * are missing. matrix, exclude, include and report.baseline are only
 * noted in cx: their entries need the whole tree read first. */
void spec_check_tree(struct spec_cx *cx, const struct ynode *root);

/* spec_check_cross.c */
void spec_check_base(struct spec_cx *cx);
void spec_check_config(struct spec_cx *cx, const struct spec_config *cfg);

#endif
