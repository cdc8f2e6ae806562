/*
Adversarial control: log_flood   (issue 34: the child's log as a weapon against the record)

Attack. Each child's stdout and stderr go to a log file in the evaluation's folder; the parent
reads the WHOLE file back (ReadFile) and keeps its last 40 lines as the child's log tail,
which goes into the record (correctness.child_log_tail; performance.child_log_tail when the
timing layer found fault), the model's feedback and the results store. A line has no length
limit. So this candidate writes 100 MiB of text with no newline but one at the end to stderr:
  - from a constructor, in every child that loads it;
  - from every call, in every child but the timing child (where writing 100 MiB inside a
    timed call would break the host-time rule, RULE_VIOLATION outside_stream, which is not
    what this control is about); the timing child writes its second 100 MiB from a destructor,
    at exit, after its last call.
The trials' child logs ~400 MiB in 4 lines, all of them "the last 40 lines": a record of
~400 MiB (and as much in the parent's memory, twice over while it is cut and copied). The
GEMM itself is honest (the CUDA-core GEMM of channel_relay.cu).
Task gemm_n128_k2048, M=93.

Old harness: not run against it. By the code at de49d52: PASSED, with a record of ~400 MiB
(correctness.child_log_tail), which the results store, the service and the model's feedback
carry as they are.
Now: child logs are read as bounded tails and a record's size is capped: PASSED (no tag) and a
record under 1 MiB ("max_record_bytes": 1048576 in verdicts.json).
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>

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

// ---- the flood ----------------------------------------------------------------------------------

constexpr size_t kFloodBytes = size_t(100) << 20;

// 100 MiB of "ADV-LOG-FLOOD " to stderr, then one newline.
void flood(const char* where) {
  static char chunk[1 << 20];
  if (chunk[0] == 0) {
    const char pattern[] = "ADV-LOG-FLOOD ";
    for (size_t i = 0; i < sizeof chunk; ++i) chunk[i] = pattern[i % (sizeof pattern - 1)];
  }
  const std::string head = std::string("log_flood (") + where + "): ";
  if (write(2, head.data(), head.size()) < 0) return;
  for (size_t done = 0; done < kFloodBytes;) {
    const ssize_t n = write(2, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += (size_t)n;
  }
  if (write(2, "\n", 1) < 0) return;
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

// Whether this is the timing child (its spec, the argument after "__child", says so).
bool timing_child() {
  const std::string c = slurp("/proc/self/cmdline");
  for (size_t p = 0; p < c.size();) {
    size_t e = c.find('\0', p);
    if (e == std::string::npos) e = c.size();
    if (c.compare(p, e - p, "__child") == 0 && e + 1 < c.size()) {
      const std::string spec = slurp(c.c_str() + e + 1);
      size_t r = spec.find("\"role\"");
      if (r == std::string::npos || (r = spec.find(':', r)) == std::string::npos) return false;
      r = spec.find('"', r + 1);
      return r != std::string::npos && spec.compare(r, 8, "\"timing\"") == 0;
    }
    p = e + 1;
  }
  return false;
}

int g_timing = -1;  // constant-initialized; set by the constructor

__attribute__((constructor)) void flood_at_load() {
  g_timing = timing_child() ? 1 : 0;
  flood("load");
}

__attribute__((destructor)) void flood_at_exit() {
  if (g_timing == 1) flood("exit");
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  if (g_timing == 0) flood("call");
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 2;
  cc_gemm<<<grid, 256, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
