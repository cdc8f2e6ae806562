// The trusted GEMM reference on the GPU: equal to a CPU double-precision product on small
// shapes (including sizes that are not multiples of its tiles), consistent with the host's
// input generator, and in agreement with cuBLAS at the headline shape (a cross-check only:
// cuBLAS is never the reference).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "common/cuda_check.h"
#include "task/device_ops.h"
#include "task/gemm.h"
#include "task/random_normal.h"

namespace ptxbench {
namespace {

float Bf16ToF(uint16_t b) {
  uint32_t w = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

struct DeviceGemm {
  int M, N, K;
  void *A = nullptr, *B = nullptr;
  float* C = nullptr;
  DeviceGemm(int m, int n, int k, uint64_t seed) : M(m), N(n), K(k) {
    PTXBENCH_CUDA_CHECK(cudaMalloc(&A, size_t(M) * K * 2));
    PTXBENCH_CUDA_CHECK(cudaMalloc(&B, size_t(N) * K * 2));
    PTXBENCH_CUDA_CHECK(cudaMalloc(&C, size_t(M) * N * 4));
    FillStandardNormal(A, DType::kBF16, size_t(M) * K, seed, 0, nullptr);
    FillStandardNormal(B, DType::kBF16, size_t(N) * K, seed, 1, nullptr);
  }
  ~DeviceGemm() {
    cudaFree(A);
    cudaFree(B);
    cudaFree(C);
  }
  std::vector<uint16_t> Host(void* p, size_t n) {
    std::vector<uint16_t> h(n);
    PTXBENCH_CUDA_CHECK(cudaMemcpy(h.data(), p, n * 2, cudaMemcpyDeviceToHost));
    return h;
  }
};

// The witness digest made on the device by the timing child equals the parent's, over the
// bytes read back, for sizes around the lane width, an odd tail and a 2-byte-aligned start.
TEST(WitnessDigest, DeviceAndHostAgree) {
  for (size_t bytes : {size_t{2}, size_t{14}, size_t{8} * kDigestLanes, size_t{8} * kDigestLanes + 6,
                       size_t{11904} * 2, size_t{3} << 20}) {
    for (size_t offset : {size_t{0}, size_t{2}}) {
      std::vector<uint8_t> host(bytes);
      for (size_t i = 0; i < bytes; ++i) host[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
      uint8_t* dev = nullptr;
      PTXBENCH_CUDA_CHECK(cudaMalloc(&dev, bytes + offset));
      PTXBENCH_CUDA_CHECK(cudaMemcpy(dev + offset, host.data(), bytes, cudaMemcpyHostToDevice));
      EXPECT_EQ(DeviceDigest(dev + offset, bytes, 0x5eed, nullptr), HostDigest(host.data(), bytes, 0x5eed))
          << bytes << " bytes at offset " << offset;
      PTXBENCH_CUDA_CHECK(cudaFree(dev));
    }
  }
}

TEST(GemmReference, MatchesCpuDoublePrecisionOnSmallShapes) {
  const int shapes[][3] = {{1, 1, 1}, {93, 128, 64}, {70, 77, 37}, {129, 257, 1031}, {64, 64, 16}};
  for (const auto& s : shapes) {
    int M = s[0], N = s[1], K = s[2];
    DeviceGemm g(M, N, K, 12345);
    LaunchGemmReference(g.A, g.B, g.C, M, N, K, nullptr);
    PTXBENCH_CUDA_CHECK(cudaDeviceSynchronize());
    auto a = g.Host(g.A, size_t(M) * K), b = g.Host(g.B, size_t(N) * K);
    std::vector<float> c(size_t(M) * N);
    PTXBENCH_CUDA_CHECK(cudaMemcpy(c.data(), g.C, c.size() * 4, cudaMemcpyDeviceToHost));
    // The device generator equals the host's definition of the inputs.
    size_t generator_mismatch = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      float want = float(StandardNormal(12345, 0, i));
      if (std::fabs(Bf16ToF(a[i]) - want) > std::fabs(want) * 0.0079f + 1e-30f)
        ++generator_mismatch;
    }
    EXPECT_EQ(generator_mismatch, 0u);
    double worst = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double ref = 0, mag = 0;
        for (int k = 0; k < K; ++k) {
          double p = double(Bf16ToF(a[size_t(i) * K + k])) * Bf16ToF(b[size_t(j) * K + k]);
          ref += p;
          mag += std::fabs(p);
        }
        // fp32 accumulation error is bounded by ~K·eps·Σ|a·b|; we ask for far less in practice.
        double err = std::fabs(c[size_t(i) * N + j] - ref) / (mag + 1e-30);
        worst = std::max(worst, err);
      }
    std::printf("M=%d N=%d K=%d: worst |ref32 - ref64| / sum|a*b| = %.3g\n", M, N, K, worst);
    EXPECT_LT(worst, 1e-5) << M << "x" << N << "x" << K;
  }
}

TEST(GemmReference, AgreesWithCublasAtTheHeadlineShape) {
  const int M = 8192, N = 7168, K = 5120;
  DeviceGemm g(M, N, K, 777);
  float* cub = nullptr;
  PTXBENCH_CUDA_CHECK(cudaMalloc(&cub, size_t(M) * N * 4));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  LaunchGemmReference(g.A, g.B, g.C, M, N, K, nullptr);  // warm-up
  cudaEventRecord(e0);
  LaunchGemmReference(g.A, g.B, g.C, M, N, K, nullptr);
  cudaEventRecord(e1);
  PTXBENCH_CUDA_CHECK(cudaEventSynchronize(e1));
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  std::printf("reference GEMM %dx%dx%d: %.2f ms (%.1f TFLOP/s, CUDA cores, fp32)\n", M, N, K, ms,
              2.0 * M * N * K / (ms * 1e-3) / 1e12);

  cublasHandle_t h;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  // Row-major C[M,N] = A[M,K]·B[N,K]ᵀ is column-major Cᵀ[N,M] = B·Aᵀ: op(B) = T on the
  // column-major [K,N] view of B, A used as the column-major [K,M] it already is.
  float alpha = 1, beta = 0;
  ASSERT_EQ(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, g.B, CUDA_R_16BF, K, g.A,
                         CUDA_R_16BF, K, &beta, cub, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  PTXBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> ours(size_t(M) * N), theirs(size_t(M) * N);
  PTXBENCH_CUDA_CHECK(cudaMemcpy(ours.data(), g.C, ours.size() * 4, cudaMemcpyDeviceToHost));
  PTXBENCH_CUDA_CHECK(cudaMemcpy(theirs.data(), cub, theirs.size() * 4, cudaMemcpyDeviceToHost));
  double max_abs = 0, sum_sq = 0, ref_sq = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    double d = std::fabs(double(ours[i]) - theirs[i]);
    max_abs = std::max(max_abs, d);
    sum_sq += d * d;
    ref_sq += double(theirs[i]) * theirs[i];
  }
  double rel_rms = std::sqrt(sum_sq / ref_sq);
  std::printf("reference vs cuBLAS at %dx%dx%d: max abs diff %.3g, relative RMS diff %.3g\n", M, N,
              K, max_abs, rel_rms);
  EXPECT_LT(rel_rms, 1e-5);
  EXPECT_LT(max_abs, 0.01);  // values are ~N(0, sqrt(K)=71.6): far below the task's tolerance
  cublasDestroy(h);
  cudaFree(cub);
}

}  // namespace
}  // namespace ptxbench
