/*
Adversarial control: fatbin_forged   (fail closed: a disassembler the candidate breaks)

Attack. Static inspection lists the functions of the candidate's cubin with cuobjdump, and only
those may run during its calls (the foreign-kernel check). A variable placed in .nv_fatbin with
a section attribute puts bytes of the candidate's choosing beside the fatbin nvcc made: the
CUDA runtime finds its own fatbin through the registration call and runs as usual, but
cuobjdump stops with "Invalid fatbin header". Inspection then "failed", and by the code before
this control a failed inspection left the foreign-kernel check "skipped" while the GPU layers
ran and the speedup counted: a vendor kernel loaded from a blob (cuModuleLoadData) would have
been timed as the candidate's. The same bytes written as a well-formed second fatbin would make
that vendor kernel one of "the cubin's functions". Here the GEMM itself is the honest CUDA-core
one of channel_relay.cu; the control is about the section.

Now: the screen refuses a section attribute and the .section/.pushsection directives (REJECTED,
"object section", naming the line). Without the screen, the evaluation fails closed: the same
confined cuobjdump reads a harness-built object, so the failure is the candidate's
(RULE_VIOLATION uninspectable), with no GPU layer run and no speed; were the tool broken on the
harness's object too, INFRA_ERROR. CPU tests: ScreenPathTest.PlacingBytesInASectionIsRejected,
EvaluateTest.AnObjectTheDisassemblerCannotReadEarnsNothing.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

// Not a fatbin: cuobjdump reads the magic-less words after nvcc's fatbin and gives up.
__attribute__((used, section(".nv_fatbin"))) static const unsigned long long forged_entry[4] = {
    0xdeadbeefdeadbeefull, 1, 2, 3};

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
