// Upstream PTXBench's 14 SASS columns of a turn (`figures/turn_correctness_arch.csv`, columns 5
// to 18) from its evaluation record, under upstream's rule: on Hopper a GMMA or a TMA transfer in
// the SASS gives H, on Blackwell tcgen05 or tensor-memory instructions give B; executed with a
// true predicate confirms it. The results store keeps them per turn and the report writes them.
#pragma once

#include <string>
#include <vector>

#include "record/record.h"

namespace ptxbench {

// The 14 SASS columns of one turn from its record's `instructions` layer and the shared
// object's sha256; all blank for a turn that is not correct or has no instructions layer.
// profile_id (the evaluation's id) fills sass_profile_task_id where the profiler ran.
std::vector<std::string> UpstreamSassColumns(const EvaluationRecord& record,
                                             const std::string& arch, bool correct,
                                             const std::string& profile_id);

}  // namespace ptxbench
