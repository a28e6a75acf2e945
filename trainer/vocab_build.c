/* WordPiece vocabulary builder: word counts, then BPE-style merges with
 * "##" continuations (the algorithm is described in vocab_build.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "tokenizer.h"
#include "vocab_build.h"
#include "strutil.h"
#include "xmalloc.h"

/* A line of input over this is refused (the bound on one read). */
#define VB_MAX_LINE	(16u * 1024 * 1024)
/* Files smaller than this are counted by one thread. */
#define VB_MIN_SPLIT	(4u * 1024 * 1024)

/* Interned strings: id -> bytes, bytes -> id. */
struct strtab {
	char		*arena;
	size_t		 alen, acap;
	size_t		*off;		/* (n) */
	uint32_t	*len;		/* (n) */
	uint32_t	*hash;		/* (n) */
	uint32_t	 n, cap;
	uint32_t	*slots;		/* id + 1; 0 is empty */
	uint32_t	 mask;
};

struct pair {
	uint32_t	 a, b;		/* symbols */
	int64_t		 count;		/* weighted occurrences; -1 once merged */
	uint32_t	*words;		/* words it occurs in (maybe twice, maybe stale) */
	uint32_t	 nwords, wcap;
};

struct heap_ent {
	int64_t		 count;
	uint32_t	 pair;
};

struct vocab_builder {
	struct vocab_opts opts;
	struct tok_state *st;
	struct strtab	 words;
	uint64_t	*wcount;	/* (words.n) */
	uint32_t	 wcount_cap;
	uint64_t	 total;

	/* Merging. */
	struct strtab	 syms;
	uint64_t	*sfreq;		/* (syms.n) while choosing the alphabet */
	uint32_t	*wsym;		/* every word's symbols, end to end */
	size_t		*wstart;	/* (nwords) where each word's symbols begin */
	uint32_t	*wlen;		/* (nwords) how many it has now */
	uint32_t	*stamp;		/* (nwords) last merge that touched it */
	struct pair	*pairs;
	uint32_t	 npairs, pcap;
	uint32_t	*pslots;	/* pair index + 1 */
	uint32_t	 pmask;
	struct heap_ent	*heap;
	size_t		 nheap, hcap;

	uint32_t	*outsym;	/* the vocab's symbols, in id order */
	size_t		 nout;
	const char	**out;		/* their strings, once built */
	uint32_t	 alpha_seen, alpha_kept;	/* characters */
};

/* ---------------------------------------------------------------- strtab */

static void
strtab_init(struct strtab *t)
{
	memset(t, 0, sizeof(*t));
	t->mask = 1023;
	t->slots = xcalloc(t->mask + 1, sizeof(*t->slots));
}

static void
strtab_free(struct strtab *t)
{
	free(t->arena);
	free(t->off);
	free(t->len);
	free(t->hash);
	free(t->slots);
}

static const char *
strtab_str(const struct strtab *t, uint32_t id)
{
	return t->arena + t->off[id];
}

