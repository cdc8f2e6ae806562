// The attention semantics, on the double-precision host references (no GPU): the traps the
// issue names — natural-log LSE, the causal alignment j ≤ i, the softmax-gradient term — and
// the backward checked against finite differences of the forward.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "compare/compare.h"
#include "task/attention.h"
#include "task/definition.h"

namespace ptxbench {
namespace {

std::vector<float> Normal(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

std::vector<float> ToFloat(const std::vector<double>& v) { return {v.begin(), v.end()}; }

TEST(AttentionCpu, UniformScoresAverageTheVisibleValuesAndLseIsTheNaturalLog) {
  AttentionShape s{1, 2, 5, 3, true};
  std::vector<float> q(s.Elements(), 0.f), k = Normal(s.Elements(), 1), v = Normal(s.Elements(), 2);
  std::vector<double> o, lse;
  CpuAttentionForward(s, q, k, v, &o, &lse);
  for (int bh = 0; bh < 2; ++bh)
    for (int i = 0; i < s.S; ++i) {
      EXPECT_NEAR(lse[bh * s.S + i], std::log(double(i + 1)), 1e-12);  // ln, not log2
      for (int d = 0; d < s.D; ++d) {
        double mean = 0;
        for (int j = 0; j <= i; ++j) mean += v[(size_t(bh) * s.S + j) * s.D + d];
        EXPECT_NEAR(o[(size_t(bh) * s.S + i) * s.D + d], mean / (i + 1), 1e-12);
      }
    }
}

// What a candidate returns, compared the way the harness compares (published rule).
CompareVerdict Judge(const std::vector<float>& got, const std::vector<double>& expected) {
  std::vector<float> e = ToFloat(expected);
  return CompareF32(got.data(), e.data(), e.size(), Tolerance{}).verdict;
}

TEST(AttentionCpu, ALog2LseIsWrong) {
  AttentionShape s{1, 2, 33, 64, false};
  auto q = Normal(s.Elements(), 3), k = Normal(s.Elements(), 4), v = Normal(s.Elements(), 5);
  std::vector<double> o, lse;
  CpuAttentionForward(s, q, k, v, &o, &lse);
  std::vector<float> log2_lse;
  for (double x : lse) log2_lse.push_back(float(x / std::log(2.0)));
  EXPECT_EQ(Judge(ToFloat(lse), lse), CompareVerdict::kMatch);
  EXPECT_EQ(Judge(log2_lse, lse), CompareVerdict::kNumerical);
}

TEST(AttentionCpu, TheCausalMaskIsJAtMostI) {
  AttentionShape s{1, 1, 17, 32, true};
  auto q = Normal(s.Elements(), 6), k = Normal(s.Elements(), 7), v = Normal(s.Elements(), 8);
  std::vector<double> o, lse;
  CpuAttentionForward(s, q, k, v, &o, &lse);
  // Shifted by one (j < i, with row 0 seeing key 0 only), the answer is wrong.
  AttentionShape shifted = s;
  std::vector<double> o2, lse2;
  std::vector<float> k_shift(k.size()), v_shift(v.size());
  for (int j = 0; j < s.S; ++j)
    for (int d = 0; d < s.D; ++d) {
      int from = j == 0 ? 0 : j - 1;
      k_shift[size_t(j) * s.D + d] = k[size_t(from) * s.D + d];
      v_shift[size_t(j) * s.D + d] = v[size_t(from) * s.D + d];
    }
  CpuAttentionForward(shifted, q, k_shift, v_shift, &o2, &lse2);
  EXPECT_EQ(Judge(ToFloat(o2), o), CompareVerdict::kNumerical);
  // And the unmasked forward differs from the causal one.
  AttentionShape full = s;
  full.causal = false;
  std::vector<double> o3, lse3;
  CpuAttentionForward(full, q, k, v, &o3, &lse3);
  EXPECT_EQ(Judge(ToFloat(o3), o), CompareVerdict::kNumerical);
  // The last row sees every key either way.
  for (int d = 0; d < s.D; ++d)
    EXPECT_NEAR(o3[size_t(s.S - 1) * s.D + d], o[size_t(s.S - 1) * s.D + d], 1e-12);
}

// L = Σ dO ∘ O(Q, K, V); the backward must be its gradient.
double Loss(const AttentionShape& s, const std::vector<float>& q, const std::vector<float>& k,
            const std::vector<float>& v, const std::vector<float>& dout) {
  std::vector<double> o, lse;
  CpuAttentionForward(s, q, k, v, &o, &lse);
  double l = 0;
  for (size_t i = 0; i < o.size(); ++i) l += o[i] * dout[i];
  return l;
}

void CheckGradient(bool causal) {
  AttentionShape s{1, 1, 7, 5, causal};
  auto q = Normal(s.Elements(), 9), k = Normal(s.Elements(), 10), v = Normal(s.Elements(), 11),
       dout = Normal(s.Elements(), 12);
  std::vector<double> o, lse;
  CpuAttentionForward(s, q, k, v, &o, &lse);
  std::vector<double> dq, dk, dv;
  CpuAttentionBackward(s, q, k, v, ToFloat(o), dout, ToFloat(lse), &dq, &dk, &dv);
  const float h = 1e-2f;
  for (auto [x, grad, name] : {std::tuple{&q, &dq, "dQ"}, {&k, &dk, "dK"}, {&v, &dv, "dV"}}) {
    for (size_t i = 0; i < x->size(); ++i) {
      float keep = (*x)[i];
      (*x)[i] = keep + h;
      double up = Loss(s, q, k, v, dout);
      (*x)[i] = keep - h;
      double down = Loss(s, q, k, v, dout);
      (*x)[i] = keep;
      double fd = (up - down) / (2.0 * double(h));
      EXPECT_NEAR((*grad)[i], fd, 2e-3 * (1 + std::fabs(fd))) << name << "[" << i << "]";
    }
  }
}

TEST(AttentionCpu, BackwardIsTheGradientOfTheForward) { CheckGradient(false); }
TEST(AttentionCpu, CausalBackwardIsTheGradientOfTheCausalForward) { CheckGradient(true); }

TEST(AttentionCpu, ForgettingTheSoftmaxGradientTermIsWrong) {
  AttentionShape s{1, 2, 19, 64, false};
  auto q = Normal(s.Elements(), 13), k = Normal(s.Elements(), 14), v = Normal(s.Elements(), 15),
       dout = Normal(s.Elements(), 16);
  std::vector<double> o, lse;
  CpuAttentionForward(s, q, k, v, &o, &lse);
  std::vector<double> dq, dk, dv, dq0, dk0, dv0;
  CpuAttentionBackward(s, q, k, v, ToFloat(o), dout, ToFloat(lse), &dq, &dk, &dv);
  // Without rowsum(dO∘O): the same code handed O = 0 computes dS = P∘dP.
  std::vector<float> zeros(o.size(), 0.f);
  CpuAttentionBackward(s, q, k, v, zeros, dout, ToFloat(lse), &dq0, &dk0, &dv0);
  EXPECT_EQ(Judge(ToFloat(dq0), dq), CompareVerdict::kNumerical);
  EXPECT_EQ(Judge(ToFloat(dk0), dk), CompareVerdict::kNumerical);
  EXPECT_EQ(Judge(ToFloat(dv0), dv), CompareVerdict::kMatch);  // dV does not use the term
}

TEST(AttentionTasks, DefinitionsCarryTheUpstreamShapesAndFlops) {
  Catalog c = Catalog::Load(std::string(PTXBENCH_SOURCE_DIR) + "/tasks");
  const Definition& fwd = c.Find("mha_with_lse_d128");
  EXPECT_EQ(fwd.family, "mha_fwd");
  const Workload& head = fwd.DefaultWorkload();
  EXPECT_EQ(head.id, "bc38b351-d595-451b-9153-8e225702e53b");
  Axes a = fwd.FullAxes(head);
  EXPECT_EQ(a.at("S"), 4096);
  EXPECT_EQ(a.at("causal"), 0);
  EXPECT_DOUBLE_EQ(fwd.Flops(head), 4.0 * 4 * 48 * 4096.0 * 4096 * 128);
  const Definition& cb = c.Find("mha_bwd_d128_causal");
  EXPECT_EQ(cb.FullAxes(cb.DefaultWorkload()).at("causal"), 1);
  EXPECT_DOUBLE_EQ(cb.Flops(cb.DefaultWorkload()), 5.0 * 4 * 48 * 4096.0 * 4096 * 128);
  EXPECT_EQ(c.Find("mha_bwd_d96").workloads.size(), 6u);  // S = 512 … 16384
}

}  // namespace
}  // namespace ptxbench
