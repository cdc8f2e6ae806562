// What makes a run the same run: the settings that decide its verdicts and its turns. A resumed
// run must match them exactly, or two models' (or two configurations') turns would end up in
// one folder and one report.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ptxbench {

// The first difference between the identity of an existing run.json (`before`) and the run
// about to start (`now`), as one line naming the field and both values; nullopt when they
// are the same run. A field missing on one side only counts as a difference, except
// ptxbench_commit in a run.json written before runs recorded it.
std::optional<std::string> RunIdentityDifference(const nlohmann::json& before,
                                                 const nlohmann::json& now);

// How `ptxbench run` (and fixit's agent runs) may use the folder `dir`. Throws UsageError:
//  - resume, and dir holds no run.json ("nothing to resume");
//  - not resume, dir holds a run and overwrite is false (names --resume and --overwrite);
//  - dir exists, is not empty and holds no run.json (never overwritten: not a run folder).
// With overwrite, an existing run folder is emptied.
void PrepareRunFolder(const std::string& dir, bool resume, bool overwrite);

}  // namespace ptxbench
