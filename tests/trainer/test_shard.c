/* Shards and the loader: write/read round trips, every header field
 * corrupted, truncations, the loader's order across rank counts and batch
 * sizes, masking rates, tell/seek, epochs, prefetch. Plain C. */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "loader.h"
#include "sha256.h"
#include "shard.h"
#include "xmalloc.h"
#include "expect.h"

static char tmpdir[256];

#define VOCAB	1000	/* ids 0..4 are [PAD] [UNK] [CLS] [SEP] [MASK] */

static uint64_t
lcg(uint64_t *s)
{
	*s = *s * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
	return *s >> 33;
}

static void
write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		printf("FAIL: cannot write %s\n", path);
		exit(1);
	}
}

static uint8_t *
read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p;
	long sz;

	if (f == NULL) {
		printf("FAIL: cannot read %s\n", path);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	sz = ftell(f);
	fseek(f, 0, SEEK_SET);
	p = xmalloc((size_t)sz + 1);
	if (fread(p, 1, (size_t)sz, f) != (size_t)sz)
		exit(1);
	fclose(f);
	*n = (size_t)sz;
	return p;
}

/* vocab.txt of VOCAB lines ([PAD] [UNK] [CLS] [SEP] [MASK] w5 ...) in dir;
 * its hash into sha. */
static void
make_vocab(const char *path, uint8_t sha[32])
{
	char *text = NULL;
	size_t len = 0, cap = 0;
	int i;

	for (i = 0; i < VOCAB; i++) {
		char line[32];
		static const char *sp[] = { "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]" };
		int n = i < 5 ? snprintf(line, sizeof line, "%s\n", sp[i]) :
		    snprintf(line, sizeof line, "w%d\n", i);

		if (len + (size_t)n + 1 > cap) {
			cap = cap * 2 + 64;
			text = xreallocarray(text, cap, 1);
		}
		memcpy(text + len, line, (size_t)n);
		len += (size_t)n;
	}
	write_file(path, text, len);
	sha256(text, len, sha);
	free(text);
}

static void
base_info(struct shard_info *in, enum shard_kind kind, uint32_t T,
    uint32_t id_bytes, const uint8_t sha[32])
{
	int i;

	memset(in, 0, sizeof *in);
	in->kind = kind;
	in->seq_len = T;
	in->vocab_size = VOCAB;
	memcpy(in->vocab_sha256, sha, 32);
	for (i = 0; i < SHARD_NSPECIAL; i++)
		in->special[i] = i;
	in->id_bytes = id_bytes;
	in->num_labels = 2;
	in->shards = 1;
}

/*
 * A shard set of n sequences in nshards files under dir: sequence g is
 * [CLS] (10 + g % 900) (10 + g / 900) w... [SEP] ..., of a length from 4
 * to T, type boundary in the middle, label g % num_labels.
 */
static void
make_set(const char *dir, enum shard_kind kind, uint32_t T, uint64_t n,
    uint32_t nshards, uint32_t id_bytes)
{
	static char *names[] = { "neg", "neu", "pos" };
	struct shard_info in;
	struct shard_seq *seqs = xcalloc(n, sizeof *seqs);
	int32_t *ids = xcalloc(n * T, sizeof *ids);
	uint8_t sha[32];
	char path[512], err[512];
	uint64_t g, s = 7, first = 0;
	uint32_t k, t;

	mkdir(dir, 0755);
	snprintf(path, sizeof path, "%s/vocab.txt", dir);
	make_vocab(path, sha);
	base_info(&in, kind, T, id_bytes, sha);
	if (kind == SHARD_CLASSIFY) {
		in.num_labels = 3;
		in.label_names = names;
	}
	in.shards = nshards;
	for (g = 0; g < n; g++) {
		int32_t *p = ids + g * T;
		uint32_t len = 4 + (uint32_t)(lcg(&s) % (T - 3));

		p[0] = 2;
		p[1] = (int32_t)(10 + g % 900);
		p[2] = (int32_t)(10 + g / 900);
		for (t = 3; t < len - 1; t++)
			p[t] = 5 + (int32_t)(lcg(&s) % (VOCAB - 5));
		p[len - 1] = 3;
		seqs[g].len = len;
		seqs[g].type_start = len / 2;
		seqs[g].label = (int32_t)(g % in.num_labels);
		seqs[g].ids = p;
	}
	for (k = 0; k < nshards; k++) {
		uint64_t cnt = n / nshards + (k < n % nshards);

		in.shard_index = k;
		snprintf(path, sizeof path, "%s/shard-%05" PRIu32 ".bin", dir, k);
		if (shard_write(path, &in, seqs + first, cnt, err, sizeof err) != 0) {
			printf("FAIL: shard_write: %s\n", err);
			exit(1);
		}
		first += cnt;
	}
	free(seqs);
	free(ids);
}

