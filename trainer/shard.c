/* Shard files: writing, checking, mapping (layout in docs/data.md). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "error.h"
#include "filerec.h"
#include "sha256.h"
#include "shard.h"
#include "strutil.h"
#include "xmalloc.h"

/* Header field offsets. */
#define H_MAGIC		0
#define H_VERSION	8
#define H_KIND		12
#define H_SEQ_LEN	16
#define H_VOCAB_SIZE	20
#define H_VOCAB_SHA	24
#define H_SPECIAL	56
#define H_ID_BYTES	76
#define H_NUM_LABELS	80
#define H_SHARD_INDEX	84
#define H_SHARDS	88
#define H_RECORD_SIZE	92
#define H_SEQUENCES	96
#define H_LABELS_OFF	104
#define H_LABELS_SIZE	112
#define H_RECORDS_OFF	120
#define H_RECORDS_SIZE	128
#define H_RESERVED	136

#define REDO	"run cadre-train prep again"

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void
put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static uint64_t
get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

size_t
shard_record_size(const struct shard_info *info)
{
	size_t n = SHARD_RECORD_HEAD + (size_t)info->id_bytes * info->seq_len;

	return (n + 3) & ~(size_t)3;
}

static uint64_t
align8(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}

static size_t
label_block_size(const struct shard_info *info)
{
	size_t n = 0;
	uint32_t i;

	if (info->label_names == NULL)
		return 0;
	for (i = 0; i < info->num_labels; i++)
		n += strlen(info->label_names[i]) + 1;
	return n;
}

/* Checks what a writer and a reader both require of a header's values;
 * field names are those of docs/data.md. */
static int
check_fields(const char *name, const struct shard_info *in, char *err,
    size_t errlen)
{
	int i;

	if (in->kind != SHARD_PRETRAIN && in->kind != SHARD_CLASSIFY) {
		snprintf(err, errlen, "%s: kind: %u is neither 0 (pretrain) nor 1 (classify); " REDO,
		    name, (unsigned)in->kind);
		return CADRE_ERR_INVALID;
	}
	if (in->seq_len < 2 || in->seq_len > SHARD_MAX_SEQ_LEN) {
		snprintf(err, errlen, "%s: seq_len: %" PRIu32 " is not from 2 to %d; " REDO,
		    name, in->seq_len, SHARD_MAX_SEQ_LEN);
		return CADRE_ERR_RANGE;
	}
	if (in->vocab_size < SHARD_NSPECIAL || in->vocab_size > SHARD_MAX_VOCAB) {
		snprintf(err, errlen, "%s: vocab_size: %" PRIu32 " is not from %d to %u; " REDO,
		    name, in->vocab_size, SHARD_NSPECIAL, SHARD_MAX_VOCAB);
		return CADRE_ERR_RANGE;
	}
	if (in->id_bytes != 2 && in->id_bytes != 4) {
		snprintf(err, errlen, "%s: id_bytes: %" PRIu32 " is neither 2 nor 4; " REDO,
		    name, in->id_bytes);
		return CADRE_ERR_INVALID;
	}
	if (in->id_bytes == 2 && in->vocab_size > 65536) {
		snprintf(err, errlen, "%s: id_bytes: 2 cannot hold the ids of a vocab of %" PRIu32 "; " REDO,
		    name, in->vocab_size);
		return CADRE_ERR_INVALID;
	}
	for (i = 0; i < SHARD_NSPECIAL; i++) {
		if (in->special[i] < -1 || in->special[i] >= (int64_t)in->vocab_size) {
			snprintf(err, errlen, "%s: special[%d]: id %" PRId32 " is outside the vocab (%" PRIu32 " tokens); " REDO,
			    name, i, in->special[i], in->vocab_size);
			return CADRE_ERR_RANGE;
		}
	}
	if (in->special[SHARD_UNK] < 0 || in->special[SHARD_CLS] < 0 ||
	    in->special[SHARD_SEP] < 0 ||
	    (in->kind == SHARD_PRETRAIN && in->special[SHARD_MASK] < 0)) {
		snprintf(err, errlen, "%s: special: the vocab lacks [UNK], [CLS], [SEP] or (pretrain) [MASK]; " REDO " with a BERT vocab",
		    name);
		return CADRE_ERR_INVALID;
	}
	if (in->kind == SHARD_PRETRAIN ? in->num_labels != 2 :
	    (in->num_labels < 1 || in->num_labels > SHARD_MAX_LABELS)) {
		snprintf(err, errlen, "%s: num_labels: %" PRIu32 " is not %s; " REDO,
		    name, in->num_labels, in->kind == SHARD_PRETRAIN ?
		    "2 (NSP) for a pretrain shard" : "from 1 to 4096");
		return CADRE_ERR_RANGE;
	}
	if (in->shards < 1 || in->shards > SHARD_MAX_SHARDS ||
	    in->shard_index >= in->shards) {
		snprintf(err, errlen, "%s: shard_index/shards: %" PRIu32 " of %" PRIu32 " is not a shard of a set of 1 to %d; " REDO,
		    name, in->shard_index, in->shards, SHARD_MAX_SHARDS);
		return CADRE_ERR_RANGE;
	}
	if (in->sequences > SHARD_MAX_SEQUENCES) {
		snprintf(err, errlen, "%s: sequences: %" PRIu64 " is over %" PRIu64 "; " REDO,
		    name, in->sequences, SHARD_MAX_SEQUENCES);
		return CADRE_ERR_RANGE;
	}
	return 0;
}

