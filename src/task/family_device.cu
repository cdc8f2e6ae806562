// Device-side defaults shared by the families.
#include "task/device_ops.h"
#include "task/family.h"

namespace ptxbench {

void Family::MakeInputs(const std::vector<DeviceTensor>& tensors, const Axes&, uint64_t seed,
                        Stream stream) const {
  uint32_t index = 0;
  for (const auto& t : tensors) {
    if (t.spec.role == TensorRole::kInput)
      FillStandardNormal(t.data, t.spec.dtype, static_cast<size_t>(t.spec.Elements()), seed, index,
                         stream);
    ++index;  // the tensor's ABI position seeds it, so adding an output never shifts inputs
  }
}

void Family::MakeTimedInputs(const std::vector<DeviceTensor>&,
                             const std::vector<DeviceTensor>& tensors, const Axes& axes,
                             uint64_t call_seed, Stream stream) const {
  MakeInputs(tensors, axes, call_seed, stream);
}

}  // namespace ptxbench