static void
test_roundtrip(void)
{
	char dir[512], err[512];
	struct shard_set *s = NULL;
	int32_t ids[64];
	uint32_t len, ts, ib;
	int32_t label;
	uint64_t g;
	int rc;

	for (ib = 2; ib <= 4; ib += 2) {
		snprintf(dir, sizeof dir, "%s/rt%u", tmpdir, ib);
		make_set(dir, SHARD_CLASSIFY, 64, 50, 3, ib);
		rc = shard_set_open(dir, SHARD_VERIFY_META, &s, err, sizeof err);
		EXPECT(rc == 0, "shard_set_open: %s", err);
		if (rc != 0)
			continue;
		EXPECT(s->info.sequences == 50 && s->info.shards == 3 &&
		    s->info.kind == SHARD_CLASSIFY && s->info.num_labels == 3 &&
		    s->info.seq_len == 64 && s->info.id_bytes == ib,
		    "set info: %" PRIu64 " sequences, %u shards", s->info.sequences, s->info.shards);
		EXPECT(s->info.label_names != NULL && strcmp(s->info.label_names[2], "pos") == 0,
		    "label names");
		for (g = 0; g < 50; g++) {
			EXPECT(shard_set_read(s, g, ids, &len, &ts, &label, err, sizeof err) == 0, "read: %s", err);
			EXPECT(ids[0] == 2 && ids[1] == (int32_t)(10 + g % 900) &&
			    ids[len - 1] == 3 && ts == len / 2 && label == (int32_t)(g % 3) &&
			    (len == 64 || ids[len] == 0),
			    "record %" PRIu64 " read back wrong", g);
		}
		shard_set_close(s);
		s = NULL;
	}
	/* The writer refuses a bad record. */
	{
		struct shard_info in;
		struct shard_seq q;
		int32_t bad[4] = { 2, VOCAB + 5, 7, 3 };
		uint8_t sha[32] = { 0 };

		base_info(&in, SHARD_PRETRAIN, 8, 2, sha);
		q.len = 4;
		q.type_start = 2;
		q.label = 0;
		q.ids = bad;
		snprintf(dir, sizeof dir, "%s/badwrite.bin", tmpdir);
		rc = shard_write(dir, &in, &q, 1, err, sizeof err);
		EXPECT(rc != 0 && strstr(err, "record 0: token 1") != NULL,
		    "writer accepted an id outside the vocab: %s", err);
	}
}

/* Rewrites the checksum of a shard image in place. */
static void
reseal(uint8_t *p, size_t n)
{
	sha256(p, n - 32, p + n - 32);
}