/* A record's fields against the header: its own errors name the record. */
static int
check_record(const char *name, const struct shard_info *in, uint64_t i,
    uint32_t len, uint32_t type_start, int32_t label, const uint8_t *idp,
    const int32_t *ids, char *err, size_t errlen)
{
	int32_t pad = in->special[SHARD_PAD] >= 0 ? in->special[SHARD_PAD] : 0;
	uint32_t t;

	if (len < 1 || len > in->seq_len) {
		snprintf(err, errlen, "%s: record %" PRIu64 ": length %" PRIu32 " is not from 1 to seq_len %" PRIu32 "; " REDO,
		    name, i, len, in->seq_len);
		return CADRE_ERR_INVALID;
	}
	if (type_start > len) {
		snprintf(err, errlen, "%s: record %" PRIu64 ": type_start %" PRIu32 " is past its length %" PRIu32 "; " REDO,
		    name, i, type_start, len);
		return CADRE_ERR_INVALID;
	}
	if (label < 0 || (uint32_t)label >= in->num_labels) {
		snprintf(err, errlen, "%s: record %" PRIu64 ": label %" PRId32 " is not from 0 to %" PRIu32 "; " REDO,
		    name, i, label, in->num_labels - 1);
		return CADRE_ERR_INVALID;
	}
	for (t = 0; t < in->seq_len; t++) {
		int64_t id;

		if (ids != NULL)
			id = t < len ? ids[t] : pad;
		else
			id = in->id_bytes == 2 ? get16(idp + 2 * (size_t)t) :
			    (int32_t)get32(idp + 4 * (size_t)t);
		if (t < len ? (id < 0 || id >= in->vocab_size) : id != pad) {
			snprintf(err, errlen, "%s: record %" PRIu64 ": token %" PRIu32 ": id %" PRId64 " is %s; " REDO,
			    name, i, t, id, t < len ? "outside the vocab" : "padding that is not [PAD]");
			return CADRE_ERR_INVALID;
		}
	}
	return 0;
}

static int
write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return CADRE_ERR_SYSTEM;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Buffered writes that also feed the checksum. */
struct wbuf {
	int			 fd;
	struct sha256_ctx	 sha;
	uint8_t			 buf[1 << 16];
	size_t			 fill;
	int			 failed;
};

static void
wbuf_flush(struct wbuf *w)
{
	if (!w->failed && w->fill > 0 && write_all(w->fd, w->buf, w->fill) != 0)
		w->failed = errno != 0 ? errno : EIO;
	w->fill = 0;
}

static void
wbuf_put(struct wbuf *w, const void *p, size_t n)
{
	const uint8_t *b = p;

	sha256_update(&w->sha, p, n);
	while (n > 0) {
		size_t k = sizeof w->buf - w->fill;

		if (k > n)
			k = n;
		memcpy(w->buf + w->fill, b, k);
		w->fill += k;
		b += k;
		n -= k;
		if (w->fill == sizeof w->buf)
			wbuf_flush(w);
	}
}

