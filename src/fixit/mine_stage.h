// `ptxbench fixit mine`, the stage: failures from the store or run folders into the work
// folder's manifest (mine.h chooses them; work_folder.h says where they go).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "fixit/failure.h"
#include "fixit/mine.h"

namespace ptxbench {

struct MineStageOptions {
  std::string db, dir;  // the results store to read (or runs), the work folder
  std::vector<std::string> runs;
  MineOptions mine;
  bool overwrite = false;  // mine again over a manifest (the later stages' files go)
};

struct MineStageResult {
  Manifest manifest;  // as written to ManifestPath(dir)
  std::map<std::string, int> excluded;
  std::vector<std::string> problems;  // turns and files that could not be read
};

// Refuses a turn range that ends before it starts before anything is cleared; then prepares
// the work folder, mines, and writes the manifest.
MineStageResult RunMineStage(const MineStageOptions& options);

}  // namespace ptxbench
