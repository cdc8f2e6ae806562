// The timing role of the child (DESIGN.md section 5): `ptxbench __child SPEC.json` with
// role "timing". In one process, side by side:
//
//   baseline (before the candidate is loaded) ─► peak (when asked) ─► load the candidate
//     ─► warm-up + timed calls ─► baseline again ─► loaded-library check
//
// Every call gets fresh inputs from a seed never used before, poisoned outputs and a write
// of 2× the L2 size first, and rotates over several buffer sets at different addresses. Its
// GPU time is the CUPTI span of all the activity its launches created, on any stream
// (measure/call_activity.h). The outputs of the last call on each buffer set are written out
// for the parent to check against the reference. The child reports; the parent judges.
#pragma once

#include <nlohmann/json.hpp>

#include "measure/activity_timer.h"
#include "run/channel.h"

namespace ptxbench {

// `timer` was created before the process's first CUDA call.
void RunTiming(const nlohmann::json& spec, ActivityTimer& timer, ChannelWriter& out);

}  // namespace ptxbench
