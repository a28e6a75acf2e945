/*
 * The checks of a spec, shared by the files of spec/ above them: the YAML
 * tree to typed values key by key (spec_check_value.c), the tree's keys
 * against the table (spec_check.c), the checks between keys
 * (spec_check_cross.c), and those of a program section
 * (spec_check_program.c).
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
	/* the top-level trainer and program keys; program.command and
	 * program.setup, whose words are checked once the matrix is read */
	const struct ynode *trainer_key, *program_key;
	const struct ynode *command, *setup;
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
/* name as a program.vars name, at node at; where starts the message:
 * 0, or CADRE_ERR_INVALID after an error. */
int spec_var_name_check(struct spec_cx *cx, const struct ynode *at,
    const char *where, const char *name);
/* n as one var's value (text) into out, path naming it in messages: 0, or
 * CADRE_ERR_INVALID after an error (out->bad set). */
int spec_var_parse(struct spec_cx *cx, const char *path, const struct ynode *n,
    struct spec_value *out);

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
/* Whether key k belongs to the other kind of spec than cx's (trainer.*,
 * stage.to and eval.* in a program spec, program.* in a trainer spec):
 * then 1 after an error at n, its message starting with where. */
int spec_key_foreign(struct spec_cx *cx, const char *where, enum spec_key k,
    const struct ynode *n);

/* spec_check_program.c */
/* program.metrics.regex n: compiled by PCRE2, its named groups checked
 * (step required; other unknown names a warning): 0, or
 * CADRE_ERR_INVALID after an error. */
int spec_regex_check(struct spec_cx *cx, const struct spec_key_info *ki,
    const struct ynode *n);
/* A program spec's checks that need the matrix read: the {name}s of
 * command and setup against the built-in names and every var's, and a
 * warning when the command's program is not found here. */
void spec_check_program(struct spec_cx *cx);

/* spec_check_cross.c */
void spec_check_base(struct spec_cx *cx);
void spec_check_config(struct spec_cx *cx, const struct spec_config *cfg);

#endif
