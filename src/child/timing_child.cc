#include "child/timing_child.h"

#include <cuda_runtime_api.h>

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "child/child_support.h"
#include "child/seal.h"
#include "common/cuda_check.h"
#include "measure/baseline.h"
#include "measure/call_activity.h"
#include "measure/cublaslt_gemm.h"
#include "measure/loaded_objects.h"
#include "measure/nvml_clocks.h"
#include "run/channel.h"
#include "run/protocol.h"
#include "task/device_ops.h"

namespace ptxbench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// What one phase (baseline, candidate, peak) does with the loop.
struct PhaseOptions {
  std::string phase;
  int warmup = 10, iterations = 50;
  uint64_t seed0 = 0;              // call i gets inputs from seed0 + i
  bool fresh_inputs = true;        // regenerate the inputs before every call
  std::set<int> write_outputs_of;  // calls whose outputs are written for re-validation
  const Family* family = nullptr;  // whose inputs these are: the task's unless set (the peak)
  // Timed call k (after the warm-ups) writes its outputs to kept[k] when there is one: the
  // parent chooses which to check after the loop, so no call can know it will be checked.
  std::vector<Buffers>* kept = nullptr;
  // Each kept output is digested right after its call, in stream order, before the next call
  // runs: a call whose output is completed later (work deferred to another call) is caught
  // when the parent compares the output it asks for with this digest.
  uint64_t digest_key = 0;
};

// One candidate or baseline call; returns run()'s result. May throw.
using Call = std::function<int(const std::vector<DeviceTensor>&, Stream)>;