static void
strtab_grow(struct strtab *t)
{
	uint32_t i, j, mask = 2 * t->mask + 1;
	uint32_t *slots = xcalloc((size_t)mask + 1, sizeof(*slots));

	for (i = 0; i < t->n; i++) {
		for (j = t->hash[i] & mask; slots[j] != 0; j = (j + 1) & mask)
			;
		slots[j] = i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->mask = mask;
}

/* The id of s, added (NUL-terminated in the arena) when new: *created. */
static uint32_t
strtab_intern(struct strtab *t, const char *s, size_t len, int *created)
{
	uint32_t h = str_hash(s, len), i, id;

	for (i = h & t->mask; t->slots[i] != 0; i = (i + 1) & t->mask) {
		id = t->slots[i] - 1;
		if (t->hash[id] == h && t->len[id] == len &&
		    memcmp(t->arena + t->off[id], s, len) == 0) {
			*created = 0;
			return id;
		}
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 1024;
		t->off = xreallocarray(t->off, t->cap, sizeof(*t->off));
		t->len = xreallocarray(t->len, t->cap, sizeof(*t->len));
		t->hash = xreallocarray(t->hash, t->cap, sizeof(*t->hash));
	}
	while (t->alen + len + 1 > t->acap) {
		t->acap = t->acap ? 2 * t->acap : 65536;
		t->arena = xreallocarray(t->arena, t->acap, 1);
	}
	memcpy(t->arena + t->alen, s, len);
	t->arena[t->alen + len] = '\0';
	id = t->n++;
	t->off[id] = t->alen;
	t->len[id] = (uint32_t)len;
	t->hash[id] = h;
	t->alen += len + 1;
	t->slots[i] = id + 1;
	if (2 * t->n > t->mask)
		strtab_grow(t);
	*created = 1;
	return id;
}

/* -------------------------------------------------------------- counting */

struct vocab_builder *
vb_new(const struct vocab_opts *opts)
{
	struct vocab_builder *vb = xcalloc(1, sizeof(*vb));

	vb->opts = *opts;
	if (vb->opts.min_frequency == 0)
		vb->opts.min_frequency = 1;
	if (vb->opts.threads < 1)
		vb->opts.threads = 1;
	vb->st = tok_state_new();
	strtab_init(&vb->words);
	strtab_init(&vb->syms);
	return vb;
}

void
vb_free(struct vocab_builder *vb)
{
	uint32_t i;

	if (vb == NULL)
		return;
	tok_state_free(vb->st);
	strtab_free(&vb->words);
	strtab_free(&vb->syms);
	free(vb->wcount);
	free(vb->sfreq);
	free(vb->wsym);
	free(vb->wstart);
	free(vb->wlen);
	free(vb->stamp);
	for (i = 0; i < vb->npairs; i++)
		free(vb->pairs[i].words);
	free(vb->pairs);
	free(vb->pslots);
	free(vb->heap);
	free(vb->outsym);
	free(vb->out);
	free(vb);
}

static void
count_word(void *arg, const char *w, size_t len, size_t nchars)
{
	struct vocab_builder *vb = arg;
	uint32_t id;
	int created;

	if (nchars > TOK_MAX_WORD_CHARS)
		return;
	id = strtab_intern(&vb->words, w, len, &created);
	if (id >= vb->wcount_cap) {
		vb->wcount_cap = vb->wcount_cap ? 2 * vb->wcount_cap : 1024;
		vb->wcount = xreallocarray(vb->wcount, vb->wcount_cap, sizeof(*vb->wcount));
	}
	if (created)
		vb->wcount[id] = 0;
	vb->wcount[id]++;
	vb->total++;
}

void
vb_add_text(struct vocab_builder *vb, const char *text, size_t len)
{
	tok_basic(&vb->opts.tok, vb->st, text, len, count_word, vb);
}

/* Lines from a FILE through a buffer of at most VB_MAX_LINE bytes. */
struct lreader {
	FILE		*f;
	char		*buf;
	size_t		 cap, start, end;
	int		 eof;
	uint64_t	 next;		/* file offset of the next line */
};

static void
lr_init(struct lreader *lr, FILE *f, uint64_t offset)
{
	memset(lr, 0, sizeof(*lr));
	lr->f = f;
	lr->cap = 1u << 20;
	lr->buf = xmalloc(lr->cap);
	lr->next = offset;
}

/* The next line (its "\n" included when there is one): 1, 0 at the end,
 * CADRE_ERR_TOO_LARGE for a line over VB_MAX_LINE, CADRE_ERR_SYSTEM. */
static int
lr_next(struct lreader *lr, const char **line, size_t *len)
{
	for (;;) {
		char *nl = memchr(lr->buf + lr->start, '\n', lr->end - lr->start);
		size_t n;

		if (nl != NULL || (lr->eof && lr->start < lr->end)) {
			n = nl != NULL ? (size_t)(nl - lr->buf) + 1 - lr->start :
			    lr->end - lr->start;
			*line = lr->buf + lr->start;
			*len = n;
			lr->start += n;
			lr->next += n;
			return 1;
		}
		if (lr->eof)
			return 0;
		memmove(lr->buf, lr->buf + lr->start, lr->end - lr->start);
		lr->end -= lr->start;
		lr->start = 0;
		if (lr->end == lr->cap) {
			if (lr->cap >= VB_MAX_LINE)
				return CADRE_ERR_TOO_LARGE;
			lr->cap *= 2;
			lr->buf = xreallocarray(lr->buf, lr->cap, 1);
		}
		n = fread(lr->buf + lr->end, 1, lr->cap - lr->end, lr->f);
		lr->end += n;
		if (n == 0) {
			if (ferror(lr->f))
				return CADRE_ERR_SYSTEM;
			lr->eof = 1;
		}
	}
}

/*
 * Counts the lines of f that begin before byte offset stop, from where f
 * stands (offset). Errors name the line when first_line is non-zero (the
 * file is read from its start), else the byte offset.
 */
static int
count_lines(struct vocab_builder *vb, FILE *f, const char *path,
    uint64_t offset, uint64_t stop, int first_line, int progress, char *err,
    size_t errlen)
{
	struct lreader lr;
	const char *line;
	size_t len, lineno = 0;
	uint64_t shown = offset;
	int r, rc = 0;

	lr_init(&lr, f, offset);
	while (lr.next < stop) {
		uint64_t at = lr.next;

		if ((r = lr_next(&lr, &line, &len)) <= 0) {
			if (r == CADRE_ERR_TOO_LARGE && first_line)
				(void)cadre_errf(err, errlen, 0, "%s:%zu: error: a line over %u MiB (is this text?)",
				    path, lineno + 1, VB_MAX_LINE >> 20);
			else if (r == CADRE_ERR_TOO_LARGE)
				(void)cadre_errf(err, errlen, 0, "%s: error: a line over %u MiB after byte %llu (is this text?)",
				    path, VB_MAX_LINE >> 20, (unsigned long long)at);
			else if (r < 0)
				(void)cadre_errf(err, errlen, 0, "%s: error: %s", path, strerror(errno));
			rc = r;
			break;
		}
		lineno++;
		vb_add_text(vb, line, len);
		if (progress && lr.next - shown >= (16u << 20)) {
			fprintf(stderr, "\rvocab: %s: %llu MiB, %u distinct words   ", path,
			    (unsigned long long)(lr.next >> 20), vb->words.n);
			shown = lr.next;
		}
	}
	if (progress && shown > offset)
		fprintf(stderr, "\n");
	free(lr.buf);
	return rc;
}

/* Adds the words another builder counted. */
static void
absorb(struct vocab_builder *vb, const struct vocab_builder *part)
{
	uint32_t w, id;
	int created;

	for (w = 0; w < part->words.n; w++) {
		id = strtab_intern(&vb->words, strtab_str(&part->words, w),
		    part->words.len[w], &created);
		if (id >= vb->wcount_cap) {
			vb->wcount_cap = vb->wcount_cap ? 2 * vb->wcount_cap : 1024;
			vb->wcount = xreallocarray(vb->wcount, vb->wcount_cap,
			    sizeof(*vb->wcount));
		}
		if (created)
			vb->wcount[id] = 0;
		vb->wcount[id] += part->wcount[w];
	}
	vb->total += part->total;
}

struct count_job {
	struct vocab_builder *vb;
	const char	*path;
	uint64_t	 start, stop;	/* the lines that begin in [start, stop) */
	int		 rc;
	char		 err[256];
};

static void *
count_job_run(void *arg)
{
	struct count_job *j = arg;
	FILE *f = fopen(j->path, "r");
	uint64_t offset = j->start;
	int c;

	if (f == NULL) {
		(void)cadre_errf(j->err, sizeof(j->err), 0, "%s: error: %s", j->path, strerror(errno));
		j->rc = CADRE_ERR_SYSTEM;
		return NULL;
	}
	/* The first line that begins at or after start: past the first "\n"
	 * at or after start - 1. */
	if (offset > 0) {
		if (fseeko(f, (off_t)(offset - 1), SEEK_SET) != 0) {
			(void)cadre_errf(j->err, sizeof(j->err), 0, "%s: error: %s", j->path, strerror(errno));
			j->rc = CADRE_ERR_SYSTEM;
			fclose(f);
			return NULL;
		}
		offset--;
		while ((c = getc(f)) != EOF) {
			offset++;
			if (c == '\n')
				break;
		}
	}
	j->rc = count_lines(j->vb, f, j->path, offset, j->stop, 0, 0, j->err,
	    sizeof(j->err));
	fclose(f);
	return NULL;
}

/* A regular file of some size split among threads, one builder each. */
static int
add_file_threads(struct vocab_builder *vb, const char *path, uint64_t size,
    char *err, size_t errlen)
{
	int n = vb->opts.threads, i, rc = 0;
	struct count_job *jobs = xcalloc((size_t)n, sizeof(*jobs));
	pthread_t *tids = xcalloc((size_t)n, sizeof(*tids));
	int *started = xcalloc((size_t)n, sizeof(*started));
	struct vocab_opts part = vb->opts;

	part.threads = 1;
	part.progress = 0;
	for (i = 0; i < n; i++) {
		jobs[i].vb = vb_new(&part);
		jobs[i].path = path;
		jobs[i].start = size * (uint64_t)i / (uint64_t)n;
		jobs[i].stop = size * ((uint64_t)i + 1) / (uint64_t)n;
		started[i] = pthread_create(&tids[i], NULL, count_job_run, &jobs[i]) == 0;
		if (!started[i])
			count_job_run(&jobs[i]);
	}
	for (i = 0; i < n; i++) {
		if (started[i])
			pthread_join(tids[i], NULL);
		if (jobs[i].rc != 0 && rc == 0) {
			rc = jobs[i].rc;
			(void)cadre_errf(err, errlen, 0, "%s", jobs[i].err);
		}
		/* Counts are sums: the order of absorbing changes nothing
		 * that the merges look at. */
		if (rc == 0)
			absorb(vb, jobs[i].vb);
		vb_free(jobs[i].vb);
	}
	if (vb->opts.progress)
		fprintf(stderr, "vocab: %s: %llu MiB, %u distinct words\n", path,
		    (unsigned long long)(size >> 20), vb->words.n);
	free(started);
	free(tids);
	free(jobs);
	return rc;
}

int
vb_add_file(struct vocab_builder *vb, const char *path, char *err, size_t errlen)
{
	struct stat sb;
	FILE *f;
	int rc;

	if (strcmp(path, "-") == 0)
		return count_lines(vb, stdin, "stdin", 0, UINT64_MAX, 1,
		    vb->opts.progress, err, errlen);
	if ((f = fopen(path, "r")) == NULL || fstat(fileno(f), &sb) != 0) {
		(void)cadre_errf(err, errlen, 0, "%s: error: %s", path, strerror(errno));
		if (f != NULL)
			fclose(f);
		return CADRE_ERR_SYSTEM;
	}
	if (vb->opts.threads > 1 && S_ISREG(sb.st_mode) &&
	    sb.st_size >= VB_MIN_SPLIT) {
		fclose(f);
		return add_file_threads(vb, path, (uint64_t)sb.st_size, err, errlen);
	}
	rc = count_lines(vb, f, path, 0, UINT64_MAX, 1, vb->opts.progress, err,
	    errlen);
	fclose(f);
	return rc;
}

void
vb_alphabet(const struct vocab_builder *vb, uint32_t *seen, uint32_t *kept)
{
	*seen = vb->alpha_seen;
	*kept = vb->alpha_kept;
}

void
vb_word_counts(const struct vocab_builder *vb, size_t *distinct, uint64_t *total)
{
	*distinct = vb->words.n;
	*total = vb->total;
}

/* --------------------------------------------------------------- merging */

/* Byte order of two symbols. */
static int
sym_cmp(const struct vocab_builder *vb, uint32_t x, uint32_t y)
{
	uint32_t lx = vb->syms.len[x], ly = vb->syms.len[y];
	int c = memcmp(strtab_str(&vb->syms, x), strtab_str(&vb->syms, y),
	    lx < ly ? lx : ly);

	if (c != 0)
		return c;
	return lx < ly ? -1 : lx > ly;
}

/* Whether heap entry x comes before y: more frequent, then byte order. */
static int
heap_before(const struct vocab_builder *vb, const struct heap_ent *x,
    const struct heap_ent *y)
{
	const struct pair *px = &vb->pairs[x->pair], *py = &vb->pairs[y->pair];
	int c;

	if (x->count != y->count)
		return x->count > y->count;
	if ((c = sym_cmp(vb, px->a, py->a)) != 0)
		return c < 0;
	return sym_cmp(vb, px->b, py->b) < 0;
}

static void
heap_push(struct vocab_builder *vb, uint32_t pair)
{
	struct heap_ent e = { vb->pairs[pair].count, pair };
	size_t i;

	if (vb->nheap == vb->hcap) {
		vb->hcap = vb->hcap ? 2 * vb->hcap : 4096;
		vb->heap = xreallocarray(vb->heap, vb->hcap, sizeof(*vb->heap));
	}
	i = vb->nheap++;
	while (i > 0 && heap_before(vb, &e, &vb->heap[(i - 1) / 2])) {
		vb->heap[i] = vb->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	vb->heap[i] = e;
}

static struct heap_ent
heap_pop(struct vocab_builder *vb)
{
	struct heap_ent top = vb->heap[0], last = vb->heap[--vb->nheap];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < vb->nheap) {
		if (c + 1 < vb->nheap && heap_before(vb, &vb->heap[c + 1], &vb->heap[c]))
			c++;
		if (!heap_before(vb, &vb->heap[c], &last))
			break;
		vb->heap[i] = vb->heap[c];
		i = c;
	}
	if (vb->nheap > 0)
		vb->heap[i] = last;
	return top;
}

static uint32_t
pair_hash(uint32_t a, uint32_t b)
{
	uint64_t k = ((uint64_t)a << 32 | b) * 0x9E3779B97F4A7C15ull;

	return (uint32_t)(k >> 32);
}

static void
pairs_grow(struct vocab_builder *vb)
{
	uint32_t i, j, mask = vb->pmask ? 2 * vb->pmask + 1 : 65535;
	uint32_t *slots = xcalloc((size_t)mask + 1, sizeof(*slots));

	for (i = 0; i < vb->npairs; i++) {
		j = pair_hash(vb->pairs[i].a, vb->pairs[i].b) & mask;
		while (slots[j] != 0)
			j = (j + 1) & mask;
		slots[j] = i + 1;
	}
	free(vb->pslots);
	vb->pslots = slots;
	vb->pmask = mask;
}

static uint32_t
pair_get(struct vocab_builder *vb, uint32_t a, uint32_t b)
{
	uint32_t i, p;

	if (2 * (vb->npairs + 1) > vb->pmask)
		pairs_grow(vb);
	for (i = pair_hash(a, b) & vb->pmask; vb->pslots[i] != 0; i = (i + 1) & vb->pmask) {
		p = vb->pslots[i] - 1;
		if (vb->pairs[p].a == a && vb->pairs[p].b == b)
			return p;
	}
	if (vb->npairs == vb->pcap) {
		vb->pcap = vb->pcap ? 2 * vb->pcap : 65536;
		vb->pairs = xreallocarray(vb->pairs, vb->pcap, sizeof(*vb->pairs));
	}
	p = vb->npairs++;
	memset(&vb->pairs[p], 0, sizeof(vb->pairs[p]));
	vb->pairs[p].a = a;
	vb->pairs[p].b = b;
	vb->pslots[i] = p + 1;
	return p;
}

/* Adds delta occurrences of (a, b), in word w when delta > 0. A higher
 * count gets a fresh heap entry; a lower one is corrected when its stale
 * entry surfaces. */
static void
pair_add(struct vocab_builder *vb, uint32_t a, uint32_t b, int64_t delta,
    uint32_t w)
{
	uint32_t i = pair_get(vb, a, b);	/* may move vb->pairs */
	struct pair *p = &vb->pairs[i];

	if (p->count < 0)
		return;
	p->count += delta;
	if (delta > 0) {
		if (p->nwords == p->wcap) {
			p->wcap = p->wcap ? 2 * p->wcap : 4;
			p->words = xreallocarray(p->words, p->wcap, sizeof(*p->words));
		}
		p->words[p->nwords++] = w;
		heap_push(vb, (uint32_t)(p - vb->pairs));
	}
}

static void
out_add(struct vocab_builder *vb, uint32_t sym)
{
	vb->outsym[vb->nout++] = sym;
}

static const struct vocab_builder *sort_vb;	/* qsort has no argument */

static int
alpha_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	if (sort_vb->sfreq[a] != sort_vb->sfreq[b])
		return sort_vb->sfreq[a] > sort_vb->sfreq[b] ? -1 : 1;
	return sym_cmp(sort_vb, a, b);
}

