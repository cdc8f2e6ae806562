/*
Adversarial control: memcheck_report_unlink   (issue 34: a memory check whose report vanishes)

Attack. compute-sanitizer writes its report (--log-file) in the memory-checked child's own
folder, the one folder that child may write. Under the checker (memcheck_flag_evasion's test)
this candidate reads a word past the end of A, an access the checker reports and the guard
pages of the plain trials never see (the trials get the honest kernel), and then unlinks the
report: the checker writes into a file nobody can open any more, and the parent reads none.
The spec's path is the child's third argument, so the folder is found from /proc/self/cmdline.
Elsewhere it is the honest CUDA-core GEMM of channel_relay.cu.
Task gemm_n128_k2048, M=93, with the memory check on (--sanitize always).

Old harness: by the code before b2a57e3 a missing report was "the checker itself failed":
INFRA_ERROR, a failure laundered into the harness's, and a memory error never reported.
Now: a missing report is the candidate's failure (RUNTIME_ERROR) unless a candidate-free
probe right after finds the GPU unhealthy. MEMORY_ERROR would be as fair.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

extern char** environ;

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

// memcheck_flag_evasion.cu's test.
bool under_sanitizer() {
  if (const char* inj = getenv("CUDA_INJECTION64_PATH"))
    if (strstr(inj, "sanitizer")) return true;
  for (char** e = environ; e && *e; ++e)
    if (strncmp(*e, "NV_SANITIZER", 12) == 0 || strncmp(*e, "COMPUTE_SANITIZER", 17) == 0)
      return true;
  std::string maps;
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) maps.append(buf, (size_t)n);
    close(fd);
  }
  return maps.find("sanitizer") != std::string::npos;
}

// Reads A[n] (one past the end) and folds it into C[0] where it changes nothing for finite
// values: the read cannot be optimized away.
__global__ void read_past_end(const __nv_bfloat16* A, size_t n, __nv_bfloat16* C) {
  const float x = __bfloat162float(A[n]);
  if (x != x) C[0] = __float2bfloat16_rn(0.f);
}

// The memory-checked child's folder is where its spec lies: `ptxbench __child SPEC`.
void unlink_report() {
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[8192];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return;
  buf[n] = 0;
  std::string spec;
  int arg = 0;
  for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1, ++arg)
    if (arg == 2) spec = buf + i;
  const size_t slash = spec.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : spec.substr(0, slash);
  unlink((folder + "/memcheck.txt").c_str());
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 2;
  if (under_sanitizer()) {
    // The error the checker would report: one word past A's end, read and kept.
    read_past_end<<<1, 1, 0, stream>>>(A, (size_t)M * K, C);
    cudaStreamSynchronize(stream);
    unlink_report();
  }
  cc_gemm<<<grid, 256, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
