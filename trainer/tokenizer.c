/* BERT's basic tokenizer and WordPiece over a vocab.txt (see tokenizer.h
 * and docs/tokenizer.md). The vocab is read-only once loaded; each thread
 * brings its own struct tok_state. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "buf.h"
#include "error.h"
#include "sha256.h"
#include "strutil.h"
#include "tokenizer.h"
#include "xmalloc.h"

static const char *const special_names[TOK_NSPECIAL] = {
	"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
};

struct tokenizer {
	struct tok_opts	 opts;
	char		*arena;		/* the file, each "\n" turned into NUL */
	uint32_t	 n;		/* tokens */
	uint32_t	*off;		/* (n) offset of each token in arena */
	uint32_t	*len;		/* (n) its length in bytes */
	uint64_t	*slots;		/* hash << 32 | (id + 1); 0 is empty */
	uint32_t	 mask;		/* slots - 1, a power of two minus one */
	uint32_t	 max_len;	/* longest token in bytes */
	int32_t		 special[TOK_NSPECIAL];
	uint8_t		 hash[SHA256_DIGEST_LEN];
};

struct tok_state {
	char		*buf;		/* 2 bytes of room for "##", then the word */
	size_t		 cap;
	size_t		 wlen;		/* bytes in the current word */
	size_t		 wchars;	/* code points in it */
	int32_t		*ids;
	size_t		 nids, idcap;
};

const char *
tok_special_name(enum tok_special s)
{
	return (unsigned)s < TOK_NSPECIAL ? special_names[s] : "";
}

int32_t
tok_lookup(const struct tokenizer *t, const char *s, size_t len)
{
	uint32_t h = str_hash(s, len), i = h & t->mask;
	uint64_t slot;

	while ((slot = t->slots[i]) != 0) {
		if ((uint32_t)(slot >> 32) == h) {
			uint32_t id = (uint32_t)slot - 1;

			if (t->len[id] == len &&
			    memcmp(t->arena + t->off[id], s, len) == 0)
				return (int32_t)id;
		}
		i = (i + 1) & t->mask;
	}
	return -1;
}

/* Inserts id unless its token is there already: then returns that id. */
static int32_t
insert(struct tokenizer *t, uint32_t id)
{
	const char *s = t->arena + t->off[id];
	uint32_t len = t->len[id], h = str_hash(s, len), i = h & t->mask;
	uint64_t slot;

	while ((slot = t->slots[i]) != 0) {
		uint32_t other = (uint32_t)slot - 1;

		if ((uint32_t)(slot >> 32) == h && t->len[other] == len &&
		    memcmp(t->arena + t->off[other], s, len) == 0)
			return (int32_t)other;
		i = (i + 1) & t->mask;
	}
	t->slots[i] = (uint64_t)h << 32 | (id + 1);
	return -1;
}

