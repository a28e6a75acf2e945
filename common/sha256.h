/*
 * SHA-256 (FIPS 180-4): run ids, checksums of shards and checkpoints.
 * On x86-64 CPUs with the SHA extensions the blocks go through them
 * (about 1 GB/s on the build machine against 110-200 MB/s for the
 * portable C; tests/unit/test_sha256 prints both), chosen at run time:
 * the same context, the same digests, whichever path hashes.
 */
#ifndef CADRE_SHA256_H
#define CADRE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_LEN 32

struct sha256_ctx {
	uint32_t	state[8];
	uint64_t	bytes;
	uint8_t		block[64];
	size_t		fill;
};

void sha256_init(struct sha256_ctx *c);
void sha256_update(struct sha256_ctx *c, const void *p, size_t n);
void sha256_final(struct sha256_ctx *c, uint8_t out[SHA256_DIGEST_LEN]);
void sha256(const void *p, size_t n, uint8_t out[SHA256_DIGEST_LEN]);
/* Lower-case hex of the first nbytes of a digest; hex holds 2*nbytes+1. */
void sha256_hex(const uint8_t *digest, size_t nbytes, char *hex);

/* SHA-256 of the file at path, read in 4 MiB blocks: 0 with the hex
 * digest and the size, or CADRE_ERR_SYSTEM (errno set). */
int sha256_file(const char *path, char hex[2 * SHA256_DIGEST_LEN + 1],
    uint64_t *bytes);

/* The path hashing now: "sha-ni" or "portable". */
const char *sha256_impl(void);
/* For tests and benchmarks: on != 0 makes every hash take the portable
 * path, 0 gives the choice back to the CPU check. Either may be called at
 * any time, even between updates of one context. The environment
 * variable CADRE_SHA256_PORTABLE=1, read once, does what on = 1 does. */
void sha256_force_portable(int on);

#endif
