// The attention references on the GPU against the double-precision host references, on small
// shapes (S not a multiple of the 32-key tiles or the 8-row blocks, every listed D, causal and
// not), and the reference's seconds at the largest listed workloads.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "task/attention.h"
#include "task/family.h"

namespace ptxbench {
namespace {

struct Device {
  std::vector<DeviceTensor> t;
  explicit Device(const Family& f, const Axes& a) {
    for (const auto& spec : f.Tensors(a)) {
      DeviceTensor d{spec, nullptr};
      EXPECT_EQ(cudaMalloc(&d.data, spec.Bytes()), cudaSuccess);
      t.push_back(d);
    }
  }
  ~Device() {
    for (auto& d : t) cudaFree(d.data);
  }
  std::vector<float> Host(size_t k) const {
    size_t n = size_t(t[k].spec.Elements());
    std::vector<float> out(n);
    if (t[k].spec.dtype == DType::kF32) {
      cudaMemcpy(out.data(), t[k].data, n * 4, cudaMemcpyDeviceToHost);
    } else {
      std::vector<__nv_bfloat16> b(n);
      cudaMemcpy(b.data(), t[k].data, n * 2, cudaMemcpyDeviceToHost);
      for (size_t i = 0; i < n; ++i) out[i] = __bfloat162float(b[i]);
    }
    return out;
  }
};

std::vector<float> Fetch(const float* p, size_t n) {
  std::vector<float> out(n);
  cudaMemcpy(out.data(), p, n * 4, cudaMemcpyDeviceToHost);
  return out;
}

// Worst |gpu − cpu| over max |cpu|, printed and returned.
double Worst(const char* what, const std::vector<float>& gpu, const std::vector<double>& cpu) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    worst = std::max(worst, std::fabs(double(gpu[i]) - cpu[i]));
    scale = std::max(scale, std::fabs(cpu[i]));
  }
  std::printf("  %-4s max abs err %.3g (max |ref| %.3g)\n", what, worst, scale);
  return worst / std::max(scale, 1.0);  // gradients that are exactly 0 (S = 1) stay absolute
}

struct Shape {
  int B, H, S, D;
};
const Shape kShapes[] = {{1, 2, 1, 64},    {1, 2, 37, 64},  {2, 3, 100, 96},
                         {1, 2, 129, 128}, {1, 1, 45, 256}, {1, 2, 256, 128}};

