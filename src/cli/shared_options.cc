#include "cli/shared_options.h"

#include <random>

#include "cli/option_checks.h"
#include "common/strings.h"
#include "fixit/sft.h"
#include "serve/job_queue.h"

namespace ptxbench {

namespace {

const std::vector<std::string> kSanitizeModes = {"always", "on-failure", "never"};

// A whole number of seconds from 1 to `most`, into `out`.
CLI::Option* AddSecondsOption(CLI::App* cmd, const std::string& name, std::chrono::seconds* out,
                              const std::string& help, int most) {
  return cmd
      ->add_option_function<int>(
          name, [out](const int& s) { *out = std::chrono::seconds(s); }, help)
      ->check(CLI::Range(1, most));
}

CLI::Option* AddSanitizeOption(CLI::App* cmd, EvaluationOptions* o, const std::string& help) {
  return cmd
      ->add_option_function<std::string>(
          "--sanitize", [o](const std::string& s) { o->sanitize = ParseSanitizeMode(s); }, help)
      ->check(CLI::IsMember(kSanitizeModes));
}

CLI::Option* AddNoTimingOption(CLI::App* cmd, EvaluationOptions* o) {
  return cmd->add_flag_callback(
      "--no-timing", [o]() { o->timing = false; }, "Skip the timing layer");
}

// The attention forward's library (eval and run).
CLI::Option* AddAttentionBaselineOption(CLI::App* cmd, EvaluationOptions* o) {
  return cmd
      ->add_option_function<std::string>(
          "--baseline",
          [o](const std::string& s) { o->attention_baseline = *ParseAttentionBaseline(s); },
          "Attention-forward baseline: flashinfer (FlashInfer's sm90 prefill, the paper's) or "
          "cudnn (cuDNN's fused SDPA); the backward's is always cuDNN, GEMM's cuBLASLt")
      ->check(CLI::IsMember({"flashinfer", "cudnn"}))
      ->default_str(ToString(o->attention_baseline));
}

CLI::Option* AddToleranceOption(CLI::App* cmd, EvaluationOptions* o) {
  return cmd
      ->add_option_function<std::string>(
          "--tolerance", [o](const std::string& s) { o->tolerance_rule = ParseToleranceRule(s); },
          "Tolerance rule: published (the upstream rule) or allclose (default: the task's)")
      ->check(CLI::IsMember({"published", "allclose"}));
}

// `random`, or a non-negative integer.
CLI::Option* AddSeedOption(CLI::App* cmd, EvaluationOptions* o) {
  return cmd
      ->add_option_function<std::string>(
          "--seed",
          [o](const std::string& text) {
            long long s = 0;
            if (text == "random")
              o->seed = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
            else if (ParseInt64(text, &s))  // checked by the validator
              o->seed = static_cast<uint64_t>(s);
          },
          "First seed (trial i uses seed+i), or `random` for a fresh one (default " +
              std::to_string(kDefaultSeed) + ")")
      ->check(CLI::Validator(
          [](std::string& in) -> std::string {
            long long s;
            if (in == "random" || (ParseInt64(in, &s) && s >= 0)) return "";
            return "Value " + in + " is not a non-negative integer or `random`";
          },
          "SEED|random"));
}

// `eval` alone: the memory check's and the profiler's deadlines, the caches, the timing
// layer's finer settings.
void AddEvalOnlyOptions(CLI::App* cmd, EvaluationOptions* o, DeclaredEvaluationOptions* d) {
  AddSecondsOption(cmd, "--memcheck-timeout", &o->memcheck_timeout, "Seconds for the memory check",
                   86400)
      ->default_str(std::to_string(o->memcheck_timeout.count()));
  AddSecondsOption(cmd, "--profile-timeout", &o->profile_timeout,
                   "Seconds for the profiled call that checks which instructions ran", 86400)
      ->default_str(std::to_string(o->profile_timeout.count()));
  d->by_key["verify"] = cmd->add_flag_callback(
      "--no-verify", [o]() { o->verify = false; },
      "Skip the instruction layer (static and dynamic)");
  cmd->add_flag_callback(
      "--no-build-cache", [o]() { o->use_build_cache = false; },
      "Rebuild even when a cached build exists");
  cmd->add_flag_callback(
      "--no-reference-cache", [o]() { o->use_reference_cache = false; },
      "Recompute the expected outputs even when cached");
  d->by_key["warmup"] = AddRangeOption(cmd, "--warmup", &o->warmup,
                                       "Timing: untimed calls before the timed ones", 0, 10000);
  d->by_key["iterations"] = AddRangeOption(cmd, "--iterations", &o->iterations,
                                           "Timing: timed calls (median, p10, p90)", 1, 100000);
  AddRangeOption(cmd, "--buffer-sets", &o->buffer_sets,
                 "Timing: input/output buffer sets the calls rotate over", 1, 64);
  AddSecondsOption(cmd, "--timing-timeout", &o->timing_timeout,
                   "Seconds for the timing child (baselines and the candidate's calls)", 86400)
      ->default_str(std::to_string(o->timing_timeout.count()));
  AddSecondsOption(cmd, "--gpu-lock-timeout", &o->gpu_lock_timeout,
                   "Seconds to wait for the GPU's lock when another evaluation is timing on it",
                   86400)
      ->default_str(std::to_string(o->gpu_lock_timeout.count()));
  cmd->add_option("--drift-threshold", o->drift_threshold,
                  "Flag a baseline whose median moved by more than this fraction during the run")
      ->check(GreaterThanZero())
      ->capture_default_str();
}

}  // namespace

std::vector<std::string> DeclaredEvaluationOptions::GivenKeys() const {
  std::vector<std::string> keys;
  for (const auto& [key, option] : by_key)
    if (option->count() > 0) keys.push_back(key);
  return keys;
}

DeclaredEvaluationOptions AddEvaluationOptions(CLI::App* cmd, EvaluationOptions* o,
                                               EvaluationOptionSet set) {
  DeclaredEvaluationOptions d;
  const bool eval = set == EvaluationOptionSet::kEval;
  const bool submit = set == EvaluationOptionSet::kSubmit;
  const std::string timeout_default = std::to_string(o->timeout.count());
  if (eval) {
    d.by_key["trials"] = AddRangeOption(cmd, "--trials", &o->trials,
                                        "Correctness trials, each on fresh inputs", 1, 100);
    d.by_key["seed"] = AddSeedOption(cmd, o);
    d.by_key["tolerance"] = AddToleranceOption(cmd, o);
    d.by_key["sanitize"] = AddSanitizeOption(cmd, o, "Memory check: always, on-failure or never")
                               ->default_str(ToString(o->sanitize));
    d.by_key["timeout"] = AddSecondsOption(cmd, "--timeout", &o->timeout,
                                           "Seconds for the candidate's run (all trials)", 86400)
                              ->default_str(timeout_default);
    AddEvalOnlyOptions(cmd, o, &d);
    d.by_key["timing_budget"] =
        cmd->add_option("--timing-budget", o->timing_budget_s,
                        "Timing: seconds of candidate calls; a slow kernel gets fewer calls (at "
                        "least 2 + 10), 0 for no limit")
            ->check(ZeroOrMore())
            ->capture_default_str();
  } else if (submit) {
    // The service's ranges; no default shown: what is not given is the service's to choose.
    d.by_key["trials"] =
        cmd->add_option("--trials", o->trials, "Correctness trials (default: the service's, 3)")
            ->check(CLI::Range(1, 100));
    d.by_key["timeout"] =
        AddSecondsOption(cmd, "--timeout", &o->timeout, "Seconds for the candidate's run", 3600);
    d.by_key["sanitize"] = AddSanitizeOption(cmd, o, "always, on-failure or never");
  } else {  // run, fixit repair
    d.by_key["sanitize"] = AddSanitizeOption(cmd, o, "Memory check: always, on-failure, never")
                               ->default_str(ToString(o->sanitize));
    d.by_key["timeout"] =
        AddSecondsOption(cmd, "--timeout", &o->timeout, "Seconds for a candidate's run", 86400)
            ->default_str(timeout_default);
    d.by_key["timing_budget"] =
        cmd->add_option("--timing-budget", o->timing_budget_s, "Seconds of timed candidate calls")
            ->check(GreaterThanZero())
            ->capture_default_str();
  }
  if (set != EvaluationOptionSet::kRepair) d.by_key["timing"] = AddNoTimingOption(cmd, o);
  if (eval || set == EvaluationOptionSet::kAgent)
    d.by_key["baseline"] = AddAttentionBaselineOption(cmd, o);
  return d;
}

CLI::Option* AddTasksDirOption(CLI::App* cmd, std::string* dir) {
  return cmd->add_option("--tasks-dir", *dir, "Folder of definitions and workloads")
      ->envname("PTXBENCH_TASKS")
      ->check(CLI::ExistingDirectory);
}

CLI::Option* AddCacheDirOption(CLI::App* cmd, std::string* dir, const std::string& help) {
  return cmd->add_option("--cache-dir", *dir, help)->envname("PTXBENCH_CACHE");
}

CLI::Option* AddStoreOption(CLI::App* cmd, std::string* db, const std::string& help,
                            StoreSource source) {
  CLI::Option* option = cmd->add_option("--db", *db, help);
  if (source == StoreSource::kEnvironment) option->envname("PTXBENCH_DB");
  if (source == StoreSource::kExistingFile) option->check(CLI::ExistingFile);
  return option;
}

CLI::Option* AddQueueFileOption(CLI::App* cmd, std::string* file) {
  return cmd
      ->add_option("--db-file", *file,
                   "A file (yours, mode 600) whose first line is the queue: keeps a database "
                   "password off command lines (used when --db and $PTXBENCH_DB are not given)")
      ->envname("PTXBENCH_DB_FILE");
}

std::string QueueLocation(const std::string& db, const std::string& db_file) {
  if (!db.empty()) return db;
  if (!db_file.empty()) return ReadQueueLocationFile(db_file);
  return "";
}

CLI::Option* AddModelsFileOption(CLI::App* cmd, std::string* file) {
  return cmd->add_option("--models", *file, "Models file (default: agent/models.json)")
      ->check(CLI::ExistingFile);
}

void AddRunFilterOptions(CLI::App* cmd, const RunFilters& f) {
  if (f.models) cmd->add_option("--model", *f.models, "Only these models (repeatable)");
  if (f.tasks) cmd->add_option("--task", *f.tasks, "Only these tasks (repeatable)");
  if (f.packs)
    cmd->add_option("--pack", *f.packs, "Only runs with these pack variants (repeatable)");
  if (f.archs) cmd->add_option("--arch", *f.archs, "Only runs for these archs (repeatable)");
}

void AddSftExportOptions(CLI::App* cmd, ExportOptions* e) {
  cmd->add_option("--format", e->format, "messages (per-message train flag) or prompt-completion")
      ->check(CLI::IsMember({"messages", "prompt-completion"}))
      ->capture_default_str();
  AddRangeOption(cmd, "--max-tokens", &e->max_tokens,
                 "Drop rows longer than this (estimated tokens)", 1, 100000000);
  cmd->add_option("--chars-per-token", e->chars_per_token, "The token estimate's divisor")
      ->check(GreaterThanZero())
      ->capture_default_str();
  cmd->add_option("--validation-fraction", e->validation_fraction,
                  "Share of each task's rows in validation.jsonl")
      ->check(FractionBelowOne())
      ->capture_default_str();
  cmd->add_option("--split-seed", e->split_seed, "Seed of the deterministic split")
      ->capture_default_str();
}

}  // namespace ptxbench
