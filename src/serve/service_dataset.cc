#include "serve/service_dataset.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "agent/trajectory.h"
#include "common/json_fields.h"
#include "record/record.h"
#include "record/report_rows.h"
#include "record/upstream_sass.h"

namespace ptxbench {

using nlohmann::json;

ServiceDatasetLoad DatasetFromServiceJobs(const std::vector<FinishedJob>& jobs) {
  ServiceDatasetLoad out;
  // (run@started_at, trajectory) -> row; turns keyed by number, the later job winning.
  std::map<std::pair<std::string, std::string>, TrajectoryRow> rows;
  std::map<std::pair<std::string, std::string>, std::map<int, TurnRow>> turns;
  for (const FinishedJob& j : jobs) {
    ++out.evaluations;
    const json& tag = j.tag;
    std::string trajectory = StrField(tag, "trajectory");
    int turn = static_cast<int>(IntField(tag, "turn"));
    if (trajectory.empty() || turn < 1 || !j.record.is_object()) {
      ++out.untagged;
      continue;
    }
    const EvaluationRecord record = FromJson(j.record);
    const std::string arch = StrField(tag, "arch");
    TurnRow r = TurnRowFromRecord(record, arch, turn, StrField(tag, "evaluation_id"));
    if (r.outcome == "infra") continue;  // not the model's turn, as in the clients' own files
    std::string run = StrField(tag, "run");
    std::string started = StrField(tag, "started_at");
    auto key = std::make_pair(started.empty() ? run : run + "@" + started, trajectory);
    TrajectoryRow& row = rows[key];
    if (row.id.empty()) {
      row.run_id = key.first;
      row.id = trajectory;
      row.model = StrField(tag, "model");
      row.provider = StrField(tag, "provider");
      row.task = StrField(tag, "task");
      row.workload = StrField(tag, "workload");
      row.arch = arch;
      row.pack = StrField(tag, "pack");
      row.index = IntField(tag, "index");
      // The database does not see the end of a trajectory; the report counts it as finished.
      row.exit_status = "unknown (service)";
    }
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
