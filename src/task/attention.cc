#include "task/attention.h"

#include <cmath>

namespace ptxbench {
namespace {

std::vector<int64_t> Bhsd(const Axes& a) { return {a.at("B"), a.at("H"), a.at("S"), a.at("D")}; }
std::vector<int64_t> Bhs(const Axes& a) { return {a.at("B"), a.at("H"), a.at("S")}; }

std::string MaskText(bool causal) {
  return causal ? "; causal: key j is visible to query i iff j <= i" : "; no mask";
}

}  // namespace

std::vector<TensorSpec> MhaForwardFamily::Tensors(const Axes& a) const {
  return {{"Q", DType::kBF16, Bhsd(a), TensorRole::kInput},
          {"K", DType::kBF16, Bhsd(a), TensorRole::kInput},
          {"V", DType::kBF16, Bhsd(a), TensorRole::kInput},
          {"O", DType::kBF16, Bhsd(a), TensorRole::kOutput},
          {"LSE", DType::kF32, Bhs(a), TensorRole::kOutput}};
}

std::string MhaForwardFamily::Signature() const {
  return "extern \"C\" int run(const __nv_bfloat16* Q, const __nv_bfloat16* K, "
         "const __nv_bfloat16* V, __nv_bfloat16* O, float* LSE, int B, int H, int S, int D, "
         "cudaStream_t stream)";
}

std::string MhaForwardFamily::Semantics() const {
  return "Q, K, V, O [B,H,S,D] bf16 and LSE [B,H,S] fp32, contiguous on the current device; "
         "P = Q·Kᵀ/√D per (b, h); O = softmax(P)·V; LSE[b,h,i] = ln Σ_j exp(P[i,j]) (natural "
         "log, over the visible keys)" +
         MaskText(false) + " unless the task is causal" + MaskText(true);
}

std::vector<TensorSpec> MhaBackwardFamily::Tensors(const Axes& a) const {
  return {{"Q", DType::kBF16, Bhsd(a), TensorRole::kInput},
          {"K", DType::kBF16, Bhsd(a), TensorRole::kInput},
          {"V", DType::kBF16, Bhsd(a), TensorRole::kInput},
          {"O", DType::kBF16, Bhsd(a), TensorRole::kInput},
          {"dO", DType::kBF16, Bhsd(a), TensorRole::kInput},
          {"LSE", DType::kF32, Bhs(a), TensorRole::kInput},
          {"dQ", DType::kBF16, Bhsd(a), TensorRole::kOutput},
          {"dK", DType::kBF16, Bhsd(a), TensorRole::kOutput},
          {"dV", DType::kBF16, Bhsd(a), TensorRole::kOutput}};
}

std::string MhaBackwardFamily::Signature() const {
  return "extern \"C\" int run(const __nv_bfloat16* Q, const __nv_bfloat16* K, "
         "const __nv_bfloat16* V, const __nv_bfloat16* O, const __nv_bfloat16* dO, "
         "const float* LSE, __nv_bfloat16* dQ, __nv_bfloat16* dK, __nv_bfloat16* dV, int B, "
         "int H, int S, int D, cudaStream_t stream)";
}

std::string MhaBackwardFamily::Semantics() const {
  return "gradients dQ, dK, dV [B,H,S,D] bf16 of the forward O = softmax(Q·Kᵀ/√D)·V given dO, "
         "with O (bf16) and LSE (fp32, natural log) from the reference forward: "
         "P = exp(Q·Kᵀ/√D − LSE), dV = Pᵀ·dO, dP = dO·Vᵀ, dS = P∘(dP − rowsum(dO∘O)), "
         "dQ = dS·K/√D, dK = dSᵀ·Q/√D";
}

// --- the double-precision host references ---

namespace {
size_t At(const AttentionShape& s, int bh, int i, int d) {
  return (size_t(bh) * s.S + i) * s.D + d;
}
}  // namespace

void CpuAttentionForward(const AttentionShape& s, const std::vector<float>& Q,
                         const std::vector<float>& K, const std::vector<float>& V,
                         std::vector<double>* O, std::vector<double>* LSE) {
  O->assign(s.Elements(), 0.0);
  LSE->assign(size_t(s.B) * s.H * s.S, 0.0);
  const double scale = 1.0 / std::sqrt(double(s.D));
  std::vector<double> p(s.S);
  for (int bh = 0; bh < s.B * s.H; ++bh)
    for (int i = 0; i < s.S; ++i) {
      int visible = s.causal ? i + 1 : s.S;
      double m = -INFINITY;
      for (int j = 0; j < visible; ++j) {
        double dot = 0;
        for (int d = 0; d < s.D; ++d) dot += double(Q[At(s, bh, i, d)]) * K[At(s, bh, j, d)];
        p[j] = dot * scale;
        m = std::max(m, p[j]);
      }
      double sum = 0;
      for (int j = 0; j < visible; ++j) sum += std::exp(p[j] - m);
      (*LSE)[size_t(bh) * s.S + i] = m + std::log(sum);
      for (int j = 0; j < visible; ++j) {
        double w = std::exp(p[j] - m) / sum;
        for (int d = 0; d < s.D; ++d) (*O)[At(s, bh, i, d)] += w * V[At(s, bh, j, d)];
      }
    }
}

void CpuAttentionBackward(const AttentionShape& s, const std::vector<float>& Q,
                          const std::vector<float>& K, const std::vector<float>& V,
                          const std::vector<float>& O, const std::vector<float>& dO,
                          const std::vector<float>& LSE, std::vector<double>* dQ,
                          std::vector<double>* dK, std::vector<double>* dV) {
  dQ->assign(s.Elements(), 0.0);
  dK->assign(s.Elements(), 0.0);
  dV->assign(s.Elements(), 0.0);
  const double scale = 1.0 / std::sqrt(double(s.D));
  for (int bh = 0; bh < s.B * s.H; ++bh)
    for (int i = 0; i < s.S; ++i) {
      double delta = 0;  // rowsum(dO ∘ O)
      for (int d = 0; d < s.D; ++d) delta += double(dO[At(s, bh, i, d)]) * O[At(s, bh, i, d)];
      int visible = s.causal ? i + 1 : s.S;
      for (int j = 0; j < visible; ++j) {
        double dot = 0, dp = 0;
        for (int d = 0; d < s.D; ++d) {
          dot += double(Q[At(s, bh, i, d)]) * K[At(s, bh, j, d)];
          dp += double(dO[At(s, bh, i, d)]) * V[At(s, bh, j, d)];
        }
        double p = std::exp(dot * scale - LSE[size_t(bh) * s.S + i]);
        double ds = p * (dp - delta);
        for (int d = 0; d < s.D; ++d) {
          (*dV)[At(s, bh, j, d)] += p * dO[At(s, bh, i, d)];
          (*dQ)[At(s, bh, i, d)] += ds * scale * K[At(s, bh, j, d)];
          (*dK)[At(s, bh, j, d)] += ds * scale * Q[At(s, bh, i, d)];
        }
      }
    }
}

}  // namespace ptxbench
