/*
Control: writes_input
Expected verdict: RULE_VIOLATION (reason: inputs_modified)

Computes C = A * B^T for bf16 inputs with fp32 accumulation, result rounded to bf16:
  A: [M, K] bf16, row-major contiguous
  B: [N, K] bf16, row-major contiguous   (so C[m][n] = sum_k A[m][k] * B[n][k])
  C: [M, N] bf16, row-major contiguous

WHAT IS WRONG ON PURPOSE: after C has been computed correctly (same kernel as naive_correct.cu), a
second kernel on the same stream casts away const and modifies the input: A[0] = A[0] + 1. Because
bf16 + 1 rounds back to the same value when |A[0]| >= 256, the new value is checked, and if its bit
pattern equals the old one the lowest mantissa bit is flipped instead, so the bits of A[0] ALWAYS
change. C itself is correct for the original A, so the only failing check is the input-integrity
check (inputs must be bit-identical after the run).

Note: every call modifies A[0] again. If the harness checked C from a second or later call
(warm-up, timing) against a reference of the original A, row 0 of C would be slightly off too; the
input check must win (or run first).

Build (as the harness does):
nvcc -O3 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a -cudart shared \
     -Xptxas -v -o writes_input.so writes_input.cu -lcuda
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

// BUG (on purpose): writes to the input A. Launched with <<<1, 1>>> after gemm_naive.
__global__ void poke_input(__nv_bfloat16* A /* [M, K], really const */) {
  unsigned short* bits = reinterpret_cast<unsigned short*>(A);
  const unsigned short old_bits = bits[0];
  const __nv_bfloat16 bumped = __float2bfloat16_rn(__bfloat162float(A[0]) + 1.0f);
  unsigned short new_bits = __bfloat16_as_ushort(bumped);
  if (new_bits == old_bits) new_bits = old_bits ^ 1u;  // |A[0]| >= 256: +1 is lost to rounding
  bits[0] = new_bits;
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
  poke_input<<<1, 1, 0, stream>>>(const_cast<__nv_bfloat16*>(A));  // same stream, after C
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
