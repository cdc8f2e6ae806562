/*
Adversarial control: witness_fixup   (forged timing that survives the GPM witness by
deferring the real work past its window; written against the witness protocol being built,
src/run/timing_child.cc AfterTheLoop; expected to expose a gap)

The protocol it attacks: after the timed loop the parent sends on the control descriptor
(fd 4) a plan {"check": [k...], "witness": {"calls": W, "rounds": R, ...}}, then "go" once its
GPM window has begun; the child runs R x W back-to-back calls into W kept output buffers and
reports "witness_done"; the parent waits 0.3 s, closes the GPM window, and only then sends
{"check": [j]}: which witness output it wants. Everything the parent learns about the outputs
it learns after the window is closed, through a descriptor of the candidate's process.

Attack.
  - Every call (trials, memory check, timed loop): a short decoy kernel on `stream` first,
    then the real CUDA-core GEMM on a private stream with the harness's CUPTI kernel activity
    switched off around its launch (weak cuptiActivityDisable/Enable, as cupti_activity_off.cu).
    CUPTI, in every child, only ever sees the decoy: the launched kernels are {decoy}
    everywhere, the timed median is the decoy's (2*M*N*K / 900 TFLOP/s), and the GEMM finishes
    during the harness's own synchronizations, so every output compared is correct. (No GMMA in
    the SASS: no profiled call is made, so ncu never sees the hidden kernel.)
  - At load time, if fd 4 is a pipe whose other end is in another process (the control
    channel; CUDA's own pipes have both ends here), a constructor puts a pipe of its own in
    its place and relays the parent's lines to the harness with a thread:
      plan  -> forwarded;
      "go"  -> from now on run() is in witness mode: it launches only the decoy (one block:
               the GPU is all but idle, which the witness reads as "agrees": busy time is a
               lower bound) and remembers each call's A, B, C;
      check -> BEFORE forwarding it, the relay computes the requested witness outputs for
               real (CUPTI off, private stream, synchronized), after the window has closed.
Result: correct trials, memory check, timed and witness outputs; a CUDA-core GEMM timed as
if it ran at ~900 TFLOP/s; a witness that saw nothing wrong.

Old harness (no witness, no control descriptor): behaves as cupti_activity_off.cu: PASSED
at ~1.1x.
Fair verdict: RULE_VIOLATION witness_disagrees (the GPU did ~30x more work than the median
says). On the H200 (2026-12-05) the protocol above PASSED it at 1.11x. What stops it now: with
witness_done the timing child sends a keyed digest of every witness output, made while the
parent's window is still open; the output asked for afterwards must match it. The decoy left
the buffers poisoned, so the output computed after the window has another digest.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

extern "C" int cuptiActivityDisable(int kind) __attribute__((weak));
extern "C" int cuptiActivityEnable(int kind) __attribute__((weak));

namespace {

constexpr int kConcurrentKernel = 10;  // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
constexpr int kControlFd = 4;          // src/run/children.h

// ---- a plain CUDA-core GEMM: 64x64 tiles, 16-deep K steps, 256 threads, 4x4 outputs each ----
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

__global__ void decoy(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

struct Call {
  const __nv_bfloat16 *A, *B;
  __nv_bfloat16* C;
  int M, N, K;
};

std::atomic<bool> g_witness{false};
std::mutex g_mu;
std::vector<Call> g_witness_calls;  // one per distinct output buffer, in order of first use
cudaStream_t g_side = nullptr;

// The real GEMM, invisible to the harness's CUPTI.
void hidden_gemm(const Call& c, cudaStream_t s) {
  const dim3 grid((unsigned)((c.N + 63) / 64), (unsigned)((c.M + 63) / 64));
  if (cuptiActivityDisable && cuptiActivityEnable) cuptiActivityDisable(kConcurrentKernel);
  cc_gemm<<<grid, 256, 0, s>>>(c.A, c.B, c.C, c.M, c.N, c.K);
  if (cuptiActivityDisable && cuptiActivityEnable) cuptiActivityEnable(kConcurrentKernel);
}

// ---- the control relay -------------------------------------------------------------------

int g_real_control = -1, g_fake_control = -1;

void forward(const std::string& line) {
  const std::string s = line + "\n";
  for (size_t off = 0; off < s.size();) {
    ssize_t n = write(g_fake_control, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += (size_t)n;
  }
}

void* control_relay(void*) {
  std::string partial;
  char buf[4096];
  int line_no = 0;
  for (;;) {
    ssize_t n = read(g_real_control, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial.append(buf, (size_t)n);
    for (size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
      const std::string line = partial.substr(0, nl);
      partial.erase(0, nl + 1);
      ++line_no;
      if (line == "go") {
        g_witness = true;  // before the harness can read it
      } else if (g_witness && line.find("\"check\"") != std::string::npos) {
        // The window is closed: now compute what the parent is about to look at.
        g_witness = false;
        std::vector<Call> calls;
        {
          std::lock_guard<std::mutex> lock(g_mu);
          calls = g_witness_calls;
        }
        for (size_t p = line.find('['); p != std::string::npos && p + 1 < line.size();) {
          char* end = nullptr;
          const long j = strtol(line.c_str() + p + 1, &end, 10);
          if (end == line.c_str() + p + 1) break;
          if (j >= 0 && (size_t)j < calls.size()) hidden_gemm(calls[(size_t)j], g_side);
          p = line.find(',', p + 1);
        }
        cudaStreamSynchronize(g_side);
      }
      forward(line);
    }
  }
  close(g_fake_control);
  return nullptr;
}

// fd 4 is the parent's control pipe: a pipe whose other end no descriptor of ours holds.
bool is_foreign_pipe(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) return false;
  for (int other = 0; other < 1024; ++other) {
    struct stat o;
    if (other != fd && fstat(other, &o) == 0 && o.st_ino == st.st_ino && o.st_dev == st.st_dev)
      return false;
  }
  return true;
}

__attribute__((constructor)) void intercept_control() {
  if (!is_foreign_pipe(kControlFd)) return;
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return;
  const int real = fcntl(kControlFd, F_DUPFD_CLOEXEC, 10);
  if (real < 0 || dup2(p[0], kControlFd) < 0) {
    close(p[0]);
    close(p[1]);
    if (real >= 0) close(real);
    return;
  }
  close(p[0]);
  g_real_control = real;
  g_fake_control = p[1];
  pthread_t t;
  if (pthread_create(&t, nullptr, control_relay, nullptr) == 0) pthread_detach(t);
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  if ((N + 63) / 64 > 65535 || (M + 63) / 64 > 65535) return 2;
  static cudaEvent_t inputs_ready = nullptr;
  if (!g_side && (cudaStreamCreateWithFlags(&g_side, cudaStreamNonBlocking) != cudaSuccess ||
                  cudaEventCreateWithFlags(&inputs_ready, cudaEventDisableTiming) != cudaSuccess))
    return 3;
  // The decoy first (launched after the GEMM it would queue behind the GEMM's blocks).
  const double flops = 2.0 * M * N * (double)K;
  cudaEventRecord(inputs_ready, stream);
  decoy<<<1, 32, 0, stream>>>((unsigned long long)(flops / 900e12 * 1e9) + 2000ull);
  const Call call{A, B, C, M, N, K};
  if (g_witness) {  // between "go" and the check: the real work waits for the window to close
    std::lock_guard<std::mutex> lock(g_mu);
    bool seen = false;
    for (const Call& c : g_witness_calls) seen |= c.C == C;
    if (!seen) g_witness_calls.push_back(call);
  } else {
    cudaStreamWaitEvent(g_side, inputs_ready, 0);
    hidden_gemm(call, g_side);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