static void
test_corrupt(void)
{
	static const struct {
		size_t		 off;
		uint32_t	 value;
		const char	*expect;
	} cases[] = {
		{ 0, 0x44415243, "magic" },
		{ 8, 2, "version" },
		{ 12, 7, "kind" },
		{ 16, 1, "seq_len" },
		{ 16, 70000, "seq_len" },
		{ 20, 3, "vocab_size" },
		{ 20, 100000, "id_bytes" },
		{ 56, 5000, "special[0]" },
		{ 60, 0xffffffff, "special" },
		{ 76, 3, "id_bytes" },
		{ 80, 5000, "num_labels" },
		{ 84, 9, "shard_index" },
		{ 88, 0, "shard_index/shards" },
		{ 92, 17, "record_size" },
		{ 96, 4, "records_size" },
		{ 100, 0x10000, "sequences" },
		{ 104, 300, "labels_offset" },
		{ 112, 5, "records_offset" },
		{ 112, 0x10000000, "labels_size" },
		{ 120, 4096, "records_offset" },
		{ 128, 80, "records_size" },
		{ 200, 1, "reserved" },
	};
	struct shard_info info;
	char dir[512], path[600], err[512];
	uint8_t *orig, *p;
	size_t n, i, off;
	int rc;

	snprintf(dir, sizeof dir, "%s/corrupt", tmpdir);
	make_set(dir, SHARD_CLASSIFY, 16, 10, 1, 2);
	snprintf(path, sizeof path, "%s/shard-00000.bin", dir);
	orig = read_file(path, &n);
	rc = shard_parse("s.bin", orig, n, 1, &info, err, sizeof err);
	EXPECT(rc == 0, "the good shard: %s", err);
	shard_info_free(&info);
	p = xmalloc(n);
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		memcpy(p, orig, n);
		p[cases[i].off] = (uint8_t)cases[i].value;
		p[cases[i].off + 1] = (uint8_t)(cases[i].value >> 8);
		p[cases[i].off + 2] = (uint8_t)(cases[i].value >> 16);
		p[cases[i].off + 3] = (uint8_t)(cases[i].value >> 24);
		reseal(p, n);
		err[0] = '\0';
		rc = shard_parse("s.bin", p, n, 1, &info, err, sizeof err);
		EXPECT(rc != 0 && strncmp(err, "s.bin: ", 7) == 0 &&
		    strstr(err, cases[i].expect) != NULL,
		    "offset %zu = %u: rc %d, \"%s\", expected a message on %s",
		    cases[i].off, cases[i].value, rc, err, cases[i].expect);
		if (rc == 0)
			shard_info_free(&info);
	}
	/* The label block, a record's length, label, a padding id. */
	{
		static const struct { size_t off; uint8_t v; const char *expect; } c2[] = {
			{ 256, '\n', "label block" },
			{ 259, 'x', "label block" },
			{ 0, 0, "record 0: length" },
			{ 8, 9, "record 0: label" },
		};
		size_t roff = orig[120] | (size_t)orig[121] << 8;

		for (i = 0; i < sizeof c2 / sizeof c2[0]; i++) {
			memcpy(p, orig, n);
			off = i < 2 ? c2[i].off : roff + c2[i].off;
			if (i == 2)
				memset(p + off, 0, 4);
			else
				p[off] = c2[i].v;
			reseal(p, n);
			rc = shard_parse("s.bin", p, n, 1, &info, err, sizeof err);
			EXPECT(rc != 0 && strstr(err, c2[i].expect) != NULL,
			    "%s: rc %d \"%s\"", c2[i].expect, rc, err);
			if (rc == 0)
				shard_info_free(&info);
		}
	}
	/* Any flipped byte: the checksum (or a field) catches it. */
	for (off = 0; off < n; off += 7) {
		memcpy(p, orig, n);
		p[off] ^= 0x40;
		rc = shard_parse("s.bin", p, n, 1, &info, err, sizeof err);
		EXPECT(rc != 0, "flipped byte %zu accepted", off);
		if (rc == 0)
			shard_info_free(&info);
	}
	memcpy(p, orig, n);
	p[n - 100] ^= 1;
	rc = shard_parse("s.bin", p, n, 1, &info, err, sizeof err);
	EXPECT(rc != 0 && strcmp(err, "s.bin: checksum mismatch: the file is corrupt or truncated; run cadre-train prep again") == 0,
	    "flipped record byte: \"%s\"", err);
	/* Truncation at every offset: an error, never a crash. */
	for (off = 0; off < n; off++) {
		rc = shard_parse("s.bin", orig, off, 1, &info, err, sizeof err);
		EXPECT(rc != 0, "truncated to %zu bytes accepted", off);
		if (rc == 0)
			shard_info_free(&info);
	}
	rc = shard_parse("s.bin", orig, n - 1, 1, &info, err, sizeof err);
	EXPECT(rc != 0 && strstr(err, "truncated") != NULL, "truncated: %s", err);
	free(p);
	free(orig);
}

struct run {
	int32_t	*ids, *types, *mask, *labels, *seq_labels;
	size_t	 ntok, nseq;
};

static void
run_free(struct run *r)
{
	free(r->ids);
	free(r->types);
	free(r->mask);
	free(r->labels);
	free(r->seq_labels);
	memset(r, 0, sizeof *r);
}

