#include "evaluate/evaluate.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "common/clock.h"
#include "common/error.h"
#include "common/files.h"
#include "common/sandbox.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "common/version.h"
#include "compare/compare.h"
#include "compile/elf.h"
#include "compile/nvcc.h"
#include "evaluate/instructions_stage.h"
#include "evaluate/stage_support.h"
#include "evaluate/timing_judge.h"
#include "evaluate/timing_layer.h"
#include "inspect/ncu.h"
#include "inspect/sass.h"
#include "measure/baseline.h"
#include "measure/gpm.h"
#include "record/environment_layers.h"
#include "record/instructions_layer.h"
#include "record/layers.h"
#include "record/stage_seconds.h"
#include "record/subject.h"
#include "run/children.h"
#include "run/gpu_lock.h"
#include "run/protocol.h"
#include "run/reference_cache.h"
#include "screen/screen.h"
#include "task/abi.h"
#include "task/device_ops.h"
#include "task/family.h"

namespace ptxbench {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

using namespace evaluation;  // the stages' shared context, verdict and support

// Reads what the candidate child told us into a verdict for its run; leaves `v` undecided
// when it finished every trial. A harness failure before the candidate was loaded is
// INFRA_ERROR; anything after its load is the candidate's (its process may say anything).
void JudgeCandidateChild(const ChildOutcome& c, const std::chrono::seconds timeout, Verdict* v) {
  const bool loaded = LoadingIndex(c.messages) < c.messages.size();
  bool called = loaded || c.First("call_started") != nullptr;
  if (c.messages.empty() && c.exit.kind == ExitKind::kExited &&
      (c.exit.code == 126 || c.exit.code == 127)) {
    // The child never started (its confinement or its exec failed): ours, not the candidate's.
    v->Set(Status::kInfraError, "",
           "the candidate's child could not start (" + c.exit.Describe() +
               "): " + Truncate(Trim(c.log_tail), 300));
    return;
  }
  const json* last_call = c.Last("call_started");
  std::string during = last_call ? " during the call" + TrialName(*last_call) : "";
  if (c.exit.kind == ExitKind::kTimedOut) {
    v->Set(
        Status::kTimeout, "",
        "the candidate did not finish within " + std::to_string(timeout.count()) + " s" + during);
    return;
  }
  if (const json* e = c.First("error")) {
    std::string stage = e->value("stage", "");
    std::string msg = e->value("message", "");
    if (stage == "load") {
      v->Set(Status::kRuntimeError, "", "cannot load the shared object: " + msg);
    } else if ((stage == "harness" || stage == "setup") && !called) {
      v->Set(Status::kInfraError, "", "the candidate child failed before the call: " + msg);
    } else {
      v->claimed_infra = stage == "harness" || stage == "setup";
      v->Set(Status::kRuntimeError, "", msg + during);
    }
    return;
  }
  if (const json* r = c.First("refused")) {
    // A tvm-ffi candidate's non-zero return is an error it raised: that says why.
    std::string what = r->contains("raised")
                           ? r->value("raised", "") + " (the tvm-ffi call returned " +
                                 std::to_string(r->value("rc", 0)) + ")"
                           : "run returned " + std::to_string(r->value("rc", 0)) +
                                 " (non-zero: refused the shape)";
    v->Set(Status::kRuntimeError, "",
           what + TrialName(*r) +
               (r->contains("cuda_error") ? " after a failed CUDA call: " + r->value("message", "")
                                          : ""));
    return;
  }
  if (c.exit.kind == ExitKind::kSignaled) {
    v->Set(Status::kRuntimeError, "", "the candidate process was " + c.exit.Describe() + during);
    return;
  }
  if (!c.First("done")) {
    v->Set(Status::kRuntimeError, "",
           "the candidate process ended (" + c.exit.Describe() + ")" + during +
               " without finishing its trials");
    return;
  }
}

// The candidate's kernels a child reported over its trials; nullopt when it could not say.
std::optional<std::set<std::string>> TrialKernels(const ChildOutcome& o) {
  std::set<std::string> names;
  auto trials = o.All("trial");
  if (trials.empty()) return std::nullopt;
  for (const json* m : trials) {
    const json& k = m->value("kernels", json());
    if (!k.is_array()) return std::nullopt;
    for (const auto& n : k) names.insert(n.get<std::string>());
  }
  return names;
}

// A child's one call on `seed` against the reference for that seed: "" when every output
// matches, else what differs.
std::string CompareChildCall(const EvalRequest& req, const Family& family, const Axes& axes,
                             const Tolerance& tol, const ScratchDir& scratch, const ChildOutcome& o,
                             uint64_t seed, const std::string& name) {
  const json* trial = o.First("trial");
  if (!trial || trial->value("seed", uint64_t{0}) != seed || !trial->contains("outputs") ||
      trial->at("outputs").empty())
    return "";
  ChildOutcome ro =
      RunReferenceChild(req, family, axes, {seed}, ReferenceFolder(scratch), scratch, name);
  const json* ref = ro.First("reference");
  if (!ref) throw InternalError("the reference for " + name + " failed: " + ReferenceFailure(ro));
  size_t k = 0;
  for (const auto& spec : family.Tensors(axes)) {
    if (spec.role != TensorRole::kOutput) continue;
    OutputComparison c = CompareOutputFile(spec, ref->at("outputs").at(k).at("file"),
                                           trial->at("outputs").at(k).at("file"), o.folder, tol);
    long long cols = spec.shape.size() >= 2 ? spec.shape.back() : 0;
    if (c.verdict != CompareVerdict::kMatch) return Describe(c, cols);
    ++k;
  }
  return "";
}

std::string NameList(const std::set<std::string>& names) {
  return Join(std::vector<std::string>(names.begin(), names.end()));
}

// Item 5 of the threat model: a candidate must behave the same whoever watches. The memory
// checker's and the profiler's calls are judged like the trials, and no observed child may
// launch a kernel that the trials and the timed calls did not.
void CrossCheckChildren(const EvalRequest& req, const Family& family, const Axes& axes,
                        const Tolerance& tol, const ScratchDir& scratch, uint64_t profile_seed,
                        const ChildOutcome& trials, const ChildOutcome& memcheck,
                        const ChildOutcome& profiled, EvaluationRecord* rec, Verdict* v) {
  InstructionsLayer ins = InstructionsLayerOf(*rec);
  CrossCheck cross;
  auto violate = [&](const std::string& reason, const std::string& msg) {
    if (v->status == Status::kPassed) {
      v->Set(Status::kRuleViolation, reason, msg);
      ins.arch_tag = "";
    }
  };
  try {
    const MemcheckDetail checked = MemcheckDetailOf(*rec);
    if (!memcheck.messages.empty() && checked.error_count == 0) {
      std::string d = CompareChildCall(req, family, axes, tol, scratch, memcheck, checked.seed,
                                       "memcheck-reference");
      cross.memcheck_output = d.empty() ? "matches" : d;
      if (!d.empty())
        violate("observed_output_differs",
                "correct on the trials, but wrong under the memory checker: " + d);
    }
    if (!profiled.messages.empty()) {
      std::string d = CompareChildCall(req, family, axes, tol, scratch, profiled, profile_seed,
                                       "profile-reference");
      cross.profile_output = d.empty() ? "matches" : d;
      if (!d.empty())
        violate("observed_output_differs",
                "correct on the trials, but wrong under the profiler: " + d);
    }
  } catch (const CandidateFileError& e) {
    violate("channel_tampered", e.what());
  }
  // Kernel names: the trials' (CUPTI in their child), the memory checker's, the timed calls',
  // the profiler's (joined to the cubin by their instructions).
  std::optional<std::set<std::string>> a = TrialKernels(trials), b = TrialKernels(memcheck);
  std::optional<std::set<std::string>> c, d;
  if (const auto launched = PerformanceLayerOf(*rec).kernels_launched)
    c = std::set<std::string>(launched->begin(), launched->end());
  d = InstructionDetailOf(*rec).profiled_functions;
  cross.kernels = {.trials = a, .memcheck = b, .timed = c, .profiled = d};
  auto beyond = [](const std::set<std::string>& x, const std::set<std::string>& y) {
    std::set<std::string> out;
    for (const auto& n : x)
      if (!y.count(n)) out.insert(n);
    return out;
  };
  struct Pair {
    const std::optional<std::set<std::string>>& seen;
    const std::optional<std::set<std::string>>& within;
    const char* seen_name;
    const char* within_name;
  };
  for (const Pair& p :
       {Pair{b, a, "the memory checker's call", "the trials"},
        Pair{c, a, "the timed calls", "the trials"}, Pair{d, a, "the profiled call", "the trials"},
        Pair{d, c, "the profiled call", "the timed calls"}}) {
    if (!p.seen || !p.within) continue;
    std::set<std::string> extra = beyond(*p.seen, *p.within);
    if (!extra.empty()) {
      violate("kernels_differ", std::string(p.seen_name) + " launched " + NameList(extra) +
                                    ", which " + p.within_name + " never did");
      break;
    }
  }
  ins.cross_check = std::move(cross);
  rec->instructions = ToJson(ins);
}

// --- the stages of Evaluate, in the order it runs them ---
// Each stage reads the context and what earlier stages produced (its arguments), writes its
// part of the record, and may decide the verdict; a stage that ends the evaluation says so in
// what it returns (false, or no result).

EvalContext MakeContext(const EvalRequest& req) {
  const Definition& def = *req.definition;
  const Family& family = *FindFamily(def.family);
  Tolerance tol = def.tolerance;
  if (req.options.tolerance_rule) tol.rule = *req.options.tolerance_rule;
  uint64_t fresh_seed = req.timing_seed ? *req.timing_seed
                                        : (static_cast<uint64_t>(std::random_device{}()) << 32) ^
                                              std::random_device{}();
  return {req,
          def,
          *req.workload,
          family,
          def.FullAxes(*req.workload),
          tol,
          req.cache_root.empty() ? CacheRoot() : req.cache_root,
          fresh_seed};
}

// The task as the record names it.
TaskDetail TaskOf(const EvalContext& c) {
  const Definition& def = c.def;
  TaskDetail task;
  task.definition = def.name;
  task.family = def.family;
  task.workload_id = c.wl.id;
  for (const auto& [axis, value] : c.axes) task.axes.emplace_back(axis, value);
  task.flops = def.Flops(c.wl);
  if (def.required_families.count(c.req.arch))
    task.required_families = def.required_families.at(c.req.arch);
  if (def.flashinfer) {
    // Their names, so that a Trace written from this record is about their definition and
    // their workload exactly (report/flashinfer_bench.h).
    const FlashInferLink& fib = *def.flashinfer;
    auto w = fib.workloads.find(c.wl.id);
    task.from_flashinfer = true;
    task.flashinfer_trace_set = fib.trace_set;
    task.flashinfer_file = fib.file;
    task.flashinfer_definition = def.name;
    task.flashinfer_workload = w != fib.workloads.end() ? w->second : json();
  }
  return task;
}

// The record before any stage ran: what is evaluated, by which ptxbench, every layer not
// reached yet.
EvaluationRecord StartRecord(const EvalContext& c) {
  EvaluationRecord rec;
  rec.created_at = NowUtcIso8601();
  rec.ptxbench_version = PTXBENCH_VERSION;
  rec.ptxbench_commit = PtxbenchCommit();
  rec.arch = c.req.arch;
  rec.task = ToJson(TaskOf(c));
  rec.performance = NotReachedLayer("an earlier stage failed");
  SandboxLayer sandbox;
  sandbox.probe = ProbeSandbox().ToJson();
  rec.sandbox = ToJson(sandbox);
  rec.correctness = NotReachedLayer("an earlier stage failed");
  rec.memcheck = NotReachedLayer("an earlier stage failed");
  return rec;
}

CandidateDetail CandidateOf(const std::string& path, const std::string& source, CandidateAbi abi) {
  return {.sha256 = Sha256Hex(source),
          .abi = ToString(abi),
          .path = ValidUtf8(path),
          .bytes = source.size(),
          .solution = std::nullopt};  // eval adds a solution's after the evaluation
}

// The source against the rules. False when that decided the verdict.
bool ScreenStage(const EvalContext& c, const std::string& source, EvaluationRecord* rec,
                 Verdict* v) {
  c.Stage("screen", "the source against the rules");
  auto t = Clock::now();
  ScreenResult screen = ScreenSource(source);
  rec->screening = ToJson(screen);
  rec->stage_seconds[stage_key::kScreen] = SecondsSince(t);
  if (screen.passed()) return true;
  v->Set(Status::kRejected, "", screen.message());
  return false;
}

// A tvm-ffi `run` of a definition with a scalar input takes that scalar as an argument; our
// call passes one tensor per argument (task/tvm_ffi_call.h), so it cannot be called right.
// False when that decided the verdict.
// A tvm-ffi `run` whose parameters are not the task's tensors, in number and kind, read from
// the source before the build: the call could only fail on the GPU (upstream's own prompt
// example, `run(TensorView x, float scale, int32_t shift, TensorView y)`, for a GEMM).
bool TvmFfiParametersFitTheTask(const EvalContext& c, const std::string& source, Verdict* v) {
  const std::optional<std::vector<std::string>> params = TvmFfiRunParameters(source);
  if (!params) return true;  // not said plainly in the source: the call checks its arguments
  const std::vector<TensorSpec> tensors = c.family.Tensors(c.axes);
  std::vector<std::string> names, not_tensors;
  for (const TensorSpec& t : tensors) names.push_back(t.name);
  for (const std::string& p : *params)
    if (!IsTensorParameter(p)) not_tensors.push_back(p);
  if (params->size() == tensors.size() && not_tensors.empty()) return true;
  std::string msg = "the exported run takes " + std::to_string(params->size()) + " parameter" +
                    (params->size() == 1 ? "" : "s") + " (" + Join(*params, ", ") + ")";
  if (!not_tensors.empty()) msg += ", not tensors: " + Join(not_tensors, ", ");
  msg += "; " + c.def.name + " calls it with its " + std::to_string(tensors.size()) +
         " tensors, inputs then outputs (" + Join(names, ", ") + ")";
  v->Set(Status::kCompileError, "entry_point_signature", msg);
  return false;
}

bool AbiCanCallDefinition(const EvalContext& c, CandidateAbi abi, const std::string& source,
                          Verdict* v) {
  const Definition& def = c.def;
  if (abi != CandidateAbi::kTvmFfi) return true;
  // Our limit first (a definition with scalar inputs), then the candidate's signature.
  if (!def.flashinfer || def.flashinfer->scalar_inputs.empty())
    return TvmFfiParametersFitTheTask(c, source, v);
  v->Set(Status::kInfraError, "abi_unsupported",
         "definition " + def.name + " passes the scalar input " +
             Join(def.flashinfer->scalar_inputs, ", ") +
             " to run, and scalars are not passed to TVM-FFI candidates here; the native "
             "entry point (" +
             c.family.Signature() + ") implies the scale 1/sqrt(D)");
  return false;
}

// nvcc for the arch (through the build cache). No result when that decided the verdict.
std::optional<BuildResult> BuildStage(const EvalContext& c, const std::string& source,
                                      EvaluationRecord* rec, Verdict* v) {
  c.Stage("build", "nvcc for " + c.req.arch);
  auto t = Clock::now();
  BuildResult build;
  try {
    BuildOptions bo;
    bo.arch = c.req.arch;
    bo.use_cache = c.req.options.use_build_cache;
    bo.cache_dir = c.cache_root + "/build";
    build = BuildCandidate(source, bo);
  } catch (const Error& e) {
    rec->stage_seconds[stage_key::kBuild] = SecondsSince(t);
    if (e.kind() == ErrorKind::kUsage) throw;
    v->Set(Status::kInfraError, "", std::string("cannot build: ") + e.what());
    return std::nullopt;
  }
  rec->stage_seconds[stage_key::kBuild] = SecondsSince(t);
  // nvcc's log and errors are whatever the compiler printed (the candidate's own bytes quoted).
  BuildLayer built;
  built.compiler = ValidUtf8Json(ToJson(build));
  rec->build = ToJson(built);
  ToolchainLayer toolchain = ToolchainLayerOf(*rec);
  toolchain.nvcc = ValidUtf8(build.nvcc_version);
  rec->toolchain = ToJson(toolchain);
  if (build.outcome != BuildOutcome::kBuilt) {
    std::string first =
        SplitLines(build.errors).empty() ? "nvcc failed" : SplitLines(build.errors)[0];
    v->Set(Status::kCompileError, "", Truncate(first, 300));
    return std::nullopt;
  }
  // Device code the source placed in the object itself would be inspected, and its kernels
  // allowed to run, as the candidate's: nothing of such an object is judged further.
  if (!build.foreign_device_code.empty()) {
    v->Set(Status::kRuleViolation, "foreign_device_code",
           "the object's device code is not what nvcc made from the source: " +
               ValidUtf8(build.foreign_device_code));
    return std::nullopt;
  }
  return build;
}

// What the shared object needs and exports. False when that decided the verdict.
bool LinkCheckStage(const EvalContext& c, const std::string& shared_object, CandidateAbi abi,
                    EvaluationRecord* rec, Verdict* v) {
  try {
    ElfInfo elf = ReadElfInfo(shared_object);
    BuildLayer built = BuildLayerOf(*rec);
    built.needed = elf.needed;
    rec->build = ToJson(built);
    std::vector<std::string> forbidden = ForbiddenDependencies(elf, abi == CandidateAbi::kTvmFfi);
    if (!forbidden.empty()) {
      std::string list = Join(forbidden);
      v->Set(Status::kRuleViolation, "forbidden_library",
             "the shared object depends on " + list +
                 " (only the CUDA runtime/driver and the C/C++ runtime are allowed)");
      return false;
    }
    if (!ExportsFunction(elf, EntrySymbol(abi))) {
      v->Set(Status::kCompileError, "",
             abi == CandidateAbi::kTvmFfi
                 ? "the shared object does not export `run` the TVM-FFI way (no symbol "
                   "__tvm_ffi_run from TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, ...))"
                 : "the shared object does not export `" + c.family.Signature() + "`");
      return false;
    }
  } catch (const Error& e) {
    v->Set(Status::kInfraError, "", std::string("cannot inspect the shared object: ") + e.what());
    return false;
  }
  return true;
}

// A kernel of the harness's own, built for the arch like a candidate: the disassembler's
// candidate-free probe.
constexpr const char* kInspectionProbeSource = R"(
#include <cuda_runtime.h>
__global__ void inspection_probe(float* x) { x[threadIdx.x] += 1.f; }
extern "C" int run(float* x, cudaStream_t stream) {
  inspection_probe<<<1, 32, 0, stream>>>(x);
  return 0;
}
)";

