#include "fixit/kernelgen_export.h"

#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "agent/trajectory.h"
#include "common/error.h"
#include "common/files.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "fixit/dataset_source.h"
#include "fixit/failure.h"
#include "fixit/keep.h"
#include "record/record.h"

namespace ptxbench {
namespace {

using nlohmann::json;

// The reply's text around its code blocks: what the model said about the kernel it wrote.
std::string ProseOf(const std::string& reply) {
  std::string out;
  bool in_fence = false;
  for (const std::string& line : SplitLines(reply)) {
    if (StartsWith(Trim(line), "```")) {
      in_fence = !in_fence;
      continue;
    }
    if (!in_fence) out += line + "\n";
  }
  return Trim(out);
}

// What the rows are built from, across turns: the drop reasons, the kernels seen (duplicates
// enter once), and the provenance the card lists.
struct KernelgenRows {
  std::vector<SftRow> rows;
  json dropped = json::object();
  std::set<std::string> seen, models, source_runs;
  int without_prose = 0;
  void Drop(const std::string& why) { dropped[why] = dropped.value(why, 0) + 1; }
};

// The row of one verified turn, or nothing (and why, in `out`): the verdict again, from the
// record itself, never from the outcome string alone; only trajectories whose context is the
// system and task messages alone; one row per normalized kernel source.
void AddTurnRow(const TrajectoryRow& t, const TurnRow& u, std::optional<double> min_speedup,
                KernelgenRows* out) {
  json record = json::parse(ReadFile(t.run_dir + "/" + u.evaluation_file));
  RepairJudgement j = JudgeRepair(record, t.arch, min_speedup);
  if (!j.kept) return out->Drop(j.reason);
  Trajectory tr =
      TrajectoryFromJson(json::parse(ReadFile(t.run_dir + "/trajectories/" + t.id + ".json")));
  if (tr.preamble != 2)
    return out->Drop(
        "seeded trajectory (a fixit repair): its context is not system and task alone");
  size_t reply = tr.preamble + 2 * static_cast<size_t>(u.turn - 1);
  if (reply >= tr.messages.size()) throw InputError("no reply for turn " + std::to_string(u.turn));
  std::string kernel = ReadFile(t.run_dir + "/" + u.kernel_file);
  if (!out->seen
           .insert(t.task + "\n" + t.workload + "\n" + t.arch + "\n" +
                   Sha256Hex(NormalizeSource(kernel)))
           .second)
    return out->Drop("duplicate kernel (normalized source)");
  std::string prose = ProseOf(tr.messages[reply].content);
  out->without_prose += prose.empty();
  SftRow row;
  row.id = t.run_id + "/" + u.evaluation_id;
  row.task = t.task;
  row.messages = {{"system", tr.messages[0].content, false},
                  {"user", tr.messages[1].content, false},
                  {"assistant", ThinkThenKernel(prose, kernel), true}};
  row.metadata = {{"kind", "kernelgen"},
                  {"evaluation_id", row.id},
                  {"task", t.task},
                  {"workload", t.workload},
                  {"arch", t.arch},
                  {"pack", t.pack},
                  {"outcome", u.outcome},
                  {"turn", u.turn},
                  {"teachers", {{"author", t.model}}},
                  {"speedup", j.speedup ? json(*j.speedup) : json()},
                  {"tflops", j.tflops ? json(*j.tflops) : json()},
                  {"verification", j.verification},
                  {"arch_tag", j.arch_tag}};
  out->models.insert(t.model);
  out->source_runs.insert(t.run_id);
  out->rows.push_back(std::move(row));
}

json KernelgenCard(const KernelgenExportOptions& a, std::optional<double> min_speedup,
                   const KernelgenRows& r, const std::vector<std::string>& problems) {
  return {{"title", "ptxbench KernelGen: correct kernels verified at run time"},
          {"kind", "kernelgen"},
          {"description",
           "Each row: the system and task messages the model saw, then its reasoning (the reply's "
           "text outside the code block) in <think>...</think> and the kernel (the only message "
           "trained on). Every kernel was correct and earned the architecture credit at run time "
           "(dynamic_present with the tag), judged again from its evaluation record."},
          {"dropped", r.dropped},
          {"created_at", NowUtcIso8601()},
          {"settings",
           {{"source", a.db.empty() ? json{{"runs", a.runs}} : json{{"db", a.db}}},
            {"filters",
             {{"models", a.models}, {"tasks", a.tasks}, {"packs", a.packs}, {"archs", a.archs}}},
            {"min_speedup", min_speedup ? json(*min_speedup) : json()},
            {"reasoning_source", "the model's own reply text outside the code block"},
            {"rows_without_reasoning_text", r.without_prose}}},
          {"provenance",
           {{"ptxbench_version", PTXBENCH_VERSION},
            {"source_runs", std::vector<std::string>(r.source_runs.begin(), r.source_runs.end())},
            {"models", std::vector<std::string>(r.models.begin(), r.models.end())},
            {"problems", problems}}}};
}

}  // namespace

ExportSummary RunKernelgenExport(const KernelgenExportOptions& a,
                                 std::vector<std::string>* problems) {
  if (a.sft.out_dir.empty()) throw UsageError("--out is required");
  Dataset d = LoadDatasetFor(a.db, a.runs, a.models, a.tasks, a.packs, a.archs, problems);
  std::optional<double> min_speedup =
      a.min_speedup > 0 ? std::optional<double>(a.min_speedup) : std::nullopt;
  KernelgenRows r;
  for (const TrajectoryRow& t : d.trajectories) {
    for (const TurnRow& u : t.turns) {
      if (!u.Verified()) continue;
      try {
        AddTurnRow(t, u, min_speedup, &r);
      } catch (const Error& e) {
        problems->push_back(t.run_id + "/" + u.evaluation_id + ": " + e.what());
        r.Drop("files unreadable");
      }
    }
  }
  json card = KernelgenCard(a, min_speedup, r, *problems);
  return WriteSftExport(std::move(r.rows), a.sft, card);
}

}  // namespace ptxbench
