/*
Control: naive_correct
Expected verdict: PASSED

Computes C = A * B^T for bf16 inputs with fp32 accumulation, result rounded to bf16:
  A: [M, K] bf16, row-major contiguous
  B: [N, K] bf16, row-major contiguous   (so C[m][n] = sum_k A[m][k] * B[n][k])
  C: [M, N] bf16, row-major contiguous

Nothing is wrong with it on purpose. It is the slowest reasonable correct kernel: one thread per
output element, each thread walks the whole K dimension. Blocks are 16x16 threads; grid.x covers N,
grid.y covers M and is capped at 65535, with a grid-stride loop over rows, so every positive M, N,
K works (no tile-multiple assumptions; indices are 64-bit). On an H200, M=8192, N=7168, K=5120
takes ~0.66 s per call (~0.45 TFLOP/s): keep that in mind for the harness timeout.

Build (as the harness does):
nvcc -O3 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a -cudart shared \
     -Xptxas -v -o naive_correct.so naive_correct.cu -lcuda
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace {

constexpr int kBlock = 16;

__global__ void gemm_naive(const __nv_bfloat16* __restrict__ A,  // [M, K]
                           const __nv_bfloat16* __restrict__ B,  // [N, K]
                           __nv_bfloat16* __restrict__ C,        // [M, N]
                           int M, int N, int K) {
  const long long n = (long long)blockIdx.x * kBlock + threadIdx.x;
  if (n >= N) return;
  const __nv_bfloat16* b = B + (size_t)n * K;
  for (long long m = (long long)blockIdx.y * kBlock + threadIdx.y; m < M;
       m += (long long)gridDim.y * kBlock) {
    const __nv_bfloat16* a = A + (size_t)m * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
      acc = fmaf(__bfloat162float(a[k]), __bfloat162float(b[k]), acc);
    }
    C[(size_t)m * N + n] = __float2bfloat16_rn(acc);
  }
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A,  // [M, K]
                   const __nv_bfloat16* B,  // [N, K]
                   __nv_bfloat16* C,        // [M, N]
                   int M, int N, int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  const long long blocks_m = (M + (long long)kBlock - 1) / kBlock;
  const long long blocks_n = (N + (long long)kBlock - 1) / kBlock;
  dim3 block(kBlock, kBlock);
  dim3 grid((unsigned)blocks_n, (unsigned)(blocks_m < 65535 ? blocks_m : 65535));
  gemm_naive<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
