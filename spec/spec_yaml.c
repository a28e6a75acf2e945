#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "buf.h"
#include "diag.h"
#include "error.h"
#include "log.h"
#include "spec.h"
#include "spec_yaml.h"
#include "strutil.h"
#include "xmalloc.h"

#define YAML_STR_TAG	"tag:yaml.org,2002:str"
#define YAML_TAG_PREFIX	"tag:yaml.org,2002:"
#define SHOW_MAX	40	/* characters of a value quoted in a message */

struct anchor {
	char		*name;
	struct ynode	*node;
};

struct yparser {
	const char	 *file;
	const char	 *text;
	size_t		  len;
	struct diags	 *d;
	struct ydoc	 *doc;

	struct ynode	**stack;	/* open mappings and lists */
	size_t		  depth;
	size_t		  capstack;

	struct anchor	 *anchors;	/* open addressing, power-of-two size */
	size_t		  nanchors;
	size_t		  capanchors;

	uint64_t	  total;	/* nodes so far, aliases expanded */
};

static void
yp_error(struct yparser *p, size_t line, size_t col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
yp_error(struct yparser *p, size_t line, size_t col, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	diag_vadd(p->d, DIAG_ERROR, p->file, line, col, fmt, ap);
	va_end(ap);
}

/* s (len bytes) for a message: control characters escaped, long values cut
 * at SHOW_MAX characters with "...". */
char *
spec_show(const char *s, size_t len)
{
	struct cbuf		 b;
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 i, chars = 0;

	cbuf_init(&b, SIZE_MAX);
	for (i = 0; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80 && chars++ == SHOW_MAX) {
			cbuf_adds(&b, "...");
			break;
		}
		if (p[i] == '\n')
			cbuf_adds(&b, "\\n");
		else if (p[i] == '\t')
			cbuf_adds(&b, "\\t");
		else if (p[i] == '\r')
			cbuf_adds(&b, "\\r");
		else if (p[i] < 0x20 || p[i] == 0x7f)
			cbuf_addf(&b, "\\x%02x", p[i]);
		else
			cbuf_addc(&b, (char)p[i]);
	}
	return cbuf_detach(&b, NULL);
}

/* ------------------------------------------------------------ input checks */

/* Byte offset of the start of 1-based line in the text. */
static size_t
line_offset(const struct yparser *p, size_t line)
{
	size_t	off = 0, l = 1;
	const char *nl;

	while (l < line && off < p->len) {
		nl = memchr(p->text + off, '\n', p->len - off);
		if (nl == NULL)
			return p->len;
		off = (size_t)(nl - p->text) + 1;
		l++;
	}
	return off;
}

/* Byte offset of a 1-based (line, column in characters). */
static size_t
mark_offset(const struct yparser *p, size_t line, size_t col)
{
	size_t	off = line_offset(p, line), c = 1;

	while (off < p->len && c < col && p->text[off] != '\n') {
		off++;
		while (off < p->len &&
		    ((unsigned char)p->text[off] & 0xc0) == 0x80)
			off++;
		c++;
	}
	return off;
}

/* Whether the indentation of line has a tab; *col gets its column. */
static int
tab_in_indent(const struct yparser *p, size_t line, size_t *col)
{
	size_t	off = line_offset(p, line), start = off;

	for (; off < p->len; off++) {
		if (p->text[off] == '\t') {
			*col = off - start + 1;
			return 1;
		}
		if (p->text[off] != ' ')
			break;
	}
	return 0;
}

static void
format_max(size_t max, char *buf, size_t len)
{
	if (max % ((size_t)1 << 20) == 0)
		snprintf(buf, len, "%zu MiB", max >> 20);
	else if (max % 1024 == 0)
		snprintf(buf, len, "%zu KiB", max >> 10);
	else
		snprintf(buf, len, "%zu bytes", max);
}

/*
 * What libyaml would reject with a less helpful message, or accept although
 * no spec can hold it: NUL bytes (a binary file), bad UTF-8, control
 * characters.
 */
