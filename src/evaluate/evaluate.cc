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
#include "evaluate/timing_judge.h"
#include "inspect/ncu.h"
#include "inspect/sass.h"
#include "measure/baseline.h"
#include "measure/gpm.h"
#include "run/children.h"
#include "run/gpu_lock.h"
#include "run/protocol.h"
#include "run/reference_cache.h"
#include "screen/screen.h"
#include "task/device_ops.h"
#include "task/family.h"

namespace ptxbench {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// An output file a candidate's child named that cannot be one of its outputs: a rule
// violation, never a crash of ours.
struct CandidateFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A read-only view of a whole file, for outputs far larger than we want to copy.
class MappedFile {
 public:
  // `untrusted`: a file a candidate's process wrote, so never a link (it could point at the
  // reference outputs it cannot read itself) and never anything but a plain file of its own.
  explicit MappedFile(const std::string& path, bool untrusted = false) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (untrusted ? O_NOFOLLOW : 0));
    if (fd < 0) throw CandidateFileError("cannot open " + path);
    struct stat st;
    if (untrusted && (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1)) {
      ::close(fd);
      throw CandidateFileError(path + " is not a plain file of the candidate's own");
    }
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
// The child names the file; it must lie directly in that child's own folder.
// An output file named by a candidate's child must lie directly in that child's folder.
void RequireInChildFolder(const std::string& file, const std::string& child_folder) {
  if (file.rfind(child_folder + "/", 0) != 0 ||
      file.find('/', child_folder.size() + 1) != std::string::npos ||
      file.find("..") != std::string::npos)
    throw CandidateFileError("the candidate's process named an output outside its folder: " + file);
}

OutputComparison CompareOutputFile(const TensorSpec& spec, const std::string& expected_file,
                                   const std::string& file, const std::string& child_folder,
                                   const Tolerance& tol) {
  RequireInChildFolder(file, child_folder);
  MappedFile exp(expected_file);
  MappedFile got(file, /*untrusted=*/true);
  size_t n = static_cast<size_t>(spec.Elements());
  if (exp.size() != n * sizeof(float))
    throw InternalError("reference file size does not match the tensor " + spec.name);
  if (got.size() != spec.Bytes())
    throw CandidateFileError("the output file of " + spec.name + " has " +
                             std::to_string(got.size()) + " bytes, not " +
                             std::to_string(spec.Bytes()));
  OutputComparison c = spec.dtype == DType::kBF16
                           ? CompareBf16(static_cast<const uint16_t*>(got.data()),
                                         static_cast<const float*>(exp.data()), n, tol)
                           : CompareF32(static_cast<const float*>(got.data()),
                                        static_cast<const float*>(exp.data()), n, tol);
  c.name = spec.name;
  return c;
}

// The digest of an output file the candidate's child wrote (see DeviceDigest), read from
// its own folder only, as CompareOutputFile does.
std::string WitnessOutputDigest(const std::string& file, const std::string& child_folder,
                                uint64_t key) {
  RequireInChildFolder(file, child_folder);
  MappedFile got(file, /*untrusted=*/true);
  return HostDigest(got.data(), got.size(), key);
}

// Where the reference outputs of this evaluation are written: a folder of the parent's that
// no confined child can enter (mode 0700, owned by us).
std::string ReferenceFolder(const ScratchDir& scratch) {
  std::string dir = scratch.File("reference");
  if (!FileExists(dir)) {
    MakeDirs(dir);
    ::chmod(dir.c_str(), 0700);
  }
  return dir;
}

// The install folder of a tool that wraps a confined child (…/bin/ncu -> …), which the child
// must be able to read.
std::vector<std::string> ToolRoots(const std::string& tool) {
  std::error_code ec;
  std::filesystem::path real = std::filesystem::canonical(tool, ec);
  if (ec) return {};
  return {real.parent_path().parent_path().string()};
}

// `j` with every string in it (object keys too) made valid UTF-8 (ValidUtf8): for JSON built
// from what tools printed (nvcc's log, cuobjdump's names), which may hold any bytes.
json ValidUtf8Json(const json& j) {
  if (j.is_string()) return ValidUtf8(j.get_ref<const std::string&>());
  if (j.is_array()) {
    json out = json::array();
    for (const auto& e : j) out.push_back(ValidUtf8Json(e));
    return out;
  }
  if (j.is_object()) {
    json out = json::object();
    for (const auto& [k, e] : j.items()) out[ValidUtf8(k)] = ValidUtf8Json(e);
    return out;
  }
  return j;
}

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

std::string TrialName(const json& m) {
  return m.contains("seed") ? " (seed " + std::to_string(m["seed"].get<uint64_t>()) + ")" : "";
}

// The first message with this event that the child sent before it loaded a candidate: the
// harness's own word. After the load, the same line may be the candidate's forgery.
const json* BeforeLoading(const ChildOutcome& c, const std::string& event) {
  const size_t end = LoadingIndex(c.messages);
  for (size_t i = 0; i < end; ++i)
    if (c.messages[i].value("event", "") == event) return &c.messages[i];
  return nullptr;
}

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

// The GPU a child reported, into the record's toolchain.
void NoteDevice(const ChildOutcome& child, EvaluationRecord* rec) {
  if (const json* d = child.First("device")) {
    rec->toolchain["gpu"] = *d;
    rec->toolchain["gpu"].erase("event");
  }
}

std::string ArchTag(const std::string& arch) { return CreditTag(ArchFamilyOf(arch)); }

std::string Count(double v) { return HumanCount(v); }

// The share of the task's FLOPs that tensor-core instructions must have done for the tag.
constexpr double kMinTensorWorkFraction = 0.5;
// Calls in the profiled process (each on a seed of its own).
constexpr int kProfiledCalls = 3;

std::string FormatPercent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * fraction);
  return buf;
}

