// The gemm family's device side: the trusted reference and the launch adapter.
//
// Reference: C[M,N] (fp32) = A[M,K] · B[N,K]ᵀ, A and B bf16 (or fp16) row-major. Each output
// element is one fp32 fused multiply-add chain over k = 0..K-1 in order, so its rounding is that of
// a plain fp32 dot product. Tiles of 64×64 outputs per block of 256 threads, 4×4 per thread, K
// staged through shared memory 16 at a time (converted to fp32 on the way in). CUDA cores only: it
// must not share a code path (or a bug) with the tensor-core kernels it judges.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "common/cuda_check.h"
#include "task/gemm.h"

namespace ptxbench {
namespace {

constexpr int kTileM = 64, kTileN = 64, kTileK = 16, kThreads = 256;

__device__ inline float ToFloat(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline float ToFloat(__half x) { return __half2float(x); }

template <typename T>
__global__ void __launch_bounds__(kThreads)
    ptxbench_gemm_reference(const T* __restrict__ A,  // [M,K]
                            const T* __restrict__ B,  // [N,K]
                            float* __restrict__ C,    // [M,N]
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
      a_tile[c][r] = (gm < M && gk < K) ? ToFloat(A[size_t(gm) * K + gk]) : 0.f;
      b_tile[c][r] = (gn < N && gk < K) ? ToFloat(B[size_t(gn) * K + gk]) : 0.f;
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

// The entry point's type; bf16 and fp16 pointers pass alike, so one type serves both.
using GemmRun = int (*)(const void*, const void*, void*, int, int, int, cudaStream_t);

}  // namespace

void LaunchGemmReference(const void* A, const void* B, float* C, int M, int N, int K, Stream stream,
                         DType element) {
  dim3 grid((N + kTileN - 1) / kTileN, (M + kTileM - 1) / kTileM);
  if (element == DType::kF16)
    ptxbench_gemm_reference<__half><<<grid, kThreads, 0, stream>>>(
        static_cast<const __half*>(A), static_cast<const __half*>(B), C, M, N, K);
  else
    ptxbench_gemm_reference<__nv_bfloat16><<<grid, kThreads, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(A), static_cast<const __nv_bfloat16*>(B), C, M, N, K);
  PTXBENCH_CUDA_CHECK(cudaGetLastError());
}

void GemmFamily::Reference(const std::vector<DeviceTensor>& t, const std::vector<float*>& expected,
                           const Axes& a, Stream stream) const {
  LaunchGemmReference(t[0].data, t[1].data, expected[0], int(a.at("M")), int(a.at("N")),
                      int(a.at("K")), stream, element_);
}

int GemmFamily::CallCandidate(void* run_symbol, const std::vector<DeviceTensor>& t, const Axes& a,
                              Stream stream) const {
  auto run = reinterpret_cast<GemmRun>(run_symbol);
  return run(t[0].data, t[1].data, t[2].data, int(a.at("M")), int(a.at("N")), int(a.at("K")),
             stream);
}

}  // namespace ptxbench
