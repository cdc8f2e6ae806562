// The attention families (bf16 tensors [B,H,S,D], contiguous, fp32 accumulation):
//   mha_fwd  O = softmax(Q·Kᵀ/√D)·V and LSE = ln Σ_j exp(Q_i·K_jᵀ/√D)   (natural log)
//   mha_bwd  dQ, dK, dV of that forward given dO, with O and LSE from our reference forward
// Axis `causal` (0 or 1, a constant of the definition): key j is visible to query i iff j ≤ i.
#pragma once

#include <vector>

#include "task/family.h"

namespace ptxbench {

class MhaForwardFamily : public Family {
 public:
  std::string Name() const override { return "mha_fwd"; }
  std::vector<std::string> AxisNames() const override { return {"B", "H", "S", "D", "causal"}; }
  std::vector<TensorSpec> Tensors(const Axes& axes) const override;
  std::string Signature() const override;
  std::string Semantics() const override;
  std::string ReferenceVersion() const override {
    return "mha-fwd-ref-fp32-online-softmax/1;normal-splitmix/1";
  }
  void Reference(const std::vector<DeviceTensor>& tensors, const std::vector<float*>& expected,
                 const Axes& axes, Stream stream) const override;
  int CallCandidate(void* run_symbol, const std::vector<DeviceTensor>& tensors, const Axes& axes,
                    Stream stream) const override;
};

class MhaBackwardFamily : public Family {
 public:
  std::string Name() const override { return "mha_bwd"; }
  std::vector<std::string> AxisNames() const override { return {"B", "H", "S", "D", "causal"}; }
  std::vector<TensorSpec> Tensors(const Axes& axes) const override;
  std::string Signature() const override;
  std::string Semantics() const override;
  std::string ReferenceVersion() const override {
    return "mha-bwd-ref-fp32-recompute/1;mha-fwd-ref-fp32-online-softmax/1;normal-splitmix/1";
  }
  // Q, K, V, dO standard normal; O (rounded to bf16) and LSE from the reference forward.
  void MakeInputs(const std::vector<DeviceTensor>& tensors, const Axes& axes, uint64_t seed,
                  Stream stream) const override;
  // A timed call's inputs from the set's base, at the cost of a copy: the B·H heads of Q, K,
  // V, O and LSE in an order drawn from `call_seed` (an affine permutation), V and O negated
  // or not (exact in bf16, and the forward of −V is exactly −O), dO afresh. O and LSE stay
  // exactly the reference forward's for the inputs handed over; dQ, dK, dV all change.
  bool DerivesTimedInputs() const override { return true; }
  void MakeTimedInputs(const std::vector<DeviceTensor>& base,
                       const std::vector<DeviceTensor>& tensors, const Axes& axes,
                       uint64_t call_seed, Stream stream) const override;
  void Reference(const std::vector<DeviceTensor>& tensors, const std::vector<float*>& expected,
                 const Axes& axes, Stream stream) const override;
  int CallCandidate(void* run_symbol, const std::vector<DeviceTensor>& tensors, const Axes& axes,
                    Stream stream) const override;
};

// The trusted device references, for tests. Tensors bf16 [B,H,S,D]; outputs fp32.
void LaunchAttentionForward(const void* Q, const void* K, const void* V, float* O, float* LSE,
                            int B, int H, int S, int D, bool causal, Stream stream);
void LaunchAttentionBackward(const void* Q, const void* K, const void* V, const void* O,
                             const void* dO, const float* LSE, float* dQ, float* dK, float* dV,
                             int B, int H, int S, int D, bool causal, Stream stream);

// Double-precision host references on float inputs (the bf16 values), for validation on small
// shapes: the textbook formulas with the full score matrix.
struct AttentionShape {
  int B = 1, H = 1, S = 1, D = 1;
  bool causal = false;
  size_t Elements() const { return size_t(B) * H * S * D; }
};
void CpuAttentionForward(const AttentionShape& s, const std::vector<float>& Q,
                         const std::vector<float>& K, const std::vector<float>& V,
                         std::vector<double>* O, std::vector<double>* LSE);
// Gradients given dO, the O and LSE the candidate was handed (as the task defines them).
void CpuAttentionBackward(const AttentionShape& s, const std::vector<float>& Q,
                          const std::vector<float>& K, const std::vector<float>& V,
                          const std::vector<float>& O, const std::vector<float>& dO,
                          const std::vector<float>& LSE, std::vector<double>* dQ,
                          std::vector<double>* dK, std::vector<double>* dV);

}  // namespace ptxbench
