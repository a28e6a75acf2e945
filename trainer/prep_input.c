/*
 * `cadre-train prep`'s input: a chunk of whole lines of one file, read as
 * text (a sentence a line, blank lines between documents), TSV or JSON
 * lines, tokenized into the chunk's items, ids and labels. Each chunk is
 * one thread's, with its own tok_state; the first error stops it with
 * its line and column.
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prep_int.h"
#include "strutil.h"
#include "tjson.h"
#include "tokenizer.h"
#include "xmalloc.h"

atomic_uint_fast64_t prep_progress_bytes, prep_progress_tokens;

static void
chunk_fail(struct chunk *c, uint64_t line, size_t col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
chunk_fail(struct chunk *c, uint64_t line, size_t col, const char *fmt, ...)
{
	va_list ap;

	c->failed = 1;
	c->err_line = line;
	c->err_col = col;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof c->err, fmt, ap);
	va_end(ap);
}

static size_t
add_ids(struct chunk *c, struct tok_state *st, const char *text, size_t len,
    uint32_t *n)
{
	const int32_t *ids;
	size_t k = tok_encode(c->tok, st, text, len, &ids), off;

	*n = (uint32_t)k;
	if (k == 0)
		return c->nids;
	if (c->nids + k > c->capids) {
		c->capids = (c->nids + k) * 2 + 1024;
		c->ids = xreallocarray(c->ids, c->capids, sizeof *c->ids);
	}
	off = c->nids;
	memcpy(c->ids + off, ids, k * sizeof *ids);
	c->nids += k;
	c->tokens += k;
	return off;
}

static struct item *
add_item(struct chunk *c, enum item_kind kind)
{
	struct item *it;

	if (c->nitems == c->capitems) {
		c->capitems = c->capitems * 2 + 256;
		c->items = xreallocarray(c->items, c->capitems, sizeof *c->items);
	}
	it = &c->items[c->nitems++];
	memset(it, 0, sizeof *it);
	it->kind = kind;
	it->b_len = UINT32_MAX;
	return it;
}

/* A label's text must be storable in a shard header. */
static int
label_ok(struct chunk *c, uint64_t line, const char *s, size_t len)
{
	if (len == 0) {
		chunk_fail(c, line, 0, "empty label");
		return 0;
	}
	if (len > SHARD_MAX_LABEL_LEN || memchr(s, '\0', len) != NULL ||
	    memchr(s, '\n', len) != NULL || !str_valid_utf8(s, len, NULL)) {
		chunk_fail(c, line, 0, "label \"%.40s\" is over %d bytes, not UTF-8, or holds a NUL or newline",
		    s, SHARD_MAX_LABEL_LEN);
		return 0;
	}
	return 1;
}

static void
add_label(struct chunk *c, struct item *it, const char *s, size_t len)
{
	if (c->nlabels + len + 1 > c->caplabels) {
		c->caplabels = (c->nlabels + len + 1) * 2 + 256;
		c->labels = xreallocarray(c->labels, c->caplabels, 1);
	}
	it->label_off = c->nlabels;
	memcpy(c->labels + c->nlabels, s, len);
	c->labels[c->nlabels + len] = '\0';
	c->nlabels += len + 1;
}

static int
is_blank(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\v' && s[i] != '\f')
			return 0;
	return 1;
}

static void
do_tsv(struct chunk *c, struct tok_state *st, uint64_t line, const char *s,
    size_t len)
{
	const char *tab1, *tab2 = NULL, *lab;
	struct item *it;
	size_t lablen;

	tab1 = memchr(s, '\t', len);
	if (tab1 == NULL) {
		chunk_fail(c, line, 0, "no label: a line is TEXT<TAB>LABEL or TEXT<TAB>TEXT_B<TAB>LABEL");
		return;
	}
	tab2 = memchr(tab1 + 1, '\t', len - (size_t)(tab1 + 1 - s));
	if (tab2 != NULL && memchr(tab2 + 1, '\t', len - (size_t)(tab2 + 1 - s)) != NULL) {
		chunk_fail(c, line, 0, "more than 3 columns: a line is TEXT<TAB>LABEL or TEXT<TAB>TEXT_B<TAB>LABEL");
		return;
	}
	lab = (tab2 != NULL ? tab2 : tab1) + 1;
	lablen = len - (size_t)(lab - s);
	if (c->first && line == 1 && lablen == 5 && memcmp(lab, "label", 5) == 0)
		return;	/* the header */
	if (!label_ok(c, line, lab, lablen))
		return;
	it = add_item(c, ITEM_EXAMPLE);
	it->a_off = add_ids(c, st, s, (size_t)(tab1 - s), &it->a_len);
	if (tab2 != NULL)
		it->b_off = add_ids(c, st, tab1 + 1, (size_t)(tab2 - tab1 - 1), &it->b_len);
	add_label(c, it, lab, lablen);
}