class TimingSession {
 public:
  TimingSession(ActivityTimer& timer, ChannelWriter& out, const Family& family, Axes axes,
                std::string out_dir)
      : timer_(timer),
        out_(out),
        family_(family),
        axes_(std::move(axes)),
        out_dir_(std::move(out_dir)) {
    // Two streams: the harness's own work (inputs, poison, flush, checksums, copies) on one,
    // the candidate's on the other, so that CUPTI records tell them apart.
    PTXBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&hstream_, cudaStreamNonBlocking));
    PTXBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&cstream_, cudaStreamNonBlocking));
    marks_.harness_stream = timer_.StreamId(hstream_);
    marks_.candidate_stream = timer_.StreamId(cstream_);
    int device = 0, l2 = 0;
    PTXBENCH_CUDA_CHECK(cudaGetDevice(&device));
    PTXBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    l2_bytes_ = static_cast<size_t>(l2);
    flush_bytes_ = 2 * l2_bytes_;
    PTXBENCH_CUDA_CHECK(cudaMalloc(&flush_, flush_bytes_));
  }
  ~TimingSession() {
    cudaDeviceSynchronize();
    cudaFree(flush_);
  }

  // Allocates exactly `n` buffer sets (the parent's number: an allocation that fails throws,
  // and the parent hears why). A family that derives timed inputs (Family::MakeTimedInputs)
  // gets a base per set too, made here from set_seed0 + set, once for every phase.
  int AllocateSets(int n, uint64_t set_seed0) {
    const bool derived = family_.DerivesTimedInputs();
    size_t per_set = 0;
    for (const auto& t : family_.Tensors(axes_))
      per_set += t.Bytes() * (derived && t.role == TensorRole::kInput ? 2 : 1);
    for (int i = 0; i < n; ++i) {
      Buffers b;
      Allocate(family_, axes_, &b);
      sets_.push_back(std::move(b));
      if (!derived) continue;
      Buffers base;
      AllocateInputs(family_, axes_, &base);
      family_.MakeInputs(base.tensors, axes_, set_seed0 + static_cast<uint64_t>(i), hstream_);
      bases_.push_back(std::move(base));
    }
    PTXBENCH_CUDA_CHECK(cudaStreamSynchronize(hstream_));
    set_bytes_ = per_set;
    set_seed0_ = set_seed0;
    return n;
  }

  // Runs one phase on `sets`; false when a call failed (the error was sent).
  bool Loop(const PhaseOptions& o, std::vector<Buffers>& sets, const Call& call) {
    int total = o.warmup + o.iterations;
    int n_sets = static_cast<int>(sets.size());
    timer_.CollectAll();  // whatever came before this phase is not its business
    for (int i = 0; i < total; ++i) {
      Buffers& b = sets[i % n_sets];
      uint64_t seed = o.seed0 + static_cast<uint64_t>(i);
      const bool derived = !o.family && !bases_.empty();
      if (derived)
        family_.MakeTimedInputs(bases_.at(i % n_sets).tensors, b.tensors, axes_, seed, hstream_);
      else if (o.fresh_inputs || i < n_sets)
        (o.family ? *o.family : family_).MakeInputs(b.tensors, axes_, seed, hstream_);
      const int k = i - o.warmup;
      const bool keep = o.kept && k >= 0 && k < static_cast<int>(o.kept->size());
      std::vector<DeviceTensor> tensors = keep ? Combine(b, (*o.kept)[k]) : b.tensors;
      for (const auto& t : tensors)
        if (t.spec.role == TensorRole::kOutput)
          FillPoison(t.data, t.spec.dtype, static_cast<size_t>(t.spec.Elements()), hstream_);
      // The checksums read the inputs, so they come before the flush: the call starts cold.
      std::vector<uint64_t> before = InputChecksums(b, hstream_);  // synchronizes hstream
      // Cold L2: write twice its size, so that no input or output of this call is cached.
      FillPoison(flush_, DType::kBF16, flush_bytes_ / 2, hstream_);
      PTXBENCH_CUDA_CHECK(cudaDeviceSynchronize());

      CallWindow w;
      w.begin = timer_.Now();
      auto t0 = Clock::now();
      int rc = 0;
      try {
        rc = call(tensors, cstream_);
      } catch (const BaselineError& e) {
        out_.Send({{"event", "baseline_error"}, {"phase", o.phase}, {"message", e.what()}});
        return false;
      } catch (const std::exception& e) {
        return Fail(o.phase, i, std::string("run threw an exception: ") + e.what());
      } catch (...) {
        return Fail(o.phase, i, "run threw an exception");
      }
      cudaError_t e_stream = cudaStreamSynchronize(cstream_);
      w.end = timer_.Now();
      double host_ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
      // Then the whole device: work hidden on another stream finishes (and is seen as
      // outliving the call) before the next call's inputs are made.
      cudaError_t e_device = cudaDeviceSynchronize();
      if (rc != 0) {
        out_.Send({{"event", "refused"}, {"phase", o.phase}, {"index", i}, {"rc", rc}});
        return false;
      }
      for (cudaError_t e : {e_stream, e_device, cudaGetLastError()})
        if (e != cudaSuccess) {
          out_.Send({{"event", "error"},
                     {"stage", "timing"},
                     {"phase", o.phase},
                     {"index", i},
                     {"cuda_error", cudaGetErrorName(e)},
                     {"message", CudaRuntimeStatus{}.Describe(e)}});
          return false;
        }
      std::vector<uint64_t> after = InputChecksums(b, hstream_);
      json digests = json::array();
      if (keep)
        for (const auto& t : (*o.kept)[k].tensors)
          if (t.spec.role == TensorRole::kOutput)
            digests.push_back(DeviceDigest(t.data, t.spec.Bytes(), o.digest_key, hstream_));
      json sample = {
          {"event", "timing_sample"}, {"phase", o.phase},   {"index", i},
          {"warmup", i < o.warmup},   {"host_ns", host_ns}, {"inputs_unchanged", before == after}};
      if (keep) {
        sample["kept"] = k;
        sample["digests"] = digests;
      }
      if (o.write_outputs_of.count(i)) {
        sample["seed"] = seed;
        sample["set"] = i % n_sets;
        if (derived) sample["set_seed"] = set_seed0_ + static_cast<uint64_t>(i % n_sets);
        sample["outputs"] = WriteOutputs(b, out_dir_, "timing" + std::to_string(i), hstream_);
      }
      sample["activity"] = AttributeCall(timer_.CollectAll(), w, marks_).ToJson();
      out_.Send(sample);
    }
    return true;
  }

  bool Fail(const std::string& phase, int index, const std::string& message) {
    out_.Send({{"event", "error"},
               {"stage", "timing"},
               {"phase", phase},
               {"index", index},
               {"message", message}});
    return false;
  }

  std::vector<Buffers>& sets() { return sets_; }
  std::vector<Buffers>& bases() { return bases_; }
  cudaStream_t harness_stream() const { return hstream_; }
  cudaStream_t candidate_stream() const { return cstream_; }
  uint64_t set_seed0() const { return set_seed0_; }
  const Family& family() const { return family_; }
  const Axes& axes() const { return axes_; }
  const std::string& out_dir() const { return out_dir_; }

  // Output buffers for exactly `n` timed calls (the parent's number), made before the
  // candidate is loaded so that nothing it does at load time can shrink them.
  std::vector<Buffers> AllocateKept(int n) {
    std::vector<Buffers> kept;
    for (int i = 0; i < n; ++i) {
      Buffers b;
      AllocateOutputs(family_, axes_, &b);
      kept.push_back(std::move(b));
    }
    return kept;
  }
  json Protocol() const {
    return {{"l2_bytes", l2_bytes_},
            {"timed_inputs", bases_.empty() ? "fresh" : "derived from a base per set"},
            {"flush_bytes", flush_bytes_},
            {"buffer_sets", sets_.size()},
            {"set_bytes", set_bytes_},
            {"harness_stream", marks_.harness_stream},
            {"candidate_stream", marks_.candidate_stream}};
  }

 private:
  ActivityTimer& timer_;
  ChannelWriter& out_;
  const Family& family_;
  Axes axes_;
  std::string out_dir_;
  cudaStream_t hstream_ = nullptr, cstream_ = nullptr;
  HarnessMarks marks_;
  size_t l2_bytes_ = 0, flush_bytes_ = 0, set_bytes_ = 0;
  void* flush_ = nullptr;
  std::vector<Buffers> sets_;
  std::vector<Buffers> bases_;  // per set, for a family that derives its timed inputs
  uint64_t set_seed0_ = 0;
};

