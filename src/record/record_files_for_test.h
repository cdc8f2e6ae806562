// For tests: every evaluation record kept as a file in the repository (the GPU runs in docs/,
// test data), read. Empty when PTXBENCH_SOURCE_DIR (set by ctest) is not.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/json_fields.h"
#include "record/record.h"

namespace ptxbench {

inline std::vector<EvaluationRecord> RecordsInRepository() {
  namespace fs = std::filesystem;
  std::vector<EvaluationRecord> out;
  const char* root = std::getenv("PTXBENCH_SOURCE_DIR");
  if (!root) return out;
  for (const char* dir : {"docs", "tests", "src", "controls"}) {
    std::error_code ec;
    const fs::path base = fs::path(root) / dir;
    if (!fs::exists(base)) continue;
    for (auto it = fs::recursive_directory_iterator(base, ec); it != fs::end(it);
         it.increment(ec)) {
      if (it->path().extension() != ".json") continue;
      std::ifstream in(it->path());
      std::stringstream text;
      text << in.rdbuf();
      const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
      if (StrField(j, "schema") == kEvaluationSchema) out.push_back(FromJson(j));
    }
  }
  return out;
}

}  // namespace ptxbench