/* Splits every word into character symbols and picks the alphabet. */
static void
init_symbols(struct vocab_builder *vb, uint32_t nspecial)
{
	uint32_t nw = vb->words.n, w, i, nalpha, keep, *alpha;
	size_t total = 0, pos, sfreq_cap = 1024;
	char piece[8] = "##";
	int created;
	uint8_t *dropped;

	for (w = 0; w < nw; w++)
		total += vb->words.len[w];
	vb->wsym = xreallocarray(NULL, total + 1, sizeof(*vb->wsym));
	vb->wstart = xreallocarray(NULL, nw + 1, sizeof(*vb->wstart));
	vb->wlen = xreallocarray(NULL, nw + 1, sizeof(*vb->wlen));
	vb->stamp = xcalloc(nw + 1, sizeof(*vb->stamp));
	vb->sfreq = xcalloc(1024, sizeof(*vb->sfreq));
	pos = 0;
	for (w = 0; w < nw; w++) {
		const char *s = strtab_str(&vb->words, w);
		uint32_t len = vb->words.len[w], j, cl, sym;

		vb->wstart[w] = pos;
		for (j = 0; j < len; j += cl) {
			for (cl = 1; j + cl < len && ((unsigned char)s[j + cl] & 0xc0) == 0x80; cl++)
				;
			memcpy(piece + 2, s + j, cl);
			sym = j == 0 ? strtab_intern(&vb->syms, piece + 2, cl, &created) :
			    strtab_intern(&vb->syms, piece, cl + 2, &created);
			if (sym >= sfreq_cap) {
				sfreq_cap *= 2;
				vb->sfreq = xreallocarray(vb->sfreq, sfreq_cap, sizeof(*vb->sfreq));
			}
			if (created)
				vb->sfreq[sym] = 0;
			vb->sfreq[sym] += vb->wcount[w];
			vb->wsym[pos++] = sym;
		}
		vb->wlen[w] = (uint32_t)(pos - vb->wstart[w]);
	}

	/* The alphabet: every symbol but the specials, most frequent first. */
	nalpha = 0;
	alpha = xreallocarray(NULL, vb->syms.n + 1, sizeof(*alpha));
	for (i = nspecial; i < vb->syms.n; i++)
		alpha[nalpha++] = i;
	sort_vb = vb;
	qsort(alpha, nalpha, sizeof(*alpha), alpha_cmp);
	sort_vb = NULL;
	keep = vb->opts.size > nspecial ? vb->opts.size - nspecial : 0;
	if (keep > nalpha)
		keep = nalpha;
	dropped = xcalloc(vb->syms.n + 1, 1);
	for (i = 0; i < nalpha; i++) {
		if (i < keep)
			out_add(vb, alpha[i]);
		else
			dropped[alpha[i]] = 1;
	}
	vb->alpha_seen = nalpha;
	vb->alpha_kept = keep;

	/* Pair counts over the words whose characters all made it. */
	for (w = 0; w < nw; w++) {
		uint32_t *s = vb->wsym + vb->wstart[w], j;

		for (j = 0; j < vb->wlen[w]; j++)
			if (dropped[s[j]])
				break;
		if (j < vb->wlen[w]) {
			vb->wlen[w] = 0;
			continue;
		}
		for (j = 0; j + 1 < vb->wlen[w]; j++)
			pair_add(vb, s[j], s[j + 1], (int64_t)vb->wcount[w], w);
	}
	free(dropped);
	free(alpha);
}

