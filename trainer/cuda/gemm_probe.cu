/*
 * The bf16 matrix rate of this GPU, measured with cuBLASLt (bf16 inputs
 * and output, fp32 accumulation): the denominator of the MFU bench/gpu
 * reports. Square products of 8192 (and 4096, 16384), the best of them,
 * cudaEvent-timed after a warm-up, median of 20.
 *   nvcc -O3 -std=c++17 -o gemm_probe gemm_probe.cu -lcublasLt
 *   ./gemm_probe            prints "bf16_tflops X" and one line per size
 */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "gemm_probe: %s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define CKB(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { \
	fprintf(stderr, "gemm_probe: %s: %d\n", #x, (int)s_); exit(1); } } while (0)

__global__ void
fill(__nv_bfloat16 *p, size_t n, unsigned seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	    i += (size_t)gridDim.x * blockDim.x) {
		unsigned x = (unsigned)i * 2654435761u + seed;

		x ^= x >> 13;
		x *= 0x5bd1e995u;
		p[i] = __float2bfloat16(((float)(x >> 8) / 16777216.0f - 0.5f));
	}
}

static int
cmpf(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

static double
rate(cublasLtHandle_t lt, int n, void *ws, size_t wsb)
{
	__nv_bfloat16 *A, *B, *C;
	cublasLtMatmulDesc_t d;
	cublasLtMatrixLayout_t la, lb, lc;
	cublasLtMatmulPreference_t pref;
	cublasLtMatmulHeuristicResult_t res;
	cudaEvent_t e0, e1;
	float alpha = 1.0f, beta = 0.0f, ms[20];
	size_t nn = (size_t)n * n;
	int nres = 0, i;

	CK(cudaMalloc(&A, nn * 2));
	CK(cudaMalloc(&B, nn * 2));
	CK(cudaMalloc(&C, nn * 2));
	fill<<<1024, 256>>>(A, nn, 1);
	fill<<<1024, 256>>>(B, nn, 2);
	CKB(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
	{
		cublasOperation_t t = CUBLAS_OP_T;

		CKB(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
	}
	CKB(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, n, n, n));
	CKB(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, n, n, n));
	CKB(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, n, n, n));
	CKB(cublasLtMatmulPreferenceCreate(&pref));
	CKB(cublasLtMatmulPreferenceSetAttribute(pref,
	    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
	CKB(cublasLtMatmulAlgoGetHeuristic(lt, d, la, lb, lc, lc, pref, 1, &res, &nres));
	if (nres < 1) {
		fprintf(stderr, "gemm_probe: no algorithm for %d\n", n);
		exit(1);
	}
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	for (i = 0; i < 5; i++)
		CKB(cublasLtMatmul(lt, d, &alpha, A, la, B, lb, &beta, C, lc, C, lc,
		    &res.algo, ws, wsb, 0));
	for (i = 0; i < 20; i++) {
		CK(cudaEventRecord(e0));
		CKB(cublasLtMatmul(lt, d, &alpha, A, la, B, lb, &beta, C, lc, C, lc,
		    &res.algo, ws, wsb, 0));
		CK(cudaEventRecord(e1));
		CK(cudaEventSynchronize(e1));
		CK(cudaEventElapsedTime(&ms[i], e0, e1));
	}
	qsort(ms, 20, sizeof ms[0], cmpf);
	cudaFree(A);
	cudaFree(B);
	cudaFree(C);
	cublasLtMatmulDescDestroy(d);
	cublasLtMatrixLayoutDestroy(la);
	cublasLtMatrixLayoutDestroy(lb);
	cublasLtMatrixLayoutDestroy(lc);
	cublasLtMatmulPreferenceDestroy(pref);
	return 2.0 * n * (double)n * n / (ms[10] * 1e-3) / 1e12;
}

int
main(void)
{
	static const int sizes[] = { 4096, 8192, 16384 };
	cublasLtHandle_t lt;
	size_t wsb = 64u << 20;
	void *ws;
	double best = 0.0;
	unsigned i;

	CKB(cublasLtCreate(&lt));
	CK(cudaMalloc(&ws, wsb));
	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		double r = rate(lt, sizes[i], ws, wsb);

		printf("gemm %d x %d x %d bf16: %.1f TFLOP/s (median of 20)\n", sizes[i],
		    sizes[i], sizes[i], r);
		if (r > best)
			best = r;
	}
	printf("bf16_tflops %.1f\n", best);
	cudaFree(ws);
	cublasLtDestroy(lt);
	return 0;
}
