// What `ptxbench fixit` and `ptxbench kernelgen` share with the rest of the CLI: the dataset
// from the store or run folders, a teacher model from the models file, the evaluator, and the
// results store following a run folder.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/chat.h"
#include "agent/loop.h"
#include "agent/model_config.h"
#include "evaluate/evaluation_options.h"
#include "record/report_rows.h"

namespace CLI {
class App;
}

namespace ptxbench {

struct ExportOptions;
// The options of an SFT export (fixit/sft.h), shared by `fixit export` and `kernelgen export`.
void AddSftExportOptions(CLI::App* cmd, ExportOptions* options);

// From the store at `db` when given (filters applied there), else from the run folders.
// `problems` gets "path: why" for files that could not be read.
Dataset LoadDatasetFor(const std::string& db, const std::vector<std::string>& runs,
                       const std::vector<std::string>& models,
                       const std::vector<std::string>& tasks, const std::vector<std::string>& packs,
                       const std::vector<std::string>& archs, std::vector<std::string>* problems);

struct Teacher {
  std::unique_ptr<ChatProvider> provider;
  nlohmann::json info;  // what files may say about it: never a key
  std::string name;
};
// The model `name` of the models file (default agent/models.json): an HTTP provider, or a
// replay. Throws UsageError for an unknown name.
Teacher LoadTeacher(const std::string& models_file, const std::string& name);

// What the models file may say about a model in run.json and cards: no key, only its name.
nlohmann::json PublicModelJson(const ModelConfig& m);

struct EvaluatorSettings {
  std::string arch = "sm_90a";
  EvaluationOptions options;
  // The options the service is sent (their JSON form); it applies its defaults to the rest.
  std::vector<std::string> service_keys;
  std::string service_url;  // `--evaluator URL`: send every evaluation to `ptxbench serve`
};
// The evaluator of `run` and of every fixit stage that evaluates: the local pipeline
// (evaluate.h), one call per kernel, or the evaluation service at service_url with the same
// settings.
Evaluator MakeEvaluator(const EvaluatorSettings& settings);

// An AgentOptions::on_save that writes each trajectory (and the record of its newest turn) to
// the store at `db` as `ptxbench run --db` does; a failed write is said once on stderr and the
// run goes on (the run folder has everything; `ptxbench import` later). Throws
// EnvironmentError where ptxbench was built without SQLite.
std::function<void(const nlohmann::json&, const nlohmann::json&)> StoreFollower(
    const std::string& db, const std::string& run_dir);

}  // namespace ptxbench
