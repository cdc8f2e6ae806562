// What the stages of an evaluation share (evaluate.cc, instructions_stage.cc, timing_layer.cc):
// the context every stage reads, the verdict they build, and the support for reading what a
// candidate's child left behind. Internal to src/evaluate.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/files.h"
#include "common/strings.h"
#include "compare/compare.h"
#include "evaluate/evaluate.h"
#include "evaluate/gpu_access.h"
#include "record/record.h"
#include "run/children.h"
#include "run/gpu_lock.h"
#include "task/family.h"

namespace ptxbench::evaluation {

using nlohmann::json;

// An output file a candidate's child named that cannot be one of its outputs: a rule
// violation, never a crash of ours.
struct CandidateFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What the evaluation has established so far; the first failure wins, except where a later
// layer explains an earlier symptom better (the memory check over a wrong answer).
struct Verdict {
  Status status = Status::kPassed;
  std::string reason;
  std::string message;
  bool decided = false;
  // The candidate's process said "the harness failed" (no GPU, a harness error) after the
  // candidate was loaded: the verdict is the candidate's unless a candidate-free probe of the
  // GPU right after finds it unhealthy (ConfirmCandidateFailure).
  bool claimed_infra = false;
  void Set(Status s, std::string r, std::string m) {
    status = s;
    reason = std::move(r);
    // Messages quote logs and tool output (cut by bytes): valid UTF-8 for the record's JSON.
    message = ValidUtf8(m);
    decided = true;
  }
};

// What every stage reads: the request and what follows from it, fixed before the first stage.
// The verdict when the GPU could not be had: INFRA_ERROR gpu_lock_timeout (gpu_lock_stopped
// for a stopped wait, gpu_lock_error for a lock file that cannot be used), with the lock's
// sentence and `what_it_cost` after it. Replaces any
// verdict so far: a PASSED whose last layers could not run is not one (fail closed).
void SetGpuRefused(const GpuAccess& gpu, Verdict* v, const std::string& what_it_cost = "");

// Holds the GPU in `mode` for the child that follows (released with c.gpu->Release() when it
// is done). False, with SetGpuRefused's verdict unless one was decided already, when it
// cannot be had.
struct EvalContext;
bool HoldGpu(const EvalContext& c, GpuLock::Mode mode, Verdict* v);

// Runs `child` gated on the evaluation's GPU (evaluate/gpu_gate.h): the lock is taken when the
// child reaches its first CUDA call (and, with `alone_before_load`, alone before it loads the
// candidate), and let go when it has ended. nullopt, with HoldGpu's verdict, when a hold was
// refused. Without a lock (c.gpu null) it is RunChild.
std::optional<ChildOutcome> RunGatedChild(const EvalContext& c, ChildRequest child, Verdict* v,
                                          bool alone_before_load = false);

struct EvalContext {
  const EvalRequest& req;
  const Definition& def;
  const Workload& wl;
  const Family& family;
  Axes axes;
  Tolerance tol;
  std::string cache_root;
  // Inputs no candidate can know in advance, for every call that is not one of the
  // reproducible trials: the memory check, the profiled call and the timed calls. (The trial
  // seeds are public; a kernel that recognises their inputs must still face these.)
  uint64_t fresh_seed = 0;
  // The evaluation's hold on its GPU (evaluate/gpu_access.h), set once the device is known.
  GpuAccess* gpu = nullptr;

  void Stage(const char* name, const std::string& what) const {
    if (req.on_stage) req.on_stage(name, what);
  }
};

// Derive the memory check's, the profiled call's and the timed buffer sets' seeds from the
// evaluation's fresh seed.
constexpr uint64_t kMemcheckSeedSalt = 0x6d656d636865636bull;
constexpr uint64_t kProfileSeedSalt = 0x70726f66696c65ull;
constexpr uint64_t kSetSeedSalt = 0x73657462617365ull;

// An output file named by a candidate's child must lie directly in that child's folder
// (CandidateFileError otherwise).
void RequireInChildFolder(const std::string& file, const std::string& child_folder);
// One output tensor of the candidate (a file its child wrote, in its own folder) against the
// reference's fp32 file.
OutputComparison CompareOutputFile(const TensorSpec& spec, const std::string& expected_file,
                                   const std::string& file, const std::string& child_folder,
                                   const Tolerance& tol);
// The digest of an output file the candidate's child wrote (see DeviceDigest), read from its
// own folder only, as CompareOutputFile does.
std::string WitnessOutputDigest(const std::string& file, const std::string& child_folder,
                                uint64_t key);
// Where the reference outputs of this evaluation are written: a folder of the parent's that no
// confined child can enter.
std::string ReferenceFolder(const ScratchDir& scratch);
// The install folder of a tool that wraps a confined child (…/bin/ncu -> …).
std::vector<std::string> ToolRoots(const std::string& tool);
// `j` with every string in it (object keys too) made valid UTF-8.
json ValidUtf8Json(const json& j);
// " (seed N)" for a message that names its seed, else "".
std::string TrialName(const json& m);
// The first message with this event that the child sent before it loaded a candidate.
const json* BeforeLoading(const ChildOutcome& c, const std::string& event);
// The GPU a child reported, into the record's toolchain.
void NoteDevice(const ChildOutcome& child, EvaluationRecord* rec);
// The credit tag of an arch ("H" for sm_90a).
std::string ArchTag(const std::string& arch);
std::string Count(double v);
std::string FormatPercent(double fraction);
// A child of the harness's own (no candidate in it) in the scratch folder: its spec to fill.
ChildRequest HarnessChild(const EvalRequest& req, const ScratchDir& scratch,
                          const std::string& name, std::chrono::seconds timeout);
// A reference child for `seeds`, its expected outputs written to `out_dir`: the request, and
// the request run.
ChildRequest ReferenceChild(const EvalRequest& req, const Family& family, const Axes& axes,
                            const std::vector<uint64_t>& seeds, const std::string& out_dir,
                            const ScratchDir& scratch, const std::string& name,
                            const std::vector<uint64_t>& set_seeds = {});
ChildOutcome RunReferenceChild(const EvalRequest& req, const Family& family, const Axes& axes,
                               const std::vector<uint64_t>& seeds, const std::string& out_dir,
                               const ScratchDir& scratch, const std::string& name,
                               const std::vector<uint64_t>& set_seeds = {});
// Why a reference child did not deliver: its error, else how it ended.
std::string ReferenceFailure(const ChildOutcome& ro);
// A verdict resting on a harness failure the candidate's own process reported stays the
// candidate's unless a candidate-free probe of the GPU right after finds it unhealthy.
void ConfirmCandidateFailure(const EvalRequest& req, const ScratchDir& scratch,
                             EvaluationRecord* rec, Verdict* v);

}  // namespace ptxbench::evaluation
