/*
Adversarial control: channel_flood   (the result channel as a weapon against the parent)

Attack. The parent reads fd 3 of every child into memory line by line, without a bound (a
std::string per line in a vector: ~80 bytes of parent memory per empty line). At load time
this candidate writes 64 MiB of newlines to fd 3, in every child that loads it. Nothing is
forged; the point is the parent: 20 MB of newlines cost the old parent 1.6 GB, 64 MiB cost it
4.2 GB on the H200, and several evaluations in parallel (ptxbench serve) take the host down.
The GEMM itself is honest (CUDA cores).

Old harness: PASSED (the lines were counted as channel garbage) after the parent had grown by
gigabytes.
Now: the parent bounds what it reads from the channel. Expected: the child is stopped when it
passes the bound and its run is the candidate's failure -> RUNTIME_ERROR, with the parent's
memory growth bounded (a few MB, not GB). RULE_VIOLATION channel_tampered (tampering with the
result channel) would be equally fair. Not acceptable: PASSED with the parent's memory
unbounded, TIMEOUT (a child left blocked on a full pipe), or INFRA_ERROR.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <errno.h>
#include <unistd.h>

#include <cstring>

namespace {

// ---- a plain CUDA-core GEMM: 64x64 tiles, 16-deep K steps, 256 threads, 4x4 outputs each ----
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

int launch_cc_gemm(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 20;
  cc_gemm<<<grid, 256, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 21;
}

__attribute__((constructor)) void flood() {
  static char newlines[1 << 20];
  memset(newlines, '\n', sizeof newlines);
  for (int mb = 0; mb < 64; ++mb)
    for (size_t off = 0; off < sizeof newlines;) {
      ssize_t n = write(3, newlines + off, sizeof newlines - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // not a channel (or closed): nothing to flood
      off += (size_t)n;
    }
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  return launch_cc_gemm(A, B, C, M, N, K, stream);
}
