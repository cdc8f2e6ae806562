// NVML's failures in the shape of common/status_check.h. NVML readings are optional (the
// clocks beside a timing, the GPM witness), so a failure becomes a reason in the record and is
// never thrown: callers use Describe or FailureText, and there is no Throw.
#pragma once

#include <string>

#include "common/status_check.h"

namespace ptxbench {

// `ErrorString` is however the caller holds nvmlErrorString: a function pointer, or a
// std::function a test may fill; either may be empty.
template <typename ErrorString>
struct NvmlStatus {
  const ErrorString& error_string;

  using Status = int;  // nvmlReturn_t, a C enum
  static constexpr Status kSuccess = 0;
  // "<nvmlErrorString's words> (<code>)", or "NVML error (<code>)" without them.
  std::string Describe(Status status) const {
    const char* text = error_string ? error_string(status) : nullptr;
    return (text ? std::string(text) : "NVML error") + " (" + std::to_string(status) + ")";
  }
};
template <typename ErrorString>
NvmlStatus(const ErrorString&) -> NvmlStatus<ErrorString>;

}  // namespace ptxbench
