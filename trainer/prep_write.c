/*
 * `cadre-train prep`'s output: the shard files, vocab.txt (checked to be
 * the vocab the ids are of) and labels.txt written into a temporary
 * directory, which is then renamed to --out.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "prep_int.h"
#include "sha256.h"
#include "shard.h"
#include "tokenizer.h"
#include "xmalloc.h"

static int
write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	int rc = 0;

	if (f == NULL)
		return CADRE_ERR_SYSTEM;
	if (n > 0 && fwrite(p, 1, n, f) != n)
		rc = -1;
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		rc = -1;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

static int
read_whole(const char *path, size_t max, char **out, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	char *p;

	*out = NULL;
	if (fd < 0)
		return CADRE_ERR_SYSTEM;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		close(fd);
		errno = EINVAL;
		return CADRE_ERR_SYSTEM;
	}
	p = xmalloc((size_t)st.st_size + 1);
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, p + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	*out = p;
	*len = got;
	return 0;
}

/* Writes the set into tmp (made by the caller, removed by it on failure)
 * and renames tmp to o->out. */
int
prep_write_set(const struct prep_opts *o, const struct tokenizer *tok,
    const struct out_seqs *os, char **label_names, uint32_t nlabels,
    const char *tmp, uint32_t *nshards_out)
{
	struct shard_info in;
	char *path = NULL, *vtext = NULL, err[512];
	uint8_t sha[32];
	uint64_t nshards, k, first;
	size_t vlen, i;
	int rc = 1;

	memset(&in, 0, sizeof in);
	in.kind = o->task;
	in.seq_len = o->seq_len;
	in.vocab_size = tok_vocab_size(tok);
	memcpy(in.vocab_sha256, tok_vocab_hash(tok), 32);
	for (i = 0; i < SHARD_NSPECIAL; i++)
		in.special[i] = tok_special_id(tok, (enum tok_special)i);
	in.id_bytes = in.vocab_size <= 65536 ? 2 : 4;
	in.num_labels = o->task == SHARD_CLASSIFY ? nlabels : 2;
	in.label_names = o->task == SHARD_CLASSIFY ? label_names : NULL;
	nshards = (os->nseqs + o->shard_size - 1) / o->shard_size;
	if (nshards > SHARD_MAX_SHARDS) {
		fprintf(stderr, "cadre-train prep: %zu sequences make more than %d shards of %" PRIu64 ": use a larger --shard-size\n",
		    os->nseqs, SHARD_MAX_SHARDS, o->shard_size);
		return 2;
	}
	in.shards = (uint32_t)nshards;

	/* The ids of the sequences are in os->ids at offs. */
	{
		struct shard_seq *seqs = xcalloc(os->nseqs > 0 ? os->nseqs : 1, sizeof *seqs);

		for (i = 0; i < os->nseqs; i++) {
			seqs[i] = os->seqs[i];
			seqs[i].ids = os->ids + os->offs[i];
		}
		for (k = 0, first = 0; k < nshards; k++) {
			uint64_t n = os->nseqs - first < o->shard_size ? os->nseqs - first : o->shard_size;

			in.shard_index = (uint32_t)k;
			free(path);
			xasprintf(&path, "%s/shard-%05" PRIu64 ".bin", tmp, k);
			if (shard_write(path, &in, seqs + first, n, err, sizeof err) != 0) {
				fprintf(stderr, "cadre-train prep: %s\n", err);
				free(seqs);
				goto out;
			}
			first += n;
		}
		free(seqs);
	}
	/* The vocab the ids are of, checked to be the one loaded. */
	if (read_whole(o->vocab, TOK_VOCAB_MAX_FILE, &vtext, &vlen) != 0) {
		fprintf(stderr, "cadre-train prep: %s: %s\n", o->vocab, strerror(errno));
		goto out;
	}
	sha256(vtext, vlen, sha);
	if (memcmp(sha, tok_vocab_hash(tok), 32) != 0) {
		fprintf(stderr, "cadre-train prep: %s changed while prep ran\n", o->vocab);
		goto out;
	}
	free(path);
	xasprintf(&path, "%s/vocab.txt", tmp);
	if (write_bytes(path, vtext, vlen) != 0) {
		fprintf(stderr, "cadre-train prep: %s: %s\n", path, strerror(errno));
		goto out;
	}
	if (o->task == SHARD_CLASSIFY) {
		FILE *f;

		free(path);
		xasprintf(&path, "%s/labels.txt", tmp);
		if ((f = fopen(path, "w")) == NULL) {
			fprintf(stderr, "cadre-train prep: %s: %s\n", path, strerror(errno));
			goto out;
		}
		for (i = 0; i < nlabels; i++)
			fprintf(f, "%s\n", label_names[i]);
		if (fflush(f) != 0 || ferror(f) || fclose(f) != 0) {
			fprintf(stderr, "cadre-train prep: %s: %s\n", path, strerror(errno));
			goto out;
		}
	}
	/* The set's verification record: the loader's later starts open it
	 * by its headers and verify the rest lazily (shard.h). */
	if (shard_set_record(tmp, (uint32_t)nshards, err, sizeof err) != 0) {
		fprintf(stderr, "cadre-train prep: %s\n", err);
		goto out;
	}
	if (rename(tmp, o->out) != 0) {
		fprintf(stderr, "cadre-train prep: renaming %s to %s: %s\n", tmp, o->out,
		    strerror(errno));
		goto out;
	}
	*nshards_out = (uint32_t)nshards;
	rc = 0;
out:
	free(vtext);
	free(path);
	return rc;
}
