// The performance layer (record.performance) as one structure both ways: the evaluator builds it
// while it times the candidate and writes it once with ToJson; consumers read it back with
// PerformanceLayerOf. record_test's round trip and the literal JSON it pins hold the two to the
// format docs/design.md promises: the keys, their nesting, the types of their values, and when
// each is written are the contract, so a field absent here is a key absent there.
//
// What the evaluator composes is typed. What it copies verbatim from elsewhere stays JSON: a
// child process's words (its clocks, its protocol additions, its confinement and seal reports,
// the library description of the baseline), the sandbox account, the timing plan's own
// ToJson, and the GPM window's counters.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/record.h"

namespace ptxbench {

// A summary of repeated measurements in seconds, as measure/summary.h's Summary writes it: all
// seven keys, always.
struct SampleSummary {
  uint64_t count = 0;
  double median = 0, p10 = 0, p90 = 0, min = 0, max = 0, mean = 0;
  bool operator==(const SampleSummary&) const = default;
};

// How the calls were timed ("protocol").
struct TimingProtocol {
  // The judge's own account of the calls; absent where timing did not run.
  struct Calls {
    long long warmup = 0, iterations = 0;
    bool fresh_inputs_per_call = true, outputs_poisoned_per_call = true;
    std::string span;  // what one call's time spans
    bool operator==(const Calls&) const = default;
  };
  std::optional<Calls> calls;
  // What the timing child added (its buffers, streams, L2 flush), verbatim: merged over the
  // judge's keys, as the child is the one that knows them.
  nlohmann::json child_additions = nlohmann::json::object();
  // The numbers the parent decided itself, whatever the child said.
  struct ParentDecided {
    long long kept_outputs = 0, witness_calls = 0, witness_rounds = 0;
    long long timed_checks = 0, witness_checks = 0;
    bool operator==(const ParentDecided&) const = default;
  };
  std::optional<ParentDecided> parent_decided;
  nlohmann::json plan;  // the timed-call plan (evaluate/timing_judge.h), verbatim; null: none
  bool operator==(const TimingProtocol&) const = default;
};

// The candidate's timed calls ("candidate"): their GPU spans summarized at the top level.
struct CandidateTiming {
  SampleSummary span;                    // the timed calls' GPU spans
  SampleSummary host;                    // their host time, run() to the stream's synchronization
  long long calls = 0, empty_calls = 0;  // every call, warm-up included
  std::map<std::string, long long> kernels;  // launches by kernel name, every call
  bool operator==(const CandidateTiming&) const = default;
};

// The defenses checked over every call of the candidate ("defenses").
struct TimingDefenses {
  std::vector<std::string> new_vendor_libraries;
  // "ran" with the names found, or "skipped" with why (no names then).
  struct ForeignKernels {
    std::string state;
    std::vector<std::string> names;  // written when it ran
    std::string reason;              // written when it did not
    bool operator==(const ForeignKernels&) const = default;
  } foreign_kernels;
  struct Outlived {
    long long count = 0;
    double max_overrun_s = 0;
    std::vector<std::string> names;
    bool operator==(const Outlived&) const = default;
  } outlived;
  struct Stray {
    long long count = 0;
    std::vector<std::string> names;
    bool operator==(const Stray&) const = default;
  } stray;
  long long empty_calls = 0;
  SampleSummary gpu_idle_in_call;
  long long inputs_changed_calls = 0;
  bool operator==(const TimingDefenses&) const = default;
};

// The vendor baseline ("baseline"), timed before and after the candidate.
struct BaselineTiming {
  std::optional<std::string> name;        // absent when it was skipped or unsupported
  std::string state;                      // ran, skipped, unsupported, not_reached, failed
  std::string reason;                     // written when not empty (skipped, unsupported)
  std::optional<nlohmann::json> library;  // the baseline child's description, verbatim
  std::optional<SampleSummary> before, after;
  // Before and after pooled: written together.
  struct Pooled {
    double median = 0, p10 = 0, p90 = 0;
    bool operator==(const Pooled&) const = default;
  };
  std::optional<Pooled> pooled;
  // after/before − 1, and whether it is past the threshold: written together.
  struct Drift {
    double drift = 0;
    bool flagged = false;
    bool operator==(const Drift&) const = default;
  };
  std::optional<Drift> drift;
  std::optional<double> tflops;
  std::string choice;  // the library asked for, where there is a choice; written when not empty
  bool operator==(const BaselineTiming&) const = default;
};

// One output the parent drew and checked again after the loop or the witness window.
struct RevalidatedOutput {
  std::string name;  // the output tensor; its keys are name and name_digest
  // What the harness digested when the call ended (or in the witness window), and the digest
  // of what it handed over; records from before the digests lack them.
  struct Digests {
    std::string committed, handed_over;
    bool operator==(const Digests&) const = default;
  };
  std::optional<Digests> digests;
  std::string verdict;
  double max_abs_error = 0;
  uint64_t mismatched = 0;
  bool operator==(const RevalidatedOutput&) const = default;
};
struct RevalidatedCall {
  std::string call;  // "timed call 17 (buffer set 2, fresh inputs)", "witness call 3"
  uint64_t seed = 0;
  std::vector<RevalidatedOutput> outputs;  // read back in the order of their names
  bool operator==(const RevalidatedCall&) const = default;
};
// The re-checks ("revalidation"): either why they could not be made (then nothing else is
// written) or the calls checked.
struct Revalidation {
  std::string state;   // ran, not_reached
  std::string reason;  // written when not empty: the reference for the checks failed
  bool drawn_after_the_loop = true;
  long long kept_outputs = 0;
  std::vector<RevalidatedCall> calls;
  bool operator==(const Revalidation&) const = default;
};

// The out-of-process witness ("witness"): unavailable or missing with why, or the GPM window
// the parent read and what the judge of it (measure/gpm.h) found.
struct TimingWitness {
  std::string state;
  std::string reason;          // written when no window was judged
  std::string established_by;  // "parent" for a GPU without GPM; written when not empty
  struct Judged {
    bool timing_ok = false, tensor_ok = false;
    std::optional<double> per_call_busy_seconds, tensor_work_fraction_seen;  // null: unknown
    std::string message;
    nlohmann::json window;  // the GPM counters of the window, verbatim
    long long calls = 0, rounds = 0;
    std::optional<long long> calls_reported;  // what the child said; older records lack it
    double timing_factor = 0, tensor_factor = 0;
    std::optional<double> tensor_share_of_sm;  // written as null when unknown
    std::optional<double> busy_over_timed;     // absent when unknown
    bool operator==(const Judged&) const = default;
  };
  std::optional<Judged> judged;
  bool operator==(const TimingWitness&) const = default;
};

struct PerformanceLayer {
  std::string state;   // ran, timed_out, skipped; empty: not judged yet (an empty layer)
  std::string reason;  // why it was skipped; written when not empty
  std::string timer;   // "cupti_activity"; written when not empty
  std::optional<TimingProtocol> protocol;
  std::optional<std::string> child_exit;      // how the timing child ended
  std::optional<std::string> child_log_tail;  // its last output, when it was found at fault
  std::optional<nlohmann::json> clocks;       // the child's clock samples, verbatim
  std::optional<CandidateTiming> candidate;
  std::optional<TimingDefenses> defenses;
  std::optional<BaselineTiming> baseline;
  std::optional<double> speedup;
  std::optional<std::pair<double, double>> speedup_range;
  std::string speedup_withheld;  // why no speedup is credited; written when not empty
  std::optional<double> tflops, peak_tflops, percent_of_peak;
  std::string peak_source;  // written when not empty
  std::optional<uint64_t> timing_seed_base;
  std::optional<nlohmann::json> sandbox;  // the timing child's confinement as run, verbatim
  uint64_t candidate_claims_ignored = 0;  // written when not 0
  std::optional<std::vector<std::string>> kernels_launched;  // sorted
  std::optional<nlohmann::json> confinement, sealed;         // the child's reports, verbatim
  uint64_t channel_garbage_lines = 0;                        // written when not 0
  std::optional<Revalidation> revalidation;
  std::optional<TimingWitness> witness;
  // Keys this version does not know, met when reading: kept so that a layer read and written
  // again loses nothing (as EvaluationRecord::extra does for the record), since the layer is
  // a contract that older and newer writers share. The evaluator never sets them.
  nlohmann::json extra = nlohmann::json::object();

  // The layer of an evaluation whose timing could not run at all: {"state": "skipped",
  // "reason": why}, as SkippedLayer writes it, until more is added.
  static PerformanceLayer Skipped(const std::string& why);
  bool operator==(const PerformanceLayer&) const = default;
};

nlohmann::json ToJson(const SampleSummary& summary);
nlohmann::json ToJson(const TimingProtocol& protocol);
nlohmann::json ToJson(const PerformanceLayer& layer);
// Lenient: a missing field, or one of another type, reads as absent (empty, 0, nullopt); never
// throws. A layer that is not an object reads as an empty one.
PerformanceLayer PerformanceLayerOf(const nlohmann::json& layer);
PerformanceLayer PerformanceLayerOf(const EvaluationRecord& record);

}  // namespace ptxbench