// Static inspection failed on the candidate's object. Without its functions the foreign-kernel
// check cannot run, so nothing the object does could be credited: the evaluation ends. Whose
// failure it is rests on the parent's own evidence: the same confined disassembler on an object
// the harness built from its own source for the same arch.
void JudgeFailedInspection(const EvalContext& c, const StaticInspection& failed,
                           const ScratchDir& scratch, EvaluationRecord* rec, Verdict* v) {
  std::string probe_problem;
  try {
    BuildOptions bo;
    bo.arch = c.req.arch;
    bo.use_cache = true;
    bo.cache_dir = c.cache_root + "/build";
    BuildResult probe_build = BuildCandidate(kInspectionProbeSource, bo);
    if (probe_build.outcome != BuildOutcome::kBuilt) {
      probe_problem = "the probe did not build: " + Truncate(probe_build.errors, 300);
    } else {
      StaticInspection probe = InspectSharedObject(probe_build.shared_object, scratch.path());
      if (probe.state != "ran")
        probe_problem = probe.message;
      else if (probe.functions.empty())
        probe_problem = "no function found in the probe's SASS";
    }
  } catch (const Error& e) {
    probe_problem = e.what();
  }
  InstructionsLayer ins = InstructionsLayerOf(*rec);
  ins.static_probe =
      StaticProbe{probe_problem.empty() ? "ran" : "failed",
                  probe_problem.empty() ? "the disassembler read a harness-built object"
                                        : ValidUtf8(probe_problem)};
  rec->instructions = ToJson(ins);
  if (probe_problem.empty())
    v->Set(Status::kRuleViolation, "uninspectable",
           "the disassembler reads a harness-built object but not this one (" +
               ValidUtf8(failed.message) +
               "): its kernels cannot be known, so nothing it runs can be judged");
  else
    v->Set(Status::kInfraError, "",
           "static inspection failed (" + ValidUtf8(failed.message) +
               ") and fails on a harness-built object too (" + ValidUtf8(probe_problem) + ")");
}