int
shard_write(const char *path, const struct shard_info *info,
    const struct shard_seq *seqs, uint64_t n, char *err, size_t errlen)
{
	struct shard_info in = *info;
	struct wbuf *w = NULL;
	uint8_t hdr[SHARD_HEADER_SIZE], *rec = NULL, digest[SHA256_DIGEST_LEN];
	size_t rsize, lsize;
	uint64_t i, roff;
	uint32_t t;
	int32_t pad;
	int rc, fd = -1;

	in.sequences = n;
	if ((rc = check_fields(path, &in, err, errlen)) != 0)
		return rc;
	if (in.kind == SHARD_CLASSIFY) {
		if (in.label_names == NULL) {
			snprintf(err, errlen, "%s: a classify shard needs label names", path);
			return CADRE_ERR_INVALID;
		}
		for (t = 0; t < in.num_labels; t++) {
			size_t l = strlen(in.label_names[t]);

			if (l == 0 || l > SHARD_MAX_LABEL_LEN ||
			    memchr(in.label_names[t], '\n', l) != NULL ||
			    !str_valid_utf8(in.label_names[t], l, NULL)) {
				snprintf(err, errlen, "%s: label %" PRIu32 " \"%.40s\": empty, over %d bytes, with a newline, or not UTF-8",
				    path, t, in.label_names[t], SHARD_MAX_LABEL_LEN);
				return CADRE_ERR_INVALID;
			}
		}
	} else
		in.label_names = NULL;
	for (i = 0; i < n; i++) {
		rc = check_record(path, &in, i, seqs[i].len, seqs[i].type_start,
		    seqs[i].label, NULL, seqs[i].ids, err, errlen);
		if (rc != 0)
			return rc;
	}
	rsize = shard_record_size(&in);
	lsize = label_block_size(&in);
	roff = align8(SHARD_HEADER_SIZE + lsize);

	memset(hdr, 0, sizeof hdr);
	memcpy(hdr + H_MAGIC, SHARD_MAGIC, 8);
	put32(hdr + H_VERSION, SHARD_VERSION);
	put32(hdr + H_KIND, (uint32_t)in.kind);
	put32(hdr + H_SEQ_LEN, in.seq_len);
	put32(hdr + H_VOCAB_SIZE, in.vocab_size);
	memcpy(hdr + H_VOCAB_SHA, in.vocab_sha256, 32);
	for (t = 0; t < SHARD_NSPECIAL; t++)
		put32(hdr + H_SPECIAL + 4 * t, (uint32_t)in.special[t]);
	put32(hdr + H_ID_BYTES, in.id_bytes);
	put32(hdr + H_NUM_LABELS, in.num_labels);
	put32(hdr + H_SHARD_INDEX, in.shard_index);
	put32(hdr + H_SHARDS, in.shards);
	put32(hdr + H_RECORD_SIZE, (uint32_t)rsize);
	put64(hdr + H_SEQUENCES, n);
	put64(hdr + H_LABELS_OFF, SHARD_HEADER_SIZE);
	put64(hdr + H_LABELS_SIZE, lsize);
	put64(hdr + H_RECORDS_OFF, roff);
	put64(hdr + H_RECORDS_SIZE, n * rsize);

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return CADRE_ERR_SYSTEM;
	}
	w = xcalloc(1, sizeof *w);
	w->fd = fd;
	sha256_init(&w->sha);
	wbuf_put(w, hdr, sizeof hdr);
	for (t = 0; t < in.num_labels && in.label_names != NULL; t++) {
		wbuf_put(w, in.label_names[t], strlen(in.label_names[t]));
		wbuf_put(w, "\n", 1);
	}
	memset(hdr, 0, 8);
	wbuf_put(w, hdr, (size_t)(roff - SHARD_HEADER_SIZE - lsize));

	pad = in.special[SHARD_PAD] >= 0 ? in.special[SHARD_PAD] : 0;
	rec = xmalloc(rsize);
	for (i = 0; i < n; i++) {
		memset(rec, 0, rsize);
		put32(rec, seqs[i].len);
		put32(rec + 4, seqs[i].type_start);
		put32(rec + 8, (uint32_t)seqs[i].label);
		for (t = 0; t < in.seq_len; t++) {
			uint32_t id = (uint32_t)(t < seqs[i].len ? seqs[i].ids[t] : pad);

			if (in.id_bytes == 2) {
				rec[SHARD_RECORD_HEAD + 2 * t] = (uint8_t)id;
				rec[SHARD_RECORD_HEAD + 2 * t + 1] = (uint8_t)(id >> 8);
			} else
				put32(rec + SHARD_RECORD_HEAD + 4 * (size_t)t, id);
		}
		wbuf_put(w, rec, rsize);
	}
	sha256_final(&w->sha, digest);
	wbuf_flush(w);
	if (!w->failed && write_all(fd, digest, sizeof digest) != 0)
		w->failed = errno != 0 ? errno : EIO;
	if (!w->failed && fsync(fd) != 0)
		w->failed = errno;
	if (close(fd) != 0 && !w->failed)
		w->failed = errno;
	fd = -1;
	rc = 0;
	if (w->failed) {
		snprintf(err, errlen, "%s: writing: %s", path, strerror(w->failed));
		unlink(path);
		rc = CADRE_ERR_IO;
	}
	free(rec);
	free(w);
	return rc;
}

void
shard_info_free(struct shard_info *info)
{
	uint32_t i;

	if (info == NULL || info->label_names == NULL)
		return;
	for (i = 0; i < info->num_labels; i++)
		free(info->label_names[i]);
	free(info->label_names);
	info->label_names = NULL;
}

static int
parse_labels(const char *name, const uint8_t *p, size_t n,
    struct shard_info *in, char *err, size_t errlen)
{
	size_t pos = 0;
	uint32_t i;

