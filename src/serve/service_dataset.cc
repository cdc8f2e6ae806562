#include "serve/service_dataset.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "agent/trajectory.h"
#include "record/upstream_sass.h"

namespace ptxbench {
namespace {

using nlohmann::json;

std::string Str(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}
int Int(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number_integer() ? j[key].get<int>() : 0;
}

}  // namespace

ServiceDatasetLoad DatasetFromServiceJobs(const std::vector<FinishedJob>& jobs) {
  ServiceDatasetLoad out;
  // (run@started_at, trajectory) -> row; turns keyed by number, the later job winning.
  std::map<std::pair<std::string, std::string>, TrajectoryRow> rows;
  std::map<std::pair<std::string, std::string>, std::map<int, TurnRow>> turns;
  for (const FinishedJob& j : jobs) {
    ++out.evaluations;
    const json& tag = j.tag;
    std::string trajectory = Str(tag, "trajectory");
    int turn = Int(tag, "turn");
    if (trajectory.empty() || turn < 1 || !j.record.is_object()) {
      ++out.untagged;
      continue;
    }
    std::string outcome = OutcomeOf(j.record);
    if (outcome == "infra") continue;  // not the model's turn, as in the clients' own files
    std::string run = Str(tag, "run");
    std::string started = Str(tag, "started_at");
    auto key = std::make_pair(started.empty() ? run : run + "@" + started, trajectory);
    TrajectoryRow& row = rows[key];
    if (row.id.empty()) {
      row.run_id = key.first;
      row.id = trajectory;
      row.model = Str(tag, "model");
      row.provider = Str(tag, "provider");
      row.task = Str(tag, "task");
      row.workload = Str(tag, "workload");
      row.arch = Str(tag, "arch");
      row.pack = Str(tag, "pack");
      row.index = Int(tag, "index");
      // The database does not see the end of a trajectory; the report counts it as finished.
      row.exit_status = "unknown (service)";
    }
    TurnRow r;
    r.turn = turn;
    r.outcome = outcome;
    r.status = Str(j.record, "status");
    r.reason = Str(j.record, "reason");
    const json perf = j.record.value("performance", json::object());
    if (perf.is_object() && perf.contains("speedup") && perf["speedup"].is_number())
      r.speedup = perf["speedup"].get<double>();
    if (perf.is_object() && perf.contains("tflops") && perf["tflops"].is_number())
      r.tflops = perf["tflops"].get<double>();
    const json ins = j.record.value("instructions", json::object());
    r.verification = Str(ins, "verification");
    r.arch_tag = Str(ins, "arch_tag");
    r.evaluation_id = Str(tag, "evaluation_id");
    const json build = j.record.value("build", json::object());
    r.upstream_sass = UpstreamSassColumns(ins, Str(build, "shared_object_sha256"), row.arch,
                                          r.Correct(), r.evaluation_id);
    const json stages = j.record.value("stage_seconds", json::object());
    if (stages.is_object() && stages.contains("total") && stages["total"].is_number())
      r.evaluation_seconds = stages["total"].get<double>();
    auto [it, fresh] = turns[key].insert_or_assign(turn, r);
    if (!fresh) ++out.repeated;
  }
  for (auto& [key, row] : rows) {
    for (auto& [n, r] : turns[key]) row.turns.push_back(std::move(r));
    out.dataset.trajectories.push_back(std::move(row));
  }
  return out;
}

}  // namespace ptxbench
