/* mpi-hello: the MPI program of tests/agent/mpi-launch.sh.
 *   mpi-hello                 each rank prints its rank, size and node
 *   mpi-hello --fail R:CODE   rank R exits with CODE after MPI_Finalize
 *   mpi-hello --signals       each rank prints "ready", then reports
 *                             SIGUSR1 and stops at SIGTERM (30 s at most) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

static volatile sig_atomic_t got_usr1, got_term;

static void
on_usr1(int sig)
{
	(void)sig;
	got_usr1 = 1;
}

static void
on_term(int sig)
{
	(void)sig;
	got_term = 1;
}

int
main(int argc, char **argv)
{
	const char	*node = getenv("CADRE_NODE");
	int		 rank, size, fail_rank = -1, fail_code = 0, signals = 0;
	int		 i, ticks;
	struct timespec	 ts = { 0, 10 * 1000 * 1000 };

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--fail") == 0 && i + 1 < argc &&
		    sscanf(argv[i + 1], "%d:%d", &fail_rank, &fail_code) == 2)
			i++;
		else if (strcmp(argv[i], "--signals") == 0)
			signals = 1;
	}
	if (signals) {
		signal(SIGUSR1, on_usr1);
		signal(SIGTERM, on_term);
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	printf("hello from rank %d of %d on node %s\n", rank, size,
	    node ? node : "(unknown)");
	fflush(stdout);
	if (signals) {
		printf("rank %d ready\n", rank);
		fflush(stdout);
		for (ticks = 0; ticks < 3000 && !got_term; ticks++) {
			nanosleep(&ts, NULL);
			if (got_usr1) {
				got_usr1 = 0;
				printf("rank %d got SIGUSR1\n", rank);
				fflush(stdout);
			}
		}
		printf("rank %d %s\n", rank, got_term ? "got SIGTERM" :
		    "timed out");
		fflush(stdout);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return rank == fail_rank ? fail_code : 0;
}
