#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "sha256.h"
#include "xmalloc.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define SHA256_HAVE_NI 1
#include <cpuid.h>
#include <immintrin.h>
#endif

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
portable_block(uint32_t st[8], const uint8_t *blk)
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

static void
portable_blocks(uint32_t st[8], const uint8_t *p, size_t nblocks)
{
	for (; nblocks > 0; nblocks--, p += 64)
		portable_block(st, p);
}

#ifdef SHA256_HAVE_NI
/*
 * The same blocks through the SHA extensions (Intel since Goldmont and Ice
 * Lake, AMD since Zen). The target attribute lets this file build without
 * -msha; sha256_blocks calls it only where CPUID says the CPU has them.
 * The state is kept as the extensions want it (ABEF, CDGH) for the run of
 * blocks and put back into a, b, ..., h order at the end.
 */
__attribute__((target("sha,sse4.1,ssse3")))
static void
ni_blocks(uint32_t state[8], const uint8_t *p, size_t nblocks)
{
	const __m128i	mask = _mm_set_epi64x(0x0c0d0e0f08090a0bULL,
			    0x0405060700010203ULL);
	__m128i		s0, s1, tmp, msg, m[4], abef, cdgh;
	int		g;

	tmp = _mm_loadu_si128((const __m128i *)(const void *)&state[0]);
	s1 = _mm_loadu_si128((const __m128i *)(const void *)&state[4]);
	tmp = _mm_shuffle_epi32(tmp, 0xB1);		/* CDAB */
	s1 = _mm_shuffle_epi32(s1, 0x1B);		/* EFGH */
	s0 = _mm_alignr_epi8(tmp, s1, 8);		/* ABEF */
	s1 = _mm_blend_epi16(s1, tmp, 0xF0);		/* CDGH */
	while (nblocks-- > 0) {
		abef = s0;
		cdgh = s1;
		/* 16 groups of 4 rounds; the schedule in m[] rotates: msg1
		 * starts a group's words three groups ahead, msg2 ends them
		 * one group ahead. */
		for (g = 0; g < 16; g++) {
			if (g < 4)
				m[g] = _mm_shuffle_epi8(_mm_loadu_si128(
				    (const __m128i *)(const void *)(p + 16 * g)),
				    mask);
			msg = _mm_add_epi32(m[g & 3], _mm_loadu_si128(
			    (const __m128i *)(const void *)&sha256_k[4 * g]));
			s1 = _mm_sha256rnds2_epu32(s1, s0, msg);
			if (g >= 3 && g <= 14) {
				tmp = _mm_alignr_epi8(m[g & 3], m[(g - 1) & 3], 4);
				m[(g + 1) & 3] = _mm_add_epi32(m[(g + 1) & 3], tmp);
				m[(g + 1) & 3] = _mm_sha256msg2_epu32(m[(g + 1) & 3],
				    m[g & 3]);
			}
			msg = _mm_shuffle_epi32(msg, 0x0E);
			s0 = _mm_sha256rnds2_epu32(s0, s1, msg);
			if (g >= 1 && g <= 12)
				m[(g - 1) & 3] = _mm_sha256msg1_epu32(m[(g - 1) & 3],
				    m[g & 3]);
		}
		s0 = _mm_add_epi32(s0, abef);
		s1 = _mm_add_epi32(s1, cdgh);
		p += 64;
	}
	tmp = _mm_shuffle_epi32(s0, 0x1B);		/* FEBA */
	s1 = _mm_shuffle_epi32(s1, 0xB1);		/* DCHG */
	s0 = _mm_blend_epi16(tmp, s1, 0xF0);		/* DCBA */
	s1 = _mm_alignr_epi8(s1, tmp, 8);		/* ABEF */
	_mm_storeu_si128((__m128i *)(void *)&state[0], s0);
	_mm_storeu_si128((__m128i *)(void *)&state[4], s1);
}

/* CPUID straight (GCC 12's __builtin_cpu_supports has no "sha"): leaf 7
 * EBX bit 29, and SSSE3 and SSE4.1 (leaf 1 ECX bits 9 and 19) for the
 * shuffles around it. */
static int
cpu_has_sha(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c >> 9 & 1) || !(c >> 19 & 1))
		return 0;
	return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 29 & 1);
}
#else
static int
cpu_has_sha(void)
{
	return 0;
}
#endif

/* -1 until the first hash decides; then 1 (SHA extensions) or 0. An
 * atomic, so that threads hashing at once may race to decide: they all
 * decide the same. */
static atomic_int sha256_ni = -1;

static int
use_ni(void)
{
	const char	*e;
	int		 v;

	v = atomic_load_explicit(&sha256_ni, memory_order_relaxed);
	if (v < 0) {
		e = getenv("CADRE_SHA256_PORTABLE");
		v = (e == NULL || strcmp(e, "1") != 0) && cpu_has_sha();
		atomic_store_explicit(&sha256_ni, v, memory_order_relaxed);
	}
	return v;
}

void
sha256_force_portable(int on)
{
	atomic_store_explicit(&sha256_ni, on ? 0 : cpu_has_sha(),
	    memory_order_relaxed);
}

const char *
sha256_impl(void)
{
	return use_ni() ? "sha-ni" : "portable";
}

static void
sha256_blocks(uint32_t st[8], const uint8_t *p, size_t nblocks)
{
#ifdef SHA256_HAVE_NI
	if (use_ni()) {
		ni_blocks(st, p, nblocks);
		return;
	}
#endif
	portable_blocks(st, p, nblocks);
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
		sha256_blocks(c->state, c->block, 1);
		c->fill = 0;
	}
	/* Whole blocks straight from the caller's memory, no copy. */
	sha256_blocks(c->state, p, n / sizeof c->block);
	p += n / sizeof c->block * sizeof c->block;
	n %= sizeof c->block;
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
		sha256_blocks(c->state, c->block, 1);
		c->fill = 0;
	}
	memset(c->block + c->fill, 0, 56 - c->fill);
	for (i = 0; i < 8; i++)
		c->block[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
	sha256_blocks(c->state, c->block, 1);

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

int
sha256_file(const char *path, char hex[2 * SHA256_DIGEST_LEN + 1],
    uint64_t *bytes)
{
	struct sha256_ctx	 c;
	uint8_t			 dg[SHA256_DIGEST_LEN];
	char			*buf;
	ssize_t			 n;
	int			 fd, error = 0;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return CADRE_ERR_SYSTEM;
	buf = xmalloc(4 << 20);
	sha256_init(&c);
	*bytes = 0;
	while ((n = read(fd, buf, 4 << 20)) != 0) {
		if (n == -1) {
			if (errno == EINTR)
				continue;
			error = CADRE_ERR_SYSTEM;
			break;
		}
		sha256_update(&c, buf, (size_t)n);
		*bytes += (uint64_t)n;
	}
	free(buf);
	close(fd);
	if (error == 0) {
		sha256_final(&c, dg);
		sha256_hex(dg, SHA256_DIGEST_LEN, hex);
	}
	return error;
}