// The SASS of the very object that will run, and the instruction families the task requires
// of it on the arch.
struct StaticStage {
  StaticInspection sass;
  std::vector<std::string> required;
};

// No result when the inspection decided the verdict (a kernel by a name of the harness's).
std::optional<StaticStage> InspectStage(const EvalContext& c, const std::string& shared_object,
                                        const ScratchDir& scratch, EvaluationRecord* rec,
                                        Verdict* v) {
  c.Stage("inspect", "the SASS of the built object");
  auto t = Clock::now();
  StaticStage s;
  s.sass = InspectSharedObject(shared_object, scratch.path());
  rec->stage_seconds[stage_key::kInspect] = SecondsSince(t);
  if (c.def.required_families.count(c.req.arch))
    s.required = c.def.required_families.at(c.req.arch);
  // The harness's own kernels are named ptxbench_*, and the memory checker and the profiler
  // leave them out; a candidate kernel by such a name would slip past both.
  InstructionsLayer ins;
  ins.static_sass = ValidUtf8Json(s.sass.ToJson());
  for (const auto& f : s.sass.functions)
    if (f.mangled.find("ptxbench_") != std::string::npos) {
      rec->instructions = ToJson(ins);
      v->Set(Status::kRejected, "",
             "kernel " + f.demangled + " uses the prefix ptxbench_, reserved for the harness");
      return std::nullopt;
    }
  ins.required_families = s.required;
  if (s.sass.state == "failed") {
    rec->instructions = ToJson(ins);
    JudgeFailedInspection(c, s.sass, scratch, rec, v);
    return std::nullopt;
  }
  ins.verification = ToString(Verification::kNotCorrect);
  ins.arch_tag = WrittenNull<std::string>();
  ins.upstream_arch_tag = WrittenNull<std::string>();
  ins.message = "the candidate is not correct";
  rec->instructions = ToJson(ins);
  return s;
}

