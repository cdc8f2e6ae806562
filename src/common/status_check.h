// The one shape of check for C libraries that report failure with a status code: the CUDA
// runtime and driver (common/cuda_check.h), CUPTI, cuBLASLt, cuDNN and NVML (measure/).
//
//   PTXBENCH_CHECK_STATUS(library, call(...), "what the call is called in errors");
//
// `library` describes one library's failures; it is a value because some libraries' error
// strings come from functions loaded at run time. Its type has
//   using Status = ...;                        the library's status type
//   static constexpr Status kSuccess = ...;
//   std::string Describe(Status) const;        the library's own words for a status
//   [[noreturn]] void Throw(Status, const CheckedCall&) const;
// Throw keeps each library's exception type and message wording, which records and tests
// depend on. A library whose failures are reported rather than thrown (NVML's optional
// readings) has no Throw and uses FailureText.
#pragma once

#include <string>
#include <string_view>

namespace ptxbench {

// A checked call: its text, or the name the caller gives it, and where it was made.
struct CheckedCall {
  std::string_view what;
  const char* file;
  int line;
};

template <typename Library>
void CheckStatus(const Library& library, typename Library::Status status, const CheckedCall& call) {
  if (status != Library::kSuccess) library.Throw(status, call);
}

// "<what>: <the library's words for status>", for messages and for reported failures.
template <typename Library>
std::string FailureText(const Library& library, typename Library::Status status,
                        std::string_view what) {
  return std::string(what) + ": " + library.Describe(status);
}

}  // namespace ptxbench

#define PTXBENCH_CHECK_STATUS(library, expr, what) \
  ::ptxbench::CheckStatus((library), (expr), ::ptxbench::CheckedCall{(what), __FILE__, __LINE__})
