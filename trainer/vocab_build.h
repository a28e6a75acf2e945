/* `cadre-train vocab`: a WordPiece vocabulary of a chosen size from text.
 *
 * The algorithm (deterministic: the same text and options give the same
 * file byte for byte):
 *  1. Every line goes through the basic tokenizer (tokenizer.h) and its
 *     words are counted; words over TOK_MAX_WORD_CHARS code points are left
 *     out (WordPiece makes them [UNK] anyway).
 *  2. The vocab starts with the special tokens [PAD] [UNK] [CLS] [SEP]
 *     [MASK] (ids 0-4), then every character seen, as a word's first
 *     character ("a") and as a continuation ("##a"), most frequent first
 *     (ties: byte order). When they do not all fit, the rarest are left out
 *     and so are the words that contain them.
 *  3. Each word is a sequence of those symbols. Repeatedly, the adjacent
 *     pair seen most often (each word weighted by its count; ties: the pair
 *     whose first, then second, symbol is smaller in byte order) is merged
 *     into one symbol everywhere: "a" + "##b" -> "ab", "##a" + "##b" ->
 *     "##ab". A new string is appended to the vocab. This stops at the
 *     requested size, or when no pair is seen min_frequency times.
 */
#ifndef CADRE_VOCAB_BUILD_H
#define CADRE_VOCAB_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

struct vocab_opts {
	uint32_t	size;		/* tokens wanted, specials included */
	uint64_t	min_frequency;	/* pairs seen less often are not merged */
	struct tok_opts	tok;
	int		progress;	/* progress on stderr (a terminal) */
	int		threads;	/* counting threads for files of 4 MiB and more */
};

struct vocab_builder;

struct vocab_builder *vb_new(const struct vocab_opts *opts);
void vb_free(struct vocab_builder *vb);

/* Counts the words of one piece of text (a line). */
void vb_add_text(struct vocab_builder *vb, const char *text, size_t len);
/* Counts every line of a file ("-": stdin; lines over 16 MiB are
 * refused). A regular file of 4 MiB or more is split among opts.threads
 * threads at line boundaries. 0 or a negative cadre_err with
 * "FILE[:LINE]: error: ..." in err. */
int vb_add_file(struct vocab_builder *vb, const char *path, char *err,
    size_t errlen);

/* Runs the merges and returns the tokens in id order (owned by vb, valid
 * until vb_free) and their count. */
size_t vb_build(struct vocab_builder *vb, const char *const **tokens);

/* After vb_build: the characters (first and "##" forms) seen, and how
 * many of them fit in the vocab. */
void vb_alphabet(const struct vocab_builder *vb, uint32_t *seen,
    uint32_t *kept);

/* Words counted so far (distinct, and in all). */
void vb_word_counts(const struct vocab_builder *vb, size_t *distinct,
    uint64_t *total);

#endif