// The reference's outputs for the trials' seeds.
struct ExpectedOutputs {
  std::vector<uint64_t> seeds;          // the trials', in order
  std::vector<ReferenceEntry> entries;  // one per seed
  json info;                            // correctness.reference of the record
  std::string no_gpu;                   // not empty: the reference child found no GPU (why)
};

// From the reference cache, else from a reference child (whose outputs are cached then). No
// result when the reference failed (the verdict decided).
std::optional<ExpectedOutputs> ReferenceStage(const EvalContext& c, const ScratchDir& scratch,
                                              EvaluationRecord* rec, Verdict* v) {
  ExpectedOutputs x;
  for (int i = 0; i < c.req.options.trials; ++i)
    x.seeds.push_back(c.req.options.seed + static_cast<uint64_t>(i));
  ReferenceCache cache(c.cache_root + "/reference");
  x.entries.resize(x.seeds.size());
  std::vector<uint64_t> missing;
  for (size_t i = 0; i < x.seeds.size(); ++i) {
    auto hit = c.req.options.use_reference_cache ? cache.Lookup(c.family, c.axes, x.seeds[i])
                                                 : std::nullopt;
    if (hit)
      x.entries[i] = *hit;
    else
      missing.push_back(x.seeds[i]);
  }
  x.info = {{"cached_trials", x.seeds.size() - missing.size()},
            {"computed_trials", missing.size()},
            {"version", c.family.ReferenceVersion()}};
  c.Stage("reference", missing.empty() ? std::string("cached")
                                       : "expected outputs for " + std::to_string(missing.size()) +
                                             " trial" + (missing.size() == 1 ? "" : "s"));
  auto t = Clock::now();
  if (!missing.empty()) {
    std::optional<ChildOutcome> gated =
        RunGatedChild(c,
                      ReferenceChild(c.req, c.family, c.axes, missing, ReferenceFolder(scratch),
                                     scratch, "reference"),
                      v);
    if (!gated) return std::nullopt;
    const ChildOutcome& ro = *gated;
    NoteDevice(ro, rec);
    if (const json* ng = ro.First("no_gpu")) {
      x.no_gpu = ng->value("message", "");
    } else {
      auto done = ro.All("reference");
      if (done.size() != missing.size() || !ro.First("done")) {
        v->Set(Status::kInfraError, "", "the reference failed: " + ReferenceFailure(ro));
        rec->stage_seconds[stage_key::kReference] = SecondsSince(t);
        return std::nullopt;
      }
      for (const json* m : done) {
        uint64_t seed = m->at("seed");
        std::vector<std::string> files;
        for (const auto& o : m->at("outputs")) files.push_back(o.at("file"));
        ReferenceEntry e = cache.Store(c.family, c.axes, seed, m->at("input_checksums"), files);
        for (size_t i = 0; i < x.seeds.size(); ++i)
          if (x.seeds[i] == seed) x.entries[i] = e;
      }
    }
  }
  rec->stage_seconds[stage_key::kReference] = SecondsSince(t);
  return x;
}

// The instructions layer's word when correctness could not be established (`why`): the static
// inspection stands, and no tag is given.
void SayNoTagWithoutCorrectness(const std::string& why, EvaluationRecord* rec) {
  InstructionsLayer ins = InstructionsLayerOf(*rec);
  ins.message = "correctness was not established (" + why + "): static inspection only, no tag";
  rec->instructions = ToJson(ins);
}

// No GPU to run on (`message` says why): what screening and the build earned stands, the GPU
// layers are skipped.
void SkipGpuLayers(const std::string& message, EvaluationRecord* rec, Verdict* v) {
  std::string why = "no GPU (" + message + ")";
  rec->correctness = SkippedLayer(why);
  rec->memcheck = SkippedLayer(why);
  SayNoTagWithoutCorrectness(why, rec);
  v->Set(Status::kInfraError, "no_gpu",
         "screening and build passed; the GPU layers were skipped: " + why);
}

