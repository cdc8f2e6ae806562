#include "fixit/work_folder.h"

#include <cstdio>
#include <filesystem>

#include "common/error.h"
#include "common/files.h"
#include "common/strings.h"

namespace ptxbench {

using nlohmann::json;

std::string ManifestPath(const std::string& dir) { return dir + "/manifest.json"; }
std::string RepairRunDir(const std::string& dir) { return dir + "/repair"; }
std::string RepairsPath(const std::string& dir) { return dir + "/repairs.json"; }
std::string ReasoningPath(const std::string& dir) { return dir + "/reasoning.jsonl"; }
std::string ExportDir(const std::string& dir) { return dir + "/export"; }

void PrepareWorkFolder(const std::string& dir, bool overwrite) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw UsageError("--dir " + dir + " exists and is not a folder");
  if (!FileExists(ManifestPath(dir))) return;
  if (!overwrite)
    throw UsageError("--dir " + dir +
                     " holds a manifest already: --overwrite mines again and removes the later "
                     "stages' files (repair/, repairs.json, reasoning.jsonl, export/)");
  for (const std::string& later :
       {RepairRunDir(dir), RepairsPath(dir), ReasoningPath(dir), ExportDir(dir)})
    fs::remove_all(later, ec);
  if (ec) throw EnvironmentError("cannot clear " + dir + ": " + ec.message());
}

json ReadRepairs(const std::string& dir) {
  if (!FileExists(RepairsPath(dir)))
    throw UsageError(RepairsPath(dir) + " is missing: run `ptxbench fixit repair` first");
  return json::parse(ReadFile(RepairsPath(dir)));
}

std::map<std::string, json> ReadReasoning(const std::string& path) {
  std::map<std::string, json> out;
  if (!FileExists(path)) return out;
  int line_no = 0;
  for (const std::string& line : SplitLines(ReadFile(path))) {
    ++line_no;
    if (Trim(line).empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("failure_id")) {
      std::fprintf(stderr, "fixit: %s line %d is not a reasoning entry; ignored\n", path.c_str(),
                   line_no);
      continue;
    }
    out[j["failure_id"]] = j;
  }
  return out;
}

}  // namespace ptxbench
