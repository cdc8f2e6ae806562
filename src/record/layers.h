// Typed views of the detail inside the record's layers: what the feedback to a model shows
// (screening findings, the compiler's output, every trial's outputs, memory errors, instruction
// counts, the timing distributions). The record keeps these layers as JSON as the evaluator
// wrote them; consumers read them through these views, never by key. Every reader is lenient:
// a field that is missing or of another type reads as absent, so that records of older
// versions (and hand-made fixtures) still read.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "record/environment_layers.h"
#include "record/record.h"
#include "record/subject.h"

namespace ptxbench {

// A layer's state ("ran", "skipped", "not_reached", ...) and why; a layer without a state field
// ran (those layers always run). `present` is false for a layer the record lacks.
struct LayerStatus {
  bool present = false;
  std::string state, reason;
};
// Each layer of the pipeline in order, by name (EvaluationRecord::Layers).
std::vector<std::pair<std::string, LayerStatus>> LayerStatusesOf(const EvaluationRecord& record);

// screening.findings
struct ScreeningFinding {
  std::optional<long long> line;
  std::string what, library, excerpt;
};
std::vector<ScreeningFinding> ScreeningFindingsOf(const EvaluationRecord& record);

// build.errors and build.log, as nvcc printed them.
struct CompilerOutput {
  std::string errors, log;
};
CompilerOutput CompilerOutputOf(const EvaluationRecord& record);

// How a child process ended and what it printed last (correctness and performance layers).
struct ChildEnd {
  std::string exit;      // "exit code 0", "killed by signal 9", ...
  std::string log_tail;  // its last output
  bool operator==(const ChildEnd&) const = default;
};

// One output of one trial, as compared (compare/compare.h) and described.
struct OutputCheck {
  std::string name, verdict, summary;
  long long elements = 0, mismatched = 0, unwritten = 0, non_finite = 0;
  double max_abs_error = 0, max_rel_error = 0;
  double matched_ratio = 0;
  struct FirstBad {
    long long index = 0;
    std::optional<double> got, expected;
    bool got_non_finite = false;  // "got" written as null: the element was NaN or Inf
    bool operator==(const FirstBad&) const = default;
  };
  std::optional<FirstBad> first_bad;
  bool operator==(const OutputCheck&) const = default;
};

struct Trial {
  nlohmann::json seed;                   // as written (a number, or absent: null)
  double seconds = 0, call_seconds = 0;  // the trial, and its call alone
  bool inputs_unchanged = true;
  std::vector<OutputCheck> outputs;
  // Modified its inputs, or an output that is not a match.
  bool Failed() const;
  bool operator==(const Trial&) const = default;
};

// The correctness layer of a candidate that ran, as the evaluator writes it (ToJson) and every
// consumer reads it (CorrectnessDetailOf); a skipped layer is SkippedLayer's.
struct CorrectnessDetail {
  std::string state;
  long long trial_count = 0;    // "trials": how many were asked for
  std::vector<uint64_t> seeds;  // their seeds
  struct Tolerance {
    std::string rule;
    std::optional<double> atol, rtol;
    bool operator==(const Tolerance&) const = default;
  };
  std::optional<Tolerance> tolerance;
  nlohmann::json reference;   // the reference stage's account, as it wrote it
  std::vector<Trial> trials;  // "trial_results"
  std::vector<nlohmann::json> new_vendor_libraries;  // as written (names)
  long long channel_garbage_lines = 0;        // lines on the result channel that were no message
  std::vector<std::string> candidate_claims;  // harness events its process sent after loading
  ChildEnd child;
  bool operator==(const CorrectnessDetail&) const = default;
};
CorrectnessDetail CorrectnessDetailOf(const EvaluationRecord& record);
nlohmann::json ToJson(const CorrectnessDetail& detail);

// The memory check, as the evaluator writes it (ToJson) and every consumer reads it
// (MemcheckDetailOf): one structure both ways, held to it by record_test's round trip.
struct MemcheckDetail {
  std::string state;  // ran, timed_out, failed, incomplete, skipped, ...
  std::string exit;   // how the checked child ended ("exit code 0", ...)
  long long error_count = 0;
  bool summary_seen = false;  // the checker printed its closing summary
  std::string mode;           // --sanitize: always, on-failure
  uint64_t seed = 0;          // of the checked call's inputs
  struct Error {
    std::string summary, kind, location, thread, address;
    bool operator==(const Error&) const = default;
  };
  std::vector<Error> errors;
  std::string first_error;      // written when there are errors
  std::string log_tail;         // written when the checker itself failed
  bool call_completed = false;  // the checked call finished and reported its outputs
  bool operator==(const MemcheckDetail&) const = default;
};
MemcheckDetail MemcheckDetailOf(const EvaluationRecord& record);
nlohmann::json ToJson(const MemcheckDetail& detail);

// instructions.static and instructions.dynamic: counts per instruction family.
struct InstructionDetail {
  struct FamilyCount {
    std::string family;
    double count = 0;        // a value that is not a number reads as 0
    nlohmann::json written;  // the value as written, for reports that show it verbatim
  };
  // A function of the candidate's SASS, with its matched lines as evidence.
  struct SassFunction {
    std::string demangled;
    nlohmann::json instructions;  // its instruction count, as written
    std::vector<FamilyCount> families;
    std::vector<std::string> evidence;
  };
  bool has_static = false;  // instructions.static is an object
  std::string static_state, static_message;
  std::optional<std::vector<FamilyCount>> sass_totals;  // static.totals, when an object
  std::vector<SassFunction> functions;                  // static.functions
  // dynamic.families[f].thread_executions_true, when dynamic.families is an object; a family
  // whose entry is not an object is left out.
  std::optional<std::vector<FamilyCount>> executed;
  std::vector<std::string> run_time_evidence;  // dynamic.evidence
  // dynamic.kernels: the SASS functions that the profiled kernels matched, when a list.
  std::optional<std::set<std::string>> profiled_functions;
  // The count of `family` in a list; 0 when it is not there.
  static double CountOf(const std::vector<FamilyCount>& counts, const std::string& family);
  // The entry of `family`, or nullptr.
  static const FamilyCount* Find(const std::vector<FamilyCount>& counts, const std::string& family);
};
InstructionDetail InstructionDetailOf(const EvaluationRecord& record);

struct TimeDistribution {
  std::optional<double> median, p10, p90, count;
};

struct PerformanceDetail {
  TimeDistribution candidate;
  struct Baseline {
    bool present = false;  // performance.baseline is an object
    std::string name, state, reason;
    TimeDistribution time;
    TimeDistribution before, after;  // the runs before and after the candidate's
    std::optional<double> tflops;
    bool drift_flagged = false;
    double drift = 0;
  } baseline;
  std::optional<std::pair<double, double>> speedup_range;
  std::optional<double> percent_of_peak, peak_tflops;
  ChildEnd child;
};
PerformanceDetail PerformanceDetailOf(const EvaluationRecord& record);

}  // namespace ptxbench
