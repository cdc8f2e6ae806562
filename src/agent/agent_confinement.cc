#include "agent/agent_confinement.h"

#include <filesystem>

#include "common/error.h"

namespace ptxbench {

namespace fs = std::filesystem;

namespace {

const char* const kSystemFolders[] = {"/usr",    "/bin", "/sbin", "/lib",  "/lib32", "/lib64",
                                      "/libx32", "/etc", "/opt",  "/proc", "/sys",   "/run"};
const char* const kDevices[] = {"/dev/null",    "/dev/zero", "/dev/random",
                                "/dev/urandom", "/dev/tty",  "/dev/ptmx"};

std::string Normal(const std::string& p) {
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(fs::absolute(p), ec);
  return (ec ? fs::absolute(p).lexically_normal() : canonical).string();
}

// `inner` is `outer` or lies beneath it.
bool Beneath(const std::string& inner, const std::string& outer) {
  if (outer == "/") return true;
  return inner == outer || inner.rfind(outer + "/", 0) == 0;
}

}  // namespace

nlohmann::json ToJson(const AgentConfinement& c) {
  return {{"confined", c.confined}, {"read", c.read_paths}, {"write", c.write_paths}};
}

AgentConfinement AgentConfinementFromJson(const nlohmann::json& j) {
  AgentConfinement c;
  if (!j.is_object()) return c;
  c.confined = j.value("confined", true);
  c.read_paths = j.value("read", std::vector<std::string>{});
  c.write_paths = j.value("write", std::vector<std::string>{});
  return c;
}

SandboxPolicy AgentSandboxPolicy(const AgentConfinement& c, const std::string& run_dir,
                                 const std::string& workspace, const std::string& ptxbench) {
  SandboxPolicy p;
  if (!c.confined) return p;  // disabled: the user's recorded choice
  const SandboxSupport& support = ProbeSandbox();
  if (support.landlock_abi == 0)
    throw EnvironmentError(
        "the coding agent cannot be confined here (Landlock: " + support.landlock_why +
        "); --agent-unconfined runs it with the user's full access, and says so in the "
        "run's identity");
  p.enabled = true;
  p.env_allow = {"*"};   // its API keys and configuration; the run's own are unset by the caller
  p.namespaces = false;  // it talks to its model over the network
  p.private_dev_shm = false;
  p.drop_user = false;  // its login and configuration belong to the user
  p.landlock = true;
  const std::string run = Normal(run_dir);
  const std::string own = Normal(workspace);
  // Every path it is given, checked against the run folder: never above it, and inside it
  // only its own workspace.
  auto check = [&](const std::string& path, const char* what) {
    const std::string n = Normal(path);
    if (Beneath(run, n))
      throw UsageError(std::string("the coding agent's ") + what + " path " + n +
                       " holds the run folder " + run +
                       ": the other trajectories and the evaluation records would be open to it "
                       "(choose --out outside it)");
    if (Beneath(n, run) && !Beneath(n, own))
      throw UsageError(std::string("the coding agent's ") + what + " path " + n +
                       " lies in the run folder " + run + ", which the agent may not reach");
    return n;
  };
  std::error_code ec;
  for (const char* f : kSystemFolders)
    if (fs::is_directory(f, ec)) p.read_paths.push_back(check(f, "system"));
  p.read_paths.push_back(check(ptxbench, "program"));
  for (const auto& r : c.read_paths) p.read_paths.push_back(check(r, "--agent-read"));
  p.write_paths.push_back(own);
  for (const auto& w : c.write_paths) p.write_paths.push_back(check(w, "--agent-write"));
  for (const char* d : kDevices)
    if (fs::exists(d, ec)) p.device_paths.push_back(d);
  return p;
}

}  // namespace ptxbench
