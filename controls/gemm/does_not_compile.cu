/*
Control: does_not_compile
Expected verdict: COMPILE_ERROR

Meant to compute C = A * B^T for bf16 inputs with fp32 accumulation, with
  A: [M, K] bf16, row-major contiguous
  B: [N, K] bf16, row-major contiguous
  C: [M, N] bf16, row-major contiguous

WHAT IS WRONG ON PURPOSE: a type error that every C++ compiler rejects. In the kernel, the row
pointer of A is assigned to a float ("float a = A + m * K;": no conversion from a pointer to
float), so nvcc stops with "error: a value of type "const __nv_bfloat16 *" cannot be used to
initialize an entity of type "float"" and no .so is produced. Everything else is a plain naive
kernel, and the file is otherwise free of forbidden includes/calls, so the screen should pass it
and only the compiler should fail it.

Build (as the harness does; it must fail):
nvcc -O3 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a -cudart shared \
     -Xptxas -v -o does_not_compile.so does_not_compile.cu -lcuda
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace {

__global__ void gemm_naive(const __nv_bfloat16* __restrict__ A,  // [M, K]
                           const __nv_bfloat16* __restrict__ B,  // [N, K]
                           __nv_bfloat16* __restrict__ C,        // [M, N]
                           int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  const int m = blockIdx.y * blockDim.y + threadIdx.y;
  if (m >= M || n >= N) return;
  float a = A + (size_t)m * K;  // BUG (on purpose): pointer assigned to a float
  const __nv_bfloat16* b = B + (size_t)n * K;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    acc = fmaf(__bfloat162float(A[(size_t)m * K + k]), __bfloat162float(b[k]), acc);
  }
  (void)a;
  C[(size_t)m * N + n] = __float2bfloat16_rn(acc);
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A,  // [M, K]
                   const __nv_bfloat16* B,  // [N, K]
                   __nv_bfloat16* C,        // [M, N]
                   int M, int N, int K, cudaStream_t stream) {
  dim3 block(16, 16);
  dim3 grid((N + 15) / 16, (M + 15) / 16);
  gemm_naive<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
