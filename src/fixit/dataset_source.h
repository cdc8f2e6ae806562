// Where `fixit mine` and `kernelgen export` read trajectories from: the results store (--db)
// or run folders (--runs), exactly one of them.
#pragma once

#include <string>
#include <vector>

#include "record/report_rows.h"

namespace ptxbench {

// From the store at `db` when given (filters applied there), else from the run folders.
// `problems` gets "path: why" for files that could not be read. Throws UsageError when both
// or neither are named.
Dataset LoadDatasetFor(const std::string& db, const std::vector<std::string>& runs,
                       const std::vector<std::string>& models,
                       const std::vector<std::string>& tasks, const std::vector<std::string>& packs,
                       const std::vector<std::string>& archs, std::vector<std::string>* problems);

}  // namespace ptxbench
