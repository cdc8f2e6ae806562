/*
Control: off_by_one_k
Expected verdict: INCORRECT (reason: numerical)

Computes (almost) C = A * B^T for bf16 inputs with fp32 accumulation, result rounded to bf16:
  A: [M, K] bf16, row-major contiguous
  B: [N, K] bf16, row-major contiguous   (so C[m][n] = sum_k A[m][k] * B[n][k])
  C: [M, N] bf16, row-major contiguous

WHAT IS WRONG ON PURPOSE: the K loop runs k = 0 .. K-2 ("k < K - 1"), so every output misses the
last term A[m][K-1] * B[n][K-1]. Every element is written and finite, so the only way to catch it
is the numerical comparison against the reference. The missing term has the magnitude of one
product (~|a|*|b|), while an output is a sum of K such terms (~sqrt(K)*|a|*|b| for random data).
Measured on an H200 with inputs uniform in [-1, 1]: K=64 -> relative RMS error 12.6%; K=4103 ->
1.5%; K=5120 -> 1.6% (max abs error 1.13 against outputs of RMS ~24; about 30% of elements fail
|err| <= 1e-2*|ref| + 1e-2*rms(ref)). So judge it on a small-K shape (e.g. M=93, N=128, K=64) or
with an element-wise check; a loose norm-based tolerance could miss it at large K. K=1 is a
degenerate shape for it (it outputs 0 instead of a*b, which a plain atol may accept).

Otherwise identical to naive_correct.cu (one thread per output, 16x16 blocks, grid-stride over M).

Build (as the harness does):
nvcc -O3 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a -cudart shared \
     -Xptxas -v -o off_by_one_k.so off_by_one_k.cu -lcuda
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace {

constexpr int kBlock = 16;

__global__ void gemm_naive_off_by_one(const __nv_bfloat16* __restrict__ A,  // [M, K]
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
    for (int k = 0; k < K - 1; ++k) {  // BUG (on purpose): should be k < K
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
  gemm_naive_off_by_one<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