/* Replaces (a, b) by sym in word w, updating the neighbours' counts. */
static void
merge_word(struct vocab_builder *vb, uint32_t w, uint32_t a, uint32_t b,
    uint32_t sym)
{
	uint32_t *s = vb->wsym + vb->wstart[w], n = vb->wlen[w], i = 0, o = 0;
	int64_t c = (int64_t)vb->wcount[w];

	while (i < n) {
		if (i + 1 < n && s[i] == a && s[i + 1] == b) {
			if (o > 0) {
				pair_add(vb, s[o - 1], a, -c, w);
				pair_add(vb, s[o - 1], sym, c, w);
			}
			if (i + 2 < n) {
				pair_add(vb, b, s[i + 2], -c, w);
				pair_add(vb, sym, s[i + 2], c, w);
			}
			s[o++] = sym;
			i += 2;
		} else {
			s[o++] = s[i++];
		}
	}
	vb->wlen[w] = o;
}

size_t
vb_build(struct vocab_builder *vb, const char *const **tokens)
{
	uint32_t nspecial = 0, i, merges = 0;
	char buf[2 * TOK_VOCAB_MAX_TOKEN];
	int created, tty = vb->opts.progress;

	if (vb->out != NULL)
		goto done;
	vb->outsym = xreallocarray(NULL, (size_t)vb->opts.size + 1, sizeof(*vb->outsym));
	/* The specials are symbols 0..4 so that nothing else can take
	 * their strings. */
	for (i = 0; i < TOK_NSPECIAL; i++) {
		const char *name = tok_special_name((enum tok_special)i);
		uint32_t sym = strtab_intern(&vb->syms, name, strlen(name), &created);

		if (nspecial < vb->opts.size)
			out_add(vb, sym);
		nspecial++;
	}
	init_symbols(vb, nspecial);

	while (vb->nout < vb->opts.size && vb->nheap > 0) {
		struct heap_ent e = heap_pop(vb);
		struct pair *p = &vb->pairs[e.pair];
		uint32_t a, b, sym, alen, blen, *words, nwords, j;

		if (p->count != e.count) {	/* stale */
			if (p->count > 0)
				heap_push(vb, e.pair);
			continue;
		}
		if ((uint64_t)e.count < vb->opts.min_frequency || e.count <= 0)
			break;
		a = p->a;
		b = p->b;
		alen = vb->syms.len[a];
		blen = vb->syms.len[b] - 2;	/* b is a continuation: "##..." */
		if (alen + blen > TOK_VOCAB_MAX_TOKEN) {
			p->count = -1;
			continue;
		}
		memcpy(buf, strtab_str(&vb->syms, a), alen);
		memcpy(buf + alen, strtab_str(&vb->syms, b) + 2, blen);
		sym = strtab_intern(&vb->syms, buf, alen + blen, &created);
		if (created)
			out_add(vb, sym);
		merges++;
		p->count = -1;	/* pair_add leaves it alone from now on */
		words = p->words;
		nwords = p->nwords;
		p->words = NULL;
		p->nwords = p->wcap = 0;
		for (j = 0; j < nwords; j++) {
			if (vb->stamp[words[j]] == merges)
				continue;
			vb->stamp[words[j]] = merges;
			merge_word(vb, words[j], a, b, sym);
		}
		free(words);
		if (tty && merges % 500 == 0)
			fprintf(stderr, "\rvocab: %zu of %u tokens   ", vb->nout, vb->opts.size);
	}
	if (tty)
		fprintf(stderr, "\rvocab: %zu of %u tokens, %u merges\n", vb->nout,
		    vb->opts.size, merges);
	/* Pointers only now: the arena moves while symbols are added. */
	vb->out = xreallocarray(NULL, vb->nout + 1, sizeof(*vb->out));
	for (i = 0; i < vb->nout; i++)
		vb->out[i] = strtab_str(&vb->syms, vb->outsym[i]);
done:
	*tokens = vb->out;
	return vb->nout;
}
