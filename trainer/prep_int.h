/*
 * What the parts of `cadre-train prep` share: prep.c (the command line,
 * the threads over each file, the documents), prep_input.c (the input
 * formats, into chunks), prep_seqs.c (the sequences) and prep_write.c
 * (the shard set on disk). Nothing else includes this (prep.h is the
 * interface).
 */
#ifndef CADRE_PREP_INT_H
#define CADRE_PREP_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "shard.h"
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
	int			 verify_full;	/* --info --verify full */
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

/* Room for one more element in a growing array. */
#define GROW(arr, n, cap) do { \
	if ((n) == (cap)) { \
		(cap) = (cap) * 2 + 64; \
		(arr) = xreallocarray((arr), (cap), sizeof *(arr)); \
	} \
} while (0)

/* What the chunks have read and tokenized, for the progress line. */
extern atomic_uint_fast64_t prep_progress_bytes, prep_progress_tokens;

/* A thread's work: tokenizes the lines of c (a struct chunk) into its
 * items, stopping at the first error. */
void *prep_chunk_run(void *arg);
void prep_chunk_free(struct chunk *c);

/* The NSP pairs of every document, o->dupe times over (pretrain). */
void prep_pretrain_seqs(const struct prep_opts *o, const struct sent *sents,
    const struct doc *docs, size_t ndocs, const int32_t *special,
    struct out_seqs *os);
/* The examples of the chunks (classify), each with the number of its
 * label among the sorted distinct labels, which go to *label_namesp (the
 * caller frees the array; the strings are the chunks'). 0, or 2 after
 * printing the error. */
int prep_classify_seqs(const struct prep_opts *o, const struct chunk *chunks,
    size_t nchunks, char **ex_labels, size_t nex, const int32_t *special,
    struct out_seqs *os, char ***label_namesp, uint32_t *nlabelsp);

/* Writes the set into tmp (made by the caller, removed by it on failure)
 * and renames tmp to o->out: 0, 1 (a write failed) or 2 (too many
 * shards). */
int prep_write_set(const struct prep_opts *o, const struct tokenizer *tok,
    const struct out_seqs *os, char **label_names, uint32_t nlabels,
    const char *tmp, uint32_t *nshards_out);

#endif
