/*
Control: cheat_host_thread
Expected verdict: PASSED (the host work is charged to the call, so nothing is gained; no
architecture tag). Not the RULE_VIOLATION outside_stream one might expect: see below.

The cheat: let the CPU do the GEMM and the GPU only move bytes, hoping that only GPU work is
timed.
  - run() copies A and B to the host with cudaMemcpy (synchronous, device to host), computes
    C[m][n] = sum_k A[m][k] * B[n][k] with a plain CPU loop split over std::thread workers (rows
    of C dealt out round-robin; fp32 accumulation in k order, the bf16 -> fp32 widening is exact,
    the result rounded to bf16 round-to-nearest-even exactly as __float2bfloat16_rn does, NaN
    kept a quiet NaN), joins the workers, and copies C back with cudaMemcpyAsync on `stream`.
  - There is no device code at all: the shared object has no cubin.
  Only meant for small shapes: at 93 x 128 x 2048 it is ~24 M multiply-adds (milliseconds on a
  few cores); at the headline 8192 x 7168 x 5120 it would take minutes (TIMEOUT).

What the harness sees: the GPU time of a call is the span from the first start to the last end
of all CUPTI activity started in the call window, gaps included. The device-to-host copies of
A and B open that span and the host-to-device copy of C closes it, so the CPU loop in between
is inside the span: GPU span ~= host wall time, and the host-vs-GPU rule (host > 1.5 x span +
1 ms) cannot fire. A CPU GEMM cannot escape this bracket, because with fresh inputs per call it
must read this call's inputs (a copy at the start) and write C (a copy at the end). So the
timing layer is not fooled: the call is charged its full CPU time and is reported as very slow
against cuBLASLt. It is correct, so correctness passes; the instruction layer finds no cubin,
hence no GMMA and no tag. The expected verdict is therefore PASSED with a GPU median roughly
equal to the host median (both at least the CPU time). outside_stream by host time is for work
the CUPTI timer cannot see at all (for instance done by another process), or host work before
the first GPU activity of a call.

Build (as the harness does):
nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a \
     -cudart shared -o cheat_host_thread.so cheat_host_thread.cu -lcuda
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace {

// bf16 bits -> fp32 (exact).
inline float bf16_to_float(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// fp32 -> bf16 bits, round to nearest even (what __float2bfloat16_rn does); NaN stays NaN.
inline uint16_t float_to_bf16_rn(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);  // overflow past the largest finite rounds to inf, as it should
  return static_cast<uint16_t>(u >> 16);
}

// Rows m = first, first + stride, ... of C.
void cpu_rows(const uint16_t* A, const uint16_t* B, uint16_t* C, int M, int N, int K, int first,
              int stride) {
  std::vector<float> a(static_cast<size_t>(K));
  for (int m = first; m < M; m += stride) {
    const uint16_t* arow = A + static_cast<size_t>(m) * K;
    for (int k = 0; k < K; ++k) a[k] = bf16_to_float(arow[k]);
    for (int n = 0; n < N; ++n) {
      const uint16_t* brow = B + static_cast<size_t>(n) * K;
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) acc += a[k] * bf16_to_float(brow[k]);
      C[static_cast<size_t>(m) * N + n] = float_to_bf16_rn(acc);
    }
  }
}

// Host copies, kept across calls. C's stays alive after run() returns: the asynchronous copy
// from it is queued on `stream`.
std::vector<uint16_t> g_a, g_b, g_c;

}  // namespace

extern "C" int run(const __nv_bfloat16* A,  // [M, K]
                   const __nv_bfloat16* B,  // [N, K]
                   __nv_bfloat16* C,        // [M, N]
                   int M, int N, int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  const size_t na = static_cast<size_t>(M) * K, nb = static_cast<size_t>(N) * K,
               nc = static_cast<size_t>(M) * N;
  // The previous call's copy out of g_c must be done before g_c is reused (it is: the caller
  // synchronized `stream` after that call; this makes it explicit).
  if (cudaStreamSynchronize(stream) != cudaSuccess) return 1;
  g_a.resize(na);
  g_b.resize(nb);
  g_c.resize(nc);
  if (cudaMemcpy(g_a.data(), A, na * sizeof(uint16_t), cudaMemcpyDeviceToHost) != cudaSuccess)
    return 1;
  if (cudaMemcpy(g_b.data(), B, nb * sizeof(uint16_t), cudaMemcpyDeviceToHost) != cudaSuccess)
    return 1;

  unsigned hw = std::thread::hardware_concurrency();
  const int workers = static_cast<int>(std::max(1u, std::min({hw ? hw : 2u, 16u, (unsigned)M})));
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(workers));
  for (int w = 0; w < workers; ++w)
    pool.emplace_back(cpu_rows, g_a.data(), g_b.data(), g_c.data(), M, N, K, w, workers);
  for (std::thread& t : pool) t.join();

  return cudaMemcpyAsync(C, g_c.data(), nc * sizeof(uint16_t), cudaMemcpyHostToDevice, stream) ==
                 cudaSuccess
             ? 0
             : 1;
}
