// What reports are computed from: the turns of trajectories, flattened, as the results store
// (src/store/) returns them and as trajectory files (agent/trajectory.h) give them without a
// store. Metrics, tables and the HTML report (src/report/) read only this.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "record/turn.h"

namespace ptxbench {

struct EvaluationRecord;

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
  std::string arch_tag;      // "H", "B" or "" (the credit earned, under our rule)
  // The tag under the paper's rule (correct, a required family in the SASS and executed at
  // least once with a true predicate), which ours tightens (a tensor-core work fraction of at
  // least 0.5 and an out-of-process witness). nullopt where the record predates the field (or
  // the reader does not know it): then arch_tag is the paper's tag too (UpstreamArchTag()).
  std::optional<std::string> upstream_arch_tag;
  // Upstream's 14 SASS columns for this turn (UpstreamSassColumns), from its record; empty
  // where the turn has none.
  std::vector<std::string> upstream_sass;
  std::string evaluation_id, kernel_file, evaluation_file;  // relative to the run folder
  int64_t prompt_tokens = 0, completion_tokens = 0, reasoning_tokens = 0;
  double model_seconds = 0, evaluation_seconds = 0;
  bool Correct() const { return outcome == "correct" || outcome == "verified"; }
  bool Verified() const { return outcome == "verified"; }  // our rule
  const std::string& UpstreamArchTag() const {
    return upstream_arch_tag ? *upstream_arch_tag : arch_tag;
  }
  // Passed with a tag under the paper's rule: what published results count as verified. For a
  // record without the paper's tag, the same as Verified().
  bool VerifiedUpstream() const {
    return upstream_arch_tag ? Correct() && !upstream_arch_tag->empty() : Verified();
  }
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

// False for a trajectory that stopped early (still "running", or stopped by the harness's
// infrastructure): it has not had all its turns, so it has not failed yet.
inline bool TrajectoryFinished(const TrajectoryRow& t) {
  return TrajectoryExitFinished(t.exit_status);
}

// A turn row's own columns from a trajectory file's turn (the record columns are
// AddRecordColumns's).
TurnRow TurnRowOf(const TurnRecord& t);

struct Dataset {
  std::vector<TrajectoryRow> trajectories;
};

// The one builder of a turn row's record columns, whatever the rows come from (run folders, the
// store, the service): the verification, the tag under both rules and upstream's SASS columns.
// `row` already has its outcome and evaluation id; `arch` is the trajectory's.
void AddRecordColumns(const EvaluationRecord& record, const std::string& arch, TurnRow* row);

// A turn row from its record alone, for a source without trajectory files (the service): the
// outcome by JudgeTurn, the status, reason, speed and evaluation time from the record, then
// AddRecordColumns.
TurnRow TurnRowFromRecord(const EvaluationRecord& record, const std::string& arch, int turn,
                          const std::string& evaluation_id);

}  // namespace ptxbench
