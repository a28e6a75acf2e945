/*
 * `cadre-train prep`: text, TSV or JSON lines to a shard set. Files are
 * tokenized in chunks of whole lines by --threads threads, each with its
 * own tok_state, and the results are put together in file order; pairs
 * for NSP are then made from random streams keyed by (seed, dupe, document)
 * alone, so the shard bytes do not depend on --threads. docs/data.md.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "fsutil.h"
#include "loader.h"
#include "philox.h"
#include "prep.h"
#include "shard.h"
#include "strutil.h"
#include "tjson.h"
#include "tokenizer.h"
#include "xmalloc.h"

#define PREP_MAX_LINE		(1u << 20)
#define PREP_MAX_THREADS	256
#define PREP_DEFAULT_SHARD	100000

enum prep_format { FMT_TEXT, FMT_TSV, FMT_JSONL };

struct prep_opts {
	const char		*vocab, *out;
	enum prep_format	 format;
	enum shard_kind		 task;
	uint32_t		 seq_len;
	int			 threads;
	double			 short_seq_prob;
	int			 dupe;
	uint64_t		 seed;
	uint64_t		 shard_size;
	const char		*text_field, *text_b_field, *label_field;
	int			 quiet;
};

/* What one input line gave: a document break, a sentence, or an example. */
enum item_kind { ITEM_BREAK, ITEM_SENT, ITEM_EXAMPLE };

struct item {
	enum item_kind	 kind;
	uint32_t	 a_len, b_len;	/* b_len UINT32_MAX: no text_b */
	size_t		 a_off, b_off;	/* into the chunk's ids */
	size_t		 label_off;	/* into the chunk's labels */
};

struct chunk {
	const struct prep_opts	*o;
	const struct tokenizer	*tok;
	const char		*name;	/* the file */
	const char		*p;
	size_t			 len;
	int			 first;	/* holds the file's first line */

	int32_t			*ids;
	size_t			 nids, capids;
	struct item		*items;
	size_t			 nitems, capitems;
	char			*labels;
	size_t			 nlabels, caplabels;
	uint64_t		 lines, tokens;
	/* The first error: at local line err_line, column err_col (0: none). */
	int			 failed;
	uint64_t		 err_line;
	size_t			 err_col;
	char			 err[512];
};

static atomic_uint_fast64_t progress_bytes, progress_tokens;

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
prep_usage(FILE *f)
{
	fprintf(f,
"usage: cadre-train prep --vocab VOCAB.txt --format text|tsv|jsonl --task pretrain|classify\n"
"                        --seq-len N --out DIR [options] FILE...\n"
"       cadre-train prep --info DIR\n"
"Tokenizes text into a shard set (DIR/shard-NNNNN.bin, vocab.txt, labels.txt)\n"
"for cadre-train train; see docs/data.md.\n"
"\n"
"  --format text         pretrain: one sentence per line, blank lines between documents\n"
"  --format tsv          classify: TEXT<TAB>LABEL or TEXT<TAB>TEXT_B<TAB>LABEL\n"
"                        (a first line whose label column is \"label\" is a header)\n"
"  --format jsonl        one JSON object per line: pretrain, a document in the text\n"
"                        field (sentences on lines); classify, the three fields\n"
"  --seq-len N           tokens per sequence, [CLS] and [SEP]s included (8 to 65536)\n"
"  --threads N           tokenizing threads (default: the CPUs; output is the same)\n"
"  --short-seq-prob X    pretrain: chance of a shorter target length (default 0.1)\n"
"  --dupe-factor N       pretrain: passes over the documents, each pairing\n"
"                        differently (default 1)\n"
"  --seed N              pairing seed (default 12345)\n"
"  --shard-size N        sequences per shard file (default 100000)\n"
"  --text-field NAME --text-b-field NAME --label-field NAME\n"
"                        jsonl fields (default text, text_b, label)\n"
"  --quiet               no progress or summary line\n"
"  --info DIR            check a shard set as training would (against --vocab\n"
"                        when given) and print its header\n"
"  -h, --help            this text\n"
"Exit status: 0 done, 1 error writing, 2 usage or bad input (nothing is left in DIR).\n");
}

