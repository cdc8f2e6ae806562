/*
Adversarial control: channel_relay   (issue class 2: forged timing through the result channel)

Attack. The timing child reports every call as one JSON line on fd 3 ("timing_sample", with
the CUPTI span, busy time and host time of the call). fd 3 is just a descriptor of the
process that loads us, so at load time a constructor moves the real descriptor away (dup),
puts a pipe in its place (dup2 onto 3) and starts a relay thread. The harness keeps writing
to "fd 3". Lines pass through unchanged until our first timed sample; from there the relay
holds every line until "timing_done" (so that it has seen the baseline's calls after ours),
then rewrites each of our timed samples: span_ns = busy_ns = the baseline's median / 1.16
(a little jitter; 2*M*N*K / 900 TFLOP/s when no baseline ran in this process), host_ns just
above it, and forwards everything in order to the real descriptor. It runs in every child
(nothing to rewrite elsewhere), so no spec needs to be read. A destructor closes fd 3 at
exit and joins the relay so that the last lines ("done") are delivered.

The kernel itself is honest and slow: a plain CUDA-core GEMM (64x64 tiles, 4x4 outputs per
thread, fp32 accumulation, every edge checked), ~0.03x cuBLASLt at the headline. Its outputs
are always correct, so every correctness and re-validation check passes.

Old harness: PASSED at 1.16x the baseline (the parent believed the channel).
Now: the channel can still be rewritten (the relay needs only pipe/dup2/threads), but the
parent's NVML GPM witness samples SM utilization over back-to-back calls from outside the
process: ~25 ms of busy GPU per call against a claimed ~0.6 ms median ->
RULE_VIOLATION witness_disagrees. No GMMA in the SASS, so no tag.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// ---- the honest, slow GEMM --------------------------------------------------------------

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

// ---- the relay ----------------------------------------------------------------------------

int g_real_channel = -1;
volatile double g_flops = 0;  // of the last call, for a target when no baseline ran here
pthread_t g_relay;
bool g_relaying = false;

bool has(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

double number_after(const std::string& line, const char* key) {
  std::string k = std::string("\"") + key + "\":";
  size_t p = line.find(k);
  return p == std::string::npos ? 0 : strtod(line.c_str() + p + k.size(), nullptr);
}

std::string with_number(const std::string& line, const char* key, double v, bool integer) {
  std::string k = std::string("\"") + key + "\":";
  size_t p = line.find(k);
  if (p == std::string::npos) return line;
  p += k.size();
  size_t e = p;
  while (e < line.size() && strchr("0123456789+-.eE", line[e])) ++e;
  char buf[64];
  if (integer)
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
  else
    snprintf(buf, sizeof buf, "%.1f", v);
  return line.substr(0, p) + buf + line.substr(e);
}

void deliver(const std::string& s) {
  for (size_t off = 0; off < s.size();) {
    ssize_t n = write(g_real_channel, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += (size_t)n;
  }
}

void release(std::vector<std::string>& held) {
  std::vector<double> base;
  for (const auto& l : held)
    if (has(l, "\"event\":\"timing_sample\"") && has(l, "\"phase\":\"baseline_after\"") &&
        has(l, "\"warmup\":false"))
      base.push_back(number_after(l, "span_ns"));
  double target = 0;
  if (!base.empty()) {
    std::sort(base.begin(), base.end());
    target = base[base.size() / 2] / 1.16;
  } else if (g_flops > 0) {
    target = g_flops / 900e12 * 1e9;
  }
  int i = 0;
  for (auto& l : held) {
    if (target > 0 && has(l, "\"event\":\"timing_sample\"") && has(l, "\"phase\":\"candidate\"")) {
      double t = target * (1.0 + 0.004 * ((i++ % 7) - 3));
      l = with_number(l, "span_ns", t, true);
      l = with_number(l, "busy_ns", t, true);
      l = with_number(l, "host_ns", t + 30000.0, false);
    }
    deliver(l + "\n");
  }
  held.clear();
}

void* relay_main(void* arg) {
  const int in = (int)(intptr_t)arg;
  std::string partial;
  std::vector<std::string> held;
  bool holding = false;  // from our first timed sample until the baseline's last
  char buf[65536];
  for (;;) {
    ssize_t n = read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial.append(buf, (size_t)n);
    for (size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
      std::string l = partial.substr(0, nl);
      partial.erase(0, nl + 1);
      holding |= has(l, "\"event\":\"timing_sample\"") && has(l, "\"phase\":\"candidate\"");
      if (!holding) {
        deliver(l + "\n");
        continue;
      }
      held.push_back(l);
      if (has(l, "\"event\":\"timing_done\"") || has(l, "\"event\":\"done\"") ||
          has(l, "\"event\":\"error\"") || has(l, "\"event\":\"refused\""))
        release(held);
    }
  }
  if (!partial.empty()) held.push_back(partial);
  release(held);
  close(in);
  return nullptr;
}

// In every child that loads us (only the timing child's samples are rewritten; the rest
// passes through), so that it works whether or not the spec can be read.
__attribute__((constructor)) void install_relay() {
  if (fcntl(3, F_GETFD) < 0) return;  // no channel
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return;
  fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
  const int real = fcntl(3, F_DUPFD_CLOEXEC, 10);
  if (real < 0 || dup2(p[1], 3) < 0) {
    close(p[0]);
    close(p[1]);
    if (real >= 0) close(real);
    return;
  }
  close(p[1]);
  g_real_channel = real;
  g_relaying = pthread_create(&g_relay, nullptr, relay_main, (void*)(intptr_t)p[0]) == 0;
}

__attribute__((destructor)) void finish_relay() {
  if (!g_relaying) return;
  close(3);  // the harness has written its last line; EOF lets the relay release it
  pthread_join(g_relay, nullptr);
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  g_flops = 2.0 * M * N * (double)K;
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 2;
  cc_gemm<<<grid, 256, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
