/*
 * NCCL for data parallelism: the gradient buckets' all-reduce on the
 * communication stream, the ranks joining with one unique id (passed on
 * by the caller, or over TCP from MASTER_ADDR:MASTER_PORT), and the small
 * reductions of the step loop. Built without NCCL: one GPU per run.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine_int.cuh"

/* ---------------------------------------------------------------- NCCL */

/* All-reduces gradients [lo, hi) on the communication stream once the
 * compute stream has produced them (NCCL, more than one rank). */
void
bucket_allreduce(struct gpu_trainer *g, size_t lo, size_t hi)
{
#ifdef HAVE_NCCL
	cudaEvent_t ev;

	if (g->comm == NULL || hi <= lo)
		return;
	ev = g->ev_bucket[g->nbucket_ev++ % 512];
	CK(cudaEventRecord(ev, g->s));
	CK(cudaStreamWaitEvent(g->sc, ev, 0));
	if (ncclAllReduce(g->g + lo, g->g + lo, hi - lo, ncclFloat, ncclSum, g->comm,
	    g->sc) != ncclSuccess)
		gpu_die(__FILE__, __LINE__, "ncclAllReduce", "returned an error");
#else
	(void)g;
	(void)lo;
	(void)hi;
#endif
}

#ifdef HAVE_NCCL
int
gpu_comm_id(uint8_t id[GPU_COMM_ID_BYTES], char *err, size_t errlen)
{
	ncclUniqueId u;
	ncclResult_t r;

	static_assert(sizeof u == GPU_COMM_ID_BYTES, "ncclUniqueId size");
	if ((r = ncclGetUniqueId(&u)) != ncclSuccess) {
		errf(err, errlen, "ncclGetUniqueId: %s", ncclGetErrorString(r));
		return CADRE_ERR_SYSTEM;
	}
	memcpy(id, &u, sizeof u);
	return 0;
}

int
gpu_comm_init(struct gpu_trainer *g, const uint8_t id[GPU_COMM_ID_BYTES], int rank,
    int nranks, char *err, size_t errlen)
{
	ncclUniqueId u;
	ncclResult_t r;

	if (nranks < 1)
		return 0;
	memcpy(&u, id, sizeof u);
	CK(cudaSetDevice(g->dev));
	if ((r = ncclCommInitRank(&g->comm, nranks, u, rank)) != ncclSuccess) {
		errf(err, errlen, "ncclCommInitRank (rank %d of %d): %s", rank, nranks,
		    ncclGetErrorString(r));
		return CADRE_ERR_SYSTEM;
	}
	g->rank = rank;
	g->nranks = nranks;
	return 0;
}

static int
env_int(const char *name, int lo, int hi, int *v, char *err, size_t errlen)
{
	const char *s = getenv(name);
	char *end;
	long x;

	if (s == NULL) {
		errf(err, errlen, "%s is not set (launch with torchrun-style MASTER_ADDR, "
		    "MASTER_PORT, RANK, WORLD_SIZE, or under mpirun)", name);
		return CADRE_ERR_INVALID;
	}
	errno = 0;
	x = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || x < lo || x > hi) {
		errf(err, errlen, "%s='%s': expected an integer in %d..%d", name, s, lo, hi);
		return CADRE_ERR_INVALID;
	}
	*v = (int)x;
	return 0;
}

static int
full_io(int fd, uint8_t *buf, size_t n, int wr)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = wr ? write(fd, buf + done, n - done) : read(fd, buf + done, n - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return CADRE_ERR_SYSTEM;
		done += (size_t)r;
	}
	return 0;
}

