/*
Adversarial control: fatbin_forged_macro   (fail closed: device code the source placed itself)

Attack. fatbin_forged.cu spells its section attribute where the screen reads it. The screen reads
the source, not its macro expansion: `PASTE(sec, tion)` becomes `section` only in the
preprocessor, so the attribute passes the screen. The placed bytes here are a well-formed fatbin
container (magic, version, header size, body size) with a body of the control's own; with a
vendor cubin as its body, that cubin's kernels would become "the object's functions" in static
inspection and could run during the candidate's calls without a foreign-kernel finding.

Now: the build keeps the fatbins nvcc made (-keep) and compares the object's .nv_fatbin with
them; any container nvcc did not make, any other non-zero byte, or another section named like a
fatbin is RULE_VIOLATION foreign_device_code, decided right after the build: no inspection, no GPU
layer, no speed. CPU tests: BuildTest.DeviceCodeTheSourcePlacedItselfIsForeign,
EvaluateTest.DeviceCodeTheSourcePlacedItselfIsARuleViolation.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#define PASTE(a, b) a##b
// A well-formed container: magic 0xBA55ED50, version 1, 16-byte header, a 16-byte body.
__attribute__((used, PASTE(sec, tion)(".nv_fatbin"))) static const unsigned int forged_container[8] =
    {0xBA55ED50u, 0x00100001u, 16u, 0u, 1u, 2u, 3u, 4u};

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
