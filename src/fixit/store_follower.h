// `fixit repair --db`: the results store follows the repair run folder, so that the teacher's
// trajectories are an ordinary run there.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace ptxbench {

// An AgentOptions::on_save that writes each trajectory (and the record of its newest turn) to
// the store at `db` as `ptxbench run --db` does; a failed write is said once on stderr and the
// run goes on (the run folder has everything; `ptxbench import` later). Throws
// EnvironmentError where ptxbench was built without SQLite.
std::function<void(const nlohmann::json&, const nlohmann::json&)> StoreFollower(
    const std::string& db, const std::string& run_dir);

}  // namespace ptxbench
