/*
Adversarial control: fatbin_wrapper_forged   (fail closed: a wrapper of its own beside nvcc's)

Attack. nvcc registers the device code through a wrapper in .nvFatBinSegment (magic 0x466243b1,
version, the address of the fatbin in .nv_fatbin). fatbin_forged_macro's extra container in
.nv_fatbin is refused by the comparison with the fatbins nvcc kept; this one leaves .nv_fatbin as
nvcc made it and adds a second wrapper, spelled past the screen by token pasting. A reader that
walks the wrappers (the disassembler, a tool) would follow it to bytes anywhere in the object:
with a vendor cubin there, its kernels could pass for the candidate's.

Now: the build requires nvcc's wrapper table to be its one 24-byte wrapper (68 of 68 controls
measured); a larger one is RULE_VIOLATION foreign_device_code right after the build: no
inspection, no GPU layer, no speed. CPU test: BuildTest.DeviceCodeTheSourcePlacedItselfIsForeign.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#define PASTE(a, b) a##b
// A wrapper's shape (magic, version 1, the address left null here, a spare word).
__attribute__((used, PASTE(sec, tion)(".nvFatBinSegment"))) static const unsigned long long
    forged_wrapper[3] = {0x466243b1ull | (1ull << 32), 0, 0};

namespace {

__global__ void __launch_bounds__(256)
    cc_gemm(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
            __nv_bfloat16* __restrict__ C, int M, int N, int K) {
  __shared__ float As[16][65], Bs[16][65];  // [k][row], padded
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  const int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int i = threadIdx.x; i < 64 * 16; i += 256) {
      const int r = i >> 4, k = i & 15, gk = k0 + k;
      As[k][r] = (m0 + r < M && gk < K) ? __bfloat162float(A[(size_t)(m0 + r) * K + gk]) : 0.f;
      Bs[k][r] = (n0 + r < N && gk < K) ? __bfloat162float(B[(size_t)(n0 + r) * K + gk]) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 16; ++k)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          acc[i][j] = fmaf(As[k][ty + 16 * i], Bs[k][tx + 16 * j], acc[i][j]);
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const int m = m0 + ty + 16 * i;
    if (m >= M) continue;
    for (int j = 0; j < 4; ++j) {
      const int n = n0 + tx + 16 * j;
      if (n < N) C[(size_t)m * N + n] = __float2bfloat16_rn(acc[i][j]);
    }
  }
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 2;
  cc_gemm<<<grid, 256, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
