#include "evaluate/stage_support.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "common/error.h"
#include "common/strings.h"
#include "evaluate/gpu_gate.h"
#include "record/environment_layers.h"
#include "record/vocabulary.h"
#include "run/protocol.h"
#include "task/device_ops.h"

namespace ptxbench::evaluation {

namespace {

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

// A candidate-free child on the evaluation's GPU, right after a candidate's process said the
// harness failed: nullopt when the GPU answers as it should (so the failure was the
// candidate's), else why it does not.
std::optional<std::string> ProbeGpuUnhealthy(const EvalRequest& req, const ScratchDir& scratch) {
  ChildRequest pr = HarnessChild(req, scratch, "health-probe", std::chrono::seconds(60));
  pr.spec = ProbeSpecJson();
  ChildOutcome o = RunChild(pr);
  if (o.First("device") && o.First("done") && !o.First("no_gpu") && !o.First("error"))
    return std::nullopt;
  if (const json* ng = o.First("no_gpu")) return "no GPU: " + ng->value("message", "");
  if (const json* e = o.First("error")) return e->value("message", "");
  return "the probe " + o.exit.Describe();
}

}  // namespace

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
  const float* expected = static_cast<const float*>(exp.data());
  OutputComparison c = spec.dtype == DType::kBF16
                           ? CompareBf16(static_cast<const uint16_t*>(got.data()), expected, n, tol)
                       : spec.dtype == DType::kF16
                           ? CompareF16(static_cast<const uint16_t*>(got.data()), expected, n, tol)
                           : CompareF32(static_cast<const float*>(got.data()), expected, n, tol);
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

// The GPU a child reported, into the record's toolchain.
void NoteDevice(const ChildOutcome& child, EvaluationRecord* rec) {
  if (const json* d = child.First("device")) {
    ToolchainLayer toolchain = ToolchainLayerOf(*rec);
    toolchain.gpu = *d;
    toolchain.gpu.erase("event");
    rec->toolchain = ToJson(toolchain);
  }
}

std::string ArchTag(const std::string& arch) { return CreditTag(ArchFamilyOf(arch)); }

std::string Count(double v) { return HumanCount(v); }

std::string FormatPercent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * fraction);
  return buf;
}

ChildRequest HarnessChild(const EvalRequest& req, const ScratchDir& scratch,
                          const std::string& name, std::chrono::seconds timeout) {
  ChildRequest r;
  r.work_dir = scratch.path();
  r.name = name;
  r.timeout = timeout;
  r.executable = req.executable;
  return r;
}

ChildRequest ReferenceChild(const EvalRequest& req, const Family& family, const Axes& axes,
                            const std::vector<uint64_t>& seeds, const std::string& out_dir,
                            const ScratchDir& scratch, const std::string& name,
                            const std::vector<uint64_t>& set_seeds) {
  ChildRequest cr = HarnessChild(req, scratch, name, req.reference_timeout);
  cr.spec = ToJson(ReferenceSpec{{.family = family.Name(), .axes = axes, .out_dir = out_dir},
                                 /*seeds=*/seeds,
                                 /*set_seeds=*/set_seeds});
  return cr;
}

ChildOutcome RunReferenceChild(const EvalRequest& req, const Family& family, const Axes& axes,
                               const std::vector<uint64_t>& seeds, const std::string& out_dir,
                               const ScratchDir& scratch, const std::string& name,
                               const std::vector<uint64_t>& set_seeds) {
  return RunChild(ReferenceChild(req, family, axes, seeds, out_dir, scratch, name, set_seeds));
}

void SetGpuRefused(const GpuAccess& gpu, Verdict* v, const std::string& what_it_cost) {
  v->Set(Status::kInfraError, gpu.Reason(), gpu.Failure() + what_it_cost);
}

bool HoldGpu(const EvalContext& c, GpuLock::Mode mode, Verdict* v) {
  if (!c.gpu || c.gpu->Hold(mode)) return true;
  if (!v->decided) SetGpuRefused(*c.gpu, v);
  return false;
}

std::optional<ChildOutcome> RunGatedChild(const EvalContext& c, ChildRequest child, Verdict* v,
                                          bool alone_before_load) {
  if (!c.gpu) return RunChild(child);
  if (!GpuGateEnabled()) {
    // As before the gate: the whole child under the hold; a timed child's candidate_ready is
    // answered at once (it holds the GPU alone from its start).
    if (!HoldGpu(c, alone_before_load ? GpuLock::Mode::kAlone : GpuLock::Mode::kShared, v))
      return std::nullopt;
    auto forward = std::move(child.on_message);
    child.on_message = [forward](const nlohmann::json& m, const ChildRequest::Reply& reply) {
      if (m.is_object() && m.value("event", "") == event::kCandidateReady) {
        reply(kGateGo);
        return;
      }
      if (forward) forward(m, reply);
    };
    ChildOutcome outcome = RunChild(child);
    c.gpu->Release();
    return outcome;
  }
  auto gate = GateChildOnGpu(&child, c.gpu, alone_before_load);
  ChildOutcome outcome = RunChild(child);
  c.gpu->Release();
  if (gate->loaded_without_alone) {
    // The parent never holds the GPU alone on the child's word that it will ask: a timed child
    // that loaded its candidate without the GPU alone timed beside whatever else ran.
    if (!v->decided)
      v->Set(Status::kInfraError, "gpu_not_alone",
             "the timed child loaded the candidate while this evaluation did not hold the GPU "
             "alone: its timings could include other evaluations' work, and are not used");
    return std::nullopt;
  }
  if (!gate->refused) return outcome;
  if (!v->decided) SetGpuRefused(*c.gpu, v);
  return std::nullopt;
}

// Why a reference child did not deliver: its error, else how it ended.
std::string ReferenceFailure(const ChildOutcome& ro) {
  return ro.First("error") ? ro.First("error")->value("message", "")
                           : "reference child " + ro.exit.Describe();
}

// A verdict that rests on a harness failure the candidate's own process reported stays the
// candidate's (RUNTIME_ERROR) unless a candidate-free probe finds the GPU unhealthy: then it
// is INFRA_ERROR, with the probe's evidence.
void ConfirmCandidateFailure(const EvalRequest& req, const ScratchDir& scratch,
                             EvaluationRecord* rec, Verdict* v) {
  if (!v->decided || !v->claimed_infra) return;
  std::optional<std::string> unhealthy = ProbeGpuUnhealthy(req, scratch);
  SandboxLayer sandbox = SandboxLayerOf(*rec);
  sandbox.health_probe =
      SandboxLayer::HealthProbe{.healthy = !unhealthy, .why = unhealthy.value_or("")};
  rec->sandbox = ToJson(sandbox);
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

}  // namespace ptxbench::evaluation
