// `ptxbench fixit mine|repair|reason|export`: a model's own failures turned into verified,
// repair-conditioned SFT data (README, "Fixit"). This file declares each stage's options and
// prints its summary; the stages themselves are in fixit/ (mine_stage.h, repair_stage.h,
// reason_stage.h, export_stage.h), over the work folder that fixit/work_folder.h describes.
#include <cstdio>
#include <map>

#include "cli/commands.h"
#include "cli/option_checks.h"
#include "cli/shared_options.h"
#include "fixit/export_stage.h"
#include "fixit/mine_stage.h"
#include "fixit/reason_stage.h"
#include "fixit/repair_stage.h"
#include "fixit/work_folder.h"
#include "serve/evaluator_choice.h"

namespace ptxbench {
namespace {

// --- mine ---

CLI::App* DeclareMine(CLI::App* fixit, MineStageOptions* mine) {
  CLI::App* m = fixit->add_subcommand("mine", "Select failed turns of stored trajectories");
  AddStoreOption(m, &mine->db, "The results store to read", StoreSource::kExistingFile);
  m->add_option("--runs", mine->runs, "Run folders, or folders of them (instead of --db)")
      ->check(CLI::ExistingDirectory);
  m->add_option("--dir", mine->dir, "The fixit work folder (manifest.json goes there)")->required();
  m->add_option("--outcome", mine->mine.outcomes,
                "compile, runtime, memory, incorrect (repeatable; default all four)")
      ->check(CLI::IsMember(RepairableOutcomes()));
  AddRunFilterOptions(
      m, {&mine->mine.models, &mine->mine.tasks, &mine->mine.packs, &mine->mine.archs});
  AddRangeOption(m, "--min-turn", &mine->mine.min_turn, "First turn to take", 1, 100);
  AddRangeOption(m, "--max-turn", &mine->mine.max_turn, "Last turn to take (0: any)", 0, 100);
  AddRangeOption(m, "--cap-per-task", &mine->mine.cap_per_task,
                 "At most this many failures per task, stratified by (outcome, turn); 0: no cap", 0,
                 100000000);
  m->add_flag("--overwrite", mine->overwrite,
              "Mine again into a work folder that has a manifest (the later stages' files go)");
  return m;
}

int Mine(const MineStageOptions& a) {
  MineStageResult r = RunMineStage(a);
  std::map<std::string, int> by_outcome;
  for (const Failure& f : r.manifest.failures) ++by_outcome[f.outcome];
  std::string outcomes;
  for (const auto& [k, n] : by_outcome) outcomes += " " + k + "=" + std::to_string(n);
  std::printf("fixit mine: %zu failures%s -> %s\n", r.manifest.failures.size(), outcomes.c_str(),
              ManifestPath(a.dir).c_str());
  for (const auto& [why, n] : r.excluded) std::printf("  passed over: %s: %d\n", why.c_str(), n);
  for (const std::string& p : r.problems) std::fprintf(stderr, "fixit mine: %s\n", p.c_str());
  return 0;
}

// --- repair ---

// The work folder, the teacher and its models file of a stage that asks a teacher (repair,
// reason).
void AddTeacherStageOptions(CLI::App* cmd, std::string* dir, std::string* teacher,
                            const std::string& teacher_help, std::string* models_file) {
  cmd->add_option("--dir", *dir, "The fixit work folder")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--teacher", *teacher, teacher_help + " (a model of --models)")->required();
  AddModelsFileOption(cmd, models_file);
}

CLI::App* DeclareRepair(CLI::App* fixit, RepairStageOptions* repair) {
  CLI::App* r = fixit->add_subcommand(
      "repair", "A teacher repairs each failure; every attempt is evaluated; verified ones kept");
  AddTeacherStageOptions(r, &repair->dir, &repair->teacher, "The repair teacher", &repair->models);
  AddRangeOption(r, "--turns", &repair->turns, "Attempts per failure (R)", 1, 20);
  r->add_option("--min-speedup", repair->min_speedup,
                "Keep only repairs at least this much faster than the vendor baseline (0: any)")
      ->check(ZeroOrMore())
      ->capture_default_str();
  AddRangeOption(r, "--concurrency", &repair->concurrency, "Repairs in flight", 1, 1024);
  AddStoreOption(r, &repair->db, "Also write the repair trajectories to this results store",
                 StoreSource::kCommandLine);
  r->add_flag("--resume", repair->resume, "Continue an interrupted repair stage");
  r->add_flag("--overwrite", repair->overwrite, "Start the repair stage again from scratch")
      ->excludes("--resume");
  AddEvaluationOptions(r, &repair->evaluation, EvaluationOptionSet::kRepair);
  r->add_option("--evaluator", repair->evaluator,
                "Send the evaluations to `ptxbench serve` at this URL (http://host:port)")
      ->check(ServiceUrl());
  AddTasksDirOption(r, &repair->tasks_dir);
  r->add_flag("--quiet", repair->quiet, "No progress lines");
  return r;
}

int Repair(const RepairStageOptions& a) {
  RepairStageResult r = RunRepairStage(a, [&a](const std::string& arch) {
    return MakeEvaluator({arch, a.evaluation, kRepairEvaluationKeys, /*service_url=*/a.evaluator});
  });
  std::printf("fixit repair: %zu failures, %d repairs kept (correct and verified at run time)",
              r.failures, r.repairs["kept"].get<int>());
  for (const auto& [why, n] : r.repairs["not_kept"].items())
    std::printf("; %d %s", n.get<int>(), why.c_str());
  std::printf("; %d trajectories interrupted -> %s\n", r.interrupted, RepairsPath(a.dir).c_str());
  return r.interrupted ? 3 : 0;
}

// --- reason ---

CLI::App* DeclareReason(CLI::App* fixit, ReasonStageOptions* reason) {
  CLI::App* z = fixit->add_subcommand(
      "reason", "A reasoning teacher writes the path from each failure to its verified repair");
  AddTeacherStageOptions(z, &reason->dir, &reason->teacher, "The reasoning teacher",
                         &reason->models);
  AddRangeOption(z, "--attempts", &reason->attempts, "Tries per repair when rejected", 1, 10);
  AddRangeOption(z, "--concurrency", &reason->concurrency, "Requests in flight", 1, 1024);
  AddRangeOption(z, "--min-chars", &reason->limits.min_chars, "Shortest accepted reasoning",
                 size_t{0}, size_t{1} << 20);
  AddRangeOption(z, "--max-chars", &reason->limits.max_chars, "Longest accepted reasoning",
                 size_t{1}, size_t{1} << 20);
  return z;
}

int Reason(const ReasonStageOptions& a) {
  ReasonStageResult r = RunReasonStage(a);
  std::printf(
      "fixit reason: %d accepted, %d rejected after %d attempts, %d lost to the endpoint, %d "
      "accepted earlier -> %s\n",
      r.accepted, r.rejected, a.attempts, r.lost, r.reused, ReasoningPath(a.dir).c_str());
  return r.lost ? 3 : 0;
}

// --- export ---

CLI::App* DeclareExport(CLI::App* fixit, FixitExportOptions* exp) {
  CLI::App* e = fixit->add_subcommand("export", "SFT rows (chat JSONL), split, dataset card");
  e->add_option("--dir", exp->dir, "The fixit work folder")
      ->required()
      ->check(CLI::ExistingDirectory);
  e->add_option("--out", exp->sft.out_dir, "Where to write (default DIR/export)");
  AddSftExportOptions(e, &exp->sft);
  return e;
}

int Export(const FixitExportOptions& a) {
  std::string out_dir;
  ExportSummary s = RunFixitExportStage(a, &out_dir);
  std::printf("fixit export: %d train, %d validation rows -> %s", s.train, s.validation,
              out_dir.c_str());
  for (const auto& [why, n] : s.dropped) std::printf("; dropped %d: %s", n, why.c_str());
  std::printf("\n");
  return 0;
}

}  // namespace

CommandRunner AddFixitCommand(CLI::App& app) {
  CLI::App* fixit = app.add_subcommand(
      "fixit",
      "A model's failures into verified repair-conditioned SFT data (mine, repair, "
      "reason, export)");
  fixit->require_subcommand(1);
  auto mine = std::make_shared<MineStageOptions>();
  auto repair = std::make_shared<RepairStageOptions>();
  auto reason = std::make_shared<ReasonStageOptions>();
  auto exp = std::make_shared<FixitExportOptions>();
  CLI::App* m = DeclareMine(fixit, mine.get());
  CLI::App* r = DeclareRepair(fixit, repair.get());
  CLI::App* z = DeclareReason(fixit, reason.get());
  CLI::App* e = DeclareExport(fixit, exp.get());
  return [=]() {
    if (m->parsed()) return Mine(*mine);
    if (r->parsed()) return Repair(*repair);
    if (z->parsed()) return Reason(*reason);
    if (e->parsed()) return Export(*exp);
    return 2;
  };
}

}  // namespace ptxbench
