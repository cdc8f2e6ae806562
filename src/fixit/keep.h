// Which repairs are kept: only a kernel that is correct AND earned the architecture credit at
// run time (instructions.verification == "dynamic_present" with the arch's tag: the required
// family executed with a true predicate), judged from its evaluation record alone. Its speed
// is always recorded; below a minimum speedup (a flag) it is not kept, and says so.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "record/record.h"

namespace ptxbench {

struct RepairJudgement {
  bool kept = false;
  // "kept", or why not: "not correct (COMPILE_ERROR)", "not verified (sass_absent)",
  // "slower than --min-speedup 1.00 (0.42)", "not timed (performance skipped: ...)".
  std::string reason;
  std::string status, verification, arch_tag;
  std::optional<double> speedup, tflops;
};

// The tag a kernel for `arch` must earn: "H" for sm_90a, "B" for sm_100a; throws UsageError
// for another arch.
std::string RequiredArchTag(const std::string& arch);

RepairJudgement JudgeRepair(const nlohmann::json& record, const std::string& arch,
                            std::optional<double> min_speedup);
RepairJudgement JudgeRepair(const EvaluationRecord& record, const std::string& arch,
                            std::optional<double> min_speedup);

// Each layer of a record and its state ("ran", "skipped: no GPU ...", "absent"): screening,
// build, correctness, memcheck, instructions, performance. Tests and cards say with it which
// layers really ran.
std::map<std::string, std::string> LayerStates(const nlohmann::json& record);

}  // namespace ptxbench
