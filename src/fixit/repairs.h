// repairs.json's verdicts: every attempt of every failure's repair trajectory (in the repair
// run folder), judged from its evaluation record alone (keep.h); the first kept attempt is the
// failure's repair.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "fixit/failure.h"

namespace ptxbench {

struct CollectedRepairs {
  nlohmann::json repairs = nlohmann::json::array();  // one entry per failure, manifest order
  int kept = 0;
  std::map<std::string, int> not_kept;  // why → failures
};

CollectedRepairs CollectRepairs(const std::string& run_dir, const Manifest& manifest,
                                const std::string& arch, std::optional<double> min_speedup);

}  // namespace ptxbench
