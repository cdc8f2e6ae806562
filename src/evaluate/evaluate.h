// Evaluating one candidate: the heart of the pipeline.
//
//   screen ─► build ─► link check ─► inspect (static) ─► reference (cached) ─► run (child)
//     ─► compare ─► memcheck ─► [the GPU lock] timing (baseline, candidate, baseline again,
//     re-check of timed calls, witness) ─► profile (dynamic instructions) ─► cross-check
//     (timing and profile for correct candidates only)
//
// Every candidate failure becomes a status on the record; nothing the candidate does can
// stop the evaluation or the next one. Only problems of the request itself (unknown task,
// unreadable file) throw, before any work starts.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "evaluate/evaluation_options.h"
#include "record/record.h"
#include "task/definition.h"

namespace ptxbench {

// The square GEMM (n = M = N = K) at which the bf16 dense peak is measured with cuBLASLt.
constexpr int kPeakGemmSize = 16384;

struct EvalRequest {
  std::string kernel_path;
  const Definition* definition = nullptr;
  const Workload* workload = nullptr;
  std::string arch = "sm_90a";
  EvaluationOptions options;  // what its user chose (cli/shared_options.h, a job's "options")
  std::chrono::seconds reference_timeout{600};
  std::optional<uint64_t> timing_seed;  // empty: fresh random inputs every evaluation
  std::string cache_root;               // empty: CacheRoot()
  std::string executable;               // the ptxbench binary that children run; empty: this one
  // Called as each stage starts, with its name and a few words on what it does (`eval` shows
  // them on stderr: a memory-checked run can take minutes). May be empty.
  std::function<void(const std::string& stage, const std::string& what)> on_stage;
  // May be null. A service worker that is stopping sets it: a wait for the GPU lock ends
  // (INFRA_ERROR gpu_lock_stopped) instead of lasting its timeout.
  const std::atomic<bool>* stop = nullptr;
};

EvaluationRecord Evaluate(const EvalRequest& request);

// The CPU stage alone: screening and the build, whose result lands in the build cache (keyed
// by content), so that an Evaluate of the same request that follows finds it there and goes
// straight to the GPU layers. The service runs it for the next job while the GPU times the
// current one. Returns the seconds it spent; never throws for a bad candidate (Evaluate
// reports it), nor when the build cannot run (Evaluate reports that too).
double PrepareBuild(const EvalRequest& request);

// A few lines for the terminal.
std::string HumanSummary(const EvaluationRecord& r);

// An on_stage that writes one line per stage to `out`: seconds since the first stage, the
// stage, what it does ("[  4.1 s] memcheck: one call under compute-sanitizer").
std::function<void(const std::string&, const std::string&)> StageLinePrinter(std::ostream& out);

}  // namespace ptxbench
