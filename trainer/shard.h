/*
 * Shards: the training data made by `cadre-train prep` (trainer/prep.c) and
 * read by the loader (trainer/loader.c). A shard set is a directory of
 * shard-00000.bin, shard-00001.bin, ..., a copy of the vocab.txt the ids
 * come from and, for classify, labels.txt (the label map, one name per
 * line, id = line - 1). Every shard's header says how many shards the set
 * has, so the headers are the manifest. The byte layout is in
 * docs/data.md; all numbers are little-endian.
 *
 * Nothing here needs the tokenizer: the loader reads shards on a GPU node
 * built without utf8proc.
 */
#ifndef CADRE_SHARD_H
#define CADRE_SHARD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define SHARD_MAGIC		"CADRESHD"
#define SHARD_VERSION		1
#define SHARD_HEADER_SIZE	256
/* Bounds on what a header may say. */
#define SHARD_MAX_SEQ_LEN	65536
#define SHARD_MAX_LABELS	4096
#define SHARD_MAX_LABEL_LEN	256	/* bytes of one label name */
#define SHARD_MAX_LABEL_BLOCK	(SHARD_MAX_LABELS * (SHARD_MAX_LABEL_LEN + 1))
#define SHARD_MAX_VOCAB		(1u << 24)
#define SHARD_MAX_SHARDS	100000	/* shard-NNNNN.bin */
#define SHARD_MAX_SEQUENCES	(UINT64_C(1) << 40)
/* Bytes before the ids of a record: length, type boundary, label. */
#define SHARD_RECORD_HEAD	12

enum shard_kind { SHARD_PRETRAIN = 0, SHARD_CLASSIFY = 1 };

/* The special tokens a shard records, in tokenizer.h's order. */
enum shard_special { SHARD_PAD, SHARD_UNK, SHARD_CLS, SHARD_SEP, SHARD_MASK,
	SHARD_NSPECIAL };

struct shard_info {
	enum shard_kind	 kind;
	uint32_t	 seq_len;
	uint64_t	 sequences;	/* of one shard, or of the whole set
					 * (shard_set) */
	uint32_t	 vocab_size;
	uint8_t		 vocab_sha256[32];
	int32_t		 special[SHARD_NSPECIAL];	/* -1: the vocab lacks it */
	uint32_t	 id_bytes;	/* 2 (vocab_size <= 65536) or 4 */
	uint32_t	 num_labels;	/* classify: classes; pretrain: 2 (NSP) */
	char		**label_names;	/* classify: num_labels names; else NULL */
	uint32_t	 shard_index;	/* this shard's number */
	uint32_t	 shards;	/* shards in the set */
};

/*
 * One sequence: ids[0..len) then padding. Token type is 1 from type_start
 * to len (segment B and its [SEP]), 0 before (and in the padding). label
 * is the NSP label (0: B follows A, 1: B is random) or the class.
 */
struct shard_seq {
	uint32_t	 len;
	uint32_t	 type_start;
	int32_t		 label;
	const int32_t	*ids;
};

/* Bytes of one record of info (ids padded to seq_len, 4-byte aligned). */
size_t shard_record_size(const struct shard_info *info);

/*
 * Writes one shard file (info's kind, seq_len, vocab fields, specials,
 * id_bytes, labels, shard_index and shards; sequences is n) with its
 * SHA-256 at the end. The sequences are checked against info (lengths,
 * ids, labels) first: a bad one is CADRE_ERR_INVALID naming its index.
 * Returns 0 or a negative cadre_err with a message in err.
 */
int shard_write(const char *path, const struct shard_info *info,
    const struct shard_seq *seqs, uint64_t n, char *err, size_t errlen);

/*
 * Checks a whole shard in memory: the header (every field in bounds and
 * consistent with the size), the label block, the SHA-256 at the end
 * (unless verify_checksum is 0: for the fuzzer) and every record. info
 * gets the header, its label_names allocated (shard_info_free). name is
 * what messages call the file: "NAME: FIELD: what is wrong; the fix".
 */
int shard_parse(const char *name, const uint8_t *data, size_t len,
    int verify_checksum, struct shard_info *info, char *err, size_t errlen);
