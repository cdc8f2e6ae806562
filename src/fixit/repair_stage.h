// `ptxbench fixit repair`, the stage: a teacher repairs each failure of the manifest in a run
// of the agent loop (seeded with the failure's conversation, stopped at the first kept
// attempt); every attempt is evaluated, and repairs.json records the verdicts.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/loop.h"
#include "evaluate/evaluation_options.h"

namespace ptxbench {

struct RepairStageOptions {
  std::string dir, teacher, models, db, tasks_dir;
  std::string evaluator;  // the service's URL (`--evaluator`), or "" for the local GPU
  int turns = 3, concurrency = 4;
  double min_speedup = 0;        // 0: any
  EvaluationOptions evaluation;  // --sanitize, --timeout, --timing-budget; always timed
  bool resume = false, overwrite = false, quiet = false;
};

// The evaluation options a repair stage sends to an evaluation service.
extern const std::vector<std::string> kRepairEvaluationKeys;

struct RepairStageResult {
  size_t failures = 0;
  nlohmann::json repairs;  // as written to repairs.json
  int interrupted = 0;     // trajectories the agent loop did not finish
};

// Builds the evaluator once the manifest has said which arch: the caller's, because choosing
// between the local pipeline and the service (serve/evaluator_choice.h) is a layer fixit/ may
// not include.
using RepairEvaluatorFactory = std::function<Evaluator(const std::string& arch)>;

RepairStageResult RunRepairStage(const RepairStageOptions& options,
                                 const RepairEvaluatorFactory& make_evaluator);

}  // namespace ptxbench
