/* The tokenizer on BERT's cases (accents, CJK, punctuation, long words,
 * control characters, empty input, invalid UTF-8, "##" pieces, unknown
 * characters), bad vocab files with their exact messages, and the vocab
 * builder on a small text. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "sha256.h"
#include "tokenizer.h"
#include "vocab_build.h"
#include "xmalloc.h"
#include "expect.h"


static const char vocab_txt[] =
	"[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"
	"hello\nworld\nun\n##aff\n##able\n,\n.\n!\n$\n"
	"\xe4\xb8\xad\n"	/* 中 */
	"\xe5\x9b\xbd\n"	/* 国 */
	"a\n##a\nb\n##b\ncafe\nnaive\n##s\n"
	"\xce\xb3\xce\xb5\xce\xb9\xce\xb1\n"	/* γεια */
	"Hello\n";

/* Tokens of text joined by spaces, as `tokenize --tokens` prints them. */
static char *
tokens_of(const struct tokenizer *t, struct tok_state *st, const char *text,
    size_t len)
{
	struct cbuf b;
	const int32_t *ids;
	size_t n, i;

	cbuf_init(&b, 1 << 20);
	n = tok_encode(t, st, text, len, &ids);
	for (i = 0; i < n; i++) {
		if (i > 0)
			cbuf_addc(&b, ' ');
		cbuf_adds(&b, tok_token(t, (uint32_t)ids[i]));
	}
	return cbuf_detach(&b, NULL);
}

static void
check_len(const struct tokenizer *t, struct tok_state *st, const char *text,
    size_t len, const char *want, int line)
{
	char *got = tokens_of(t, st, text, len);

	if (strcmp(got, want) != 0) {
		printf("FAIL %s:%d: tokens \"%s\", want \"%s\"\n", __FILE__, line, got, want);
		expect_failures++;
	}
	free(got);
}

#define CHECK(t, st, text, want) check_len(t, st, text, strlen(text), want, __LINE__)
#define CHECKN(t, st, text, want) check_len(t, st, text, sizeof(text) - 1, want, __LINE__)