static void
do_jsonl(struct chunk *c, struct tok_state *st, uint64_t line, const char *s,
    size_t len)
{
	const struct prep_opts *o = c->o;
	const struct tj_node *f, *fb, *fl;
	struct tj_node *root = NULL;
	struct item *it;
	char err[256], num[32];
	const char *p, *e;
	size_t off, l, col;

	if (tj_parse(s, len, &root, err, sizeof err) != 0) {
		/* tj_parse says "offset N: what". */
		if (sscanf(err, "offset %zu", &off) != 1)
			off = 0;
		str_line_col(s, len, off < len ? off : len, &l, &col);
		chunk_fail(c, line, col, "not JSON: %s", strchr(err, ':') != NULL ?
		    strchr(err, ':') + 2 : err);
		return;
	}
	for (col = 1; col <= len && (s[col - 1] == ' ' || s[col - 1] == '\t'); col++)
		;
	if (root->type != TJ_OBJECT) {
		chunk_fail(c, line, col, "a line must be a JSON object");
		goto out;
	}
	f = tj_get(root, o->text_field);
	if (f == NULL || f->type != TJ_STRING) {
		chunk_fail(c, line, col, "%s field \"%s\"%s",
		    f == NULL ? "no" : "a non-string", o->text_field,
		    f == NULL ? " (choose it with --text-field)" : "");
		goto out;
	}
	if (o->task == SHARD_PRETRAIN) {
		add_item(c, ITEM_BREAK);
		for (p = f->str; ; p = e + 1) {
			e = strchr(p, '\n');
			if (e == NULL)
				e = p + strlen(p);
			if (!is_blank(p, (size_t)(e - p))) {
				it = add_item(c, ITEM_SENT);
				it->a_off = add_ids(c, st, p, (size_t)(e - p), &it->a_len);
			}
			if (*e == '\0')
				break;
		}
		add_item(c, ITEM_BREAK);
		goto out;
	}
	fb = tj_get(root, o->text_b_field);
	if (fb != NULL && fb->type != TJ_STRING && fb->type != TJ_NULL) {
		chunk_fail(c, line, col, "field \"%s\" is neither a string nor null",
		    o->text_b_field);
		goto out;
	}
	fl = tj_get(root, o->label_field);
	if (fl == NULL || (fl->type != TJ_STRING &&
	    !(fl->type == TJ_NUMBER && fl->is_uint))) {
		chunk_fail(c, line, col, "%s label field \"%s\"%s",
		    fl == NULL ? "no" : "a label that is neither a string nor a whole number in",
		    o->label_field, fl == NULL ? " (choose it with --label-field)" : "");
		goto out;
	}
	if (fl->type == TJ_NUMBER)
		snprintf(num, sizeof num, "%" PRIu64, fl->u);
	p = fl->type == TJ_NUMBER ? num : fl->str;
	if (!label_ok(c, line, p, strlen(p)))
		goto out;
	it = add_item(c, ITEM_EXAMPLE);
	it->a_off = add_ids(c, st, f->str, strlen(f->str), &it->a_len);
	if (fb != NULL && fb->type == TJ_STRING)
		it->b_off = add_ids(c, st, fb->str, strlen(fb->str), &it->b_len);
	add_label(c, it, p, strlen(p));
out:
	tj_free(root);
}

void *
prep_chunk_run(void *arg)
{
	struct chunk *c = arg;
	struct tok_state *st = tok_state_new();
	const char *p = c->p, *end = c->p + c->len;
	uint64_t line = 0, tokens0 = 0;
	size_t done = 0;

	while (p < end && !c->failed) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);

		line++;
		if (len > PREP_MAX_LINE) {
			chunk_fail(c, line, 0, "line of %zu bytes, over the %u-byte bound: split it",
			    len, PREP_MAX_LINE);
			break;
		}
		if (len > 0 && p[len - 1] == '\r')
			len--;
		if (c->o->format == FMT_TEXT) {
			if (is_blank(p, len))
				add_item(c, ITEM_BREAK);
			else {
				struct item *it = add_item(c, ITEM_SENT);

				it->a_off = add_ids(c, st, p, len, &it->a_len);
			}
		} else if (!is_blank(p, len)) {
			if (c->o->format == FMT_TSV)
				do_tsv(c, st, line, p, len);
			else
				do_jsonl(c, st, line, p, len);
		}
		p = nl != NULL ? nl + 1 : end;
		done += len + 1;
		if (done >= (1u << 16)) {
			atomic_fetch_add(&prep_progress_bytes, done);
			atomic_fetch_add(&prep_progress_tokens, c->tokens - tokens0);
			tokens0 = c->tokens;
			done = 0;
		}
	}
	atomic_fetch_add(&prep_progress_bytes, done);
	atomic_fetch_add(&prep_progress_tokens, c->tokens - tokens0);
	c->lines = line;
	tok_state_free(st);
	return NULL;
}

void
prep_chunk_free(struct chunk *c)
{
	free(c->ids);
	free(c->items);
	free(c->labels);
}
