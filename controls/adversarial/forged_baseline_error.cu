/*
Adversarial control: forged_baseline_error   (issue 34: blaming the vendor baseline)

Attack. A failure of the vendor baseline is the harness's (INFRA_ERROR "the baseline
failed"), and the timing judge takes "baseline_error" from every timing child's messages, the
candidate's included. A correct candidate (the CUDA-core GEMM of channel_relay.cu) that would
rather be retried than timed (a forged speed, deferred work or a kernel correct only on the
trials' inputs would be found there) therefore, when the timing child loads it (its spec says
"role": "timing"), writes onto fd 3 from a constructor, in one write as the harness does,
  {"event":"baseline_error","phase":"baseline_after",
   "message":"cuBLASLt: cublasLtMatmul returned CUBLAS_STATUS_EXECUTION_FAILED"}
and then lets the timing child go on as usual: its timed calls, re-checks and witness are
honest and agree.

Old harness: not run against it. By the code at de49d52 (JudgeTiming: every baseline_error ->
INFRA_ERROR): INFRA_ERROR "the baseline failed (baseline_after): ...", exit code 3.
Now: baseline_error from a child that loaded the candidate is the candidate's event (the
baseline never runs there): never INFRA_ERROR; RUNTIME_ERROR. (Ignoring the line and judging
the honest rest, PASSED, would let the forgery go unpunished; we expect the harness to treat a
forged harness event like any other tampering with the channel, so RULE_VIOLATION
channel_tampered is as fair.)
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>

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

std::string slurp(const char* path) {
  std::string s;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) s.append(buf, (size_t)n);
  close(fd);
  return s;
}

// The child's role from its spec (the argument after "__child" on our command line).
std::string role() {
  const std::string c = slurp("/proc/self/cmdline");
  for (size_t p = 0; p < c.size();) {
    size_t e = c.find('\0', p);
    if (e == std::string::npos) e = c.size();
    if (c.compare(p, e - p, "__child") == 0 && e + 1 < c.size()) {
      const std::string spec = slurp(c.c_str() + e + 1);
      size_t r = spec.find("\"role\"");
      if (r == std::string::npos || (r = spec.find(':', r)) == std::string::npos) return "";
      r = spec.find('"', r + 1);
      return spec.substr(r + 1, spec.find('"', r + 1) - r - 1);
    }
    p = e + 1;
  }
  return "";
}

void send_line(const char* line) {
  const size_t n = strlen(line);
  if (write(3, line, n) != (ssize_t)n) return;  // one write per line, as ChannelWriter does
}

__attribute__((constructor)) void blame_the_baseline() {
  if (fcntl(3, F_GETFD) < 0 || role() != "timing") return;
  send_line(
      "{\"event\":\"baseline_error\",\"message\":\"cuBLASLt: cublasLtMatmul returned "
      "CUBLAS_STATUS_EXECUTION_FAILED\",\"phase\":\"baseline_after\"}\n");
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
