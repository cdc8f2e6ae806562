#include "child/child_main.h"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "child/child_support.h"
#include "child/timing_child.h"
#include "common/clock.h"
#include "common/cuda_check.h"
#include "common/dynamic_library.h"
#include "common/files.h"
#include "measure/activity_timer.h"
#include "measure/loaded_objects.h"
#include "run/channel.h"
#include "run/protocol.h"
#include "task/device_ops.h"
#include "task/family.h"

namespace ptxbench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Returns false (after telling the parent) when there is no usable GPU.
bool ProbeDevice(ChannelWriter& out) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    // Without any driver the runtime says "CUDA driver version is insufficient", which sends
    // people looking for a driver upgrade: say what is missing.
    const bool driver = DynamicLibrary::Open("libcuda.so.1").has_value();
    std::string message = !driver ? std::string("no NVIDIA driver (libcuda.so.1 cannot be loaded)")
                          : e != cudaSuccess ? CudaRuntimeStatus{}.Describe(e)
                                             : std::string("no CUDA device visible");
    out.Send({{"event", "no_gpu"}, {"message", message}});
    return false;
  }
  out.Send(DeviceInfo());
  return true;
}

void RunReference(const ReferenceSpec& spec, ChannelWriter& out) {
  const Family* family = FindFamily(spec.family);
  if (!family) throw std::runtime_error("reference: unknown family " + spec.family);
  Axes axes = spec.axes.get<Axes>();
  const std::string& out_dir = spec.out_dir;
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
  // The timing layer's re-checked calls of a family that derives its timed inputs come with
  // the seed of their buffer set's base: inputs = MakeTimedInputs(base(set_seed), seed).
  const std::vector<uint64_t>& seeds = spec.seeds;
  const std::vector<uint64_t>& set_seeds = spec.set_seeds;  // same length (ParseReferenceSpec)
  Buffers base;
  if (!set_seeds.empty()) AllocateInputs(*family, axes, &base);
  std::optional<uint64_t> base_seed;
  for (size_t n = 0; n < seeds.size(); ++n) {
    uint64_t seed = seeds[n];
    auto t0 = Clock::now();
    if (set_seeds.empty()) {
      family->MakeInputs(b.tensors, axes, seed, stream);
    } else {
      if (base_seed != set_seeds[n]) family->MakeInputs(base.tensors, axes, set_seeds[n], stream);
      base_seed = set_seeds[n];
      family->MakeTimedInputs(base.tensors, b.tensors, axes, seed, stream);
    }
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
            {"message", CudaRuntimeStatus{}.Describe(e)}});
}

// The candidate's kernels among what CUPTI recorded (the harness's own are named ptxbench_*).
json CandidateKernels(ActivityTimer* timer) {
  std::set<std::string> names;
  if (!timer) return json(nullptr);
  for (const auto& s : timer->CollectAll())
    if (s.kind == ActivitySpan::Kind::kKernel && s.name.find("ptxbench_") == std::string::npos)
      names.insert(s.name);
  return json(std::vector<std::string>(names.begin(), names.end()));
}