/* Code points in s[0..n) of valid UTF-8. */
static size_t
count_chars(const char *s, size_t n)
{
	size_t i, c = 0;

	for (i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			c++;
	return c;
}

int
tok_load_mem(const char *name, const char *data, size_t len,
    const struct tok_opts *opts, struct tokenizer **out, char *err,
    size_t errlen)
{
	static const struct tok_opts defaults = TOK_OPTS_DEFAULT;
	struct tokenizer *t = NULL;
	size_t pos, lines, i, slots;
	uint32_t line;
	int rc = CADRE_ERR_PARSE;

	*out = NULL;
	if (len > TOK_VOCAB_MAX_FILE) {
		(void)cadre_errf(err, errlen, 0, "%s: error: vocab file of %zu bytes, over the bound of %u MiB",
		    name, len, TOK_VOCAB_MAX_FILE >> 20);
		return CADRE_ERR_TOO_LARGE;
	}
	lines = 0;
	for (pos = 0; pos < len; pos++)
		if (data[pos] == '\n')
			lines++;
	if (len > 0 && data[len - 1] != '\n')
		lines++;
	if (lines > TOK_VOCAB_MAX_TOKENS) {
		(void)cadre_errf(err, errlen, 0, "%s:%u: error: more than %u tokens in a vocab",
		    name, TOK_VOCAB_MAX_TOKENS + 1, TOK_VOCAB_MAX_TOKENS);
		return CADRE_ERR_TOO_LARGE;
	}

	t = xcalloc(1, sizeof(*t));
	t->opts = opts != NULL ? *opts : defaults;
	sha256(data, len, t->hash);
	t->arena = xmalloc(len + 1);
	memcpy(t->arena, data, len);
	t->arena[len] = '\0';
	t->off = xreallocarray(NULL, lines + 1, sizeof(*t->off));
	t->len = xreallocarray(NULL, lines + 1, sizeof(*t->len));
	for (slots = 16; slots < 2 * lines; slots *= 2)
		;
	t->slots = xcalloc(slots, sizeof(*t->slots));
	t->mask = (uint32_t)(slots - 1);

	for (pos = 0, line = 1; pos < len; line++) {
		char *s = t->arena + pos, *nl;
		size_t n, bad;
		int32_t first;

		nl = memchr(s, '\n', len - pos);
		n = nl != NULL ? (size_t)(nl - s) : len - pos;
		if (n == 0) {
			(void)cadre_errf(err, errlen, 0, "%s:%u: error: empty line (a vocab has one token per line)",
			    name, line);
			goto out;
		}
		if (n > TOK_VOCAB_MAX_TOKEN) {
			(void)cadre_errf(err, errlen, 0, "%s:%u: error: token of %zu bytes, over the bound of %u",
			    name, line, n, TOK_VOCAB_MAX_TOKEN);
			rc = CADRE_ERR_TOO_LARGE;
			goto out;
		}
		if (!str_valid_utf8(s, n, &bad)) {
			(void)cadre_errf(err, errlen, 0, "%s:%u:%zu: error: invalid UTF-8 (byte 0x%02x)",
			    name, line, count_chars(s, bad) + 1, (unsigned char)s[bad]);
			goto out;
		}
		for (i = 0; i < n; i++) {
			if (s[i] == '\0' || s[i] == '\r') {
				(void)cadre_errf(err, errlen, 0, "%s:%u:%zu: error: %s in a token%s",
				    name, line, count_chars(s, i) + 1,
				    s[i] == '\0' ? "NUL byte" : "carriage return",
				    s[i] == '\0' ? "" : " (DOS line endings? convert with dos2unix)");
				goto out;
			}
		}
		s[n] = '\0';
		t->off[t->n] = (uint32_t)pos;
		t->len[t->n] = (uint32_t)n;
		if ((first = insert(t, t->n)) >= 0) {
			(void)cadre_errf(err, errlen, 0, "%s:%u: error: duplicate token \"%s\" (first on line %d)",
			    name, line, s, first + 1);
			goto out;
		}
		if (n > t->max_len)
			t->max_len = (uint32_t)n;
		t->n++;
		pos += n + 1;
	}
	for (i = 0; i < TOK_NSPECIAL; i++)
		t->special[i] = tok_lookup(t, special_names[i], strlen(special_names[i]));
	if (t->special[TOK_UNK] < 0) {
		(void)cadre_errf(err, errlen, 0, "%s: error: no [UNK] token in the vocab", name);
		goto out;
	}
	*out = t;
	t = NULL;
	rc = 0;
out:
	tok_free(t);
	return rc;
}

int
tok_load(const char *path, const struct tok_opts *opts,
    struct tokenizer **out, char *err, size_t errlen)
{
	struct cbuf b;
	int rc;

	*out = NULL;
	cbuf_init(&b, TOK_VOCAB_MAX_FILE);
	rc = cbuf_read_file(&b, path);
	if (rc == CADRE_ERR_TOO_LARGE)
		(void)cadre_errf(err, errlen, 0, "%s: error: vocab file over the bound of %u MiB",
		    path, TOK_VOCAB_MAX_FILE >> 20);
	else if (rc != 0)
		(void)cadre_errf(err, errlen, 0, "%s: error: %s", path, strerror(errno));
	else
		rc = tok_load_mem(path, b.data != NULL ? b.data : "", b.len,
		    opts, out, err, errlen);
	cbuf_free(&b);
	return rc;
}

void
tok_free(struct tokenizer *t)
{
	if (t == NULL)
		return;
	free(t->arena);
	free(t->off);
	free(t->len);
	free(t->slots);
	free(t);
}

uint32_t
tok_vocab_size(const struct tokenizer *t)
{
	return t->n;
}

const uint8_t *
tok_vocab_hash(const struct tokenizer *t)
{
	return t->hash;
}

const char *
tok_token(const struct tokenizer *t, uint32_t id)
{
	return id < t->n ? t->arena + t->off[id] : NULL;
}

int32_t
tok_special_id(const struct tokenizer *t, enum tok_special s)
{
	return (unsigned)s < TOK_NSPECIAL ? t->special[s] : -1;
}

struct tok_state *
tok_state_new(void)
{
	struct tok_state *st = xcalloc(1, sizeof(*st));

	st->cap = 256;
	st->buf = xmalloc(st->cap);
	return st;
}

void
tok_state_free(struct tok_state *st)
{
	if (st == NULL)
		return;
	free(st->buf);
	free(st->ids);
	free(st);
}

/* ------------------------------------------------------------ characters */

/* Classes of ASCII bytes, as BERT's: whitespace, dropped controls,
 * punctuation (every non-alphanumeric printable), the rest. */
enum { C_OTHER, C_SPACE, C_DROP, C_PUNCT };

static int
ascii_class(unsigned c)
{
	if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
		return C_SPACE;
	if (c < 32 || c == 127)
		return C_DROP;
	if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) ||
	    (c >= 91 && c <= 96) || (c >= 123 && c <= 126))
		return C_PUNCT;
	return C_OTHER;
}

