// A task family: the C++ side of a task (tensor shapes, ABI, input generation, trusted
// reference, launch adapter). Definitions (data files) instantiate a family with constant
// axes; workloads fill in the variable ones.
//
// The host-side methods are used by the parent process; the device-side ones run only inside
// child processes (the parent never creates a CUDA context).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "task/abi.h"
#include "task/expression.h"

struct CUstream_st;  // cudaStream_t without the CUDA headers

namespace ptxbench {

using Stream = CUstream_st*;

// bf16 and fp16 (IEEE half) are 16-bit floats; f32 is IEEE single.
enum class DType { kBF16, kF16, kF32 };
size_t SizeOf(DType t);
std::string ToString(DType t);

enum class TensorRole { kInput, kOutput };

struct TensorSpec {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  TensorRole role;
  int64_t Elements() const;
  size_t Bytes() const { return static_cast<size_t>(Elements()) * SizeOf(dtype); }
};

struct DeviceTensor {
  TensorSpec spec;
  void* data = nullptr;
};

class Family {
 public:
  virtual ~Family() = default;
  virtual std::string Name() const = 0;
  virtual std::vector<std::string> AxisNames() const = 0;
  // Every tensor of `run`, in ABI order (inputs and outputs as the signature lists them).
  virtual std::vector<TensorSpec> Tensors(const Axes& axes) const = 0;
  // The exact entry point, as candidates must declare it.
  virtual std::string Signature() const = 0;
  virtual std::string Semantics() const = 0;
  // Names the reference algorithm and input generator; part of the reference cache key, so a
  // change to either must change this string.
  virtual std::string ReferenceVersion() const = 0;

  // --- device side (child processes only) ---
  // Fills the inputs for `seed`. The default: every input standard normal, seeded per tensor.
  virtual void MakeInputs(const std::vector<DeviceTensor>& tensors, const Axes& axes, uint64_t seed,
                          Stream stream) const;
  // The timing layer's inputs for one timed call, `call_seed`, on a buffer set whose base
  // inputs (`base`: MakeInputs(set_seed), a copy no candidate sees) were made once per set.
  // The default ignores `base` and makes every input afresh (MakeInputs(call_seed)). A family
  // whose inputs are costly to make (mha_bwd runs a forward for O and LSE) derives them from
  // `base` instead, cheaply, such that every output still changes from call to call: a result
  // remembered from an earlier call is then wrong, and the re-validation says so.
  virtual bool DerivesTimedInputs() const { return false; }
  virtual void MakeTimedInputs(const std::vector<DeviceTensor>& base,
                               const std::vector<DeviceTensor>& tensors, const Axes& axes,
                               uint64_t call_seed, Stream stream) const;
  // Computes the expected outputs in fp32, one device buffer per output tensor, in order.
  virtual void Reference(const std::vector<DeviceTensor>& tensors,
                         const std::vector<float*>& expected, const Axes& axes,
                         Stream stream) const = 0;
  // Calls the candidate's `run` (a function pointer from dlsym) with the tensors.
  virtual int CallCandidate(void* run_symbol, const std::vector<DeviceTensor>& tensors,
                            const Axes& axes, Stream stream) const = 0;
  // Calls the candidate through its ABI (task/abi.h): native through CallCandidate above;
  // tvm-ffi with one DLTensor per tensor, in Tensors() order, on `stream` as the TVM-FFI
  // environment stream (task/tvm_ffi_call.h). Non-zero: the candidate refused (native) or
  // raised an error (tvm-ffi); `error`, when given, then says what it raised ("" for native).
  int Call(const CandidateEntry& entry, const std::vector<DeviceTensor>& tensors, const Axes& axes,
           Stream stream, std::string* error = nullptr) const;
};

const Family* FindFamily(std::string_view name);
std::vector<const Family*> AllFamilies();

}  // namespace ptxbench
