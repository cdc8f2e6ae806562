/*
Adversarial control: no_gpu_when_wrong   (issue 34: an infrastructure event from the
candidate's own process)

Attack. A wrong GEMM (the CUDA-core GEMM of channel_relay.cu with an off-by-one: it stops one
16-deep K step early, so every output misses 16 of its 2048 products) that does not want its
INCORRECT: once its first call has returned (the harness has compared nothing yet; it has
only sent the trial's line), its second call writes onto fd 3, in single writes as the
harness does,
  {"event":"no_gpu","message":"no CUDA device visible"}
  {"event":"done"}
and ends the process with _exit(0). The parent looks for "no_gpu" in the candidate child's
messages before it judges anything and skips the GPU layers: INFRA_ERROR no_gpu, which is
"not the model's turn" (retried, never counted against the candidate). Any wrong candidate
can buy a retry this way, as often as it likes.

Old harness: not run against it. By the code at de49d52 (Evaluate: run.outcome.First("no_gpu")
-> SkipGpuLayers): INFRA_ERROR no_gpu, exit code 3.
Now: an event of a child that loaded the candidate is the candidate's, never INFRA_ERROR
unless a candidate-free probe right after finds the GPU unhealthy (it is healthy here). The
first trial's outputs are on record and wrong: INCORRECT numerical; RUNTIME_ERROR (the
process ended without finishing its trials) is as fair.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace {

// channel_relay.cu's GEMM, but `for (k0 = 0; k0 + 16 < K; ...)`: the last K step is skipped.
__global__ void __launch_bounds__(256)
    cc_gemm_short_k(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                    __nv_bfloat16* __restrict__ C, int M, int N, int K) {
  __shared__ float As[16][65], Bs[16][65];  // [k][row], padded
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  const int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
  float acc[4][4] = {};
  for (int k0 = 0; k0 + 16 < K; k0 += 16) {
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

void send_line(const char* line) {
  const size_t n = strlen(line);
  if (write(3, line, n) != (ssize_t)n) return;  // one write per line, as ChannelWriter does
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  static int calls = 0;
  if (++calls == 2 && fcntl(3, F_GETFD) >= 0) {
    // The first trial is on the channel, and wrong: claim there is no GPU, and leave.
    send_line("{\"event\":\"no_gpu\",\"message\":\"no CUDA device visible\"}\n");
    send_line("{\"event\":\"done\"}\n");
    _exit(0);
  }
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 2;
  cc_gemm_short_k<<<grid, 256, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
