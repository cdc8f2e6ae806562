#include "task/gemm.h"

namespace ptxbench {

std::vector<TensorSpec> GemmFamily::Tensors(const Axes& a) const {
  int64_t M = a.at("M"), N = a.at("N"), K = a.at("K");
  return {{"A", element_, {M, K}, TensorRole::kInput},
          {"B", element_, {N, K}, TensorRole::kInput},
          {"C", element_, {M, N}, TensorRole::kOutput}};
}

std::string GemmFamily::Signature() const {
  if (element_ == DType::kF16)
    return "extern \"C\" int run(const __half* A, const __half* B, __half* C, int M, int N, "
           "int K, cudaStream_t stream)";
  return "extern \"C\" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, "
         "int M, int N, int K, cudaStream_t stream)";
}

std::string GemmFamily::Semantics() const {
  return "A[M,K], B[N,K], C[M,N], row-major and contiguous on the current device; "
         "C = A·Bᵀ with fp32 accumulation, rounded to " +
         std::string(element_ == DType::kF16 ? "fp16" : "bf16");
}

}  // namespace ptxbench