/* ------------------------------------------------------------ the chunks */

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

/* Room for one more element in a growing array. */
#define GROW(arr, n, cap) do { \
	if ((n) == (cap)) { \
		(cap) = (cap) * 2 + 64; \
		(arr) = xreallocarray((arr), (cap), sizeof *(arr)); \
	} \
} while (0)

static void *
chunk_run(void *arg)
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
			atomic_fetch_add(&progress_bytes, done);
			atomic_fetch_add(&progress_tokens, c->tokens - tokens0);
			tokens0 = c->tokens;
			done = 0;
		}
	}
	atomic_fetch_add(&progress_bytes, done);
	atomic_fetch_add(&progress_tokens, c->tokens - tokens0);
	c->lines = line;
	tok_state_free(st);
	return NULL;
}

static void
chunk_free(struct chunk *c)
{
	free(c->ids);
	free(c->items);
	free(c->labels);
}

/* ------------------------------------------------------- putting together */

struct sent {
	const int32_t	*ids;
	uint32_t	 len;
};

struct doc {
	size_t	first, n;	/* sentences */
};

/* The sequences made: ids of each, back to back. */
struct out_seqs {
	int32_t		*ids;
	size_t		 nids, capids;
	struct shard_seq *seqs;
	size_t		 nseqs, capseqs;
	uint64_t	*offs;
};

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

/* ---------------------------------------------------------------- output */

static int
write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	int rc = 0;

	if (f == NULL)
		return -1;
	if (n > 0 && fwrite(p, 1, n, f) != n)
		rc = -1;
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		rc = -1;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

static int
read_whole(const char *path, size_t max, char **out, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	char *p;

	*out = NULL;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	p = xmalloc((size_t)st.st_size + 1);
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, p + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	*out = p;
	*len = got;
	return 0;
}

/* Writes the set into tmp (made by the caller, removed by it on failure)
 * and renames tmp to o->out. */
