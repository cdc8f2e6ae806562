// The settings of an evaluation that its user chooses: `eval`'s options (most of them also on
// `run`, `fixit repair` and `submit`, declared once in cli/shared_options.h) and a service
// job's "options" (serve/job_request.h), whose JSON form is here:
//
//   {"trials": 3, "seed": 20260001, "sanitize": "always", "timeout": 60, "timing": true,
//    "timing_budget": 8, "verify": true, "warmup": 10, "iterations": 50,
//    "tolerance": "published", "baseline": "flashinfer@0.6.14"}      every key optional
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/flashinfer_attention.h"  // AttentionBaseline
#include "run/memcheck.h"                  // SanitizeMode
#include "task/definition.h"               // ToleranceRule

namespace ptxbench {

// The default first seed; trial i uses seed + i. Fixed by default so that a verdict is
// reproducible and the reference cache works; `--seed random` draws a fresh one.
constexpr uint64_t kDefaultSeed = 20260001;

struct EvaluationOptions {
  int trials = 3;
  uint64_t seed = kDefaultSeed;
  std::optional<ToleranceRule> tolerance_rule;  // overrides the definition's
  SanitizeMode sanitize = SanitizeMode::kAlways;
  std::chrono::seconds timeout{60};            // the candidate child, all trials
  std::chrono::seconds memcheck_timeout{600};  // the child under compute-sanitizer
  std::chrono::seconds profile_timeout{120};   // the dynamic check's profiled call under ncu
  bool verify = true;                          // the instruction layer (static + dynamic)
  bool timing = true;                          // the timing layer (correct candidates only)
  int warmup = 10, iterations = 50, buffer_sets = 3;
  std::chrono::seconds timing_timeout{180};  // the timing child: baselines, peak, candidate
  // How long an evaluation waits for the GPU's lock (run/gpu_lock.h) before its GPU-alone
  // stages (timing, witness, baselines, profiler): another evaluation is using the GPU.
  std::chrono::seconds gpu_lock_timeout{3600};
  double timing_budget_s = 8;     // candidate time for the timed calls; fewer calls beyond it
  double drift_threshold = 0.05;  // baseline before vs after
  // The attention forward's baseline library and, for FlashInfer, its release (the backward's is
  // always cuDNN, GEMM's cuBLASLt).
  AttentionBaseline attention_baseline;
  bool use_build_cache = true;
  bool use_reference_cache = true;
};

// One row per option of the JSON form: what the service checks, what the CLI declares and what
// schemas/openapi.json says (EvaluationOptionsSchema; a test holds the file to it), so that the
// three cannot disagree on a name, a type, a range or a default.
enum class OptionKind {
  kInteger,  // a whole number in [minimum, maximum]
  kNumber,   // a number in [minimum, maximum]
  kBoolean,  // on the command line, `flag` turns it off
  kWord,     // one of `words`
  kSeed,     // a whole number of 0 or more (the command line also takes `random`)
};
struct EvaluationOptionRow {
  std::string key;   // in the JSON form
  std::string flag;  // on the command line
  OptionKind kind = OptionKind::kInteger;
  double minimum = 0, maximum = 0;  // kInteger, kNumber
  std::vector<std::string> words;   // kWord
  std::string help;                 // the command line's; the schema's description too
  // The option's value in `options`, in the JSON form; and the setting of a value of that
  // form (already checked against the row) into `options`.
  std::function<nlohmann::json(const EvaluationOptions&)> get;
  std::function<void(const nlohmann::json&, EvaluationOptions*)> set;
};
// The rows, in the order the help and the schema list them.
const std::vector<EvaluationOptionRow>& EvaluationOptionTable();
// The row of `key`; throws InternalError for a key the table lacks.
const EvaluationOptionRow& EvaluationOptionRowOf(const std::string& key);

// The keys of the JSON form.
const std::set<std::string>& EvaluationOptionKeys();

// The JSON Schema of the "options" object of a service job, from the table, defaults from
// EvaluationOptions{}: schemas/openapi.json's EvaluationRequest.options is this.
nlohmann::json EvaluationOptionsSchema();

// Applies the keys that `j` (an object of the JSON form) has to `options`, each checked as
// the service checks it; throws InputError with one line that names the option and why.
void ApplyEvaluationOptionsJson(const nlohmann::json& j, EvaluationOptions* options);

// The JSON form of `options` under `keys` (of EvaluationOptionKeys(); an unset tolerance is
// left out): what a client sends for them.
nlohmann::json EvaluationOptionsJson(const EvaluationOptions& options,
                                     const std::vector<std::string>& keys);

}  // namespace ptxbench