	if (in->kind == SHARD_PRETRAIN) {
		if (n != 0) {
			snprintf(err, errlen, "%s: labels_size: %zu, but a pretrain shard has no label block; " REDO,
			    name, n);
			return CADRE_ERR_INVALID;
		}
		return 0;
	}
	in->label_names = xcalloc(in->num_labels, sizeof *in->label_names);
	for (i = 0; i < in->num_labels; i++) {
		const uint8_t *nl = pos < n ? memchr(p + pos, '\n', n - pos) : NULL;
		size_t l;

		if (nl == NULL) {
			snprintf(err, errlen, "%s: label block: %" PRIu32 " names where num_labels says %" PRIu32 "; " REDO,
			    name, i, in->num_labels);
			goto fail;
		}
		l = (size_t)(nl - (p + pos));
		if (l == 0 || l > SHARD_MAX_LABEL_LEN || memchr(p + pos, '\0', l) != NULL ||
		    !str_valid_utf8((const char *)p + pos, l, NULL)) {
			snprintf(err, errlen, "%s: label block: label %" PRIu32 " is empty, over %d bytes, or not UTF-8; " REDO,
			    name, i, SHARD_MAX_LABEL_LEN);
			goto fail;
		}
		in->label_names[i] = xstrndup((const char *)p + pos, l);
		pos += l + 1;
	}
	if (pos != n) {
		snprintf(err, errlen, "%s: label block: %zu bytes after the %" PRIu32 " labels; " REDO,
		    name, n - pos, in->num_labels);
		goto fail;
	}
	return 0;
fail:
	shard_info_free(in);
	return CADRE_ERR_INVALID;
}

/* The SHA-256 at the end of a shard against the bytes before it, in
 * 16 MiB pieces, giving up (CADRE_ERR_CANCELLED) when *stop (not NULL)
 * is set between them: the background verifier of a set being closed. */
static int
check_sum(const char *name, const uint8_t *data, size_t len,
    const atomic_int *stop, char *err, size_t errlen)
{
	struct sha256_ctx c;
	uint8_t digest[SHA256_DIGEST_LEN];
	size_t off, n, body = len - SHA256_DIGEST_LEN;

	sha256_init(&c);
	for (off = 0; off < body; off += n) {
		if (stop != NULL && atomic_load(stop)) {
			sha256_discard(&c);
			return CADRE_ERR_CANCELLED;
		}
		n = body - off < ((size_t)16 << 20) ? body - off : (size_t)16 << 20;
		sha256_update(&c, data + off, n);
	}
	sha256_final(&c, digest);
	if (memcmp(digest, data + body, SHA256_DIGEST_LEN) != 0) {
		snprintf(err, errlen, "%s: checksum mismatch: the file is corrupt or truncated; " REDO,
		    name);
		return CADRE_ERR_IO;
	}
	return 0;
}

/* Every record of a shard whose header in describes: an error names the
 * record and its byte offset in the file. */
static int
check_records(const char *name, const uint8_t *data,
    const struct shard_info *in, uint64_t roff, char *err, size_t errlen)
{
	size_t rsz = shard_record_size(in), k;
	char where[4200];
	uint64_t i;
	int rc;

	for (i = 0; i < in->sequences; i++) {
		const uint8_t *r = data + roff + i * rsz;

		rc = check_record(name, in, i, get32(r), get32(r + 4),
		    (int32_t)get32(r + 8), r + SHARD_RECORD_HEAD, NULL, err, errlen);
		if (rc != 0) {
			/* Again, to name the offset (formatted only now:
			 * sets have millions of records). */
			snprintf(where, sizeof where, "%s: byte %" PRIu64, name, roff + i * rsz);
			return check_record(where, in, i, get32(r), get32(r + 4),
			    (int32_t)get32(r + 8), r + SHARD_RECORD_HEAD, NULL, err, errlen);
		}
		for (k = SHARD_RECORD_HEAD + (size_t)in->id_bytes * in->seq_len; k < rsz; k++) {
			if (r[k] != 0) {
				snprintf(where, sizeof where, "%s: byte %" PRIu64, name,
				    roff + i * rsz);
				snprintf(err, errlen, "%s: record %" PRIu64 ": padding is not zero; " REDO,
				    where, i);
				return CADRE_ERR_INVALID;
			}
		}
	}
	return 0;
}

int
shard_parse(const char *name, const uint8_t *data, size_t len,
    int verify_checksum, struct shard_info *info, char *err, size_t errlen)
{
	return shard_parse_checks(name, data, len, SHARD_CHECK_RECORDS |
	    (verify_checksum ? SHARD_CHECK_SUM : 0), info, err, errlen);
}

