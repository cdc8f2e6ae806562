// How Nsight Compute counts one wgmma of each width (the pack GEMM's work fraction of 2.0 at
// the headline, HGMMA.64x256x16, against 1.0 for wgmma_tma's HGMMA.64x128x16, 2026-12-07).
// One warpgroup (128 threads) issues exactly kIters wgmma of width N (64, 128, 256: the pack
// header's wrappers), chained into one accumulator, on zeroed shared memory. inspect/ncu.cc
// credits inst_executed / 4 per warpgroup instruction: expect inst_executed = 4 * kIters summed
// over each kernel's HGMMA offsets, whatever N is. scripts/probes/hgmma_count.sh builds it
// (with -I packs/sm_90a/include) and reads the counts.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "ptxbench_sm90.cuh"

namespace pk = ptxbench_sm90;

constexpr int kIters = 1000;

template <int N>
__device__ __forceinline__ void Wgmma(float (&d)[N / 2], uint64_t a, uint64_t b) {
  if constexpr (N == 64) pk::wgmma_m64n64k16_bf16(d, a, b);
  if constexpr (N == 128) pk::wgmma_m64n128k16_bf16(d, a, b);
  if constexpr (N == 256) pk::wgmma_m64n256k16_bf16(d, a, b);
}

template <int N>
__global__ void __launch_bounds__(128) probe(float* out) {
  __shared__ alignas(1024) uint16_t a[64 * 64], b[256 * 64];
  for (int i = threadIdx.x; i < 64 * 64; i += 128) a[i] = 0;
  for (int i = threadIdx.x; i < 256 * 64; i += 128) b[i] = 0;
  __syncthreads();
  float d[N / 2] = {};
  const uint64_t da = pk::desc_kmajor_sw128(static_cast<uint32_t>(__cvta_generic_to_shared(a)));
  const uint64_t db = pk::desc_kmajor_sw128(static_cast<uint32_t>(__cvta_generic_to_shared(b)));
  pk::wgmma_fence();
  // Not unrolled: a thousand unrolled wgmma of width 256 keep ptxas busy for minutes.
#pragma unroll 1
  for (int it = 0; it < kIters; ++it) Wgmma<N>(d, da, db);
  pk::wgmma_commit();
  pk::wgmma_wait<0>();
  float s = 0;
  for (float v : d) s += v;
  out[threadIdx.x] = s;
}

int main() {
  float* out = nullptr;
  cudaMalloc(&out, 128 * sizeof(float));
  probe<64><<<1, 128>>>(out);
  probe<128><<<1, 128>>>(out);
  probe<128><<<1, 128>>>(out);  // twice: does the source page print one section per launch?
  probe<256><<<1, 128>>>(out);
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("probes ran: %s (%d wgmma per warpgroup each)\n", cudaGetErrorString(e), kIters);
  return e == cudaSuccess ? 0 : 1;
}
