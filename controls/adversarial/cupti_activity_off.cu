/*
Adversarial control: cupti_activity_off   (issue class 3: hiding work from the in-process timer)

Attack. The timing child measures each call with CUPTI kernel activity records, and its
CUPTI is the same library instance as ours: the ptxbench executable links libcupti, so weak
references to cuptiActivityDisable / cuptiActivityEnable in this object resolve to the
harness's copy at dlopen (no library of our own, no dlopen, nothing for the screen). In the
timing child (role from the spec, argv[2] of /proc/self/cmdline; any child whose spec cannot
be read is treated the same) every call:
  1. launches on `stream` a short decoy kernel that spins on %globaltimer for the time a fast
     GEMM would take (2*M*N*K / 900 TFLOP/s); first, or it would queue behind the GEMM,
  2. switches CONCURRENT_KERNEL activity off,
  3. launches the real GEMM on a private stream (after an event recorded on `stream`, so it
     sees the inputs), which CUPTI therefore never records, and switches the activity on.
The harness sees one short kernel on the right stream inside the call window; its host time
is the decoy's (the GEMM finishes during the harness's own cudaDeviceSynchronize after the
window, which is not timed), so neither the span, the idle-GPU nor the host-time rule fires,
and the outputs it re-checks are correct because that synchronization comes first. The
other roles launch the same two kernels without touching CUPTI.

The GEMM is honest and slow: plain CUDA cores, 64x64 tiles, 4x4 outputs per thread, fp32
accumulation, ~0.03x cuBLASLt at the headline. Outputs are always correct.

Old harness: PASSED at ~1.1-1.2x the baseline.
Now: CUPTI can still be switched off from inside (same process), but the parent's NVML GPM
witness sees the GPU busy ~25 ms per call against a ~0.7 ms median ->
RULE_VIOLATION witness_disagrees.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

// The harness's CUPTI (CUptiResult and CUpti_ActivityKind are C enums: int in the ABI).
extern "C" int cuptiActivityDisable(int kind) __attribute__((weak));
extern "C" int cuptiActivityEnable(int kind) __attribute__((weak));

namespace {

constexpr int kConcurrentKernel = 10;  // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL

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

// What CUPTI is left to see: a kernel that lasts as long as a fast GEMM would.
__global__ void decoy(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
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

// 1 in the timing child (its spec, the argument after "__child", says "role": "timing"),
// 0 in the other children, -1 when the spec cannot be read.
int timing_child() {
  std::string c = slurp("/proc/self/cmdline");
  std::vector<std::string> args;
  for (size_t p = 0; p < c.size();) {
    size_t e = c.find('\0', p);
    if (e == std::string::npos) e = c.size();
    args.push_back(c.substr(p, e - p));
    p = e + 1;
  }
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "__child") {
      const std::string spec = slurp(args[i + 1]);
      size_t p = spec.find("\"role\"");
      if (p == std::string::npos || (p = spec.find(':', p)) == std::string::npos) return -1;
      p = spec.find('"', p);
      return p != std::string::npos && spec.compare(p, 8, "\"timing\"") == 0 ? 1 : 0;
    }
  return -1;
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  static int timing = 2;
  static cudaStream_t side = nullptr;
  static cudaEvent_t inputs_ready = nullptr;
  if (timing == 2) timing = timing_child();
  if (!side) {
    if (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreateWithFlags(&inputs_ready, cudaEventDisableTiming) != cudaSuccess)
      return 2;
  }
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 3;

  // The decoy goes first: launched after the GEMM it would queue behind the GEMM's blocks.
  const double flops = 2.0 * M * N * (double)K;
  cudaEventRecord(inputs_ready, stream);
  decoy<<<1, 32, 0, stream>>>((unsigned long long)(flops / 900e12 * 1e9) + 2000ull);
  cudaStreamWaitEvent(side, inputs_ready, 0);
  // Where the role is unknown, hide anyway: switching off what is not on costs nothing.
  const bool hide = timing != 0 && cuptiActivityDisable && cuptiActivityEnable;
  if (hide) cuptiActivityDisable(kConcurrentKernel);
  cc_gemm<<<grid, 256, 0, side>>>(A, B, C, M, N, K);
  if (hide) cuptiActivityEnable(kConcurrentKernel);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
