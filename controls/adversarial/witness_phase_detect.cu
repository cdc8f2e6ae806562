/*
Adversarial control: witness_phase_detect   (forged timing that also tries to fool the
witness by recognising its back-to-back calls)

Attack. channel_relay.cu forges the timed samples and is caught because the NVML GPM witness
sees the GPU busy for the real time of the calls in a phase of back-to-back calls. So this
candidate also recognises that phase and does only the forged amount of work there:
  - timed samples: a relay on fd 3 (as in channel_relay.cu) rewrites every candidate
    "timing_sample" to span = busy = T and host = T + 30 us, T = 2*M*N*K / 900 TFLOP/s;
  - witness calls: the harness poisons C (bf16 0xFFB7, src/run/device_ops.h) before every
    call it checks; calls that find C NOT poisoned (back-to-back calls on the same buffers)
    or come from a child whose spec role is neither "candidate" nor "timing" are witness
    calls. A 1-thread kernel (witness_probe) reads C[0] on the GPU and sets a flag; the GEMM
    kernel, launched with the SAME grid, block and shared memory every time, reads the flag
    and in "spin" mode only waits on %globaltimer until T has passed. The GPU is then busy
    ~T per witness call, which agrees with the forged median; those calls' outputs are left
    as they were.
  - every other call: an honest CUDA-core GEMM (64x64 tiles, 4x4 per thread), correct.
Kernel names, grids, blocks and shared memory are identical in all calls and roles.

Old harness: PASSED (2.7x at M=93 on the H200; the relay alone sufficed).
Fair verdict: RULE_VIOLATION witness_disagrees: the real kernel is ~40x slower than its
claim. Against the witness being built (kept outputs poisoned before round 1 only, R <= 16
rounds on the same inputs, one witness output checked): round 1 finds poison and is real,
rounds 2..R spin, so the GPU is busy real/R + T per call against a median T: caught when
real > (0.5 R + 1) T, as here. The same trick passes a smaller inflation (up to 9x at R = 16);
poisoning per round or checking an output of a random round closes it. witness_fixup.cu
defers the real work instead and is not bounded that way.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

__device__ int g_witness;  // set by witness_probe for the GEMM launched right after it

// C[0] still poisoned: a call the harness prepared (and may check). Otherwise: back-to-back.
__global__ void witness_probe(const __nv_bfloat16* C, int force) {
  const unsigned short c0 = *reinterpret_cast<const volatile unsigned short*>(C);
  g_witness = force || c0 != 0xFFB7u;
}

// The GEMM, or (g_witness set) a spin until `spin_ns` has passed.
__global__ void __launch_bounds__(256)
    cc_gemm(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
            __nv_bfloat16* __restrict__ C, int M, int N, int K, unsigned long long spin_ns) {
  __shared__ float As[16][65], Bs[16][65];  // [k][row], padded
  if (*reinterpret_cast<volatile int*>(&g_witness)) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    const unsigned long long per_block =
        spin_ns * 132ull * 8ull / ((unsigned long long)gridDim.x * gridDim.y + 1ull);
    do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < (per_block < spin_ns ? per_block : spin_ns));
    return;
  }
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

std::string slurp(const std::string& path) {
  std::string s;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return s;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) s.append(buf, (size_t)n);
  close(fd);
  return s;
}

std::string role() {
  std::string c = slurp("/proc/self/cmdline");
  for (size_t p = 0; p < c.size();) {
    size_t e = c.find('\0', p);
    if (e == std::string::npos) e = c.size();
    if (c.compare(p, e - p, "__child") == 0 && e + 1 < c.size()) {
      const std::string spec = slurp(c.c_str() + e + 1);
      size_t r = spec.find("\"role\"");
      if (r == std::string::npos || (r = spec.find('"', spec.find(':', r))) == std::string::npos)
        return "";
      return spec.substr(r + 1, spec.find('"', r + 1) - r - 1);
    }
    p = e + 1;
  }
  return "";
}

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

void* relay_main(void* arg) {
  const int in = (int)(intptr_t)arg;
  std::string partial;
  char buf[65536];
  auto deliver = [](const std::string& s) {
    for (size_t off = 0; off < s.size();) {
      ssize_t n = write(g_real_channel, s.data() + off, s.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      off += (size_t)n;
    }
  };
  for (;;) {
    ssize_t n = read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial.append(buf, (size_t)n);
    for (size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
      deliver(forged(partial.substr(0, nl)) + "\n");
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
  close(3);
  pthread_join(g_relay, nullptr);
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  static const std::string my_role = role();
  g_forged_ns = 2.0 * M * N * (double)K / 900e12 * 1e9 + 2000.0;
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 2;
  const bool other_role = !my_role.empty() && my_role != "candidate" && my_role != "timing";
  witness_probe<<<1, 1, 0, stream>>>(C, other_role ? 1 : 0);
  cc_gemm<<<grid, 256, 0, stream>>>(A, B, C, M, N, K, (unsigned long long)g_forged_ns);
  const int rc = cudaGetLastError() == cudaSuccess ? 0 : 3;
  return rc;
}
