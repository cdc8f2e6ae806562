// The second layer of an evaluation: did the architecture's own instructions do the work?
// Static (the SASS of the built object) then dynamic (ncu's predicate-on thread counts over
// profiled calls), then the tag, which also asks the timing layer's witness. Internal to
// src/evaluate.
#pragma once

#include <functional>

#include <cstdint>
#include <string>
#include <vector>

#include "common/files.h"
#include "evaluate/evaluate.h"
#include "inspect/sass.h"
#include "run/children.h"

namespace ptxbench::evaluation {

// Calls in the profiled process (each on a seed of its own, from `profile_seed` up).
constexpr int kProfiledCalls = 3;

// How the profiled child runs on the GPU: `run` runs it holding the GPU (gated, so the
// profiler's own start holds nothing) and gives the GPU back before the report is read;
// nullopt when the GPU could not be had (the profile is then not reached). Empty: RunChild.
struct ProfileGpuHooks {
  std::function<std::optional<ChildOutcome>(const ChildRequest&)> run;
};

// Runs only for a correct candidate. Sets rec->instructions' verification status, tag and
// evidence; `profiled` (when given) receives the profiled child's outcome for the cross-check.
void VerifyInstructions(const EvalRequest& req, uint64_t profile_seed, const Definition& def,
                        const Workload& wl, const ChildRequest& candidate,
                        const StaticInspection& sass, const std::vector<std::string>& required,
                        const ScratchDir& scratch, EvaluationRecord* rec, ChildOutcome* profiled,
                        const ProfileGpuHooks& gpu = {});

}  // namespace ptxbench::evaluation