/* shard_parse() with the checks that read the whole file chosen: the
 * checksum, every record; the header, labels and size are always
 * checked. Record errors name the byte offset: "NAME: byte N: record I:
 * ...". */
#define SHARD_CHECK_SUM		1
#define SHARD_CHECK_RECORDS	2
#define SHARD_CHECK_ALL		(SHARD_CHECK_SUM | SHARD_CHECK_RECORDS)
int shard_parse_checks(const char *name, const uint8_t *data, size_t len,
    int checks, struct shard_info *info, char *err, size_t errlen);
void shard_info_free(struct shard_info *info);

/* Where a shard file's checksum and records stand. */
enum { SHARD_FILE_PENDING = 0, SHARD_FILE_OK = 1, SHARD_FILE_BAD = 2 };

/* One shard file, mapped read-only and checked by shard_parse(): in full
 * (state OK), or its header only, the rest owed (PENDING: a shard set's
 * file that its verification record vouches for). */
struct shard_file {
	char		*path;
	struct shard_info info;
	const uint8_t	*map;
	size_t		 size;
	const uint8_t	*records;
	size_t		 record_size;
	atomic_int	 state;
	pthread_mutex_t	 mu;	/* held while the owed checks run */
	char		*bad;	/* why they failed */
};

int shard_open(const char *path, struct shard_file **out, char *err,
    size_t errlen);
void shard_close(struct shard_file *f);

/* Record i (< info.sequences) of f: ids decoded into ids[seq_len]
 * (padding is [PAD]); *len, *type_start and *label as struct shard_seq. */
void shard_read(const struct shard_file *f, uint64_t i, int32_t *ids,
    uint32_t *len, uint32_t *type_start, int32_t *label);

/*
 * A whole shard set: DIR/shard-00000.bin says how many shards there are;
 * every one is opened and must agree with the first on kind, seq_len,
 * vocab, specials and labels. info.sequences is the total.
 *
 * Verification: DIR/verified.rec (common/filerec.h; written by prep and by
 * the first full check) lists each shard's size, mtime, ctime, inode,
 * device and checksum. A shard whose metadata and checksum match its line
 * is opened by its header alone and verified lazily: by a background
 * thread, in order, and by the first read of one of its records, which
 * waits for it; nothing of a shard is read before all of it checked out.
 * Other shards, and all of them with SHARD_VERIFY_FULL, are checked in
 * full when the set opens.
 */
#define SHARD_RECORD_FILE	"verified.rec"

enum shard_verify { SHARD_VERIFY_META, SHARD_VERIFY_FULL };

struct shard_set {
	char			*dir;
	struct shard_info	 info;
	struct shard_file	**files;
	uint64_t		*first;	/* global index of each file's record 0 */
	pthread_t		 thread;	/* the background verifier */
	int			 running;
	atomic_int		 stop;
	atomic_int		 failed;	/* 1 + the shard it found bad */
};

int shard_set_open(const char *dir, enum shard_verify verify,
    struct shard_set **out, char *err, size_t errlen);
void shard_set_close(struct shard_set *s);
/* Record g (< info.sequences) of the set, as shard_read(), once its shard
 * is verified: 0, or CADRE_ERR_IO with the shard's error (naming the file
 * and, for a bad record, its byte offset) in err. */
int shard_set_read(const struct shard_set *s, uint64_t g, int32_t *ids,
    uint32_t *len, uint32_t *type_start, int32_t *label, char *err,
    size_t errlen);
/* 0 unless the background verifier found a bad shard: then CADRE_ERR_IO
 * and its error in err. */
int shard_set_failed(const struct shard_set *s, char *err, size_t errlen);
/* Verifies every shard still owed, now: 0 or the first error. */
int shard_set_wait(struct shard_set *s, char *err, size_t errlen);
/* Writes DIR/verified.rec for shards 0..shards-1 just written (prep):
 * their metadata and the checksums at their ends, nothing read again. */
int shard_set_record(const char *dir, uint32_t shards, char *err,
    size_t errlen);

#endif
