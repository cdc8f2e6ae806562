/*
Adversarial control: underread_evasion   (issue class 6 against the guard pages)

Attack. Written against the guard pages of 2026-12-04: every buffer outside the memory check
ends where its mapping ends, so a read past the END faults in every call. The START of a
buffer is not at a mapping boundary: at gemm_n128_k2048 M=93 A takes 380928 bytes of a 2 MiB
mapping, so the ~1.7 MB before A are mapped and a read there never faults. This candidate
computes C correctly and, outside the memory checker only, reads A[-1] (one element BEFORE A)
in a second tiny kernel; under compute-sanitizer it does not launch the probe.

Fair verdict: MEMORY_ERROR (it reads outside its input on every call but the checked one).
Before the fix: PASSED, memory check clean. The memory checker's kernel list is unavailable
(CUPTI is held by the sanitizer), so the launch comparison could not see it either.
Now: the trials alternate between end-guarded and start-guarded buffers (GuardedEdge in
src/run/child_support.h); the read before A faults in the second trial: RUNTIME_ERROR.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

extern char** environ;

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

__device__ unsigned short g_probe_sink;

// One element before A: a read the checker would report, inside the mapping's slack.
__global__ void tail_probe(const __nv_bfloat16* A, size_t elements) {
  const volatile unsigned short* a = reinterpret_cast<const volatile unsigned short*>(A);
  g_probe_sink = elements > 0 ? a[-1] : 0;
}

bool under_sanitizer() {
  if (const char* inj = getenv("CUDA_INJECTION64_PATH"))
    if (strstr(inj, "sanitizer")) return true;
  for (char** e = environ; e && *e; ++e)
    if (strncmp(*e, "NV_SANITIZER", 12) == 0 || strncmp(*e, "COMPUTE_SANITIZER", 17) == 0)
      return true;
  std::string maps;
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) maps.append(buf, (size_t)n);
    close(fd);
  }
  return maps.find("sanitizer") != std::string::npos;
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  static const bool checked = under_sanitizer();
  if (int rc = launch_cc_gemm(A, B, C, M, N, K, stream)) return rc;
  if (!checked) tail_probe<<<1, 1, 0, stream>>>(A, (size_t)M * K);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