// The candidate's child and what it told us; the later layers run the same request again
// under their observers.
struct CandidateRun {
  ChildRequest request;
  ChildOutcome outcome;
};

// nullopt when the GPU could not be had (the verdict set).
std::optional<CandidateRun> RunCandidateStage(const EvalContext& c,
                                              const std::string& shared_object, CandidateAbi abi,
                                              const std::vector<uint64_t>& seeds,
                                              const ScratchDir& scratch, EvaluationRecord* rec,
                                              Verdict* v) {
  c.Stage("run", std::to_string(c.req.options.trials) + " correctness trial" +
                     (c.req.options.trials == 1 ? "" : "s"));
  auto t = Clock::now();
  CandidateRun run;
  ChildRequest& cc = run.request;
  CandidateRunSpec spec;
  spec.family = c.family.Name();
  spec.axes = c.axes;
  spec.seeds = seeds;
  spec.out_dir = scratch.path();  // the child's own folder, set by RunChild
  spec.shared_object = shared_object;
  spec.arch = c.req.arch;
  spec.abi = ToString(abi);
  spec.kernels = true;  // the launched kernels, held against the other children's
  cc.spec = ToJson(spec);
  cc.work_dir = scratch.path();
  cc.confine = true;
  cc.name = "candidate";
  cc.timeout = c.req.options.timeout;
  cc.executable = c.req.executable;
  std::optional<ChildOutcome> outcome = RunGatedChild(c, cc, v);
  if (!outcome) return std::nullopt;  // the candidate never ran: no run stage
  rec->stage_seconds[stage_key::kRun] = SecondsSince(t);
  run.outcome = std::move(*outcome);
  NoteDevice(run.outcome, rec);
  return run;
}

void NoteCandidateSandbox(const ChildOutcome& co, EvaluationRecord* rec) {
  SandboxLayer sandbox = SandboxLayerOf(*rec);
  sandbox.candidate_child = co.sandbox;
  if (const json* c = co.First("confinement")) sandbox.inside = *c;
  rec->sandbox = ToJson(sandbox);
}

// Our machine cannot run this arch: not the candidate's failure. What it earned without a GPU
// (screening, build, static inspection) stands. True when so (the verdict decided).
bool ArchUnavailable(const EvalContext& c, const ChildOutcome& co, EvaluationRecord* rec,
                     Verdict* v) {
  // Sent before the candidate is mapped; the same line after its load is its own forgery.
  const json* au = BeforeLoading(co, "arch_unavailable");
  if (!au) return false;
  rec->correctness = SkippedLayer("arch_unavailable");
  rec->memcheck = SkippedLayer("arch_unavailable");
  SayNoTagWithoutCorrectness("this GPU cannot run " + c.req.arch, rec);
  v->Set(Status::kInfraError, "arch_unavailable",
         "this GPU (" + au->value("gpu", std::string("?")) + ", compute capability " +
             au->value("compute_capability", std::string("?")) + ") cannot run " + c.req.arch +
             " code; screening, build and static inspection passed");
  return true;
}

// One output's comparison as the record keeps it.
OutputCheck OutputCheckOf(const OutputComparison& cmp, std::string summary) {
  OutputCheck o;
  o.name = cmp.name;
  o.verdict = ToString(cmp.verdict);
  o.summary = std::move(summary);
  o.elements = cmp.elements;
  o.mismatched = cmp.mismatched;
  o.unwritten = cmp.unwritten;
  o.non_finite = cmp.non_finite;
  o.max_abs_error = cmp.max_abs_error;
  o.max_rel_error = cmp.max_rel_error;
  o.matched_ratio = cmp.matched_ratio;
  if (cmp.first_bad_index >= 0) {
    OutputCheck::FirstBad f;
    f.index = cmp.first_bad_index;
    f.got_non_finite = !std::isfinite(cmp.first_bad_got);
    if (!f.got_non_finite) f.got = cmp.first_bad_got;
    f.expected = cmp.first_bad_expected;
    o.first_bad = f;
  }
  return o;
}

// How the candidate's run went (its verdict so far) and the correctness layer without the
// trials' comparison.
CorrectnessDetail JudgeCandidateRun(const EvalContext& c, const ChildOutcome& co,
                                    const ExpectedOutputs& x, Verdict* v) {
  JudgeCandidateChild(co, c.req.options.timeout, v);
  const Tolerance& tol = c.tol;
  CorrectnessDetail correctness;
  correctness.state = "ran";
  correctness.trial_count = c.req.options.trials;
  correctness.seeds = x.seeds;
  correctness.tolerance = CorrectnessDetail::Tolerance{ToString(tol.rule), tol.atol, tol.rtol};
  correctness.reference = x.info;
  correctness.child = {co.exit.Describe(), ValidUtf8(co.log_tail)};
  correctness.channel_garbage_lines = static_cast<long long>(co.garbage.size());

  // A vendor library the candidate loaded at run time (behind the screen and the link
  // check): the child compares the loaded objects before the candidate and after its calls.
  if (const json* libs = co.Last("libraries")) {
    auto found = libs->value("new_vendor_libraries", std::vector<std::string>{});
    for (const std::string& name : found) correctness.new_vendor_libraries.push_back(name);
    if (!found.empty() && (!v->decided || v->status == Status::kIncorrect))
      v->Set(Status::kRuleViolation, "forbidden_library",
             "the candidate loaded " + Join(found) + " at run time");
  }
  return correctness;
}

