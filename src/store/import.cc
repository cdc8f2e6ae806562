#include "store/import.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>

#include "common/bounded_json.h"
#include "common/error.h"
#include "common/files.h"
#include "common/json_fields.h"
#include "common/sha256.h"
#include "record/record.h"

namespace ptxbench {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Folders nested deeper than this are not searched: a link loop must not recurse forever.
constexpr int kMaxDepth = 16;

class Importer {
 public:
  Importer(ResultsStore& store, ImportSummary& summary) : store_(store), sum_(summary) {}

  void Any(const fs::path& p, int depth) {
    std::error_code ec;
    if (fs::is_directory(p, ec))
      Dir(p, depth);
    else
      File(p);
  }

 private:
  void Problem(const fs::path& p, const std::string& message, bool malformed = true) {
    sum_.malformed += malformed;
    sum_.problems.push_back({p.string(), message});
  }

  // The file's JSON, or nothing (reported) when it cannot be read or parsed. `text` gets the
  // raw content when asked for (a lone record's id may be its digest).
  std::optional<json> Parse(const fs::path& p, std::string* text = nullptr) {
    try {
      std::string content = ReadFile(p.string());
      json j = ParseBoundedJson(content, "");  // Problem() names the file
      if (text) *text = std::move(content);
      return j;
    } catch (const json::exception& e) {
      Problem(p, std::string("not valid JSON: ") + e.what());
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInput) throw;
      Problem(p, e.what());
    }
    return std::nullopt;
  }

  static std::vector<fs::path> Sorted(const fs::path& dir) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      out.push_back(it->path());
    std::sort(out.begin(), out.end());
    return out;
  }

  void Dir(const fs::path& dir, int depth) {
    std::error_code ec;
    if (fs::is_regular_file(dir / "run.json", ec)) return RunDir(dir);
    if (depth >= kMaxDepth) return Problem(dir, "nested too deep; not searched", false);
    for (const fs::path& p : Sorted(dir)) {
      if (fs::is_directory(p, ec))
        Dir(p, depth + 1);
      else if (p.extension() == ".json")
        File(p);
    }
  }

  // The run in `dir` (run.json parsed as `run`, or an empty one when it has none); its id.
  std::optional<std::string> Run(const fs::path& dir, const json& run) {
    try {
      std::string id = store_.PutRun(run, dir.string());
      if (seen_runs_.insert(id).second) ++sum_.runs;
      return id;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInput) throw;
      Problem(dir / "run.json", e.what());
      return std::nullopt;
    }
  }

  void RunDir(const fs::path& dir) {
    std::optional<json> run = Parse(dir / "run.json");
    if (!run) return;  // without its run the trajectories have nothing to belong to
    std::optional<std::string> id = Run(dir, *run);
    if (!id) return;
    for (const fs::path& p : Sorted(dir / "trajectories"))
      if (p.extension() == ".json") Trajectory(*id, dir, p);
  }

  void Trajectory(const std::string& run_id, const fs::path& run_dir, const fs::path& p) {
    std::optional<json> traj = Parse(p);
    if (!traj) return;
    // The records its turns name go in the same transaction as the trajectory, so that a
    // reader never sees turns whose evaluations are still missing.
    std::vector<StoredEvaluation> evals;
    const json* turns = nullptr;
    if (traj->is_object() && traj->contains("info") && (*traj)["info"].is_object() &&
        (*traj)["info"].contains("turns") && (*traj)["info"]["turns"].is_array())
      turns = &(*traj)["info"]["turns"];
    for (const json& t : turns ? *turns : json::array()) {
      if (!t.is_object() || !t.contains("evaluation_file") || !t["evaluation_file"].is_string())
        continue;
      std::string rel = t["evaluation_file"];
      if (rel.empty()) continue;
      fs::path file = run_dir / rel;
      std::error_code ec;
      if (!fs::exists(file, ec)) {
        ++sum_.missing_evaluations;
        Problem(file, "named by " + p.filename().string() + " but missing", false);
        continue;
      }
      std::optional<json> record = Parse(file);
      if (!record) continue;
      try {
        ResultsStore::CheckEvaluation(*record, file.string());
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kInput) throw;
        Problem(file, e.what());
        continue;
      }
      evals.push_back({ResultsStore::TurnEvaluationKey(run_id, t), std::move(*record)});
    }
    try {
      store_.PutTrajectory(run_id, *traj, evals);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInput) throw;
      return Problem(p, e.what());
    }
    ++sum_.trajectories;
    sum_.turns += turns ? static_cast<int>(turns->size()) : 0;
    sum_.evaluations += static_cast<int>(evals.size());
  }

  void File(const fs::path& p) {
    if (p.filename() == "run.json") return RunDir(p.parent_path());
    std::string text;
    std::optional<json> j = Parse(p, &text);
    if (!j) return;
    if (j->is_object() && j->contains("info") && j->contains("messages")) {
      // A trajectory outside an import of its run: find the run folder around it. A file
      // with no run folder is a run of its own (trajectory ids repeat across runs, so two
      // such files in one folder must not share a run).
      fs::path dir = fs::absolute(p).parent_path();
      bool in_run = dir.filename() == "trajectories";
      if (in_run) dir = dir.parent_path();
      std::optional<json> run =
          in_run ? json::object() : json{{"source_file", fs::absolute(p).string()}};
      std::error_code ec;
      if (fs::exists(dir / "run.json", ec)) run = Parse(dir / "run.json");
      if (!run) return;
      if (std::optional<std::string> id = Run(dir, *run)) Trajectory(*id, dir, p);
      return;
    }
    if (j->is_object() && StrField(*j, "schema").rfind("ptxbench.run/", 0) == 0)
      return Problem(p, "a run description away from its run folder (only run.json is read)",
                     false);
    if (j->is_object() && j->contains("status")) {
      std::string id = FromJson(*j).evaluation_id;
      if (id.empty()) id = Sha256Hex(text);
      try {
        store_.PutEvaluation(*j, id);
        ++sum_.evaluations;
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kInput) throw;
        Problem(p, e.what());
      }
      return;
    }
    Problem(p, "not a ptxbench run, trajectory or evaluation record");
  }

  ResultsStore& store_;
  ImportSummary& sum_;
  std::set<std::string> seen_runs_;
};

}  // namespace

ImportSummary ImportPath(ResultsStore& store, const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(path + ": no such file or folder to import");
  ImportSummary summary;
  Importer(store, summary).Any(fs::path(path), 0);
  return summary;
}

}  // namespace ptxbench