// A baseline as a call of the loop: it never refuses, it throws BaselineError.
Call BaselineCall(Baseline* b) {
  return [b](const std::vector<DeviceTensor>& t, Stream s) {
    b->Run(t, s);
    return 0;
  };
}

// The bf16 dense peak of this GPU: cuBLASLt at a large square shape, fixed inputs.
bool MeasurePeak(TimingSession& session, ChannelWriter& out, int n) {
  const Family& gemm = *FindFamily("gemm");
  Axes axes = {{"M", n}, {"N", n}, {"K", n}};
  std::vector<Buffers> sets(1);
  Allocate(gemm, axes, &sets[0]);
  std::string why;
  std::unique_ptr<Baseline> lt;
  try {
    lt = MakeBaseline(gemm, axes, nlohmann::json::object(), &why);
  } catch (const BaselineError& e) {
    out.Send({{"event", "baseline_error"}, {"phase", "peak"}, {"message", e.what()}});
    return false;
  }
  PhaseOptions o{"peak", 3, 10, 0x5eed0000u, false, {}, &gemm};
  bool ok = session.Loop(o, sets, BaselineCall(lt.get()));
  out.Send({{"event", "peak_done"}, {"n", n}, {"ok", ok}, {"baseline", lt->Describe()}});
  return ok;
}

// A baseline child waits this long for the parent's "go" (its wait for the GPU lock); the
// parent's own deadline for the child covers the same wait.
constexpr int kBaselineGoTimeoutMs = 4000 * 1000;

