// The parent's reading of a timing child (child/timing_child.h): the performance section of the
// record and, when the candidate broke a rule while being timed, the verdict. Pure: it sees
// only the child's messages and what the parent knows (the candidate cubin's functions, the
// task's FLOPs, the cached peak), so CI tests it on recorded messages.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/subprocess.h"
#include "record/performance_layer.h"
#include "record/record.h"

namespace ptxbench {

struct TimingContext {
  double flops = 0;                          // the task's nominal FLOPs per call
  std::optional<double> peak_flops;          // measured bf16 dense peak (FLOP/s), when known
  std::vector<std::string> allowed_kernels;  // the candidate cubin's functions (mangled)
  bool allowed_known = false;                // false: static inspection did not run
  double drift_threshold = 0.05;             // |after/before − 1| above this is flagged
  std::chrono::seconds timeout{180};
  int warmup = 10, iterations = 50;
  // The candidate's timing child sent its `loading` marker: from then on every failure of that
  // child (a timeout, an error of any stage, an early end) is the candidate's.
  bool candidate_loaded = false;
  // Dense bf16 ceiling of the GPU model (FLOP/s; 0: unknown) and the factor over the measured
  // peak above which a timed speed is impossible (a forged time).
  double model_ceiling_flops = 0;
  double impossible_over_peak = 1.25;
};

struct TimingVerdict {
  Status status;
  std::string reason;
  std::string message;
  // The candidate's own process said the harness failed (after the load): the parent asks a
  // candidate-free probe before it believes that (evaluate.cc ConfirmCandidateFailure).
  bool claimed_infra = false;
};

// One output file of a timed call to check against the reference.
struct TimedOutput {
  int index = 0;  // the call
  int set = 0;    // its buffer set
  uint64_t seed = 0;
  std::vector<std::string> files;  // per output tensor, in ABI order
};

struct TimingJudgement {
  PerformanceLayer performance;  // the record's layer as far as the judge can tell
  std::optional<TimingVerdict> verdict;
  std::vector<TimedOutput> outputs;     // for the parent's re-validation
  std::optional<double> peak_measured;  // FLOP/s, when the child measured it this time
  nlohmann::json peak_detail;
};

// How many calls the timing child makes. The requested warm-ups and timed calls, unless the
// correctness trials' fastest call says they would take more than `budget_s` of candidate
// time: then as many as fit, but never fewer than 10 timed and 2 warm-up calls (a slow
// kernel's median is steady in a few calls; a fast one always gets the full count).
struct TimedCallPlan {
  int warmup = 10, iterations = 50;
  int requested_warmup = 10, requested_iterations = 50;
  double estimated_call_s = 0;  // from the trials; 0 when unknown (then no reduction)
  double budget_s = 0;          // 0: no budget
  bool reduced = false;
};
TimedCallPlan PlanTimedCalls(int warmup, int iterations, double estimated_call_s, double budget_s);
nlohmann::json ToJson(const TimedCallPlan& plan);

TimingJudgement JudgeTiming(const std::vector<nlohmann::json>& messages, const ExitInfo& exit,
                            const TimingContext& context);

// The host-time rule: a call whose host time (run() to the stream sync) far exceeds its GPU
// span did its work where the timer cannot see it.
bool HostTimeExceedsGpu(double host_median_s, double gpu_median_s);
// The idle-GPU rule: a call whose span is mostly gaps between its GPU activities (copies to
// the host, a CPU loop, a copy back) did its work on the host. Launch gaps are microseconds.
bool GpuMostlyIdle(double idle_median_s, double span_median_s);

}  // namespace ptxbench
