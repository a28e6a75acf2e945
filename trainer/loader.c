/*
 * The loader (loader.h): a permutation of the shard set per epoch that is
 * computed, not stored (a Feistel network on Philox, walked until it
 * lands inside the set), so that any position's sequence, and so a seek,
 * costs the same; masking keyed the same way. docs/data.md has the scheme.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "loader.h"
#include "philox.h"
#include "sha256.h"
#include "xmalloc.h"

/* The largest vocab.txt hashed (tokenizer.h's TOK_VOCAB_MAX_FILE). */
#define LOADER_MAX_VOCAB_FILE	(64u * 1024 * 1024)
#define LOADER_MAX_PREFETCH	64

/* Philox counter word 3 of the loader's streams: the top bit keeps them
 * apart from dropout's (whose word 3 is the high half of the step). */
#define CTR_PERM	(UINT32_C(0x80000000) | UINT32_C(1) << 24)
#define CTR_MASK	(UINT32_C(0x80000000) | UINT32_C(2) << 24)
#define FEISTEL_ROUNDS	4

struct batch_buf {
	int32_t	*ids, *types, *mask, *labels, *seq_labels;
	int	 masked;
	int	 error;		/* a shard failed its verification */
	char	 err[1024];
};

struct loader {
	struct loader_config	 c;
	struct shard_set	*set;
	uint64_t		 n;		/* sequences in the set */
	uint64_t		 gb;		/* nranks * batch */
	uint32_t		 key[2];
	int			 half;		/* Feistel half width, bits */
	int32_t			 spec[SHARD_NSPECIAL];	/* present specials, sorted */
	int			 nspec;
	int32_t			 pad, mask_id;
	uint32_t		 T;
	struct loader_pos	 pos;		/* of the next loader_next() */
	int32_t			*peek_ids;

	struct batch_buf	*bufs;
	int			 nbufs;
	/* Prefetch: bufs is a ring; ready ones start at head, the one the
	 * caller holds is just before it. */
	pthread_t		 thread;
	int			 running;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	int			 head, ready, held, stop;
	struct loader_pos	 ppos;		/* of the next one to prepare */
	char			 err[1024];	/* why loader_next() failed */
};

static uint64_t
feistel(const struct loader *l, uint64_t epoch, uint64_t x)
{
	uint64_t m = (UINT64_C(1) << l->half) - 1;
	uint64_t left = x >> l->half, right = x & m;
	uint32_t r;

	for (r = 0; r < FEISTEL_ROUNDS; r++) {
		uint32_t ctr[4] = { (uint32_t)right, (uint32_t)(right >> 32),
			(uint32_t)epoch, CTR_PERM | r };
		uint32_t out[4];
		uint64_t f;

		philox4x32_10(ctr, l->key, out);
		f = ((uint64_t)out[1] << 32 | out[0]) & m;
		f ^= left;
		left = right;
		right = f;
	}
	return left << l->half | right;
}

/* The sequence at position p (< n) of the epoch's permutation. The
 * Feistel network permutes [0, 4^half), which holds n; walking the cycle
 * from p until it comes back inside [0, n) restricts it to a permutation
 * of [0, n) (fewer than 4 steps on average, as 4^half < 4n). */
static uint64_t
perm_at(const struct loader *l, uint64_t epoch, uint64_t p)
{
	uint64_t x = p;

	do
		x = feistel(l, epoch, x);
	while (x >= l->n);
	return x;
}

static int
is_special(const struct loader *l, int32_t id)
{
	int i;

	for (i = 0; i < l->nspec; i++)
		if (l->spec[i] == id)
			return 1;
	return 0;
}

/*
 * Dynamic masking of one sequence at position p of the epoch: labels
 * (when not NULL) get the original id of each chosen token (else -100) and
 * ids (when labels is set) the replacement. Returns how many were chosen.
 */