static int
check_input(struct yparser *p, size_t max_bytes)
{
	const unsigned char	*t = (const unsigned char *)p->text;
	const char		*nul;
	size_t			 bad, line, col, i;
	char			 maxs[32];

	if (p->len > max_bytes) {
		format_max(max_bytes, maxs, sizeof maxs);
		yp_error(p, 0, 0, "file is %zu bytes; specs are limited to %s",
		    p->len, maxs);
		return CADRE_ERR_TOO_LARGE;
	}
	if ((nul = memchr(p->text, '\0', p->len)) != NULL) {
		str_line_col(p->text, p->len, (size_t)(nul - p->text), &line,
		    &col);
		yp_error(p, line, col, "NUL byte in the file: this looks like "
		    "a binary file; a spec is YAML text in UTF-8");
		return CADRE_ERR_INVALID;
	}
	if (!str_valid_utf8(p->text, p->len, &bad)) {
		str_line_col(p->text, p->len, bad, &line, &col);
		yp_error(p, line, col, "invalid UTF-8 (byte 0x%02x); save the "
		    "spec as UTF-8 text", t[bad]);
		return CADRE_ERR_INVALID;
	}
	for (i = 0; i < p->len; i++) {
		if ((t[i] < 0x20 && t[i] != '\t' && t[i] != '\n' &&
		    t[i] != '\r') || t[i] == 0x7f) {
			str_line_col(p->text, p->len, i, &line, &col);
			yp_error(p, line, col, "control character 0x%02x is not "
			    "allowed in a spec", t[i]);
			return CADRE_ERR_INVALID;
		}
	}
	return 0;
}

/* libyaml's problem, said in terms of what to fix. */
static void
report_yaml_error(struct yparser *p, const yaml_parser_t *yp)
{
	const char	*prob = yp->problem != NULL ? yp->problem : "";
	const char	*ctx = yp->context != NULL ? yp->context : "";
	size_t		 line = yp->problem_mark.line + 1;
	size_t		 col = yp->problem_mark.column + 1;
	size_t		 cline = yp->context_mark.line + 1;
	size_t		 ccol = yp->context_mark.column + 1;
	size_t		 tcol, off;
	char		*shown;

	if (tab_in_indent(p, line, &tcol)) {
		yp_error(p, line, tcol, "tabs are not allowed for indentation; "
		    "indent with spaces");
		return;
	}
	if (strstr(prob, "tab character") != NULL) {
		yp_error(p, line, col, "tabs are not allowed for indentation; "
		    "indent with spaces");
		return;
	}
	if (strcmp(prob, "mapping values are not allowed in this context") == 0)
		yp_error(p, line, col, "unexpected ':' here; check the "
		    "indentation, or quote a value that contains ': '");
	else if (strcmp(prob, "did not find expected key") == 0 &&
	    strstr(ctx, "block mapping") != NULL)
		yp_error(p, line, col, "expected a key at the indentation of the "
		    "mapping that starts at line %zu; check the indentation",
		    cline);
	else if (strcmp(prob, "did not find expected '-' indicator") == 0)
		yp_error(p, line, col, "expected a '- ' list item of the list "
		    "that starts at line %zu; check the indentation", cline);
	else if (strcmp(prob, "did not find expected ',' or ']'") == 0)
		yp_error(p, line, col, "expected ',' or ']' to continue or "
		    "close the list opened at line %zu, column %zu", cline,
		    ccol);
	else if (strcmp(prob, "did not find expected ',' or '}'") == 0)
		yp_error(p, line, col, "expected ',' or '}' to continue or "
		    "close the mapping opened at line %zu, column %zu", cline,
		    ccol);
	else if (strstr(prob, "end of stream") != NULL &&
	    strstr(ctx, "quoted scalar") != NULL)
		yp_error(p, cline, ccol, "unterminated quoted string; add the "
		    "closing quote");
	else if (strcmp(prob, "found character that cannot start any token") ==
	    0) {
		off = mark_offset(p, line, col);
		shown = spec_show(p->text + off,
		    off < p->len ? (size_t)1 : 0);
		yp_error(p, line, col, "'%s' cannot start a value; put the value "
		    "in quotes", shown);
		free(shown);
	} else if (strcmp(prob, "found unknown escape character") == 0)
		yp_error(p, line, col, "unknown escape sequence in a "
		    "double-quoted string; write \\\\ for a backslash, or use "
		    "single quotes");
	else if (strcmp(prob, "could not find expected ':'") == 0)
		yp_error(p, cline, ccol, "missing ':' after this key (write "
		    "'key: value')");
	else if (strcmp(prob,
	    "block sequence entries are not allowed in this context") == 0)
		yp_error(p, line, col, "a '- ' list item is not allowed here; "
		    "check the indentation");
	else if (strcmp(prob, "did not find expected <document start>") == 0)
		yp_error(p, line, col, "only one YAML document is allowed in a "
		    "spec; remove the content after the end marker '...'");
	else if (strcmp(prob, "did not find expected node content") == 0)
		yp_error(p, line, col, "expected a value here");
	else if (strstr(prob, "alphabetic or numeric character") != NULL &&
	    (strstr(ctx, "anchor") != NULL || strstr(ctx, "alias") != NULL))
		yp_error(p, line, col, "anchor and alias names are made of "
		    "letters, digits, '-' and '_'");
	else if (strcmp(prob, "control characters are not allowed") == 0)
		yp_error(p, line, col, "control characters are not allowed in "
		    "a spec");
	else if (*ctx != '\0')
		yp_error(p, line, col, "YAML syntax error: %s (%s at line %zu, "
		    "column %zu)", *prob != '\0' ? prob : "unknown problem",
		    ctx, cline, ccol);
	else
		yp_error(p, line, col, "YAML syntax error: %s",
		    *prob != '\0' ? prob : "unknown problem");
}