int
shard_parse_checks(const char *name, const uint8_t *data, size_t len,
    int checks, struct shard_info *info, char *err, size_t errlen)
{
	struct shard_info in;
	uint64_t loff, lsize, roff, rsize, expect;
	uint32_t version, rsz, t;
	int rc;

	memset(info, 0, sizeof *info);
	memset(&in, 0, sizeof in);
	if (len < 8 || memcmp(data + H_MAGIC, SHARD_MAGIC, 8) != 0) {
		snprintf(err, errlen, "%s: magic: not a cadre shard (no \"CADRESHD\" at its start); make shards with cadre-train prep",
		    name);
		return CADRE_ERR_INVALID;
	}
	if (len < SHARD_HEADER_SIZE + SHA256_DIGEST_LEN) {
		snprintf(err, errlen, "%s: truncated: %zu bytes, shorter than the %d-byte header and checksum; " REDO,
		    name, len, SHARD_HEADER_SIZE);
		return CADRE_ERR_IO;
	}
	version = get32(data + H_VERSION);
	if (version != SHARD_VERSION) {
		snprintf(err, errlen, "%s: version: format %" PRIu32 ", this cadre-train reads format %d; %s",
		    name, version, SHARD_VERSION, version > SHARD_VERSION ?
		    "use a newer cadre-train or " REDO : REDO);
		return CADRE_ERR_VERSION;
	}
	in.kind = (enum shard_kind)get32(data + H_KIND);
	in.seq_len = get32(data + H_SEQ_LEN);
	in.vocab_size = get32(data + H_VOCAB_SIZE);
	memcpy(in.vocab_sha256, data + H_VOCAB_SHA, 32);
	for (t = 0; t < SHARD_NSPECIAL; t++)
		in.special[t] = (int32_t)get32(data + H_SPECIAL + 4 * t);
	in.id_bytes = get32(data + H_ID_BYTES);
	in.num_labels = get32(data + H_NUM_LABELS);
	in.shard_index = get32(data + H_SHARD_INDEX);
	in.shards = get32(data + H_SHARDS);
	in.sequences = get64(data + H_SEQUENCES);
	rsz = get32(data + H_RECORD_SIZE);
	loff = get64(data + H_LABELS_OFF);
	lsize = get64(data + H_LABELS_SIZE);
	roff = get64(data + H_RECORDS_OFF);
	rsize = get64(data + H_RECORDS_SIZE);
	if ((rc = check_fields(name, &in, err, errlen)) != 0)
		return rc;
	if (rsz != shard_record_size(&in)) {
		snprintf(err, errlen, "%s: record_size: %" PRIu32 ", but seq_len %" PRIu32 " and id_bytes %" PRIu32 " make %zu; " REDO,
		    name, rsz, in.seq_len, in.id_bytes, shard_record_size(&in));
		return CADRE_ERR_INVALID;
	}
	for (t = H_RESERVED; t < SHARD_HEADER_SIZE; t++) {
		if (data[t] != 0) {
			snprintf(err, errlen, "%s: reserved: byte %" PRIu32 " of the header is not zero; " REDO,
			    name, t);
			return CADRE_ERR_INVALID;
		}
	}
	if (loff != SHARD_HEADER_SIZE) {
		snprintf(err, errlen, "%s: labels_offset: %" PRIu64 ", not %d; " REDO,
		    name, loff, SHARD_HEADER_SIZE);
		return CADRE_ERR_INVALID;
	}
	if (lsize > SHARD_MAX_LABEL_BLOCK) {
		snprintf(err, errlen, "%s: labels_size: %" PRIu64 " is over %d; " REDO,
		    name, lsize, SHARD_MAX_LABEL_BLOCK);
		return CADRE_ERR_TOO_LARGE;
	}
	if (roff != align8(loff + lsize)) {
		snprintf(err, errlen, "%s: records_offset: %" PRIu64 ", not %" PRIu64 " (after the labels); " REDO,
		    name, roff, align8(loff + lsize));
		return CADRE_ERR_INVALID;
	}
	/* sequences <= 2^40 and rsz < 2^19: no overflow. */
	if (rsize != in.sequences * rsz) {
		snprintf(err, errlen, "%s: records_size: %" PRIu64 ", but %" PRIu64 " records of %" PRIu32 " bytes make %" PRIu64 "; " REDO,
		    name, rsize, in.sequences, rsz, in.sequences * rsz);
		return CADRE_ERR_INVALID;
	}
	expect = roff + rsize + SHA256_DIGEST_LEN;
	if ((uint64_t)len != expect) {
		snprintf(err, errlen, "%s: %s: %zu bytes, the header says %" PRIu64 "; " REDO,
		    name, (uint64_t)len < expect ? "truncated" : "trailing bytes",
		    len, expect);
		return CADRE_ERR_IO;
	}
	if ((checks & SHARD_CHECK_SUM) && (rc = check_sum(name, data, len, NULL, err, errlen)) != 0)
		return rc;
	if (in.kind == SHARD_CLASSIFY && lsize == 0) {
		snprintf(err, errlen, "%s: labels_size: 0, but a classify shard names its labels; " REDO,
		    name);
		return CADRE_ERR_INVALID;
	}
	if ((rc = parse_labels(name, data + loff, (size_t)lsize, &in, err, errlen)) != 0)
		return rc;
	for (t = (uint32_t)(loff + lsize); t < roff; t++) {
		if (data[t] != 0) {
			snprintf(err, errlen, "%s: padding before the records is not zero; " REDO,
			    name);
			rc = CADRE_ERR_INVALID;
			goto fail;
		}
	}
	if ((checks & SHARD_CHECK_RECORDS) &&
	    (rc = check_records(name, data, &in, roff, err, errlen)) != 0)
		goto fail;
	*info = in;
	return 0;
fail:
	shard_info_free(&in);
	return rc;
}

