/*
Control: gemm_tvm_ffi
Expected verdict: PASSED on gemm_n7168_k5120 (candidate.abi "tvm-ffi"); no architecture tag
(CUDA cores only, no GMMA in the SASS)

A kernel written the way upstream PTXBench candidates are: one self-contained kernel.cu whose
entry point is `void run(tvm::ffi::TensorView A, TensorView B, TensorView C)`, exported with
TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, ...), destination-passing (the inputs A [M,K] and B [N,K],
then the output C [M,N], all bf16, contiguous row-major), the stream from TVMFFIEnvGetStream,
the sizes from the tensors (size()), the pointers from data_ptr(). Nothing of ptxbench's native
ABI: it is judged unchanged, as upstream would run it.

C = A·Bᵀ with fp32 accumulation, rounded to bf16 once. A simple tiled CUDA-core kernel:
64x64 block tile, K step 16, 256 threads each computing a 4x4 register tile from fp32 copies
of the A and B tiles in shared memory; every edge bounds-checked (any M, N, K >= 1).
Correctness is what matters here, not speed.

Build (as the harness does for a tvm-ffi candidate; TVM_FFI = .tools/tvm-ffi/tvm_ffi):
nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a \
     -cudart shared -Xptxas -v -I$TVM_FFI/include -L$TVM_FFI/lib -ltvm_ffi \
     -Xlinker -rpath,$TVM_FFI/lib -o kernel.so gemm_tvm_ffi.cu -lcuda
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/tvm_ffi.h>

#include <cstdint>

namespace {

constexpr int BM = 64, BN = 64, BK = 16, kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    gemm_tiled(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
               __nv_bfloat16* __restrict__ C, int M, int N, int K) {
  __shared__ float As[BK][BM + 1];  // As[k][m]
  __shared__ float Bs[BK][BN + 1];  // Bs[k][n]
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;  // 16 x 16 threads, 4 x 4 outputs each
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    // 64 x 16 elements of each tile, 4 per thread.
    for (int idx = tid; idx < BM * BK; idx += kThreads) {
      const int r = idx / BK, kk = idx % BK;
      const int64_t gm = m0 + r, gn = n0 + r, gk = k0 + kk;
      As[kk][r] = (gm < M && gk < K) ? __bfloat162float(A[gm * K + gk]) : 0.f;
      Bs[kk][r] = (gn < N && gk < K) ? __bfloat162float(B[gn * K + gk]) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t m = m0 + ty + 16 * i;
    if (m >= M) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t n = n0 + tx + 16 * j;
      if (n < N) C[m * N + n] = __float2bfloat16_rn(acc[i][j]);
    }
  }
}

}  // namespace

void run(tvm::ffi::TensorView A, tvm::ffi::TensorView B, tvm::ffi::TensorView C) {
  const int64_t M = A.size(0), K = A.size(1), N = B.size(0);
  TVM_FFI_ICHECK(B.size(1) == K && C.size(0) == M && C.size(1) == N) << "shape mismatch";
  cudaSetDevice(A.device().device_id);
  cudaStream_t stream =
      static_cast<cudaStream_t>(TVMFFIEnvGetStream(A.device().device_type, A.device().device_id));
  const dim3 grid(unsigned((N + BN - 1) / BN), unsigned((M + BM - 1) / BM));
  gemm_tiled<<<grid, kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(A.data_ptr()),
                                            static_cast<const __nv_bfloat16*>(B.data_ptr()),
                                            static_cast<__nv_bfloat16*>(C.data_ptr()), int(M),
                                            int(N), int(K));
  cudaError_t e = cudaGetLastError();
  TVM_FFI_ICHECK(e == cudaSuccess) << "launch failed: " << cudaGetErrorString(e);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run);
