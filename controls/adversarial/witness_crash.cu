/*
Adversarial control: witness_crash   (issue 34: a crash where the old judge blamed the harness)

Attack. The timing judge blames the candidate for an error in the "candidate" phase (its timed
loop) but the harness for an error in any other phase (INFRA_ERROR "the timing child failed").
The witness phase runs the candidate's run() too, right after the timed loop, under the
phase name "witness". A candidate that knows the witness will catch it (a forged speed) but
does not want RULE_VIOLATION on its record can turn it into a retry: correct everywhere (the
CUDA-core GEMM of channel_relay.cu), it counts its calls in the timing child (its spec says
"role": "timing" and gives "warmup" and "iterations"; no other calls come before the loop)
and, from the first call after the timed loop on, one thread of the GEMM writes to address
16: cudaErrorIllegalAddress, found by the synchronization after the witness rounds.
Calls in other children never crash; the trials and the memory check are clean and correct.

Old harness: not run against it. By the code at de49d52: AfterTheLoop sends {"event":"error",
"stage":"timing","phase":"witness",...}; JudgeTiming blames the harness for a timing error
outside the "candidate" phase: INFRA_ERROR "the timing child failed (timing witness): ...",
exit code 3. (No witness phase where GPM is unavailable: then PASSED.)
Now: every call of the candidate is the candidate's, and an error in a child that loaded it is
never INFRA_ERROR unless a candidate-free probe right after finds the GPU unhealthy (a fresh
context is healthy after an illegal address): RUNTIME_ERROR. A witness that ran short
(RULE_VIOLATION witness_missing) is as fair.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace {

__global__ void __launch_bounds__(256)
    cc_gemm(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
            __nv_bfloat16* __restrict__ C, int M, int N, int K, int crash) {
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
  if (crash && threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0)
    *reinterpret_cast<volatile int*>(16) = 1;  // an illegal address: the context is lost
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

// The child's spec (the argument after "__child" on our command line).
std::string spec_text() {
  const std::string c = slurp("/proc/self/cmdline");
  for (size_t p = 0; p < c.size();) {
    size_t e = c.find('\0', p);
    if (e == std::string::npos) e = c.size();
    if (c.compare(p, e - p, "__child") == 0 && e + 1 < c.size()) return slurp(c.c_str() + e + 1);
    p = e + 1;
  }
  return "";
}

// The value of "key" in the spec: a string's text or a number's digits.
std::string spec_value(const std::string& spec, const char* key) {
  const std::string k = std::string("\"") + key + "\"";
  size_t p = spec.find(k);
  if (p == std::string::npos || (p = spec.find(':', p + k.size())) == std::string::npos) return "";
  p = spec.find_first_not_of(" \t\r\n", p + 1);
  if (p == std::string::npos) return "";
  if (spec[p] == '"') return spec.substr(p + 1, spec.find('"', p + 1) - p - 1);
  return spec.substr(p, spec.find_first_of(",}\n", p) - p);
}

// The index of the first call after the timed loop in the timing child; -1 elsewhere.
long first_call_after_the_loop() {
  const std::string spec = spec_text();
  if (spec_value(spec, "role") != "timing") return -1;
  const std::string w = spec_value(spec, "warmup"), it = spec_value(spec, "iterations");
  return atol(w.empty() ? "10" : w.c_str()) + atol(it.empty() ? "50" : it.c_str());
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  static const long crash_from = first_call_after_the_loop();
  static long calls = 0;
  const int crash = crash_from >= 0 && calls++ >= crash_from;
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 2;
  cc_gemm<<<grid, 256, 0, stream>>>(A, B, C, M, N, K, crash);
  const cudaError_t e = cudaGetLastError();
  // Once crashing, never refuse: a refusal is judged the candidate's even by the old rules;
  // the fault must surface in the harness's synchronization after the witness rounds.
  return crash || e == cudaSuccess ? 0 : 3;
}
