/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3", SC 2011): a counter-based generator, so that any element's random
 * number can be computed on its own, on the CPU or on a GPU thread. */
#ifndef CADRE_PHILOX_H
#define CADRE_PHILOX_H

#include <stdint.h>

#define PHILOX_M0	UINT32_C(0xD2511F53)
#define PHILOX_M1	UINT32_C(0xCD9E8D57)
#define PHILOX_W0	UINT32_C(0x9E3779B9)
#define PHILOX_W1	UINT32_C(0xBB67AE85)

/* Ten rounds of Philox4x32 on ctr with key; out gets four words. Inline:
 * it is the inner loop of dropout. */
static inline void
philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
	uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
	uint32_t k0 = key[0], k1 = key[1];
	int	 r;

	for (r = 0; r < 10; r++) {
		uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
		uint64_t p1 = (uint64_t)PHILOX_M1 * c2;

		c0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
		c1 = (uint32_t)p1;
		c2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
		c3 = (uint32_t)p0;
		k0 += PHILOX_W0;
		k1 += PHILOX_W1;
	}
	out[0] = c0;
	out[1] = c1;
	out[2] = c2;
	out[3] = c3;
}

/*
 * What one dropout mask is keyed by. The element's random word is word
 * (elem % 4) of the block with
 *   key     = { seed & 0xffffffff, seed >> 32 }
 *   counter = { elem / 4, (layer << 8) | tensor, step & 0xffffffff, step >> 32 }
 * and it is kept when (word >> 8) * 2^-24 >= p (docs/trainer.md).
 */
struct dropout_key {
	uint64_t	seed;
	uint64_t	step;	/* micro-batch counter: step * grad_accum + micro */
	uint32_t	layer;	/* < 2^24 */
	uint32_t	tensor;	/* < 256, enum dropout_tensor */
	float		p;	/* drop probability; 0 disables */
};

enum dropout_tensor {
	DROPOUT_EMBEDDINGS = 0,	/* layer 0: after the embedding LayerNorm */
	DROPOUT_ATTN_PROBS = 1,	/* attention probabilities, (B, nh, T, T) */
	DROPOUT_ATTN_OUT = 2,	/* attention output projection, (B, T, H) */
	DROPOUT_FFN_OUT = 3,	/* FFN output projection, (B, T, H) */
	DROPOUT_CLASSIFIER = 4	/* layer L: pooled output before the classifier */
};

/* Uniform float in [0, 1) from a 32-bit word: 24 high bits. */
static inline float
philox_uniform(uint32_t w)
{
	return (float)(w >> 8) * (1.0f / 16777216.0f);
}

/* Multiplies x[0..n) in place by the mask (0 or 1/(1-p)) of elements
 * first..first+n of the keyed tensor. */
void dropout_apply(const struct dropout_key *k, uint64_t first, float *x, uint64_t n);

#endif
