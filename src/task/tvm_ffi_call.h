// Calling a candidate written for upstream PTXBench (the tvm-ffi ABI, task/abi.h): its
// exported `__tvm_ffi_run` is a TVM-FFI safe call,
//   int (*)(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result),
// handed one DLTensor per tensor of the family (inputs, then outputs, in Tensors() order:
// destination-passing), each as a TVMFFIAny holding a DLTensor pointer. The stream is the
// environment's: TVMFFIEnvSetStream before the call, so that the candidate's
// TVMFFIEnvGetStream(kDLCUDA, device) returns ours. The layouts (TVMFFIAny, DLTensor, the
// error object) are those of the pinned apache-tvm-ffi; where its headers were found at
// configure time, static_asserts hold our definitions against them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "task/abi.h"
#include "task/family.h"

namespace ptxbench {

// One DLTensor's worth of description, as handed over (for tests): contiguous row-major.
struct DlTensorView {
  void* data = nullptr;
  int32_t device_type = 0, device_id = 0;
  int32_t ndim = 0;
  uint8_t dtype_code = 0, dtype_bits = 0;
  uint16_t dtype_lanes = 0;
  std::vector<int64_t> shape, strides;
};
// The DLTensor fields the call hands over for `t` on CUDA device `device_id`.
DlTensorView DescribeForTvmFfi(const DeviceTensor& t, int32_t device_id);

// Sets the environment stream and calls the candidate. 0 on success; otherwise non-zero with
// `error` (when given) saying why: the error the candidate raised ("ValueError: ..."), or
// "run raised an error" where its message cannot be had.
int CallTvmFfi(const CandidateEntry& entry, const std::vector<DeviceTensor>& tensors, Stream stream,
               std::string* error);

}  // namespace ptxbench
