/*
 * The parsed spec, shared by the files of spec/ and by nothing outside
 * it: typed values, the matrix and its entries, the configurations; and
 * what the key table (spec_keys.c) and the accessors of values
 * (spec_values.c) do with them. Nothing here knows the YAML tree.
 */
#ifndef CADRE_SPEC_INT_H
#define CADRE_SPEC_INT_H

#include <stddef.h>
#include <stdint.h>

#include "sha256.h"
#include "spec.h"

struct cbuf;

/*
 * One typed value; what is used depends on the key's type. A COMMAND has
 * s (its sh -c form) or list (its words). VARS and ENVS keep their pairs
 * in list, list[2i] a name and list[2i + 1] its value, sorted by name (n
 * counts both); one var's value alone (a matrix or include entry for
 * program.vars.NAME) is its text in s.
 */
struct spec_value {
	unsigned char	  set;		/* given, or defaulted */
	unsigned char	  bad;		/* given but invalid (reported) */
	uint32_t	  line, col;	/* where it was written; 0: default */
	int64_t		  i;		/* INT, BOOL, DURATION, SIZE, ENUM index */
	double		  f;		/* FLOAT */
	char		 *s;		/* string kinds */
	char		**list;		/* list kinds, NULL-terminated */
	size_t		  n;
};

/* One matrix key and its values. */
struct spec_dim {
	enum spec_key		 key;
	char			*var;	/* program.vars.NAME: NAME (key is
					 * SPEC_K_PROG_VARS); else NULL */
	uint32_t		 line, col;	/* of the key */
	struct spec_value	*vals;
	size_t			 n;
};

/* One "dotted key: value" of an exclude, include or baseline entry. */
struct spec_assign {
	enum spec_key		 key;
	char			*var;	/* as in struct spec_dim */
	size_t			 dim;	/* index in dims, or SIZE_MAX */
	size_t			 vidx;	/* index in that dim's values, or SIZE_MAX */
	struct spec_value	 val;
};

struct spec_entry {
	struct spec_assign	*a;
	size_t			 n;
	uint32_t		 line, col;
	int			 bad;	/* had an error: ignored */
	int			 nomatch;	/* names a value not in the matrix */
};

struct spec_config {
	const struct spec_value	**v;	/* per varied key */
	/* program.vars with this configuration's values, when some vary:
	 * v[] points here for SPEC_K_PROG_VARS */
	struct spec_value	  vars;
	char			 *canon;	/* the canonical values hashed */
	size_t			  canon_len;
	uint8_t			  digest[SHA256_DIGEST_LEN];
	char			  id[SPEC_ID_LEN + 1];
};

struct spec {
	char			*file;
	char			*dir;
	struct spec_value	 v[SPEC_KEY_COUNT];
	struct spec_value	 def[SPEC_KEY_COUNT];
	int			 custom_model;
	int			 program;	/* a program section, not trainer */
	uint32_t		 sect_line[SPEC_KEY_COUNT];	/* parent sections seen */
	uint32_t		 sect_col[SPEC_KEY_COUNT];

	struct spec_dim		*dims;
	size_t			 ndims;
	int			 matrix_bad;
	struct spec_entry	*excludes;
	size_t			 nexcludes;
	struct spec_entry	*includes;
	size_t			 nincludes;
	struct spec_entry	 baseline;
	int			 has_baseline;

	enum spec_key		*varied;
	size_t			 nvaried;
	char			**varied_vars;	/* names, see spec_varied_var() */
	size_t			 nvaried_vars;
	int			 varied_index[SPEC_KEY_COUNT];	/* -1: not varied */
	struct spec_config	*configs;
	size_t			 nconfigs;
};

/* spec_keys.c */
void spec_value_free(struct spec_value *v);
void spec_value_copy(struct spec_value *dst, const struct spec_value *src);
int spec_value_equal(enum spec_key k, const struct spec_value *a,
    const struct spec_value *b);
char *spec_value_format(enum spec_key k, const struct spec_value *v);
void spec_value_canon(enum spec_key k, const struct spec_value *v,
    struct cbuf *b);
/* The dimensions of preset name: 0, or CADRE_ERR_NOT_FOUND. */
int spec_model_preset(const char *name, struct spec_model_dims *m);
/* WORDS, PATHS, ENUMS, DURATIONS and TEXTS: the types whose values are
 * lists. */
int spec_type_is_list(enum spec_type t);
/* VARS and ENVS: the types whose values are pairs. */
int spec_type_is_pairs(enum spec_type t);
/* The value of name in pairs value v (VARS, ENVS), or NULL. */
const char *spec_pairs_get(const struct spec_value *v, const char *name);
/* Sets name to text in pairs value v, keeping the names sorted. */
void spec_pairs_set(struct spec_value *v, const char *name, const char *text);
void spec_add_bound(struct cbuf *b, enum spec_type t, int64_t v);

/* spec_values.c: the values of configuration cfg, or with cfg NULL the
 * base values, which every configuration starts from. */
const struct spec_value *spec_cfg_value(const struct spec *s,
    const struct spec_config *cfg, enum spec_key k);
void spec_cfg_model(const struct spec *s, const struct spec_config *cfg,
    struct spec_model_dims *m);
int spec_cfg_is_set(const struct spec *s, const struct spec_config *cfg,
    enum spec_key k);
int64_t spec_cfg_int(const struct spec *s, const struct spec_config *cfg,
    enum spec_key k);
double spec_cfg_double(const struct spec *s, const struct spec_config *cfg,
    enum spec_key k);
int spec_cfg_bool(const struct spec *s, const struct spec_config *cfg,
    enum spec_key k);
const char *spec_cfg_string(const struct spec *s,
    const struct spec_config *cfg, enum spec_key k);
char *const *spec_cfg_list(const struct spec *s,
    const struct spec_config *cfg, enum spec_key k, size_t *n);
char *const *spec_cfg_pairs(const struct spec *s,
    const struct spec_config *cfg, enum spec_key k, size_t *n);

#endif
