/* BERT's tokenizer: basic tokenization (clean, split CJK, lower-case and
 * strip accents, split punctuation, split on whitespace) then greedy
 * longest-match-first WordPiece over a vocab.txt. Ids equal Hugging Face's
 * BertTokenizer(vocab_file, do_lower_case=True) on valid UTF-8; see
 * docs/tokenizer.md for the rules and the few known differences. */
#ifndef CADRE_TOKENIZER_H
#define CADRE_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "sha256.h"

/* Bounds on a vocab.txt: the file, one token, the number of tokens. */
#define TOK_VOCAB_MAX_FILE	(64u * 1024 * 1024)
#define TOK_VOCAB_MAX_TOKEN	1024
#define TOK_VOCAB_MAX_TOKENS	(1u << 24)
/* A word of more code points than this becomes [UNK] (BERT's
 * max_input_chars_per_word). */
#define TOK_MAX_WORD_CHARS	100

enum tok_special { TOK_PAD, TOK_UNK, TOK_CLS, TOK_SEP, TOK_MASK, TOK_NSPECIAL };

struct tok_opts {
	int	lower_case;	/* lower-case and strip accents (uncased BERT) */
};
#define TOK_OPTS_DEFAULT { 1 }

struct tokenizer;

/* Per-thread scratch space and output of tok_encode(); one per thread. */
struct tok_state;

/* The text of a special token ("[UNK]"). */
const char *tok_special_name(enum tok_special s);

/*
 * Loads a vocab.txt: one token per line, id = line number - 1, "\n" ends a
 * line (a missing one at the end is fine). Refused, with "FILE:LINE: error:
 * ..." in err: a file over TOK_VOCAB_MAX_FILE, a token over
 * TOK_VOCAB_MAX_TOKEN bytes, more than TOK_VOCAB_MAX_TOKENS lines, an empty
 * line, a NUL byte, invalid UTF-8, a duplicate token, no [UNK].
 * Returns 0 or a negative cadre_err.
 */
int tok_load(const char *path, const struct tok_opts *opts,
    struct tokenizer **out, char *err, size_t errlen);
/* The same from memory; name is what messages call the file. */
int tok_load_mem(const char *name, const char *data, size_t len,
    const struct tok_opts *opts, struct tokenizer **out, char *err,
    size_t errlen);
void tok_free(struct tokenizer *t);

uint32_t tok_vocab_size(const struct tokenizer *t);
/* SHA-256 of the vocab file's bytes: what shards record. */
const uint8_t *tok_vocab_hash(const struct tokenizer *t);
/* The token of an id (NUL-terminated), or NULL when out of range. */
const char *tok_token(const struct tokenizer *t, uint32_t id);
/* The id of a token, or -1. */
int32_t tok_lookup(const struct tokenizer *t, const char *s, size_t len);
/* The id of a special token, or -1 when the vocab lacks it ([UNK] never). */
int32_t tok_special_id(const struct tokenizer *t, enum tok_special s);

struct tok_state *tok_state_new(void);
void tok_state_free(struct tok_state *st);

/*
 * Tokenizes len bytes of text into ids; *ids (owned by st, valid until
 * its next use) gets them and the count is returned. Never fails: invalid
 * UTF-8 is dropped as BERT drops U+FFFD.
 */
size_t tok_encode(const struct tokenizer *t, struct tok_state *st,
    const char *text, size_t len, const int32_t **ids);

/*
 * Basic tokenization alone: calls fn for each word (UTF-8, not
 * NUL-terminated, of any length) with its length in bytes and in code
 * points. Special tokens in the text are not kept whole here. Used by the
 * vocab builder.
 */
typedef void (*tok_word_fn)(void *arg, const char *word, size_t len,
    size_t nchars);
void tok_basic(const struct tok_opts *opts, struct tok_state *st,
    const char *text, size_t len, tok_word_fn fn, void *arg);

#endif
