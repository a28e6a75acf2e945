/*
 * A micro-batch for the device: checked against the model, the MLM
 * positions and the embedding gradients' segments made on the host, then
 * one copy from a pinned staging buffer.
 */
#include "config.h"

#include "engine_int.cuh"

/* ---------------------------------------------------------------- batches */

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Segments of equal keys, rows in increasing order: the embedding
 * gradients' owner-per-row sums (k_seg_rows_add). */
static int
make_segments(struct gpu_trainer *g, const int32_t *keys, int n, int32_t *key,
    int32_t *start, int32_t *rows)
{
	int i, ns = 0;

	for (i = 0; i < n; i++)
		g->sortbuf[i] = ((int64_t)keys[i] << 32) | (int64_t)i;
	qsort(g->sortbuf, (size_t)n, sizeof *g->sortbuf, cmp_i64);
	for (i = 0; i < n; i++) {
		int32_t k = (int32_t)(g->sortbuf[i] >> 32);

		if (i == 0 || k != key[ns - 1]) {
			key[ns] = k;
			start[ns] = i;
			ns++;
		}
		rows[i] = (int32_t)(g->sortbuf[i] & 0xffffffff);
	}
	start[ns] = n;
	return ns;
}

/* The micro-batch into the pinned staging buffer, checked, then to the
 * device in one copy. */
int
stage_batch(struct gpu_trainer *g, const struct bert_batch *b, char *err,
    size_t errlen)
{
	int32_t *h = g->h_batch;
	int N = g->N, B = g->B, i, M = 0, error;

	if (b->B != g->B || b->T != g->Tn) {
		errf(err, errlen, "a micro-batch of %d x %d, but the GPU buffers are "
		    "for %d x %d", b->B, b->T, g->B, g->Tn);
		return CADRE_ERR_INVALID;
	}
	for (i = 0; i < N; i++) {
		if (b->ids[i] < 0 || b->ids[i] >= g->V || b->types[i] < 0 ||
		    b->types[i] >= g->c.type_vocab) {
			errf(err, errlen, "token %d: id %d or type %d outside the model's "
			    "vocab (%d) or token types (%d)", i, b->ids[i], b->types[i],
			    g->V, g->c.type_vocab);
			return CADRE_ERR_INVALID;
		}
	}
	memcpy(h + (g->ids - g->d_batch), b->ids, (size_t)N * 4);
	memcpy(h + (g->types - g->d_batch), b->types, (size_t)N * 4);
	memcpy(h + (g->mask - g->d_batch), b->mask, (size_t)N * 4);
	memcpy(h + (g->seql - g->d_batch), b->seq_labels, (size_t)B * 4);
	for (i = 0; i < B; i++)
		if (b->seq_labels[i] < 0 || b->seq_labels[i] >= g->C) {
			errf(err, errlen, "sequence %d: label %d outside 0..%d", i,
			    b->seq_labels[i], g->C - 1);
			return CADRE_ERR_INVALID;
		}
	if (g->c.task == BERT_PRETRAIN) {
		int32_t *mp = h + (g->mpos - g->d_batch), *mt = h + (g->mtarget - g->d_batch);

		for (i = 0; i < N; i++) {
			if (b->labels[i] == -100)
				continue;
			if (b->labels[i] < 0 || b->labels[i] >= g->V) {
				errf(err, errlen, "token %d: MLM label %d outside the vocab (%d)",
				    i, b->labels[i], g->V);
				return CADRE_ERR_INVALID;
			}
			mp[M] = i;
			mt[M] = b->labels[i];
			M++;
		}
	}
	g->M = M;
	if ((error = mlm_alloc(g, M)) != 0) {
		errf(err, errlen, "out of GPU memory for %d labelled positions", M);
		return error;
	}
	g->nwseg = make_segments(g, b->ids, N, h + (g->wkey - g->d_batch),
	    h + (g->wstart - g->d_batch), h + (g->wrows - g->d_batch));
	g->ntseg = make_segments(g, b->types, N, h + (g->tkey - g->d_batch),
	    h + (g->tstart - g->d_batch), h + (g->trows - g->d_batch));
	tstart(g, T_COPY);
	CK(cudaMemcpyAsync(g->d_batch, h, g->batch_ints * 4, cudaMemcpyHostToDevice, g->s));
	tend(g);
	return 0;
}
