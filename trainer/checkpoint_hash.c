/*
 * Checksums without reading the files back. model.safetensors and
 * trainer_state.safetensors are 8 bytes of header length, the header, then
 * the tensors' bytes, and those bytes are the snapshot in memory: the
 * header is read back (kilobytes), parsed, each tensor's byte range mapped
 * to the memory it was written from, and the hash fed the header, then the
 * memory in file order. One pass over the data and no copy, where reading
 * the files back cost a copy of 1.3 GB on bert-base and a hash that could
 * not start before its file was written. A model's headers are the same
 * at every checkpoint: the writer thread keeps them from its first
 * checkpoint and hashes while the files are written, then checks the
 * headers on disk against the kept ones. Anything unexpected (a header
 * that differs or does not map) falls back to hashing the file.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint_int.h"
#include "error.h"
#include "log.h"
#include "safetensors.h"
#include "sha256.h"
#include "xmalloc.h"

static int
pread_full(int fd, void *p, size_t n, off_t off)
{
	ssize_t r;

	while (n > 0) {
		if ((r = pread(fd, p, n, off)) == -1) {
			if (errno == EINTR)
				continue;
			return CADRE_ERR_SYSTEM;
		}
		if (r == 0) {
			errno = EIO;
			return CADRE_ERR_SYSTEM;
		}
		p = (char *)p + r;
		n -= (size_t)r;
		off += r;
	}
	return 0;
}

/* The first 8 + header-length bytes of a safetensors file, and its size. */
static int
read_st_header(const char *path, uint8_t **hdrp, size_t *lenp, uint64_t *sizep)
{
	struct stat	 sb;
	uint8_t		 lenb[8], *h = NULL;
	uint64_t	 hlen = 0;
	int		 fd, i, error;

	*hdrp = NULL;
	*lenp = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return CADRE_ERR_SYSTEM;
	if (fstat(fd, &sb) == -1) {
		error = CADRE_ERR_SYSTEM;
		goto out;
	}
	if ((error = pread_full(fd, lenb, 8, 0)) != 0)
		goto out;
	for (i = 0; i < 8; i++)
		hlen |= (uint64_t)lenb[i] << (8 * i);
	if (hlen > ST_MAX_HEADER || 8 + hlen > (uint64_t)sb.st_size) {
		errno = EINVAL;
		error = CADRE_ERR_SYSTEM;
		goto out;
	}
	h = xmalloc(8 + hlen);
	memcpy(h, lenb, 8);
	if ((error = pread_full(fd, h + 8, hlen, 8)) != 0)
		goto out;
	*hdrp = h;
	h = NULL;
	*lenp = 8 + hlen;
	*sizep = (uint64_t)sb.st_size;
out:
	free(h);
	close(fd);
	return error;
}

struct hash_order {
	uint64_t	begin;
	size_t		piece;
};

