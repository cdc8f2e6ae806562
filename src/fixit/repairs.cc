#include "fixit/repairs.h"

#include <filesystem>

#include "agent/trajectory.h"
#include "common/files.h"
#include "fixit/keep.h"

namespace ptxbench {
namespace {

using nlohmann::json;

// The repair attempt of `turn` made the failure's repair: what repairs.json says of it.
void MarkKept(json* entry, const std::string& run_dir, const TurnRecord& turn,
              const RepairJudgement& j, const json& record) {
  json& e = *entry;
  e["kept"] = true;
  e["turn"] = turn.turn;
  e["repair_evaluation_id"] =
      std::filesystem::path(run_dir).filename().string() + "/" + turn.evaluation_id;
  e["kernel_file"] = turn.kernel_file;
  e["evaluation_file"] = turn.evaluation_file;
  e["status"] = j.status;
  e["verification"] = j.verification;
  e["arch_tag"] = j.arch_tag;
  e["speedup"] = j.speedup ? json(*j.speedup) : json();
  e["tflops"] = j.tflops ? json(*j.tflops) : json();
  e["layers"] = LayerStates(record);
}

// One failure's entry: its attempts' verdicts, and the first kept one, or why none was kept
// (returned in `reason`).
json JudgeAttempts(const std::string& run_dir, const Trajectory& t, json entry,
                   const std::string& arch, std::optional<double> min_speedup,
                   std::string* reason) {
  json attempts = json::array();
  std::string last_reason = t.turns.empty() ? "no attempt" : "";
  for (const TurnRecord& turn : t.turns) {
    json at = {{"turn", turn.turn}, {"outcome", turn.outcome}, {"status", turn.status}};
    bool has_record =
        !turn.evaluation_file.empty() && FileExists(run_dir + "/" + turn.evaluation_file);
    json record = has_record ? json::parse(ReadFile(run_dir + "/" + turn.evaluation_file)) : json();
    if (has_record) at["layers"] = LayerStates(record);
    if (!has_record || !turn.spent) {
      // A turn the harness could not judge (no GPU, a tool missing) or the endpoint lost is
      // no verdict on the repair: `--resume` tries it again.
      at["verdict"] = !turn.spent ? "not judged (" + turn.outcome + ": " +
                                        (turn.error.empty() ? "?" : turn.error) + ")"
                                  : std::string("no kernel");
      last_reason = !turn.spent ? "not judged (" + turn.outcome + ")" : "no kernel";
      attempts.push_back(at);
      continue;
    }
    RepairJudgement j = JudgeRepair(record, arch, min_speedup);
    at["verdict"] = j.reason;
    if (j.speedup) at["speedup"] = *j.speedup;
    attempts.push_back(at);
    last_reason = j.reason;
    if (j.kept && !entry["kept"].get<bool>()) MarkKept(&entry, run_dir, turn, j, record);
  }
  entry["attempts"] = attempts;
  *reason = entry["kept"].get<bool>() ? "kept" : last_reason;
  return entry;
}

}  // namespace

CollectedRepairs CollectRepairs(const std::string& run_dir, const Manifest& m,
                                const std::string& arch, std::optional<double> min_speedup) {
  CollectedRepairs out;
  for (const Failure& f : m.failures) {
    std::string tid = f.key + "-0";
    json entry = {{"failure_id", f.id},
                  {"key", f.key},
                  {"task", f.task},
                  {"trajectory_id", tid},
                  {"kept", false}};
    std::string file = run_dir + "/trajectories/" + tid + ".json";
    if (!FileExists(file)) {
      entry["reason"] = "not attempted";
      ++out.not_kept["not attempted"];
      out.repairs.push_back(entry);
      continue;
    }
    Trajectory t = TrajectoryFromJson(json::parse(ReadFile(file)));
    entry["exit_status"] = t.exit_status;
    std::string reason;
    entry = JudgeAttempts(run_dir, t, std::move(entry), arch, min_speedup, &reason);
    entry["reason"] = reason;
    if (entry["kept"].get<bool>())
      ++out.kept;
    else
      ++out.not_kept[reason];
    out.repairs.push_back(entry);
  }
  return out;
}

}  // namespace ptxbench