/* BERT's _is_chinese_char: the CJK Unified Ideographs blocks. */
static int
is_cjk(int32_t cp)
{
	return (cp >= 0x4E00 && cp <= 0x9FFF) ||
	    (cp >= 0x3400 && cp <= 0x4DBF) ||
	    (cp >= 0x20000 && cp <= 0x2A6DF) ||
	    (cp >= 0x2A700 && cp <= 0x2B73F) ||
	    (cp >= 0x2B740 && cp <= 0x2B81F) ||
	    (cp >= 0x2B820 && cp <= 0x2CEAF) ||
	    (cp >= 0xF900 && cp <= 0xFAFF) ||
	    (cp >= 0x2F800 && cp <= 0x2FA1F);
}

static int
is_punct_cat(int cat)
{
	return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

/*
 * Decodes one code point of strict UTF-8 (no overlongs, no surrogates, at
 * most U+10FFFF) at s[0..n): its length, or 0 for an invalid byte, which
 * the caller skips alone (every invalid sequence disappears, as BERT drops
 * the U+FFFD a decoder puts there).
 */
static size_t
decode(const unsigned char *s, size_t n, int32_t *cp)
{
	unsigned c = s[0];
	int32_t v, min;
	size_t len, i;

	if (c < 0xc2 || c > 0xf4)
		return 0;
	if (c < 0xe0) {
		len = 2; v = c & 0x1f; min = 0x80;
	} else if (c < 0xf0) {
		len = 3; v = c & 0x0f; min = 0x800;
	} else {
		len = 4; v = c & 0x07; min = 0x10000;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return 0;
	*cp = v;
	return len;
}

static size_t
encode(int32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* --------------------------------------------------------------- words */

/* Where the basic tokenizer's words go: WordPiece, or a callback. */
struct sink {
	const struct tokenizer *t;	/* WordPiece when non-NULL */
	tok_word_fn	 fn;
	void		*arg;
};

static void
push_id(struct tok_state *st, int32_t id)
{
	if (st->nids == st->idcap) {
		st->idcap = st->idcap ? 2 * st->idcap : 256;
		st->ids = xreallocarray(st->ids, st->idcap, sizeof(*st->ids));
	}
	st->ids[st->nids++] = id;
}

/* Makes room for n more bytes in the current word. */
static char *
word_room(struct tok_state *st, size_t n)
{
	if (2 + st->wlen + n > st->cap) {
		while (2 + st->wlen + n > st->cap)
			st->cap *= 2;
		st->buf = xreallocarray(st->buf, st->cap, 1);
	}
	return st->buf + 2 + st->wlen;
}

/*
 * Greedy longest-match-first WordPiece of the current word. A continuation
 * piece is looked up as "##" + piece without copying: the two bytes before
 * it, already consumed, are overwritten with "##" (buf keeps two spare
 * bytes in front of the word for the piece at offset 1).
 */
static void
wordpiece(const struct tokenizer *t, struct tok_state *st)
{
	char *w = st->buf + 2;
	size_t n = st->wlen, start = 0, end, base = st->nids;
	int32_t id;

	if (st->wchars > TOK_MAX_WORD_CHARS) {
		push_id(st, t->special[TOK_UNK]);
		return;
	}
	while (start < n) {
		size_t room = start == 0 ? t->max_len :
		    (t->max_len > 2 ? t->max_len - 2 : 0);

		end = n - start > room ? start + room : n;
		while (end > start && end < n && ((unsigned char)w[end] & 0xc0) == 0x80)
			end--;
		id = -1;
		/* w + start - 2 is st->buf + start: indexing from buf keeps
		 * the arithmetic unsigned and in range when start is 1. */
		if (start > 0) {
			st->buf[start] = '#';
			st->buf[start + 1] = '#';
		}
		while (end > start) {
			if (start == 0)
				id = tok_lookup(t, w, end);
			else
				id = tok_lookup(t, st->buf + start, end - start + 2);
			if (id >= 0)
				break;
			end--;
			while (end > start && ((unsigned char)w[end] & 0xc0) == 0x80)
				end--;
		}
		if (id < 0) {
			st->nids = base;
			push_id(st, t->special[TOK_UNK]);
			return;
		}
		push_id(st, id);
		start = end;
	}
}

static void
flush(struct tok_state *st, const struct sink *k)
{
	if (st->wlen == 0)
		return;
	if (k->t != NULL)
		wordpiece(k->t, st);
	else
		k->fn(k->arg, st->buf + 2, st->wlen, st->wchars);
	st->wlen = 0;
	st->wchars = 0;
}

static void
add_cp(struct tok_state *st, int32_t cp)
{
	char *p = word_room(st, 4);

	st->wlen += encode(cp, p);
	st->wchars++;
}

/* A word of one code point (punctuation, a CJK character). */
static void
single(struct tok_state *st, const struct sink *k, int32_t cp)
{
	flush(st, k);
	add_cp(st, cp);
	flush(st, k);
}

/* A special token written literally in the text ("[SEP]"), kept whole as
 * Hugging Face's tokenizers keep it: its length, or 0. */
static size_t
special_at(const struct tokenizer *t, const char *s, size_t n)
{
	int i;

	for (i = 0; i < TOK_NSPECIAL; i++) {
		size_t l = strlen(special_names[i]);

		if (t->special[i] >= 0 && l <= n && memcmp(s, special_names[i], l) == 0)
			return l;
	}
	return 0;
}

/* One non-ASCII code point through BERT's cleaning, CJK split, lower-case,
 * NFD with Mn dropped, and punctuation split. */
static void
non_ascii(struct tok_state *st, const struct sink *k, const struct tok_opts *o,
    int32_t cp)
{
	utf8proc_int32_t dec[32];
	utf8proc_ssize_t nd, i;
	int cat, last = 0;

	if (cp == 0xFFFD)
		return;
	cat = utf8proc_category(cp);
	switch (cat) {
	case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF:
	case UTF8PROC_CATEGORY_CS: case UTF8PROC_CATEGORY_CO:
	case UTF8PROC_CATEGORY_CN:
		return;
	case UTF8PROC_CATEGORY_ZS:
	case UTF8PROC_CATEGORY_ZL:	/* not BERT's whitespace, but Python's */
	case UTF8PROC_CATEGORY_ZP:	/* str.split() splits there */
		flush(st, k);
		return;
	}
	if (is_cjk(cp)) {
		/* The compatibility ideographs (U+F900..) decompose to the
		 * unified ones, as BERT's NFC step maps them. */
		if (o->lower_case && utf8proc_decompose_char(cp, dec, 32,
		    UTF8PROC_DECOMPOSE, &last) == 1)
			cp = dec[0];
		single(st, k, cp);
		return;
	}
	if (!o->lower_case) {
		if (is_punct_cat(cat))
			single(st, k, cp);
		else
			add_cp(st, cp);
		return;
	}
	nd = utf8proc_decompose_char(utf8proc_tolower(cp), dec, 32,
	    UTF8PROC_DECOMPOSE, &last);
	if (nd < 0 || nd > 32)
		return;
	for (i = 0; i < nd; i++) {
		int c = dec[i] < 0x80 ? -1 : (int)utf8proc_category(dec[i]);

		if (dec[i] < 0x80) {
			if (ascii_class((unsigned)dec[i]) == C_PUNCT)
				single(st, k, dec[i]);
			else
				add_cp(st, dec[i]);
		} else if (c == UTF8PROC_CATEGORY_MN) {
			continue;
		} else if (is_punct_cat(c)) {
			single(st, k, dec[i]);
		} else {
			add_cp(st, dec[i]);
		}
	}
}

static void
basic(const struct tok_opts *o, struct tok_state *st, const struct sink *k,
    const char *text, size_t len)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t pos = 0, n;
	int32_t cp;

	st->wlen = 0;
	st->wchars = 0;
	while (pos < len) {
		unsigned c = s[pos];

		if (c < 0x80) {
			switch (ascii_class(c)) {
			case C_SPACE:
				flush(st, k);
				break;
			case C_DROP:
				break;
			case C_PUNCT:
				if (c == '[' && k->t != NULL &&
				    (n = special_at(k->t, text + pos, len - pos)) > 0) {
					flush(st, k);
					memcpy(word_room(st, n), text + pos, n);
					st->wlen = n;
					st->wchars = n;
					flush(st, k);
					pos += n;
					continue;
				}
				single(st, k, (int32_t)c);
				break;
			default:
				if (o->lower_case && c >= 'A' && c <= 'Z')
					c += 'a' - 'A';
				*word_room(st, 1) = (char)c;
				st->wlen++;
				st->wchars++;
			}
			pos++;
			continue;
		}
		n = decode(s + pos, len - pos, &cp);
		if (n == 0) {
			pos++;
			continue;
		}
		pos += n;
		non_ascii(st, k, o, cp);
	}
	flush(st, k);
}

size_t
tok_encode(const struct tokenizer *t, struct tok_state *st, const char *text,
    size_t len, const int32_t **ids)
{
	struct sink k = { t, NULL, NULL };

	st->nids = 0;
	basic(&t->opts, st, &k, text, len);
	*ids = st->ids;
	return st->nids;
}

void
tok_basic(const struct tok_opts *opts, struct tok_state *st, const char *text,
    size_t len, tok_word_fn fn, void *arg)
{
	struct sink k = { NULL, fn, arg };

	basic(opts, st, &k, text, len);
}