static int
mask_seq(const struct loader *l, uint64_t epoch, uint64_t p, int32_t *ids,
    uint32_t len, int32_t *labels)
{
	uint32_t t;
	int n = 0;

	for (t = 0; t < len; t++) {
		uint32_t ctr[4] = { (uint32_t)p, (uint32_t)(p >> 32),
			(uint32_t)epoch, CTR_MASK | t };
		uint32_t out[4];
		float u;

		if (labels != NULL)
			labels[t] = -100;
		if (is_special(l, ids[t]))
			continue;
		philox4x32_10(ctr, l->key, out);
		if (philox_uniform(out[0]) >= l->c.mask_prob)
			continue;
		n++;
		if (labels == NULL)
			continue;
		labels[t] = ids[t];
		u = philox_uniform(out[1]);
		if (u < 0.8f)
			ids[t] = l->mask_id;
		else if (u < 0.9f && l->set->info.vocab_size > (uint32_t)l->nspec) {
			/* A uniform id among the non-special ones: pick
			 * among V - nspec, then step over the specials. */
			int32_t id = (int32_t)(out[2] % (l->set->info.vocab_size - (uint32_t)l->nspec));
			int i;

			for (i = 0; i < l->nspec; i++)
				if (id >= l->spec[i])
					id++;
			ids[t] = id;
		}
	}
	return n;
}

static void
build(const struct loader *l, const struct loader_pos *pos,
    struct batch_buf *b)
{
	int B = l->c.batch, i;
	uint32_t T = l->T, t;

	b->masked = 0;
	b->error = 0;
	for (i = 0; i < B; i++) {
		uint64_t p = pos->consumed + (uint64_t)l->c.rank * (uint64_t)B + (uint64_t)i;
		int32_t *ids = b->ids + (size_t)i * T;
		int32_t *types = b->types + (size_t)i * T;
		int32_t *mask = b->mask + (size_t)i * T;
		int32_t *labels = b->labels + (size_t)i * T;
		uint32_t len, ts;
		int32_t label;

		b->error = shard_set_read(l->set, perm_at(l, pos->epoch, p), ids, &len,
		    &ts, &label, b->err, sizeof b->err);
		if (b->error != 0)
			return;
		for (t = 0; t < T; t++) {
			types[t] = t >= ts && t < len;
			mask[t] = t < len;
			labels[t] = -100;
		}
		b->seq_labels[i] = label;
		if (l->c.mlm)
			b->masked += mask_seq(l, pos->epoch, p, ids, len, labels);
	}
}

/* The position after one global micro-batch; a new epoch when fewer than
 * one global micro-batch is left. */
static void
advance(const struct loader *l, struct loader_pos *p)
{
	p->consumed += l->gb;
	if (p->consumed + l->gb > l->n) {
		p->epoch++;
		p->consumed = 0;
	}
}

static void *
producer(void *arg)
{
	struct loader *l = arg;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		struct loader_pos pos;
		int slot;

		while (!l->stop && l->ready + l->held >= l->nbufs)
			pthread_cond_wait(&l->cv, &l->mu);
		if (l->stop)
			break;
		slot = (l->head + l->ready) % l->nbufs;
		pos = l->ppos;
		pthread_mutex_unlock(&l->mu);
		build(l, &pos, &l->bufs[slot]);
		pthread_mutex_lock(&l->mu);
		if (l->stop)
			break;
		advance(l, &l->ppos);
		l->ready++;
		pthread_cond_broadcast(&l->cv);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

static int
start_prefetch(struct loader *l)
{
	int e;

	l->head = l->ready = l->held = l->stop = 0;
	l->ppos = l->pos;
	if ((e = pthread_create(&l->thread, NULL, producer, l)) != 0) {
		errno = e;
		return CADRE_ERR_SYSTEM;
	}
	l->running = 1;
	return 0;
}

static void
stop_prefetch(struct loader *l)
{
	if (!l->running)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = 1;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->thread, NULL);
	l->running = 0;
}

static int
check_vocab(const char *vocab, const struct shard_set *s, char *err,
    size_t errlen)
{
	uint8_t digest[SHA256_DIGEST_LEN], buf[65536];
	char have[65], want[65];
	struct sha256_ctx ctx;
	struct stat st;
	uint64_t total = 0;
	int fd, rc = 0;

	if ((fd = open(vocab, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "%s: %s (the vocab to check the shards against)",
		    vocab, strerror(errno));
		return CADRE_ERR_NOT_FOUND;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", vocab);
		close(fd);
		return CADRE_ERR_INVALID;
	}
	sha256_init(&ctx);
	for (;;) {
		ssize_t r = read(fd, buf, sizeof buf);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "%s: %s", vocab, strerror(errno));
			rc = CADRE_ERR_SYSTEM;
			goto out;
		}
		if (r == 0)
			break;
		total += (uint64_t)r;
		if (total > LOADER_MAX_VOCAB_FILE) {
			snprintf(err, errlen, "%s: over %u bytes: not a vocab.txt",
			    vocab, LOADER_MAX_VOCAB_FILE);
			rc = CADRE_ERR_TOO_LARGE;
			goto out;
		}
		sha256_update(&ctx, buf, (size_t)r);
	}
	sha256_final(&ctx, digest);
	if (memcmp(digest, s->info.vocab_sha256, SHA256_DIGEST_LEN) != 0) {
		sha256_hex(digest, 8, have);
		sha256_hex(s->info.vocab_sha256, 8, want);
		snprintf(err, errlen, "%s (SHA-256 %s...) is not the vocab %s/shard-00000.bin was made with (%s...): use the vocab given to prep (a copy is %s/vocab.txt) or run cadre-train prep again with this one",
		    vocab, have, s->dir, want, s->dir);
		rc = CADRE_ERR_INVALID;
	}
