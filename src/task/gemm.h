// The gemm families: C[M,N] = A[M,K] · B[N,K]ᵀ with fp32 accumulation, in bf16 ("gemm", the
// paper's tasks) or in fp16 ("gemm_f16", FlashInfer-Bench's GEMM definitions).
#pragma once

#include "task/family.h"

namespace ptxbench {

class GemmFamily : public Family {
 public:
  explicit GemmFamily(DType element = DType::kBF16) : element_(element) {}
  DType element() const { return element_; }
  std::string Name() const override { return element_ == DType::kF16 ? "gemm_f16" : "gemm"; }
  std::vector<std::string> AxisNames() const override { return {"M", "N", "K"}; }
  std::vector<TensorSpec> Tensors(const Axes& axes) const override;
  std::string Signature() const override;
  std::string Semantics() const override;
  std::string ReferenceVersion() const override {
    return element_ == DType::kF16 ? "gemm-ref-fp32-tiled/1;f16-inputs;normal-splitmix/1"
                                   : "gemm-ref-fp32-tiled/1;normal-splitmix/1";
  }

  void Reference(const std::vector<DeviceTensor>& tensors, const std::vector<float*>& expected,
                 const Axes& axes, Stream stream) const override;
  int CallCandidate(void* run_symbol, const std::vector<DeviceTensor>& tensors, const Axes& axes,
                    Stream stream) const override;

 private:
  DType element_;
};

// The trusted reference, for tests: C[M,N] (fp32) = A[M,K] · B[N,K]ᵀ over bf16 (or, with
// `element` kF16, fp16) inputs on the GPU.
void LaunchGemmReference(const void* A, const void* B, float* C, int M, int N, int K, Stream stream,
                         DType element = DType::kBF16);

}  // namespace ptxbench
