// Pieces shared by the child roles (child processes only): device buffers for one workload,
// the device report, input checksums, and writing bulk data to the scratch folder.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run/channel.h"
#include "task/family.h"

namespace ptxbench {

// Device buffers owned by the child for one workload; freed with it.
struct Buffers {
  std::vector<DeviceTensor> tensors;
  Buffers() = default;
  Buffers(Buffers&& o) noexcept : tensors(std::move(o.tensors)) { o.tensors.clear(); }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  ~Buffers();
  size_t Bytes() const;
};

// Buffers of a workload, each in a mapping of its own with unmapped memory on both sides. A
// buffer sits against one edge of its mapping (mappings come in 2 MiB granules, so only one
// edge can be exact): kEnd puts its end there (to cudaMalloc's 256-byte alignment), so a read
// past the end faults; kStart its start, so a read before the start faults. Both in every
// call, not only under the memory checker. The memory-check child turns this off
// (SetGuardPages(false)): there the checker itself knows each allocation's exact bounds.
enum class GuardedEdge { kEnd, kStart };
void SetGuardPages(bool on);
void Allocate(const Family& family, const Axes& axes, Buffers* b,
              GuardedEdge edge = GuardedEdge::kEnd);
// The inputs only (outputs stay null): a base that timed inputs are derived from.
void AllocateInputs(const Family& family, const Axes& axes, Buffers* b);
// The outputs only (inputs stay null): a timed call's own output buffers.
void AllocateOutputs(const Family& family, const Axes& axes, Buffers* b);
// The tensors of a call: the inputs of `inputs`, the outputs of `outputs`.
std::vector<DeviceTensor> Combine(const Buffers& inputs, const Buffers& outputs);
void WriteBytes(const std::string& path, const void* data, size_t bytes);
// Asks the parent for the GPU (the message `event`) and waits for its answer on the control
// descriptor: true on "go"; false, after an "error" message naming `event`, on "stop", a
// closed descriptor or no answer within the lock's longest wait. Only harness code calls it,
// before any candidate is loaded: the parent honours the request only from there.
bool AwaitParentGo(ChannelWriter& out, const char* event);
// The "device" message: name, compute capability, SM count, L2, clocks, PCI bus id, UUID.
nlohmann::json DeviceInfo();
// Loads the candidate's shared object and finds its entry point by the spec's "abi"
// (task/abi.h; absent: "native"): `run`, or for "tvm-ffi" `__tvm_ffi_run` and the TVM-FFI
// functions the call needs (TVMFFIEnvSetStream, ...), looked up through the candidate's own
// handle, i.e. in the libtvm_ffi.so it was linked with. An empty entry after telling the
// parent (an "error" message at stage "load") when any of it fails.
// A spec with "confine" first locks the process down (no dumping, the seccomp filter) and
// reports the protections it runs under, before the candidate's code is mapped.
CandidateEntry LoadCandidateRun(const nlohmann::json& spec, ChannelWriter& out);
// One checksum per input tensor, in ABI order. Synchronizes `stream`.
std::vector<uint64_t> InputChecksums(const Buffers& b, Stream stream);
// Writes every output tensor of `b` to out_dir/<prefix>_<name>.out and describes the files.
nlohmann::json WriteOutputs(const Buffers& b, const std::string& out_dir, const std::string& prefix,
                            Stream stream);

}  // namespace ptxbench
