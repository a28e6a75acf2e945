/*
 * A micro-batch for the device: checked against the model, the MLM
 * positions and the embedding gradients' segments made on the host, then
 * one copy from a pinned staging buffer.
 */
#include "config.h"

#include "engine_int.cuh"

/* ---------------------------------------------------------------- batches */

/*
 * The tokens' keys (below nkeys) into struct segs, in the staging buffer
 * h at sg's offsets: a counting sort (stable: rows in increasing order
 * within a key), the segments, their pieces.
 */
static void
make_segments(struct gpu_trainer *g, const int32_t *keys, int n, int nkeys,
    const struct segs *sg, int32_t *h, struct segs *out)
{
	int32_t *cnt = g->keycount, *key = h + (sg->key - g->d_batch);
	int32_t *start = h + (sg->start - g->d_batch), *rows = h + (sg->rows - g->d_batch);
	int32_t *pbeg = h + (sg->pbeg - g->d_batch), *pend = h + (sg->pend - g->d_batch);
	int32_t *pout = h + (sg->pout - g->d_batch), *mkey = h + (sg->mkey - g->d_batch);
	int32_t *mslot = h + (sg->mslot - g->d_batch);
	int32_t *mcount = h + (sg->mcount - g->d_batch);
	int i, k, s, ns = 0, np = 0, nm = 0, slot = 0;

	memset(cnt, 0, ((size_t)nkeys + 1) * sizeof *cnt);
	for (i = 0; i < n; i++)
		cnt[keys[i] + 1]++;
	for (k = 0; k < nkeys; k++)
		cnt[k + 1] += cnt[k];
	for (i = 0; i < n; i++)
		rows[cnt[keys[i]]++] = i;
	for (i = 0; i < n; i++) {
		k = keys[rows[i]];
		if (ns == 0 || k != key[ns - 1]) {
			key[ns] = k;
			start[ns] = i;
			ns++;
		}
	}
	start[ns] = n;
	for (s = 0; s < ns; s++) {
		int lo = start[s], hi = start[s + 1];
		int pieces = (hi - lo + SEG_PIECE - 1) / SEG_PIECE;

		if (pieces > 1) {
			mkey[nm] = key[s];
			mslot[nm] = slot;
			mcount[nm] = pieces;
			nm++;
		}
		for (i = lo; i < hi; i += SEG_PIECE) {
			pbeg[np] = i;
			pend[np] = hi - i < SEG_PIECE ? hi : i + SEG_PIECE;
			pout[np] = pieces > 1 ? -(slot++ + 1) : key[s];
			np++;
		}
	}
	*out = *sg;
	out->nseg = ns;
	out->np = np;
	out->nm = nm;
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
	make_segments(g, b->ids, N, g->V, &g->wseg, h, &g->wseg);
	make_segments(g, b->types, N, g->c.type_vocab, &g->tseg, h, &g->tseg);
	tstart(g, T_COPY);
	CK(cudaMemcpyAsync(g->d_batch, h, g->batch_ints * 4, cudaMemcpyHostToDevice, g->s));
	tend(g);
	return 0;
}
