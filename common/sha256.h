/* SHA-256 (FIPS 180-4): run ids, checksums. */
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

#endif
