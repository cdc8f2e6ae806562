// The error paths for CUDA runtime and driver calls (child processes only), in the shape of
// common/status_check.h. A failing runtime call throws CudaError carrying the file, line, the
// call's text and the error's name and description; the child's entry point turns it into a
// channel message.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "common/status_check.h"

namespace ptxbench {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& call, const char* file, int line)
      : std::runtime_error(std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code) +
                           " (" + call + " at " + file + ":" + std::to_string(line) + ")"),
        code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

// The CUDA runtime: "<name>: <description> (<call> at <file>:<line>)", as CudaError.
struct CudaRuntimeStatus {
  using Status = cudaError_t;
  static constexpr Status kSuccess = cudaSuccess;
  std::string Describe(Status s) const {
    return std::string(cudaGetErrorName(s)) + ": " + cudaGetErrorString(s);
  }
  [[noreturn]] void Throw(Status s, const CheckedCall& call) const {
    throw CudaError(s, std::string(call.what), call.file, call.line);
  }
};

// The driver API, as the child calls it (loaded at run time, so without cuGetErrorName):
// "<context>: <what> failed (CUresult <n>)", as std::runtime_error.
struct CudaDriverStatus {
  const char* context;  // what the calls are for, e.g. "guarded allocation"
  using Status = CUresult;
  static constexpr Status kSuccess = CUDA_SUCCESS;
  std::string Describe(Status s) const { return "CUresult " + std::to_string(static_cast<int>(s)); }
  [[noreturn]] void Throw(Status s, const CheckedCall& call) const {
    throw std::runtime_error(std::string(context) + ": " + std::string(call.what) + " failed (" +
                             Describe(s) + ")");
  }
};

}  // namespace ptxbench

#define PTXBENCH_CUDA_CHECK(expr) \
  PTXBENCH_CHECK_STATUS(::ptxbench::CudaRuntimeStatus{}, expr, #expr)