/* Maps path and checks what checks asks (SHARD_CHECK_*; the header and
 * size always); *sb: its metadata. */
static int
open_checked(const char *path, int checks, struct shard_file **out,
    struct stat *sb, char *err, size_t errlen)
{
	struct shard_file *f = NULL;
	void *map;
	int fd, rc;

	*out = NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "%s: %s%s", path, strerror(errno),
		    errno == ENOENT ? "; make shards with cadre-train prep" : "");
		return errno == ENOENT ? CADRE_ERR_NOT_FOUND : CADRE_ERR_SYSTEM;
	}
	if (fstat(fd, sb) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return CADRE_ERR_SYSTEM;
	}
	if (!S_ISREG(sb->st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		close(fd);
		return CADRE_ERR_INVALID;
	}
	if (sb->st_size == 0) {
		snprintf(err, errlen, "%s: truncated: the file is empty; " REDO, path);
		close(fd);
		return CADRE_ERR_IO;
	}
	map = mmap(NULL, (size_t)sb->st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		snprintf(err, errlen, "%s: mmap: %s", path, strerror(errno));
		return CADRE_ERR_SYSTEM;
	}
	f = xcalloc(1, sizeof *f);
	f->path = xstrdup(path);
	f->map = map;
	f->size = (size_t)sb->st_size;
	pthread_mutex_init(&f->mu, NULL);
	rc = shard_parse_checks(path, f->map, f->size, checks, &f->info, err, errlen);
	if (rc != 0) {
		shard_close(f);
		return rc;
	}
	f->record_size = shard_record_size(&f->info);
	f->records = f->map + get64(f->map + H_RECORDS_OFF);
	atomic_store(&f->state, checks == SHARD_CHECK_ALL ? SHARD_FILE_OK :
	    SHARD_FILE_PENDING);
	*out = f;
	return 0;
}

int
shard_open(const char *path, struct shard_file **out, char *err,
    size_t errlen)
{
	struct stat sb;

	return open_checked(path, SHARD_CHECK_ALL, out, &sb, err, errlen);
}

void
shard_close(struct shard_file *f)
{
	if (f == NULL)
		return;
	if (f->map != NULL)
		munmap((void *)f->map, f->size);
	pthread_mutex_destroy(&f->mu);
	shard_info_free(&f->info);
	free(f->bad);
	free(f->path);
	free(f);
}

/*
 * The checks a lazily opened file still owes (checksum, records), once:
 * 0 when they pass (or passed), else the error that failed them, kept in
 * f->bad for every later caller. A verification stopped by *stop leaves
 * the file pending.
 */
static int
verify_file(struct shard_file *f, const atomic_int *stop, char *err,
    size_t errlen)
{
	int rc = 0;

	if (atomic_load(&f->state) == SHARD_FILE_OK)
		return 0;
	pthread_mutex_lock(&f->mu);
	if (atomic_load(&f->state) == SHARD_FILE_PENDING) {
		char msg[4400];

		rc = check_sum(f->path, f->map, f->size, stop, msg, sizeof msg);
		if (rc == 0)
			rc = check_records(f->path, f->map, &f->info,
			    (uint64_t)(f->records - f->map), msg, sizeof msg);
		if (rc == 0)
			atomic_store(&f->state, SHARD_FILE_OK);
		else if (rc != CADRE_ERR_CANCELLED) {
			f->bad = xstrdup(msg);
			atomic_store(&f->state, SHARD_FILE_BAD);
		}
	}
	if (atomic_load(&f->state) == SHARD_FILE_BAD) {
		snprintf(err, errlen, "%s", f->bad);
		rc = CADRE_ERR_IO;
	}
	pthread_mutex_unlock(&f->mu);
	return rc;
}