static void
run_add(struct run *r, const struct bert_batch *b)
{
	size_t k = (size_t)b->B * (size_t)b->T;

	r->ids = xreallocarray(r->ids, r->ntok + k, sizeof(int32_t));
	r->types = xreallocarray(r->types, r->ntok + k, sizeof(int32_t));
	r->mask = xreallocarray(r->mask, r->ntok + k, sizeof(int32_t));
	r->labels = xreallocarray(r->labels, r->ntok + k, sizeof(int32_t));
	r->seq_labels = xreallocarray(r->seq_labels, r->nseq + (size_t)b->B, sizeof(int32_t));
	memcpy(r->ids + r->ntok, b->ids, k * sizeof(int32_t));
	memcpy(r->types + r->ntok, b->types, k * sizeof(int32_t));
	memcpy(r->mask + r->ntok, b->mask, k * sizeof(int32_t));
	memcpy(r->labels + r->ntok, b->labels, k * sizeof(int32_t));
	memcpy(r->seq_labels + r->nseq, b->seq_labels, (size_t)b->B * sizeof(int32_t));
	r->ntok += k;
	r->nseq += (size_t)b->B;
}

static int
run_eq(const struct run *a, const struct run *b)
{
	return a->ntok == b->ntok && a->nseq == b->nseq &&
	    memcmp(a->ids, b->ids, a->ntok * 4) == 0 &&
	    memcmp(a->types, b->types, a->ntok * 4) == 0 &&
	    memcmp(a->mask, b->mask, a->ntok * 4) == 0 &&
	    memcmp(a->labels, b->labels, a->ntok * 4) == 0 &&
	    memcmp(a->seq_labels, b->seq_labels, a->nseq * 4) == 0;
}

static struct loader *
open_loader(const char *dir, int batch, int rank, int nranks, int mlm,
    int prefetch)
{
	struct loader_config c = { 0 };
	struct loader *l = NULL;
	char err[512];

	c.dir = dir;
	c.batch = batch;
	c.rank = rank;
	c.nranks = nranks;
	c.seed = 1234;
	c.mlm = mlm;
	c.mask_prob = 0.15f;
	c.prefetch = prefetch;
	if (loader_open(&c, &l, err, sizeof err) != 0) {
		printf("FAIL: loader_open %s: %s\n", dir, err);
		exit(1);
	}
	return l;
}

/* n micro-batches of l appended to r. */
static void
take(struct loader *l, int n, struct run *r)
{
	struct bert_batch b;
	int i;

	for (i = 0; i < n; i++) {
		loader_next(l, &b, NULL);
		run_add(r, &b);
	}
}

static void
test_order(void)
{
	char dir[512];
	struct loader *l1, *l2a, *l2b, *l3;
	struct run one = { 0 }, two = { 0 }, acc = { 0 };
	int step;

	/* 103 sequences for the other tests; here a multiple of 8, as a
	 * global batch of 4 (the accumulating run) ends its epoch at 100,
	 * one of 8 at 96 (docs/data.md). */
	snprintf(dir, sizeof dir, "%s/order", tmpdir);
	make_set(dir, SHARD_PRETRAIN, 32, 103, 2, 2);
	snprintf(dir, sizeof dir, "%s/order8", tmpdir);
	make_set(dir, SHARD_PRETRAIN, 32, 104, 3, 4);
	l1 = open_loader(dir, 8, 0, 1, 1, 0);
	l2a = open_loader(dir, 4, 0, 2, 1, 0);
	l2b = open_loader(dir, 4, 1, 2, 1, 2);
	l3 = open_loader(dir, 4, 0, 1, 1, 0);
	EXPECT(loader_epoch_sequences(l1) == 104, "epoch sequences %" PRIu64, loader_epoch_sequences(l1));
	/* 30 steps of a global batch of 8: over two epochs of 104. */
	for (step = 0; step < 30; step++) {
		take(l1, 1, &one);
		take(l2a, 1, &two);
		take(l2b, 1, &two);
		take(l3, 2, &acc);
	}
	EXPECT(run_eq(&one, &two), "1 rank x batch 8 differs from 2 ranks x batch 4");
	EXPECT(run_eq(&one, &acc), "1 rank x batch 8 differs from 1 rank x batch 4, 2 micro-batches");
	loader_close(l1);
	loader_close(l2a);
	loader_close(l2b);
	loader_close(l3);
	run_free(&one);
	run_free(&two);
	run_free(&acc);
}

/* Every epoch is a permutation (no masking: ids 1 and 2 name the
 * sequence), epochs differ. */
