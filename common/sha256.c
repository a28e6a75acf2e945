#include "config.h"

#include <stdint.h>
#include <string.h>

#include "sha256.h"

/* FIPS 180-4, section 4.2.2: the first 32 bits of the fractional parts of
 * the cube roots of the first 64 primes. */
static const uint32_t sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5,
	0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
	0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
	0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5,
	0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t
ror32(uint32_t x, unsigned int n)
{
	return (x >> n) | (x << (32 - n));
}

static uint32_t
load_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void
store_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* One 64-byte block (section 6.2.2). */
static void
sha256_block(uint32_t st[8], const uint8_t *blk)
{
	uint32_t	w[64], a, b, c, d, e, f, g, h, t1, t2, s0, s1;
	int		i;

	for (i = 0; i < 16; i++)
		w[i] = load_be32(blk + 4 * i);
	for (i = 16; i < 64; i++) {
		s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^
		    (w[i - 15] >> 3);
		s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^
		    (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}

	a = st[0]; b = st[1]; c = st[2]; d = st[3];
	e = st[4]; f = st[5]; g = st[6]; h = st[7];
	for (i = 0; i < 64; i++) {
		s1 = ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25);
		t1 = h + s1 + ((e & f) ^ (~e & g)) + sha256_k[i] + w[i];
		s0 = ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22);
		t2 = s0 + ((a & b) ^ (a & c) ^ (b & c));
		h = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	st[0] += a; st[1] += b; st[2] += c; st[3] += d;
	st[4] += e; st[5] += f; st[6] += g; st[7] += h;
}

void
sha256_init(struct sha256_ctx *c)
{
	/* Section 5.3.3: square roots of the first 8 primes. */
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(c->state, iv, sizeof iv);
	c->bytes = 0;
	c->fill = 0;
	memset(c->block, 0, sizeof c->block);
}

void
sha256_update(struct sha256_ctx *c, const void *data, size_t n)
{
	const uint8_t	*p = data;
	size_t		 take;

	if (n == 0)
		return;
	c->bytes += n;
	if (c->fill > 0) {
		take = sizeof c->block - c->fill;
		if (take > n)
			take = n;
		memcpy(c->block + c->fill, p, take);
		c->fill += take;
		p += take;
		n -= take;
		if (c->fill < sizeof c->block)
			return;
		sha256_block(c->state, c->block);
		c->fill = 0;
	}
	for (; n >= sizeof c->block; p += sizeof c->block, n -= sizeof c->block)
		sha256_block(c->state, p);
	if (n > 0) {
		memcpy(c->block, p, n);
		c->fill = n;
	}
}

void
sha256_final(struct sha256_ctx *c, uint8_t out[SHA256_DIGEST_LEN])
{
	uint64_t	bits = c->bytes * 8;
	int		i;

	/* Section 5.1.1: a 1 bit, zeros to 56 mod 64 bytes, the bit length. */
	c->block[c->fill++] = 0x80;
	if (c->fill > 56) {
		memset(c->block + c->fill, 0, sizeof c->block - c->fill);
		sha256_block(c->state, c->block);
		c->fill = 0;
	}
	memset(c->block + c->fill, 0, 56 - c->fill);
	for (i = 0; i < 8; i++)
		c->block[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
	sha256_block(c->state, c->block);

	for (i = 0; i < 8; i++)
		store_be32(out + 4 * i, c->state[i]);
	/* Nothing of the message is left behind in the context. */
	memset(c, 0, sizeof *c);
}

void
sha256(const void *p, size_t n, uint8_t out[SHA256_DIGEST_LEN])
{
	struct sha256_ctx	c;

	sha256_init(&c);
	sha256_update(&c, p, n);
	sha256_final(&c, out);
}

void
sha256_hex(const uint8_t *digest, size_t nbytes, char *hex)
{
	static const char	digits[] = "0123456789abcdef";
	size_t			i;

	for (i = 0; i < nbytes; i++) {
		hex[2 * i] = digits[digest[i] >> 4];
		hex[2 * i + 1] = digits[digest[i] & 0x0f];
	}
	hex[2 * nbytes] = '\0';
}
