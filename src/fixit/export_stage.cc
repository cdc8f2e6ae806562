#include "fixit/export_stage.h"

#include <map>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/sha256.h"
#include "fixit/failure.h"
#include "fixit/work_folder.h"
#include "record/record.h"

namespace ptxbench {
namespace {

using nlohmann::json;

// Why a failure gives no row ("" when it gives one): no verified repair, no accepted
// reasoning, or reasoning written for another context or repair than the ones exported.
std::string WhyNoRow(const Failure& f, const json* repair, const json* reasoning) {
  if (!repair || !repair->value("kept", false)) return "no verified repair";
  if (!reasoning || !reasoning->value("accepted", false)) return "no accepted reasoning";
  if (reasoning->value("context_sha256", "") != f.context_sha256 ||
      reasoning->value("repair_evaluation_id", "") != repair->value("repair_evaluation_id", ""))
    return "reasoning written for another context or repair";
  return "";
}

// The row: the failure's conversation, then the reasoning and the repaired kernel (the only
// message trained on); its metadata says where each part comes from.
SftRow FixitRow(const std::string& dir, const Failure& f, const json& repair, const json& reasoning,
                const std::string& repair_teacher) {
  std::string kernel = ReadFile(RepairRunDir(dir) + "/" + repair["kernel_file"].get<std::string>());
  SftRow row;
  row.id = f.id + " -> " + repair["repair_evaluation_id"].get<std::string>();
  row.task = f.task;
  for (const ChatMessage& c : f.context) row.messages.push_back({c.role, c.content, false});
  row.messages.push_back(
      {"assistant", ThinkThenKernel(reasoning["text"].get<std::string>(), kernel), true});
  row.metadata = {
      {"kind", "fixit"},
      {"failure_evaluation_id", f.id},
      {"repair_evaluation_id", repair["repair_evaluation_id"]},
      {"task", f.task},
      {"workload", f.workload},
      {"arch", f.arch},
      {"pack", f.pack},
      {"student_model", f.model},
      {"outcome", f.outcome},
      {"status", f.status},
      {"turn", f.turn},
      {"teachers", {{"repair", repair_teacher}, {"reasoning", reasoning.value("teacher", "")}}},
      {"repair_turn", repair["turn"]},
      {"speedup", repair["speedup"]},
      {"tflops", repair["tflops"]},
      {"verification", repair["verification"]},
      {"arch_tag", repair["arch_tag"]},
      {"context_sha256", f.context_sha256}};
  return row;
}

json FixitCard(const std::string& dir, const Manifest& m, const json& repairs, const json& dropped,
               const std::set<std::string>& source_runs,
               const std::set<std::string>& reasoning_teachers) {
  return {
      {"title", "ptxbench Fixit: verified repairs of a model's own failed kernels"},
      {"kind", "fixit"},
      {"description",
       "Each row: the system and task messages the model saw, its failed kernel (assistant), the "
       "harness's feedback (user), then a teacher's first-person reasoning in <think>...</think> "
       "and the teacher's repair (assistant, the only message trained on). Every repair was "
       "correct and earned the architecture credit at run time (dynamic_present with the tag); "
       "its speedup is in each row's metadata."},
      {"dropped", dropped},
      {"created_at", NowUtcIso8601()},
      {"settings",
       {{"mine", m.settings}, {"repair", repairs["settings"]}, {"arch", repairs["arch"]}}},
      {"provenance",
       {{"ptxbench_version", PTXBENCH_VERSION},
        {"manifest_sha256", Sha256FileHex(ManifestPath(dir))},
        {"repairs_sha256", Sha256FileHex(RepairsPath(dir))},
        {"source_runs", std::vector<std::string>(source_runs.begin(), source_runs.end())},
        {"repair_run", RepairRunDir(dir)},
        {"teachers",
         {{"repair", repairs["teacher"]},
          {"reasoning",
           std::vector<std::string>(reasoning_teachers.begin(), reasoning_teachers.end())}}}}}};
}

}  // namespace

ExportSummary RunFixitExportStage(const FixitExportOptions& a, std::string* out_dir) {
  Manifest m = ReadManifest(ManifestPath(a.dir));
  json repairs = ReadRepairs(a.dir);
  std::map<std::string, json> reasoning = ReadReasoning(ReasoningPath(a.dir));
  std::map<std::string, json> repair_of;
  for (const json& r : repairs["repairs"]) repair_of[r["failure_id"]] = r;
  std::string teacher = repairs["teacher"].value("name", "");
  json dropped = json::object();
  std::vector<SftRow> rows;
  std::set<std::string> reasoning_teachers, source_runs;
  for (const Failure& f : m.failures) {
    auto r = repair_of.find(f.id);
    auto z = reasoning.find(f.id);
    std::string why = WhyNoRow(f, r == repair_of.end() ? nullptr : &r->second,
                               z == reasoning.end() ? nullptr : &z->second);
    if (!why.empty()) {
      dropped[why] = dropped.value(why, 0) + 1;
      continue;
    }
    rows.push_back(FixitRow(a.dir, f, r->second, z->second, teacher));
    reasoning_teachers.insert(z->second.value("teacher", ""));
    source_runs.insert(f.run_id);
  }
  ExportOptions e = a.sft;
  if (e.out_dir.empty()) e.out_dir = ExportDir(a.dir);
  *out_dir = e.out_dir;
  json card = FixitCard(a.dir, m, repairs, dropped, source_runs, reasoning_teachers);
  return WriteSftExport(std::move(rows), e, card);
}

}  // namespace ptxbench
