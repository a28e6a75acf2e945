/*
 * SHA-256 (FIPS 180-4): run ids, checksums of shards, checkpoints and
 * staged files. The blocks go through libcrypto's EVP interface, which
 * picks the CPU's SHA extensions where it has them.
 */
#ifndef CADRE_SHA256_H
#define CADRE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_LEN 32

/* md is libcrypto's context, allocated by sha256_init() and freed by
 * sha256_final() or sha256_discard(). */
struct sha256_ctx {
	void	*md;
};

void sha256_init(struct sha256_ctx *c);
void sha256_update(struct sha256_ctx *c, const void *p, size_t n);
void sha256_final(struct sha256_ctx *c, uint8_t out[SHA256_DIGEST_LEN]);
/* Frees a context that will not be finished (an error path); a finished
 * or discarded one is left alone. */
void sha256_discard(struct sha256_ctx *c);
void sha256(const void *p, size_t n, uint8_t out[SHA256_DIGEST_LEN]);
/* Lower-case hex of the first nbytes of a digest; hex holds 2*nbytes+1. */
void sha256_hex(const uint8_t *digest, size_t nbytes, char *hex);

/* Whether s[0..n) is a digest as sha256_hex() writes it: n is 64, every
 * character a lower-case hex digit. */
int sha256_hex_ok(const char *s, size_t n);

/* SHA-256 of the file at path, read in 4 MiB blocks: 0 with the hex
 * digest and the size, or CADRE_ERR_SYSTEM (errno set). */
int sha256_file(const char *path, char hex[2 * SHA256_DIGEST_LEN + 1],
    uint64_t *bytes);

#endif
