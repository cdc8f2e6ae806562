// Filling the results store from files on disk: run folders as the agent writes them
// (agent/loop.h), folders of run folders, single trajectory files and lone evaluation records.
// Importing is idempotent, so a folder can be imported again after a resumed run wrote more.
#pragma once

#include <string>
#include <vector>

#include "store/store.h"

namespace ptxbench {

// A file that was not imported (or only partly), and why.
struct ImportProblem {
  std::string path;
  std::string message;
};

struct ImportSummary {
  int runs = 0, trajectories = 0, turns = 0, evaluations = 0;  // written
  int malformed = 0;                    // files skipped because they could not be read or parsed
  int missing_evaluations = 0;          // evaluation files that a turn names but that do not exist
  std::vector<ImportProblem> problems;  // one per malformed file or missing evaluation
};

// Imports `path`:
//  - a run folder (has run.json): the run, every trajectories/*.json, and the evaluation
//    records that their turns name (evaluation_file, relative to the run folder);
//  - any other folder: every run folder and JSON file below it, in name order;
//  - a trajectory file: it, with the run folder around it (…/trajectories/x.json next to
//    …/run.json). Without a run.json, the run is stored with a stand-in run.json: {} for a
//    trajectories/ folder, {"source_file": path} for a file elsewhere (a run of its own);
//  - an evaluation record: under its "evaluation_id", else the sha256 of the file.
// A malformed file is counted, named in problems and skipped; the rest is still imported.
// Throws InputError only when `path` itself does not exist, and the store's errors (a full
// disk, a locked file past the timeout) as they come.
ImportSummary ImportPath(ResultsStore& store, const std::string& path);

}  // namespace ptxbench
