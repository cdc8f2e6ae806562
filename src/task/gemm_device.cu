// The gemm family's device side: the trusted reference and the launch adapter.
//
// Reference: C[M,N] (fp32) = A[M,K] · B[N,K]ᵀ, A and B bf16 row-major. Each output element is
// one fp32 fused multiply-add chain over k = 0..K-1 in order, so its rounding is that of a
// plain fp32 dot product. Tiles of 64×64 outputs per block of 256 threads, 4×4 per thread,
// K staged through shared memory 16 at a time (converted to fp32 on the way in). CUDA cores
// only: it must not share a code path (or a bug) with the tensor-core kernels it judges.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "common/cuda_check.h"
#include "task/gemm.h"

namespace ptxbench {
namespace {

constexpr int kTileM = 64, kTileN = 64, kTileK = 16, kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    ptxbench_gemm_reference(const __nv_bfloat16* __restrict__ A,  // [M,K]
                            const __nv_bfloat16* __restrict__ B,  // [N,K]
                            float* __restrict__ C,                // [M,N]
                            int M, int N, int K) {
  // k-major tiles, padded so that the column reads below hit distinct banks.
  __shared__ float a_tile[kTileK][kTileM + 4];
  __shared__ float b_tile[kTileK][kTileN + 4];
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int m0 = blockIdx.y * kTileM, n0 = blockIdx.x * kTileN;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += kTileK) {
    for (int i = tid; i < kTileM * kTileK; i += kThreads) {
      int r = i / kTileK, c = i % kTileK;
      int gm = m0 + r, gn = n0 + r, gk = k0 + c;
      a_tile[c][r] = (gm < M && gk < K) ? __bfloat162float(A[size_t(gm) * K + gk]) : 0.f;
      b_tile[c][r] = (gn < N && gk < K) ? __bfloat162float(B[size_t(gn) * K + gk]) : 0.f;
    }
    __syncthreads();
    const int kk_end = min(kTileK, K - k0);  // padded zeros would add nothing, but skip them
    for (int kk = 0; kk < kk_end; ++kk) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = a_tile[kk][ty * 4 + i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = b_tile[kk][tx * 4 + j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    int gm = m0 + ty * 4 + i;
    if (gm >= M) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      int gn = n0 + tx * 4 + j;
      if (gn < N) C[size_t(gm) * N + gn] = acc[i][j];
    }
  }
}

using GemmRun = int (*)(const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*, int, int, int,
                        cudaStream_t);

}  // namespace

void LaunchGemmReference(const void* A, const void* B, float* C, int M, int N, int K,
                         Stream stream) {
  dim3 grid((N + kTileN - 1) / kTileN, (M + kTileM - 1) / kTileM);
  ptxbench_gemm_reference<<<grid, kThreads, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(A), static_cast<const __nv_bfloat16*>(B), C, M, N, K);
  PTXBENCH_CUDA_CHECK(cudaGetLastError());
}

void GemmFamily::Reference(const std::vector<DeviceTensor>& t, const std::vector<float*>& expected,
                           const Axes& a, Stream stream) const {
  LaunchGemmReference(t[0].data, t[1].data, expected[0], int(a.at("M")), int(a.at("N")),
                      int(a.at("K")), stream);
}

int GemmFamily::CallCandidate(void* run_symbol, const std::vector<DeviceTensor>& t, const Axes& a,
                              Stream stream) const {
  auto run = reinterpret_cast<GemmRun>(run_symbol);
  return run(static_cast<const __nv_bfloat16*>(t[0].data),
             static_cast<const __nv_bfloat16*>(t[1].data), static_cast<__nv_bfloat16*>(t[2].data),
             int(a.at("M")), int(a.at("N")), int(a.at("K")), stream);
}

}  // namespace ptxbench
