// The one error path for CUDA runtime calls (child processes only). A failing call throws
// CudaError carrying the file, line, the call's text and the error's name and description;
// the child's entry point turns it into a channel message.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

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

}  // namespace ptxbench

#define PTXBENCH_CUDA_CHECK(expr)                                            \
  do {                                                                       \
    cudaError_t ptxbench_err_ = (expr);                                      \
    if (ptxbench_err_ != cudaSuccess)                                        \
      throw ::ptxbench::CudaError(ptxbench_err_, #expr, __FILE__, __LINE__); \
  } while (0)
