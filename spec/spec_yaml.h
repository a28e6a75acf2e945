/*
 * YAML for specs: libyaml's events built into a small tree that keeps the
 * line and column of every node, whether a scalar was quoted, and shares
 * aliased nodes instead of copying them. The input is checked first (size,
 * NUL bytes, UTF-8, control characters) and bounded while parsing (nesting
 * depth, nodes after alias expansion); duplicate keys, several documents,
 * tags and non-string keys are refused.
 *
 * The lowest layer of spec/: of spec.h it uses only the limits, and it
 * knows nothing of keys.
 */
#ifndef CADRE_SPEC_YAML_H
#define CADRE_SPEC_YAML_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"

enum ynode_kind {
	YNODE_SCALAR = 0,
	YNODE_SEQ,
	YNODE_MAP
};

struct ynode {
	enum ynode_kind	  kind;
	unsigned char	  plain;	/* scalar written without quotes or !!str */
	unsigned char	  open;		/* still being built (aliasing it would recurse) */
	uint32_t	  line, col;	/* 1-based; col in characters */
	char		 *str;		/* scalar text, NUL-terminated, no NUL inside */
	size_t		  len;
	/* SEQ: n items. MAP: n pairs, items[2i] the key (a scalar), items[2i+1]
	 * its value. */
	struct ynode	**items;
	size_t		  n;
	size_t		  cap;
	uint64_t	  weight;	/* nodes below and itself, aliases expanded */
	uint32_t	  height;	/* 0 for a scalar */
};

#define YMAP_KEY(m, i)	((m)->items[2 * (i)])
#define YMAP_VAL(m, i)	((m)->items[2 * (i) + 1])

struct ydoc {
	struct ynode	 *root;
	struct ynode	**all;		/* every node, for freeing */
	size_t		  nall;
	size_t		  capall;
};

/*
 * Parses len bytes of text. Problems go into d under the name file.
 * Returns 0 and *out, or CADRE_ERR_TOO_LARGE / CADRE_ERR_PARSE /
 * CADRE_ERR_INVALID with *out NULL. An empty document gives a NULL root.
 */
int ydoc_parse(const char *file, const char *text, size_t len,
    size_t max_bytes, struct diags *d, struct ydoc **out);
void ydoc_free(struct ydoc *doc);

/* An empty plain scalar, "~", "null", "Null" or "NULL". */
int ynode_is_null(const struct ynode *n);
/* The value of key in map (a YNODE_MAP), or NULL. */
const struct ynode *ymap_get(const struct ynode *map, const char *key);

/* s (len bytes) quoted in a message: control characters escaped, long
 * values cut with "...". Caller frees. */
char *spec_show(const char *s, size_t len);

#endif