TEST(AttentionReference, ForwardMatchesDoublePrecision) {
  const Family& f = *FindFamily("mha_fwd");
  for (const Shape& sh : kShapes)
    for (int causal : {0, 1}) {
      Axes a{{"B", sh.B}, {"H", sh.H}, {"S", sh.S}, {"D", sh.D}, {"causal", causal}};
      Device dev(f, a);
      f.MakeInputs(dev.t, a, 11, nullptr);
      size_t n = size_t(dev.t[3].spec.Elements()), rows = size_t(dev.t[4].spec.Elements());
      float *o, *lse;
      cudaMalloc(&o, n * 4);
      cudaMalloc(&lse, rows * 4);
      f.Reference(dev.t, {o, lse}, a, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      AttentionShape s{sh.B, sh.H, sh.S, sh.D, causal != 0};
      std::vector<double> co, clse;
      CpuAttentionForward(s, dev.Host(0), dev.Host(1), dev.Host(2), &co, &clse);
      std::printf("fwd B=%d H=%d S=%d D=%d causal=%d\n", sh.B, sh.H, sh.S, sh.D, causal);
      EXPECT_LT(Worst("O", Fetch(o, n), co), 1e-5);
      EXPECT_LT(Worst("LSE", Fetch(lse, rows), clse), 1e-5);
      cudaFree(o);
      cudaFree(lse);
    }
}

TEST(AttentionReference, BackwardMatchesDoublePrecision) {
  const Family& f = *FindFamily("mha_bwd");
  for (const Shape& sh : kShapes)
    for (int causal : {0, 1}) {
      Axes a{{"B", sh.B}, {"H", sh.H}, {"S", sh.S}, {"D", sh.D}, {"causal", causal}};
      Device dev(f, a);
      f.MakeInputs(dev.t, a, 12, nullptr);  // O and LSE from the reference forward
      size_t n = size_t(dev.t[6].spec.Elements());
      float *dq, *dk, *dv;
      cudaMalloc(&dq, n * 4);
      cudaMalloc(&dk, n * 4);
      cudaMalloc(&dv, n * 4);
      f.Reference(dev.t, {dq, dk, dv}, a, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      AttentionShape s{sh.B, sh.H, sh.S, sh.D, causal != 0};
      // The handed O (bf16) and LSE are consistent with Q, K, V: check them too.
      std::vector<double> co, clse;
      CpuAttentionForward(s, dev.Host(0), dev.Host(1), dev.Host(2), &co, &clse);
      std::vector<double> cq, ck, cv;
      CpuAttentionBackward(s, dev.Host(0), dev.Host(1), dev.Host(2), dev.Host(3), dev.Host(4),
                           dev.Host(5), &cq, &ck, &cv);
      std::printf("bwd B=%d H=%d S=%d D=%d causal=%d\n", sh.B, sh.H, sh.S, sh.D, causal);
      EXPECT_LT(Worst("O", dev.Host(3), co), 1e-2);  // bf16 rounding of O
      EXPECT_LT(Worst("LSE", dev.Host(5), clse), 1e-5);
      EXPECT_LT(Worst("dQ", Fetch(dq, n), cq), 1e-5);
      EXPECT_LT(Worst("dK", Fetch(dk, n), ck), 1e-5);
      EXPECT_LT(Worst("dV", Fetch(dv, n), cv), 1e-5);
      cudaFree(dq);
      cudaFree(dk);
      cudaFree(dv);
    }
}

// The backward's timed inputs, derived from a base (MakeTimedInputs): O and LSE must still be
// exactly our forward's for the Q, K, V handed over (bit for bit: each head is computed alone,
// and negating V negates O exactly), dO must be new, and different call seeds must differ.
TEST(AttentionReference, DerivedTimedInputsStayConsistent) {
  const Family& f = *FindFamily("mha_bwd");
  for (int causal : {0, 1}) {
    Axes a{{"B", 2}, {"H", 3}, {"S", 100}, {"D", 64}, {"causal", causal}};
    Device base(f, a), call(f, a), other(f, a);
    f.MakeInputs(base.t, a, 21, nullptr);
    f.MakeTimedInputs(base.t, call.t, a, 1001, nullptr);
    f.MakeTimedInputs(base.t, other.t, a, 1002, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    size_t n = size_t(call.t[3].spec.Elements()), rows = size_t(call.t[5].spec.Elements());
    float *o, *lse;
    cudaMalloc(&o, n * 4);
    cudaMalloc(&lse, rows * 4);
    LaunchAttentionForward(call.t[0].data, call.t[1].data, call.t[2].data, o, lse, 2, 3, 100, 64,
                           causal != 0, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> o_ref = Fetch(o, n), lse_ref = Fetch(lse, rows);
    std::vector<float> o_given = call.Host(3), lse_given = call.Host(5);
    size_t o_diff = 0, lse_diff = 0;
    for (size_t i = 0; i < n; ++i)
      o_diff += __bfloat162float(__float2bfloat16_rn(o_ref[i])) != o_given[i];
    for (size_t i = 0; i < rows; ++i) lse_diff += lse_ref[i] != lse_given[i];
    std::printf("derived inputs, causal=%d: O differs in %zu of %zu, LSE in %zu of %zu\n", causal,
                o_diff, n, lse_diff, rows);
    EXPECT_EQ(o_diff, 0u);
    EXPECT_EQ(lse_diff, 0u);
    EXPECT_NE(call.Host(4), base.Host(4));   // dO is new
    EXPECT_NE(call.Host(4), other.Host(4));  // and new for every call
    // The head order moves too (12 affine orders of 6 heads: one of a few seeds differs).
    bool moved = false;
    for (uint64_t seed = 1002; seed < 1012 && !moved; ++seed) {
      f.MakeTimedInputs(base.t, other.t, a, seed, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      moved = call.Host(0) != other.Host(0);
    }
    EXPECT_TRUE(moved);
    cudaFree(o);
    cudaFree(lse);
  }
}

// The largest listed workloads: forward D=256 S=4096 and backward D=96 S=16384 (B=4, H=48).
TEST(AttentionReference, SecondsAtTheLargestWorkloads) {
  struct Case {
    const char* family;
    int S, D, causal;
  };
  for (Case c :
       {Case{"mha_fwd", 4096, 128, 0}, Case{"mha_fwd", 4096, 256, 0}, Case{"mha_bwd", 4096, 128, 0},
        Case{"mha_bwd", 16384, 96, 0}, Case{"mha_bwd", 16384, 96, 1}}) {
    const Family& f = *FindFamily(c.family);
    Axes a{{"B", 4}, {"H", 48}, {"S", c.S}, {"D", c.D}, {"causal", c.causal}};
    Device dev(f, a);
    auto t0 = std::chrono::steady_clock::now();
    f.MakeInputs(dev.t, a, 13, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    auto t1 = std::chrono::steady_clock::now();
    std::vector<float*> expected;
    for (const auto& d : dev.t)
      if (d.spec.role == TensorRole::kOutput) {
        float* p;
        ASSERT_EQ(cudaMalloc(&p, size_t(d.spec.Elements()) * 4), cudaSuccess);
        expected.push_back(p);
      }
    f.Reference(dev.t, expected, a, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    auto t2 = std::chrono::steady_clock::now();
    double make = std::chrono::duration<double>(t1 - t0).count();
    double ref = std::chrono::duration<double>(t2 - t1).count();
    std::printf("%s S=%d D=%d causal=%d: inputs %.2f s, reference %.2f s\n", c.family, c.S, c.D,
                c.causal, make, ref);
    EXPECT_LT(ref, 60.0);
    for (float* p : expected) cudaFree(p);
  }
}

}  // namespace
}  // namespace ptxbench