static void
test_epochs(void)
{
	char dir[512];
	struct loader *l;
	struct bert_batch b;
	struct loader_pos pos;
	int seen[103], first[96], e, i, dups, same = 0;

	snprintf(dir, sizeof dir, "%s/order", tmpdir);
	l = open_loader(dir, 1, 0, 1, 0, 0);
	for (e = 0; e < 3; e++) {
		memset(seen, 0, sizeof seen);
		dups = 0;
		for (i = 0; i < 103; i++) {
			int g;

			loader_next(l, &b, NULL);
			g = (b.ids[1] - 10) + 900 * (b.ids[2] - 10);
			if (g < 0 || g >= 103 || seen[g]++)
				dups++;
			if (e == 0 && i < 96)
				first[i] = g;
			else if (e == 1 && i < 96 && first[i] == g)
				same++;
		}
		EXPECT(dups == 0, "epoch %d: %d sequences repeated or unknown", e, dups);
	}
	EXPECT(same < 20, "epochs 0 and 1 agree on %d of 96 positions", same);
	loader_tell(l, &pos);
	EXPECT(pos.epoch == 3 && pos.consumed == 0, "after 3 epochs: %" PRIu64 "/%" PRIu64,
	    pos.epoch, pos.consumed);
	loader_close(l);
}

static void
test_masking(void)
{
	char dir[512];
	struct loader *l;
	struct bert_batch b;
	int64_t eligible = 0, chosen = 0, masked_tok = 0, kept = 0, other = 0, peeked, got = 0;
	int i, t, m;

	snprintf(dir, sizeof dir, "%s/mask", tmpdir);
	make_set(dir, SHARD_PRETRAIN, 128, 500, 1, 2);
	l = open_loader(dir, 8, 0, 1, 1, 0);
	peeked = loader_peek_masked(l, 100);
	for (i = 0; i < 100; i++) {
		loader_next(l, &b, &m);
		got += m;
		for (t = 0; t < b.B * b.T; t++) {
			/* ids 1 and 2 only are never masked-off text; count
			 * over all non-special positions. */
			int orig_special = b.mask[t] == 0;

			if (orig_special)
				continue;
			if (b.labels[t] == -100) {
				if (b.ids[t] != 2 && b.ids[t] != 3)
					eligible++;
				continue;
			}
			eligible++;
			chosen++;
			EXPECT(b.labels[t] >= 5 && b.labels[t] < VOCAB,
			    "label %d of a special or outside the vocab", b.labels[t]);
			if (b.ids[t] == 4)
				masked_tok++;
			else if (b.ids[t] == b.labels[t])
				kept++;
			else {
				other++;
				EXPECT(b.ids[t] >= 5 && b.ids[t] < VOCAB,
				    "random replacement %d is special", b.ids[t]);
			}
		}
	}
	EXPECT(peeked == got, "peek_masked said %" PRId64 ", the batches had %" PRId64, peeked, got);
	EXPECT(got == chosen, "masked count %" PRId64 " vs labels %" PRId64, got, chosen);
	printf("masking: %" PRId64 " of %" PRId64 " tokens chosen (%.4f); [MASK] %.4f, random %.4f, kept %.4f\n",
	    chosen, eligible, (double)chosen / (double)eligible,
	    (double)masked_tok / (double)chosen, (double)other / (double)chosen,
	    (double)kept / (double)chosen);
	EXPECT(eligible > 40000, "too few tokens (%" PRId64 ")", eligible);
	EXPECT(chosen > 0.14 * (double)eligible && chosen < 0.16 * (double)eligible,
	    "chosen rate %.4f", (double)chosen / (double)eligible);
	EXPECT(masked_tok > 0.77 * (double)chosen && masked_tok < 0.83 * (double)chosen,
	    "[MASK] rate %.4f", (double)masked_tok / (double)chosen);
	EXPECT(other > 0.08 * (double)chosen && other < 0.12 * (double)chosen,
	    "random rate %.4f", (double)other / (double)chosen);
	EXPECT(kept > 0.08 * (double)chosen && kept < 0.12 * (double)chosen,
	    "kept rate %.4f", (double)kept / (double)chosen);
	loader_close(l);
}

