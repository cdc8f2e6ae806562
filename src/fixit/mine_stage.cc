#include "fixit/mine_stage.h"

#include "common/error.h"
#include "common/files.h"
#include "common/strings.h"
#include "fixit/dataset_source.h"
#include "fixit/work_folder.h"
#include "record/record.h"

namespace ptxbench {

using nlohmann::json;

MineStageResult RunMineStage(const MineStageOptions& a) {
  // Before --overwrite clears anything (each value alone is checked at parse time).
  if (a.mine.max_turn && a.mine.max_turn < a.mine.min_turn)
    throw UsageError("--max-turn " + std::to_string(a.mine.max_turn) + " is before --min-turn " +
                     std::to_string(a.mine.min_turn));
  PrepareWorkFolder(a.dir, a.overwrite);
  std::vector<std::string> problems;
  Dataset d = LoadDatasetFor(a.db, a.runs, a.mine.models, a.mine.tasks, a.mine.packs, a.mine.archs,
                             &problems);
  MineResult r = MineFailures(d, a.mine);
  for (const std::string& p : problems) r.problems.push_back(p);
  MineStageResult out;
  Manifest& m = out.manifest;
  m.settings = ToJson(a.mine);
  m.settings["source"] = a.db.empty() ? json{{"runs", a.runs}} : json{{"db", a.db}};
  m.settings["mined_at"] = NowUtcIso8601();
  m.settings["excluded"] = r.excluded;
  m.settings["problems"] = r.problems;
  m.failures = std::move(r.failures);
  MakeDirs(a.dir);
  WriteFileAtomic(ManifestPath(a.dir), ToJson(m).dump(1) + "\n");
  out.excluded = std::move(r.excluded);
  out.problems = std::move(r.problems);
  return out;
}

}  // namespace ptxbench
