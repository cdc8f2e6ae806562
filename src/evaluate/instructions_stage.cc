#include "evaluate/instructions_stage.h"

#include <cstdio>
#include <optional>

#include "common/strings.h"
#include "common/subprocess.h"
#include "evaluate/stage_support.h"
#include "inspect/ncu.h"
#include "record/instructions_layer.h"
#include "record/performance_layer.h"
#include "task/family.h"

namespace ptxbench::evaluation {

namespace {

// The share of the task's FLOPs that tensor-core instructions must have done for the tag.
constexpr double kMinTensorWorkFraction = 0.5;

// Where the record's verification status and message are written.
struct VerificationWriter {
  InstructionsLayer& ins;
  void operator()(Verification status, const std::string& message) const {
    ins.verification = ToString(status);
    ins.message = ValidUtf8(message);  // may quote the profiler's output
  }
};

// The checks before anything is profiled: asked for, inspected, in the SASS, ncu present.
// Returns ncu's path when the dynamic check can run; otherwise the status is set.
std::optional<std::string> ReadyToProfile(const EvalRequest& req, const StaticInspection& sass,
                                          const std::vector<std::string>& required,
                                          const VerificationWriter& set) {
  if (required.empty() || !req.options.verify) {
    set(Verification::kNotRequested, required.empty()
                                         ? "the task requires no instruction family on " + req.arch
                                         : "--verify never");
    return std::nullopt;
  }
  if (sass.state != "ran") {
    set(Verification::kProfileError, "static inspection did not run: " + sass.message);
    return std::nullopt;
  }
  auto totals = sass.Totals();
  std::vector<std::string> absent;
  for (const auto& f : required)
    if (totals[f] == 0) absent.push_back(f);
  if (!absent.empty()) {
    std::string list = Join(absent);
    set(Verification::kSassAbsent, "no " + list + " instruction in the SASS of the shared object");
    return std::nullopt;
  }
  auto ncu = FindNcu();
  if (!ncu) {
    set(Verification::kProfileError,
        "ncu (Nsight Compute) not found: the dynamic check cannot run");
    return std::nullopt;
  }
  return *ncu;
}

// What ncu saw of the profiled calls, or why there is nothing to read (the status set).
struct Profile {
  std::vector<ProfiledKernel> kernels;
  int calls = 0;
};

// The profiled child (kProfiledCalls calls on fresh seeds, under ncu inside its confinement)
// and its report read back.
std::optional<Profile> ProfileCandidate(const EvalRequest& req, uint64_t profile_seed,
                                        const ChildRequest& candidate, const std::string& ncu_path,
                                        const ScratchDir& scratch, InstructionsLayer& ins,
                                        ChildOutcome* profiled, const VerificationWriter& set,
                                        const ProfileGpuHooks& gpu) {
  // Several calls on fresh inputs (seeds no trial used), the candidate's kernels only: the
  // work fraction is their average, so a kernel that takes its tensor-core path only on a
  // process's first call earns a fraction of the credit, not all of it.
  ChildRequest pc = candidate;
  pc.name = "profile";
  json seeds = json::array();
  for (int i = 0; i < kProfiledCalls; ++i) seeds.push_back(profile_seed + static_cast<uint64_t>(i));
  pc.spec["seeds"] = seeds;
  pc.spec["write_outputs"] = true;  // compared with the reference like the trials
  // The profiler runs inside the child's confinement (its report is written in the child's
  // folder) and talks to its target over the namespace's own loopback.
  std::string report = ChildFolder(scratch.path(), pc.name) + "/profile";
  pc.wrapper = NcuCommand(ncu_path, report);
  pc.tool_roots = ToolRoots(ncu_path);
  pc.allow_inet = true;
  pc.timeout = req.options.profile_timeout;
  std::optional<ChildOutcome> ran = gpu.run ? gpu.run(pc) : RunChild(pc);
  if (!ran) {
    set(Verification::kProfileError, "the GPU was not free for the profiled call");
    return std::nullopt;
  }
  const ChildOutcome& po = *ran;
  if (profiled) *profiled = po;
  if (po.exit.kind == ExitKind::kTimedOut) {
    set(Verification::kProfileError, "the profiled call did not finish within " +
                                         std::to_string(req.options.profile_timeout.count()) +
                                         " s");
    return std::nullopt;
  }
  if (!po.First("trial")) {
    set(Verification::kProfileError, "the profiled call failed (" + po.exit.Describe() +
                                         "): " + Truncate(Trim(po.log_tail), 300));
    return std::nullopt;
  }
  CommandResult imp =
      RunCommand(NcuImportCommand(ncu_path, report + ".ncu-rep"), std::chrono::seconds(120));
  // How many launches the report holds, from its raw page: the source page may print a
  // launch's section more than once (DedupeNcuSections), and a count read twice is work
  // credited twice.
  CommandResult raw =
      RunCommand(NcuLaunchesCommand(ncu_path, report + ".ncu-rep"), std::chrono::seconds(120));
  std::string why_unreadable;
  const std::optional<std::string> source =
      DedupeNcuSections(imp.output, CountNcuLaunches(raw.output), &why_unreadable);
  if (!source) {
    set(Verification::kProfileError,
        why_unreadable + " (" + imp.exit.Describe() + "; " + raw.exit.Describe() + ")");
    return std::nullopt;
  }
  size_t bad_rows = 0;
  std::vector<ProfiledKernel> kernels = ParseNcuSourceCsv(*source, &bad_rows);
  const int calls = static_cast<int>(po.All("trial").size());
  ins.profile = ProfileRun{.tool = ncu_path,
                           .calls = calls,
                           .kernels = kernels.size(),
                           .bad_rows = bad_rows,
                           .exit = po.exit.Describe(),
                           .seed = profile_seed};
  if (calls != kProfiledCalls) {
    set(Verification::kProfileError, "the profiled process completed " + std::to_string(calls) +
                                         " of its " + std::to_string(kProfiledCalls) + " calls (" +
                                         po.exit.Describe() + ")");
    return std::nullopt;
  }
  if (kernels.empty()) {
    set(Verification::kProfileError,
        "ncu reported no kernel of the candidate (" + imp.exit.Describe() +
            "): " + Truncate(Trim(TailLines(imp.output + "\n" + po.log_tail, 6)), 400));
    return std::nullopt;
  }
  Profile p;
  p.kernels = std::move(kernels);
  p.calls = calls;
  return p;
}

// The tag: the paper's rule (upstream_arch_tag), then ours, which also asks that the tensor
// cores did the work and that the witness saw them do it.
void DecideArchTag(const EvalRequest& req, const DynamicInspection& dyn, double nominal, int calls,
                   DType element, const EvaluationRecord& rec_view, InstructionsLayer& ins,
                   const VerificationWriter& set) {
  const FamilyExecution& g = dyn.families.at("gmma");
  std::string tag = ArchTag(req.arch);
  // The paper's rule ends here (correct, in the SASS, executed with a true predicate): it
  // stays in the record as upstream_arch_tag so that published comparisons line up.
  ins.upstream_arch_tag = tag;
  // Ours asks that the tensor cores did the work: at least half of the task's FLOPs in
  // tensor-core instructions, and the out-of-process witness saw the tensor pipes busy.
  std::vector<std::string> withheld;
  const std::optional<double> frac = ins.tensor_core_work_fraction.value_or(std::nullopt);
  if (!frac)
    withheld.push_back("the tensor-core work fraction was not measured for " + req.arch);
  else if (*frac < kMinTensorWorkFraction)
    withheld.push_back("tensor-core work fraction " + FormatPercent(*frac) +
                       " of the task's FLOPs (needs " + FormatPercent(kMinTensorWorkFraction) +
                       ")");
  const std::optional<TimingWitness> witness = PerformanceLayerOf(rec_view).witness;
  const TimingWitness::Judged* judged = witness && witness->judged ? &*witness->judged : nullptr;
  if (!judged || !judged->tensor_ok) {
    const std::string why =
        witness && !witness->reason.empty()
            ? witness->reason
            : std::string(req.options.timing ? "it did not run" : "--no-timing");
    withheld.push_back(judged ? "the witness did not see the tensor pipes do the work (" +
                                    judged->message + ")"
                              : "no out-of-process witness (" + why + ")");
  }
  ins.arch_tag = withheld.empty() ? tag : "";
  ins.tag_withheld = withheld;
  std::string msg = withheld.empty()
                        ? tag + " verified:"
                        : tag + " under the paper's rule only (" + Join(withheld, "; ") + "):";
  if (g.static_count > 0) {
    char buf[64];
    // Three significant digits, so that a token wgmma shows as 0.00977%, not 0.0%.
    std::snprintf(buf, sizeof buf, " %s GMMA %.3g%% of FLOPs", ToString(element).c_str(),
                  100.0 * g.gmma_flops / (nominal * calls));
    msg += buf;
  }
  for (const auto& [name, e] : dyn.families)
    if (name != "gmma" && name != "mma_sync" && e.thread_executions_true > 0)
      msg += ", " + name + " executed " + Count(e.thread_executions_true) + " threads";
  set(Verification::kDynamicPresent, msg);
}

// The checks, the profile and the tag, into the instructions layer `ins` (`rec` is read).
void Verify(const EvalRequest& req, uint64_t profile_seed, const Definition& def,
            const Workload& wl, const ChildRequest& candidate, const StaticInspection& sass,
            const std::vector<std::string>& required, const ScratchDir& scratch,
            const EvaluationRecord& rec, InstructionsLayer& ins, ChildOutcome* profiled,
            const ProfileGpuHooks& gpu) {
  const VerificationWriter set{ins};
  const std::optional<std::string> ncu = ReadyToProfile(req, sass, required, set);
  if (!ncu) return;
  const std::optional<Profile> p =
      ProfileCandidate(req, profile_seed, candidate, *ncu, scratch, ins, profiled, set, gpu);
  if (!p) return;
  const std::vector<ProfiledKernel>& kernels = p->kernels;
  const int calls = p->calls;
  // The task's element type (its first input's): only GMMA on it counts as its work.
  const DType element = FindFamily(def.family)->Tensors(def.FullAxes(wl)).front().dtype;
  DynamicInspection dyn = JoinProfile(kernels, sass.functions, element);
  ins.dynamic = dyn.ToJson();
  std::vector<std::string> not_run;
  for (const auto& f : required)
    if (dyn.families[f].thread_executions_true <= 0) not_run.push_back(f);
  double nominal = def.Flops(wl);
  const FamilyExecution& g = dyn.families["gmma"];
  // Only GMMA on the task's type counts (ncu.cc JoinProfile), averaged over the calls.
  ins.tensor_core_work_fraction = g.static_count > 0 && nominal > 0
                                      ? NullableField<double>(g.gmma_flops / (nominal * calls))
                                      : WrittenNull<double>();
  if (!not_run.empty()) {
    std::string list = Join(not_run);
    set(Verification::kDynamicNotExecuted,
        list + " is in the SASS but never executed with a true predicate");
    return;
  }
  DecideArchTag(req, dyn, nominal, calls, element, rec, ins, set);
}

}  // namespace

// The second layer: did the architecture's own instructions do the work? Runs only for a
// correct candidate. Sets rec->instructions' verification status, tag and evidence.
void VerifyInstructions(const EvalRequest& req, uint64_t profile_seed, const Definition& def,
                        const Workload& wl, const ChildRequest& candidate,
                        const StaticInspection& sass, const std::vector<std::string>& required,
                        const ScratchDir& scratch, EvaluationRecord* rec, ChildOutcome* profiled,
                        const ProfileGpuHooks& gpu) {
  InstructionsLayer ins = InstructionsLayerOf(*rec);
  Verify(req, profile_seed, def, wl, candidate, sass, required, scratch, *rec, ins, profiled, gpu);
  rec->instructions = ToJson(ins);
}

}  // namespace ptxbench::evaluation
