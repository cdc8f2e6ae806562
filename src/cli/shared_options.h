// Options that more than one command declares, each declared here once so that the commands
// agree on its name, environment variable, check and (where it means the same) its help.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <vector>

#include "evaluate/evaluation_options.h"

namespace ptxbench {

// A number option checked against [lo, hi] (CLI11's range check and its message), its default
// shown in the help: most counts, sizes and seconds of the commands.
template <typename T, typename Bound>
CLI::Option* AddRangeOption(CLI::App* cmd, const std::string& name, T* value,
                            const std::string& help, Bound lo, Bound hi) {
  return cmd->add_option(name, *value, help)->check(CLI::Range(lo, hi))->capture_default_str();
}

// --- the evaluation settings (evaluate/evaluation_options.h) ---

// Which evaluation options a command offers. Where commands word an option differently (or,
// for `submit`, check it against the service's range and show no default of its own: the
// service's applies), each keeps its wording.
enum class EvaluationOptionSet {
  kEval,    // `eval`: every one
  kAgent,   // `run`: --sanitize, --timeout, --timing-budget, --no-timing, --baseline
  kRepair,  // `fixit repair`: --sanitize, --timeout, --timing-budget
  kSubmit,  // `submit`: --trials, --timeout, --sanitize, --no-timing (only those given are sent)
};

// The evaluation options declared on a command, by their key in the JSON form.
struct DeclaredEvaluationOptions {
  std::map<std::string, CLI::Option*> by_key;
  // The JSON keys of the options given on the command line (once it is parsed).
  std::vector<std::string> GivenKeys() const;
};

// Declares the set's options on `cmd`; parsing writes their values into `options` (which
// holds the defaults until then).
DeclaredEvaluationOptions AddEvaluationOptions(CLI::App* cmd, EvaluationOptions* options,
                                               EvaluationOptionSet set);

// The candidate argument of eval, inspect and submit: a .cu file or a FlashInfer-Bench solution
// (report/flashinfer_bench.h ReadCandidateFile reads either).
CLI::Option* AddCandidateArgument(CLI::App* cmd, std::string* kernel);

// --arch: one of the architecture table's (record/vocabulary.h, through SupportedArchs()),
// its default shown.
CLI::Option* AddArchOption(CLI::App* cmd, std::string* arch);

// --- the task catalog, the caches, the results store, the models ---

// --tasks-dir ($PTXBENCH_TASKS): the folder of definitions and workloads.
CLI::Option* AddTasksDirOption(CLI::App* cmd, std::string* dir);

// --cache-dir ($PTXBENCH_CACHE): the build (and reference) cache; `help` says whose.
CLI::Option* AddCacheDirOption(CLI::App* cmd, std::string* dir, const std::string& help);

// Where --db may come from besides the command line.
enum class StoreSource {
  kEnvironment,   // also $PTXBENCH_DB
  kExistingFile,  // only the command line, and a file that exists (a store to read)
  kCommandLine,   // only the command line
};
// --db: the results store (or the service's queue); `help` says what the command does with it.
CLI::Option* AddStoreOption(CLI::App* cmd, std::string* db, const std::string& help,
                            StoreSource source);

// --db-file (also $PTXBENCH_DB_FILE): a private file holding the service's queue location, so
// that a database password is on no command line. QueueLocation: --db (or $PTXBENCH_DB) when
// given, else the file's first line (ReadQueueLocationFile), else "".
CLI::Option* AddQueueFileOption(CLI::App* cmd, std::string* file);
std::string QueueLocation(const std::string& db, const std::string& db_file);

// --models: the models file (default agent/models.json); the same words on every command
// (`fixit repair` and `fixit reason` said "(default agent/…)", `run` "(default: agent/…)").
CLI::Option* AddModelsFileOption(CLI::App* cmd, std::string* file);

// The filters of a command that reads stored runs (repeatable; a null target: not offered).
struct RunFilters {
  std::vector<std::string>* models = nullptr;  // --model
  std::vector<std::string>* tasks = nullptr;   // --task
  std::vector<std::string>* packs = nullptr;   // --pack
  std::vector<std::string>* archs = nullptr;   // --arch
};
void AddRunFilterOptions(CLI::App* cmd, const RunFilters& filters);

// --- SFT exports (fixit/sft.h) ---

struct ExportOptions;
// The options of an SFT export, shared by `fixit export` and `kernelgen export`: --format,
// --max-tokens, --chars-per-token, --validation-fraction, --split-seed.
void AddSftExportOptions(CLI::App* cmd, ExportOptions* options);

}  // namespace ptxbench
