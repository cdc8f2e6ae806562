// Upstream PTXBench's per-turn CSV (`figures/turn_correctness_arch.csv`): 18 columns, its
// names and order, its words, so that upstream's aggregation scripts and viewer read our runs.
// The 14 SASS columns come from each turn's evaluation record (static totals, the profiled
// predicate-true counts, the shared object's sha256), under upstream's rule: on Hopper a GMMA
// or a TMA transfer in the SASS gives H, on Blackwell tcgen05 or tensor-memory instructions
// give B; executed with a true predicate confirms it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "record/report_rows.h"

namespace ptxbench {

// The header, in upstream's order.
const std::vector<std::string>& UpstreamTurnColumns();

// Upstream's word for a turn's correctness column ("Correct", "Numerical error",
// "Compilation error", "Kernel Execution Timeout", "Runtime error", "Extraction error",
// "Other error") from our outcome and status.
std::string UpstreamCorrectness(const TurnRow& r);

// One row per spent turn: turns counted from 0 as upstream does; trajectory_id is the
// trajectory's id (upstream's own, "exp_000", for a replayed upstream experiment), prefixed
// with its run ("run/id") when the data holds more than one run; speedup is the measured one,
// 0.0 for a kernel that ran without one (as upstream's exporter writes it), empty for a turn
// whose kernel never ran (no kernel, screened, not compiled).
std::string UpstreamTurnsCsv(const Dataset& data);

}  // namespace ptxbench
