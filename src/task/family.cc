#include "task/family.h"

#include "task/attention.h"
#include "task/gemm.h"
#include "task/tvm_ffi_call.h"

namespace ptxbench {

size_t SizeOf(DType t) { return t == DType::kF32 ? 4 : 2; }
std::string ToString(DType t) {
  return t == DType::kBF16 ? "bf16" : t == DType::kF16 ? "f16" : "f32";
}

int64_t TensorSpec::Elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int Family::Call(const CandidateEntry& entry, const std::vector<DeviceTensor>& tensors,
                 const Axes& axes, Stream stream, std::string* error) const {
  if (error) error->clear();
  if (entry.abi == CandidateAbi::kTvmFfi) return CallTvmFfi(entry, tensors, stream, error);
  return CallCandidate(entry.run, tensors, axes, stream);
}

std::vector<const Family*> AllFamilies() {
  static const GemmFamily gemm;
  static const GemmFamily gemm_f16(DType::kF16);
  static const MhaForwardFamily mha_fwd;
  static const MhaBackwardFamily mha_bwd;
  return {&gemm, &gemm_f16, &mha_fwd, &mha_bwd};
}

const Family* FindFamily(std::string_view name) {
  for (const Family* f : AllFamilies())
    if (f->Name() == name) return f;
  return nullptr;
}

}  // namespace ptxbench
