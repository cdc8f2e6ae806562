/*
Adversarial control: spin_defer   (issue 34: deferred work across timed calls)

Attack. The timing child rotates three buffer sets (call i uses set i % 3, its inputs made
fresh just before the call), and every timed call k writes its own kept output buffer, which
the parent may re-check only after the loop. So a call's inputs are still intact two calls
later, and its output is not looked at before the loop ends. In the timing child (its spec
says "role": "timing", and gives "warmup" and "iterations") this candidate:
  - on two calls of every three only records the call (A, B, C pointers) and launches its
    GEMM kernel on one block that spins on %globaltimer for 2*M*N*K / 900 TFLOP/s + 2 us;
  - on the third (and on the loop's last call) launches the GEMM for the two recorded calls
    and its own at once (blockIdx.z picks the problem): every output is right by the end of
    the loop. The timed median is the spin: two thirds of the calls are spins.
  - Witness: the old witness phase repeats the same W inputs for R rounds back to back. A
    one-thread kernel run before the GEMM in every call fingerprints each problem's inputs
    (8 elements of A and 8 of B) against a table of the problems it computed; a problem seen
    before is skipped (its kept output, from round 1, is already right). Rounds 2..R are
    spins; round 1's last pending calls are computed in round 2.
In every other child each call computes its own output at once. The launched kernels
(recognise, gemm_multi) are the same in every call of every child; the GEMM is the
CUDA-core GEMM of channel_relay.cu, extended to three problems.
Task gemm_n128_k2048, M=93: 4 blocks per problem, ~0.1 ms; a spin call ~3 us.

Old harness: not run against it. By the code at de49d52: the three re-checked timed outputs
are correct (drawn after the loop, when everything is computed); the witness reads a few
microseconds of busy time per call (4 of 132 SMs, round 1 only) against a ~3 us median:
PASSED at ~3x cuBLASLt for FFMA code.
Now: every timed call's outputs are digested by the harness in stream order right after the
call: two of three calls leave their output poisoned there and it is right only later:
RULE_VIOLATION call_history. The witness's inputs are fresh per call (nothing to recognise),
so witness_disagrees is as fair.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

struct Problem {
  const __nv_bfloat16* A;
  const __nv_bfloat16* B;
  __nv_bfloat16* C;
};

// Up to three calls' problems in one launch (a kernel parameter).
struct Batch {
  Problem p[3];
  int count;
};

constexpr int kSeen = 1024;
__device__ unsigned long long g_seen[kSeen];  // fingerprints of the problems computed
__device__ unsigned g_seen_count;
__device__ int g_skip[3];

__device__ unsigned long long mix(unsigned long long h, unsigned short v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xBF58476D1CE4E5B9ull;
}

// One thread: which problems of the batch were computed before (repeated inputs).
__global__ void recognise(Batch b, int M, int N, int K) {
  const size_t a_elems = (size_t)M * K, b_elems = (size_t)N * K;
  for (int i = 0; i < b.count; ++i) {
    unsigned long long h = 0x243F6A8885A308D3ull;
    for (int s = 0; s < 8; ++s) {
      h = mix(h, reinterpret_cast<const unsigned short*>(b.p[i].A)[a_elems * s / 8]);
      h = mix(h, reinterpret_cast<const unsigned short*>(b.p[i].B)[b_elems * s / 8]);
    }
    int seen = 0;
    const unsigned n = g_seen_count < kSeen ? g_seen_count : kSeen;
    for (unsigned j = 0; j < n && !seen; ++j) seen = g_seen[j] == h;
    g_skip[i] = seen;
    if (!seen) g_seen[g_seen_count++ % kSeen] = h;
  }
}

// The CUDA-core GEMM of channel_relay.cu over blockIdx.z = problem; or, with spin_ns > 0, one
// block that only waits.
__global__ void __launch_bounds__(256)
    gemm_multi(Batch b, int M, int N, int K, unsigned long long spin_ns) {
  if (spin_ns > 0) {
    if (threadIdx.x == 0) {
      unsigned long long t0, t;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
      do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
      } while (t - t0 < spin_ns);
    }
    return;
  }
  const int z = blockIdx.z;
  if (z >= b.count || *reinterpret_cast<volatile int*>(&g_skip[z])) return;
  const __nv_bfloat16* __restrict__ A = b.p[z].A;
  const __nv_bfloat16* __restrict__ B = b.p[z].B;
  __nv_bfloat16* __restrict__ C = b.p[z].C;
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

// In the timing child: the number of calls in its timed loop (warm-ups included); -1 elsewhere.
long timed_loop_calls() {
  const std::string spec = spec_text();
  if (spec_value(spec, "role") != "timing") return -1;
  const std::string w = spec_value(spec, "warmup"), it = spec_value(spec, "iterations");
  return atol(w.empty() ? "10" : w.c_str()) + atol(it.empty() ? "50" : it.c_str());
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64), 3);
  if (grid.y > 65535u) return 2;
  static const long loop_calls = timed_loop_calls();
  static long calls = 0;
  static Batch pending = {};  // recorded, not yet computed
  const long index = calls++;
  pending.p[pending.count++] = Problem{A, B, C};
  const bool defer = loop_calls >= 0 && pending.count < 3 && index != loop_calls - 1;
  Batch b = pending;
  if (defer) {
    b.count = 0;  // nothing computed now: a spin on one block, the same two kernels
    recognise<<<1, 1, 0, stream>>>(b, M, N, K);
    gemm_multi<<<1, 256, 0, stream>>>(b, M, N, K,
                                      (unsigned long long)(2.0 * M * N * (double)K / 900e12 * 1e9) +
                                          2000ull);
  } else {
    pending.count = 0;
    recognise<<<1, 1, 0, stream>>>(b, M, N, K);
    gemm_multi<<<grid, 256, 0, stream>>>(b, M, N, K, 0ull);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
