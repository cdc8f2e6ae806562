#include "run/child_main.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "common/cuda_check.h"
#include "common/files.h"
#include "run/channel.h"
#include "run/device_ops.h"
#include "task/family.h"

namespace ptxbench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Device buffers owned by the child for one workload.
struct Buffers {
  std::vector<DeviceTensor> tensors;
  ~Buffers() {
    for (auto& t : tensors)
      if (t.data) cudaFree(t.data);
  }
};

void Allocate(const Family& family, const Axes& axes, Buffers* b) {
  for (const auto& spec : family.Tensors(axes)) {
    DeviceTensor t{spec, nullptr};
    PTXBENCH_CUDA_CHECK(cudaMalloc(&t.data, spec.Bytes()));
    b->tensors.push_back(t);
  }
}

void WriteBytes(const std::string& path, const void* data, size_t bytes) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f || std::fwrite(data, 1, bytes, f.get()) != bytes)
    throw std::runtime_error("cannot write " + path);
}

json DeviceInfo() {
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
  return {{"event", "device"},
          {"name", p.name},
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

// Returns false (after telling the parent) when there is no usable GPU.
bool ProbeDevice(ChannelWriter& out) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    out.Send({{"event", "no_gpu"},
              {"message", e != cudaSuccess
                              ? std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e)
                              : std::string("no CUDA device visible")}});
    return false;
  }
  out.Send(DeviceInfo());
  return true;
}

std::vector<uint64_t> InputChecksums(const Buffers& b, Stream stream) {
  std::vector<uint64_t> sums;
  for (const auto& t : b.tensors)
    if (t.spec.role == TensorRole::kInput)
      sums.push_back(DeviceChecksum(t.data, t.spec.Bytes(), stream));
  return sums;
}

void RunReference(const json& spec, ChannelWriter& out) {
  const Family* family = FindFamily(spec.at("family").get<std::string>());
  Axes axes = spec.at("axes").get<Axes>();
  std::string out_dir = spec.at("out_dir");
  cudaStream_t stream;
  PTXBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Buffers b;
  Allocate(*family, axes, &b);
  std::vector<float*> expected;
  std::vector<size_t> expected_elems;
  for (const auto& t : b.tensors) {
    if (t.spec.role != TensorRole::kOutput) continue;
    float* p = nullptr;
    PTXBENCH_CUDA_CHECK(
        cudaMalloc(reinterpret_cast<void**>(&p), t.spec.Elements() * sizeof(float)));
    expected.push_back(p);
    expected_elems.push_back(static_cast<size_t>(t.spec.Elements()));
  }
  std::vector<float> host;
  for (uint64_t seed : spec.at("seeds").get<std::vector<uint64_t>>()) {
    auto t0 = Clock::now();
    family->MakeInputs(b.tensors, axes, seed, stream);
    family->Reference(b.tensors, expected, axes, stream);
    PTXBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
    json outputs = json::array();
    size_t k = 0;
    for (const auto& t : b.tensors) {
      if (t.spec.role != TensorRole::kOutput) continue;
      host.resize(expected_elems[k]);
      PTXBENCH_CUDA_CHECK(cudaMemcpy(host.data(), expected[k], host.size() * sizeof(float),
                                     cudaMemcpyDeviceToHost));
      std::string file = out_dir + "/seed" + std::to_string(seed) + "_" + t.spec.name + ".f32";
      WriteBytes(file, host.data(), host.size() * sizeof(float));
      outputs.push_back({{"name", t.spec.name}, {"file", file}, {"elements", host.size()}});
      ++k;
    }
    out.Send({{"event", "reference"},
              {"seed", seed},
              {"input_checksums", InputChecksums(b, stream)},
              {"outputs", outputs},
              {"seconds", SecondsSince(t0)}});
  }
  for (float* p : expected) cudaFree(p);
  cudaStreamDestroy(stream);
}

// Reports a CUDA error of the candidate's call (or of the synchronization after it).
void SendCallError(ChannelWriter& out, const char* stage, uint64_t seed, cudaError_t e) {
  out.Send({{"event", "error"},
            {"stage", stage},
            {"seed", seed},
            {"cuda_error", cudaGetErrorName(e)},
            {"message", std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e)}});
}

