// The timing role of the child: `ptxbench __child SPEC.json` with role "timing" and a
// TimingSpec (run/protocol.h) whose numbers the parent decided. Two kinds of process, never one:
//
//   a baseline child (`baseline_only`; no candidate ever enters it): the vendor baseline's
//     warm-up and timed calls ─► the bf16 peak (when asked); run before and after the candidate
//   the candidate's child: its kept outputs and witness inputs allocated ─► `loading` ─► the
//     candidate mapped (hash verified, harness memory sealed) ─► warm-up + timed calls, each
//     kept output digested in stream order ─► the parent's plan ─► the checked outputs ─► the
//     witness round ─► loaded-library check
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