static void
test_vectors(void)
{
	struct tok_opts cased = { 0 };
	struct tokenizer *t = NULL, *tc = NULL;
	struct tok_state *st = tok_state_new();
	char err[256], *longw;
	const int32_t *ids;

	EXPECT(tok_load_mem("v.txt", vocab_txt, sizeof(vocab_txt) - 1, NULL, &t,
	    err, sizeof(err)) == 0, "load: %s", err);
	EXPECT(tok_load_mem("v.txt", vocab_txt, sizeof(vocab_txt) - 1, &cased, &tc,
	    err, sizeof(err)) == 0, "load cased: %s", err);
	if (t == NULL || tc == NULL)
		goto out;
	EXPECT(tok_vocab_size(t) == 25, "size %u", tok_vocab_size(t));
	EXPECT(tok_special_id(t, TOK_UNK) == 1 && tok_special_id(t, TOK_MASK) == 4,
	    "special ids");
	EXPECT(tok_lookup(t, "##aff", 5) == 8, "lookup ##aff");
	EXPECT(tok_lookup(t, "aff", 3) == -1, "lookup aff");

	/* Accents and case: precomposed, decomposed, upper case. */
	CHECK(t, st, "H\xc3\xa9llo, World!", "hello , world !");
	CHECK(t, st, "he\xcc\x81llo", "hello");
	CHECK(t, st, "CAF\xc3\x89 Na\xc3\xafve", "cafe naive");
	CHECK(t, st, "\xce\x93\xce\xb5\xce\xb9\xce\xac", "\xce\xb3\xce\xb5\xce\xb9\xce\xb1");
	/* Cased: no lower-casing, no accent stripping. */
	CHECK(tc, st, "Hello hello H\xc3\xa9llo", "Hello hello [UNK]");
	/* CJK characters are words of their own, even inside other text. */
	CHECK(t, st, "\xe4\xb8\xad\xe5\x9b\xbd", "\xe4\xb8\xad \xe5\x9b\xbd");
	CHECK(t, st, "a\xe4\xb8\xad" "b", "a \xe4\xb8\xad b");
	/* Punctuation: ASCII (including symbols like $) and Unicode P*. */
	CHECK(t, st, "hello!!world.", "hello ! ! world .");
	CHECK(t, st, "$a,b", "$ a , b");
	CHECK(t, st, "\xc2\xabhello\xc2\xbb", "[UNK] hello [UNK]");	/* «hello» */
	/* WordPiece: "##" continuations, greedy longest match. */
	CHECK(t, st, "unaffable", "un ##aff ##able");
	CHECK(t, st, "UnAffAble hellos", "un ##aff ##able hello ##s");
	CHECK(t, st, "ab ba", "a ##b b ##a");
	/* Unknown characters and unmatched words: [UNK] for the whole word. */
	CHECK(t, st, "hello\xe2\x98\x83", "[UNK]");	/* snowman: So, not punctuation */
	CHECK(t, st, "\xe2\x98\x83 hello", "[UNK] hello");
	CHECK(t, st, "unaffablex", "[UNK]");
	/* Control characters: dropped; tab, CR, LF and Zs are spaces;
	 * U+200B (Cf) is dropped, U+00A0 and U+3000 split. */
	CHECK(t, st, "hel\x01lo\x7f", "hello");
	CHECKN(t, st, "hello\x00world", "[UNK]");
	CHECK(t, st, "\thello\r\nworld\x0b", "hello world");
	CHECK(t, st, "hello\xe2\x80\x8bworld", "[UNK]");
	CHECK(t, st, "hello\xc2\xa0world\xe3\x80\x80hello", "hello world hello");
	CHECK(t, st, "hello\xe2\x80\xa8world", "hello world");	/* U+2028 */
	CHECK(t, st, "hel\xef\xbf\xbdlo", "hello");	/* U+FFFD dropped */
	/* Empty input and whitespace only. */
	EXPECT(tok_encode(t, st, "", 0, &ids) == 0, "empty input");
	EXPECT(tok_encode(t, st, " \t\r\n\xc2\xa0", 6, &ids) == 0, "whitespace only");
	/* Invalid UTF-8 is dropped without splitting the word: a stray byte,
	 * a truncated sequence, an overlong, a surrogate, over U+10FFFF. */
	CHECK(t, st, "hel\xfflo", "hello");
	CHECK(t, st, "hello\xc3", "hello");
	CHECK(t, st, "\xc0\xafhello", "hello");
	CHECK(t, st, "hel\xed\xa0\x80lo", "hello");
	CHECK(t, st, "hel\xf4\x90\x80\x80lo", "hello");
	CHECK(t, st, "\xe4\xb8", "");
	/* Special tokens written in the text are kept whole. */
	CHECK(t, st, "[CLS] hello[SEP]world [MASK]", "[CLS] hello [SEP] world [MASK]");
	CHECK(t, st, "[cls]", "[UNK] [UNK] [UNK]");
	/* Words of 100 code points are split; over 100 are [UNK]. */
	longw = xmalloc(202);
	memset(longw, 'a', 101);
	longw[100] = '\0';
	EXPECT(tok_encode(t, st, longw, 100, &ids) == 100, "100 a's: 100 pieces");
	longw[100] = 'a';
	longw[101] = '\0';
	CHECK(t, st, longw, "[UNK]");
	/* Counted in code points, not bytes: 60 "é" are 120 bytes. */
	for (int i = 0; i < 60; i++)
		memcpy(longw + 2 * i, "\xc3\xa9", 2);
	EXPECT(tok_encode(t, st, longw, 120, &ids) == 1 && ids[0] == 1,
	    "60 e-acute: [UNK] (no 'e' in the vocab)");
	free(longw);
out:
	tok_free(t);
	tok_free(tc);
	tok_state_free(st);
}

