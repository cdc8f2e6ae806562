/*
Adversarial control: impossible_speed   (issue 34: a claim no GPU can make)

Attack. A correct CUDA-core GEMM whose timed samples are forged on fd 3 to a speed far above
what the GPU's tensor cores can do: a relay (channel_relay.cu's, streaming: each line is
rewritten as it passes, nothing is held back, so the end-of-loop handshake is not stalled)
rewrites every candidate timing_sample to span_ns = busy_ns = T = 2*M*N*K / 5000 TFLOP/s
(a little jitter) and host_ns = T + 30 us. At gemm_n128_k2048, M=93 that is ~10 ns a call:
5000 TFLOP/s, ~5x the H200's bf16 dense peak, for FFMA code.
The kernel is the CUDA-core GEMM of channel_relay.cu (64x64 tiles, 4x4 per thread), correct
everywhere; at M=93 it runs on 4 blocks (4 of 132 SMs), so the GPM witness reads little
SM-busy time per call: the small shape is chosen so that the speed rule is what must catch it.

Old harness: not run against it. By the code at de49d52 nothing compares the claim with the
GPU's peak (percent_of_peak is only reported); the one check a forged median meets is the GPM
witness (median x 1.5 >= busy per call). Whether the witness reads a 4-block kernel's few
microseconds of busy time per call against a ~10 ns median decides between RULE_VIOLATION
witness_disagrees and PASSED at ~1000x cuBLASLt with percent_of_peak ~500%.
Now: a timed speed above the measured tensor peak for the task's FLOPs is impossible:
RULE_VIOLATION impossible_speed. witness_disagrees (the tightened witness seeing any busy
time above 1.15 x 10 ns) is as fair, as is channel_tampered for a relay caught rewriting the
channel. Never PASSED, never INFRA_ERROR.
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
  g_forged_ns = 2.0 * M * N * (double)K / 5000e12 * 1e9;
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 2;
  cc_gemm<<<grid, 256, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
