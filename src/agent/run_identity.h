// What makes a run the same run: the settings that decide its verdicts and its turns. A resumed
// run must match them exactly, or two models' (or two configurations') turns would end up in
// one folder and one report.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "task/definition.h"

namespace ptxbench {

// What a run.json written before the FlashInfer release was recorded meant by its baseline
// "flashinfer": the one release the harness built then. A resume of such a run keeps it.
inline constexpr const char* kLegacyFlashInferBaseline = "flashinfer@0.7.4";

// The first difference between the identity of an existing run.json (`before`) and the run
// about to start (`now`), as one line naming the one field that differs (the deepest one:
// "model/temperature", "definitions/NAME/definition_sha256") and both values in full (a value
// of thousands of characters: the stretch where they differ, with a note); nullopt when they
// are the same run. The tasks are compared in any order. A field missing on one side only
// counts as a difference, except ptxbench_commit in a run.json written before runs recorded it.
// A run.json's baseline "flashinfer" (written before the FlashInfer release was recorded) is
// the same as kLegacyFlashInferBaseline.
// What run.json records, under "definitions", of the definitions a run judges under: for each
// task, by name, the SHA-256 of its definition's canonical JSON (ToJson without the workloads,
// keys sorted), the id of the workload it runs and the SHA-256 of that workload's. Any change
// that could change a verdict or a prompt (an axis such as causal, a tolerance, the text)
// changes a hash; a workload added beside the one run does not.
nlohmann::json DefinitionsRecord(
    const std::vector<std::pair<const Definition*, const Workload*>>& used);

std::optional<std::string> RunIdentityDifference(const nlohmann::json& before,
                                                 const nlohmann::json& now);

// How `ptxbench run` (and fixit's agent runs) may use the folder `dir`. Throws UsageError:
//  - resume, and dir holds no run.json ("nothing to resume");
//  - not resume, dir holds a run and overwrite is false (names --resume and --overwrite);
//  - dir exists, is not empty and holds no run.json (never overwritten: not a run folder).
// With overwrite, an existing run folder is emptied.
void PrepareRunFolder(const std::string& dir, bool resume, bool overwrite);

}  // namespace ptxbench
