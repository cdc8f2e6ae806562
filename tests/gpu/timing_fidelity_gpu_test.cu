// Fidelity of the timing layer (issue 4): our CUPTI span of the cuBLASLt baseline at the
// headline GEMM agrees with CUDA events around the same calls under the same cold-L2
// protocol, and repeated measurements agree with one another. Prints the figures that
// docs/gpu-runs records.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "measure/activity_timer.h"
#include "measure/call_activity.h"
#include "measure/cublaslt_gemm.h"
#include "measure/summary.h"
#include "task/device_ops.h"
#include "task/family.h"

namespace ptxbench {
namespace {

ActivityTimer& Timer() {
  static ActivityTimer timer;  // before the first CUDA call of the test process
  return timer;
}

struct Measured {
  Summary cupti, events;
};

// 10 warm-up and 50 timed calls, each after a 2×L2 write, as the timing child does.
Measured Measure(CublasLtGemm& lt, void* a, void* b, void* c, void* flush, size_t flush_bytes,
                 cudaStream_t hs, cudaStream_t cs) {
  ActivityTimer& timer = Timer();
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<double> spans, events;
  timer.CollectAll();
  for (int i = 0; i < 60; ++i) {
    cudaStreamSynchronize(hs);
    // The flush goes on the timed stream just before the first event, so that the GPU is
    // busy while the host enqueues the event and the GEMM: the events then time the GEMM,
    // not the host's launch latency into an idle stream.
    FillPoison(flush, DType::kBF16, flush_bytes / 2, cs);
    cudaEventRecord(e0, cs);
    lt.Run(a, b, c, cs);
    cudaEventRecord(e1, cs);
    cudaStreamSynchronize(cs);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    // Our span, over everything but the flush (ours, named ptxbench_*).
    uint64_t first = UINT64_MAX, last = 0;
    for (const ActivitySpan& r : timer.CollectAll()) {
      if (r.name.find("ptxbench_") != std::string::npos) continue;  // mangled names
      first = std::min(first, r.start);
      last = std::max(last, r.end);
    }
    if (i >= 10) {
      spans.push_back((last - first) * 1e-9);
      events.push_back(ms * 1e-3);
    }
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return {Summarize(spans), Summarize(events)};
}

// The baseline computes the task (C = A·Bᵀ, row-major), not some transpose of it: checked
// against our reference on an odd shape, so a layout slip cannot hide behind fast timings.
TEST(TimingFidelity, TheBaselineComputesTheTask) {
  Timer();
  const Family& gemm = *FindFamily("gemm");
  for (Axes axes :
       {Axes{{"M", 129}, {"N", 257}, {"K", 1031}}, Axes{{"M", 256}, {"N", 64}, {"K", 96}}}) {
    std::vector<DeviceTensor> t;
    for (const auto& spec : gemm.Tensors(axes)) {
      DeviceTensor d{spec, nullptr};
      ASSERT_EQ(cudaMalloc(&d.data, spec.Bytes()), cudaSuccess);
      t.push_back(d);
    }
    float* expected = nullptr;
    size_t n = static_cast<size_t>(axes["M"] * axes["N"]);
    ASSERT_EQ(cudaMalloc(&expected, n * 4), cudaSuccess);
    gemm.MakeInputs(t, axes, 7, nullptr);
    gemm.Reference(t, {expected}, axes, nullptr);
    auto lt = CublasLtGemm::Load();
    lt->Prepare(int(axes["M"]), int(axes["N"]), int(axes["K"]));
    lt->Run(t[0].data, t[1].data, t[2].data, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> ref(n);
    std::vector<uint16_t> got(n);
    cudaMemcpy(ref.data(), expected, n * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(got.data(), t[2].data, n * 2, cudaMemcpyDeviceToHost);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; ++i) {
      uint32_t w = uint32_t(got[i]) << 16;
      float g;
      std::memcpy(&g, &w, 4);
      worst = std::max(worst, std::fabs(double(g) - ref[i]));
      scale = std::max(scale, std::fabs(double(ref[i])));
    }
    std::printf("cuBLASLt vs reference at %lldx%lldx%lld: max abs %.4g (max |ref| %.3g)\n",
                (long long)axes["M"], (long long)axes["N"], (long long)axes["K"], worst, scale);
    EXPECT_LT(worst, 0.01 * scale);
    for (auto& d : t) cudaFree(d.data);
    cudaFree(expected);
  }
}

TEST(TimingFidelity, CuptiSpanAgreesWithEventsAndRepeatsAgree) {
  Timer();
  const int M = 8192, N = 7168, K = 5120;  // the headline gemm_n7168_k5120
  auto lt = CublasLtGemm::Load();
  lt->Prepare(M, N, K);
  void *a, *b, *c, *flush;
  int l2 = 0;
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
  size_t flush_bytes = 2 * static_cast<size_t>(l2);
  ASSERT_EQ(cudaMalloc(&a, size_t(M) * K * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, size_t(N) * K * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&c, size_t(M) * N * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&flush, flush_bytes), cudaSuccess);
  cudaStream_t hs, cs;
  cudaStreamCreateWithFlags(&hs, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking);
  FillStandardNormal(a, DType::kBF16, size_t(M) * K, 1, 0, hs);
  FillStandardNormal(b, DType::kBF16, size_t(N) * K, 1, 1, hs);
  cudaStreamSynchronize(hs);

  std::vector<double> medians;
  for (int round = 0; round < 5; ++round) {
    Measured m = Measure(*lt, a, b, c, flush, flush_bytes, hs, cs);
    double diff = m.cupti.median / m.events.median - 1;
    double tflops = 2.0 * M * N * K / m.cupti.median * 1e-12;
    std::printf(
        "round %d: CUPTI median %.2f us (p10 %.2f, p90 %.2f), events median %.2f us, "
        "difference %+.2f%%, %.1f TFLOP/s\n",
        round, m.cupti.median * 1e6, m.cupti.p10 * 1e6, m.cupti.p90 * 1e6, m.events.median * 1e6,
        100 * diff, tflops);
    // CUDA events also count the front end's work between the event and the kernel (a
    // constant ~25 µs at this shape on the H200, 2026-12-02), so they read a few percent
    // longer; the 3 % agreement is checked against Nsight Compute's gpu__time_duration
    // (UnderNsightCompute below, compared by scripts/gpu_suite.sh).
    EXPECT_GE(m.events.median, m.cupti.median * 0.99);
    EXPECT_LT(std::fabs(diff), 0.05) << "CUPTI and CUDA events disagree by more than 5 %";
    medians.push_back(m.cupti.median);
  }
  Summary s = Summarize(medians);
  double var = 0;
  for (double x : medians) var += (x - s.mean) * (x - s.mean);
  double cv = std::sqrt(var / (medians.size() - 1)) / s.mean;
  std::printf("five repeated medians: mean %.2f us, coefficient of variation %.3f%%\n",
              s.mean * 1e6, 100 * cv);
  EXPECT_LT(cv, 0.02);
  std::printf("cuBLASLt: %s\n", lt->Describe().dump().c_str());
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaFree(flush);
}

// The same cold-L2 calls without CUPTI, for Nsight Compute to time independently:
//   PTXBENCH_UNDER_NCU=1 ncu --cache-control all --clock-control none \
//     --metrics gpu__time_duration.sum --csv timing_fidelity_gpu_test --gtest_filter=*UnderNsight*
TEST(TimingFidelity, UnderNsightCompute) {
  if (!std::getenv("PTXBENCH_UNDER_NCU")) GTEST_SKIP() << "run by scripts/gpu_suite.sh under ncu";
  const int M = 8192, N = 7168, K = 5120;
  auto lt = CublasLtGemm::Load();
  lt->Prepare(M, N, K);
  void *a, *b, *c;
  ASSERT_EQ(cudaMalloc(&a, size_t(M) * K * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, size_t(N) * K * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&c, size_t(M) * N * 2), cudaSuccess);
  FillStandardNormal(a, DType::kBF16, size_t(M) * K, 1, 0, nullptr);
  FillStandardNormal(b, DType::kBF16, size_t(N) * K, 1, 1, nullptr);
  for (int i = 0; i < 20; ++i) lt->Run(a, b, c, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
}

}  // namespace
}  // namespace ptxbench