out:
	if (rc != 0)
		sha256_discard(&ctx);
	close(fd);
	return rc;
}

int
loader_open(const struct loader_config *c, struct loader **out, char *err,
    size_t errlen)
{
	struct loader *l;
	const struct shard_info *in;
	size_t T, B;
	int i, j, rc;

	*out = NULL;
	if (c->dir == NULL || c->batch < 1 || c->nranks < 1 || c->rank < 0 ||
	    c->rank >= c->nranks || !(c->mask_prob >= 0 && c->mask_prob <= 1) ||
	    c->prefetch < 0 || c->prefetch > LOADER_MAX_PREFETCH || c->seq_len < 0) {
		snprintf(err, errlen, "loader: bad configuration (batch %d, rank %d of %d, mask_prob %g, prefetch %d, seq_len %d)",
		    c->batch, c->rank, c->nranks, (double)c->mask_prob, c->prefetch, c->seq_len);
		return CADRE_ERR_INVALID;
	}
	l = xcalloc(1, sizeof *l);
	l->c = *c;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	if ((rc = shard_set_open(c->dir, c->verify_full ? SHARD_VERIFY_FULL :
	    SHARD_VERIFY_META, &l->set, err, errlen)) != 0)
		goto fail;
	in = &l->set->info;
	if (c->vocab != NULL && (rc = check_vocab(c->vocab, l->set, err, errlen)) != 0)
		goto fail;
	if (c->seq_len != 0 && (uint32_t)c->seq_len != in->seq_len) {
		snprintf(err, errlen, "%s: sequences of %" PRIu32 " tokens, but seq_len is %d: use seq_len %" PRIu32 " or run cadre-train prep again with --seq-len %d",
		    c->dir, in->seq_len, c->seq_len, in->seq_len, c->seq_len);
		rc = CADRE_ERR_INVALID;
		goto fail;
	}
	if (c->mlm && in->special[SHARD_MASK] < 0) {
		snprintf(err, errlen, "%s: the vocab has no [MASK]: no masked-LM training on these shards",
		    c->dir);
		rc = CADRE_ERR_INVALID;
		goto fail;
	}
	l->n = in->sequences;
	l->gb = (uint64_t)c->nranks * (uint64_t)c->batch;
	if (l->n < l->gb) {
		snprintf(err, errlen, "%s: %" PRIu64 " sequences, fewer than one global micro-batch of %" PRIu64 " (%d ranks x batch %d): use a smaller batch or more data",
		    c->dir, l->n, l->gb, c->nranks, c->batch);
		rc = CADRE_ERR_INVALID;
		goto fail;
	}
	l->T = in->seq_len;
	l->key[0] = (uint32_t)c->seed;
	l->key[1] = (uint32_t)(c->seed >> 32);
	for (l->half = 1; (UINT64_C(1) << (2 * l->half)) < l->n; l->half++)
		;
	for (i = 0; i < SHARD_NSPECIAL; i++) {
		int32_t id = in->special[i];

		if (id < 0 || is_special(l, id))
			continue;
		for (j = l->nspec; j > 0 && l->spec[j - 1] > id; j--)
			l->spec[j] = l->spec[j - 1];
		l->spec[j] = id;
		l->nspec++;
	}
	l->pad = in->special[SHARD_PAD] >= 0 ? in->special[SHARD_PAD] : 0;
	l->mask_id = in->special[SHARD_MASK];
	l->peek_ids = xcalloc(l->T, sizeof *l->peek_ids);

	l->nbufs = c->prefetch + 1;
	l->bufs = xcalloc((size_t)l->nbufs, sizeof *l->bufs);
	T = l->T;
	B = (size_t)c->batch;
	for (i = 0; i < l->nbufs; i++) {
		l->bufs[i].ids = xcalloc(B * T, sizeof(int32_t));
		l->bufs[i].types = xcalloc(B * T, sizeof(int32_t));
		l->bufs[i].mask = xcalloc(B * T, sizeof(int32_t));
		l->bufs[i].labels = xcalloc(B * T, sizeof(int32_t));
		l->bufs[i].seq_labels = xcalloc(B, sizeof(int32_t));
	}
	if (c->prefetch > 0 && (rc = start_prefetch(l)) != 0) {
		snprintf(err, errlen, "loader: starting the prefetch thread: %s", strerror(errno));
		goto fail;
	}
	l->c.dir = NULL;
	l->c.vocab = NULL;
	*out = l;
	return 0;
fail:
	loader_close(l);
	return rc;
}

