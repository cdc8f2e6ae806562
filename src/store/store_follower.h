// The results store following a run folder turn by turn: `ptxbench run --db` and
// `ptxbench fixit repair --db` (whose teacher trajectories are an ordinary run there). The run
// folder is the record; the store is a copy that may lag: a failed write does not stop the run,
// and the folder is imported again to catch up.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace ptxbench {

class StoreFollower {
 public:
  // Opens the store at `db` (throws as ResultsStore::Open does; EnvironmentError where
  // ptxbench was built without SQLite). With `resume`, first brings the store up to the folder:
  // turns finished in an earlier session whose write was lost (a kill, a locked database) are
  // saved now. `who` names the command in what it says on stderr ("run", "fixit").
  StoreFollower(const std::string& db, const std::string& run_dir, const std::string& who,
                bool resume, bool quiet);
  ~StoreFollower();
  StoreFollower(const StoreFollower&) = delete;
  StoreFollower& operator=(const StoreFollower&) = delete;

  // Writes the trajectory and the record of its newest turn. A failed write is tried again once,
  // then reported on stderr; the next save tries again (the trajectory holds every turn so far).
  void Save(const nlohmann::json& trajectory, const nlohmann::json& record);
  // After failed writes, the whole run folder into the store once more; where that fails too,
  // says how to bring the store up to date (`ptxbench import`).
  void Converge();
  // Save, as an AgentOptions::on_save; valid while this follower lives.
  std::function<void(const nlohmann::json&, const nlohmann::json&)> OnSave();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ptxbench
