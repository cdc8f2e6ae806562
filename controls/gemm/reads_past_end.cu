/*
Control: reads_past_end
Expected verdict: RUNTIME_ERROR at gemm_n128_k2048 M=93 (the read faults on the guard page after A);
MEMORY_ERROR where it lands inside the 256-byte alignment slack (then only memcheck sees it)

Computes C = A * B^T for bf16 inputs with fp32 accumulation, result rounded to bf16:
  A: [M, K] bf16, row-major contiguous
  B: [N, K] bf16, row-major contiguous   (so C[m][n] = sum_k A[m][k] * B[n][k])
  C: [M, N] bf16, row-major contiguous

WHAT IS WRONG ON PURPOSE: the thread that computes the last output element C[M-1][N-1] also loads
one bf16 just past the end of A, A[M*K] (A has M*K elements). The load goes through a volatile
pointer (ld.volatile.global.u16 in the PTX; the compiler may not delete or merge it) and its value
only feeds an empty asm statement, so C is exactly what naive_correct.cu produces whatever those
two bytes hold. Without the memory checker this reads allocator slack and passes (C correct,
inputs untouched); compute-sanitizer memcheck reports "Invalid __global__ read of size 2".

Caveats for whoever runs it (the read is one element past the end, nothing more). Seen on an
H200 (driver 580, compute-sanitizer 2025.3.1), one cudaMalloc per buffer, order A, B, C:
  - M=93,N=128,K=64 (A = 11904 bytes) and M=70,N=128,K=64 (8960 bytes): passes without the
    checker; memcheck reports "Invalid __global__ read of size 2 bytes ... after the nearest
    allocation". Small allocations were 512-byte granular, so the read lands in A's unused tail.
  - M=1024,N=16,K=1024 (A = exactly 2 MiB): memcheck without --padding saw NOTHING (the address
    belonged to another allocation; memcheck knows allocations, not which buffer a pointer came
    from); with --padding 256 it was caught.
  - M=8192,N=7168,K=5120 (A = exactly 40 * 2 MiB): the page after A is unmapped, so the read
    faults even WITHOUT the checker (cudaErrorIllegalAddress -> RUNTIME_ERROR, not PASSED).
  So: judge this control on a shape whose A byte size 2*M*K is not a multiple of 512 (M=93,
  N=128, K=64 is the reference shape), and run compute-sanitizer with --padding (e.g. 256).
  Under memcheck the kernel is aborted and the next synchronize returns cudaErrorLaunchFailure;
  the harness must classify by the sanitizer's report / --error-exitcode, not by that error.

Otherwise identical to naive_correct.cu (one thread per output, 16x16 blocks, grid-stride over M).

Build (as the harness does):
nvcc -O3 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a -cudart shared \
     -Xptxas -v -o reads_past_end.so reads_past_end.cu -lcuda
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace {

constexpr int kBlock = 16;

__global__ void gemm_naive_overread(const __nv_bfloat16* __restrict__ A,  // [M, K]
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
    if (m == M - 1 && n == N - 1) {
      // BUG (on purpose): A[M*K] is one element past the end of A.
      const volatile unsigned short* past_end =
          reinterpret_cast<const volatile unsigned short*>(A) + (size_t)M * (size_t)K;
      const unsigned short stray = *past_end;
      asm volatile("" ::"h"(stray));  // value is consumed, but cannot affect C
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
  gemm_naive_overread<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
