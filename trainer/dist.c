#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef HAVE_MPI
#include <mpi.h>
#endif

#include "dist.h"
#include "error.h"

#if defined(HAVE_MPI) && defined(__SANITIZE_ADDRESS__)
/*
 * Open MPI keeps allocations past MPI_Finalize by design, so a debug
 * (ASan) build's leak check would fail every rank at exit, whether the
 * job passes ASAN_OPTIONS on or not (slurmrestd jobs get only the
 * environment they are given). ASAN_OPTIONS still overrides this.
 */
const char *__asan_default_options(void);
const char *
__asan_default_options(void)
{
	return "detect_leaks=0";
}
#endif

#ifdef HAVE_MPI
static char dist_lib[256];
#endif

int
dist_init(struct dist *d, int *argc, char ***argv, char *err, size_t errlen)
{
	memset(d, 0, sizeof *d);
	d->nranks = 1;
	(void)argc;
	(void)argv;
#ifdef HAVE_MPI
	if (getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMIX_RANK") != NULL) {
		int provided, len = 0, e;

		/* FUNNELED: only the main thread calls MPI (the checkpoint
		 * writer and OpenMP's threads never do). */
		if ((e = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided)) !=
		    MPI_SUCCESS) {
			snprintf(err, errlen, "MPI_Init_thread failed (error %d)", e);
			return CADRE_ERR_SYSTEM;
		}
		d->mpi = 1;
		MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
		MPI_Comm_size(MPI_COMM_WORLD, &d->nranks);
		MPI_Get_library_version(dist_lib, &len);
		dist_lib[sizeof dist_lib - 1] = '\0';
		dist_lib[strcspn(dist_lib, ",\n")] = '\0';
	}
#else
	(void)err;
	(void)errlen;
#endif
	return 0;
}

void
dist_finalize(struct dist *d)
{
#ifdef HAVE_MPI
	if (d->mpi)
		MPI_Finalize();
#endif
	d->mpi = 0;
}

void
dist_abort(struct dist *d, int code)
{
#ifdef HAVE_MPI
	if (d->mpi && d->nranks > 1)
		MPI_Abort(MPI_COMM_WORLD, code);
#endif
	(void)d;
	exit(code);
}

/*
 * Backward produces the gradients from the last layer to the embeddings,
 * so the buckets go through the table in reverse: the order a future
 * overlap of communication with backward would send them in. A bucket is
 * a contiguous range of grads_mem (the table's tensors are laid out in
 * order), at least DIST_BUCKET_BYTES unless it is the last.
 */
void
dist_sum_grads(struct dist *d, struct bert_model *m)
{
#ifdef HAVE_MPI
	size_t	i = m->ntensors, lo, hi;

	if (!d->mpi || d->nranks == 1)
		return;
	while (i > 0) {
		hi = m->table[i - 1].offset + m->table[i - 1].numel;
		lo = hi;
		while (i > 0 && (hi - lo) * sizeof(float) < DIST_BUCKET_BYTES) {
			lo = m->table[i - 1].offset;
			i--;
		}
		/* a tensor larger than INT_MAX floats goes in pieces */
		while (lo < hi) {
			size_t n = hi - lo > (1u << 30) ? (1u << 30) : hi - lo;

			MPI_Allreduce(MPI_IN_PLACE, m->grads_mem + hi - n, (int)n,
			    MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
			hi -= n;
		}
	}
#else
	(void)d;
	(void)m;
#endif
}

void
dist_sum_f64(struct dist *d, double *x, int n)
{
#ifdef HAVE_MPI
	if (d->mpi && d->nranks > 1)
		MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
#else
	(void)d;
	(void)x;
	(void)n;
#endif
}

void
dist_max_i64(struct dist *d, int64_t *x, int n)
{
#ifdef HAVE_MPI
	if (d->mpi && d->nranks > 1)
		MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
#else
	(void)d;
	(void)x;
	(void)n;
#endif
}

void
dist_bcast_i64(struct dist *d, int64_t *x, int n)
{
#ifdef HAVE_MPI
	if (d->mpi && d->nranks > 1)
		MPI_Bcast(x, n, MPI_INT64_T, 0, MPI_COMM_WORLD);
#else
	(void)d;
	(void)x;
	(void)n;
#endif
}

const char *
dist_library(const struct dist *d)
{
#ifdef HAVE_MPI
	if (d->mpi)
		return dist_lib;
#endif
	(void)d;
	return "none";
}
