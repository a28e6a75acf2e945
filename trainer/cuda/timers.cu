/*
 * With CADRE_GPU_TIMERS=1: cudaEvent pairs around the launches, summed
 * per operation class and printed at the end of a run.
 */
#include "config.h"

#include "engine_int.cuh"

/* ---------------------------------------------------------------- timers */

static const char *const op_names[T_NCLASS] = { "gemm (cuBLASLt)",
	"attention softmax/permute, fused fwd", "attention, fused backward",
	"layernorm (+residual, dropout)",
	"column sums (bias, LayerNorm grads)",
	"gelu/tanh/dropout", "embeddings", "loss (softmax-xent)", "optimizer",
	"allreduce (NCCL, not timed)", "batch upload, gathers" };

void
tstart(struct gpu_trainer *g, int cls)
{
	/* a pair already open (a timed helper called inside another's
	 * pair) keeps timing the outer class */
	if (!g->timing || g->nev + 2 > MAX_EVENTS || g->nev % 2 != 0)
		return;
	g->ev_cls[g->nev / 2] = cls;
	g->ev_plan[g->nev / 2] = -1;
	CK(cudaEventRecord(g->ev[g->nev++], g->s));
}

/* The open pair times a GEMM of this plan (its shape in the report). */
void
tplan(struct gpu_trainer *g, int plan)
{
	if (g->timing && g->nev % 2 == 1)
		g->ev_plan[g->nev / 2] = plan;
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
		if (g->ev_plan[i / 2] >= 0) {
			g->plans[g->ev_plan[i / 2]].ms += ms;
			g->plans[g->ev_plan[i / 2]].calls++;
		}
	}
	g->nev = 0;
}

static int
by_ms(const void *a, const void *b)
{
	double x = (*(const struct plan *const *)a)->ms, y = (*(const struct plan *const *)b)->ms;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The GEMM shapes that took the most time, with the rate each reached:
 * where the GEMM share of a step goes. */
static void
print_gemms(const struct gpu_trainer *g, FILE *f)
{
	const struct plan **v;
	double total = 0.0, rare_ms = 0.0;
	int i, n = 0, rare = 0;

	if (g->nplans == 0 ||
	    (v = (const struct plan **)calloc((size_t)g->nplans, sizeof *v)) == NULL)
		return;
	/* a shape used less than once a step (the MLM head's, whose row
	 * count is each batch's labelled positions) mostly times its first
	 * launch: summed apart */
	for (i = 0; i < g->nplans; i++) {
		total += g->plans[i].ms;
		if (g->plans[i].calls >= g->tsteps)
			v[n++] = &g->plans[i];
		else if (g->plans[i].calls > 0) {
			rare++;
			rare_ms += g->plans[i].ms;
		}
	}
	qsort(v, (size_t)n, sizeof *v, by_ms);
	fprintf(f, "gemm shapes by time (row-major C(M,N) = op(A)(M,K) op(B)(K,N)):\n"
	    "  %6s %6s %6s %2s %2s %5s %7s %9s %6s %8s\n", "M", "N", "K", "tA", "tB",
	    "batch", "calls", "ms/step", "share", "TFLOP/s");
	for (i = 0; i < n && i < 16; i++)
		fprintf(f, "  %6d %6d %6d %2d %2d %5d %7.1f %9.3f %5.1f%% %8.1f%s\n",
		    v[i]->dims[0], v[i]->dims[1], v[i]->dims[2], v[i]->dims[3],
		    v[i]->dims[4], v[i]->dims[5], (double)v[i]->calls / (double)g->tsteps,
		    v[i]->ms / (double)g->tsteps, total > 0 ? 100.0 * v[i]->ms / total : 0.0,
		    v[i]->ms > 0 ? v[i]->flops * (double)v[i]->calls / v[i]->ms * 1e-9 : 0.0,
		    v[i]->naive == PLAN_WARP ? " (warp kernel)" :
		    v[i]->naive ? " (plain kernel)" : "");
	if (rare > 0)
		fprintf(f, "  %d shapes used less than once a step: %.3f ms/step, %.1f%%\n", rare,
		    rare_ms / (double)g->tsteps, total > 0 ? 100.0 * rare_ms / total : 0.0);
	free(v);
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
	print_gemms(g, f);
}