// `spec` is the whole spec (the loader reads its own fields from it); `run_spec` its candidate
// part, parsed strictly.
void RunCandidate(const json& spec, const CandidateRunSpec& run_spec, ChannelWriter& out,
                  ActivityTimer* timer) {
  const Family* family = FindFamily(run_spec.family);
  if (!family) throw std::runtime_error("candidate: unknown family " + run_spec.family);
  Axes axes = run_spec.axes.get<Axes>();
  const std::string& out_dir = run_spec.out_dir;
  const bool write_outputs = run_spec.write_outputs;

  // The harness's own allocations and stream exist before the candidate is loaded, so that
  // nothing the candidate does at load time can see or steer them.
  cudaStream_t stream;
  PTXBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // Two sets: the trials alternate between buffers guarded at their end and at their start
  // (child_support.h), so an access past either edge faults in some trial.
  Buffers end_guarded, start_guarded;
  Allocate(*family, axes, &end_guarded, GuardedEdge::kEnd);
  const std::vector<uint64_t>& seeds = run_spec.seeds;
  if (seeds.size() > 1) Allocate(*family, axes, &start_guarded, GuardedEdge::kStart);

  // Code for an architecture this GPU cannot run is our machine's limit, not the
  // candidate's failure: say so before loading it.
  if (!run_spec.arch.empty()) {
    json dev = DeviceInfo();
    std::string cc = dev.value("compute_capability", std::string());
    const std::string& arch = run_spec.arch;
    std::string need = arch.rfind("sm_100", 0) == 0  ? "10.0"
                       : arch.rfind("sm_90", 0) == 0 ? "9.0"
                                                     : "";
    if (!need.empty() && cc != need) {
      out.Send({{"event", "arch_unavailable"},
                {"arch", arch},
                {"gpu", dev.value("name", std::string())},
                {"compute_capability", cc}});
      return;
    }
  }
  std::set<std::string> objects_before = LoadedObjects();
  CandidateEntry run = LoadCandidateRun(spec, out);
  if (!run) return;

  for (size_t n = 0; n < seeds.size(); ++n) {
    const uint64_t seed = seeds[n];
    Buffers& b = n % 2 == 0 ? end_guarded : start_guarded;
    auto t0 = Clock::now();
    family->MakeInputs(b.tensors, axes, seed, stream);
    for (const auto& t : b.tensors)
      if (t.spec.role == TensorRole::kOutput)
        FillPoison(t.data, t.spec.dtype, static_cast<size_t>(t.spec.Elements()), stream);
    std::vector<uint64_t> before = InputChecksums(b, stream);  // synchronizes the stream

    out.Send({{"event", "call_started"}, {"seed", seed}});
    auto t_call = Clock::now();
    int rc = 0;
    std::string raised;  // what a tvm-ffi candidate raised
    try {
      rc = family->Call(run, b.tensors, axes, stream, &raised);
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
      // A refusal that follows a failed CUDA call (a workspace too large to allocate, say)
      // carries that error: it explains the refusal.
      cudaError_t pending = cudaGetLastError();
      cudaDeviceSynchronize();
      json refused = {{"event", "refused"}, {"seed", seed}, {"rc", rc}};
      // A tvm-ffi candidate has no return code: its non-zero is an error it raised.
      if (!raised.empty()) refused["raised"] = raised;
      if (pending != cudaSuccess) {
        refused["cuda_error"] = cudaGetErrorName(pending);
        refused["message"] = CudaRuntimeStatus{}.Describe(pending);
      }
      out.Send(refused);
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
    double call_seconds = SecondsSince(t_call);  // run() to the device's sync: sizes the timing

    json outputs = write_outputs ? WriteOutputs(b, out_dir, "seed" + std::to_string(seed), stream)
                                 : json::array();
    std::vector<uint64_t> after = InputChecksums(b, stream);
    out.Send({{"event", "trial"},
              {"kernels", CandidateKernels(timer)},
              {"seed", seed},
              {"rc", rc},
              {"input_checksums_before", before},
              {"input_checksums_after", after},
              {"outputs", outputs},
              {"call_seconds", call_seconds},
              {"seconds", SecondsSince(t0)}});
  }
  // Vendor libraries the candidate brought in at run time (dlopen behind the screen's back),
  // checked once its calls are done.
  out.Send({{"event", "libraries"},
            {"new_vendor_libraries", NewVendorLibraries(objects_before, LoadedObjects())}});
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
    // Every role's spec is parsed strictly before anything runs: a spec the child cannot
    // honour is a harness error here, never a default it fills in.
    const ChildRole role = ParseChildRole(spec);
    std::optional<ReferenceSpec> reference;
    std::optional<CandidateRunSpec> candidate;
    if (role == ChildRole::kReference) reference = ParseReferenceSpec(spec);
    if (role == ChildRole::kCandidate) candidate = ParseCandidateRunSpec(spec);
    SetGuardPages(!candidate || candidate->guard_pages);
    // A gated child waits here, before anything of CUDA's (CUPTI's set-up below initializes the
    // driver, and with it a wrapping tool's own work on the device), until the parent holds
    // the GPU.
    if (spec.value(kGpuGateKey, false) && !AwaitParentGo(out, event::kGpuWanted)) {
      out.Send({{"event", "done"}});
      return 0;
    }
    // CUPTI attaches before the first CUDA call of the process, or it misses the context.
    std::unique_ptr<ActivityTimer> timer;
    if (role == ChildRole::kTiming) {
      try {
        timer = std::make_unique<ActivityTimer>();
      } catch (const std::exception& e) {
        out.Send({{"event", "timing_unavailable"}, {"reason", e.what()}});
        out.Send({{"event", "done"}});
        return 0;
      }
    } else if (candidate && candidate->kernels) {
      // Which kernels the candidate launches, to hold against the other children's; where a
      // wrapping tool holds CUPTI itself, the list is missing and says why.
      try {
        timer = std::make_unique<ActivityTimer>();
      } catch (const std::exception& e) {
        out.Send({{"event", "kernels_unavailable"}, {"reason", e.what()}});
      }
    }
    // Loading alone, before any GPU is asked for: that a candidate's object, and what it
    // links (the tvm-ffi runtime's copy beside it), load in a confined child. For tests: a
    // machine without a GPU checks the confinement of loading this way.
    if (role == ChildRole::kLoadCheck) {
      CandidateEntry entry = LoadCandidateRun(spec, out);
      if (entry) out.Send({{"event", "loaded"}, {"abi", ToString(entry.abi)}});
      out.Send({{"event", "done"}});
      return 0;
    }
    if (!ProbeDevice(out)) {
      out.Send({{"event", "done"}});
      return 0;
    }
    switch (role) {
      case ChildRole::kProbe:  // only the device report above
      case ChildRole::kLoadCheck:
        break;
      case ChildRole::kReference:
        RunReference(*reference, out);
        break;
      case ChildRole::kCandidate:
        RunCandidate(spec, *candidate, out, timer.get());
        break;
      case ChildRole::kTiming:
        RunTiming(spec, *timer, out);
        break;
    }
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
