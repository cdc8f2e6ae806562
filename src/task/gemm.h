// The gemm family (bf16): C[M,N] = A[M,K] · B[N,K]ᵀ with fp32 accumulation.
#pragma once

#include "task/family.h"

namespace ptxbench {

class GemmFamily : public Family {
 public:
  std::string Name() const override { return "gemm"; }
  std::vector<std::string> AxisNames() const override { return {"M", "N", "K"}; }
  std::vector<TensorSpec> Tensors(const Axes& axes) const override;
  std::string Signature() const override;
  std::string Semantics() const override;
  std::string ReferenceVersion() const override {
    return "gemm-ref-fp32-tiled/1;normal-splitmix/1";
  }

  void Reference(const std::vector<DeviceTensor>& tensors, const std::vector<float*>& expected,
                 const Axes& axes, Stream stream) const override;
  int CallCandidate(void* run_symbol, const std::vector<DeviceTensor>& tensors, const Axes& axes,
                    Stream stream) const override;
};

// The trusted reference, for tests: C[M,N] (fp32) = A[M,K] · B[N,K]ᵀ over bf16 inputs on the GPU.
void LaunchGemmReference(const void* A, const void* B, float* C, int M, int N, int K,
                         Stream stream);

}  // namespace ptxbench