struct bad_case {
	const char	*data;
	size_t		 len;
	int		 rc;
	const char	*msg;
};

static void
test_bad_vocabs(void)
{
	static const char long_tok_head[] = "[UNK]\n";
	static const struct bad_case cases[] = {
		{ "[UNK]\na\nb\na\n", 12, CADRE_ERR_PARSE,
		  "v.txt:4: error: duplicate token \"a\" (first on line 2)" },
		{ "[UNK]\nab\xff\n", 10, CADRE_ERR_PARSE,
		  "v.txt:2:3: error: invalid UTF-8 (byte 0xff)" },
		{ "[UNK]\n\xc3\xa9\xed\xa0\x80", 11, CADRE_ERR_PARSE,
		  "v.txt:2:2: error: invalid UTF-8 (byte 0xed)" },
		{ "[UNK]\n\nb\n", 9, CADRE_ERR_PARSE,
		  "v.txt:2: error: empty line (a vocab has one token per line)" },
		{ "a\nb", 3, CADRE_ERR_PARSE,
		  "v.txt: error: no [UNK] token in the vocab" },
		{ "[UNK]\r\na\r\n", 10, CADRE_ERR_PARSE,
		  "v.txt:1:6: error: carriage return in a token (DOS line endings? convert with dos2unix)" },
		{ "[UNK]\na\0b\n", 10, CADRE_ERR_PARSE,
		  "v.txt:2:2: error: NUL byte in a token" },
		{ "", 0, CADRE_ERR_PARSE,
		  "v.txt: error: no [UNK] token in the vocab" },
	};
	struct tokenizer *t;
	char err[256], *big;
	size_t i, n;
	int rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		rc = tok_load_mem("v.txt", cases[i].data, cases[i].len, NULL, &t,
		    err, sizeof(err));
		EXPECT(rc == cases[i].rc && t == NULL, "case %zu: rc %d", i, rc);
		EXPECT(strcmp(err, cases[i].msg) == 0, "case %zu: \"%s\", want \"%s\"",
		    i, err, cases[i].msg);
	}

	/* A token over 1024 bytes; exactly 1024 is fine. */
	n = sizeof(long_tok_head) - 1;
	big = xmalloc(n + 1026);
	memcpy(big, long_tok_head, n);
	memset(big + n, 'x', 1025);
	rc = tok_load_mem("v.txt", big, n + 1025, NULL, &t, err, sizeof(err));
	EXPECT(rc == CADRE_ERR_TOO_LARGE && strcmp(err,
	    "v.txt:2: error: token of 1025 bytes, over the bound of 1024") == 0,
	    "long token: %d \"%s\"", rc, err);
	rc = tok_load_mem("v.txt", big, n + 1024, NULL, &t, err, sizeof(err));
	EXPECT(rc == 0 && t != NULL && tok_vocab_size(t) == 2, "1024-byte token: %s", err);
	tok_free(t);
	free(big);

	/* More than 2^24 lines, and a file over 64 MiB. */
	n = TOK_VOCAB_MAX_TOKENS + 1;
	big = xmalloc(TOK_VOCAB_MAX_FILE + 1);
	memset(big, '\n', n);
	rc = tok_load_mem("v.txt", big, n, NULL, &t, err, sizeof(err));
	EXPECT(rc == CADRE_ERR_TOO_LARGE && strcmp(err,
	    "v.txt:16777217: error: more than 16777216 tokens in a vocab") == 0,
	    "too many tokens: %d \"%s\"", rc, err);
	memset(big, 'x', TOK_VOCAB_MAX_FILE + 1);
	rc = tok_load_mem("v.txt", big, TOK_VOCAB_MAX_FILE + 1, NULL, &t, err, sizeof(err));
	EXPECT(rc == CADRE_ERR_TOO_LARGE && strcmp(err,
	    "v.txt: error: vocab file of 67108865 bytes, over the bound of 64 MiB") == 0,
	    "too large: %d \"%s\"", rc, err);
	free(big);

	rc = tok_load("/nonexistent/vocab.txt", NULL, &t, err, sizeof(err));
	EXPECT(rc == CADRE_ERR_SYSTEM && t == NULL && strcmp(err,
	    "/nonexistent/vocab.txt: error: No such file or directory") == 0,
	    "missing file: %d \"%s\"", rc, err);
}