void
shard_read(const struct shard_file *f, uint64_t i, int32_t *ids,
    uint32_t *len, uint32_t *type_start, int32_t *label)
{
	const uint8_t *r = f->records + i * f->record_size;
	const uint8_t *p = r + SHARD_RECORD_HEAD;
	uint32_t t, T = f->info.seq_len;

	*len = get32(r);
	*type_start = get32(r + 4);
	*label = (int32_t)get32(r + 8);
	if (f->info.id_bytes == 2) {
		for (t = 0; t < T; t++)
			ids[t] = get16(p + 2 * (size_t)t);
	} else {
		for (t = 0; t < T; t++)
			ids[t] = (int32_t)get32(p + 4 * (size_t)t);
	}
}

/* ------------------------------------------------------------ shard sets */

static int
same_set(const struct shard_info *a, const struct shard_info *b)
{
	uint32_t i;

	if (a->kind != b->kind || a->seq_len != b->seq_len ||
	    a->vocab_size != b->vocab_size || a->id_bytes != b->id_bytes ||
	    a->num_labels != b->num_labels || a->shards != b->shards ||
	    memcmp(a->vocab_sha256, b->vocab_sha256, 32) != 0 ||
	    memcmp(a->special, b->special, sizeof a->special) != 0)
		return 0;
	for (i = 0; a->label_names != NULL && i < a->num_labels; i++)
		if (strcmp(a->label_names[i], b->label_names[i]) != 0)
			return 0;
	return 1;
}

/* Verifies the lazily opened shards in order until done, stopped, or one
 * fails (the readers and shard_set_failed() then report it). */
static void *
verifier(void *arg)
{
	struct shard_set *s = arg;
	char err[64];
	uint32_t i;

	for (i = 0; i < s->info.shards && !atomic_load(&s->stop); i++)
		if (verify_file(s->files[i], &s->stop, err, sizeof err) == CADRE_ERR_IO) {
			atomic_store(&s->failed, (int)i + 1);
			break;
		}
	return NULL;
}

static void
checksum_hex(const struct shard_file *f, char hex[65])
{
	sha256_hex(f->map + f->size - SHA256_DIGEST_LEN, SHA256_DIGEST_LEN, hex);
}

int
shard_set_open(const char *dir, enum shard_verify verify,
    struct shard_set **out, char *err, size_t errlen)
{
	struct filerec_set rec, now;
	const struct filerec *r;
	struct shard_set *s;
	struct stat st;
	char *path = NULL, name[32], hex[65], why[512];
	uint32_t i;
	int rc, checks, full = 0, lazy = 0;

	*out = NULL;
	memset(&rec, 0, sizeof rec);
	memset(&now, 0, sizeof now);
	if (stat(dir, &st) != 0) {
		snprintf(err, errlen, "%s: %s; make a shard set with cadre-train prep --out %s",
		    dir, strerror(errno), dir);
		return CADRE_ERR_NOT_FOUND;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: not a directory; a shard set is the directory cadre-train prep --out makes",
		    dir);
		return CADRE_ERR_INVALID;
	}
	/* A record that cannot be read only costs the full check. */
	xasprintf(&path, "%s/" SHARD_RECORD_FILE, dir);
	if (verify == SHARD_VERIFY_META)
		(void)filerec_load(path, &rec, why, sizeof why);
	s = xcalloc(1, sizeof *s);
	s->dir = xstrdup(dir);
	s->files = xcalloc(1, sizeof *s->files);
	for (i = 0; i == 0 || i < s->info.shards; i++) {
		snprintf(name, sizeof name, "shard-%05" PRIu32 ".bin", i);
		free(path);
		xasprintf(&path, "%s/%s", dir, name);
		/* Metadata the record vouches for: the header now, the
		 * rest on first read or by the verifier. */
		checks = SHARD_CHECK_ALL;
		if ((r = filerec_find(&rec, name)) != NULL && lstat(path, &st) == 0 &&
		    filerec_same(r, &st))
			checks = 0;
		if ((rc = open_checked(path, checks, &s->files[i], &st, err, errlen)) != 0)
			goto fail;
		checksum_hex(s->files[i], hex);
		if (checks == 0 && strcmp(hex, r->sha256) != 0) {
			/* Changed behind unchanged metadata: check it all. */
			shard_close(s->files[i]);
			s->files[i] = NULL;
			if ((rc = open_checked(path, SHARD_CHECK_ALL, &s->files[i], &st, err,
			    errlen)) != 0)
				goto fail;
			checks = SHARD_CHECK_ALL;
		}
		full += checks != 0;
		lazy += checks == 0;
		filerec_add(&now, name, &st, hex);
		if (i == 0) {
			if (s->files[0]->info.shard_index != 0) {
				snprintf(err, errlen, "%s: shard_index: %" PRIu32 " in the file of shard 0; " REDO,
				    path, s->files[0]->info.shard_index);
				rc = CADRE_ERR_INVALID;
				goto fail;
			}
			s->info = s->files[0]->info;
			s->info.label_names = NULL;
			s->files = xreallocarray(s->files, s->info.shards, sizeof *s->files);
			memset(s->files + 1, 0, (s->info.shards - 1) * sizeof *s->files);
			s->first = xcalloc(s->info.shards + 1, sizeof *s->first);
			s->info.sequences = 0;
		} else if (s->files[i]->info.shard_index != i ||
		    !same_set(&s->files[0]->info, &s->files[i]->info)) {
			snprintf(err, errlen, "%s: its header (shard_index, kind, seq_len, vocab or labels) does not match %s/shard-00000.bin's: the directory mixes shard sets; " REDO,
			    path, dir);
			rc = CADRE_ERR_INVALID;
			goto fail;
		}
		s->first[i] = s->info.sequences;
		s->info.sequences += s->files[i]->info.sequences;
	}
	s->first[s->info.shards] = s->info.sequences;
	s->info.label_names = s->files[0]->info.label_names;
	/* The first full check leaves a record for the next start; a set in
	 * a directory this process cannot write is checked in full again. */
	if (full > 0) {
		free(path);
		xasprintf(&path, "%s/" SHARD_RECORD_FILE, dir);
		(void)filerec_save(path, &now);
	}
	if (lazy > 0) {
		if (pthread_create(&s->thread, NULL, verifier, s) != 0) {
			snprintf(err, errlen, "%s: cannot start the shard verifier: %s",
			    dir, strerror(errno));
			rc = CADRE_ERR_SYSTEM;
			goto fail;
		}
		s->running = 1;
	}
	free(path);
	filerec_free(&rec);
	filerec_free(&now);
	*out = s;
	return 0;
