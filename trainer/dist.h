/* Data parallelism: Open MPI when built with it and started by mpirun,
 * else one rank. Gradients are summed (the loss is already a mean over the
 * global batch) in buckets, walking the parameter table in reverse. */
#ifndef CADRE_DIST_H
#define CADRE_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* Bytes of gradients per MPI_Allreduce. */
#define DIST_BUCKET_BYTES	(8u << 20)

struct dist {
	int	rank, nranks;
	int	mpi;		/* MPI_Init_thread was called */
};

/* MPI only when mpirun (OMPI_COMM_WORLD_SIZE) or PMIx (PMIX_RANK) started
 * this process: a plain start is one rank without MPI. */
int dist_init(struct dist *d, int *argc, char ***argv, char *err, size_t errlen);
void dist_finalize(struct dist *d);
/* Ends every rank (MPI_Abort) or exits. */
void dist_abort(struct dist *d, int code) __attribute__((noreturn));

/* Sums m's gradients over the ranks, in place. */
void dist_sum_grads(struct dist *d, struct bert_model *m);
void dist_sum_f64(struct dist *d, double *x, int n);
void dist_max_i64(struct dist *d, int64_t *x, int n);
void dist_bcast_i64(struct dist *d, int64_t *x, int n);
/* The MPI library's version line, or "none". */
const char *dist_library(const struct dist *d);

#endif
