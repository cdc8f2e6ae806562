/*
Adversarial control: memcheck_silent   (issue 34: a memory check with nothing to check)

Attack. The memory checker (compute-sanitizer memcheck) runs one call of the candidate in a
child of its own and the parent reads the checker's report: 0 errors and a summary seen is
"memory check clean". The call's outputs are compared with the reference only if the child
sent a trial, and its kernels are held against the trials' only if it sent a trial; a child
that sent none is compared with nothing. So this candidate, when it finds the sanitizer in
its process (CUDA_INJECTION64_PATH naming it, NV_SANITIZER* / COMPUTE_SANITIZER* variables,
its libraries in /proc/self/maps: memcheck_flag_evasion's test), calls exit(0) at its first
call, before it launches anything: the checker sees a process that ended cleanly and writes
"ERROR SUMMARY: 0 errors". Elsewhere it is the honest CUDA-core GEMM of channel_relay.cu.
Whatever it would have done wrong under the checker (an out-of-bounds access it cannot hide
from the guard pages) is never looked at.
Task gemm_n128_k2048, M=93, with the memory check on (--sanitize always).

Old harness: not run against it. By the code at de49d52: memcheck {"state": "ran",
"error_count": 0}, cross_check memcheck_output "matches" (CompareChildCall returns "" without
a trial), memcheck kernels not compared: PASSED, "memory check clean".
Now: a memory-checked child that sends no trial is not clean: RUNTIME_ERROR.
RULE_VIOLATION (observed_output_differs: nothing observed under the checker) is as fair.
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

// ---- the honest GEMM (channel_relay.cu) -------------------------------------------------------

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

// memcheck_flag_evasion.cu's test.
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
  if (under_sanitizer()) exit(0);  // a clean exit: the checker reports 0 errors
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 2;
  cc_gemm<<<grid, 256, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
