/*
 * `cadre-train prep`'s sequences: [CLS] A [SEP] (B [SEP]) back to back.
 * Pretraining pairs are made from each document's own random stream, so
 * that the output does not depend on the threads; classification examples
 * are truncated longest first and get their label's number.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "philox.h"
#include "prep_int.h"
#include "shard.h"
#include "xmalloc.h"

static void
out_add(struct out_seqs *os, const int32_t *a, uint32_t la, const int32_t *b,
    uint32_t lb, int has_b, const int32_t *special, int32_t label)
{
	uint32_t len = la + 2 + (has_b ? lb + 1 : 0);
	int32_t *p;

	if (os->nids + len > os->capids) {
		os->capids = (os->nids + len) * 2 + 4096;
		os->ids = xreallocarray(os->ids, os->capids, sizeof *os->ids);
	}
	if (os->nseqs == os->capseqs) {
		os->capseqs = os->capseqs * 2 + 1024;
		os->seqs = xreallocarray(os->seqs, os->capseqs, sizeof *os->seqs);
		os->offs = xreallocarray(os->offs, os->capseqs, sizeof *os->offs);
	}
	p = os->ids + os->nids;
	*p++ = special[SHARD_CLS];
	if (la > 0)
		memcpy(p, a, la * sizeof *a);
	p += la;
	*p++ = special[SHARD_SEP];
	if (has_b) {
		if (lb > 0)
			memcpy(p, b, lb * sizeof *b);
		p += lb;
		*p = special[SHARD_SEP];
	}
	os->offs[os->nseqs] = os->nids;
	os->seqs[os->nseqs].len = len;
	os->seqs[os->nseqs].type_start = has_b ? la + 2 : len;
	os->seqs[os->nseqs].label = label;
	os->nseqs++;
	os->nids += len;
}

/* The random stream of one (seed, dupe, document): Philox blocks in turn. */
struct rng {
	uint32_t	key[2];
	uint32_t	ctr[4];
	uint32_t	out[4];
	int		left;
};

static void
rng_init(struct rng *r, uint64_t seed, uint32_t dupe, uint64_t doc)
{
	memset(r, 0, sizeof *r);
	r->key[0] = (uint32_t)seed;
	r->key[1] = (uint32_t)(seed >> 32);
	r->ctr[0] = (uint32_t)doc;
	r->ctr[1] = (uint32_t)(doc >> 32);
	r->ctr[2] = dupe;
}

static uint32_t
rng_u32(struct rng *r)
{
	if (r->left == 0) {
		philox4x32_10(r->ctr, r->key, r->out);
		r->ctr[3]++;
		r->left = 4;
	}
	return r->out[--r->left];
}

/* Uniform in [0, 1). */
static double
rng_uniform(struct rng *r)
{
	uint64_t v = (uint64_t)rng_u32(r) << 21 ^ (rng_u32(r) >> 11);

	return (double)(v & ((UINT64_C(1) << 53) - 1)) / 9007199254740992.0;
}

/* Uniform in [a, b]. */
static uint64_t
rng_int(struct rng *r, uint64_t a, uint64_t b)
{
	uint64_t v = (uint64_t)rng_u32(r) << 32 | rng_u32(r);

	return a + v % (b - a + 1);
}

struct span {
	int32_t	*ids;
	size_t	 len, cap;
};

static void
span_add(struct span *s, const int32_t *ids, size_t n)
{
	if (s->len + n > s->cap) {
		s->cap = (s->len + n) * 2 + 256;
		s->ids = xreallocarray(s->ids, s->cap, sizeof *s->ids);
	}
	memcpy(s->ids + s->len, ids, n * sizeof *ids);
	s->len += n;
}

/*
 * NSP pairs from one document, as create_instances_from_document() of
 * Google's create_pretraining_data.py (its random calls, in its order,
 * from this document's own stream).
 */
static void
make_pairs(const struct prep_opts *o, const struct sent *sents,
    const struct doc *docs, size_t ndocs, size_t d, uint32_t dupe,
    const int32_t *special, struct out_seqs *os, struct span *a,
    struct span *b)
{
	const struct doc *doc = &docs[d];
	size_t max_num = o->seq_len - 3, target = max_num, cur = 0, cs = 0, i;
	struct rng r;

