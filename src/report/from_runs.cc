#include "report/from_runs.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "record/upstream_sass.h"

namespace ptxbench {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string Str(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

void LoadRun(const fs::path& run, RunFolderLoad* out) {
  json info = json::parse(ReadFile((run / "run.json").string()), nullptr, false);
  if (info.is_discarded() || !info.is_object()) {
    out->skipped.push_back((run / "run.json").string() + ": not JSON");
    return;
  }
  const json model = info.value("model", json::object());
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run / "trajectories", ec))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    json t = json::parse(ReadFile(f.string()), nullptr, false);
    if (t.is_discarded() || !t.contains("info") || !t["info"].contains("turns")) {
      out->skipped.push_back(f.string() + ": not a trajectory");
      continue;
    }
    const json& ti = t["info"];
    TrajectoryRow row;
    row.run_id = run.filename().string();
    row.run_dir = run.string();
    row.id = Str(ti, "id");
    row.model = Str(model, "name");
    row.provider = Str(model, "provider");
    row.task = Str(ti, "task");
    row.workload = Str(ti, "workload");
    row.arch = Str(info, "arch");
    row.pack = Str(info, "pack");
    const json pack_info = info.value("pack_info", json::object());
    if (pack_info.is_object() && pack_info.contains("hardware_verified") &&
        pack_info["hardware_verified"].is_boolean())
      row.pack_hardware_verified = pack_info["hardware_verified"].get<bool>();
    row.index = ti.value("index", 0);
    row.exit_status = Str(ti, "exit_status");
    for (const json& u : ti["turns"]) {
      if (!u.value("spent", true)) continue;
      TurnRow r;
      r.turn = u.value("turn", 0);
      r.outcome = Str(u, "outcome");
      r.status = Str(u, "status");
      r.reason = Str(u, "reason");
      if (u.contains("speedup") && u["speedup"].is_number()) r.speedup = u["speedup"].get<double>();
      if (u.contains("tflops") && u["tflops"].is_number()) r.tflops = u["tflops"].get<double>();
      r.evaluation_id = Str(u, "evaluation_id");
      r.kernel_file = Str(u, "kernel_file");
      r.evaluation_file = Str(u, "evaluation_file");
      const json usage = u.value("usage", json::object());
      r.prompt_tokens = usage.value("prompt_tokens", int64_t{0});
      r.completion_tokens = usage.value("completion_tokens", int64_t{0});
      r.reasoning_tokens = usage.value("reasoning_tokens", int64_t{0});
      r.model_seconds = u.value("model_seconds", 0.0);
      r.evaluation_seconds = u.value("evaluation_seconds", 0.0);
      if (!r.evaluation_file.empty() && FileExists((run / r.evaluation_file).string())) {
        json rec = json::parse(ReadFile((run / r.evaluation_file).string()), nullptr, false);
        const json ins = rec.is_object() ? rec.value("instructions", json::object()) : json();
        r.verification = Str(ins, "verification");
        r.arch_tag = Str(ins, "arch_tag");
        // Absent from records written before the paper's tag was kept: arch_tag stands for it.
        if (ins.is_object() && ins.contains("upstream_arch_tag"))
          r.upstream_arch_tag = Str(ins, "upstream_arch_tag");
        const json build = rec.is_object() ? rec.value("build", json::object()) : json();
        r.upstream_sass = UpstreamSassColumns(ins, Str(build, "shared_object_sha256"), row.arch,
                                              r.Correct(), r.evaluation_id);
      }
      row.turns.push_back(r);
    }
    out->dataset.trajectories.push_back(std::move(row));
  }
}

}  // namespace

RunFolderLoad LoadRunFolders(const std::vector<std::string>& paths) {
  RunFolderLoad out;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::exists(fs::path(p) / "run.json")) {
      LoadRun(p, &out);
      continue;
    }
    if (!fs::is_directory(p, ec)) {
      out.skipped.push_back(p + ": not a run folder or a folder of them");
      continue;
    }
    std::vector<fs::path> runs;
    for (const auto& e : fs::directory_iterator(p, ec))
      if (fs::exists(e.path() / "run.json")) runs.push_back(e.path());
    std::sort(runs.begin(), runs.end());
    for (const auto& r : runs) LoadRun(r, &out);
  }
  return out;
}

}  // namespace ptxbench
