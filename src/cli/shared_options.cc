#include "cli/shared_options.h"

#include <random>

#include "cli/option_checks.h"
#include "common/strings.h"
#include "compile/nvcc.h"
#include "fixit/sft.h"
#include "serve/job_queue.h"

namespace ptxbench {

namespace {

// A whole number of seconds from 1 to `most`, into `out`.
CLI::Option* AddSecondsOption(CLI::App* cmd, const std::string& name, std::chrono::seconds* out,
                              const std::string& help, int most) {
  return cmd
      ->add_option_function<int>(
          name, [out](const int& s) { *out = std::chrono::seconds(s); }, help)
      ->check(CLI::Range(1, most));
}

// The text of a value of the JSON form, as the help shows a default.
std::string DefaultText(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// The table's option `key` (evaluate/evaluation_options.h) on `cmd`: its flag, help and check
// from the row; a value given is set through the JSON form, as the service sets it.
CLI::Option* AddTableOption(CLI::App* cmd, EvaluationOptions* o, const std::string& key,
                            bool show_default) {
  const EvaluationOptionRow& row = EvaluationOptionRowOf(key);
  auto apply = [o, key](nlohmann::json value) {
    ApplyEvaluationOptionsJson({{key, std::move(value)}}, o);
  };
  CLI::Option* option = nullptr;
  switch (row.kind) {
    case OptionKind::kInteger:
      option = cmd->add_option_function<long long>(
                      row.flag, [apply](const long long& v) { apply(v); }, row.help)
                   ->check(CLI::Range(static_cast<long long>(row.minimum),
                                      static_cast<long long>(row.maximum)));
      break;
    case OptionKind::kNumber:
      option = cmd->add_option_function<double>(
                      row.flag, [apply](const double& v) { apply(v); }, row.help)
                   ->check(NumberInRange(row.minimum, row.maximum));
      break;
    case OptionKind::kBoolean:
      return cmd->add_flag_callback(
          row.flag, [apply]() { apply(false); }, row.help);
    case OptionKind::kWord:
      option = cmd->add_option_function<std::string>(
                      row.flag, [apply](const std::string& v) { apply(v); }, row.help)
                   ->check(CLI::IsMember(row.words));
      break;
    case OptionKind::kSeed:
      throw InternalError("the seed takes `random` too: AddSeedOption declares it");
  }
  if (const nlohmann::json value = row.get(*o); show_default && !value.is_null())
    option->default_str(DefaultText(value));
  return option;
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
          EvaluationOptionRowOf("seed").help + " (default " + std::to_string(kDefaultSeed) + ")")
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
void AddEvalOnlyOptions(CLI::App* cmd, EvaluationOptions* o) {
  AddSecondsOption(cmd, "--memcheck-timeout", &o->memcheck_timeout, "Seconds for the memory check",
                   86400)
      ->default_str(std::to_string(o->memcheck_timeout.count()));
  AddSecondsOption(cmd, "--profile-timeout", &o->profile_timeout,
                   "Seconds for the profiled call that checks which instructions ran", 86400)
      ->default_str(std::to_string(o->profile_timeout.count()));
  cmd->add_flag_callback(
      "--no-build-cache", [o]() { o->use_build_cache = false; },
      "Rebuild even when a cached build exists");
  cmd->add_flag_callback(
      "--no-reference-cache", [o]() { o->use_reference_cache = false; },
      "Recompute the expected outputs even when cached");
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
  // Which rows of the table each command offers, in the order its help lists them.
  std::vector<std::string> keys;
  switch (set) {
    case EvaluationOptionSet::kEval:
      keys = {"trials", "seed",       "tolerance",     "sanitize", "timeout", "verify",
              "warmup", "iterations", "timing_budget", "timing",   "baseline"};
      break;
    case EvaluationOptionSet::kAgent:
      keys = {"sanitize", "timeout", "timing_budget", "timing", "baseline"};
      break;
    case EvaluationOptionSet::kRepair:
      keys = {"sanitize", "timeout", "timing_budget"};
      break;
    case EvaluationOptionSet::kSubmit:
      keys = {"trials", "timeout", "sanitize", "timing"};
      break;
  }
  // `submit` shows no default of its own: what is not given is the service's to choose.
  const bool show_defaults = set != EvaluationOptionSet::kSubmit;
  DeclaredEvaluationOptions d;
  for (const std::string& key : keys)
    d.by_key[key] =
        key == "seed" ? AddSeedOption(cmd, o) : AddTableOption(cmd, o, key, show_defaults);
  if (set == EvaluationOptionSet::kEval) AddEvalOnlyOptions(cmd, o);
  return d;
}

CLI::Option* AddCandidateArgument(CLI::App* cmd, std::string* kernel) {
  return cmd
      ->add_option("kernel", *kernel,
                   "The candidate .cu file, or a FlashInfer-Bench solution (.json) holding one")
      ->required();
}

CLI::Option* AddArchOption(CLI::App* cmd, std::string* arch) {
  const std::vector<std::string> names = SupportedArchs();
  return cmd->add_option("--arch", *arch, "Target architecture: " + Join(names, " or "))
      ->check(CLI::IsMember(names))
      ->capture_default_str();
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