void
loader_close(struct loader *l)
{
	int i;

	if (l == NULL)
		return;
	stop_prefetch(l);
	for (i = 0; l->bufs != NULL && i < l->nbufs; i++) {
		free(l->bufs[i].ids);
		free(l->bufs[i].types);
		free(l->bufs[i].mask);
		free(l->bufs[i].labels);
		free(l->bufs[i].seq_labels);
	}
	free(l->bufs);
	free(l->peek_ids);
	shard_set_close(l->set);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cv);
	free(l);
}

const char *
loader_error(const struct loader *l)
{
	return l->err;
}

const struct shard_info *
loader_info(const struct loader *l)
{
	return &l->set->info;
}

int
loader_next(struct loader *l, struct bert_batch *b, int *masked)
{
	struct batch_buf *buf;

	if (l->c.prefetch > 0) {
		pthread_mutex_lock(&l->mu);
		if (l->held) {
			l->held = 0;
			pthread_cond_broadcast(&l->cv);
		}
		while (l->ready == 0)
			pthread_cond_wait(&l->cv, &l->mu);
		buf = &l->bufs[l->head];
		l->head = (l->head + 1) % l->nbufs;
		l->ready--;
		l->held = 1;
		pthread_cond_broadcast(&l->cv);
		pthread_mutex_unlock(&l->mu);
	} else {
		buf = &l->bufs[0];
		build(l, &l->pos, buf);
	}
	/* A bad shard stops the run at once, whether its batch came or the
	 * background verifier found it. */
	if (buf->error != 0 || shard_set_failed(l->set, l->err, sizeof l->err) != 0) {
		if (buf->error != 0)
			snprintf(l->err, sizeof l->err, "%s", buf->err);
		return CADRE_ERR_IO;
	}
	advance(l, &l->pos);
	b->B = l->c.batch;
	b->T = (int)l->T;
	b->ids = buf->ids;
	b->types = buf->types;
	b->mask = buf->mask;
	b->labels = buf->labels;
	b->seq_labels = buf->seq_labels;
	if (masked != NULL)
		*masked = buf->masked;
	return 0;
}

int64_t
loader_peek_masked(struct loader *l, int n)
{
	struct loader_pos pos = l->pos;
	int64_t total = 0;
	uint64_t i;
	int k;

	if (!l->c.mlm)
		return 0;
	for (k = 0; k < n; k++) {
		for (i = 0; i < l->gb; i++) {
			uint32_t len, ts;
			int32_t label;

			if (shard_set_read(l->set, perm_at(l, pos.epoch, pos.consumed + i),
			    l->peek_ids, &len, &ts, &label, l->err, sizeof l->err) != 0)
				return -1;
			total += mask_seq(l, pos.epoch, pos.consumed + i, l->peek_ids, len, NULL);
		}
		advance(l, &pos);
	}
	return total;
}

void
loader_tell(const struct loader *l, struct loader_pos *p)
{
	*p = l->pos;
}

int
loader_seek(struct loader *l, const struct loader_pos *p)
{
	if (p->consumed > l->n || p->epoch > UINT32_MAX)
		return CADRE_ERR_RANGE;
	stop_prefetch(l);
	l->pos = *p;
	/* A position saved by a run with another world size may leave less
	 * than a global micro-batch of this one: the epoch is over. */
	if (l->pos.consumed + l->gb > l->n) {
		l->pos.epoch++;
		l->pos.consumed = 0;
	}
	if (l->c.prefetch > 0)
		return start_prefetch(l);
	return 0;
}

uint64_t
loader_epoch_sequences(const struct loader *l)
{
	return l->n / l->gb * l->gb;
}
