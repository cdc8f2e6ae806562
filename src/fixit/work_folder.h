// The Fixit work folder (--dir): each stage reads what the earlier ones wrote there and writes
// its own file, so that every stage can be run again, resumed, and audited:
//   manifest.json      mine: the failures, each with the exact conversation it is shown in
//   repair/            repair: a run folder (agent/loop.h) of teacher trajectories seeded with
//                      the failures; with --db also an ordinary run in the results store
//   repairs.json       repair: per failure, every attempt's verdict and the repair kept
//   reasoning.jsonl    reason: per kept repair, the reasoning accepted (or why none was)
//   export/            export: train.jsonl, validation.jsonl, card.json, card.md
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace ptxbench {

std::string ManifestPath(const std::string& dir);
std::string RepairRunDir(const std::string& dir);
std::string RepairsPath(const std::string& dir);
std::string ReasoningPath(const std::string& dir);
std::string ExportDir(const std::string& dir);

// Before mining into `dir`. The later stages build on the manifest: a new manifest under an
// old repair stage would pair repairs with failures they were not made for. So mining over a
// manifest is refused (UsageError), and with `overwrite` everything the later stages wrote
// goes with the old manifest.
void PrepareWorkFolder(const std::string& dir, bool overwrite);

// repairs.json; throws UsageError when the repair stage has not written it yet.
nlohmann::json ReadRepairs(const std::string& dir);

// The newest line per failure id of reasoning.jsonl (none when there is no file); a torn last
// line (a kill mid-write) is skipped and said on stderr.
std::map<std::string, nlohmann::json> ReadReasoning(const std::string& path);

}  // namespace ptxbench
