#include "evaluate/evaluate.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "build/elf.h"
#include "build/nvcc.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/files.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "compare/compare.h"
#include "evaluate/timing_judge.h"
#include "inspect/ncu.h"
#include "inspect/sass.h"
#include "run/children.h"
#include "run/reference_cache.h"
#include "screen/screen.h"
#include "task/family.h"

namespace ptxbench {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// A read-only view of a whole file, for outputs far larger than we want to copy.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw InternalError("cannot open " + path);
    size_ = static_cast<size_t>(::lseek(fd, 0, SEEK_END));
    if (size_ > 0) {
      data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (data_ == MAP_FAILED) {
        ::close(fd);
        throw InternalError("cannot map " + path);
      }
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_ && data_ != MAP_FAILED) ::munmap(data_, size_);
  }
  const void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

// One output tensor of the candidate (a file its child wrote) against the reference's fp32
// file. The child names the file; it must lie in this evaluation's scratch folder.
OutputComparison CompareOutputFile(const TensorSpec& spec, const std::string& expected_file,
                                   const std::string& file, const ScratchDir& scratch,
                                   const Tolerance& tol) {
  if (file.rfind(scratch.path() + "/", 0) != 0)
    throw InternalError("candidate child named an output outside its folder: " + file);
  MappedFile exp(expected_file);
  MappedFile got(file);
  size_t n = static_cast<size_t>(spec.Elements());
  if (got.size() != spec.Bytes() || exp.size() != n * sizeof(float))
    throw InternalError("output file sizes do not match the tensor " + spec.name);
  OutputComparison c = spec.dtype == DType::kBF16
                           ? CompareBf16(static_cast<const uint16_t*>(got.data()),
                                         static_cast<const float*>(exp.data()), n, tol)
                           : CompareF32(static_cast<const float*>(got.data()),
                                        static_cast<const float*>(exp.data()), n, tol);
  c.name = spec.name;
  return c;
}

// What the evaluation has established so far; the first failure wins, except where a later
// layer explains an earlier symptom better (the memory check over a wrong answer).
struct Verdict {
  Status status = Status::kPassed;
  std::string reason;
  std::string message;
  bool decided = false;
  void Set(Status s, std::string r, std::string m) {
    status = s;
    reason = std::move(r);
    message = std::move(m);
    decided = true;
  }
};

std::string TrialName(const json& m) {
  return m.contains("seed") ? " (seed " + std::to_string(m["seed"].get<uint64_t>()) + ")" : "";
}