static void
test_hash_and_file(void)
{
	char dir[4096], path[4200], err[256];
	uint8_t want[SHA256_DIGEST_LEN];
	struct tokenizer *t = NULL;
	FILE *f;

	if (expect_mkdtemp(dir, sizeof dir, "test_tokenizer") != 0)
		return;
	snprintf(path, sizeof(path), "%s/vocab.txt", dir);
	f = fopen(path, "w");
	fwrite(vocab_txt, 1, sizeof(vocab_txt) - 1, f);
	fclose(f);
	sha256(vocab_txt, sizeof(vocab_txt) - 1, want);
	EXPECT(tok_load(path, NULL, &t, err, sizeof(err)) == 0, "load file: %s", err);
	if (t != NULL)
		EXPECT(memcmp(tok_vocab_hash(t), want, sizeof(want)) == 0,
		    "vocab hash is the file's SHA-256");
	tok_free(t);
	expect_rmtree(dir);
}

static void
test_builder(void)
{
	static const char text[] =
	    "the cat sat on the mat. the cats sat!\n"
	    "Th\xc3\xa9 mat, the hat; that cat \xe4\xb8\xad\xe6\x96\x87\n";
	struct vocab_opts vo = { 40, 2, TOK_OPTS_DEFAULT, 0, 1 };
	struct vocab_builder *vb, *vb2;
	const char *const *tok, *const *tok2;
	struct tokenizer *t = NULL;
	struct tok_state *st = tok_state_new();
	struct cbuf b;
	const int32_t *ids;
	size_t n, n2, i, nid;
	char err[256];

	vb = vb_new(&vo);
	vb_add_text(vb, text, sizeof(text) - 1);
	n = vb_build(vb, &tok);
	vb2 = vb_new(&vo);
	vb_add_text(vb2, text, sizeof(text) - 1);
	n2 = vb_build(vb2, &tok2);
	EXPECT(n == n2, "deterministic size");
	for (i = 0; i < n && i < n2; i++)
		EXPECT(strcmp(tok[i], tok2[i]) == 0, "deterministic: %zu %s %s", i, tok[i], tok2[i]);
	EXPECT(n >= 5 && strcmp(tok[0], "[PAD]") == 0 && strcmp(tok[1], "[UNK]") == 0 &&
	    strcmp(tok[4], "[MASK]") == 0, "specials first");
	EXPECT(n <= 40, "size bound: %zu", n);
	/* "the" (5 times) must have been merged: t, ##h, ##e, then ##he or th. */
	cbuf_init(&b, 1 << 20);
	for (i = 0; i < n; i++) {
		cbuf_adds(&b, tok[i]);
		cbuf_addc(&b, '\n');
	}
	EXPECT(tok_load_mem("built", b.data, b.len, NULL, &t, err, sizeof(err)) == 0,
	    "built vocab loads: %s", err);
	if (t != NULL) {
		EXPECT(tok_lookup(t, "the", 3) >= 0, "\"the\" merged");
		nid = tok_encode(t, st, text, sizeof(text) - 1, &ids);
		for (i = 0; i < nid; i++)
			EXPECT(ids[i] != 1, "no [UNK] on the training text (%zu)", i);
	}
	cbuf_free(&b);
	tok_free(t);
	tok_state_free(st);
	vb_free(vb);
	vb_free(vb2);
}

int
main(void)
{
	test_vectors();
	test_bad_vocabs();
	test_hash_and_file();
	test_builder();
	return expect_summary("tokenizer vectors, bad vocabs, vocab hash, builder");
}
