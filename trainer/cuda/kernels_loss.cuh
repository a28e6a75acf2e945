/*
 * The softmax cross-entropy of the MLM, NSP and classification heads
 * (forward.cu).
 */
#ifndef CADRE_CUDA_KERNELS_LOSS_CUH
#define CADRE_CUDA_KERNELS_LOSS_CUH

#include "kernels.cuh"

/* ---------------------------------------------------------------- loss */

/*
 * Softmax cross-entropy, one block per row of logits (fp32, M x V):
 * losses[m] (double), correct[m] (arg-max == target), and when dlogits is
 * not NULL (softmax - onehot) * dscale, as ops.c's
 * crossentropy_forward_backward.
 */
template <typename T>
__global__ void
k_xent(T *dlogits, double *losses, int *correct, const float *logits,
    const int32_t *targets, int V, float dscale)
{
	__shared__ float sh[32];
	__shared__ int shi[32];
	int m = blockIdx.x, arg = 0x7fffffff;
	const float *l = logits + (size_t)m * V;
	float mx = -INFINITY, s = 0.0f, f;
	int tg = targets[m];

	for (int j = threadIdx.x; j < V; j += blockDim.x)
		if (l[j] > mx) {
			mx = l[j];
			arg = j;
		}
	block_argmax(mx, arg, sh, shi);
	__syncthreads();
	for (int j = threadIdx.x; j < V; j += blockDim.x)
		s += expf(l[j] - mx);
	s = block_sum(s, sh);
	if (threadIdx.x == 0) {
		losses[m] = (double)mx + log((double)s) - (double)l[tg];
		correct[m] = arg == tg;
	}
	if (dlogits == NULL)
		return;
	f = dscale / s;
	for (int j = threadIdx.x; j < V; j += blockDim.x) {
		float d = expf(l[j] - mx) * f;

		if (j == tg)
			d -= dscale;
		dlogits[(size_t)m * V + j] = fromf<T>(d);
	}
}

#endif
