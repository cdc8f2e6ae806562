/*
Adversarial control: relay_kept_zero   (issue 34: the parent believes the child's count)

Attack. After the timed loop the timing child reports {"event":"timed_loop_done","kept":N}:
how many timed calls kept their outputs. The parent draws the calls to re-check among those
N and sizes the GPM witness from N (calls = min(W, N); no witness at all when N = 0). That
line travels on fd 3 like every other, so a relay (channel_relay.cu's, but streaming: each
line is rewritten as it passes, nothing is held back, so the handshake that follows is not
stalled) rewrites "kept" to 0, and rewrites every candidate timing_sample to
span_ns = busy_ns = T = 2*M*N*K / 800 TFLOP/s (a little jitter), host_ns = T + 30 us. The
parent then asks for no re-check and runs no witness; the child, told nothing, reports
timing_done. 800 TFLOP/s is ~1.1x cuBLASLt at the headline on an H100/H200 (the baseline runs
in its own process, so the relay cannot read its median any more).
The kernel is honest and slow: the CUDA-core GEMM of channel_relay.cu (64x64 tiles, 4x4 per
thread, FFMA), ~25 ms per call at the headline, correct everywhere.

Old harness: not run against it. By the code at de49d52: plan {"check": []} with no witness,
re-validation "not_reached", witness "unavailable: the witness phase did not run", and the
forged median stands: PASSED at ~1.1x the baseline (~800 TFLOP/s claimed for FFMA code).
Now: the parent decides the number of kept outputs and witness calls itself and ignores the
child's count; the witness runs with fresh inputs per call and sees ~25 ms of SM-busy time per
call against a ~0.75 ms median: RULE_VIOLATION witness_disagrees. A witness that did not run
or ran short (witness_missing) or a relay caught rewriting the channel (channel_tampered) are
as fair. Never PASSED, never INFRA_ERROR.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

// ---- the honest, slow GEMM (channel_relay.cu) ------------------------------------------------

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

// ---- the streaming relay on fd 3 -------------------------------------------------------------

volatile double g_forged_ns = 0;  // T, set by every call
int g_real_channel = -1;
pthread_t g_relay;
bool g_relaying = false;

std::string with_number(const std::string& line, const char* key, double v, bool integer) {
  std::string k = std::string("\"") + key + "\":";
  size_t p = line.find(k);
  if (p == std::string::npos) return line;
  p += k.size();
  size_t e = p;
  while (e < line.size() && strchr("0123456789+-.eE", line[e])) ++e;
  char buf[64];
  snprintf(buf, sizeof buf, integer ? "%.0f" : "%.1f", v);
  return line.substr(0, p) + buf + line.substr(e);
}

std::string forged(std::string l) {
  static int i = 0;
  if (l.find("\"event\":\"timed_loop_done\"") != std::string::npos)
    return with_number(l, "kept", 0, true);  // the parent then plans no re-check, no witness
  if (g_forged_ns <= 0 || l.find("\"event\":\"timing_sample\"") == std::string::npos ||
      l.find("\"phase\":\"candidate\"") == std::string::npos)
    return l;
  const double t = g_forged_ns * (1.0 + 0.004 * ((i++ % 7) - 3));
  l = with_number(l, "span_ns", t, true);
  l = with_number(l, "busy_ns", t, true);
  return with_number(l, "host_ns", t + 30000.0, false);
}

void deliver(const std::string& s) {
  for (size_t off = 0; off < s.size();) {
    ssize_t n = write(g_real_channel, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += (size_t)n;
  }
}

void* relay_main(void* arg) {
  const int in = (int)(intptr_t)arg;
  std::string partial;
  char buf[65536];
  for (;;) {
    ssize_t n = read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial.append(buf, (size_t)n);
    for (size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
      deliver(forged(partial.substr(0, nl)) + "\n");  // at once: the handshake must not stall
      partial.erase(0, nl + 1);
    }
  }
  if (!partial.empty()) deliver(forged(partial));
  close(in);
  return nullptr;
}

// In every child that loads us: only the timing child has samples to rewrite.
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
  close(3);  // the harness has written its last line; EOF lets the relay deliver it
  pthread_join(g_relay, nullptr);
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  g_forged_ns = 2.0 * M * N * (double)K / 800e12 * 1e9;
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 2;
  cc_gemm<<<grid, 256, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