// The second layer: did the architecture's own instructions do the work? Runs only for a
// correct candidate. Sets rec->instructions' verification status, tag and evidence.
void VerifyInstructions(const EvalRequest& req, uint64_t profile_seed, const Definition& def,
                        const Workload& wl, const ChildRequest& candidate,
                        const StaticInspection& sass, const std::vector<std::string>& required,
                        const ScratchDir& scratch, EvaluationRecord* rec, ChildOutcome* profiled) {
  json& ins = rec->instructions;
  auto set = [&](const std::string& status, const std::string& message) {
    ins["verification"] = status;
    ins["message"] = ValidUtf8(message);  // may quote the profiler's output
  };
  if (required.empty() || !req.options.verify) {
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
  pc.wrapper = NcuCommand(*ncu, report);
  pc.tool_roots = ToolRoots(*ncu);
  pc.allow_inet = true;
  pc.timeout = req.options.profile_timeout;
  ChildOutcome po = RunChild(pc);
  if (profiled) *profiled = po;
  if (po.exit.kind == ExitKind::kTimedOut) {
    set("profile_error", "the profiled call did not finish within " +
                             std::to_string(req.options.profile_timeout.count()) + " s");
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
  const int calls = static_cast<int>(po.All("trial").size());
  ins["profile"] = {{"tool", *ncu},
                    {"calls", calls},
                    {"kernels", kernels.size()},
                    {"bad_rows", bad_rows},
                    {"exit", po.exit.Describe()},
                    {"seed", profile_seed}};
  if (calls != kProfiledCalls) {
    set("profile_error", "the profiled process completed " + std::to_string(calls) + " of its " +
                             std::to_string(kProfiledCalls) + " calls (" + po.exit.Describe() +
                             ")");
    return;
  }
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
  // Only bf16 GMMA counts (the tasks' type; ncu.cc JoinProfile), averaged over the calls.
  ins["tensor_core_work_fraction"] =
      g.static_count > 0 && nominal > 0 ? json(g.gmma_flops / (nominal * calls)) : json(nullptr);
  if (!not_run.empty()) {
    std::string list = Join(not_run);
    set("dynamic_not_executed", list + " is in the SASS but never executed with a true predicate");
    return;
  }
  std::string tag = ArchTag(req.arch);
  // The paper's rule ends here (correct, in the SASS, executed with a true predicate): it
  // stays in the record as upstream_arch_tag so that published comparisons line up.
  ins["upstream_arch_tag"] = tag;
  // Ours asks that the tensor cores did the work: at least half of the task's FLOPs in
  // tensor-core instructions, and the out-of-process witness saw the tensor pipes busy.
  std::vector<std::string> withheld;
  const json& frac = ins["tensor_core_work_fraction"];
  if (!frac.is_number())
    withheld.push_back("the tensor-core work fraction was not measured for " + req.arch);
  else if (frac.get<double>() < kMinTensorWorkFraction)
    withheld.push_back("tensor-core work fraction " + FormatPercent(frac.get<double>()) +
                       " of the task's FLOPs (needs " + FormatPercent(kMinTensorWorkFraction) +
                       ")");
  const json witness = rec->performance.is_object()
                           ? rec->performance.value("witness", json::object())
                           : json::object();
  if (!witness.value("tensor_ok", false))
    withheld.push_back(
        witness.contains("message")
            ? "the witness did not see the tensor pipes do the work (" +
                  witness.value("message", std::string()) + ")"
            : "no out-of-process witness (" +
                  witness.value("reason", std::string(req.options.timing ? "it did not run"
                                                                         : "--no-timing")) +
                  ")");
  ins["arch_tag"] = withheld.empty() ? tag : "";
  ins["tag_withheld"] = withheld;
  std::string msg = withheld.empty()
                        ? tag + " verified:"
                        : tag + " under the paper's rule only (" + Join(withheld, "; ") + "):";
  if (g.static_count > 0) {
    char buf[64];
    // Three significant digits, so that a token wgmma shows as 0.00977%, not 0.0%.
    std::snprintf(buf, sizeof buf, " bf16 GMMA %.3g%% of FLOPs",
                  100.0 * g.gmma_flops / (nominal * calls));
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
  ReferenceSpec spec;
  spec.family = family.Name();
  spec.axes = axes;
  spec.seeds = seeds;
  spec.out_dir = out_dir;
  spec.set_seeds = set_seeds;
  cr.spec = ToJson(spec);
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

// The bf16 dense peak of a GPU, measured once (by a baseline child, which never loads a
// candidate) and cached per device by the parent alone.
std::string PeakCachePath(const std::string& cache_root, const json& gpu) {
  return cache_root + "/peak/" + gpu.value("uuid", "unknown") + ".json";
}

// What a GPU of this compute capability can do at most in dense bf16 tensor-core work (FLOP/s),
// from the vendors' data sheets with headroom: a measured peak or a timed speed above it is
// not a measurement. 0 when the capability is unknown (then no ceiling applies).
double ModelBf16Ceiling(const json& gpu) {
  const std::string cc = gpu.value("compute_capability", std::string());
  if (cc.rfind("9.", 0) == 0) return 1.1e15;   // H100/H200: 989 TFLOP/s dense
  if (cc.rfind("10.", 0) == 0) return 2.6e15;  // B200: 2.25 PFLOP/s dense
  if (cc.rfind("8.", 0) == 0) return 0.36e15;  // A100: 312 TFLOP/s dense
  return 0;
}

// A peak is believed only inside what the GPU model can do: above a tenth of its ceiling (a
// forged or broken measurement of 0 makes every later speed look impossible or the witness
// unusable) and not above it.
bool PlausiblePeak(double flops_per_second, const json& gpu) {
  const double ceiling = ModelBf16Ceiling(gpu);
  if (!(flops_per_second > 0) || !std::isfinite(flops_per_second)) return false;
  return ceiling <= 0 || (flops_per_second >= 0.1 * ceiling && flops_per_second <= ceiling);
}

// The cache entry, verified on read: its own digest, the same GPU and driver, a plausible value.
std::optional<double> CachedPeak(const std::string& path, const json& gpu) {
  try {
    json p = json::parse(ReadFile(path));
    std::string digest = p.value("sha256", "");
    p.erase("sha256");
    if (digest != Sha256Hex(p.dump())) return std::nullopt;
    if (p.value("driver_version", -1) != gpu.value("driver_version", -2)) return std::nullopt;
    if (p.value("uuid", std::string()) != gpu.value("uuid", std::string("?"))) return std::nullopt;
    double peak = p.at("flops_per_second").get<double>();
    if (!PlausiblePeak(peak, gpu)) return std::nullopt;
    return peak;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void StorePeak(const std::string& cache_root, const std::string& path, json p) {
  p["sha256"] = Sha256Hex(p.dump());
  MakeDirs(cache_root + "/peak");
  WriteFileAtomic(path, p.dump(2) + "\n");
}

// The out-of-process witness: how long the phase of back-to-back calls runs (at least), and
// how long the GPU is left idle on each side of it. NVML's GPM counters reach the samples
// 150-200 ms late on the H200 (unpadded windows under ~140 ms read zero; a window opened
// right after other work is credited with it); with 300 ms of idle before the first sample
// and before the second, even 20 GEMM calls read 0.9-1.0 of their busy time.
constexpr double kWitnessWorkSeconds = 0.2;
constexpr double kWitnessSettleSeconds = 0.3;
constexpr double kWitnessMinWindowSeconds = 0.4;
// Tensor-pipe time as a share of SM-busy time below which the tensor pipes were not doing
// the work, whatever the FLOP ratio says: a slow CUDA-core loop reads ~0.05 (FFMA) and its
// long run can still add up to the task's tensor FLOPs; a real bf16 GEMM reads ~0.97 (0.23
// at K=64).
constexpr double kMinTensorShareOfSm = 0.15;
// Timed calls checked again after the loop, and witness calls checked after the window,
// drawn by the parent once the loop (the window) is over.
constexpr int kTimedChecks = 3;
constexpr int kWitnessChecks = 3;
// How much of the GPU's memory the protocol's own buffers may take, decided by the parent
// from the GPU's size (a candidate-free child's report): the kept outputs of the timed calls,
// and the witness's fresh input sets. The candidate keeps the rest.
constexpr double kKeptOutputsShareOfMemory = 0.2;
constexpr double kWitnessInputsShareOfMemory = 0.25;
// A timed speed above the measured peak by more than this factor is not a measurement: no
// kernel beats the vendor library's best square GEMM by a quarter.
constexpr double kImpossibleOverPeak = 1.25;

// The protocol's numbers for the candidate's timing child, all the parent's.
struct TimingNumbers {
  int kept_outputs = 0;
  int witness_calls = 0;  // 0: no witness (no GPM on this GPU, established by the parent)
  uint64_t digest_key = 0;
};

TimingNumbers PlanTimingNumbers(const Family& family, const Axes& axes, int iterations,
                                double est_call_s, bool witness, const json& gpu,
                                std::mt19937_64& rng) {
  double memory = gpu.value("global_memory_bytes", 0.0);
  if (!(memory > 0)) memory = 16.0 * (1ull << 30);  // an unknown GPU: a size every one has
  double out_bytes = 0, in_bytes = 0;
  for (const auto& t : family.Tensors(axes))
    (t.role == TensorRole::kOutput ? out_bytes : in_bytes) += static_cast<double>(t.Bytes());
  TimingNumbers n;
  n.digest_key = rng();
  n.kept_outputs = iterations;
  if (out_bytes > 0)
    n.kept_outputs = static_cast<int>(
        std::min<double>(iterations, std::floor(kKeptOutputsShareOfMemory * memory / out_bytes)));
  n.kept_outputs = std::max(1, n.kept_outputs);
  if (!witness) return n;
  // Enough calls to keep the GPU busy for the window's work time, by the trials' fastest call
  // (the candidate's own word: a lie only changes how many calls it must make, each on inputs
  // of its own), never more than there are kept outputs or memory for their inputs.
  double est = std::max(est_call_s, 1e-6);
  int calls = est_call_s > 0 ? static_cast<int>(std::ceil(kWitnessWorkSeconds / est)) : 1 << 20;
  calls = std::min(calls, n.kept_outputs);
  if (in_bytes > 0)
    calls = std::min<int>(
        calls, static_cast<int>(std::floor(kWitnessInputsShareOfMemory * memory / in_bytes)));
  n.witness_calls = std::max(0, std::min(std::max(calls, 2), n.kept_outputs));
  return n;
}

// What the parent does while the candidate's timing child runs: it draws the calls to check
// when the loop is over, and frames the witness phase with its own GPM samples. Every number
// it acts on is its own; the child's messages only say when.
struct TimingConversation {
  GpmWitness* gpm = nullptr;
  std::mt19937_64 rng;
  TimingNumbers numbers;
  std::vector<int> timed_checks;
  int witness_calls_reported = -1;  // what witness_ready said; the parent's number is planned
  uint64_t witness_seed0 = 0, witness_key = 0;
  json witness_digests;  // the child's commitment: digests[j][output], made in the window
  std::vector<int> witness_checks;
  std::optional<WitnessWindow> window;
  Clock::time_point window_begun;
  std::string gpm_error;
  bool witness_done = false;

  std::vector<int> Draw(int among, int count) {
    std::set<int> drawn;
    for (int tries = 0;
         among > 0 && static_cast<int>(drawn.size()) < std::min(count, among) && tries < 1000;
         ++tries)
      drawn.insert(static_cast<int>(rng() % static_cast<uint64_t>(among)));
    return {drawn.begin(), drawn.end()};
  }

  void OnMessage(const json& m, const ChildRequest::Reply& reply) {
    std::string ev = m.value("event", "");
    if (ev == "timed_loop_done") {
      // The parent's count of kept outputs, whatever the message says.
      timed_checks = Draw(numbers.kept_outputs, kTimedChecks);
      AfterLoopPlan plan;
      plan.check = timed_checks;
      if (gpm && numbers.witness_calls > 0) {
        plan.witness = true;
        plan.witness_seed0 = witness_seed0 = rng();
        plan.witness_key = witness_key = rng();
      }
      reply(ToJson(plan).dump());
    } else if (ev == "witness_ready" && gpm && numbers.witness_calls > 0) {
      witness_calls_reported = m.value("calls", -1);
      std::this_thread::sleep_for(std::chrono::duration<double>(kWitnessSettleSeconds));
      std::string why;
      if (!gpm->Begin(&why)) gpm_error = why;
      window_begun = Clock::now();
      reply("go");
    } else if (ev == "witness_done" && gpm && numbers.witness_calls > 0 && !witness_done) {
      witness_done = true;
      witness_digests = m.value("digests", json());
      // Idle after the work, and a window no shorter than the judge needs: a fast kernel's
      // calls take milliseconds, and a window under the minimum says nothing.
      double open_s = std::chrono::duration<double>(Clock::now() - window_begun).count();
      double settle = std::max(kWitnessSettleSeconds, kWitnessMinWindowSeconds + 0.05 - open_s);
      std::this_thread::sleep_for(std::chrono::duration<double>(settle));
      if (gpm_error.empty()) window = gpm->End();
      witness_checks = Draw(numbers.witness_calls, kWitnessChecks);
      reply(ToJson(AfterLoopPlan{witness_checks, false, 0, 0}).dump());
    }
  }
};

// A child that times the vendor baseline alone (before or after the candidate's), in a
// process of its own: no candidate shares a process with a vendor library.
ChildOutcome RunBaselineChild(const EvalRequest& req, const Family& family, const Axes& axes,
                              const ScratchDir& scratch, const std::string& phase,
                              uint64_t seed_offset, int warmup, int iterations, int sets,
                              uint64_t seed_base, uint64_t set_seed_base, int peak_n,
                              const json& gpu, const json& baseline_options) {
  ChildRequest bc;
  bc.name = phase;
  bc.work_dir = scratch.path();
  bc.executable = req.executable;
  bc.timeout = req.options.timing_timeout;
  std::string out_dir = scratch.File(phase + ".out");
  MakeDirs(out_dir);
  TimingSpec spec;
  spec.family = family.Name();
  spec.axes = axes;
  spec.out_dir = out_dir;
  spec.warmup = warmup;
  spec.iterations = iterations;
  spec.buffer_sets = sets;
  spec.seed_base = seed_base;
  spec.set_seed_base = set_seed_base;
  spec.baseline_only = true;
  spec.baseline_phase = phase;
  spec.baseline_seed_offset = seed_offset;
  spec.peak_n = peak_n;
  spec.baseline_options = baseline_options;
  spec.pci_bus_id = gpu.value("pci_bus_id", "");
  bc.spec = ToJson(spec);
  return RunChild(bc);
}

// A candidate-free child on the evaluation's GPU, right after a candidate's process said the
// harness failed: nullopt when the GPU answers as it should (so the failure was the
// candidate's), else why it does not.
std::optional<std::string> ProbeGpuUnhealthy(const EvalRequest& req, const ScratchDir& scratch) {
  ChildRequest pr;
  pr.spec = ProbeSpecJson();
  pr.work_dir = scratch.path();
  pr.name = "health-probe";
  pr.timeout = std::chrono::seconds(60);
  pr.executable = req.executable;
  ChildOutcome o = RunChild(pr);
  if (o.First("device") && o.First("done") && !o.First("no_gpu") && !o.First("error"))
    return std::nullopt;
  if (const json* ng = o.First("no_gpu")) return "no GPU: " + ng->value("message", "");
  if (const json* e = o.First("error")) return e->value("message", "");
  return "the probe " + o.exit.Describe();
}

// A verdict that rests on a harness failure the candidate's own process reported stays the
// candidate's (RUNTIME_ERROR) unless a candidate-free probe finds the GPU unhealthy: then it
// is INFRA_ERROR, with the probe's evidence.
void ConfirmCandidateFailure(const EvalRequest& req, const ScratchDir& scratch,
                             EvaluationRecord* rec, Verdict* v) {
  if (!v->decided || !v->claimed_infra) return;
  std::optional<std::string> unhealthy = ProbeGpuUnhealthy(req, scratch);
  rec->sandbox["health_probe"] =
      unhealthy ? json{{"healthy", false}, {"why", *unhealthy}} : json{{"healthy", true}};
  if (v->status != Status::kInfraError && v->status != Status::kRuntimeError) {
    // The candidate already earned a verdict of its own (a wrong answer, a broken rule): the
    // claim changes nothing, and is noted.
    v->message +=
        " (its process also claimed a harness failure; a candidate-free probe found "
        "the GPU " +
        std::string(unhealthy ? "unhealthy: " + *unhealthy : "healthy") + ")";
  } else if (unhealthy) {
    v->Set(Status::kInfraError, "",
           "the GPU failed a candidate-free probe right after the candidate's process reported a "
           "harness failure (" +
               *unhealthy + "); that process said: " + v->message);
  } else if (v->status != Status::kRuntimeError) {
    v->Set(Status::kRuntimeError, "",
           v->message +
               " (reported by the candidate's own process; a candidate-free probe of "
               "the GPU right after found it healthy)");
  } else {
    v->message += " (a candidate-free probe of the GPU right after found it healthy)";
  }
  v->claimed_infra = false;
}

// The candidate child's messages for the judge: tagged with where they came from (the parent's
// tag, whatever the child wrote), and without the harness claims it made after its load (a
// baseline's samples, a peak, "CUPTI is unavailable"): a candidate's process has no baseline,
// measures no peak, and earns nothing by saying a defense could not run.
std::vector<json> CandidateMessagesForTheJudge(const ChildOutcome& o, size_t* dropped,
                                               std::set<std::string>* forged) {
  std::vector<json> out;
  const size_t loaded_at = LoadingIndex(o.messages);
  for (size_t i = 0; i < o.messages.size(); ++i) {
    const json& m = o.messages[i];
    const std::string ev = m.value("event", "");
    if (ev == "done" || ev == "device" || ev == "timing_done") continue;
    const bool after_load = i >= loaded_at;
    const bool baseline_or_peak = ev == "baseline_error" || ev == "baseline_none" ||
                                  ev == "baseline_unsupported" || ev == "peak_done" ||
                                  (ev == "timing_sample" && m.value("phase", "") != "candidate");
    if (baseline_or_peak || (after_load && IsHarnessClaim(m) && ev != "error")) {
      ++*dropped;
      // Lines only a baseline child writes, from the candidate's process: a forgery.
      if (baseline_or_peak)
        forged->insert(ev == "timing_sample" ? "timing_sample phase " + m.value("phase", "") : ev);
      continue;
    }
    json t = m;
    t["_child"] = "candidate";
    t["_after_load"] = after_load;
    out.push_back(std::move(t));
  }
  return out;
}

// The third layer: GPU time of the candidate and of the vendor baseline side by side (the
// baseline in processes of its own, before and after the candidate's), the re-validation of
// timed outputs the parent draws after the loop, and the out-of-process witness.
// Runs only for a candidate that is correct so far; may decide the verdict. Fails closed:
// where the parent found GPM, a witness that did not run, ran short or did not agree credits
// no speed; a re-check that did not come back is the candidate's.
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
  TimedCallPlan plan = PlanTimedCalls(req.options.warmup, req.options.iterations, est_call_s,
                                      req.options.timing_budget_s);
  const int warmup = plan.warmup, iterations = plan.iterations;
  // Fresh, unpredictable inputs for every timed call: a kernel that recognises the trial
  // inputs (the default seeds are public) or caches results by content gains nothing.
  int total = warmup + iterations;
  int sets = std::max(1, std::min(req.options.buffer_sets, total));
  // A family that derives its timed inputs from a base per buffer set (mha_bwd) gets the
  // bases' seeds from here too, so that the reference can rebuild them.
  const uint64_t set_seed_base = seed_base ^ kSetSeedSalt;

  const json& gpu = rec->toolchain.value("gpu", json::object());
  std::string peak_path = PeakCachePath(cache_root, gpu);
  std::optional<double> peak = CachedPeak(peak_path, gpu);

  auto t = Clock::now();
  // Built here, in the parent, once for both baseline children (FlashInfer's kernel; the first
  // build of a variant takes minutes, then it is cached).
  const json baseline_options =
      PrepareBaselineOptions(family, axes, req.options.attention_baseline, cache_root);
  ChildOutcome before = RunBaselineChild(req, family, axes, scratch, "baseline_before", 1000000,
                                         warmup, iterations, sets, seed_base, set_seed_base,
                                         peak ? 0 : kPeakGemmSize, gpu, baseline_options);
  rec->stage_seconds["timing_baseline"] = SecondsSince(t);

  // The parent's witness of what the GPU did, read outside every child. Whether this GPU has
  // one is the parent's finding, made here before the candidate's timing child exists.
  std::string gpm_why;
  std::unique_ptr<GpmWitness> gpm = GpmWitness::Open(gpu.value("pci_bus_id", ""), &gpm_why);
  TimingConversation talk;
  talk.gpm = gpm.get();
  talk.rng.seed(seed_base ^ 0x636865636bull ^ static_cast<uint64_t>(std::random_device{}()));
  talk.numbers =
      PlanTimingNumbers(family, axes, iterations, est_call_s, gpm != nullptr, gpu, talk.rng);

  t = Clock::now();
  ChildRequest tc = candidate;
  tc.name = "timing";
  tc.confine = true;
  tc.wrapper.clear();
  TimingSpec spec;
  spec.family = family.Name();
  spec.axes = axes;
  spec.out_dir = scratch.path();  // RunChild puts a confined child's own folder here
  spec.shared_object = candidate.spec.at("shared_object");
  spec.abi = candidate.spec.value("abi", std::string("native"));
  spec.warmup = warmup;
  spec.iterations = iterations;
  spec.buffer_sets = sets;
  spec.seed_base = seed_base;
  spec.set_seed_base = set_seed_base;
  spec.kept_outputs = talk.numbers.kept_outputs;
  spec.witness_calls = talk.numbers.witness_calls;
  spec.digest_key = talk.numbers.digest_key;
  spec.pci_bus_id = gpu.value("pci_bus_id", "");
  tc.spec = ToJson(spec);
  tc.timeout = req.options.timing_timeout;
  tc.on_message = [&talk](const json& m, const ChildRequest::Reply& reply) {
    talk.OnMessage(m, reply);
  };
  ChildOutcome to = RunChild(tc);
  rec->stage_seconds["timing"] = SecondsSince(t);
  rec->performance = json::object();

  t = Clock::now();
  // A candidate that ran out of time leaves the judge its last phase: no baseline after it.
  ChildOutcome after;
  if (to.exit.kind != ExitKind::kTimedOut)
    after = RunBaselineChild(req, family, axes, scratch, "baseline_after", 2000000, warmup,
                             iterations, sets, seed_base, set_seed_base, 0, gpu, baseline_options);
  rec->stage_seconds["timing_baseline"] += SecondsSince(t);

  // One conversation for the judge: the baseline's phases from its own processes, the
  // candidate's from its child (its claims after the load dropped); the library named by the
  // baseline's child.
  std::vector<json> messages;
  const json* baseline_done = before.Last("timing_done");
  auto take_baseline = [&](const ChildOutcome& o) {
    for (const auto& m : o.messages) {
      std::string ev = m.value("event", "");
      if (ev == "done" || ev == "device" || ev == "timing_done") continue;
      json tagged = m;
      tagged["_child"] = "baseline";
      messages.push_back(std::move(tagged));
    }
  };
  size_t dropped_claims = 0;
  std::set<std::string> forged_lines;
  take_baseline(before);
  for (json& m : CandidateMessagesForTheJudge(to, &dropped_claims, &forged_lines))
    messages.push_back(std::move(m));
  take_baseline(after);
  if (const json* done = to.Last("timing_done")) {
    json d = *done;
    d["_child"] = "candidate";
    if (baseline_done) {
      d["baseline_name"] = baseline_done->value("baseline_name", "");
      d["baseline_choice"] = baseline_done->value("baseline_choice", "");
      d["baseline"] = baseline_done->value("baseline", json());
    }
    messages.push_back(d);
  }

  TimingContext ctx;
  ctx.flops = def.Flops(wl);
  ctx.peak_flops = peak;
  ctx.model_ceiling_flops = ModelBf16Ceiling(gpu);
  ctx.impossible_over_peak = kImpossibleOverPeak;
  ctx.candidate_loaded = LoadingIndex(to.messages) < to.messages.size();
  ctx.allowed_known = sass.state == "ran";
  for (const auto& f : sass.functions) ctx.allowed_kernels.push_back(f.mangled);
  ctx.drift_threshold = req.options.drift_threshold;
  ctx.timeout = req.options.timing_timeout;
  ctx.warmup = warmup;
  ctx.iterations = iterations;
  TimingJudgement j = JudgeTiming(messages, to.exit, ctx);
  rec->performance = j.performance;
  rec->performance["timing_seed_base"] = seed_base;
  rec->performance["sandbox"] = to.sandbox;
  if (dropped_claims > 0) rec->performance["candidate_claims_ignored"] = dropped_claims;
  rec->performance["protocol"]["parent_decided"] = {{"kept_outputs", talk.numbers.kept_outputs},
                                                    {"witness_calls", talk.numbers.witness_calls},
                                                    {"witness_rounds", 1},
                                                    {"timed_checks", kTimedChecks},
                                                    {"witness_checks", kWitnessChecks}};
  // Every kernel that started inside a timed call is the candidate's, whatever its name: the
  // harness launches nothing during a call.
  std::set<std::string> launched;
  for (const json* m : to.All("timing_sample")) {
    if (m->value("phase", "") != "candidate") continue;
    const json kernels = m->value("activity", json::object()).value("kernels", json::object());
    for (const auto& [name, count] : kernels.items()) launched.insert(name);
  }
  rec->performance["kernels_launched"] = launched;
  if (const json* c = to.First("confinement")) rec->performance["confinement"] = *c;
  // Sent before the load: the harness's word on whether its code and GOT were sealed.
  if (const json* sealed = BeforeLoading(to, "sealed")) rec->performance["sealed"] = *sealed;
  if (rec->performance.contains("protocol")) rec->performance["protocol"]["plan"] = ToJson(plan);
  if (!to.garbage.empty()) rec->performance["channel_garbage_lines"] = to.garbage.size();
  if (!forged_lines.empty() && !v->decided)
    v->Set(Status::kRuleViolation, "channel_tampered",
           "the candidate's process wrote lines only a baseline child sends (" +
               Join(std::vector<std::string>(forged_lines.begin(), forged_lines.end())) +
               ") onto the result channel");
  if (to.exit.channel_overflow && !v->decided)
    v->Set(Status::kRuleViolation, "channel_tampered",
           "the candidate's process flooded the result channel while being timed");
  if (j.verdict) {  // never PASSED: the judge only ever finds fault
    rec->performance["child_log_tail"] = ValidUtf8(to.log_tail);
    if (!v->decided) {
      v->Set(j.verdict->status, j.verdict->reason, j.verdict->message);
      v->claimed_infra = j.verdict->claimed_infra;
    }
  }
  if (j.peak_measured) {
    if (PlausiblePeak(*j.peak_measured, gpu)) {
      StorePeak(cache_root, peak_path,
                {{"flops_per_second", *j.peak_measured},
                 {"gpu", gpu.value("name", "")},
                 {"uuid", gpu.value("uuid", "")},
                 {"driver_version", gpu.value("driver_version", 0)},
                 {"shape", j.peak_detail.value("n", 0)},
                 {"library", j.peak_detail.value("baseline", json())},
                 {"measured_at", NowUtcIso8601()}});
      rec->performance["peak_source"] =
          "measured now by a baseline child (cached in " + peak_path + ")";
      peak = *j.peak_measured;
    } else {
      rec->performance["peak_source"] = "measured now but implausible for this GPU (" +
                                        Count(*j.peak_measured) + " FLOP/s): not used, not cached";
      peak.reset();
    }
  } else if (peak) {
    rec->performance["peak_source"] = "cached: " + peak_path;
  }

  // --- the outputs the parent drew after the loop, against a reference for their inputs ---
  // The seeds are the parent's own (call index → seed, buffer set), never the child's word.
  struct Check {
    std::string what;  // "timed call 17", "witness call 3"
    uint64_t seed = 0, set_seed = 0;
    json files;
    json digests;  // what the harness digested when the call ended (timed) or in the window
    uint64_t key = 0;
    bool witness = false;
  };
  std::map<int, json> kept_digests;  // kept index → the digests taken right after that call
  for (const json* m : to.All("timing_sample"))
    if (m->value("phase", "") == "candidate" && m->contains("kept"))
      kept_digests[m->value("kept", -1)] = m->value("digests", json());
  std::vector<Check> checks;
  std::set<int> timed_seen;
  for (const json* m : to.All("timed_output")) {
    int k = m->value("kept", -1);
    if (std::find(talk.timed_checks.begin(), talk.timed_checks.end(), k) ==
            talk.timed_checks.end() ||
        !timed_seen.insert(k).second)
      continue;  // not a call we asked for, or asked for once: ignore, never trust
    int index = warmup + k;
    checks.push_back({"timed call " + std::to_string(index) + " (buffer set " +
                          std::to_string(index % sets) + ", fresh inputs)",
                      seed_base + static_cast<uint64_t>(index),
                      set_seed_base + static_cast<uint64_t>(index % sets), m->at("outputs"),
                      kept_digests.count(k) ? kept_digests[k] : json::array(),
                      talk.numbers.digest_key, false});
  }
  const size_t timed_expected = talk.timed_checks.size();
  size_t timed_got = checks.size();
  std::set<int> witness_seen;
  for (const json* m : to.All("witness_output")) {
    int jx = m->value("index", -1);
    if (std::find(talk.witness_checks.begin(), talk.witness_checks.end(), jx) ==
            talk.witness_checks.end() ||
        !witness_seen.insert(jx).second)
      continue;
    json committed =
        talk.witness_digests.is_array() && jx < static_cast<int>(talk.witness_digests.size())
            ? talk.witness_digests[jx]
            : json();
    checks.push_back({"witness call " + std::to_string(jx),
                      talk.witness_seed0 + static_cast<uint64_t>(jx),
                      set_seed_base + static_cast<uint64_t>(jx % sets), m->at("outputs"),
                      committed.is_array() ? committed : json::array(), talk.witness_key, true});
  }
  const size_t witness_expected = talk.witness_checks.size();
  const size_t witness_got = checks.size() - timed_got;
  std::vector<uint64_t> check_seeds, check_set_seeds;
  for (const auto& c : checks) {
    check_seeds.push_back(c.seed);
    check_set_seeds.push_back(c.set_seed);
  }
  if (!family.DerivesTimedInputs()) check_set_seeds.clear();
  std::map<uint64_t, ReferenceEntry> refs;
  if (!check_seeds.empty()) {
    t = Clock::now();
    ChildOutcome ro = RunReferenceChild(req, family, axes, check_seeds, ReferenceFolder(scratch),
                                        scratch, "timing-reference", check_set_seeds);
    for (const json* m : ro.All("reference")) {
      ReferenceEntry e;
      e.seed = m->at("seed");
      e.input_checksums = m->at("input_checksums").get<std::vector<uint64_t>>();
      for (const auto& o : m->at("outputs")) e.output_files.push_back(o.at("file"));
      refs[e.seed] = e;
    }
    rec->stage_seconds["timing_reference"] = SecondsSince(t);
    if (refs.size() != std::set<uint64_t>(check_seeds.begin(), check_seeds.end()).size() &&
        !v->decided) {
      v->Set(Status::kInfraError, "",
             "the reference for the timed calls failed: " + ReferenceFailure(ro));
      rec->performance["revalidation"] = {{"state", "not_reached"},
                                          {"reason", "the reference for the timed calls failed"}};
      return;
    }
  }
  t = Clock::now();
  json checked = json::array();
  auto tensors = family.Tensors(axes);
  try {
    for (const auto& c : checks) {
      auto it = refs.find(c.seed);
      if (it == refs.end()) continue;
      json cj = {{"call", c.what}, {"seed", c.seed}};
      size_t k = 0;
      for (const auto& spec : tensors) {
        if (spec.role != TensorRole::kOutput) continue;
        // The output handed over must be what the call wrote: the digest the harness took
        // right after a timed call (in stream order, before the next call ran) or, for a
        // witness call, inside the GPM window. Work deferred to another call, or past the
        // window, changes it.
        std::string file = c.files.at(k).at("file");
        std::string committed =
            k < c.digests.size() && c.digests[k].is_string() ? c.digests[k].get<std::string>() : "";
        std::string now = WitnessOutputDigest(file, to.folder, c.key);
        cj[spec.name + "_digest"] = {{"committed", committed}, {"handed_over", now}};
        if (now != committed && !v->decided) {
          if (c.witness)
            v->Set(Status::kRuleViolation, "witness_disagrees",
                   committed.empty()
                       ? "the witness phase ended without the digest of " + c.what + "'s " +
                             spec.name + " that the harness sends inside the GPM window"
                       : "the output of " + c.what + " (" + spec.name +
                             ") handed over after the GPM window differs from what the calls "
                             "in the window wrote (digest " +
                             committed.substr(0, 12) + " then, " + now.substr(0, 12) +
                             " after): work was done outside the witnessed window");
          else
            v->Set(Status::kRuleViolation, "call_history",
                   committed.empty()
                       ? "no digest of " + c.what + "'s " + spec.name +
                             " was taken when the call ended"
                       : "the output of " + c.what + " (" + spec.name +
                             ") handed over after the loop differs from what it held when the "
                             "call ended (digest " +
                             committed.substr(0, 12) + " then, " + now.substr(0, 12) +
                             " after): its work was done in another call");
        }
        OutputComparison cmp =
            CompareOutputFile(spec, it->second.output_files.at(k), file, to.folder, tol);
        long long cols = spec.shape.size() >= 2 ? spec.shape.back() : 0;
        cj[spec.name] = {{"verdict", ToString(cmp.verdict)},
                         {"max_abs_error", cmp.max_abs_error},
                         {"mismatched", cmp.mismatched}};
        if (cmp.verdict != CompareVerdict::kMatch && !v->decided)
          v->Set(Status::kRuleViolation, "call_history",
                 "correct on the trials, but wrong on " + c.what + ": " + Describe(cmp, cols));
        ++k;
      }
      checked.push_back(cj);
    }
  } catch (const CandidateFileError& e) {
    if (!v->decided) v->Set(Status::kRuleViolation, "channel_tampered", e.what());
  }
  rec->performance["revalidation"] = {{"state", checked.empty() ? "not_reached" : "ran"},
                                      {"drawn_after_the_loop", true},
                                      {"kept_outputs", talk.numbers.kept_outputs},
                                      {"calls", checked}};
  const bool timing_ran = rec->performance.value("state", "") == "ran";
  if (!v->decided && timing_ran && timed_got != timed_expected)
    v->Set(Status::kRuleViolation, "channel_tampered",
           "the timing child returned " + std::to_string(timed_got) + " of the " +
               std::to_string(timed_expected) + " timed outputs the parent asked for");
  rec->stage_seconds["timing_revalidate"] = SecondsSince(t);

  // --- the witness: what the GPU itself was seen doing, against what the child reported ---
  json witness;
  const bool witness_planned = gpm && talk.numbers.witness_calls > 0;
  if (!gpm) {
    // The parent's own finding, before any candidate ran: allowed to be unavailable.
    witness = {{"state", "unavailable"}, {"reason", gpm_why}, {"established_by", "parent"}};
  } else if (!talk.window) {
    std::string why = !talk.gpm_error.empty() ? "GPM failed in the parent: " + talk.gpm_error
                                              : "the witness phase did not run";
    witness = {{"state", "missing"}, {"reason", why}};
    if (witness_planned && !v->decided && timing_ran) {
      // Fail closed: GPM worked when the parent opened it. If it works again now, whatever
      // stopped the window happened while the candidate ran: its verdict. Else the GPU's.
      std::string again;
      std::unique_ptr<GpmWitness> probe = GpmWitness::Open(gpu.value("pci_bus_id", ""), &again);
      bool gpm_works = probe && probe->Begin(&again);
      if (probe && gpm_works) probe->End();
      if (!talk.gpm_error.empty() && !gpm_works)
        v->Set(Status::kInfraError, "",
               "the GPM witness failed in the parent and fails again (" + again +
                   "): no speed can be credited");
      else
        v->Set(Status::kRuleViolation, "witness_missing",
               "the out-of-process witness did not run (" + why +
                   "): without it no timing is believed");
    }
  } else {
    WitnessExpectation x;
    x.calls = talk.numbers.witness_calls;
    x.timed_median_seconds =
        rec->performance.value("candidate", json::object()).value("median", 0.0);
    x.flops_per_call = def.Flops(wl);
    x.tensor_peak_flops_per_second = peak.value_or(0);
    x.tensor_task = !rec->task.value("required_families", json::array()).empty();
    WitnessJudgement wj = JudgeWitness(*talk.window, x, kWitnessMinWindowSeconds);
    witness = wj.ToJson();
    witness["window"] = talk.window->ToJson();
    witness["calls"] = talk.numbers.witness_calls;
    witness["calls_reported"] = talk.witness_calls_reported;
    witness["rounds"] = 1;
    witness["timing_factor"] = x.timing_factor;
    witness["tensor_factor"] = x.tensor_factor;
    // The HMMA pipe (fp16/bf16 MMAs) where GPM reads it: an int8 or one-bit MMA on junk keeps
    // the tensor pipes busy without doing any of a bf16 task's work.
    const double tensor_pct = std::isfinite(talk.window->hmma_tensor_util_pct)
                                  ? talk.window->hmma_tensor_util_pct
                                  : talk.window->any_tensor_util_pct;
    double share = tensor_pct / talk.window->sm_util_pct;
    witness["tensor_share_of_sm"] = std::isfinite(share) ? json(share) : json(nullptr);
    if (std::isfinite(wj.per_call_busy_seconds) && x.timed_median_seconds > 0)
      witness["busy_over_timed"] = wj.per_call_busy_seconds / x.timed_median_seconds;
    if (wj.tensor_ok && !(share >= kMinTensorShareOfSm)) {
      witness["tensor_ok"] = false;
      witness["message"] = wj.message + "; but the tensor pipes were busy only " +
                           FormatPercent(share) + " of the SM-busy time (under " +
                           FormatPercent(kMinTensorShareOfSm) + ")";
    }
    if (!v->decided && timing_ran) {
      if (talk.witness_calls_reported != talk.numbers.witness_calls)
        v->Set(Status::kRuleViolation, "witness_missing",
               "the timing child ran " + std::to_string(talk.witness_calls_reported) +
                   " witness calls where the parent asked for " +
                   std::to_string(talk.numbers.witness_calls));
      else if (witness_got != witness_expected)
        v->Set(Status::kRuleViolation, "witness_missing",
               "the timing child returned " + std::to_string(witness_got) + " of the " +
                   std::to_string(witness_expected) + " witness outputs the parent asked for");
      else if (wj.state == "window_too_short" || wj.state == "unavailable")
        // The parent's own evidence (its GPM read, its window): ours, but no speed either.
        v->Set(Status::kInfraError, "",
               "the GPM witness could not judge its window (" + wj.message +
                   "): no speed can be credited");
      else if (wj.state == "timing_disagrees")
        v->Set(Status::kRuleViolation, "witness_disagrees",
               "the timing the candidate's process reported disagrees with what the GPU was "
               "seen doing: " +
                   wj.message);
    }
  }
  rec->performance["witness"] = witness;
  // No speed is credited without a witness that ran and agreed, where there is one.
  if (witness_planned && v->decided && v->status == Status::kRuleViolation)
    rec->performance.erase("speedup");
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
  json cj = json::object();
  auto violate = [&](const std::string& reason, const std::string& msg) {
    if (v->status == Status::kPassed) {
      v->Set(Status::kRuleViolation, reason, msg);
      rec->instructions["arch_tag"] = "";
    }
  };
  try {
    if (!memcheck.messages.empty() && rec->memcheck.value("error_count", 0) == 0) {
      std::string d =
          CompareChildCall(req, family, axes, tol, scratch, memcheck,
                           rec->memcheck.value("seed", uint64_t{0}), "memcheck-reference");
      cj["memcheck_output"] = d.empty() ? "matches" : d;
      if (!d.empty())
        violate("observed_output_differs",
                "correct on the trials, but wrong under the memory checker: " + d);
    }
    if (!profiled.messages.empty()) {
      std::string d = CompareChildCall(req, family, axes, tol, scratch, profiled, profile_seed,
                                       "profile-reference");
      cj["profile_output"] = d.empty() ? "matches" : d;
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
  if (const json* k = rec->performance.is_object() && rec->performance.contains("kernels_launched")
                          ? &rec->performance["kernels_launched"]
                          : nullptr;
      k && k->is_array())
    c = k->get<std::set<std::string>>();
  if (const json& dyn = rec->instructions.value("dynamic", json()); dyn.is_object())
    if (dyn.contains("kernels")) d = dyn["kernels"].get<std::set<std::string>>();
  auto put = [&](const char* key, const std::optional<std::set<std::string>>& s) {
    cj["kernels"][key] = s ? json(*s) : json("unavailable");
  };
  put("trials", a);
  put("memcheck", b);
  put("timed", c);
  put("profiled", d);
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
  rec->instructions["cross_check"] = cj;
}

// --- the stages of Evaluate, in the order it runs them ---
// Each stage reads the context and what earlier stages produced (its arguments), writes its
// part of the record, and may decide the verdict; a stage that ends the evaluation says so in
// what it returns (false, or no result).

// What every stage reads: the request and what follows from it, fixed before the first stage.
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

  void Stage(const char* name, const std::string& what) const {
    if (req.on_stage) req.on_stage(name, what);
  }
};

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

// The record before any stage ran: what is evaluated, by which ptxbench, every layer not
// reached yet.
EvaluationRecord StartRecord(const EvalContext& c) {
  const Definition& def = c.def;
  EvaluationRecord rec;
  rec.created_at = NowUtcIso8601();
  rec.ptxbench_version = PTXBENCH_VERSION;
  rec.ptxbench_commit = PtxbenchCommit();
  rec.arch = c.req.arch;
  rec.task = {{"definition", def.name},
              {"family", def.family},
              {"workload_id", c.wl.id},
              {"axes", c.axes},
              {"flops", def.Flops(c.wl)},
              {"required_families", def.required_families.count(c.req.arch)
                                        ? json(def.required_families.at(c.req.arch))
                                        : json::array()}};
  if (def.flashinfer) {
    // Their names, so that a Trace written from this record is about their definition and
    // their workload exactly (report/flashinfer_bench.h).
    const FlashInferLink& fib = *def.flashinfer;
    auto w = fib.workloads.find(c.wl.id);
    rec.task["flashinfer_bench"] = {{"trace_set", fib.trace_set},
                                    {"file", fib.file},
                                    {"definition", def.name},
                                    {"workload", w != fib.workloads.end() ? w->second : json()}};
  }
  rec.performance = NotReachedLayer("an earlier stage failed");
  rec.sandbox = {{"probe", ProbeSandbox().ToJson()}};
  rec.correctness = NotReachedLayer("an earlier stage failed");
  rec.memcheck = NotReachedLayer("an earlier stage failed");
  return rec;
}

json CandidateJson(const std::string& path, const std::string& source, CandidateAbi abi) {
  return {{"path", ValidUtf8(path)},
          {"sha256", Sha256Hex(source)},
          {"bytes", source.size()},
          {"abi", ToString(abi)}};
}

// The source against the rules. False when that decided the verdict.
bool ScreenStage(const EvalContext& c, const std::string& source, EvaluationRecord* rec,
                 Verdict* v) {
  c.Stage("screen", "the source against the rules");
  auto t = Clock::now();
  ScreenResult screen = ScreenSource(source);
  rec->screening = ToJson(screen);
  rec->stage_seconds["screen"] = SecondsSince(t);
  if (screen.passed()) return true;
  v->Set(Status::kRejected, "", screen.message());
  return false;
}

// A tvm-ffi `run` of a definition with a scalar input takes that scalar as an argument; our
// call passes one tensor per argument (task/tvm_ffi_call.h), so it cannot be called right.
// False when that decided the verdict.
bool AbiCanCallDefinition(const EvalContext& c, CandidateAbi abi, Verdict* v) {
  const Definition& def = c.def;
  if (abi != CandidateAbi::kTvmFfi || !def.flashinfer || def.flashinfer->scalar_inputs.empty())
    return true;
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
    rec->stage_seconds["build"] = SecondsSince(t);
    if (e.kind() == ErrorKind::kUsage) throw;
    v->Set(Status::kInfraError, "", std::string("cannot build: ") + e.what());
    return std::nullopt;
  }
  rec->stage_seconds["build"] = SecondsSince(t);
  // nvcc's log and errors are whatever the compiler printed (the candidate's own bytes quoted).
  rec->build = ValidUtf8Json(ToJson(build));
  rec->toolchain["nvcc"] = ValidUtf8(build.nvcc_version);
  if (build.outcome != BuildOutcome::kBuilt) {
    std::string first =
        SplitLines(build.errors).empty() ? "nvcc failed" : SplitLines(build.errors)[0];
    v->Set(Status::kCompileError, "", Truncate(first, 300));
    return std::nullopt;
  }
  return build;
}

// What the shared object needs and exports. False when that decided the verdict.
bool LinkCheckStage(const EvalContext& c, const std::string& shared_object, CandidateAbi abi,
                    EvaluationRecord* rec, Verdict* v) {
  try {
    ElfInfo elf = ReadElfInfo(shared_object);
    rec->build["needed"] = elf.needed;
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
  rec->instructions["static_probe"] = {
      {"state", probe_problem.empty() ? "ran" : "failed"},
      {"message", probe_problem.empty() ? "the disassembler read a harness-built object"
                                        : ValidUtf8(probe_problem)}};
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
  rec->stage_seconds["inspect"] = SecondsSince(t);
  if (c.def.required_families.count(c.req.arch))
    s.required = c.def.required_families.at(c.req.arch);
  // The harness's own kernels are named ptxbench_*, and the memory checker and the profiler
  // leave them out; a candidate kernel by such a name would slip past both.
  for (const auto& f : s.sass.functions)
    if (f.mangled.find("ptxbench_") != std::string::npos) {
      rec->instructions = {{"static", ValidUtf8Json(s.sass.ToJson())}};
      v->Set(Status::kRejected, "",
             "kernel " + f.demangled + " uses the prefix ptxbench_, reserved for the harness");
      return std::nullopt;
    }
  if (s.sass.state == "failed") {
    rec->instructions = {{"static", ValidUtf8Json(s.sass.ToJson())},
                         {"required_families", s.required}};
    JudgeFailedInspection(c, s.sass, scratch, rec, v);
    return std::nullopt;
  }
  rec->instructions = {{"static", ValidUtf8Json(s.sass.ToJson())},
                       {"required_families", s.required},
                       {"verification", "not_correct"},
                       {"arch_tag", nullptr},
                       {"upstream_arch_tag", nullptr},
                       {"message", "the candidate is not correct"}};
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
    ChildOutcome ro = RunReferenceChild(c.req, c.family, c.axes, missing, ReferenceFolder(scratch),
                                        scratch, "reference");
    NoteDevice(ro, rec);
    if (const json* ng = ro.First("no_gpu")) {
      x.no_gpu = ng->value("message", "");
    } else {
      auto done = ro.All("reference");
      if (done.size() != missing.size() || !ro.First("done")) {
        v->Set(Status::kInfraError, "", "the reference failed: " + ReferenceFailure(ro));
        rec->stage_seconds["reference"] = SecondsSince(t);
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
  rec->stage_seconds["reference"] = SecondsSince(t);
  return x;
}

// No GPU to run on (`message` says why): what screening and the build earned stands, the GPU
// layers are skipped.
void SkipGpuLayers(const std::string& message, EvaluationRecord* rec, Verdict* v) {
  std::string why = "no GPU (" + message + ")";
  rec->correctness = SkippedLayer(why);
  rec->memcheck = SkippedLayer(why);
  rec->instructions["message"] =
      "correctness was not established (" + why + "): static inspection only, no tag";
  v->Set(Status::kInfraError, "no_gpu",
         "screening and build passed; the GPU layers were skipped: " + why);
}

// The candidate's child and what it told us; the later layers run the same request again
// under their observers.
struct CandidateRun {
  ChildRequest request;
  ChildOutcome outcome;
};

CandidateRun RunCandidateStage(const EvalContext& c, const std::string& shared_object,
                               CandidateAbi abi, const std::vector<uint64_t>& seeds,
                               const ScratchDir& scratch, EvaluationRecord* rec) {
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
  run.outcome = RunChild(cc);
  rec->stage_seconds["run"] = SecondsSince(t);
  NoteDevice(run.outcome, rec);
  return run;
}

void NoteCandidateSandbox(const ChildOutcome& co, EvaluationRecord* rec) {
  rec->sandbox["candidate_child"] = co.sandbox;
  if (const json* c = co.First("confinement")) rec->sandbox["inside"] = *c;
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
  rec->instructions["message"] = "correctness was not established (this GPU cannot run " +
                                 c.req.arch + "): static inspection only, no tag";
  v->Set(Status::kInfraError, "arch_unavailable",
         "this GPU (" + au->value("gpu", std::string("?")) + ", compute capability " +
             au->value("compute_capability", std::string("?")) + ") cannot run " + c.req.arch +
             " code; screening, build and static inspection passed");
  return true;
}

// How the candidate's run went (its verdict so far) and the correctness layer without the
// trials' comparison.
json JudgeCandidateRun(const EvalContext& c, const ChildOutcome& co, const ExpectedOutputs& x,
                       Verdict* v) {
  JudgeCandidateChild(co, c.req.options.timeout, v);
  const Tolerance& tol = c.tol;
  json correctness = {
      {"state", "ran"},
      {"trials", c.req.options.trials},
      {"seeds", x.seeds},
      {"tolerance", {{"rule", ToString(tol.rule)}, {"atol", tol.atol}, {"rtol", tol.rtol}}},
      {"reference", x.info},
      {"child_exit", co.exit.Describe()},
      {"child_log_tail", ValidUtf8(co.log_tail)}};
  if (!co.garbage.empty()) correctness["channel_garbage_lines"] = co.garbage.size();

  // A vendor library the candidate loaded at run time (behind the screen and the link
  // check): the child compares the loaded objects before the candidate and after its calls.
  if (const json* libs = co.Last("libraries")) {
    auto found = libs->value("new_vendor_libraries", std::vector<std::string>{});
    correctness["new_vendor_libraries"] = found;
    if (!found.empty() && (!v->decided || v->status == Status::kIncorrect))
      v->Set(Status::kRuleViolation, "forbidden_library",
             "the candidate loaded " + Join(found) + " at run time");
  }
  return correctness;
}

// Trial by trial, each output the candidate's child wrote against the reference's. Returns
// the trial results (correctness.trial_results).
json CompareStage(const EvalContext& c, const ChildOutcome& co, const ExpectedOutputs& x,
                  EvaluationRecord* rec, Verdict* v) {
  auto t = Clock::now();
  json trials = json::array();
  auto family_tensors = c.family.Tensors(c.axes);
  try {
    for (const json* m : co.All("trial")) {
      uint64_t seed = m->at("seed");
      size_t idx = 0;
      while (idx < x.seeds.size() && x.seeds[idx] != seed) ++idx;
      if (idx == x.seeds.size()) continue;  // not a seed we asked for: ignore, never trust
      json tj = {{"seed", seed},
                 {"seconds", m->value("seconds", 0.0)},
                 {"call_seconds", m->value("call_seconds", 0.0)}};
      auto before = m->at("input_checksums_before").get<std::vector<uint64_t>>();
      auto after = m->at("input_checksums_after").get<std::vector<uint64_t>>();
      tj["inputs_unchanged"] = before == after;
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
      json outputs = json::array();
      size_t k = 0;
      for (const auto& spec : family_tensors) {
        if (spec.role != TensorRole::kOutput) continue;
        OutputComparison cmp =
            CompareOutputFile(spec, x.entries[idx].output_files.at(k),
                              m->at("outputs").at(k).at("file"), co.folder, c.tol);
        json cj = ToJson(cmp);
        long long cols = spec.shape.size() >= 2 ? spec.shape.back() : 0;
        cj["summary"] = Describe(cmp, cols);
        outputs.push_back(cj);
        if (cmp.verdict != CompareVerdict::kMatch && !v->decided)
          v->Set(Status::kIncorrect, ToString(cmp.verdict), Describe(cmp, cols) + TrialName(*m));
        ++k;
      }
      tj["outputs"] = outputs;
      trials.push_back(tj);
    }
  } catch (const CandidateFileError& e) {
    if (!v->decided || v->status != Status::kRuleViolation)
      v->Set(Status::kRuleViolation, "channel_tampered", e.what());
  }
  rec->stage_seconds["compare"] = SecondsSince(t);
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
  ChildOutcome mo = RunChild(mc);
  memcheck_child = mo;
  rec->stage_seconds["memcheck"] = SecondsSince(t);
  std::string text;
  try {
    text = ValidUtf8(ReadFile(log));  // what the checker printed, the candidate's names in it
  } catch (const Error&) {
  }
  MemcheckReport report = ParseMemcheckLog(text);
  json mj = {{"state", "ran"},
             {"exit", mo.exit.Describe()},
             {"error_count", report.error_count},
             {"summary_seen", report.summary_seen},
             {"mode", ToString(req.options.sanitize)},
             {"seed", seed}};
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
      v->Set(Status::kMemoryError, "",
             Truncate(first, 400) + " (" + std::to_string(report.error_count) + " errors in all)");
  } else if (!report.summary_seen && mo.exit.kind != ExitKind::kTimedOut && !run_failed) {
    // The checker itself failed: we cannot claim the run was clean.
    mj["state"] = "failed";
    mj["log_tail"] = ValidUtf8(TailLines(text + "\n" + mo.log_tail, 20));
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
  mj["call_completed"] = call_done;
  if (!call_done && !run_failed && mo.exit.kind != ExitKind::kTimedOut) {
    if (mj.value("state", "") == "ran") mj["state"] = "incomplete";
    if (!v->decided || v->status == Status::kInfraError)
      v->Set(Status::kRuntimeError, "",
             "under the memory checker the candidate's process ended (" + mo.exit.Describe() +
                 ") without completing its call");
  }
  rec->memcheck = mj;
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
  MeasureTiming(c.req, c.fresh_seed, c.def, c.wl, c.family, c.axes, candidate, inspected.sass,
                scratch, c.tol, c.cache_root, rec, v);
}

// The verdict of a candidate that every layer so far found correct, in a line: its largest
// errors, the memory check's word, its speed against the baseline.
void DeclarePassed(const EvalContext& c, const json& trials, const EvaluationRecord& rec,
                   Verdict* v) {
  double max_abs = 0, max_rel = 0;
  for (const auto& tr : trials)
    for (const auto& o : tr["outputs"]) {
      max_abs = std::max(max_abs, o["max_abs_error"].get<double>());
      max_rel = std::max(max_rel, o["max_rel_error"].get<double>());
    }
  char buf[200];
  std::snprintf(buf, sizeof buf, "correct on %d trials (max abs error %.3g, max rel error %.3g)",
                c.req.options.trials, max_abs, max_rel);
  std::string msg = buf;
  std::string mstate = rec.memcheck.value("state", "");
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
                          EvaluationRecord* rec) {
  c.Stage("profile", "one call under the profiler: which instructions ran");
  auto t = Clock::now();
  ChildOutcome profiled;
  VerifyInstructions(c.req, c.fresh_seed ^ kProfileSeedSalt, c.def, c.wl, candidate, inspected.sass,
                     inspected.required, scratch, rec, &profiled);
  rec->stage_seconds["profile"] = SecondsSince(t);
  return profiled;
}

// The same behaviour under every observer (CrossCheckChildren).
void CrossCheckStage(const EvalContext& c, const ScratchDir& scratch, const ChildOutcome& trials,
                     const ChildOutcome& memcheck, const ChildOutcome& profiled,
                     EvaluationRecord* rec, Verdict* v) {
  auto t = Clock::now();
  CrossCheckChildren(c.req, c.family, c.axes, c.tol, scratch, c.fresh_seed ^ kProfileSeedSalt,
                     trials, memcheck, profiled, rec, v);
  rec->stage_seconds["cross_check"] = SecondsSince(t);
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
  if (cut > 0) rec->sandbox["record_strings_cut"] = cut;
}

// The GPU's lock for the stages that must have it alone (timing, the witness, the baselines,
// the profiler). Says when it waits; false (the verdict decided) when it was not free in time.
bool TakeGpuLock(const EvalContext& c, EvaluationRecord& rec, std::optional<GpuLock>* lock,
                 Verdict* v) {
  const json gpu = rec.toolchain.value("gpu", json::object());
  const std::string id = gpu.value("uuid", gpu.value("pci_bus_id", std::string()));
  const std::string path = GpuLockPath(id);
  static const std::atomic<bool> never{false};
  auto t = Clock::now();
  try {
    lock->emplace(path, std::chrono::milliseconds(0), never);
    if ((*lock)->outcome() != GpuLock::Outcome::kHeld) {
      c.Stage("gpu-lock", "waiting for " + path + " (another evaluation is timing on this GPU)");
      lock->reset();
      lock->emplace(
          path,
          std::chrono::duration_cast<std::chrono::milliseconds>(c.req.options.gpu_lock_timeout),
          never);
    }
  } catch (const Error& e) {
    v->Set(Status::kInfraError, "", std::string("cannot take the GPU lock: ") + e.what());
    return false;
  }
  rec.stage_seconds["gpu_lock_wait"] = SecondsSince(t);
  rec.sandbox["gpu_lock"] = path;
  if ((*lock)->outcome() != GpuLock::Outcome::kHeld) {
    v->Set(Status::kInfraError, "",
           "the GPU lock " + path + " was not free within " +
               std::to_string(c.req.options.gpu_lock_timeout.count()) +
               " s: another evaluation holds this GPU");
    return false;
  }
  return true;
}

}  // namespace

EvaluationRecord Evaluate(const EvalRequest& req) {
  const auto started = Clock::now();
  const EvalContext c = MakeContext(req);
  EvaluationRecord rec = StartRecord(c);
  Verdict v;
  auto finish = [&]() {
    rec.status = v.status;
    rec.reason = v.reason;
    rec.message = Truncate(v.message, 4096);
    rec.stage_seconds["total"] = SecondsSince(started);
    CapRecordSize(&rec);
    return rec;
  };

  const std::string source = ReadFile(req.kernel_path);
  // Which entry point the candidate declares (task/abi.h): ours, or upstream's tvm-ffi one.
  const CandidateAbi abi = DetectCandidateAbi(source);
  rec.candidate = CandidateJson(req.kernel_path, source, abi);

  // The CPU layers: each may end the evaluation with its verdict.
  if (!ScreenStage(c, source, &rec, &v) || !AbiCanCallDefinition(c, abi, &v)) return finish();
  const std::optional<BuildResult> build = BuildStage(c, source, &rec, &v);
  if (!build || !LinkCheckStage(c, build->shared_object, abi, &rec, &v)) return finish();
  ScratchDir scratch("ptxbench-eval");
  const std::optional<StaticStage> inspected =
      InspectStage(c, build->shared_object, scratch, &rec, &v);
  if (!inspected) return finish();
  const std::optional<ExpectedOutputs> expected = ReferenceStage(c, scratch, &rec, &v);
  if (!expected) return finish();
  if (!expected->no_gpu.empty()) {
    SkipGpuLayers(expected->no_gpu, &rec, &v);
    return finish();
  }

  // The correctness layer: the trials, then the memory check.
  const CandidateRun run =
      RunCandidateStage(c, build->shared_object, abi, expected->seeds, scratch, &rec);
  if (const json* ng = BeforeLoading(run.outcome, "no_gpu")) {
    SkipGpuLayers(ng->value("message", ""), &rec, &v);
    return finish();
  }
  NoteCandidateSandbox(run.outcome, &rec);
  if (ArchUnavailable(c, run.outcome, &rec, &v)) return finish();
  json correctness = JudgeCandidateRun(c, run.outcome, *expected, &v);
  // "No GPU", "this arch cannot run" after the load: the candidate's process talking.
  for (const char* claim : {"no_gpu", "arch_unavailable", "object_mismatch"})
    if (run.outcome.First(claim) && !BeforeLoading(run.outcome, claim)) {
      correctness["candidate_claims"].push_back(claim);
      if (!v.decided || v.status == Status::kRuntimeError) v.claimed_infra = true;
    }
  const json trials = CompareStage(c, run.outcome, *expected, &rec, &v);
  correctness["trial_results"] = trials;
  rec.correctness = correctness;
  ConfirmCandidateFailure(req, scratch, &rec, &v);
  const ChildOutcome memcheck = MemcheckStage(c, run.request, scratch, &rec, &v);
  ConfirmCandidateFailure(req, scratch, &rec, &v);

  // The stages that must have the GPU alone take its lock, whoever started the evaluation.
  std::optional<GpuLock> lock;
  if (!v.decided && !TakeGpuLock(c, rec, &lock, &v)) return finish();
  // The timing layer, then the instruction layer's dynamic check, for a correct candidate.
  TimingStage(c, run.request, *inspected, scratch, &rec, &v);
  ConfirmCandidateFailure(req, scratch, &rec, &v);
  if (!v.decided) {
    DeclarePassed(c, trials, rec, &v);
    const ChildOutcome profiled = ProfileStage(c, run.request, *inspected, scratch, &rec);
    CrossCheckStage(c, scratch, run.outcome, memcheck, profiled, &rec, &v);
  }
  lock.reset();
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
  s << "  " << r.task.value("definition", "") << " " << r.arch << "\n  " << r.message << "\n";
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
