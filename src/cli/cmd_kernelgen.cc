// `ptxbench kernelgen export`: SFT rows from correct kernels that earned the architecture
// credit at run time (system, task, then the model's reasoning in <think>…</think> and the
// kernel), with the split and card of `fixit export` (fixit/sft.h).
#include <cstdio>
#include <set>

#include "agent/trajectory.h"
#include "cli/commands.h"
#include "cli/option_checks.h"
#include "cli/shared_options.h"
#include "common/error.h"
#include "common/files.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "fixit/dataset_source.h"
#include "fixit/failure.h"
#include "fixit/keep.h"
#include "fixit/sft.h"
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

struct Args {
  std::string db;
  std::vector<std::string> runs, models, tasks, packs, archs;
  double min_speedup = 0;
  ExportOptions e;
};

int Export(Args a) {
  if (a.e.out_dir.empty()) throw UsageError("--out is required");
  std::vector<std::string> problems;
  Dataset d = LoadDatasetFor(a.db, a.runs, a.models, a.tasks, a.packs, a.archs, &problems);
  std::optional<double> min_speedup =
      a.min_speedup > 0 ? std::optional<double>(a.min_speedup) : std::nullopt;
  json dropped = json::object();
  auto drop = [&](const std::string& why) { dropped[why] = dropped.value(why, 0) + 1; };
  std::set<std::string> seen, models, source_runs;
  std::vector<SftRow> rows;
  int without_prose = 0;
  for (const TrajectoryRow& t : d.trajectories) {
    for (const TurnRow& u : t.turns) {
      if (!u.Verified()) continue;
      std::string id = t.run_id + "/" + u.evaluation_id;
      try {
        // The verdict again, from the record itself: never from the outcome string alone.
        json record = json::parse(ReadFile(t.run_dir + "/" + u.evaluation_file));
        RepairJudgement j = JudgeRepair(record, t.arch, min_speedup);
        if (!j.kept) {
          drop(j.reason);
          continue;
        }
        Trajectory tr = TrajectoryFromJson(
            json::parse(ReadFile(t.run_dir + "/trajectories/" + t.id + ".json")));
        if (tr.preamble != 2) {
          drop("seeded trajectory (a fixit repair): its context is not system and task alone");
          continue;
        }
        size_t reply = tr.preamble + 2 * static_cast<size_t>(u.turn - 1);
        if (reply >= tr.messages.size())
          throw InputError("no reply for turn " + std::to_string(u.turn));
        std::string kernel = ReadFile(t.run_dir + "/" + u.kernel_file);
        if (!seen.insert(t.task + "\n" + t.workload + "\n" + t.arch + "\n" +
                         Sha256Hex(NormalizeSource(kernel)))
                 .second) {
          drop("duplicate kernel (normalized source)");
          continue;
        }
        std::string prose = ProseOf(tr.messages[reply].content);
        without_prose += prose.empty();
        SftRow row;
        row.id = id;
        row.task = t.task;
        row.messages = {{"system", tr.messages[0].content, false},
                        {"user", tr.messages[1].content, false},
                        {"assistant", ThinkThenKernel(prose, kernel), true}};
        row.metadata = {{"kind", "kernelgen"},
                        {"evaluation_id", id},
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
        models.insert(t.model);
        source_runs.insert(t.run_id);
        rows.push_back(std::move(row));
      } catch (const Error& e) {
        problems.push_back(id + ": " + e.what());
        drop("files unreadable");
      }
    }
  }
  json card = {
      {"title", "ptxbench KernelGen: correct kernels verified at run time"},
      {"kind", "kernelgen"},
      {"description",
       "Each row: the system and task messages the model saw, then its reasoning (the reply's "
       "text outside the code block) in <think>...</think> and the kernel (the only message "
       "trained on). Every kernel was correct and earned the architecture credit at run time "
       "(dynamic_present with the tag), judged again from its evaluation record."},
      {"dropped", dropped},
      {"created_at", NowUtcIso8601()},
      {"settings",
       {{"source", a.db.empty() ? json{{"runs", a.runs}} : json{{"db", a.db}}},
        {"filters",
         {{"models", a.models}, {"tasks", a.tasks}, {"packs", a.packs}, {"archs", a.archs}}},
        {"min_speedup", min_speedup ? json(*min_speedup) : json()},
        {"reasoning_source", "the model's own reply text outside the code block"},
        {"rows_without_reasoning_text", without_prose}}},
      {"provenance",
       {{"ptxbench_version", PTXBENCH_VERSION},
        {"source_runs", std::vector<std::string>(source_runs.begin(), source_runs.end())},
        {"models", std::vector<std::string>(models.begin(), models.end())},
        {"problems", problems}}}};
  ExportSummary s = WriteSftExport(std::move(rows), a.e, card);
  std::printf("kernelgen export: %d train, %d validation rows -> %s", s.train, s.validation,
              a.e.out_dir.c_str());
  for (const auto& [why, n] : s.dropped) std::printf("; dropped %d: %s", n, why.c_str());
  std::printf("\n");
  for (const std::string& p : problems) std::fprintf(stderr, "kernelgen export: %s\n", p.c_str());
  return 0;
}

}  // namespace

CommandRunner AddKernelgenCommand(CLI::App& app) {
  CLI::App* kg = app.add_subcommand("kernelgen", "SFT data from correct, verified kernels");
  kg->require_subcommand(1);
  auto a = std::make_shared<Args>();
  CLI::App* e = kg->add_subcommand("export", "SFT rows (chat JSONL), split, dataset card");
  AddStoreOption(e, &a->db, "The results store to read", StoreSource::kExistingFile);
  e->add_option("--runs", a->runs, "Run folders, or folders of them (instead of --db)")
      ->check(CLI::ExistingDirectory);
  e->add_option("--out", a->e.out_dir, "Where to write")->required();
  AddRunFilterOptions(e, {&a->models, &a->tasks, &a->packs, &a->archs});
  e->add_option("--min-speedup", a->min_speedup, "Only kernels at least this fast (0: any)")
      ->check(ZeroOrMore())
      ->capture_default_str();
  AddSftExportOptions(e, &a->e);
  return [a, e]() { return e->parsed() ? Export(*a) : 2; };
}

}  // namespace ptxbench
