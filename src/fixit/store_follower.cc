#include "fixit/store_follower.h"

#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#include "common/bounded_json.h"
#include "common/error.h"
#include "common/files.h"
#ifdef PTXBENCH_HAVE_SQLITE
#include "store/store.h"
#endif

namespace ptxbench {

using nlohmann::json;

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