// Trial by trial, each output the candidate's child wrote against the reference's. Returns
// the trial results (correctness.trial_results).
std::vector<Trial> CompareStage(const EvalContext& c, const ChildOutcome& co,
                                const ExpectedOutputs& x, EvaluationRecord* rec, Verdict* v) {
  auto t = Clock::now();
  std::vector<Trial> trials;
  auto family_tensors = c.family.Tensors(c.axes);
  try {
    for (const json* m : co.All("trial")) {
      uint64_t seed = m->at("seed");
      size_t idx = 0;
      while (idx < x.seeds.size() && x.seeds[idx] != seed) ++idx;
      if (idx == x.seeds.size()) continue;  // not a seed we asked for: ignore, never trust
      Trial tj;
      tj.seed = seed;
      tj.seconds = m->value("seconds", 0.0);
      tj.call_seconds = m->value("call_seconds", 0.0);
      auto before = m->at("input_checksums_before").get<std::vector<uint64_t>>();
      auto after = m->at("input_checksums_after").get<std::vector<uint64_t>>();
      tj.inputs_unchanged = before == after;
      if (before != x.entries[idx].input_checksums && !v->decided) {
        // Reported by the candidate's process after its load: its word, unless a
        // candidate-free probe finds the GPU unhealthy.
        v->Set(Status::kRuntimeError, "",
               "the candidate child's inputs differ from the reference's for seed " +
                   std::to_string(seed));
        v->claimed_infra = true;
      }
      if (before != after && !v->decided)
        v->Set(Status::kRuleViolation, "inputs_modified",
               "the candidate modified its inputs" + TrialName(*m) +
                   " (checksums before and after differ)");
      size_t k = 0;
      for (const auto& spec : family_tensors) {
        if (spec.role != TensorRole::kOutput) continue;
        OutputComparison cmp =
            CompareOutputFile(spec, x.entries[idx].output_files.at(k),
                              m->at("outputs").at(k).at("file"), co.folder, c.tol);
        long long cols = spec.shape.size() >= 2 ? spec.shape.back() : 0;
        tj.outputs.push_back(OutputCheckOf(cmp, Describe(cmp, cols)));
        if (cmp.verdict != CompareVerdict::kMatch && !v->decided)
          v->Set(Status::kIncorrect, ToString(cmp.verdict), Describe(cmp, cols) + TrialName(*m));
        ++k;
      }
      trials.push_back(std::move(tj));
    }
  } catch (const CandidateFileError& e) {
    if (!v->decided || v->status != Status::kRuleViolation)
      v->Set(Status::kRuleViolation, "channel_tampered", e.what());
  }
  rec->stage_seconds[stage_key::kCompare] = SecondsSince(t);
  if (!v->decided && trials.size() != x.seeds.size()) {
    v->Set(Status::kRuntimeError, "",
           "the candidate child reported " + std::to_string(trials.size()) + " of " +
               std::to_string(x.seeds.size()) + " trials");
    v->claimed_infra = true;  // a candidate-free probe decides whether the GPU was to blame
  }
  return trials;
}

// One call under compute-sanitizer, when --sanitize asks for it (always after a crash or a
// hang: the checker may say why). Returns the checker's child (empty when it did not run).
ChildOutcome MemcheckStage(const EvalContext& c, const ChildRequest& candidate,
                           const ScratchDir& scratch, EvaluationRecord* rec, Verdict* v) {
  const EvalRequest& req = c.req;
  ChildOutcome memcheck_child;
  bool run_failed =
      v->decided && (v->status == Status::kRuntimeError || v->status == Status::kTimeout);
  bool want = req.options.sanitize == SanitizeMode::kAlways ||
              (req.options.sanitize == SanitizeMode::kOnFailure && v->decided) || run_failed;
  if (v->decided && v->status == Status::kInfraError) want = false;
  if (!want) {
    rec->memcheck = SkippedLayer("--sanitize " + ToString(req.options.sanitize));
    return memcheck_child;
  }
  auto sanitizer = FindComputeSanitizer();
  if (!sanitizer) {
    rec->memcheck = SkippedLayer("compute-sanitizer not found");
    if (req.options.sanitize == SanitizeMode::kAlways && !v->decided)
      v->Set(Status::kInfraError, "",
             "the memory check is required (--sanitize always) but compute-sanitizer was not "
             "found; --sanitize never skips it");
    return memcheck_child;
  }
  c.Stage("memcheck", "one call under compute-sanitizer");
  auto t = Clock::now();
  const uint64_t seed = c.fresh_seed ^ kMemcheckSeedSalt;
  ChildRequest mc = candidate;
  mc.name = "memcheck";
  mc.confine = true;
  mc.spec["seeds"] = json::array({seed});
  mc.spec["write_outputs"] = true;  // compared with the reference like the trials
  // cudaMalloc'd buffers: the checker knows their exact bounds (guard pages elsewhere).
  mc.spec["guard_pages"] = false;
  std::string log = ChildFolder(scratch.path(), mc.name) + "/memcheck.txt";
  mc.wrapper = MemcheckCommand(*sanitizer, log);
  mc.tool_roots = ToolRoots(*sanitizer);
  // A hang hangs again under the checker: give it the run's deadline, not its own.
  mc.timeout = v->status == Status::kTimeout ? req.options.timeout : req.options.memcheck_timeout;
  std::optional<ChildOutcome> gated = RunGatedChild(c, mc, v);
  if (!gated) {
    rec->memcheck = NotReachedLayer(c.gpu->Failure());
    return memcheck_child;
  }
  const ChildOutcome& mo = *gated;
  memcheck_child = mo;
  rec->stage_seconds[stage_key::kMemcheck] = SecondsSince(t);
  std::string text;
  try {
    text = ValidUtf8(ReadFile(log));  // what the checker printed, the candidate's names in it
  } catch (const Error&) {
  }
  MemcheckReport report = ParseMemcheckLog(text);
  MemcheckDetail mj;
  mj.state = "ran";
  mj.exit = mo.exit.Describe();
  mj.error_count = report.error_count;
  mj.summary_seen = report.summary_seen;
  mj.mode = ToString(req.options.sanitize);
  mj.seed = seed;
  for (const auto& e : report.errors)
    mj.errors.push_back({e.Summary(), e.kind, e.location, e.thread, e.address});
  if (mo.exit.kind == ExitKind::kTimedOut) mj.state = "timed_out";
  if (report.error_count > 0 || !report.errors.empty()) {
    std::string first =
        report.errors.empty() ? "memcheck reported errors" : report.errors[0].Summary();
    mj.first_error = first;
    if (!run_failed)
      v->Set(Status::kMemoryError, "",
             Truncate(first, 400) + " (" + std::to_string(report.error_count) + " errors in all)");
  } else if (!report.summary_seen && mo.exit.kind != ExitKind::kTimedOut && !run_failed) {
    // The checker itself failed: we cannot claim the run was clean.
    mj.state = "failed";
    mj.log_tail = ValidUtf8(TailLines(text + "\n" + mo.log_tail, 20));
    // The report is written in the candidate's own folder, where it can truncate it: a missing
    // report is its failure unless a candidate-free probe finds the GPU unhealthy.
    if (!v->decided) {
      v->Set(Status::kRuntimeError, "",
             "compute-sanitizer did not produce a report (" + mo.exit.Describe() + ")");
      v->claimed_infra = true;
    }
  }
  // A clean report says nothing about a call that never finished: the checked call must have
  // completed and reported its outputs, or the memory check did not certify anything.
  const json* trial = mo.First("trial");
  const bool call_done = trial && trial->value("seed", uint64_t{0}) == seed;
  mj.call_completed = call_done;
  if (!call_done && !run_failed && mo.exit.kind != ExitKind::kTimedOut) {
    if (mj.state == "ran") mj.state = "incomplete";
    if (!v->decided || v->status == Status::kInfraError)
      v->Set(Status::kRuntimeError, "",
             "under the memory checker the candidate's process ended (" + mo.exit.Describe() +
                 ") without completing its call");
  }
  rec->memcheck = ToJson(mj);
  return memcheck_child;
}

