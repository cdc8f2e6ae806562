// The third layer of an evaluation: GPU time of the candidate and of the vendor baseline side
// by side, as a recipe of named phases:
//
//   plan ─► baseline before ─► candidate ─► baseline after ─► judge ─► revalidate ─► witness
//
// The baseline runs in processes of its own, before and after the candidate's timing child; the
// parent decides every number of the protocol (kept outputs, witness calls, which calls are
// checked again), draws the re-checks after the loop and frames the witness phase with its own
// GPM samples. Fails closed: where the parent found GPM, a witness that did not run, ran short
// or did not agree credits no speed; a re-check that did not come back is the candidate's.
// Internal to src/evaluate.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "evaluate/stage_support.h"
#include "evaluate/timing_judge.h"
#include "inspect/sass.h"
#include "measure/gpm.h"
#include "record/performance_layer.h"
#include "run/protocol.h"

namespace ptxbench::evaluation {

// The protocol's numbers for the candidate's timing child, all the parent's.
struct TimingNumbers {
  int kept_outputs = 0;
  int witness_calls = 0;  // 0: no witness (no GPM on this GPU, established by the parent)
  uint64_t digest_key = 0;
};

// What the parent does while the candidate's timing child runs: it draws the calls to check
// when the loop is over, and frames the witness phase with its own GPM samples. Every number
// it acts on is its own; the child's messages only say when.
struct TimingConversation {
  GpmWitness* gpm = nullptr;
  std::mt19937_64 rng;
  TimingNumbers numbers;
  std::vector<int> timed_checks;
  int witness_calls_reported = -1;  // what witness_ready said; the parent's number is planned
  uint64_t witness_seed0 = 0, witness_key = 0;
  json witness_digests;  // the child's commitment: digests[j][output], made in the window
  std::vector<int> witness_checks;
  std::optional<WitnessWindow> window;
  std::chrono::steady_clock::time_point window_begun;
  std::string gpm_error;
  bool witness_done = false;

  std::vector<int> Draw(int among, int count);
  void OnMessage(const json& m, const ChildRequest::Reply& reply);
};

// One output the parent drew after the loop (a timed call's or a witness call's), to be
// compared with a reference for its inputs.
struct DrawnCheck {
  std::string what;  // "timed call 17", "witness call 3"
  uint64_t seed = 0, set_seed = 0;
  json files;
  json digests;  // what the harness digested when the call ended (timed) or in the window
  uint64_t key = 0;
  bool witness = false;
};

class TimingLayer {
 public:
  // Runs only for a candidate that is correct so far; writes rec->performance (once, at the
  // end) and may decide the verdict.
  TimingLayer(const EvalContext& c, const ChildRequest& candidate, const StaticInspection& sass,
              const ScratchDir& scratch, EvaluationRecord* rec, Verdict* v);
  void Run();

 private:
  void Plan();
  // The timed calls' spec as planned, writing into `out_dir`.
  TimingSpec TimedCalls(const std::string& out_dir) const;
  void BaselineBefore();
  bool Candidate();  // false when the GPU could not be had (the verdict set)
  void BaselineAfter();
  void Judge();
  std::vector<json> MessagesForTheJudge(size_t* dropped_claims,
                                        std::set<std::string>* forged_lines) const;
  void NoteWhatTheChildDid(const std::set<std::string>& forged_lines);
  void KeepPeak(const TimingJudgement& j);
  bool Revalidate();  // false: the reference for the checks failed (the verdict decided)
  std::vector<DrawnCheck> DrawnChecks();
  RevalidatedCall CompareCheck(const DrawnCheck& check,
                               const std::vector<std::string>& expected_files);
  void Witness();
  void WitnessMissing(bool timing_ran, TimingWitness* witness);
  void JudgeWitnessWindow(bool timing_ran, TimingWitness* witness);

  const EvalContext& c_;
  const ChildRequest& candidate_;
  const StaticInspection& sass_;
  const ScratchDir& scratch_;
  EvaluationRecord* rec_;
  Verdict* v_;

  // Plan: how many calls, on which buffer sets, the peak if cached.
  double est_call_s_ = 0;
  TimedCallPlan plan_;
  int sets_ = 1;
  uint64_t set_seed_base_ = 0;
  json gpu_;
  std::string peak_path_;
  std::optional<double> peak_;
  json baseline_options_;
  // The children and the parent's side of the conversation.
  ChildOutcome before_, timed_, after_;
  bool gpu_refused_ = false;  // a baseline child could not have the GPU (the lock's timeout)
  std::string gpm_why_;
  std::unique_ptr<GpmWitness> gpm_;
  TimingConversation talk_;
  // What the re-checks found, for the witness's verdict.
  size_t timed_expected_ = 0, timed_got_ = 0, witness_expected_ = 0, witness_got_ = 0;
  // The layer as the steps build it, from the judge's reading on.
  PerformanceLayer perf_;
};

}  // namespace ptxbench::evaluation
