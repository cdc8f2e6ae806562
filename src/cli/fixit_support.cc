#include "cli/fixit_support.h"

#include <cstdio>
#include <mutex>

#include "agent/provider.h"
#include "agent/replay.h"
#include "common/bounded_json.h"
#include "common/error.h"
#include "common/files.h"
#include "common/json_fields.h"
#include "evaluate/evaluate.h"
#include "report/from_runs.h"
#include "serve/client.h"
#ifdef PTXBENCH_HAVE_SQLITE
#include "store/store.h"
#endif

namespace ptxbench {

using nlohmann::json;

Dataset LoadDatasetFor(const std::string& db, const std::vector<std::string>& runs,
                       const std::vector<std::string>& models,
                       const std::vector<std::string>& tasks, const std::vector<std::string>& packs,
                       const std::vector<std::string>& archs, std::vector<std::string>* problems) {
  if (!db.empty() && !runs.empty()) throw UsageError("--db and --runs exclude each other");
  if (!db.empty()) {
#ifdef PTXBENCH_HAVE_SQLITE
    if (!FileExists(db)) throw InputError("no results store at " + db);
    StoreFilter f;
    f.models = models;
    f.tasks = tasks;
    f.packs = packs;
    f.archs = archs;
    return ResultsStore::Open(db)->Load(f);
#else
    throw EnvironmentError("this ptxbench was built without SQLite: no results store (--db)");
#endif
  }
  if (runs.empty()) throw UsageError("name the trajectories: --db STORE or --runs FOLDER");
  RunFolderLoad load = LoadRunFolders(runs);
  for (const std::string& s : load.skipped) problems->push_back(s);
  return load.dataset;
}

json PublicModelJson(const ModelConfig& m) {
  json j;
  PTXBENCH_JSON_SET_FIELDS(j, m, name, provider, model, base_url, api_key_env, sampling, reasoning,
                           context_window, stream, timeout_s, max_retries, file);
  return j;
}

Teacher LoadTeacher(const std::string& models_file, const std::string& name) {
  std::string file =
      models_file.empty() ? std::string(PTXBENCH_SOURCE_DIR) + "/agent/models.json" : models_file;
  const std::vector<ModelConfig> models = LoadModelConfigs(file);
  for (const ModelConfig& m : models) {
    if (m.name != name) continue;
    Teacher t;
    t.name = m.name;
    t.info = PublicModelJson(m);
    if (m.provider == "replay") {
      std::string replay = m.file;
      if (!replay.empty() && replay[0] != '/' && !FileExists(replay))
        replay = std::string(PTXBENCH_SOURCE_DIR) + "/" + replay;
      t.provider = ReplayProvider::Load(replay, PTXBENCH_SOURCE_DIR);
    } else {
      ModelConfig config = m;
      // The teacher endpoint's 429s and 5xx on the terminal as they happen.
      config.on_retry = [](const std::string& line) {
        std::fprintf(stderr, "teacher %s\n", line.c_str());
      };
      t.provider = MakeHttpProvider(config);
    }
    return t;
  }
  throw UsageError("no model '" + name + "' in " + file);
}

Evaluator MakeEvaluator(const EvaluatorSettings& s) {
  if (!s.service_url.empty()) {
    RemoteOptions remote;
    remote.url = s.service_url;
    remote.arch = s.arch;
    remote.options = EvaluationOptionsJson(s.options, s.service_keys);
    return MakeRemoteEvaluator(remote);
  }
  return [s](const std::string& path, const Definition& def, const Workload& wl,
             const EvaluationTag&) {
    EvalRequest req;
    req.kernel_path = path;
    req.definition = &def;
    req.workload = &wl;
    req.arch = s.arch;
    req.options = s.options;
    return Evaluate(req).ToJson();
  };
}

std::function<void(const json&, const json&)> StoreFollower(const std::string& db,
                                                            const std::string& run_dir) {
#ifdef PTXBENCH_HAVE_SQLITE
  struct State {
    std::unique_ptr<ResultsStore> store;
    std::mutex mu;
    std::string run_id;
    bool failed = false;
  };
  auto st = std::make_shared<State>();
  st->store = ResultsStore::Open(db);
  return [st, db, run_dir](const json& trajectory, const json& record) {
    std::lock_guard<std::mutex> lock(st->mu);
    if (st->failed) return;
    try {
      if (st->run_id.empty())
        st->run_id = st->store->PutRun(
            ParseBoundedJson(ReadFile(run_dir + "/run.json"), run_dir + "/run.json"), run_dir);
      std::vector<StoredEvaluation> evals;
      const json& turns = trajectory["info"]["turns"];
      if (record.is_object() && !turns.empty())
        evals.push_back({ResultsStore::TurnEvaluationKey(st->run_id, turns.back()), record});
      st->store->PutTrajectory(st->run_id, trajectory, evals);
    } catch (const std::exception& e) {
      st->failed = true;
      std::fprintf(stderr,
                   "fixit: the store %s failed (%s); the run folder keeps everything: "
                   "`ptxbench import %s --db %s` later\n",
                   db.c_str(), e.what(), run_dir.c_str(), db.c_str());
    }
  };
#else
  (void)run_dir;
  throw EnvironmentError("this ptxbench was built without SQLite: no results store (--db " + db +
                         ")");
#endif
}

}  // namespace ptxbench