static int
write_set(const struct prep_opts *o, const struct tokenizer *tok,
    const struct out_seqs *os, char **label_names, uint32_t nlabels,
    const char *tmp, uint32_t *nshards_out)
{
	struct shard_info in;
	char *path = NULL, *vtext = NULL, err[512];
	uint8_t sha[32];
	uint64_t nshards, k, first;
	size_t vlen, i;
	int rc = 1;

	memset(&in, 0, sizeof in);
	in.kind = o->task;
	in.seq_len = o->seq_len;
	in.vocab_size = tok_vocab_size(tok);
	memcpy(in.vocab_sha256, tok_vocab_hash(tok), 32);
	for (i = 0; i < SHARD_NSPECIAL; i++)
		in.special[i] = tok_special_id(tok, (enum tok_special)i);
	in.id_bytes = in.vocab_size <= 65536 ? 2 : 4;
	in.num_labels = o->task == SHARD_CLASSIFY ? nlabels : 2;
	in.label_names = o->task == SHARD_CLASSIFY ? label_names : NULL;
	nshards = (os->nseqs + o->shard_size - 1) / o->shard_size;
	if (nshards > SHARD_MAX_SHARDS) {
		fprintf(stderr, "cadre-train prep: %zu sequences make more than %d shards of %" PRIu64 ": use a larger --shard-size\n",
		    os->nseqs, SHARD_MAX_SHARDS, o->shard_size);
		return 2;
	}
	in.shards = (uint32_t)nshards;

	/* The ids of the sequences are in os->ids at offs. */
	{
		struct shard_seq *seqs = xcalloc(os->nseqs > 0 ? os->nseqs : 1, sizeof *seqs);

		for (i = 0; i < os->nseqs; i++) {
			seqs[i] = os->seqs[i];
			seqs[i].ids = os->ids + os->offs[i];
		}
		for (k = 0, first = 0; k < nshards; k++) {
			uint64_t n = os->nseqs - first < o->shard_size ? os->nseqs - first : o->shard_size;

			in.shard_index = (uint32_t)k;
			free(path);
			xasprintf(&path, "%s/shard-%05" PRIu64 ".bin", tmp, k);
			if (shard_write(path, &in, seqs + first, n, err, sizeof err) != 0) {
				fprintf(stderr, "cadre-train prep: %s\n", err);
				free(seqs);
				goto out;
			}
			first += n;
		}
		free(seqs);
	}
	/* The vocab the ids are of, checked to be the one loaded. */
	if (read_whole(o->vocab, TOK_VOCAB_MAX_FILE, &vtext, &vlen) != 0) {
		fprintf(stderr, "cadre-train prep: %s: %s\n", o->vocab, strerror(errno));
		goto out;
	}
	sha256(vtext, vlen, sha);
	if (memcmp(sha, tok_vocab_hash(tok), 32) != 0) {
		fprintf(stderr, "cadre-train prep: %s changed while prep ran\n", o->vocab);
		goto out;
	}
	free(path);
	xasprintf(&path, "%s/vocab.txt", tmp);
	if (write_bytes(path, vtext, vlen) != 0) {
		fprintf(stderr, "cadre-train prep: %s: %s\n", path, strerror(errno));
		goto out;
	}
	if (o->task == SHARD_CLASSIFY) {
		FILE *f;

		free(path);
		xasprintf(&path, "%s/labels.txt", tmp);
		if ((f = fopen(path, "w")) == NULL) {
			fprintf(stderr, "cadre-train prep: %s: %s\n", path, strerror(errno));
			goto out;
		}
		for (i = 0; i < nlabels; i++)
			fprintf(f, "%s\n", label_names[i]);
		if (fflush(f) != 0 || ferror(f) || fclose(f) != 0) {
			fprintf(stderr, "cadre-train prep: %s: %s\n", path, strerror(errno));
			goto out;
		}
	}
	if (rename(tmp, o->out) != 0) {
		fprintf(stderr, "cadre-train prep: renaming %s to %s: %s\n", tmp, o->out,
		    strerror(errno));
		goto out;
	}
	*nshards_out = (uint32_t)nshards;
	rc = 0;
out:
	free(vtext);
	free(path);
	return rc;
}

/* ------------------------------------------------------------------ info */

/* The header of a shard set, checked as the loader checks it (against
 * vocab too when given). */
static int
prep_info(const char *dir, const char *vocab)
{
	struct loader_config lc;
	struct loader *l = NULL;
	const struct shard_info *in;
	char err[1024], hex[65];
	uint32_t i;

	memset(&lc, 0, sizeof lc);
	lc.dir = dir;
	lc.vocab = vocab;
	lc.batch = 1;
	lc.nranks = 1;
	if (loader_open(&lc, &l, err, sizeof err) != 0) {
		fprintf(stderr, "cadre-train prep: %s\n", err);
		return 2;
	}
	in = loader_info(l);
	sha256_hex(in->vocab_sha256, 32, hex);
	printf("shard set: %s\n", dir);
	printf("kind: %s\n", in->kind == SHARD_PRETRAIN ? "pretrain" : "classify");
	printf("seq_len: %" PRIu32 "\n", in->seq_len);
	printf("sequences: %" PRIu64 "\n", in->sequences);
	printf("shards: %" PRIu32 "\n", in->shards);
	printf("vocab_size: %" PRIu32 "\n", in->vocab_size);
	printf("vocab_sha256: %s%s\n", hex, vocab != NULL ? " (matches --vocab)" : "");
	printf("id_bytes: %" PRIu32 "\n", in->id_bytes);
	printf("special: [PAD] %d [UNK] %d [CLS] %d [SEP] %d [MASK] %d\n",
	    in->special[0], in->special[1], in->special[2], in->special[3],
	    in->special[4]);
	printf("num_labels: %" PRIu32 "\n", in->num_labels);
	for (i = 0; in->label_names != NULL && i < in->num_labels; i++)
		printf("label %" PRIu32 ": %s\n", i, in->label_names[i]);
	loader_close(l);
	return 0;
}

/* ------------------------------------------------------------------- main */