// After the candidate's timed loop: the parent's instructions arrive on the control
// descriptor only now, so nothing in the candidate's reach could know them in advance.
//  1. {"check": [k, ...], "witness": {"seed0": S, "key": K}}: the outputs of the kept timed
//     calls k are written out; then the W witness input sets (allocated before the candidate
//     was loaded; W is the parent's number from the spec) are filled from seeds S + j.
//  2. "go" (the parent has started its out-of-process witness): the W calls run back to
//     back, once each on inputs of their own (nothing repeats, so nothing can be recognised
//     and skipped), with no harness work between them; then the device is synchronized.
//  3. witness_done carries a keyed digest of every witness output (made while the parent's
//     window is open); then {"check": [j, ...]}: the outputs of witness calls j are written
//     out, and the parent holds them to those digests.
bool AfterTheLoop(TimingSession& session, std::vector<Buffers>& kept,
                  std::vector<Buffers>& witness_inputs, const Call& call, ChannelWriter& out) {
  // The parent answers within milliseconds; a candidate that holds back the channel (a relay
  // over the result descriptor) stalls the parent's answer, and should cost little time.
  const int control_timeout_ms = 30000;
  out.Send({{"event", "timed_loop_done"}, {"kept", kept.size()}});
  std::optional<AfterLoopPlan> plan =
      ParseAfterLoopPlan(ReadControlLine(kControlFd, control_timeout_ms));
  if (!plan) {
    out.Send(
        {{"event", "error"},
         {"stage", "timing"},
         {"phase", "candidate"},
         {"message",
          "no plan from the parent after the timed loop (was the result channel held back?)"}});
    return false;
  }
  Stream hs = session.harness_stream();
  for (int k : plan->check) {
    if (k < 0 || k >= static_cast<int>(kept.size())) continue;
    json outputs = WriteOutputs(kept[k], session.out_dir(), "timed" + std::to_string(k), hs);
    out.Send({{"event", "timed_output"}, {"kept", k}, {"outputs", outputs}});
  }
  if (!plan->witness) return true;
  const int calls = static_cast<int>(witness_inputs.size());
  const Family& family = session.family();
  const bool derived = !session.bases().empty();
  for (int j = 0; j < calls; ++j) {
    Buffers& b = witness_inputs[j];
    uint64_t seed = plan->witness_seed0 + static_cast<uint64_t>(j);
    if (derived)
      family.MakeTimedInputs(session.bases().at(j % session.bases().size()).tensors, b.tensors,
                             session.axes(), seed, hs);
    else
      family.MakeInputs(b.tensors, session.axes(), seed, hs);
    for (const auto& t : kept[j].tensors)
      if (t.spec.role == TensorRole::kOutput)
        FillPoison(t.data, t.spec.dtype, static_cast<size_t>(t.spec.Elements()), hs);
  }
  PTXBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  out.Send({{"event", "witness_ready"}, {"calls", calls}});
  if (ReadControlLine(kControlFd, control_timeout_ms) != "go") {
    out.Send({{"event", "error"},
              {"stage", "timing"},
              {"phase", "witness"},
              {"message", "no go for the witness (was the result channel held back?)"}});
    return false;
  }
  auto t0 = Clock::now();
  Stream cs = session.candidate_stream();
  for (int j = 0; j < calls; ++j) {
    int rc = 0;
    try {
      rc = call(Combine(witness_inputs[j], kept[j]), cs);
    } catch (const std::exception& e) {
      rc = -1;
    }
    if (rc != 0) {
      out.Send({{"event", "refused"}, {"phase", "witness"}, {"index", j}, {"rc", rc}});
      return false;
    }
  }
  cudaError_t e_stream = cudaStreamSynchronize(cs);
  cudaError_t e_device = cudaDeviceSynchronize();
  double host_s = std::chrono::duration<double>(Clock::now() - t0).count();
  for (cudaError_t e : {e_stream, e_device, cudaGetLastError()})
    if (e != cudaSuccess) {
      out.Send({{"event", "error"},
                {"stage", "timing"},
                {"phase", "witness"},
                {"cuda_error", cudaGetErrorName(e)},
                {"message", CudaRuntimeStatus{}.Describe(e)}});
      return false;
    }
  // A commitment to every witness output while the parent's window is still open: the ones it
  // asks for afterwards must still be what these calls wrote, not work done after the window.
  json digests = json::array();
  for (int j = 0; j < calls; ++j) {
    json per_output = json::array();
    for (const auto& t : kept[j].tensors)
      if (t.spec.role == TensorRole::kOutput)
        per_output.push_back(DeviceDigest(t.data, t.spec.Bytes(), plan->witness_key, hs));
    digests.push_back(per_output);
  }
  out.Send({{"event", "witness_done"}, {"calls", calls}, {"host_s", host_s}, {"digests", digests}});
  std::optional<AfterLoopPlan> check =
      ParseAfterLoopPlan(ReadControlLine(kControlFd, control_timeout_ms));
  if (check)
    for (int j : check->check) {
      if (j < 0 || j >= calls) continue;
      json outputs = WriteOutputs(kept[j], session.out_dir(), "witness" + std::to_string(j), hs);
      out.Send({{"event", "witness_output"}, {"index", j}, {"outputs", outputs}});
    }
  return true;
}

}  // namespace