static void
test_seek_prefetch(void)
{
	char dir[512];
	struct loader *a, *p, *fresh;
	struct loader_pos pos, pos2;
	struct run r1 = { 0 }, r2 = { 0 }, r3 = { 0 }, r4 = { 0 }, r5 = { 0 };

	snprintf(dir, sizeof dir, "%s/order", tmpdir);
	a = open_loader(dir, 5, 1, 3, 1, 0);
	p = open_loader(dir, 5, 1, 3, 1, 3);
	take(a, 9, &r1);
	take(p, 9, &r2);
	EXPECT(run_eq(&r1, &r2), "prefetch 3 differs from none");
	loader_tell(a, &pos);
	loader_tell(p, &pos2);
	EXPECT(pos.epoch == pos2.epoch && pos.consumed == pos2.consumed,
	    "tell differs with prefetch");
	run_free(&r1);
	run_free(&r2);
	take(a, 7, &r1);
	EXPECT(loader_seek(a, &pos) == 0, "seek");
	take(a, 7, &r2);
	EXPECT(run_eq(&r1, &r2), "after seek, batches differ");
	EXPECT(loader_seek(p, &pos) == 0, "seek with prefetch");
	take(p, 7, &r3);
	EXPECT(run_eq(&r1, &r3), "after seek with prefetch, batches differ");
	fresh = open_loader(dir, 5, 1, 3, 1, 1);
	EXPECT(loader_seek(fresh, &pos) == 0, "seek of a fresh loader");
	take(fresh, 7, &r4);
	EXPECT(run_eq(&r1, &r4), "a fresh loader seeked differs");
	pos2.epoch = 0;
	pos2.consumed = 1000;
	EXPECT(loader_seek(fresh, &pos2) != 0, "seek past the epoch accepted");
	/* A position of another world size that leaves less than a global
	 * batch: the next epoch. */
	pos2.consumed = 100;
	EXPECT(loader_seek(fresh, &pos2) == 0, "seek near the end");
	loader_tell(fresh, &pos2);
	EXPECT(pos2.epoch == 1 && pos2.consumed == 0, "seek near the end: %" PRIu64 "/%" PRIu64,
	    pos2.epoch, pos2.consumed);
	take(fresh, 1, &r5);
	loader_close(a);
	loader_close(p);
	loader_close(fresh);
	run_free(&r1);
	run_free(&r2);
	run_free(&r3);
	run_free(&r4);
	run_free(&r5);
}

static void
test_loader_errors(void)
{
	char dir[512], other[600], err[512];
	struct loader_config c = { 0 };
	struct loader *l = NULL;
	uint8_t sha[32];
	int rc;

	snprintf(dir, sizeof dir, "%s/order", tmpdir);
	snprintf(other, sizeof other, "%s/other-vocab.txt", tmpdir);
	write_file(other, "[PAD]\n[UNK]\n", 12);
	c.dir = dir;
	c.batch = 4;
	c.nranks = 1;
	c.mask_prob = 0.15f;
	c.vocab = other;
	rc = loader_open(&c, &l, err, sizeof err);
	EXPECT(rc != 0 && strstr(err, other) != NULL && strstr(err, "shard-00000.bin") != NULL,
	    "wrong vocab: rc %d \"%s\"", rc, err);
	snprintf(other, sizeof other, "%s/vocab.txt", dir);
	c.vocab = other;
	rc = loader_open(&c, &l, err, sizeof err);
	EXPECT(rc == 0, "the right vocab: %s", err);
	loader_close(l);
	l = NULL;
	c.seq_len = 128;
	rc = loader_open(&c, &l, err, sizeof err);
	EXPECT(rc != 0 && strstr(err, "seq_len is 128") != NULL, "seq_len: \"%s\"", err);
	c.seq_len = 0;
	c.batch = 200;
	rc = loader_open(&c, &l, err, sizeof err);
	EXPECT(rc != 0 && strstr(err, "fewer than one global micro-batch") != NULL,
	    "batch over the set: \"%s\"", err);
	c.batch = 1;
	snprintf(other, sizeof other, "%s/missing", tmpdir);
	c.dir = other;
	rc = loader_open(&c, &l, err, sizeof err);
	EXPECT(rc != 0 && strstr(err, other) != NULL, "missing dir: \"%s\"", err);
	/* A set whose second shard is gone. */
	snprintf(other, sizeof other, "%s/order/shard-00001.bin", tmpdir);
	unlink(other);
	c.dir = dir;
	rc = loader_open(&c, &l, err, sizeof err);
	EXPECT(rc != 0 && strstr(err, "shard-00001.bin") != NULL, "missing shard: \"%s\"", err);
	(void)sha;
}

int
main(void)
{
	if (expect_mkdtemp(tmpdir, sizeof tmpdir, "test_shard") != 0)
		return 1;
	test_roundtrip();
	test_corrupt();
	test_order();
	test_epochs();
	test_masking();
	test_seek_prefetch();
	test_loader_errors();
	expect_rmtree(tmpdir);
	return expect_summary("test_shard");
}