	rng_init(&r, o->seed, dupe, d);
	if (rng_uniform(&r) < o->short_seq_prob)
		target = (size_t)rng_int(&r, 2, max_num);
	for (i = 0; i < doc->n; i++) {
		size_t nch, a_end, k, sa, ea, sb, eb;
		int random_next = 0;

		cur += sents[doc->first + i].len;
		if (i != doc->n - 1 && cur < target)
			continue;
		nch = i + 1 - cs;
		a_end = nch >= 2 ? (size_t)rng_int(&r, 1, nch - 1) : 1;
		a->len = b->len = 0;
		for (k = 0; k < a_end; k++)
			span_add(a, sents[doc->first + cs + k].ids, sents[doc->first + cs + k].len);
		if (nch == 1 || rng_uniform(&r) < 0.5) {
			size_t target_b = target > a->len ? target - a->len : 0, rd = d, t;
			const struct doc *od;

			random_next = 1;
			for (t = 0; t < 10 && ndocs > 1; t++) {
				rd = (size_t)rng_int(&r, 0, ndocs - 1);
				if (rd != d)
					break;
			}
			if (ndocs == 1)
				rd = (size_t)rng_int(&r, 0, 0);
			od = &docs[rd];
			for (k = (size_t)rng_int(&r, 0, od->n - 1); k < od->n; k++) {
				span_add(b, sents[od->first + k].ids, sents[od->first + k].len);
				if (b->len >= target_b)
					break;
			}
			/* The unused sentences go back for the next pair. */
			i -= nch - a_end;
		} else {
			for (k = a_end; k < nch; k++)
				span_add(b, sents[doc->first + cs + k].ids, sents[doc->first + cs + k].len);
		}
		sa = 0;
		ea = a->len;
		sb = 0;
		eb = b->len;
		while ((ea - sa) + (eb - sb) > max_num) {
			int in_a = (ea - sa) > (eb - sb);

			if (rng_uniform(&r) < 0.5) {
				if (in_a)
					sa++;
				else
					sb++;
			} else {
				if (in_a)
					ea--;
				else
					eb--;
			}
		}
		if (ea > sa && eb > sb)
			out_add(os, a->ids + sa, (uint32_t)(ea - sa), b->ids + sb,
			    (uint32_t)(eb - sb), 1, special, random_next);
		cs = i + 1;
		cur = 0;
	}
}

static int
all_digits(const char *s)
{
	if (*s == '\0' || strlen(s) > 18 || (s[0] == '0' && s[1] != '\0'))
		return 0;
	for (; *s != '\0'; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

static int label_numeric;

static int
label_cmp(const void *pa, const void *pb)
{
	const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;

	if (label_numeric && strlen(a) != strlen(b))
		return strlen(a) < strlen(b) ? -1 : 1;
	return strcmp(a, b);
}

void
prep_pretrain_seqs(const struct prep_opts *o, const struct sent *sents,
    const struct doc *docs, size_t ndocs, const int32_t *special,
    struct out_seqs *os)
{
	struct span a = { 0 }, b = { 0 };
	size_t i;
	int dupe;

	for (dupe = 0; dupe < o->dupe; dupe++)
		for (i = 0; i < ndocs; i++)
			make_pairs(o, sents, docs, ndocs, i, (uint32_t)dupe, special,
			    os, &a, &b);
	free(a.ids);
	free(b.ids);
}

int
prep_classify_seqs(const struct prep_opts *o, const struct chunk *chunks,
    size_t nchunks, char **ex_labels, size_t nex, const int32_t *special,
    struct out_seqs *os, char ***label_namesp, uint32_t *nlabelsp)
{
	char **sorted = xcalloc(nex, sizeof *sorted), **label_names = NULL;
	size_t max1 = o->seq_len - 2, max2 = o->seq_len - 3, i, j;
	uint32_t nlabels = 0, caplabels = 0;
	int rc = 0;

	memcpy(sorted, ex_labels, nex * sizeof *sorted);
	label_numeric = 1;
	for (i = 0; i < nex; i++)
		if (!all_digits(sorted[i]))
			label_numeric = 0;
	qsort(sorted, nex, sizeof *sorted, label_cmp);
	for (i = 0; i < nex; i++) {
		if (nlabels > 0 && strcmp(sorted[i], label_names[nlabels - 1]) == 0)
			continue;
		if (nlabels == SHARD_MAX_LABELS) {
			fprintf(stderr, "cadre-train prep: more than %d distinct labels: is the label the last column (field \"%s\")?\n",
			    SHARD_MAX_LABELS, o->label_field);
			rc = 2;
			break;
		}
		GROW(label_names, nlabels, caplabels);
		label_names[nlabels++] = sorted[i];
	}
	free(sorted);
	*label_namesp = label_names;
	*nlabelsp = nlabels;
	if (rc != 0)
		return rc;
	for (j = 0; j < nchunks; j++) {
		const struct chunk *c = &chunks[j];
		size_t m;

		for (m = 0; m < c->nitems; m++) {
			const struct item *it = &c->items[m];
			const char *lab = c->labels + it->label_off, **hit;
			size_t la = it->a_len, lb = it->b_len == UINT32_MAX ? 0 : it->b_len;
			int has_b = it->b_len != UINT32_MAX;

			if (it->kind != ITEM_EXAMPLE)
				continue;
			hit = bsearch(&lab, label_names, nlabels, sizeof *label_names, label_cmp);
			/* Longest first, from the end, as Hugging Face's
			 * truncation="longest_first". */
			while (la + lb > (has_b ? max2 : max1)) {
				if (la > lb)
					la--;
				else
					lb--;
			}
			/* ids is NULL when the chunk had no token. */
			out_add(os, c->ids != NULL ? c->ids + it->a_off : NULL, (uint32_t)la,
			    c->ids != NULL ? c->ids + it->b_off : NULL,
			    (uint32_t)lb, has_b, special, (int32_t)(hit - (const char **)label_names));
		}
	}
	return 0;
}