fail:
	free(path);
	filerec_free(&rec);
	filerec_free(&now);
	if (s->info.shards == 0)
		s->info.shards = 1;
	shard_set_close(s);
	return rc;
}

int
shard_set_record(const char *dir, uint32_t shards, char *err, size_t errlen)
{
	struct filerec_set now;
	struct stat st;
	uint8_t sum[SHA256_DIGEST_LEN];
	char *path = NULL, name[32], hex[65];
	uint32_t i;
	int fd, rc = 0;

	memset(&now, 0, sizeof now);
	for (i = 0; i < shards && rc == 0; i++) {
		snprintf(name, sizeof name, "shard-%05" PRIu32 ".bin", i);
		free(path);
		xasprintf(&path, "%s/%s", dir, name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) != 0 ||
		    st.st_size < SHA256_DIGEST_LEN ||
		    pread(fd, sum, sizeof sum, st.st_size - SHA256_DIGEST_LEN) != (ssize_t)sizeof sum)
			rc = cadre_errf(err, errlen, CADRE_ERR_SYSTEM, "%s: %s", path,
			    strerror(errno));
		else {
			sha256_hex(sum, sizeof sum, hex);
			filerec_add(&now, name, &st, hex);
		}
		if (fd >= 0)
			close(fd);
	}
	free(path);
	xasprintf(&path, "%s/" SHARD_RECORD_FILE, dir);
	if (rc == 0 && (rc = filerec_save(path, &now)) != 0)
		cadre_errf(err, errlen, rc, "%s: %s", path, strerror(errno));
	free(path);
	filerec_free(&now);
	return rc;
}

int
shard_set_failed(const struct shard_set *s, char *err, size_t errlen)
{
	int i = atomic_load(&s->failed);

	if (i == 0)
		return 0;
	return verify_file(s->files[i - 1], NULL, err, errlen);
}

int
shard_set_wait(struct shard_set *s, char *err, size_t errlen)
{
	uint32_t i;
	int rc;

	for (i = 0; i < s->info.shards; i++)
		if ((rc = verify_file(s->files[i], NULL, err, errlen)) != 0)
			return rc;
	return 0;
}

void
shard_set_close(struct shard_set *s)
{
	uint32_t i;

	if (s == NULL)
		return;
	if (s->running) {
		atomic_store(&s->stop, 1);
		pthread_join(s->thread, NULL);
	}
	for (i = 0; s->files != NULL && i < s->info.shards; i++)
		shard_close(s->files[i]);
	free(s->files);
	free(s->first);
	free(s->dir);
	free(s);
}

int
shard_set_read(const struct shard_set *s, uint64_t g, int32_t *ids,
    uint32_t *len, uint32_t *type_start, int32_t *label, char *err,
    size_t errlen)
{
	uint32_t lo = 0, hi = s->info.shards;
	int rc;

	/* The last file whose first record is <= g. */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (s->first[mid] <= g)
			lo = mid;
		else
			hi = mid;
	}
	/* Nothing of a shard is used before all of it checked out. */
	if ((rc = verify_file(s->files[lo], NULL, err, errlen)) != 0)
		return rc;
	shard_read(s->files[lo], g - s->first[lo], ids, len, type_start, label);
	return 0;
}
