#include "run/child_support.h"

#include <sys/prctl.h>

#include "common/sandbox.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <memory>
#include <stdexcept>

#include "common/cuda_check.h"
#include "run/channel.h"
#include "run/device_ops.h"

namespace ptxbench {

Buffers::~Buffers() {
  for (auto& t : tensors)
    if (t.data) cudaFree(t.data);
}

size_t Buffers::Bytes() const {
  size_t n = 0;
  for (const auto& t : tensors) n += t.spec.Bytes();
  return n;
}

void Allocate(const Family& family, const Axes& axes, Buffers* b) {
  for (const auto& spec : family.Tensors(axes)) {
    DeviceTensor t{spec, nullptr};
    PTXBENCH_CUDA_CHECK(cudaMalloc(&t.data, spec.Bytes()));
    b->tensors.push_back(t);
  }
}

void AllocateInputs(const Family& family, const Axes& axes, Buffers* b) {
  for (const auto& spec : family.Tensors(axes)) {
    DeviceTensor t{spec, nullptr};
    if (spec.role == TensorRole::kInput) PTXBENCH_CUDA_CHECK(cudaMalloc(&t.data, spec.Bytes()));
    b->tensors.push_back(t);
  }
}

void AllocateOutputs(const Family& family, const Axes& axes, Buffers* b) {
  for (const auto& spec : family.Tensors(axes)) {
    DeviceTensor t{spec, nullptr};
    if (spec.role == TensorRole::kOutput) PTXBENCH_CUDA_CHECK(cudaMalloc(&t.data, spec.Bytes()));
    b->tensors.push_back(t);
  }
}

std::vector<DeviceTensor> Combine(const Buffers& inputs, const Buffers& outputs) {
  std::vector<DeviceTensor> t = inputs.tensors;
  for (size_t i = 0; i < t.size() && i < outputs.tensors.size(); ++i)
    if (t[i].spec.role == TensorRole::kOutput) t[i] = outputs.tensors[i];
  return t;
}

void WriteBytes(const std::string& path, const void* data, size_t bytes) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f || std::fwrite(data, 1, bytes, f.get()) != bytes)
    throw std::runtime_error("cannot write " + path);
}

nlohmann::json DeviceInfo() {
  int device = 0, driver = 0, runtime = 0;
  PTXBENCH_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp p{};
  PTXBENCH_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  int clock_khz = 0, mem_clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, device);
  char bus[32] = {};
  cudaDeviceGetPCIBusId(bus, sizeof bus, device);
  char uuid[40] = {};
  for (int i = 0; i < 16; ++i)
    std::snprintf(uuid + 2 * i, 3, "%02x", static_cast<unsigned char>(p.uuid.bytes[i]));
  return {{"event", "device"},
          {"name", p.name},
          {"uuid", uuid},
          {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
          {"sm_count", p.multiProcessorCount},
          {"l2_bytes", p.l2CacheSize},
          {"global_memory_bytes", p.totalGlobalMem},
          {"max_sm_clock_hz", double(clock_khz) * 1e3},
          {"max_memory_clock_hz", double(mem_clock_khz) * 1e3},
          {"pci_bus_id", bus},
          {"driver_version", driver},
          {"runtime_version", runtime}};
}

void* LoadCandidateRun(const nlohmann::json& spec, ChannelWriter& out) {
  const std::string shared_object = spec.at("shared_object");
  // The last moment the harness alone owns this process: lock it down before the candidate's
  // constructors run. Landlock, the namespaces and the user were set before exec; what a
  // process can only do to itself comes here.
  if (spec.contains("confine")) {
    // Not dumpable: no process of the same user may read or trace this one's memory.
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    SeccompProfile profile;
    profile.allow_inet_sockets = spec["confine"].value("allow_inet", false);
    std::string why;
    bool seccomp = spec["confine"].value("seccomp", true) && ApplySeccomp(profile, &why);
    nlohmann::json c = SelfConfinement();
    c["event"] = "confinement";
    c["seccomp"] = seccomp;
    if (!why.empty()) c["seccomp_why"] = why;
    out.Send(c);
  }
  // The handle is never closed: unloading a library whose kernels the runtime may still
  // reference is a crash we would wrongly blame on the candidate.
  void* handle = ::dlopen(shared_object.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = ::dlerror();
    out.Send({{"event", "error"}, {"stage", "load"}, {"message", why ? why : "dlopen failed"}});
    return nullptr;
  }
  void* run = ::dlsym(handle, "run");
  if (!run)
    out.Send({{"event", "error"},
              {"stage", "load"},
              {"message", "the shared object has no symbol `run`"}});
  return run;
}

std::vector<uint64_t> InputChecksums(const Buffers& b, Stream stream) {
  std::vector<uint64_t> sums;
  for (const auto& t : b.tensors)
    if (t.spec.role == TensorRole::kInput)
      sums.push_back(DeviceChecksum(t.data, t.spec.Bytes(), stream));
  return sums;
}

nlohmann::json WriteOutputs(const Buffers& b, const std::string& out_dir, const std::string& prefix,
                            Stream stream) {
  nlohmann::json outputs = nlohmann::json::array();
  std::vector<char> host;
  for (const auto& t : b.tensors) {
    if (t.spec.role != TensorRole::kOutput) continue;
    host.resize(t.spec.Bytes());
    PTXBENCH_CUDA_CHECK(
        cudaMemcpyAsync(host.data(), t.data, host.size(), cudaMemcpyDeviceToHost, stream));
    PTXBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::string file = out_dir + "/" + prefix + "_" + t.spec.name + ".out";
    WriteBytes(file, host.data(), host.size());
    outputs.push_back({{"name", t.spec.name}, {"file", file}, {"elements", t.spec.Elements()}});
  }
  return outputs;
}

}  // namespace ptxbench
