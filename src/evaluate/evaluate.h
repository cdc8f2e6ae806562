// Evaluating one candidate: the heart of the pipeline (DESIGN.md section 1).
//
//   screen ─► build ─► link check ─► inspect (static) ─► reference (cached) ─► run (child)
//     ─► compare ─► memcheck ─► profile (dynamic instructions, correct candidates only)
//
// Every candidate failure becomes a status on the record; nothing the candidate does can
// stop the evaluation or the next one. Only problems of the request itself (unknown task,
// unreadable file) throw, before any work starts.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "measure/flashinfer_attention.h"  // AttentionBaseline
#include "record/record.h"
#include "run/memcheck.h"
#include "task/definition.h"

namespace ptxbench {

// The default first seed; trial i uses seed + i. Fixed by default so that a verdict is
// reproducible and the reference cache works; `--seed random` draws a fresh one.
constexpr uint64_t kDefaultSeed = 20260001;
// The square GEMM (n = M = N = K) at which the bf16 dense peak is measured with cuBLASLt.
constexpr int kPeakGemmSize = 16384;

struct EvalRequest {
  std::string kernel_path;
  const Definition* definition = nullptr;
  const Workload* workload = nullptr;
  std::string arch = "sm_90a";
  int trials = 3;
  uint64_t seed = kDefaultSeed;
  std::optional<ToleranceRule> tolerance_rule;  // overrides the definition's
  SanitizeMode sanitize = SanitizeMode::kAlways;
  std::chrono::seconds timeout{60};            // the candidate child, all trials
  std::chrono::seconds memcheck_timeout{600};  // the child under compute-sanitizer
  std::chrono::seconds reference_timeout{600};
  std::chrono::seconds profile_timeout{120};  // the dynamic check's profiled call under ncu
  bool verify = true;                         // the instruction layer (static + dynamic)
  bool timing = true;                         // the timing layer (correct candidates only)
  int warmup = 10, iterations = 50, buffer_sets = 3;
  std::chrono::seconds timing_timeout{180};  // the timing child: baselines, peak, candidate
  double timing_budget_s = 8;     // candidate time for the timed calls; fewer calls beyond it
  double drift_threshold = 0.05;  // baseline before vs after
  // The attention forward's baseline library (the backward's is always cuDNN, GEMM's cuBLASLt).
  AttentionBaseline attention_baseline = AttentionBaseline::kFlashInfer;
  std::optional<uint64_t> timing_seed;  // empty: fresh random inputs every evaluation
  bool use_build_cache = true;
  bool use_reference_cache = true;
  std::string cache_root;  // empty: CacheRoot()
  std::string executable;  // the ptxbench binary that children run; empty: this one
  // Called as each stage starts, with its name and a few words on what it does (`eval` shows
  // them on stderr: a memory-checked run can take minutes). May be empty.
  std::function<void(const std::string& stage, const std::string& what)> on_stage;
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
