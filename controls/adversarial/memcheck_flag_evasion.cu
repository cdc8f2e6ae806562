/*
Adversarial control: memcheck_flag_evasion   (issue class 6, variant that keeps the launches
identical; expected to expose a gap)

Attack. Like memcheck_evasion.cu, but the out-of-bounds read lives inside the GEMM kernel,
behind a kernel argument: when `probe` is set, the thread that writes C[M-1][N-1] also does a
volatile load of A[M*K], one element past the end of A. run() passes probe = 0 only when it
finds the sanitizer in the process (its libraries in /proc/self/maps, CUDA_INJECTION64_PATH).
The launched kernels are the same in every call: name, grid, block and dynamic shared memory
(a kernel argument is not part of that signature), so a `kernels_differ` comparison cannot
see the difference; the outputs are always correct; at M=93, K=2048 the read never faults.

Old harness: PASSED, "memory check clean".
Fair verdict: MEMORY_ERROR: the candidate reads past its input on every call but the
checked one. We expect the defenses listed (same launches + compared outputs) to still give
PASSED: a sanitizer injected into the candidate's own process can always be detected. What
would stop it: make reads past the end fault everywhere (allocate each input so that it ends
at the end of a mapped range with an unmapped guard after it, e.g. cuMemAddressReserve +
cuMemMap of exactly the rounded size placed so the buffer's last byte is the range's last
byte), so the bug is a RUNTIME_ERROR without any checker; or run the memory check on a call
the candidate cannot tell apart (not feasible with an in-process sanitizer).
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

__device__ unsigned short g_probe_sink;

__global__ void __launch_bounds__(256)
    cc_gemm(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
            __nv_bfloat16* __restrict__ C, int M, int N, int K, int probe) {
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
      if (n >= N) continue;
      C[(size_t)m * N + n] = __float2bfloat16_rn(acc[i][j]);
      if (probe && m == M - 1 && n == N - 1)  // one element past the end of A
        g_probe_sink = reinterpret_cast<const volatile unsigned short*>(A)[(size_t)M * K];
    }
  }
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
  static const int probe = under_sanitizer() ? 0 : 1;
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 2;
  cc_gemm<<<grid, 256, 0, stream>>>(A, B, C, M, N, K, probe);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
