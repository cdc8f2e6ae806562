#include "run/children.h"

#include "common/error.h"
#include "common/files.h"
#include "common/gpu_trace.h"
#include "common/sandbox.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "compile/tvm_ffi.h"
#include "run/channel.h"
#include "run/confine.h"
#include "run/protocol.h"

#include <sys/stat.h>
#include <unistd.h>

namespace ptxbench {

const nlohmann::json* ChildOutcome::First(const std::string& event) const {
  for (const auto& m : messages)
    if (m.value("event", "") == event) return &m;
  return nullptr;
}

const nlohmann::json* ChildOutcome::Last(const std::string& event) const {
  for (auto it = messages.rbegin(); it != messages.rend(); ++it)
    if (it->value("event", "") == event) return &*it;
  return nullptr;
}

std::vector<const nlohmann::json*> ChildOutcome::All(const std::string& event) const {
  std::vector<const nlohmann::json*> v;
  for (const auto& m : messages)
    if (m.value("event", "") == event) v.push_back(&m);
  return v;
}

std::string ChildFolder(const std::string& work_dir, const std::string& name) {
  return work_dir + "/" + name + ".d";
}

void HashSharedObject(nlohmann::json* spec) {
  if (!spec->contains("shared_object") || spec->contains("shared_object_sha256")) return;
  (*spec)["shared_object_sha256"] = Sha256FileHex((*spec)["shared_object"].get<std::string>());
}

namespace {

// What is read of a child's log: its last 64 KiB. A candidate printing without end made the
// evaluator hold its whole output (100 MiB of stderr: 4.1 GiB of memory, a 4 MiB record).
constexpr size_t kLogTailBytes = 64u << 10;

// The end of a child's log, as a record quotes it: no secret of ours, 40 lines at most, and
// a word about what came before.
std::string LogTail(const std::string& log_path) {
  size_t total = 0;
  std::string bytes = ReadFileTail(log_path, kLogTailBytes, &total);
  std::string tail = TailLines(bytes, 40);
  if (total > bytes.size())
    tail = "[" + std::to_string(total - bytes.size()) + " earlier bytes not kept]\n" + tail;
  return RedactSecrets(tail);
}

}  // namespace

ChildOutcome RunChild(const ChildRequest& r) {
  ChildOutcome o;
  nlohmann::json spec = r.spec;
  HashSharedObject(&spec);
  std::string executable = r.executable.empty() ? SelfExecutable() : r.executable;
  std::string spec_path = r.work_dir + "/" + r.name + ".spec.json";
  SandboxPolicy policy;
  if (r.confine) {
    o.folder = ChildFolder(r.work_dir, r.name);
    policy = CandidateChildPolicy(o.folder, r.tool_roots);
    if (r.keep_user) {
      policy.drop_user = false;
    } else {
      SandboxUser user = ClaimSandboxUser(r.work_dir);
      policy.uid = user.uid;
      policy.gid = user.gid;
    }
    MakeChildFolder(r.work_dir, r.name + ".d", policy);
    if (spec.contains("shared_object"))
      spec["shared_object"] =
          CopyIntoChildFolder(spec["shared_object"], o.folder, "candidate.so", policy);
    // A tvm-ffi candidate (task/abi.h) needs the TVM-FFI runtime: a copy beside its own, which
    // the child loads first, hashed like the candidate (spec "preload"), so that the
    // candidate's dependency is that copy wherever our tree lies; and the folder itself
    // readable, for the path after $ORIGIN in its run path.
    if (spec.value("abi", std::string()) == "tvm-ffi") {
      std::string why;
      auto tvm_ffi = FindTvmFfi(&why);
      if (!tvm_ffi) throw EnvironmentError("the TVM-FFI runtime is missing: " + why);
      std::string sha256 = Sha256FileHex(tvm_ffi->library);
      std::string copy = CopyIntoChildFolder(tvm_ffi->library, o.folder, "libtvm_ffi.so", policy);
      spec["preload"] = nlohmann::json::array({{{"path", copy}, {"sha256", sha256}}});
      policy.read_paths.push_back(tvm_ffi->root);
    }
    spec["out_dir"] = o.folder;
    spec["confine"] = {{"seccomp", true}, {"allow_inet", r.allow_inet}};
    executable = SandboxedExecutable(executable);
    spec_path = o.folder + "/spec.json";
  }
  // The program the child runs must be readable and executable inside its confinement.
  if (r.confine) policy.read_paths.push_back(executable);
  WriteFileAtomic(spec_path, spec.dump(2));
  if (r.confine && ProbeSandbox().user_drop) ::chown(spec_path.c_str(), policy.uid, policy.gid);
  PreparedSandbox sandbox(policy);
  o.sandbox = sandbox.Describe();
  ProcessSpec p;
  p.argv = r.wrapper;
  p.argv.push_back(executable);
  p.argv.push_back("__child");
  p.argv.push_back(spec_path);
  p.log_path = r.work_dir + "/" + r.name + ".log";
  p.channel_fd = kChannelFd;
  p.control_fd = kControlFd;
  p.sandbox = r.confine ? &sandbox : nullptr;
  Child child = Child::Start(p);
  GpuTrace("child_start",
           {{"name", r.name}, {"child", child.pid()}, {"wrapper", !r.wrapper.empty()}});
  std::function<void(const std::string&)> on_line;
  // Lives as long as the wait: on_line answers through it.
  ChildRequest::Reply reply = [&child](const std::string& line) { return child.SendControl(line); };
  if (r.on_message || GpuTraceOn()) {
    on_line = [&](const std::string& line) {
      std::vector<std::string> garbage;
      for (const auto& m : ParseChannel({line}, &garbage)) {
        if (m.is_object() && m.contains("event") && m["event"].is_string())
          GpuTrace("child_says", {{"name", r.name}, {"event", m["event"]}});
        if (r.on_message) r.on_message(m, reply);
      }
    };
  }
  o.exit = child.Wait(std::chrono::steady_clock::now() + r.timeout, on_line,
                      r.answer_time_is_not_the_childs);
  GpuTrace("child_exit", {{"name", r.name}});
  o.messages = ParseChannel(child.channel_lines(), &o.garbage);
  o.log_path = p.log_path;
  // A candidate's output reaches records and the model's feedback: never a secret of ours,
  // and only its end (the parent never reads more of the log than that).
  o.log_tail = LogTail(p.log_path);
  return o;
}

ChildOutcome RunProbeChild() {
  ScratchDir scratch("ptxbench-probe");
  ChildRequest probe;
  probe.spec = ProbeSpecJson();
  probe.work_dir = scratch.path();
  probe.name = "probe";
  probe.timeout = std::chrono::seconds(60);
  return RunChild(probe);
}

std::optional<std::string> WhyNoGpu() {
  ChildOutcome o = RunProbeChild();
  if (o.First("device")) return std::nullopt;
  if (const nlohmann::json* ng = o.First("no_gpu")) return ng->value("message", "no GPU");
  return "the probe child " + o.exit.Describe();
}

}  // namespace ptxbench
