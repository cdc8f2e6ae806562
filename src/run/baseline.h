// The vendor library a task is compared with, behind one interface so that the timing child
// times it exactly like a candidate: GEMM → cuBLASLt; attention → cuDNN (issue 5).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "task/family.h"

namespace ptxbench {

class Baseline {
 public:
  virtual ~Baseline() = default;
  virtual std::string Name() const = 0;  // "cuBLASLt"
  // One call on the tensors of a buffer set; throws BaselineError (measure/cublaslt_gemm.h).
  virtual void Run(const std::vector<DeviceTensor>& tensors, Stream stream) = 0;
  virtual nlohmann::json Describe() const = 0;  // library, version, algorithm
};

// The family's baseline, prepared for `axes` (plans and algorithms chosen here, before any
// timing). nullptr with *why set when the family has none yet; throws BaselineError when the
// library fails.
std::unique_ptr<Baseline> MakeBaseline(const Family& family, const Axes& axes, std::string* why);

}  // namespace ptxbench
