/*
Control: illegal_address
Expected verdict: RUNTIME_ERROR

Computes C = A * B^T for bf16 inputs with fp32 accumulation, result rounded to bf16:
  A: [M, K] bf16, row-major contiguous
  B: [N, K] bf16, row-major contiguous   (so C[m][n] = sum_k A[m][k] * B[n][k])
  C: [M, N] bf16, row-major contiguous

WHAT IS WRONG ON PURPOSE: after computing C correctly (same kernel as naive_correct.cu), a second
kernel on the same stream stores one bf16 to the absolute device address 0x10. Nothing is ever
mapped there (the null page), so the store faults: the context gets the sticky error
cudaErrorIllegalAddress ("an illegal memory access was encountered"), seen by the harness at its
next synchronize (or by run()'s own cudaGetLastError if the fault is already visible, in which
case run() returns non-zero; both are RUNTIME_ERROR). The address is passed in as a kernel
argument so the compiler cannot reason about it; the store is volatile.
An address this far outside any allocation is used on purpose, instead of e.g. C + (1 << 40):
that one could, in a huge unified address space, land on some other mapping and silently corrupt
it instead of faulting.

This verdict assumes the run is NOT under compute-sanitizer; memcheck would report the store as an
invalid __global__ write (MEMORY_ERROR) before the hardware faults.

Build (as the harness does):
nvcc -O3 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a -cudart shared \
     -Xptxas -v -o illegal_address.so illegal_address.cu -lcuda
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

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

// BUG (on purpose): stores to an address outside every allocation. Launched with <<<1, 1>>>.
__global__ void store_to_bad_address(uintptr_t bad_address, unsigned short value) {
  volatile unsigned short* p = reinterpret_cast<volatile unsigned short*>(bad_address);
  *p = value;
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
  store_to_bad_address<<<1, 1, 0, stream>>>((uintptr_t)0x10, (unsigned short)0x7fc0);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
