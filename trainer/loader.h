/*
 * The training data loader: shards made by `cadre-train prep`
 * (trainer/shard.h), memory-mapped, read in a deterministic shuffled order
 * with dynamic MLM masking.
 *
 * Order. Every epoch has a permutation of all sequences of the shard set,
 * a function of (seed, epoch) only. Sequences are consumed in "global
 * micro-batches" of nranks * batch sequences: global micro-batch k holds
 * permutation entries [k*nranks*batch, (k+1)*nranks*batch), and rank r
 * takes entries [k*nranks*batch + r*batch, +batch) of it. So one rank with
 * batch 2B, two ranks with batch B, and one rank with batch B and two
 * micro-batches per step see the same sequences per optimizer step. An
 * epoch ends when fewer than nranks*batch sequences are left (the rest is
 * dropped, as DistributedSampler(drop_last=True)). (So with gradient
 * accumulation the epoch ends at a multiple of the micro-batch, not of the
 * step: runs with and without accumulation part at the first epoch end
 * unless the set's size is a multiple of the step's sequences.) The
 * permutation is a keyed Feistel network, computed per position, not
 * stored (docs/data.md).
 *
 * Masking (pretrain and mlm kinds): each non-special token is chosen with
 * probability mask_prob; a chosen token becomes [MASK] (80%), a random
 * non-special token (10%) or stays (10%), and its label is the original id
 * (others -100). The choice is a function of (seed, epoch, the sequence's
 * position in the permutation, token index) through Philox, never of the
 * rank or the batch size.
 *
 * Position. The loader's position (epoch, sequences of the epoch consumed
 * globally) is what a checkpoint stores; loader_seek() restores it and
 * the batches that follow are bitwise those that would have followed.
 */
#ifndef CADRE_LOADER_H
#define CADRE_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "shard.h"

struct loader_config {
	const char	*dir;		/* shard directory made by prep */
	const char	*vocab;		/* vocab.txt whose SHA-256 must match the
					 * shards'; NULL: not checked */
	int		 seq_len;	/* 0: the shards'; else must equal it */
	int		 batch;		/* sequences per micro-batch per rank */
	int		 rank, nranks;	/* 0 and 1 without MPI */
	uint64_t	 seed;
	int		 mlm;		/* dynamic masking (pretrain, mlm) */
	float		 mask_prob;	/* 0.15 */
	int		 prefetch;	/* micro-batches prepared ahead by a
					 * thread; 0: none, batches made
					 * in loader_next() */
	int		 verify_full;	/* check every shard in full at open,
					 * trusting no verification record */
};

struct loader_pos {
	uint64_t	epoch;
	uint64_t	consumed;	/* sequences of the epoch consumed
					 * globally (all ranks) */
};

struct loader;

/* Opens and checks the shard set (headers, vocab hash, kind, sequence
 * length; the checksums and records now, or lazily for the shards the
 * set's verification record vouches for: shard.h): 0, or a negative
 * cadre_err with a message naming the file in err. */
int loader_open(const struct loader_config *c, struct loader **out,
    char *err, size_t errlen);
void loader_close(struct loader *l);

/* What the shard set is: kind, sequence length, counts, labels. */
const struct shard_info *loader_info(const struct loader *l);

/* The next micro-batch of this rank into *b (B = batch, T = seq_len);
 * the arrays are the loader's, valid until the next call. ids/types/mask/
 * labels/seq_labels are all set (labels all -100 for classify; seq_labels
 * the NSP label or the class). *masked (when not NULL) gets the number of
 * labels != -100 in the batch. Returns 0 or a negative cadre_err. */
int loader_next(struct loader *l, struct bert_batch *b, int *masked);
/* Why loader_next() or loader_peek_masked() failed: a shard that failed
 * its verification, named with the offset where one is known. */
const char *loader_error(const struct loader *l);

/* The number of labels != -100 in each of the next n micro-batches of
 * every rank, summed (for a loss normalised over the global batch):
 * computed without consuming them. -1 when a shard failed its
 * verification (loader_error()). */
int64_t loader_peek_masked(struct loader *l, int n);

/* The position of the next micro-batch, and back to one. */
void loader_tell(const struct loader *l, struct loader_pos *p);
int loader_seek(struct loader *l, const struct loader_pos *p);

/* Sequences per epoch used (a multiple of nranks * batch). */
uint64_t loader_epoch_sequences(const struct loader *l);

#endif