// The timing layer for a candidate correct so far (MeasureTiming), skipped with --no-timing.
void TimingStage(const EvalContext& c, const ChildRequest& candidate, const StaticStage& inspected,
                 const ScratchDir& scratch, EvaluationRecord* rec, Verdict* v) {
  if (v->decided) {
    rec->performance = NotReachedLayer("the candidate is not correct");
    return;
  }
  if (!c.req.options.timing) {
    rec->performance = SkippedLayer("--no-timing");
    return;
  }
  c.Stage("timing", "the candidate against the vendor baseline, side by side");
  TimingLayer(c, candidate, inspected.sass, scratch, rec, v).Run();
}

// The verdict of a candidate that every layer so far found correct, in a line: its largest
// errors, the memory check's word, its speed against the baseline.
void DeclarePassed(const EvalContext& c, const std::vector<Trial>& trials,
                   const EvaluationRecord& rec, Verdict* v) {
  double max_abs = 0, max_rel = 0;
  for (const Trial& tr : trials)
    for (const OutputCheck& o : tr.outputs) {
      max_abs = std::max(max_abs, o.max_abs_error);
      max_rel = std::max(max_rel, o.max_rel_error);
    }
  char buf[200];
  std::snprintf(buf, sizeof buf, "correct on %d trials (max abs error %.3g, max rel error %.3g)",
                c.req.options.trials, max_abs, max_rel);
  std::string msg = buf;
  const std::string mstate = MemcheckDetailOf(rec).state;
  if (mstate == "ran")
    msg += "; memory check clean";
  else if (mstate == "timed_out")
    msg += "; memory check timed out (not certified)";
  else
    msg += "; memory check skipped";
  if (const PerformanceView perf = rec.Performance(); perf.speedup) {
    char sp[96];
    std::snprintf(sp, sizeof sp, "; %.3gx the baseline (%.3g TFLOP/s)", *perf.speedup,
                  perf.tflops.value_or(0.0));
    msg += sp;
  }
  v->Set(Status::kPassed, "", msg);
}

// The instruction layer's dynamic check (VerifyInstructions). Returns the profiled child.
ChildOutcome ProfileStage(const EvalContext& c, const ChildRequest& candidate,
                          const StaticStage& inspected, const ScratchDir& scratch,
                          EvaluationRecord* rec, Verdict* v) {
  c.Stage("profile", "one call under the profiler: which instructions ran");
  auto t = Clock::now();
  ChildOutcome profiled;
  // The counts the profile reads (executed instructions per SASS offset, thread counts with a
  // true predicate) come from code ncu patches into the candidate's kernels, counted per
  // kernel: other processes' kernels do not change them, so the profiled child holds the GPU
  // shared (never beside a timed window), and the report is read back after it lets go.
  // Without the profile the instruction layer cannot be verified, so a PASSED so far becomes
  // the harness's failure (fail closed).
  // Gated: Nsight Compute's own start-up (seconds) holds nothing; the lock is taken when the
  // profiled process reaches its first CUDA call.
  auto run = [&](const ChildRequest& pc) -> std::optional<ChildOutcome> {
    Verdict refused_here = *v;
    std::optional<ChildOutcome> o = RunGatedChild(c, pc, &refused_here);
    if (!o) SetGpuRefused(*c.gpu, v, " (the profiled call could not run)");
    return o;
  };
  VerifyInstructions(c.req, c.fresh_seed ^ kProfileSeedSalt, c.def, c.wl, candidate, inspected.sass,
                     inspected.required, scratch, rec, &profiled, {.run = run});
  rec->stage_seconds[stage_key::kProfile] = SecondsSince(t);
  return profiled;
}

// The same behaviour under every observer (CrossCheckChildren).
void CrossCheckStage(const EvalContext& c, const ScratchDir& scratch, const ChildOutcome& trials,
                     const ChildOutcome& memcheck, const ChildOutcome& profiled,
                     EvaluationRecord* rec, Verdict* v) {
  auto t = Clock::now();
  CrossCheckChildren(c.req, c.family, c.axes, c.tol, scratch, c.fresh_seed ^ kProfileSeedSalt,
                     trials, memcheck, profiled, rec, v);
  rec->stage_seconds[stage_key::kCrossCheck] = SecondsSince(t);
}

// Every string in `j` longer than `limit` bytes, cut to it (valid UTF-8, with a note of what
// was left out). Returns how many were cut.
size_t CutLongStrings(json& j, size_t limit) {
  size_t cut = 0;
  if (j.is_string()) {
    const std::string& str = j.get_ref<const std::string&>();
    if (str.size() > limit) {
      j = ValidUtf8(Truncate(str, limit)) + " [" + std::to_string(str.size() - limit) +
          " bytes left out: the record's size is capped]";
      ++cut;
    }
  } else if (j.is_array() || j.is_object()) {
    for (auto& e : j) cut += CutLongStrings(e, limit);
  }
  return cut;
}

// A record is bounded whatever the candidate printed or launched: logs and names are cut until
// the record fits kMaxRecordBytes (helpers' tails are bounded already; this is the last word).
constexpr size_t kMaxRecordBytes = 1 << 20;
void CapRecordSize(EvaluationRecord* rec) {
  json* layers[] = {&rec->build,       &rec->correctness, &rec->memcheck, &rec->instructions,
                    &rec->performance, &rec->sandbox,     &rec->toolchain};
  size_t cut = 0;
  for (size_t limit : {size_t{64} << 10, size_t{8} << 10, size_t{1} << 10, size_t{256}}) {
    if (rec->ToJson().dump().size() <= kMaxRecordBytes) break;
    for (json* l : layers) cut += CutLongStrings(*l, limit);
  }
  if (cut > 0) {
    SandboxLayer sandbox = SandboxLayerOf(*rec);
    sandbox.record_strings_cut = cut;
    rec->sandbox = ToJson(sandbox);
  }
}

// What the evaluation's hold on the GPU cost and where it was (run/gpu_lock.h), on the record.
void NoteGpuHolds(const GpuAccess& gpu, EvaluationRecord* rec) {
  rec->stage_seconds[stage_key::kGpuLockWait] = gpu.wait_seconds();
  rec->stage_seconds[stage_key::kGpuAlone] = gpu.alone_seconds();
  rec->stage_seconds[stage_key::kGpuShared] = gpu.shared_seconds();
  if (!gpu.ever_held()) return;
  SandboxLayer sandbox = SandboxLayerOf(*rec);
  sandbox.gpu_lock = gpu.path();
  rec->sandbox = ToJson(sandbox);
}

}  // namespace

