#include "store/store_follower.h"

#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "common/bounded_json.h"
#include "common/error.h"
#include "common/files.h"
#ifdef PTXBENCH_HAVE_SQLITE
#include "store/import.h"
#include "store/store.h"
#endif

namespace ptxbench {

using nlohmann::json;

#ifdef PTXBENCH_HAVE_SQLITE

struct StoreFollower::State {
  std::string db, run_dir, who;
  std::unique_ptr<ResultsStore> store;
  std::mutex mu;
  std::string run_id;
  int failures = 0;

  void Put(const json& trajectory, const json& record) {
    if (run_id.empty())
      run_id = store->PutRun(
          ParseBoundedJson(ReadFile(run_dir + "/run.json"), run_dir + "/run.json"), run_dir);
    std::vector<StoredEvaluation> evals;
    const json& turns = trajectory["info"]["turns"];
    if (record.is_object() && !turns.empty())
      evals.push_back({ResultsStore::TurnEvaluationKey(run_id, turns.back()), record});
    store->PutTrajectory(run_id, trajectory, evals);
  }
};

StoreFollower::StoreFollower(const std::string& db, const std::string& run_dir,
                             const std::string& who, bool resume, bool quiet)
    : state_(std::make_unique<State>()) {
  state_->db = db;
  state_->run_dir = run_dir;
  state_->who = who;
  state_->store = ResultsStore::Open(db);
  if (!resume) return;
  ImportSummary im = ImportPath(*state_->store, run_dir);
  if (!quiet)
    std::fprintf(stderr, "%s: the store %s has the run's %d trajectories, %d turns\n", who.c_str(),
                 db.c_str(), im.trajectories, im.turns);
}

void StoreFollower::Save(const json& trajectory, const json& record) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      s.Put(trajectory, record);
      return;
    } catch (const std::exception& e) {
      if (attempt == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        continue;
      }
      ++s.failures;
      std::fprintf(stderr, "%s: a write to the store %s failed (%s); tried again later\n",
                   s.who.c_str(), s.db.c_str(), e.what());
    }
  }
}

void StoreFollower::Converge() {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.failures == 0) return;
  try {
    ImportPath(*s.store, s.run_dir);
    std::fprintf(stderr, "%s: after %d failed writes the store %s now holds the whole run\n",
                 s.who.c_str(), s.failures, s.db.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "%s: the store %s is behind the run folder (%s): `ptxbench import %s --db %s` "
                 "brings it up to date\n",
                 s.who.c_str(), s.db.c_str(), e.what(), s.run_dir.c_str(), s.db.c_str());
  }
}

#else

struct StoreFollower::State {};

StoreFollower::StoreFollower(const std::string& db, const std::string&, const std::string&, bool,
                             bool) {
  throw EnvironmentError("this ptxbench was built without SQLite: no results store (--db " + db +
                         ")");
}
void StoreFollower::Save(const json&, const json&) {}
void StoreFollower::Converge() {}

#endif

StoreFollower::~StoreFollower() = default;

std::function<void(const json&, const json&)> StoreFollower::OnSave() {
  return [this](const json& trajectory, const json& record) { Save(trajectory, record); };
}

}  // namespace ptxbench