static int
opt_num(const char *opt, const char *s, int64_t min, int64_t max, int64_t *out)
{
	if (str_to_int64(s, out) != 0 || *out < min || *out > max) {
		fprintf(stderr, "cadre-train prep: %s wants a whole number from %lld to %lld, not \"%s\"\n",
		    opt, (long long)min, (long long)max, s);
		return -1;
	}
	return 0;
}

/* Tokenizes one file into its chunks (appended to *chunks); 0, or 2 after
 * printing the first error of the file. */
static int
run_file(const struct prep_opts *o, const struct tokenizer *tok,
    const char *name, const char *data, size_t len, struct chunk **chunks,
    size_t *nchunks, double t0, uint64_t total_bytes)
{
	pthread_t tids[PREP_MAX_THREADS];
	int started[PREP_MAX_THREADS];
	struct chunk *c;
	size_t n = (size_t)o->threads, i, pos = 0, base = *nchunks;
	uint64_t line0 = 0;
	int tty = !o->quiet && isatty(STDERR_FILENO), rc = 0;

	if (data == NULL)
		data = "";	/* an empty file, not mapped */
	if (len < n * 4096)
		n = len / 4096 + 1;
	*chunks = xreallocarray(*chunks, base + n, sizeof **chunks);
	c = *chunks + base;
	memset(c, 0, n * sizeof *c);
	for (i = 0; i < n; i++) {
		size_t end = i == n - 1 ? len : len / n * (i + 1);
		const char *nl;

		if (end < pos)
			end = pos;
		if (end < len && (nl = memchr(data + end, '\n', len - end)) != NULL)
			end = (size_t)(nl - data) + 1;
		else if (end < len)
			end = len;
		c[i].o = o;
		c[i].tok = tok;
		c[i].name = name;
		c[i].p = data + pos;
		c[i].len = end - pos;
		c[i].first = i == 0;
		pos = end;
	}
	*nchunks = base + n;
	/* One piece runs in a thread too when there is progress to show. */
	for (i = 0; i < n; i++)
		started[i] = (n > 1 || tty) &&
		    pthread_create(&tids[i], NULL, chunk_run, &c[i]) == 0;
	for (i = 0; i < n; i++)
		if (!started[i])
			chunk_run(&c[i]);
	if (tty) {
		/* Joins as they finish, with a progress line meanwhile. */
		for (i = 0; i < n; i++) {
			while (started[i] && pthread_tryjoin_np(tids[i], NULL) == EBUSY) {
				double dt = now_s() - t0;

				fprintf(stderr, "\rprep: %.1f / %.1f MiB read, %.0f tokens/s   ",
				    (double)atomic_load(&progress_bytes) / 1048576.0,
				    (double)total_bytes / 1048576.0,
				    dt > 0 ? (double)atomic_load(&progress_tokens) / dt : 0.0);
				usleep(200000);
			}
			started[i] = 0;
		}
		fprintf(stderr, "\r%60s\r", "");
	}
	for (i = 0; i < n; i++)
		if (started[i])
			pthread_join(tids[i], NULL);
	for (i = 0; i < n; i++) {
		if (c[i].failed) {
			if (c[i].err_col > 0)
				fprintf(stderr, "%s:%" PRIu64 ":%zu: error: %s\n", name,
				    line0 + c[i].err_line, c[i].err_col, c[i].err);
			else
				fprintf(stderr, "%s:%" PRIu64 ": error: %s\n", name,
				    line0 + c[i].err_line, c[i].err);
			rc = 2;
			break;
		}
		line0 += c[i].lines;
	}
	return rc;
}