void RunCandidate(const json& spec, ChannelWriter& out) {
  const Family* family = FindFamily(spec.at("family").get<std::string>());
  Axes axes = spec.at("axes").get<Axes>();
  std::string out_dir = spec.at("out_dir");
  bool write_outputs = spec.value("write_outputs", true);

  // The harness's own allocations and stream exist before the candidate is loaded, so that
  // nothing the candidate does at load time can see or steer them.
  cudaStream_t stream;
  PTXBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Buffers b;
  Allocate(*family, axes, &b);

  std::string so = spec.at("shared_object");
  void* handle = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = ::dlerror();
    out.Send({{"event", "error"}, {"stage", "load"}, {"message", why ? why : "dlopen failed"}});
    return;
  }
  void* run = ::dlsym(handle, "run");
  if (!run) {
    out.Send({{"event", "error"},
              {"stage", "load"},
              {"message", "the shared object has no symbol `run`"}});
    return;
  }

  std::vector<char> host;
  for (uint64_t seed : spec.at("seeds").get<std::vector<uint64_t>>()) {
    auto t0 = Clock::now();
    family->MakeInputs(b.tensors, axes, seed, stream);
    for (const auto& t : b.tensors)
      if (t.spec.role == TensorRole::kOutput)
        FillPoison(t.data, t.spec.dtype, static_cast<size_t>(t.spec.Elements()), stream);
    std::vector<uint64_t> before = InputChecksums(b, stream);  // synchronizes the stream

    out.Send({{"event", "call_started"}, {"seed", seed}});
    int rc = 0;
    try {
      rc = family->CallCandidate(run, b.tensors, axes, stream);
    } catch (const std::exception& e) {
      out.Send({{"event", "error"},
                {"stage", "call"},
                {"seed", seed},
                {"message", std::string("run threw an exception: ") + e.what()}});
      return;
    } catch (...) {
      out.Send({{"event", "error"},
                {"stage", "call"},
                {"seed", seed},
                {"message", "run threw an exception"}});
      return;
    }
    if (rc != 0) {
      cudaDeviceSynchronize();
      out.Send({{"event", "refused"}, {"seed", seed}, {"rc", rc}});
      return;
    }
    // The stream first: that is where the work belongs. Then the whole device, so that a
    // fault in work launched elsewhere is still this candidate's.
    if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess)
      return SendCallError(out, "synchronize", seed, e);
    if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
      return SendCallError(out, "synchronize", seed, e);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess)
      return SendCallError(out, "launch", seed, e);

    json outputs = json::array();
    for (const auto& t : b.tensors) {
      if (t.spec.role != TensorRole::kOutput || !write_outputs) continue;
      host.resize(t.spec.Bytes());
      PTXBENCH_CUDA_CHECK(cudaMemcpy(host.data(), t.data, host.size(), cudaMemcpyDeviceToHost));
      std::string file = out_dir + "/seed" + std::to_string(seed) + "_" + t.spec.name + ".out";
      WriteBytes(file, host.data(), host.size());
      outputs.push_back({{"name", t.spec.name}, {"file", file}, {"elements", t.spec.Elements()}});
    }
    std::vector<uint64_t> after = InputChecksums(b, stream);
    out.Send({{"event", "trial"},
              {"seed", seed},
              {"rc", rc},
              {"input_checksums_before", before},
              {"input_checksums_after", after},
              {"outputs", outputs},
              {"seconds", SecondsSince(t0)}});
  }
  // The handle stays open: unloading a library whose kernels may still be referenced by the
  // runtime is a crash we would wrongly blame on the candidate.
}

}  // namespace

int ChildMain(int argc, char** argv) {
  ChannelWriter out(kChannelFd);
  if (argc < 3) {
    out.Send(
        {{"event", "error"}, {"stage", "setup"}, {"message", "usage: ptxbench __child SPEC.json"}});
    return 2;
  }
  try {
    json spec = json::parse(ReadFile(argv[2]));
    std::string role = spec.at("role");
    if (!ProbeDevice(out)) {
      out.Send({{"event", "done"}});
      return 0;
    }
    if (role == "probe") {
      // Only the device report above.
    } else if (role == "reference")
      RunReference(spec, out);
    else if (role == "candidate")
      RunCandidate(spec, out);
    else
      throw std::runtime_error("unknown child role " + role);
    out.Send({{"event", "done"}});
    return 0;
  } catch (const CudaError& e) {
    out.Send({{"event", "error"},
              {"stage", "harness"},
              {"cuda_error", cudaGetErrorName(e.code())},
              {"message", e.what()}});
    return 0;
  } catch (const std::exception& e) {
    out.Send({{"event", "error"}, {"stage", "harness"}, {"message", e.what()}});
    return 0;
  }
}

}  // namespace ptxbench
