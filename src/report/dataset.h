// What reports are computed from: the turns of trajectories, flattened, as the results store
// (src/store/) returns them and as trajectory files (agent/trajectory.h) give them without a
// store. Metrics (metrics.h), tables and the HTML report read only this.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ptxbench {

// One spent turn of a trajectory (turns lost to infrastructure are not in reports).
struct TurnRow {
  int turn = 0;  // 1-based
  // extraction, rejected, compile, runtime, memory, incorrect, rule_violation,
  // correct (passed, no architecture credit), verified (passed with it), model_error
  std::string outcome;
  std::string status;  // the record's status (PASSED, COMPILE_ERROR, ...); "" without one
  std::string reason;
  std::optional<double> speedup;  // correct turns that were timed
  std::optional<double> tflops;
  std::string verification;  // the record's instructions.verification ("" without a record)
  std::string arch_tag;      // "H", "B" or "" (the credit earned)
  std::string evaluation_id, kernel_file, evaluation_file;  // relative to the run folder
  int64_t prompt_tokens = 0, completion_tokens = 0, reasoning_tokens = 0;
  double model_seconds = 0, evaluation_seconds = 0;
  bool Correct() const { return outcome == "correct" || outcome == "verified"; }
  bool Verified() const { return outcome == "verified"; }
};

struct TrajectoryRow {
  std::string run_id;  // the run folder's name or the store's run id
  std::string id;      // "<task>-<k>"
  std::string model, provider, task, workload, arch, pack;
  // run.json's pack_info.hardware_verified: false for a pack that was compiled but never run
  // on its chip (Blackwell here); nullopt for pack none and runs that predate the field.
  std::optional<bool> pack_hardware_verified;
  int index = 0;
  std::string exit_status;
  std::string run_dir;         // where its files are (kernels, evaluations), when known
  std::vector<TurnRow> turns;  // in turn order
};

struct Dataset {
  std::vector<TrajectoryRow> trajectories;
};

}  // namespace ptxbench