void RunTiming(const json& spec_json, ActivityTimer& timer, ChannelWriter& out) {
  const TimingSpec spec = ParseTimingSpec(spec_json);
  const Family* family = FindFamily(spec.family);
  if (!family) throw std::invalid_argument("timing spec: unknown family " + spec.family);
  Axes axes = spec.axes.get<Axes>();
  const int warmup = spec.warmup, iterations = spec.iterations;
  TimingSession session(timer, out, *family, axes, spec.out_dir);
  session.AllocateSets(spec.buffer_sets, spec.set_seed_base);

  std::unique_ptr<NvmlClocks> nvml;
  std::string nvml_why;
  nvml = NvmlClocks::Open(spec.pci_bus_id, &nvml_why);
  auto clock_sample = [&]() -> json {
    return nvml ? ToJson(nvml->Sample()) : json{{"state", "unavailable"}, {"reason", nvml_why}};
  };

  // --- a baseline child: the vendor library alone, in a process no candidate ever enters ---
  if (spec.baseline_only) {
    std::unique_ptr<Baseline> baseline;
    std::string why;
    const std::string& phase = spec.baseline_phase;
    try {
      baseline = MakeBaseline(*family, axes, spec.baseline_options, &why);
    } catch (const BaselineUnsupported& e) {
      out.Send({{"event", "baseline_unsupported"}, {"message", e.what()}});
    } catch (const BaselineError& e) {
      out.Send({{"event", "baseline_error"}, {"phase", phase}, {"message", e.what()}});
    }
    if (!baseline && !why.empty()) out.Send({{"event", "baseline_none"}, {"reason", why}});
    if (baseline && spec.wait_for_go) {
      // Ready: the parent now takes the GPU alone (it may wait for other evaluations).
      PTXBENCH_CUDA_CHECK(cudaDeviceSynchronize());
      out.Send({{"event", "baseline_ready"}, {"phase", phase}});
      if (ReadControlLine(kControlFd, kBaselineGoTimeoutMs) != "go") {
        out.Send({{"event", "baseline_error"},
                  {"phase", phase},
                  {"message", "the parent did not let the baseline's timed calls start"}});
        return;
      }
    }
    if (baseline) {
      PhaseOptions o{phase, warmup, iterations, spec.seed_base + spec.baseline_seed_offset,
                     true,  {}};
      session.Loop(o, session.sets(), BaselineCall(baseline.get()));
    }
    if (spec.peak_n > 0) MeasurePeak(session, out, spec.peak_n);
    out.Send(
        {{"event", "timing_done"},
         {"protocol", session.Protocol()},
         {"clocks", {{"after", clock_sample()}}},
         {"baseline_name", baseline ? baseline->Name() : ""},
         {"baseline", baseline ? baseline->Describe() : json(nullptr)},
         // Which library was asked for, where there is a choice (the attention forward):
         // a shape it cannot run has no baseline_name, and still says which it was.
         {"baseline_choice",
          family->Name() == "mha_fwd" ? ToString(AttentionBaselineOf(spec.baseline_options)) : ""},
         {"new_vendor_libraries", json::array()}});
    return;
  }

  // --- the candidate, in a process that holds no vendor library ---
  // The set-up so far (context, CUPTI, the timed buffer sets) ran with the GPU shared; the
  // candidate is loaded only once the parent holds it alone (a loaded candidate is never left
  // on a GPU that another evaluation times on).
  PTXBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  if (spec.wait_for_go && !AwaitParentGo(out, event::kCandidateReady)) return;
  // Everything the protocol needs exists before the candidate is loaded, in the numbers the
  // parent decided: a constructor that takes the device's memory cannot shrink them, it can
  // only make its own calls fail. Allocated only now, alone: the kept outputs and witness
  // inputs are GBs at the headline (a quarter of the device's memory at most), and several
  // timed children waiting for the GPU each holding theirs ran a pool of 8 out of memory.
  std::vector<Buffers> kept = session.AllocateKept(spec.kept_outputs);
  std::vector<Buffers> witness_inputs(static_cast<size_t>(spec.witness_calls));
  for (auto& b : witness_inputs) AllocateInputs(*family, axes, &b);
  PTXBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  std::set<std::string> objects_before = LoadedObjects();
  // The harness's code and read-only data (its GOT included) sealed before the candidate's
  // constructors run: the CUPTI reader the timing rests on cannot be rewritten.
  out.Send(SealHarnessMemory());
  CandidateEntry run = LoadCandidateRun(spec_json, out);
  if (!run) return;
  json clocks = {{"before", clock_sample()}};
  // Polled on its own thread through the timed calls: a throttled clock explains a slow run.
  ClockSampler sampler(nvml.get(), nvml_why);
  sampler.Start();
  out.Send({{"event", "call_started"}, {"phase", "candidate"}});
  Call candidate_call = [&](const std::vector<DeviceTensor>& t, Stream s) {
    return family->Call(run, t, axes, s);
  };
  PhaseOptions o{"candidate", warmup,  iterations, spec.seed_base, true,
                 {},          nullptr, &kept,      spec.digest_key};
  bool ok = session.Loop(o, session.sets(), candidate_call);
  clocks["during"] = ToJson(sampler.Stop());
  clocks["after"] = clock_sample();
  if (!ok) return;
  std::vector<std::string> new_vendor = NewVendorLibraries(objects_before, LoadedObjects());
  if (!AfterTheLoop(session, kept, witness_inputs, candidate_call, out)) return;
  json protocol = session.Protocol();
  protocol["kept_outputs"] = kept.size();
  protocol["witness_calls"] = witness_inputs.size();
  out.Send({{"event", "timing_done"},
            {"protocol", protocol},
            {"clocks", clocks},
            {"baseline_name", ""},
            {"baseline", json(nullptr)},
            {"new_vendor_libraries", new_vendor}});
}

}  // namespace ptxbench
