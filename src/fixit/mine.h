// `ptxbench fixit mine`: the failed turns worth repairing, from a Dataset (the results store
// or run folders). Only the model's own failures of the kernel qualify (compile, runtime,
// memory, incorrect): a reply without code or a turn the harness could not judge teaches no
// repair. Near-identical kernels (the same normalized source, per task, workload and arch)
// enter once; a cap per task takes failures evenly across the (outcome, turn) strata.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "fixit/failure.h"
#include "record/report_rows.h"

namespace ptxbench {

// The outcomes mining may select; anything else is refused.
const std::vector<std::string>& RepairableOutcomes();

struct MineOptions {
  std::vector<std::string> outcomes;                     // empty: every repairable outcome
  std::vector<std::string> models, tasks, packs, archs;  // empty: any
  int min_turn = 1, max_turn = 0;                        // 0: no upper bound
  int cap_per_task = 0;                                  // 0: no cap
};

struct MineResult {
  std::vector<Failure> failures;
  // Turns passed over, by why ("outcome extraction", "duplicate kernel", "cap", "filter", ...).
  std::map<std::string, int> excluded;
  std::vector<std::string> problems;  // "what: why" for turns whose files could not be read
};

// Throws UsageError for an outcome outside RepairableOutcomes() or a bad turn range.
MineResult MineFailures(const Dataset& dataset, const MineOptions& options);

// The settings as the manifest records them.
nlohmann::json ToJson(const MineOptions& options);

}  // namespace ptxbench
