/* A small, bounded JSON reader for the trainer's two inputs from outside:
 * safetensors headers and config.json. The trainer must build on a GPU
 * node that has only a compiler, CUDA and NCCL, where jansson (and so
 * libcadre-json) may be missing; see docs/trainer.md. */
#ifndef CADRE_TJSON_H
#define CADRE_TJSON_H

#include <stddef.h>
#include <stdint.h>

enum tj_type { TJ_NULL, TJ_BOOL, TJ_NUMBER, TJ_STRING, TJ_ARRAY, TJ_OBJECT };

struct tj_node {
	enum tj_type	 type;
	char		*key;		/* member name when inside an object */
	char		*str;		/* TJ_STRING, NUL-terminated (no NULs inside) */
	double		 num;		/* TJ_NUMBER, TJ_BOOL */
	int		 is_uint;	/* TJ_NUMBER written as digits only */
	uint64_t	 u;		/* its exact value when is_uint */
	struct tj_node	*child;		/* first element or member */
	struct tj_node	*next;		/* next sibling */
	size_t		 n;		/* number of children */
};

#define TJ_MAX_DEPTH	64

/* Parses text[0..len) (one value, then only white space). On failure
 * returns CADRE_ERR_PARSE and writes "offset N: what was expected" to err. */
int tj_parse(const char *text, size_t len, struct tj_node **out, char *err,
    size_t errlen);
void tj_free(struct tj_node *n);
/* The member named key of an object, or NULL. */
const struct tj_node *tj_get(const struct tj_node *obj, const char *key);

struct cbuf;
/* Appends s (NUL-terminated) to b as a JSON string, escaped. */
void tj_quote(struct cbuf *b, const char *s);

#endif
