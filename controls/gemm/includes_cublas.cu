/*
Control: includes_cublas
Expected verdict: REJECTED (screened before compile)

Computes C = A * B^T for bf16 inputs with fp32 accumulation, result rounded to bf16:
  A: [M, K] bf16, row-major contiguous
  B: [N, K] bf16, row-major contiguous   (so C[m][n] = sum_k A[m][k] * B[n][k])
  C: [M, N] bf16, row-major contiguous

WHAT IS WRONG ON PURPOSE: it does not write a kernel at all; it #includes <cublas_v2.h> and calls
cublasGemmEx, which the rules forbid (no cuBLAS/cuDNN/CUTLASS). The screen must reject it before
any compile. It is a real, correct use (builds with -lcublas and would compute the right C), so
the rejection cannot be blamed on anything but the forbidden library.

cuBLAS is column-major: row-major C[M,N] is column-major C^T[N,M] (ld N), row-major B[N,K] is
column-major [K,N] (ld K) and row-major A[M,K] is column-major [K,M] (ld K), so
C^T = op_T(B) * op_N(A), i.e. gemm(T, N, m=N, n=M, k=K, B, ldb=K, A, lda=K, C, ldc=N).

Build (for reference only; the harness must not get this far):
nvcc -O3 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a -cudart shared \
     -Xptxas -v -o includes_cublas.so includes_cublas.cu -lcuda -lcublas
*/
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

extern "C" int run(const __nv_bfloat16* A,  // [M, K]
                   const __nv_bfloat16* B,  // [N, K]
                   __nv_bfloat16* C,        // [M, N]
                   int M, int N, int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  static cublasHandle_t handle = nullptr;  // BUG (on purpose): cuBLAS is forbidden
  if (handle == nullptr && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    handle = nullptr;
    return 2;
  }
  if (cublasSetStream(handle, stream) != CUBLAS_STATUS_SUCCESS) return 3;
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t st = cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, B,
                                         CUDA_R_16BF, K, A, CUDA_R_16BF, K, &beta, C, CUDA_R_16BF,
                                         N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return st == CUBLAS_STATUS_SUCCESS ? 0 : 4;
}
