// A Dataset read straight from run folders (agent/loop.h's layout), for reports without a
// store and for `ptxbench import`'s checks. Only spent turns enter; the evaluation record of
// each turn, when its file is there, adds the instruction verdict (verification, arch tag).
#pragma once

#include <string>
#include <vector>

#include "record/report_rows.h"

namespace ptxbench {

struct RunFolderLoad {
  Dataset dataset;
  std::vector<std::string> skipped;  // "path: why", for files that could not be read
};

// Each path is a run folder (it holds run.json) or a folder of run folders.
RunFolderLoad LoadRunFolders(const std::vector<std::string>& paths);

}  // namespace ptxbench