/* ------------------------------------------------------------ anchors */

static uint64_t
name_hash(const char *s)
{
	uint64_t	h = 1469598103934665603ULL;

	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

static struct anchor *
anchor_slot(struct anchor *tab, size_t cap, const char *name)
{
	size_t	i = (size_t)name_hash(name) & (cap - 1);

	while (tab[i].name != NULL && strcmp(tab[i].name, name) != 0)
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

/* Defines (or redefines, as YAML allows) an anchor. */
static void
anchor_set(struct yparser *p, const char *name, struct ynode *node)
{
	struct anchor	*old, *slot;
	size_t		 oldcap, i;

	if ((p->nanchors + 1) * 2 > p->capanchors) {
		old = p->anchors;
		oldcap = p->capanchors;
		p->capanchors = oldcap == 0 ? 16 : oldcap * 2;
		p->anchors = xcalloc(p->capanchors, sizeof *p->anchors);
		for (i = 0; i < oldcap; i++) {
			if (old[i].name == NULL)
				continue;
			*anchor_slot(p->anchors, p->capanchors, old[i].name) =
			    old[i];
		}
		free(old);
	}
	slot = anchor_slot(p->anchors, p->capanchors, name);
	if (slot->name == NULL) {
		slot->name = xstrdup(name);
		p->nanchors++;
	}
	slot->node = node;
}

static struct ynode *
anchor_get(struct yparser *p, const char *name)
{
	struct anchor	*slot;

	if (p->capanchors == 0)
		return NULL;
	slot = anchor_slot(p->anchors, p->capanchors, name);
	return slot->name != NULL ? slot->node : NULL;
}

static void
anchors_free(struct yparser *p)
{
	size_t	i;

	for (i = 0; i < p->capanchors; i++)
		free(p->anchors[i].name);
	free(p->anchors);
	p->anchors = NULL;
	p->nanchors = p->capanchors = 0;
}

/* ------------------------------------------------------------ the tree */

static int
count_nodes(struct yparser *p, uint64_t n, size_t line, size_t col)
{
	if (n > SPEC_MAX_NODES || p->total + n > SPEC_MAX_NODES) {
		yp_error(p, line, col, "aliases expand the document to more "
		    "than %d nodes; this looks like an alias bomb (\"billion "
		    "laughs\"), not a spec", SPEC_MAX_NODES);
		return CADRE_ERR_TOO_LARGE;
	}
	p->total += n;
	return 0;
}

static struct ynode *
node_new(struct yparser *p, enum ynode_kind kind, const yaml_mark_t *mark)
{
	struct ynode	*n;
	struct ydoc	*doc = p->doc;

	n = xcalloc(1, sizeof *n);
	n->kind = kind;
	n->line = (uint32_t)(mark->line + 1);
	n->col = (uint32_t)(mark->column + 1);
	n->weight = 1;
	if (doc->nall == doc->capall) {
		doc->capall = doc->capall == 0 ? 64 : doc->capall * 2;
		doc->all = xreallocarray(doc->all, doc->capall,
		    sizeof *doc->all);
	}
	doc->all[doc->nall++] = n;
	return n;
}

static void
node_push(struct ynode *parent, struct ynode *item)
{
	if (parent->n == parent->cap) {
		parent->cap = parent->cap == 0 ? 4 : parent->cap * 2;
		parent->items = xreallocarray(parent->items, parent->cap,
		    sizeof *parent->items);
	}
	parent->items[parent->n++] = item;
}

static const char *
kind_name(const struct ynode *n)
{
	switch (n->kind) {
	case YNODE_MAP:
		return "a mapping";
	case YNODE_SEQ:
		return "a list";
	default:
		return "a string";
	}
}

/* Puts node into the open container, or makes it the root. The functions
 * that build the tree return 0, or CADRE_ERR_PARSE (CADRE_ERR_TOO_LARGE
 * past SPEC_MAX_NODES) after an error in p's diags. */
static int
attach(struct yparser *p, struct ynode *node, size_t line, size_t col)
{
	struct ynode	*parent;

	if (p->depth == 0) {
		p->doc->root = node;
		return 0;
	}
	parent = p->stack[p->depth - 1];
	if (parent->kind == YNODE_MAP && parent->n % 2 == 0) {
		if (node->kind != YNODE_SCALAR) {
			yp_error(p, line, col, "a key must be a string, not %s",
			    kind_name(node));
			return CADRE_ERR_PARSE;
		}
		if (ynode_is_null(node)) {
			yp_error(p, line, col, "empty key; write 'key: value'");
			return CADRE_ERR_PARSE;
		}
	}
	node_push(parent, node);
	return 0;
}

static int
check_tag(struct yparser *p, const yaml_char_t *tag, enum ynode_kind kind,
    size_t line, size_t col, int *is_str)
{
	const char	*t = (const char *)tag;
	char		*shown;

	*is_str = 0;
	if (t == NULL)
		return 0;
	if (kind == YNODE_SCALAR && (strcmp(t, "!") == 0 ||
	    strcmp(t, YAML_STR_TAG) == 0)) {
		*is_str = 1;
		return 0;
	}
	if (strncmp(t, YAML_TAG_PREFIX, strlen(YAML_TAG_PREFIX)) == 0) {
		t += strlen(YAML_TAG_PREFIX);
		if ((kind == YNODE_MAP && strcmp(t, "map") == 0) ||
		    (kind == YNODE_SEQ && strcmp(t, "seq") == 0) ||
		    (kind == YNODE_SCALAR && (strcmp(t, "int") == 0 ||
		    strcmp(t, "float") == 0 || strcmp(t, "bool") == 0 ||
		    strcmp(t, "null") == 0)))
			return 0;
		t = (const char *)tag;
	}
	shown = spec_show(t, strlen(t));
	yp_error(p, line, col, "unsupported YAML tag '%s'; specs use plain "
	    "values (quote a value to make it a string)", shown);
	free(shown);
	return CADRE_ERR_PARSE;
}

struct keyref {
	const struct ynode	*key;
	size_t			 idx;
};

static int
keyref_cmp(const void *pa, const void *pb)
{
	const struct keyref	*a = pa, *b = pb;
	int			 c;

	if ((c = strcmp(a->key->str, b->key->str)) != 0)
		return c;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Sorting, not pairwise comparison: maps may have tens of thousands of keys. */
static int
check_duplicates(struct yparser *p, const struct ynode *map)
{
	struct keyref	*refs;
	size_t		 i, npairs = map->n;
	char		*shown;
	int		 rc = 0;

	if (npairs < 2)
		return 0;
	refs = xreallocarray(NULL, npairs, sizeof *refs);
	for (i = 0; i < npairs; i++) {
		refs[i].key = YMAP_KEY(map, i);
		refs[i].idx = i;
	}
	qsort(refs, npairs, sizeof *refs, keyref_cmp);
	for (i = 1; i < npairs; i++) {
		if (strcmp(refs[i].key->str, refs[i - 1].key->str) != 0)
			continue;
		shown = spec_show(refs[i].key->str, refs[i].key->len);
		yp_error(p, refs[i].key->line, refs[i].key->col,
		    "duplicate key '%s' (first at line %u)", shown,
		    (unsigned)refs[i - 1].key->line);
		free(shown);
		rc = CADRE_ERR_PARSE;
	}
	free(refs);
	return rc;
}

/* Closes the innermost container. */
static int
close_container(struct yparser *p)
{
	struct ynode	*n = p->stack[--p->depth];
	size_t		 i;
	uint64_t	 w = 1;
	uint32_t	 h = 0;

	for (i = 0; i < n->n; i++) {
		w += n->items[i]->weight;
		if (n->items[i]->height > h)
			h = n->items[i]->height;
	}
	n->weight = w;
	n->height = h + 1;
	n->open = 0;
	if (n->kind == YNODE_MAP) {
		n->n /= 2;
		return check_duplicates(p, n);
	}
	return 0;
}

static int
open_container(struct yparser *p, enum ynode_kind kind,
    const yaml_event_t *ev)
{
	const yaml_mark_t	*m = &ev->start_mark;
	const yaml_char_t	*tag, *anchor;
	struct ynode		*n;
	int			 is_str, rc;

	if (kind == YNODE_MAP) {
		tag = ev->data.mapping_start.tag;
		anchor = ev->data.mapping_start.anchor;
	} else {
		tag = ev->data.sequence_start.tag;
		anchor = ev->data.sequence_start.anchor;
	}
	if ((rc = check_tag(p, tag, kind, m->line + 1, m->column + 1,
	    &is_str)) != 0)
		return rc;
	if (p->depth >= SPEC_MAX_DEPTH) {
		yp_error(p, m->line + 1, m->column + 1, "nesting is deeper "
		    "than %d levels of mappings and lists", SPEC_MAX_DEPTH);
		return CADRE_ERR_PARSE;
	}
	if ((rc = count_nodes(p, 1, m->line + 1, m->column + 1)) != 0)
		return rc;
	n = node_new(p, kind, m);
	n->open = 1;
	if ((rc = attach(p, n, m->line + 1, m->column + 1)) != 0)
		return rc;
	if (anchor != NULL)
		anchor_set(p, (const char *)anchor, n);
	if (p->depth == p->capstack) {
		p->capstack = p->capstack == 0 ? 8 : p->capstack * 2;
		p->stack = xreallocarray(p->stack, p->capstack,
		    sizeof *p->stack);
	}
	p->stack[p->depth++] = n;
	return 0;
}

static int
add_scalar(struct yparser *p, const yaml_event_t *ev)
{
	const yaml_mark_t	*m = &ev->start_mark;
	struct ynode		*n;
	int			 is_str, rc;

	if ((rc = check_tag(p, ev->data.scalar.tag, YNODE_SCALAR, m->line + 1,
	    m->column + 1, &is_str)) != 0)
		return rc;
	if (memchr(ev->data.scalar.value, '\0', ev->data.scalar.length) !=
	    NULL) {
		yp_error(p, m->line + 1, m->column + 1, "a NUL character (\\0) "
		    "is not allowed in a string");
		return CADRE_ERR_PARSE;
	}
	if ((rc = count_nodes(p, 1, m->line + 1, m->column + 1)) != 0)
		return rc;
	n = node_new(p, YNODE_SCALAR, m);
	n->str = xstrndup((const char *)ev->data.scalar.value,
	    ev->data.scalar.length);
	n->len = ev->data.scalar.length;
	n->plain = !is_str && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	if ((rc = attach(p, n, m->line + 1, m->column + 1)) != 0)
		return rc;
	if (ev->data.scalar.anchor != NULL)
		anchor_set(p, (const char *)ev->data.scalar.anchor, n);
	return 0;
}

static int
add_alias(struct yparser *p, const yaml_event_t *ev)
{
	const yaml_mark_t	*m = &ev->start_mark;
	const char		*name = (const char *)ev->data.alias.anchor;
	struct ynode		*target;
	char			*shown;
	int			 rc = CADRE_ERR_PARSE;

	shown = spec_show(name, strlen(name));
	if ((target = anchor_get(p, name)) == NULL) {
		yp_error(p, m->line + 1, m->column + 1, "unknown alias '*%s': "
		    "no anchor '&%s' before it", shown, shown);
		goto fail;
	}
	if (target->open) {
		yp_error(p, m->line + 1, m->column + 1, "alias '*%s' refers to "
		    "a node that contains it", shown);
		goto fail;
	}
	if (p->depth + target->height > SPEC_MAX_DEPTH) {
		yp_error(p, m->line + 1, m->column + 1, "alias '*%s' makes the "
		    "nesting deeper than %d levels of mappings and lists",
		    shown, SPEC_MAX_DEPTH);
		goto fail;
	}
	if ((rc = count_nodes(p, target->weight, m->line + 1,
	    m->column + 1)) != 0)
		goto fail;
	if ((rc = attach(p, target, m->line + 1, m->column + 1)) != 0)
		goto fail;
	free(shown);
	return 0;

 fail:
	free(shown);
	return rc;
}

int
ydoc_parse(const char *file, const char *text, size_t len, size_t max_bytes,
    struct diags *d, struct ydoc **out)
{
	struct yparser	 p;
	yaml_parser_t	 yp;
	yaml_event_t	 ev;
	int		 rc = CADRE_ERR_PARSE, done = 0, ndocs = 0, step;

	*out = NULL;
	memset(&p, 0, sizeof p);
	p.file = file;
	p.text = text;
	p.len = len;
	p.d = d;
	if ((rc = check_input(&p, max_bytes)) != 0)
		return rc;
	rc = CADRE_ERR_PARSE;

	p.doc = xcalloc(1, sizeof *p.doc);
	if (!yaml_parser_initialize(&yp))
		fatalx("yaml_parser_initialize: out of memory");
	yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
	yaml_parser_set_encoding(&yp, YAML_UTF8_ENCODING);

	while (!done) {
		if (!yaml_parser_parse(&yp, &ev)) {
			report_yaml_error(&p, &yp);
			goto out;
		}
		step = 0;
		switch (ev.type) {
		case YAML_DOCUMENT_START_EVENT:
			if (++ndocs > 1) {
				yp_error(&p, ev.start_mark.line + 1,
				    ev.start_mark.column + 1, "only one YAML "
				    "document is allowed in a spec; a second "
				    "one starts here");
				step = CADRE_ERR_PARSE;
			}
			break;
		case YAML_MAPPING_START_EVENT:
			step = open_container(&p, YNODE_MAP, &ev);
			break;
		case YAML_SEQUENCE_START_EVENT:
			step = open_container(&p, YNODE_SEQ, &ev);
			break;
		case YAML_MAPPING_END_EVENT:
		case YAML_SEQUENCE_END_EVENT:
			step = close_container(&p);
			break;
		case YAML_SCALAR_EVENT:
			step = add_scalar(&p, &ev);
			break;
		case YAML_ALIAS_EVENT:
			step = add_alias(&p, &ev);
			break;
		case YAML_STREAM_END_EVENT:
			done = 1;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
		if (step != 0)
			goto out;
	}
	rc = 0;
	*out = p.doc;
	p.doc = NULL;

 out:
	yaml_parser_delete(&yp);
	anchors_free(&p);
	free(p.stack);
	ydoc_free(p.doc);
	return rc;
}

void
ydoc_free(struct ydoc *doc)
{
	size_t	i;

	if (doc == NULL)
		return;
	for (i = 0; i < doc->nall; i++) {
		free(doc->all[i]->str);
		free(doc->all[i]->items);
		free(doc->all[i]);
	}
	free(doc->all);
	free(doc);
}

int
ynode_is_null(const struct ynode *n)
{
	if (n == NULL)
		return 1;
	if (n->kind != YNODE_SCALAR || !n->plain)
		return 0;
	return n->len == 0 || strcmp(n->str, "~") == 0 ||
	    strcmp(n->str, "null") == 0 || strcmp(n->str, "Null") == 0 ||
	    strcmp(n->str, "NULL") == 0;
}

const struct ynode *
ymap_get(const struct ynode *map, const char *key)
{
	size_t	i;

	if (map == NULL || map->kind != YNODE_MAP)
		return NULL;
	for (i = 0; i < map->n; i++) {
		if (strcmp(YMAP_KEY(map, i)->str, key) == 0)
			return YMAP_VAL(map, i);
	}
	return NULL;
}