static int
cmp_begin(const void *a, const void *b)
{
	const struct hash_order *x = a, *y = b;

	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* The hash of j->hdr and the pieces where the header places them; 0 with
 * j->mapped unset when the header does not hold exactly the pieces. */
static void
hash_memory(struct hash_job *j)
{
	struct st_file		 f;
	struct sha256_ctx	 c;
	struct hash_order	*ord;
	uint64_t		 total = 0;
	uint8_t			 dg[SHA256_DIGEST_LEN];
	char			 err[256];
	size_t			 i, k;

	j->mapped = 0;
	for (i = 0; i < j->npc; i++)
		total += j->pc[i].bytes;
	memset(&f, 0, sizeof f);
	f.fd = -1;
	/* It checks what makes the mapping whole: names unique, each range
	 * numel * size long, inside total, none overlapping. */
	if (st_parse_header((const char *)j->hdr + 8, j->hdrlen - 8, total, &f,
	    err, sizeof err) != 0) {
		log_debug("%s: %s", j->path, err);
		return;
	}
	ord = xcalloc(f.n > 0 ? f.n : 1, sizeof *ord);
	for (i = 0; i < f.n; i++) {
		for (k = 0; k < j->npc; k++)
			if (strcmp(f.t[i].name, j->pc[k].name) == 0)
				break;
		if (k == j->npc || f.t[i].end - f.t[i].begin != j->pc[k].bytes)
			goto out;
		ord[i].begin = f.t[i].begin;
		ord[i].piece = k;
	}
	if (f.n != j->npc)
		goto out;
	qsort(ord, f.n, sizeof *ord, cmp_begin);
	sha256_init(&c);
	sha256_update(&c, j->hdr, j->hdrlen);
	for (i = 0; i < f.n; i++)
		sha256_update(&c, j->pc[ord[i].piece].data, j->pc[ord[i].piece].bytes);
	sha256_final(&c, dg);
	sha256_hex(dg, SHA256_DIGEST_LEN, j->hex);
	j->bytes = j->hdrlen + total;
	j->mapped = 1;
out:
	for (i = 0; i < f.n; i++)
		free(f.t[i].name);
	free(f.t);
	free(ord);
}

/* A job whose file is written: its header read back (unless kept), then
 * the hash from memory. */
void *
ckpt_hash_main(void *arg)
{
	struct hash_job	*j = arg;
	uint64_t	 size;

	if (j->hdr == NULL && (j->error = read_st_header(j->path, &j->hdr,
	    &j->hdrlen, &size)) != 0) {
		j->saved_errno = errno;
		return NULL;
	}
	hash_memory(j);
	return NULL;
}

/* hashing: bit 0 set while hth[0] hashes job 0, bit 2 while hth[1]
 * hashes job 2. */
void
ckpt_join_hashing(pthread_t hth[2], int *hashing)
{
	int i;

	for (i = 0; i < 3; i += 2)
		if (*hashing & 1 << i)
			pthread_join(hth[i / 2], NULL);
	*hashing = 0;
}

/*
 * After the writes: config.json hashed from its file; each large file's
 * header and size on disk checked against what was hashed, the file hashed
 * instead where they differ. The headers go into hc (when there is one)
 * for the next checkpoint.
 */
int
ckpt_hash_jobs_finish(struct hash_job j[3], struct hdr_cache *hc,
    char sums[3][65], uint64_t *bytes, char *err, size_t errlen)
{
	uint8_t		*h = NULL;
	size_t		 hl;
	uint64_t	 size;
	int		 i, error = 0;

	for (i = 0; i < 3; i++) {
		if (i == 1) {
			if ((error = sha256_file(j[i].path, j[i].hex, &j[i].bytes)) != 0) {
				snprintf(err, errlen, "%s: %s", j[i].path, strerror(errno));
				goto out;
			}
			continue;
		}
		if ((error = j[i].error) != 0) {
			snprintf(err, errlen, "%s: %s", j[i].path, strerror(j[i].saved_errno));
			goto out;
		}
		if ((error = read_st_header(j[i].path, &h, &hl, &size)) != 0) {
			snprintf(err, errlen, "%s: %s", j[i].path, strerror(errno));
			goto out;
		}
		if (!j[i].mapped || hl != j[i].hdrlen || memcmp(h, j[i].hdr, hl) != 0 ||
		    size != j[i].bytes) {
			log_debug("%s: hashing the file (its header %s)", j[i].path,
			    j[i].mapped ? "changed" : "does not map to the snapshot");
			if ((error = sha256_file(j[i].path, j[i].hex, &j[i].bytes)) != 0) {
				snprintf(err, errlen, "%s: %s", j[i].path, strerror(errno));
				goto out;
			}
		}
		if (hc != NULL) {
			free(hc->hdr[i / 2]);
			hc->hdr[i / 2] = h;
			hc->len[i / 2] = hl;
			h = NULL;
		}
		free(h);
		h = NULL;
	}
	for (i = 0; i < 3; i++) {
		memcpy(sums[i], j[i].hex, sizeof j[i].hex);
		*bytes += j[i].bytes;
	}
out:
	free(h);
	return error;
}

void
ckpt_hash_jobs_free(struct hash_job j[3])
{
	int i;

	for (i = 0; i < 3; i++) {
		free(j[i].path);
		free(j[i].pc);
		free(j[i].hdr);
	}
	memset(j, 0, 3 * sizeof *j);
}