int
cmd_prep(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "vocab", required_argument, NULL, 'v' },
		{ "format", required_argument, NULL, 'f' },
		{ "task", required_argument, NULL, 'T' },
		{ "seq-len", required_argument, NULL, 's' },
		{ "out", required_argument, NULL, 'o' },
		{ "threads", required_argument, NULL, 'j' },
		{ "short-seq-prob", required_argument, NULL, 'p' },
		{ "dupe-factor", required_argument, NULL, 'd' },
		{ "seed", required_argument, NULL, 'S' },
		{ "shard-size", required_argument, NULL, 'z' },
		{ "text-field", required_argument, NULL, 'a' },
		{ "text-b-field", required_argument, NULL, 'b' },
		{ "label-field", required_argument, NULL, 'l' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "info", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct prep_opts o;
	struct tok_opts to = TOK_OPTS_DEFAULT;
	struct tokenizer *tok = NULL;
	struct chunk *chunks = NULL;
	struct out_seqs os;
	struct sent *sents = NULL;
	struct doc *docs = NULL;
	char **label_names = NULL, **ex_labels = NULL, *tmpdir = NULL, err[1024];
	const char *info_dir = NULL;
	int32_t special[SHARD_NSPECIAL];
	size_t nchunks = 0, nsents = 0, ndocs = 0, nex = 0, i, j, nfiles;
	size_t capsents = 0, capdocs = 0, capex = 0;
	uint64_t total_bytes = 0, tokens = 0;
	uint32_t nlabels = 0, nshards = 0, caplabels = 0;
	int64_t v;
	long ncpu;
	double t0 = now_s(), d;
	int ch, rc = 2, have_format = 0, have_task = 0;
	struct { char *data; size_t len; int mapped; } *files = NULL;

	memset(&o, 0, sizeof o);
	memset(&os, 0, sizeof os);
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	o.threads = ncpu < 1 ? 1 : ncpu > 64 ? 64 : (int)ncpu;
	o.short_seq_prob = 0.1;
	o.dupe = 1;
	o.seed = 12345;
	o.shard_size = PREP_DEFAULT_SHARD;
	o.text_field = "text";
	o.text_b_field = "text_b";
	o.label_field = "label";
	optind = 1;
	while ((ch = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'v': o.vocab = optarg; break;
		case 'o': o.out = optarg; break;
		case 'a': o.text_field = optarg; break;
		case 'b': o.text_b_field = optarg; break;
		case 'l': o.label_field = optarg; break;
		case 'q': o.quiet = 1; break;
		case 'i': info_dir = optarg; break;
		case 'f':
			have_format = 1;
			if (strcmp(optarg, "text") == 0)
				o.format = FMT_TEXT;
			else if (strcmp(optarg, "tsv") == 0)
				o.format = FMT_TSV;
			else if (strcmp(optarg, "jsonl") == 0)
				o.format = FMT_JSONL;
			else {
				fprintf(stderr, "cadre-train prep: --format is text, tsv or jsonl, not \"%s\"\n", optarg);
				return 2;
			}
			break;
		case 'T':
			have_task = 1;
			if (strcmp(optarg, "pretrain") == 0)
				o.task = SHARD_PRETRAIN;
			else if (strcmp(optarg, "classify") == 0)
				o.task = SHARD_CLASSIFY;
			else {
				fprintf(stderr, "cadre-train prep: --task is pretrain or classify, not \"%s\"\n", optarg);
				return 2;
			}
			break;
		case 's':
			if (opt_num("--seq-len", optarg, 8, SHARD_MAX_SEQ_LEN, &v) != 0)
				return 2;
			o.seq_len = (uint32_t)v;
			break;
		case 'j':
			if (opt_num("--threads", optarg, 1, PREP_MAX_THREADS, &v) != 0)
				return 2;
			o.threads = (int)v;
			break;
		case 'd':
			if (opt_num("--dupe-factor", optarg, 1, 1000, &v) != 0)
				return 2;
			o.dupe = (int)v;
			break;
		case 'S':
			if (opt_num("--seed", optarg, 0, INT64_MAX, &v) != 0)
				return 2;
			o.seed = (uint64_t)v;
			break;
		case 'z':
			if (opt_num("--shard-size", optarg, 1, INT64_C(1) << 32, &v) != 0)
				return 2;
			o.shard_size = (uint64_t)v;
			break;
		case 'p':
			if (str_to_double(optarg, &d) != 0 || d < 0 || d > 1) {
				fprintf(stderr, "cadre-train prep: --short-seq-prob wants a number from 0 to 1, not \"%s\"\n", optarg);
				return 2;
			}
			o.short_seq_prob = d;
			break;
		case 'h':
			prep_usage(stdout);
			return 0;
		default:
			prep_usage(stderr);
			return 2;
		}
	}
	if (info_dir != NULL)
		return prep_info(info_dir, o.vocab);
	if (o.vocab == NULL || o.out == NULL || !have_format || !have_task ||
	    o.seq_len == 0 || optind >= argc) {
		fprintf(stderr, "cadre-train prep: --vocab, --format, --task, --seq-len, --out and at least one FILE are required (see cadre-train prep --help)\n");
		return 2;
	}
	if ((o.format == FMT_TEXT && o.task != SHARD_PRETRAIN) ||
	    (o.format == FMT_TSV && o.task != SHARD_CLASSIFY)) {
		fprintf(stderr, "cadre-train prep: --format %s is for --task %s\n",
		    o.format == FMT_TEXT ? "text" : "tsv",
		    o.format == FMT_TEXT ? "pretrain" : "classify");
		return 2;
	}
	{
		struct stat st;
		size_t l = strlen(o.out);

		while (l > 1 && o.out[l - 1] == '/')
			l--;
		o.out = xstrndup(o.out, l);
		if (lstat(o.out, &st) == 0) {
			fprintf(stderr, "cadre-train prep: %s exists: remove it or choose another --out\n", o.out);
			free((char *)o.out);
			return 2;
		}
		/* Made now, so that an --out that cannot be made fails
		 * before the work. */
		xasprintf(&tmpdir, "%s.tmp-%ld", o.out, (long)getpid());
		if (mkdir(tmpdir, 0755) != 0) {
			fprintf(stderr, "cadre-train prep: cannot make %s: %s\n", tmpdir, strerror(errno));
			free(tmpdir);
			free((char *)o.out);
			return 2;
		}
	}
	if (tok_load(o.vocab, &to, &tok, err, sizeof err) != 0) {
		fprintf(stderr, "cadre-train prep: %s\n", err);
		goto out;
	}
	for (i = 0; i < SHARD_NSPECIAL; i++)
		special[i] = tok_special_id(tok, (enum tok_special)i);
	if (special[SHARD_CLS] < 0 || special[SHARD_SEP] < 0 ||
	    (o.task == SHARD_PRETRAIN && special[SHARD_MASK] < 0)) {
		fprintf(stderr, "cadre-train prep: %s: no [CLS], [SEP] or [MASK]: not a BERT vocab\n", o.vocab);
		goto out;
	}

	/* Map the files first: a missing one fails before any work. */
	nfiles = (size_t)(argc - optind);
	files = xcalloc(nfiles, sizeof *files);
	for (i = 0; i < nfiles; i++) {
		const char *name = argv[optind + (int)i];
		struct stat st;
		int fd = open(name, O_RDONLY | O_CLOEXEC);

		if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
			fprintf(stderr, "cadre-train prep: %s: %s\n", name,
			    fd < 0 ? strerror(errno) : "not a regular file");
			if (fd >= 0)
				close(fd);
			goto out;
		}
		files[i].len = (size_t)st.st_size;
		if (files[i].len > 0) {
			void *m = mmap(NULL, files[i].len, PROT_READ, MAP_PRIVATE, fd, 0);

			if (m == MAP_FAILED) {
				fprintf(stderr, "cadre-train prep: %s: mmap: %s\n", name, strerror(errno));
				close(fd);
				goto out;
			}
			files[i].data = m;
			files[i].mapped = 1;
		}
		close(fd);
		total_bytes += files[i].len;
	}
	atomic_store(&progress_bytes, 0);
	atomic_store(&progress_tokens, 0);
	for (i = 0; i < nfiles; i++) {
		size_t before = nchunks, k;

		if (run_file(&o, tok, argv[optind + (int)i], files[i].data, files[i].len,
		    &chunks, &nchunks, t0, total_bytes) != 0)
			goto out;
		/* A new document at each file and each break; the last
		 * document is never left empty but at the end. */
		if (ndocs == 0 || docs[ndocs - 1].n > 0) {
			GROW(docs, ndocs, capdocs);
			docs[ndocs].first = nsents;
			docs[ndocs].n = 0;
			ndocs++;
		}
		for (k = before; k < nchunks; k++) {
			struct chunk *c = &chunks[k];
			size_t m;

			tokens += c->tokens;
			for (m = 0; m < c->nitems; m++) {
				struct item *it = &c->items[m];

				if (it->kind == ITEM_BREAK) {
					if (docs[ndocs - 1].n == 0)
						continue;
					GROW(docs, ndocs, capdocs);
					docs[ndocs].first = nsents;
					docs[ndocs].n = 0;
					ndocs++;
				} else if (it->kind == ITEM_SENT) {
					if (it->a_len == 0)
						continue;
					GROW(sents, nsents, capsents);
					sents[nsents].ids = c->ids + it->a_off;
					sents[nsents].len = it->a_len;
					nsents++;
					docs[ndocs - 1].n++;
				} else {
					GROW(ex_labels, nex, capex);
					ex_labels[nex++] = c->labels + it->label_off;
				}
			}
		}
	}
	if (ndocs > 0 && docs[ndocs - 1].n == 0)
		ndocs--;

	if (o.task == SHARD_PRETRAIN) {
		struct span a = { 0 }, b = { 0 };
		int dupe;

		for (dupe = 0; dupe < o.dupe; dupe++)
			for (i = 0; i < ndocs; i++)
				make_pairs(&o, sents, docs, ndocs, i, (uint32_t)dupe, special,
				    &os, &a, &b);
		free(a.ids);
		free(b.ids);
	} else if (nex > 0) {
		char **sorted = xcalloc(nex, sizeof *sorted);
		size_t max1 = o.seq_len - 2, max2 = o.seq_len - 3;

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
				    SHARD_MAX_LABELS, o.label_field);
				free(sorted);
				goto out;
			}
			GROW(label_names, nlabels, caplabels);
			label_names[nlabels++] = sorted[i];
		}
		free(sorted);
		for (j = 0; j < nchunks; j++) {
			struct chunk *c = &chunks[j];
			size_t m;

			for (m = 0; m < c->nitems; m++) {
				struct item *it = &c->items[m];
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
				out_add(&os, c->ids != NULL ? c->ids + it->a_off : NULL, (uint32_t)la,
				    c->ids != NULL ? c->ids + it->b_off : NULL,
				    (uint32_t)lb, has_b, special, (int32_t)(hit - (const char **)label_names));
			}
		}
	}
	if (os.nseqs == 0) {
		fprintf(stderr, "cadre-train prep: no sequences: %s\n", o.task == SHARD_PRETRAIN ?
		    "the text has no document with a token (documents are separated by blank lines)" :
		    "the input has no example");
		goto out;
	}
	rc = write_set(&o, tok, &os, label_names, nlabels, tmpdir, &nshards);
	if (rc == 0 && !o.quiet)
		fprintf(stderr, "prep: %zu %s, %zu sequences, %" PRIu64 " tokens, %.3f s -> %s (%" PRIu32 " shard%s)\n",
		    o.task == SHARD_PRETRAIN ? ndocs : nex,
		    o.task == SHARD_PRETRAIN ? "documents" : "examples",
		    os.nseqs, tokens, now_s() - t0, o.out, nshards, nshards == 1 ? "" : "s");
out:
	if (rc != 0 && tmpdir != NULL)
		(void)fs_remove_flat_dir(tmpdir);
	free(tmpdir);
	for (i = 0; i < nchunks; i++)
		chunk_free(&chunks[i]);
	free(chunks);
	for (i = 0; files != NULL && i < (size_t)(argc - optind); i++)
		if (files[i].mapped)
			munmap(files[i].data, files[i].len);
	free(files);
	free(sents);
	free(docs);
	free(ex_labels);
	free(label_names);
	free(os.ids);
	free(os.seqs);
	free(os.offs);
	tok_free(tok);
	free((char *)o.out);
	return rc;
}
