#include "report/from_runs.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/bounded_json.h"
#include "common/error.h"
#include "common/files.h"
#include "common/json_fields.h"
#include "record/record.h"
#include "record/report_rows.h"
#include "record/turn.h"
#include "record/upstream_sass.h"

namespace ptxbench {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A trajectory's row, but for its turns, from its file's "info" and its run's run.json.
TrajectoryRow TrajectoryRowOf(const fs::path& run, const json& info, const json& ti) {
  const json model = info.value("model", json::object());
  const json pack_info = info.value("pack_info", json::object());
  return {.run_id = run.filename().string(),
          .id = StrField(ti, "id"),
          .model = StrField(model, "name"),
          .provider = StrField(model, "provider"),
          .task = StrField(ti, "task"),
          .workload = StrField(ti, "workload"),
          .arch = StrField(info, "arch"),
          .pack = StrField(info, "pack"),
          .pack_hardware_verified = BoolField(pack_info, "hardware_verified"),
          .index = ti.value("index", 0),
          .exit_status = StrField(ti, "exit_status"),
          .run_dir = run.string(),
          .turns = {}};  // the caller's, from the file's turns
}

void LoadRun(const fs::path& run, RunFolderLoad* out) {
  json info = ParseBoundedJsonOrDiscarded(ReadFile((run / "run.json").string()));
  if (info.is_discarded() || !info.is_object()) {
    out->skipped.push_back((run / "run.json").string() + ": not JSON");
    return;
  }
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run / "trajectories", ec))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    json t = ParseBoundedJsonOrDiscarded(ReadFile(f.string()));
    if (t.is_discarded() || !t.contains("info") || !t["info"].contains("turns")) {
      out->skipped.push_back(f.string() + ": not a trajectory");
      continue;
    }
    const json& ti = t["info"];
    TrajectoryRow row = TrajectoryRowOf(run, info, ti);
    std::vector<TurnRecord> turns;
    try {
      for (const json& u : ArrField(ti, "turns"))
        turns.push_back(
            TurnFromJson(u, f.string() + ": turn #" + std::to_string(turns.size() + 1)));
    } catch (const Error& e) {  // a turn without its number or outcome: not a trajectory
      out->skipped.push_back(e.what());
      continue;
    }
    for (const TurnRecord& u : turns) {
      if (!u.spent) continue;
      TurnRow r = TurnRowOf(u);
      if (!r.evaluation_file.empty() && FileExists((run / r.evaluation_file).string())) {
        json rec = ParseBoundedJsonOrDiscarded(ReadFile((run / r.evaluation_file).string()));
        AddRecordColumns(FromJson(rec), row.arch, &r);
      }
      row.turns.push_back(r);
    }
    out->dataset.trajectories.push_back(std::move(row));
  }
}

}  // namespace

RunFolderLoad LoadRunFolders(const std::vector<std::string>& paths) {
  RunFolderLoad out;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::exists(fs::path(p) / "run.json")) {
      LoadRun(p, &out);
      continue;
    }
    if (!fs::is_directory(p, ec)) {
      out.skipped.push_back(p + ": not a run folder or a folder of them");
      continue;
    }
    std::vector<fs::path> runs;
    for (const auto& e : fs::directory_iterator(p, ec))
      if (fs::exists(e.path() / "run.json")) runs.push_back(e.path());
    std::sort(runs.begin(), runs.end());
    for (const auto& r : runs) LoadRun(r, &out);
  }
  return out;
}

}  // namespace ptxbench