EvaluationRecord Evaluate(const EvalRequest& req) {
  const auto started = Clock::now();
  EvalContext context = MakeContext(req);
  const EvalContext& c = context;
  EvaluationRecord rec = StartRecord(c);
  // Each child that runs on the GPU holds it while it runs, shared or alone (gpu_access.h).
  GpuAccess gpu(GpuLockPath(VisibleGpuId()), req.options.gpu_lock_timeout, req.stop,
                [&c](const std::string& what) { c.Stage("gpu-lock", what); });
  context.gpu = &gpu;
  Verdict v;
  auto finish = [&]() {
    gpu.Release();
    NoteGpuHolds(gpu, &rec);
    rec.status = v.status;
    rec.reason = v.reason;
    rec.message = Truncate(v.message, 4096);
    rec.stage_seconds[stage_key::kTotal] = SecondsSince(started);
    CapRecordSize(&rec);
    return rec;
  };
  // A failure the candidate's process blamed on the harness, checked by a candidate-free probe.
  auto confirm = [&](const ScratchDir& scratch) {
    if (v.decided && v.claimed_infra && gpu.Hold(GpuLock::Mode::kShared))
      ConfirmCandidateFailure(req, scratch, &rec, &v);
    gpu.Release();
  };

  const std::string source = ReadFile(req.kernel_path);
  // Which entry point the candidate declares (task/abi.h): ours, or upstream's tvm-ffi one.
  const CandidateAbi abi = DetectCandidateAbi(source);
  rec.candidate = ToJson(CandidateOf(req.kernel_path, source, abi));

  // The CPU layers: each may end the evaluation with its verdict.
  if (!ScreenStage(c, source, &rec, &v) || !AbiCanCallDefinition(c, abi, source, &v))
    return finish();
  const std::optional<BuildResult> build = BuildStage(c, source, &rec, &v);
  if (!build || !LinkCheckStage(c, build->shared_object, abi, &rec, &v)) return finish();
  ScratchDir scratch("ptxbench-eval");
  const std::optional<StaticStage> inspected =
      InspectStage(c, build->shared_object, scratch, &rec, &v);
  if (!inspected) return finish();
  const std::optional<ExpectedOutputs> expected = ReferenceStage(c, scratch, &rec, &v);
  gpu.Release();
  if (!expected) return finish();
  if (!expected->no_gpu.empty()) {
    SkipGpuLayers(expected->no_gpu, &rec, &v);
    return finish();
  }

  // The correctness layer: the trials, then the memory check.
  const std::optional<CandidateRun> ran =
      RunCandidateStage(c, build->shared_object, abi, expected->seeds, scratch, &rec, &v);
  if (!ran) return finish();
  const CandidateRun& run = *ran;
  if (const json* ng = BeforeLoading(run.outcome, "no_gpu")) {
    SkipGpuLayers(ng->value("message", ""), &rec, &v);
    return finish();
  }
  NoteCandidateSandbox(run.outcome, &rec);
  if (ArchUnavailable(c, run.outcome, &rec, &v)) return finish();
  CorrectnessDetail correctness = JudgeCandidateRun(c, run.outcome, *expected, &v);
  // "No GPU", "this arch cannot run" after the load: the candidate's process talking.
  for (const char* claim : {"no_gpu", "arch_unavailable", "object_mismatch"})
    if (run.outcome.First(claim) && !BeforeLoading(run.outcome, claim)) {
      correctness.candidate_claims.push_back(claim);
      if (!v.decided || v.status == Status::kRuntimeError) v.claimed_infra = true;
    }
  correctness.trials = CompareStage(c, run.outcome, *expected, &rec, &v);
  const std::vector<Trial>& trials = correctness.trials;
  rec.correctness = ToJson(correctness);
  confirm(scratch);
  const ChildOutcome memcheck = MemcheckStage(c, run.request, scratch, &rec, &v);
  gpu.Release();
  confirm(scratch);

  // The timing layer (its children alone on the GPU), then the instruction layer's dynamic
  // check, for a correct candidate.
  TimingStage(c, run.request, *inspected, scratch, &rec, &v);
  confirm(scratch);
  if (!v.decided) {
    DeclarePassed(c, trials, rec, &v);
    const ChildOutcome profiled = ProfileStage(c, run.request, *inspected, scratch, &rec, &v);
    // A PASSED that the cross-check could not confirm is not a verdict: fail closed.
    if (c.gpu->Hold(GpuLock::Mode::kShared))
      CrossCheckStage(c, scratch, run.outcome, memcheck, profiled, &rec, &v);
    else
      SetGpuRefused(gpu, &v, " (the cross-check of the observed calls could not run)");
  }
  return finish();
}

double PrepareBuild(const EvalRequest& req) {
  auto t = Clock::now();
  if (!req.options.use_build_cache) return 0;  // Evaluate would build again anyway
  try {
    std::string source = ReadFile(req.kernel_path);
    if (!ScreenSource(source).passed()) return SecondsSince(t);
    BuildOptions bo;
    bo.arch = req.arch;
    bo.use_cache = true;
    bo.cache_dir = (req.cache_root.empty() ? CacheRoot() : req.cache_root) + "/build";
    BuildCandidate(source, bo);
  } catch (const Error&) {
    // Evaluate meets the same problem and puts it on the record.
  }
  return SecondsSince(t);
}

std::function<void(const std::string&, const std::string&)> StageLinePrinter(std::ostream& out) {
  auto start = std::make_shared<std::optional<Clock::time_point>>();
  return [&out, start](const std::string& stage, const std::string& what) {
    if (!*start) *start = Clock::now();
    char at[32];
    std::snprintf(at, sizeof at, "[%6.1f s] ", SecondsSince(**start));
    out << at << stage << ": " << what << std::endl;  // flushed: it is progress
  };
}

std::string HumanSummary(const EvaluationRecord& r) {
  std::ostringstream s;
  s << ToString(r.status);
  if (!r.reason.empty()) s << " (" << r.reason << ")";
  s << "  " << TaskDetailOf(r).definition << " " << r.arch << "\n  " << r.message << "\n";
  if (const InstructionsView ins = r.Instructions(); !ins.verification_text.empty())
    s << "  instructions: " << ins.verification_text << " — " << ins.message << "\n";
  s << "  stages:";
  for (const auto& [k, v] : r.stage_seconds) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " %s %.2fs", k.c_str(), v);
    s << buf;
  }
  s << "\n";
  return s.str();
}

}  // namespace ptxbench
