#include "agent/run_identity.h"

#include <filesystem>

#include "common/error.h"
#include "common/files.h"
#include "common/strings.h"

namespace ptxbench {

namespace {

using nlohmann::json;

// The run's identity, as JSON pointers into run.json. Not in it: concurrency, the evaluator's
// address, the times: they change how fast a run goes, not what it finds.
const char* const kIdentity[] = {
    "/model", "/tasks", "/workload", "/trajectories", "/turns", "/target_speedup", "/arch", "/pack",
    "/pack_info/sha256", "/context", "/sanitize", "/timing", "/timeout", "/timing_budget",
    "/baseline", "/ptxbench_version", "/ptxbench_commit",
    // A fixit repair run: the manifest it repairs (its hash) and the bar a repair must pass.
    "/fixit"};

std::string Shown(const json& j) { return Truncate(j.dump(), 120); }

}  // namespace

std::optional<std::string> RunIdentityDifference(const json& before, const json& now) {
  for (const char* field : kIdentity) {
    json::json_pointer p(field);
    bool had = before.contains(p), has = now.contains(p);
    if (!had && !has) continue;
    if (!had && std::string(field) == "/ptxbench_commit") continue;
    // A run from before the attention baseline could be chosen was timed against cuDNN.
    if (!had && std::string(field) == "/baseline" && now.at(p) == "cudnn") continue;
    std::string name = std::string(field).substr(1);
    if (!had || !has || before.at(p) != now.at(p))
      return name + " differs: the run has " + (had ? Shown(before.at(p)) : "none") +
             ", this command " + (has ? Shown(now.at(p)) : "none");
  }
  return std::nullopt;
}

void PrepareRunFolder(const std::string& dir, bool resume, bool overwrite) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool exists = fs::exists(dir, ec);
  const bool has_run = FileExists(dir + "/run.json");
  if (resume) {
    if (!has_run)
      throw UsageError("--resume: " + dir + " holds no run (no run.json); nothing to resume");
    return;
  }
  if (!exists) return;
  if (!fs::is_directory(dir, ec)) throw UsageError(dir + " exists and is not a folder");
  if (has_run) {
    if (!overwrite)
      throw UsageError(dir +
                       " holds a run already: --resume continues it, --overwrite replaces it");
    for (const auto& e : fs::directory_iterator(dir, ec)) fs::remove_all(e.path(), ec);
    if (ec) throw EnvironmentError("cannot empty " + dir + ": " + ec.message());
    return;
  }
  if (!fs::is_empty(dir, ec))
    throw UsageError(dir + " is a folder with other files in it (no run.json); " +
                     "choose an empty or new folder");
}

}  // namespace ptxbench
