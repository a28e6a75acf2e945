/*
 * With CADRE_GPU_TIMERS=1: cudaEvent pairs around the launches, summed
 * per operation class and printed at the end of a run.
 */
#include "config.h"

#include "engine_int.cuh"

/* ---------------------------------------------------------------- timers */

static const char *const op_names[T_NCLASS] = { "gemm (cuBLASLt)",
	"attention softmax/permute", "layernorm (+residual, dropout)",
	"gelu/tanh/dropout", "embeddings", "loss (softmax-xent)", "optimizer",
	"allreduce (NCCL, not timed)", "batch upload, gathers" };

void
tstart(struct gpu_trainer *g, int cls)
{
	if (!g->timing || g->nev + 2 > MAX_EVENTS)
		return;
	g->ev_cls[g->nev / 2] = cls;
	CK(cudaEventRecord(g->ev[g->nev++], g->s));
}

void
tend(struct gpu_trainer *g)
{
	if (!g->timing || g->nev % 2 == 0)
		return;
	CK(cudaEventRecord(g->ev[g->nev++], g->s));
}

/* After a synchronisation: the recorded pairs into the per-class sums. */
void
tcollect(struct gpu_trainer *g)
{
	int i;

	if (!g->timing)
		return;
	for (i = 0; i + 1 < g->nev; i += 2) {
		float ms = 0.0f;

		CK(cudaEventElapsedTime(&ms, g->ev[i], g->ev[i + 1]));
		g->tms[g->ev_cls[i / 2]] += ms;
	}
	g->nev = 0;
}

void
gpu_print_timers(const struct gpu_trainer *g, FILE *f)
{
	double total = 0.0;
	int i;

	if (!g->timing || g->tsteps == 0)
		return;
	for (i = 0; i < T_NCLASS; i++)
		total += g->tms[i];
	fprintf(f, "gpu time per step by operation class (%lld steps, cudaEvent pairs):\n",
	    (long long)g->tsteps);
	/* classes with no timed launch (the NCCL stream is not timed) are
	 * left out */
	for (i = 0; i < T_NCLASS; i++)
		if (g->tms[i] > 0.0)
			fprintf(f, "  %-32s %9.3f ms  %5.1f%%\n", op_names[i],
			    g->tms[i] / (double)g->tsteps,
			    total > 0 ? 100.0 * g->tms[i] / total : 0.0);
	fprintf(f, "  %-32s %9.3f ms\n", "total (timed)", total / (double)g->tsteps);
}
