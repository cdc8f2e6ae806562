// `ptxbench fixit reason`, the stage: for each kept repair, a reasoning teacher writes how one
// gets from the failure to the fix (reasoning.h checks it); accepted and rejected entries are
// appended to reasoning.jsonl, so that a run again asks only for what is missing.
#pragma once

#include <string>

#include "fixit/reasoning.h"

namespace ptxbench {

struct ReasonStageOptions {
  std::string dir, teacher, models;
  int attempts = 3, concurrency = 4;  // tries per repair when rejected; requests in flight
  ReasoningLimits limits;
};

struct ReasonStageResult {
  int accepted = 0, rejected = 0;
  int lost = 0;    // to the endpoint (not written: the next run asks again)
  int reused = 0;  // accepted in an earlier run, for the same context and repair
};

ReasonStageResult RunReasonStage(const ReasonStageOptions& options);

}  // namespace ptxbench
