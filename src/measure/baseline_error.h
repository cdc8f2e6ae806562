// How a vendor baseline fails, for every library behind measure/baseline.h.
#pragma once

#include <stdexcept>

namespace ptxbench {

// The library could not be loaded, or a call failed: "<library>: <function>: <status>".
// The timing layer reports it as an infrastructure error: the harness, not the candidate.
class BaselineError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The library works but has no kernel for this shape (cuDNN without an engine for it). Not
// an error of anyone's: the record says the baseline is unsupported there and claims no
// speedup.
class BaselineUnsupported : public BaselineError {
 public:
  using BaselineError::BaselineError;
};

}  // namespace ptxbench
