#include "config.h"

#include "philox.h"


/* Blocks per batch: the rounds run across lanes, which the compiler
 * vectorises (AVX-512 or AVX2 clones where the CPU has them). */
#define LANES	16

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__)
#define DROPOUT_CLONES	__attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DROPOUT_CLONES
#endif

/* The mask factors (0 or scale) of elements 4*b0 .. 4*(b0+LANES)-1. */
DROPOUT_CLONES static void
dropout_lanes(const struct dropout_key *k, uint64_t b0, float scale,
    float f[4 * LANES])
{
	uint32_t c0[LANES], c1[LANES], c2[LANES], c3[LANES];
	uint32_t k0 = (uint32_t)k->seed, k1 = (uint32_t)(k->seed >> 32);
	int	 r, i;

	for (i = 0; i < LANES; i++) {
		c0[i] = (uint32_t)(b0 + (uint64_t)i);
		c1[i] = (k->layer << 8) | k->tensor;
		c2[i] = (uint32_t)k->step;
		c3[i] = (uint32_t)(k->step >> 32);
	}
	for (r = 0; r < 10; r++) {
		for (i = 0; i < LANES; i++) {
			uint64_t p0 = (uint64_t)PHILOX_M0 * c0[i];
			uint64_t p1 = (uint64_t)PHILOX_M1 * c2[i];
			uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[i] ^ k0;
			uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3[i] ^ k1;

			c1[i] = (uint32_t)p1;
			c3[i] = (uint32_t)p0;
			c0[i] = n0;
			c2[i] = n2;
		}
		k0 += PHILOX_W0;
		k1 += PHILOX_W1;
	}
	for (i = 0; i < LANES; i++) {
		f[4 * i + 0] = philox_uniform(c0[i]) >= k->p ? scale : 0.0f;
		f[4 * i + 1] = philox_uniform(c1[i]) >= k->p ? scale : 0.0f;
		f[4 * i + 2] = philox_uniform(c2[i]) >= k->p ? scale : 0.0f;
		f[4 * i + 3] = philox_uniform(c3[i]) >= k->p ? scale : 0.0f;
	}
}

void
dropout_apply(const struct dropout_key *k, uint64_t first, float *x, uint64_t n)
{
	const float	scale = 1.0f / (1.0f - k->p);
	const uint64_t	e0 = first & ~(uint64_t)(4 * LANES - 1);
	int64_t		c, nc;

	if (k->p <= 0.0f || n == 0)
		return;
	/* Chunks of 4*LANES elements aligned on the element index, so that a
	 * slice gets the same mask as the whole tensor. */
	nc = (int64_t)((first + n - e0 + 4 * LANES - 1) / (4 * LANES));
#pragma omp parallel for schedule(static)
	for (c = 0; c < nc; c++) {
		uint64_t lo = e0 + (uint64_t)c * 4 * LANES, hi = lo + 4 * LANES, e;
		float	 f[4 * LANES];

		dropout_lanes(k, lo >> 2, scale, f);
		if (lo < first)
			lo = first;
		if (hi > first + n)
			hi = first + n;
		for (e = lo; e < hi; e++)
			x[e - first] *= f[e & (4 * LANES - 1)];
	}
}