int
gpu_comm_init_env(struct gpu_trainer *g, int *rank, int *nranks, char *err,
    size_t errlen)
{
	const char *addr = getenv("MASTER_ADDR"), *port = getenv("MASTER_PORT");
	struct addrinfo hints, *ai = NULL, *a;
	uint8_t id[GPU_COMM_ID_BYTES];
	int r = 0, n = 1, error, fd = -1, i, tries;

	if ((error = env_int("WORLD_SIZE", 1, 65536, &n, err, errlen)) != 0 ||
	    (error = env_int("RANK", 0, n - 1, &r, err, errlen)) != 0)
		return error;
	*rank = r;
	*nranks = n;
	if (n == 1)
		return 0;
	if (addr == NULL || port == NULL) {
		errf(err, errlen, "WORLD_SIZE is %d but MASTER_ADDR or MASTER_PORT is not "
		    "set: rank 0's address and a free port", n);
		return CADRE_ERR_INVALID;
	}
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = r == 0 ? AI_PASSIVE : 0;
	if ((error = getaddrinfo(r == 0 ? NULL : addr, port, &hints, &ai)) != 0) {
		errf(err, errlen, "MASTER_ADDR %s, MASTER_PORT %s: %s", addr, port,
		    gai_strerror(error));
		return CADRE_ERR_INVALID;
	}
	error = CADRE_ERR_SYSTEM;
	if (r == 0) {
		int one = 1, cfd;

		if ((error = gpu_comm_id(id, err, errlen)) != 0)
			goto out;
		error = CADRE_ERR_SYSTEM;
		for (a = ai; a != NULL; a = a->ai_next) {
			if ((fd = socket(a->ai_family, a->ai_socktype, 0)) < 0)
				continue;
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
			if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0)
				break;
			close(fd);
			fd = -1;
		}
		if (fd < 0) {
			errf(err, errlen, "rank 0 cannot listen on port %s: %s", port,
			    strerror(errno));
			goto out;
		}
		/* every other rank connects once and gets the id */
		for (i = 1; i < n; i++) {
			if ((cfd = accept(fd, NULL, NULL)) < 0 ||
			    full_io(cfd, id, sizeof id, 1) != 0) {
				errf(err, errlen, "rank 0: handing the NCCL id to rank %d of %d "
				    "failed: %s", i, n, strerror(errno));
				if (cfd >= 0)
					close(cfd);
				goto out;
			}
			close(cfd);
		}
	} else {
		/* rank 0 may not listen yet: try for two minutes */
		for (tries = 0; tries < 120; tries++) {
			for (a = ai; a != NULL; a = a->ai_next) {
				if ((fd = socket(a->ai_family, a->ai_socktype, 0)) < 0)
					continue;
				if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
					break;
				close(fd);
				fd = -1;
			}
			if (fd >= 0)
				break;
			sleep(1);
		}
		if (fd < 0 || full_io(fd, id, sizeof id, 0) != 0) {
			errf(err, errlen, "rank %d: no NCCL id from %s:%s after 120 s: %s",
			    r, addr, port, strerror(errno));
			goto out;
		}
	}
	error = gpu_comm_init(g, id, r, n, err, errlen);
out:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return error;
}

int
gpu_comm_sum_f64(struct gpu_trainer *g, double *x, int n)
{
	if (g->comm == NULL)
		return 0;
	if (n > 64)
		return CADRE_ERR_RANGE;
	CK(cudaMemcpyAsync(g->d_small, x, (size_t)n * sizeof(double),
	    cudaMemcpyHostToDevice, g->sc));
	if (ncclAllReduce(g->d_small, g->d_small, (size_t)n, ncclDouble, ncclSum,
	    g->comm, g->sc) != ncclSuccess)
		return CADRE_ERR_SYSTEM;
	CK(cudaMemcpyAsync(x, g->d_small, (size_t)n * sizeof(double),
	    cudaMemcpyDeviceToHost, g->sc));
	CK(cudaStreamSynchronize(g->sc));
	return 0;
}

int
gpu_comm_max_i64(struct gpu_trainer *g, int64_t *x, int n)
{
	if (g->comm == NULL)
		return 0;
	if (n > 64)
		return CADRE_ERR_RANGE;
	CK(cudaMemcpyAsync(g->d_small, x, (size_t)n * sizeof(int64_t),
	    cudaMemcpyHostToDevice, g->sc));
	if (ncclAllReduce(g->d_small, g->d_small, (size_t)n, ncclInt64, ncclMax,
	    g->comm, g->sc) != ncclSuccess)
		return CADRE_ERR_SYSTEM;
	CK(cudaMemcpyAsync(x, g->d_small, (size_t)n * sizeof(int64_t),
	    cudaMemcpyDeviceToHost, g->sc));
	CK(cudaStreamSynchronize(g->sc));
	return 0;
}
#else	/* !HAVE_NCCL */
int
gpu_comm_id(uint8_t id[GPU_COMM_ID_BYTES], char *err, size_t errlen)
{
	(void)id;
	errf(err, errlen, "built without NCCL (./configure --with-nccl): one GPU per run");
	return CADRE_ERR_UNSUPPORTED;
}

int
gpu_comm_init(struct gpu_trainer *g, const uint8_t id[GPU_COMM_ID_BYTES], int rank,
    int nranks, char *err, size_t errlen)
{
	(void)g; (void)id; (void)rank;
	if (nranks <= 1)
		return 0;
	errf(err, errlen, "built without NCCL (./configure --with-nccl): one GPU per run");
	return CADRE_ERR_UNSUPPORTED;
}

int
gpu_comm_init_env(struct gpu_trainer *g, int *rank, int *nranks, char *err,
    size_t errlen)
{
	const char *ws = getenv("WORLD_SIZE");

	(void)g;
	*rank = 0;
	*nranks = 1;
	if (ws == NULL || strcmp(ws, "1") == 0)
		return 0;
	errf(err, errlen, "built without NCCL (./configure --with-nccl): one GPU per run");
	return CADRE_ERR_UNSUPPORTED;
}

int
gpu_comm_sum_f64(struct gpu_trainer *g, double *x, int n)
{
	(void)g; (void)x; (void)n;
	return 0;
}

int
gpu_comm_max_i64(struct gpu_trainer *g, int64_t *x, int n)
{
	(void)g; (void)x; (void)n;
	return 0;
}
#endif