// Reads what the candidate child told us into a verdict for its run; leaves `v` undecided
// when it finished every trial. A harness failure before the candidate was called is
// INFRA_ERROR; anything after the call started is the candidate's.
void JudgeCandidateChild(const ChildOutcome& c, const std::chrono::seconds timeout, Verdict* v) {
  bool called = c.First("call_started") != nullptr;
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
    } else if (stage == "harness" && !called) {
      v->Set(Status::kInfraError, "", "the candidate child failed before the call: " + msg);
    } else {
      v->Set(Status::kRuntimeError, "", msg + during);
    }
    return;
  }
  if (const json* r = c.First("refused")) {
    v->Set(Status::kRuntimeError, "",
           "run returned " + std::to_string(r->value("rc", 0)) + " (non-zero: refused the shape)" +
               TrialName(*r) +
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

// The GPU a child reported, into the record's toolchain.
void NoteDevice(const ChildOutcome& child, EvaluationRecord* rec) {
  if (const json* d = child.First("device")) {
    rec->toolchain["gpu"] = *d;
    rec->toolchain["gpu"].erase("event");
  }
}

std::string ArchTag(const std::string& arch) {
  if (StartsWith(arch, "sm_90")) return "H";
  if (StartsWith(arch, "sm_100")) return "B";
  return "";
}

std::string Count(double v) { return HumanCount(v); }

// The second layer: did the architecture's own instructions do the work? Runs only for a
// correct candidate. Sets rec->instructions' verification status, tag and evidence.
void VerifyInstructions(const EvalRequest& req, uint64_t profile_seed, const Definition& def,
                        const Workload& wl, const ChildRequest& candidate,
                        const StaticInspection& sass, const std::vector<std::string>& required,
                        const ScratchDir& scratch, EvaluationRecord* rec) {
  json& ins = rec->instructions;
  auto set = [&](const std::string& status, const std::string& message) {
    ins["verification"] = status;
    ins["message"] = message;
  };
  if (required.empty() || !req.verify) {
    set("not_requested", required.empty() ? "the task requires no instruction family on " + req.arch
                                          : "--verify never");
    return;
  }
  if (sass.state != "ran") {
    set("profile_error", "static inspection did not run: " + sass.message);
    return;
  }
  auto totals = sass.Totals();
  std::vector<std::string> absent;
  for (const auto& f : required)
    if (totals[f] == 0) absent.push_back(f);
  if (!absent.empty()) {
    std::string list = Join(absent);
    set("sass_absent", "no " + list + " instruction in the SASS of the shared object");
    return;
  }
  auto ncu = FindNcu();
  if (!ncu) {
    set("profile_error", "ncu (Nsight Compute) not found: the dynamic check cannot run");
    return;
  }
  // One call on fresh inputs (a seed no trial used), the candidate's kernels only.
  ChildRequest pc = candidate;
  pc.name = "profile";
  pc.spec["seeds"] = json::array({profile_seed});
  pc.spec["write_outputs"] = false;
  std::string report = scratch.File("profile");
  pc.wrapper = NcuCommand(*ncu, report);
  pc.timeout = req.profile_timeout;
  ChildOutcome po = RunChild(pc);
  if (po.exit.kind == ExitKind::kTimedOut) {
    set("profile_error", "the profiled call did not finish within " +
                             std::to_string(req.profile_timeout.count()) + " s");
    return;
  }
  if (!po.First("trial")) {
    set("profile_error", "the profiled call failed (" + po.exit.Describe() +
                             "): " + Truncate(Trim(po.log_tail), 300));
    return;
  }
  CommandResult imp =
      RunCommand(NcuImportCommand(*ncu, report + ".ncu-rep"), std::chrono::seconds(120));
  size_t bad_rows = 0;
  std::vector<ProfiledKernel> kernels = ParseNcuSourceCsv(imp.output, &bad_rows);
  ins["profile"] = {{"tool", *ncu},
                    {"kernels", kernels.size()},
                    {"bad_rows", bad_rows},
                    {"exit", po.exit.Describe()},
                    {"seed", profile_seed}};
  if (kernels.empty()) {
    set("profile_error", "ncu reported no kernel of the candidate (" + imp.exit.Describe() + "): " +
                             Truncate(Trim(TailLines(imp.output + "\n" + po.log_tail, 6)), 400));
    return;
  }
  DynamicInspection dyn = JoinProfile(kernels, sass.functions);
  ins["dynamic"] = dyn.ToJson();
  std::vector<std::string> not_run;
  for (const auto& f : required)
    if (dyn.families[f].thread_executions_true <= 0) not_run.push_back(f);
  double nominal = def.Flops(wl);
  const FamilyExecution& g = dyn.families["gmma"];
  ins["tensor_core_work_fraction"] =
      g.static_count > 0 && nominal > 0 ? json(g.gmma_flops / nominal) : json(nullptr);
  if (!not_run.empty()) {
    std::string list = Join(not_run);
    set("dynamic_not_executed", list + " is in the SASS but never executed with a true predicate");
    return;
  }
  std::string tag = ArchTag(req.arch);
  ins["arch_tag"] = tag;
  std::string msg = tag + " verified:";
  if (g.static_count > 0) {
    char buf[64];
    // Three significant digits, so that a token wgmma shows as 0.00977%, not 0.0%.
    std::snprintf(buf, sizeof buf, " GMMA %.3g%% of FLOPs", 100.0 * g.gmma_flops / nominal);
    msg += buf;
  }
  for (const auto& [name, e] : dyn.families)
    if (name != "gmma" && name != "mma_sync" && e.thread_executions_true > 0)
      msg += ", " + name + " executed " + Count(e.thread_executions_true) + " threads";
  set("dynamic_present", msg);
}

// A reference child for `seeds`, its expected outputs written to `out_dir`.
ChildOutcome RunReferenceChild(const EvalRequest& req, const Family& family, const Axes& axes,
                               const std::vector<uint64_t>& seeds, const std::string& out_dir,
                               const ScratchDir& scratch, const std::string& name,
                               const std::vector<uint64_t>& set_seeds = {}) {
  ChildRequest cr;
  cr.spec = {{"role", "reference"},
             {"family", family.Name()},
             {"axes", axes},
             {"seeds", seeds},
             {"out_dir", out_dir}};
  if (!set_seeds.empty()) cr.spec["set_seeds"] = set_seeds;
  cr.work_dir = scratch.path();
  cr.name = name;
  cr.timeout = req.reference_timeout;
  cr.executable = req.executable;
  return RunChild(cr);
}

// Why a reference child did not deliver: its error, else how it ended.
std::string ReferenceFailure(const ChildOutcome& ro) {
  return ro.First("error") ? ro.First("error")->value("message", "")
                           : "reference child " + ro.exit.Describe();
}

// Derive the memory check's and the profiled call's seeds from the evaluation's fresh seed.
constexpr uint64_t kMemcheckSeedSalt = 0x6d656d636865636bull;
constexpr uint64_t kProfileSeedSalt = 0x70726f66696c65ull;
constexpr uint64_t kSetSeedSalt = 0x73657462617365ull;

// Timed calls checked again at random, on top of the last call on each buffer set.
constexpr int kRandomChecks = 2;

// The bf16 dense peak of a GPU, measured once (by the timing child) and cached per device.
std::string PeakCachePath(const std::string& cache_root, const json& gpu) {
  return cache_root + "/peak/" + gpu.value("uuid", "unknown") + ".json";
}

std::optional<double> CachedPeak(const std::string& path, const json& gpu) {
  try {
    json p = json::parse(ReadFile(path));
    if (p.value("driver_version", -1) != gpu.value("driver_version", -2)) return std::nullopt;
    return p.at("flops_per_second").get<double>();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The third layer: GPU time of the candidate and of the vendor baseline, side by side in one
// child, with the defenses of DESIGN.md section 6 and the re-validation of timed outputs.
// Runs only for a candidate that is correct so far; may decide the verdict.
void MeasureTiming(const EvalRequest& req, uint64_t seed_base, const Definition& def,
                   const Workload& wl, const Family& family, const Axes& axes,
                   const ChildRequest& candidate, const StaticInspection& sass,
                   const ScratchDir& scratch, const Tolerance& tol, const std::string& cache_root,
                   EvaluationRecord* rec, Verdict* v) {
  // How many calls: the requested ones, fewer when the trials say they would take longer
  // than the budget (a CUDA-core attention kernel at the headline takes 0.4 s a call).
  double est_call_s = 0;
  for (const auto& tr : rec->correctness.value("trial_results", json::array()))
    if (double c = tr.value("call_seconds", 0.0); c > 0 && (est_call_s == 0 || c < est_call_s))
      est_call_s = c;
  TimedCallPlan plan = PlanTimedCalls(req.warmup, req.iterations, est_call_s, req.timing_budget_s);
  const int warmup = plan.warmup, iterations = plan.iterations;
  // Fresh, unpredictable inputs for every timed call: a kernel that recognises the trial
  // inputs (the default seeds are public) or caches results by content gains nothing.
  int total = warmup + iterations;
  int sets = std::max(1, std::min(req.buffer_sets, total));
  // Checked again: the last call on each buffer set, and a few timed calls drawn at random
  // (a candidate that counts its calls and skips work on the unchecked ones is caught with
  // probability 1 − (1 − skipped share)^checks).
  std::set<int> check_calls;
  for (int i = total - sets; i < total; ++i) check_calls.insert(i);
  std::mt19937_64 pick(seed_base ^ 0x636865636bull);
  int candidates = total - sets - warmup;
  for (int added = 0; added < std::min(kRandomChecks, candidates);)
    added +=
        check_calls.insert(warmup + static_cast<int>(pick() % static_cast<uint64_t>(candidates)))
            .second;
  // A family that derives its timed inputs from a base per buffer set (mha_bwd) gets the
  // bases' seeds from here too, so that the reference can rebuild them.
  const uint64_t set_seed_base = seed_base ^ kSetSeedSalt;

  const json& gpu = rec->toolchain.value("gpu", json::object());
  std::string peak_path = PeakCachePath(cache_root, gpu);
  std::optional<double> peak = CachedPeak(peak_path, gpu);

  auto t = Clock::now();
  ChildRequest tc = candidate;
  tc.name = "timing";
  tc.spec = {{"role", "timing"},
             {"family", family.Name()},
             {"axes", axes},
             {"shared_object", candidate.spec.at("shared_object")},
             {"out_dir", scratch.path()},
             {"warmup", warmup},
             {"iterations", iterations},
             {"buffer_sets", sets},
             {"seed_base", seed_base},
             {"set_seed_base", set_seed_base},
             {"check_calls", check_calls},
             {"baseline", true},
             {"peak_n", peak ? 0 : kPeakGemmSize},
             {"pci_bus_id", gpu.value("pci_bus_id", "")}};
  tc.timeout = req.timing_timeout;
  ChildOutcome to = RunChild(tc);
  rec->stage_seconds["timing"] = SecondsSince(t);

  TimingContext ctx;
  ctx.flops = def.Flops(wl);
  ctx.peak_flops = peak;
  ctx.allowed_known = sass.state == "ran";
  for (const auto& f : sass.functions) ctx.allowed_kernels.push_back(f.mangled);
  ctx.drift_threshold = req.drift_threshold;
  ctx.timeout = req.timing_timeout;
  ctx.warmup = warmup;
  ctx.iterations = iterations;
  TimingJudgement j = JudgeTiming(to.messages, to.exit, ctx);
  rec->performance = j.performance;
  rec->performance["timing_seed_base"] = seed_base;
  if (rec->performance.contains("protocol")) rec->performance["protocol"]["plan"] = ToJson(plan);
  if (!to.garbage.empty()) rec->performance["channel_garbage_lines"] = to.garbage.size();
  if (j.verdict) {  // never PASSED: the judge only ever finds fault
    rec->performance["child_log_tail"] = to.log_tail;
    v->Set(j.verdict->status, j.verdict->reason, j.verdict->message);
  }
  if (j.peak_measured) {
    json p = {{"flops_per_second", *j.peak_measured},
              {"gpu", gpu.value("name", "")},
              {"uuid", gpu.value("uuid", "")},
              {"driver_version", gpu.value("driver_version", 0)},
              {"shape", j.peak_detail.value("n", 0)},
              {"library", j.peak_detail.value("baseline", json())},
              {"measured_at", NowUtcIso8601()}};
    MakeDirs(cache_root + "/peak");
    WriteFileAtomic(peak_path, p.dump(2) + "\n");
    rec->performance["peak_source"] = "measured now (cached in " + peak_path + ")";
  } else if (peak) {
    rec->performance["peak_source"] = "cached: " + peak_path;
  }

  // --- the outputs of the re-checked timed calls, against a reference for their inputs ---
  // Computed now, after the timing child, with the GPU to itself. The seeds are the parent's
  // own (seed_base + call index), never the child's word; only the buffer set comes from
  // the child, and only a set that was asked for is believed.
  std::vector<uint64_t> check_seeds, check_set_seeds;
  for (const TimedOutput& o : j.outputs) {
    if (!check_calls.count(o.index) || o.seed != seed_base + o.index || o.set < 0 || o.set >= sets)
      continue;
    check_seeds.push_back(o.seed);
    check_set_seeds.push_back(set_seed_base + static_cast<uint64_t>(o.set));
  }
  if (!family.DerivesTimedInputs()) check_set_seeds.clear();
  std::map<uint64_t, ReferenceEntry> refs;
  if (!check_seeds.empty()) {
    t = Clock::now();
    std::string ref_dir = scratch.File("timing-reference");
    MakeDirs(ref_dir);
    ChildOutcome ro = RunReferenceChild(req, family, axes, check_seeds, ref_dir, scratch,
                                        "timing-reference", check_set_seeds);
    for (const json* m : ro.All("reference")) {
      ReferenceEntry e;
      e.seed = m->at("seed");
      e.input_checksums = m->at("input_checksums").get<std::vector<uint64_t>>();
      for (const auto& o : m->at("outputs")) e.output_files.push_back(o.at("file"));
      refs[e.seed] = e;
    }
    rec->stage_seconds["timing_reference"] = SecondsSince(t);
    if (refs.size() != check_seeds.size() && !v->decided) {
      v->Set(Status::kInfraError, "",
             "the reference for the timed calls failed: " + ReferenceFailure(ro));
      rec->performance["revalidation"] = {{"state", "not_reached"},
                                          {"reason", "the reference for the timed calls failed"}};
      return;
    }
  }
  t = Clock::now();
  json checks = json::array();
  auto tensors = family.Tensors(axes);
  for (const TimedOutput& o : j.outputs) {
    auto it = refs.find(o.seed);
    if (it == refs.end()) continue;  // not a call we asked for: ignore, never trust
    json cj = {{"call", o.index}, {"set", o.set}, {"seed", o.seed}};
    size_t k = 0;
    for (const auto& spec : tensors) {
      if (spec.role != TensorRole::kOutput) continue;
      OutputComparison c =
          CompareOutputFile(spec, it->second.output_files.at(k), o.files.at(k), scratch, tol);
      long long cols = spec.shape.size() >= 2 ? spec.shape.back() : 0;
      cj[spec.name] = {{"verdict", ToString(c.verdict)},
                       {"max_abs_error", c.max_abs_error},
                       {"mismatched", c.mismatched}};
      if (c.verdict != CompareVerdict::kMatch && !v->decided)
        v->Set(Status::kRuleViolation, "call_history",
               "correct on the trials, but wrong on timed call " + std::to_string(o.index) +
                   " (buffer set " + std::to_string(o.set) +
                   ", fresh inputs): " + Describe(c, cols));
      ++k;
    }
    checks.push_back(cj);
  }
  rec->performance["revalidation"] = {{"state", j.outputs.empty() ? "not_reached" : "ran"},
                                      {"calls", checks}};
  if (!v->decided && !j.verdict && checks.size() != check_calls.size() &&
      rec->performance.value("state", "") == "ran")
    v->Set(Status::kInfraError, "",
           "the timing child returned " + std::to_string(checks.size()) + " of " +
               std::to_string(check_calls.size()) + " outputs to re-check");
  rec->stage_seconds["timing_revalidate"] = SecondsSince(t);
}

}  // namespace

EvaluationRecord Evaluate(const EvalRequest& req) {
  auto t_total = Clock::now();
  const Definition& def = *req.definition;
  const Workload& wl = *req.workload;
  const Family& family = *FindFamily(def.family);
  Axes axes = def.FullAxes(wl);
  Tolerance tol = def.tolerance;
  if (req.tolerance_rule) tol.rule = *req.tolerance_rule;
  std::string cache_root = req.cache_root.empty() ? CacheRoot() : req.cache_root;

  // Inputs no candidate can know in advance, for every call that is not one of the
  // reproducible trials: the memory check, the profiled call and the timed calls. (The trial
  // seeds are public; a kernel that recognises their inputs must still face these.)
  uint64_t fresh_seed = req.timing_seed ? *req.timing_seed
                                        : (static_cast<uint64_t>(std::random_device{}()) << 32) ^
                                              std::random_device{}();
  EvaluationRecord rec;
  rec.created_at = NowUtcIso8601();
  rec.ptxbench_version = PTXBENCH_VERSION;
  rec.arch = req.arch;
  rec.task = {{"definition", def.name},
              {"family", def.family},
              {"workload_id", wl.id},
              {"axes", axes},
              {"flops", def.Flops(wl)},
              {"required_families", def.required_families.count(req.arch)
                                        ? json(def.required_families.at(req.arch))
                                        : json::array()}};
  rec.performance = NotReachedLayer("an earlier stage failed");
  rec.correctness = NotReachedLayer("an earlier stage failed");
  rec.memcheck = NotReachedLayer("an earlier stage failed");
  Verdict v;
  auto finish = [&]() {
    rec.status = v.status;
    rec.reason = v.reason;
    rec.message = v.message;
    rec.stage_seconds["total"] = SecondsSince(t_total);
    return rec;
  };

  // --- the candidate file ---
  std::string source = ReadFile(req.kernel_path);
  rec.candidate = {
      {"path", req.kernel_path}, {"sha256", Sha256Hex(source)}, {"bytes", source.size()}};

  // --- screen ---
  auto t = Clock::now();
  ScreenResult screen = ScreenSource(source);
  rec.screening = ToJson(screen);
  rec.stage_seconds["screen"] = SecondsSince(t);
  if (!screen.passed()) {
    v.Set(Status::kRejected, "", screen.message());
    return finish();
  }

  // --- build ---
  t = Clock::now();
  BuildResult build;
  try {
    BuildOptions bo;
    bo.arch = req.arch;
    bo.use_cache = req.use_build_cache;
    bo.cache_dir = cache_root + "/build";
    build = BuildCandidate(source, bo);
  } catch (const Error& e) {
    rec.stage_seconds["build"] = SecondsSince(t);
    if (e.kind() == ErrorKind::kUsage) throw;
    v.Set(Status::kInfraError, "", std::string("cannot build: ") + e.what());
    return finish();
  }
  rec.stage_seconds["build"] = SecondsSince(t);
  rec.build = ToJson(build);
  rec.toolchain["nvcc"] = build.nvcc_version;
  if (build.outcome != BuildOutcome::kBuilt) {
    std::string first =
        SplitLines(build.errors).empty() ? "nvcc failed" : SplitLines(build.errors)[0];
    v.Set(Status::kCompileError, "", Truncate(first, 300));
    return finish();
  }

  // --- link check: what the shared object needs and exports ---
  try {
    ElfInfo elf = ReadElfInfo(build.shared_object);
    rec.build["needed"] = elf.needed;
    std::vector<std::string> forbidden = ForbiddenDependencies(elf);
    if (!forbidden.empty()) {
      std::string list = Join(forbidden);
      v.Set(Status::kRuleViolation, "forbidden_library",
            "the shared object depends on " + list +
                " (only the CUDA runtime/driver and the C/C++ runtime are allowed)");
      return finish();
    }
    if (!ExportsFunction(elf, "run")) {
      v.Set(Status::kCompileError, "",
            "the shared object does not export `" + family.Signature() + "`");
      return finish();
    }
  } catch (const Error& e) {
    v.Set(Status::kInfraError, "", std::string("cannot inspect the shared object: ") + e.what());
    return finish();
  }

  // --- static inspection of the very object that will run ---
  ScratchDir scratch("ptxbench-eval");
  t = Clock::now();
  StaticInspection sass = InspectSharedObject(build.shared_object, scratch.path());
  rec.stage_seconds["inspect"] = SecondsSince(t);
  std::vector<std::string> required = def.required_families.count(req.arch)
                                          ? def.required_families.at(req.arch)
                                          : std::vector<std::string>{};
  // The harness's own kernels are named ptxbench_*, and the memory checker and the profiler
  // leave them out; a candidate kernel by such a name would slip past both.
  for (const auto& f : sass.functions)
    if (f.mangled.find("ptxbench_") != std::string::npos) {
      rec.instructions = {{"static", sass.ToJson()}};
      v.Set(Status::kRejected, "",
            "kernel " + f.demangled + " uses the prefix ptxbench_, reserved for the harness");
      return finish();
    }
  rec.instructions = {{"static", sass.ToJson()},
                      {"required_families", required},
                      {"verification", "not_correct"},
                      {"arch_tag", nullptr},
                      {"message", "the candidate is not correct"}};

  // --- reference (cached) ---
  std::vector<uint64_t> seeds;
  for (int i = 0; i < req.trials; ++i) seeds.push_back(req.seed + static_cast<uint64_t>(i));
  ReferenceCache refs(cache_root + "/reference");
  std::vector<ReferenceEntry> expected(seeds.size());
  std::vector<uint64_t> missing;
  for (size_t i = 0; i < seeds.size(); ++i) {
    auto hit = req.use_reference_cache ? refs.Lookup(family, axes, seeds[i]) : std::nullopt;
    if (hit)
      expected[i] = *hit;
    else
      missing.push_back(seeds[i]);
  }
  json ref_info = {{"cached_trials", seeds.size() - missing.size()},
                   {"computed_trials", missing.size()},
                   {"version", family.ReferenceVersion()}};
  std::string no_gpu;
  t = Clock::now();
  if (!missing.empty()) {
    ChildOutcome ro =
        RunReferenceChild(req, family, axes, missing, scratch.path(), scratch, "reference");
    NoteDevice(ro, &rec);
    if (const json* ng = ro.First("no_gpu")) {
      no_gpu = ng->value("message", "");
    } else {
      auto done = ro.All("reference");
      if (done.size() != missing.size() || !ro.First("done")) {
        v.Set(Status::kInfraError, "", "the reference failed: " + ReferenceFailure(ro));
        rec.stage_seconds["reference"] = SecondsSince(t);
        return finish();
      }
      for (const json* m : done) {
        uint64_t seed = m->at("seed");
        std::vector<std::string> files;
        for (const auto& o : m->at("outputs")) files.push_back(o.at("file"));
        ReferenceEntry e = refs.Store(family, axes, seed, m->at("input_checksums"), files);
        for (size_t i = 0; i < seeds.size(); ++i)
          if (seeds[i] == seed) expected[i] = e;
      }
    }
  }
  rec.stage_seconds["reference"] = SecondsSince(t);
  auto skip_gpu_layers = [&](const std::string& message) {
    std::string why = "no GPU (" + message + ")";
    rec.correctness = SkippedLayer(why);
    rec.memcheck = SkippedLayer(why);
    rec.instructions["message"] =
        "correctness was not established (" + why + "): static inspection only, no tag";
    v.Set(Status::kInfraError, "no_gpu",
          "screening and build passed; the GPU layers were skipped: " + why);
    return finish();
  };
  if (!no_gpu.empty()) return skip_gpu_layers(no_gpu);

  // --- run the candidate ---
  t = Clock::now();
  ChildRequest cc;
  cc.spec = {
      {"role", "candidate"}, {"family", family.Name()},   {"axes", axes},
      {"seeds", seeds},      {"out_dir", scratch.path()}, {"shared_object", build.shared_object}};
  cc.work_dir = scratch.path();
  cc.name = "candidate";
  cc.timeout = req.timeout;
  cc.executable = req.executable;
  ChildOutcome co = RunChild(cc);
  rec.stage_seconds["run"] = SecondsSince(t);
  NoteDevice(co, &rec);
  if (const json* ng = co.First("no_gpu")) return skip_gpu_layers(ng->value("message", ""));
  JudgeCandidateChild(co, req.timeout, &v);
  json correctness = {
      {"state", "ran"},
      {"trials", req.trials},
      {"seeds", seeds},
      {"tolerance", {{"rule", ToString(tol.rule)}, {"atol", tol.atol}, {"rtol", tol.rtol}}},
      {"reference", ref_info},
      {"child_exit", co.exit.Describe()},
      {"child_log_tail", co.log_tail}};
  if (!co.garbage.empty()) correctness["channel_garbage_lines"] = co.garbage.size();

  // A vendor library the candidate loaded at run time (behind the screen and the link
  // check): the child compares the loaded objects before the candidate and after its calls.
  if (const json* libs = co.Last("libraries")) {
    auto found = libs->value("new_vendor_libraries", std::vector<std::string>{});
    correctness["new_vendor_libraries"] = found;
    if (!found.empty() && (!v.decided || v.status == Status::kIncorrect))
      v.Set(Status::kRuleViolation, "forbidden_library",
            "the candidate loaded " + Join(found) + " at run time");
  }

  // --- compare, trial by trial ---
  t = Clock::now();
  json trials = json::array();
  auto family_tensors = family.Tensors(axes);
  for (const json* m : co.All("trial")) {
    uint64_t seed = m->at("seed");
    size_t idx = 0;
    while (idx < seeds.size() && seeds[idx] != seed) ++idx;
    if (idx == seeds.size()) continue;  // not a seed we asked for: ignore, never trust
    json tj = {{"seed", seed},
               {"seconds", m->value("seconds", 0.0)},
               {"call_seconds", m->value("call_seconds", 0.0)}};
    auto before = m->at("input_checksums_before").get<std::vector<uint64_t>>();
    auto after = m->at("input_checksums_after").get<std::vector<uint64_t>>();
    tj["inputs_unchanged"] = before == after;
    if (before != expected[idx].input_checksums && !v.decided)
      v.Set(Status::kInfraError, "",
            "the candidate child's inputs differ from the reference's for seed " +
                std::to_string(seed));
    if (before != after && !v.decided)
      v.Set(Status::kRuleViolation, "inputs_modified",
            "the candidate modified its inputs" + TrialName(*m) +
                " (checksums before and after differ)");
    json outputs = json::array();
    size_t k = 0;
    for (const auto& spec : family_tensors) {
      if (spec.role != TensorRole::kOutput) continue;
      OutputComparison c = CompareOutputFile(spec, expected[idx].output_files.at(k),
                                             m->at("outputs").at(k).at("file"), scratch, tol);
      json cj = ToJson(c);
      long long cols = spec.shape.size() >= 2 ? spec.shape.back() : 0;
      cj["summary"] = Describe(c, cols);
      outputs.push_back(cj);
      if (c.verdict != CompareVerdict::kMatch && !v.decided)
        v.Set(Status::kIncorrect, ToString(c.verdict), Describe(c, cols) + TrialName(*m));
      ++k;
    }
    tj["outputs"] = outputs;
    trials.push_back(tj);
  }
  correctness["trial_results"] = trials;
  rec.stage_seconds["compare"] = SecondsSince(t);
  if (!v.decided && trials.size() != seeds.size())
    v.Set(Status::kInfraError, "",
          "the candidate child reported " + std::to_string(trials.size()) + " of " +
              std::to_string(seeds.size()) + " trials");
  rec.correctness = correctness;

  // --- memory check ---
  bool run_failed =
      v.decided && (v.status == Status::kRuntimeError || v.status == Status::kTimeout);
  bool want = req.sanitize == SanitizeMode::kAlways ||
              (req.sanitize == SanitizeMode::kOnFailure && v.decided) || run_failed;
  if (v.decided && v.status == Status::kInfraError) want = false;
  if (!want) {
    rec.memcheck = SkippedLayer("--sanitize " + ToString(req.sanitize));
  } else if (auto sanitizer = FindComputeSanitizer(); !sanitizer) {
    rec.memcheck = SkippedLayer("compute-sanitizer not found");
    if (req.sanitize == SanitizeMode::kAlways && !v.decided)
      v.Set(Status::kInfraError, "",
            "the memory check is required (--sanitize always) but compute-sanitizer was not "
            "found; --sanitize never skips it");
  } else {
    t = Clock::now();
    ChildRequest mc = cc;
    mc.name = "memcheck";
    mc.spec["seeds"] = json::array({fresh_seed ^ kMemcheckSeedSalt});
    mc.spec["write_outputs"] = false;
    std::string log = scratch.File("memcheck.txt");
    mc.wrapper = MemcheckCommand(*sanitizer, log);
    // A hang hangs again under the checker: give it the run's deadline, not its own.
    mc.timeout = v.status == Status::kTimeout ? req.timeout : req.memcheck_timeout;
    ChildOutcome mo = RunChild(mc);
    rec.stage_seconds["memcheck"] = SecondsSince(t);
    std::string text;
    try {
      text = ReadFile(log);
    } catch (const Error&) {
    }
    MemcheckReport report = ParseMemcheckLog(text);
    json mj = {{"state", "ran"},
               {"exit", mo.exit.Describe()},
               {"error_count", report.error_count},
               {"summary_seen", report.summary_seen},
               {"mode", ToString(req.sanitize)},
               {"seed", fresh_seed ^ kMemcheckSeedSalt}};
    json errs = json::array();
    for (const auto& e : report.errors)
      errs.push_back({{"kind", e.kind},
                      {"location", e.location},
                      {"thread", e.thread},
                      {"address", e.address},
                      {"summary", e.Summary()}});
    mj["errors"] = errs;
    if (mo.exit.kind == ExitKind::kTimedOut) mj["state"] = "timed_out";
    if (report.error_count > 0 || !report.errors.empty()) {
      std::string first =
          report.errors.empty() ? "memcheck reported errors" : report.errors[0].Summary();
      mj["first_error"] = first;
      if (!run_failed)
        v.Set(Status::kMemoryError, "",
              Truncate(first, 400) + " (" + std::to_string(report.error_count) + " errors in all)");
    } else if (!report.summary_seen && mo.exit.kind != ExitKind::kTimedOut && !run_failed) {
      // The checker itself failed: we cannot claim the run was clean.
      mj["state"] = "failed";
      mj["log_tail"] = TailLines(text + "\n" + mo.log_tail, 20);
      if (!v.decided)
        v.Set(Status::kInfraError, "",
              "compute-sanitizer did not produce a report (" + mo.exit.Describe() + ")");
    }
    rec.memcheck = mj;
  }

  if (!v.decided) {
    if (req.timing) {
      MeasureTiming(req, fresh_seed, def, wl, family, axes, cc, sass, scratch, tol, cache_root,
                    &rec, &v);
    } else {
      rec.performance = SkippedLayer("--no-timing");
    }
  } else {
    rec.performance = NotReachedLayer("the candidate is not correct");
  }
  if (!v.decided) {
    double max_abs = 0, max_rel = 0;
    for (const auto& tr : trials)
      for (const auto& o : tr["outputs"]) {
        max_abs = std::max(max_abs, o["max_abs_error"].get<double>());
        max_rel = std::max(max_rel, o["max_rel_error"].get<double>());
      }
    char buf[200];
    std::snprintf(buf, sizeof buf, "correct on %d trials (max abs error %.3g, max rel error %.3g)",
                  req.trials, max_abs, max_rel);
    std::string msg = buf;
    std::string mstate = rec.memcheck.value("state", "");
    if (mstate == "ran")
      msg += "; memory check clean";
    else if (mstate == "timed_out")
      msg += "; memory check timed out (not certified)";
    else
      msg += "; memory check skipped";
    if (rec.performance.contains("speedup")) {
      char sp[96];
      std::snprintf(sp, sizeof sp, "; %.3gx the baseline (%.3g TFLOP/s)",
                    rec.performance["speedup"].get<double>(), rec.performance.value("tflops", 0.0));
      msg += sp;
    }
    v.Set(Status::kPassed, "", msg);
    t = Clock::now();
    VerifyInstructions(req, fresh_seed ^ kProfileSeedSalt, def, wl, cc, sass, required, scratch,
                       &rec);
    rec.stage_seconds["profile"] = SecondsSince(t);
  }
  return finish();
}

double PrepareBuild(const EvalRequest& req) {
  auto t = Clock::now();
  if (!req.use_build_cache) return 0;  // Evaluate would build again anyway
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

std::string HumanSummary(const EvaluationRecord& r) {
  std::ostringstream s;
  s << ToString(r.status);
  if (!r.reason.empty()) s << " (" << r.reason << ")";
  s << "  " << r.task.value("definition", "") << " " << r.arch << "\n  " << r.message << "\n";
  if (r.instructions.is_object() && r.instructions.contains("verification"))
    s << "  instructions: " << r.instructions.value("verification", "") << " — "
      << r.instructions.value("message", "") << "\n";
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
