// `ptxbench fixit mine|repair|reason|export`: a model's own failures turned into verified,
// repair-conditioned SFT data (README, "Fixit"). Each stage reads and writes files in one work
// folder (--dir), so that every stage can be run again, resumed, and audited:
//   manifest.json      mine: the failures, each with the exact conversation it is shown in
//   repair/            repair: a run folder (agent/loop.h) of teacher trajectories seeded with
//                      the failures; with --db also an ordinary run in the results store
//   repairs.json       repair: per failure, every attempt's verdict and the repair kept
//   reasoning.jsonl    reason: per kept repair, the reasoning accepted (or why none was)
//   export/            export: train.jsonl, validation.jsonl, card.json, card.md
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "agent/prompt.h"
#include "agent/run_identity.h"
#include "agent/trajectory.h"
#include "cli/commands.h"
#include "cli/fixit_support.h"
#include "cli/option_checks.h"
#include "cli/shared_options.h"
#include "common/error.h"
#include "common/files.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "compile/nvcc.h"
#include "fixit/failure.h"
#include "fixit/keep.h"
#include "fixit/mine.h"
#include "fixit/reasoning.h"
#include "fixit/sft.h"
#include "record/record.h"
#include "task/definition.h"

namespace ptxbench {
namespace {

using nlohmann::json;

std::string ManifestPath(const std::string& dir) { return dir + "/manifest.json"; }
std::string RepairRunDir(const std::string& dir) { return dir + "/repair"; }
std::string RepairsPath(const std::string& dir) { return dir + "/repairs.json"; }
std::string ReasoningPath(const std::string& dir) { return dir + "/reasoning.jsonl"; }

std::optional<double> Opt(double v) { return v > 0 ? std::optional<double>(v) : std::nullopt; }

// --- mine ---

struct MineArgs {
  std::string db, dir;
  std::vector<std::string> runs;
  MineOptions o;
  bool overwrite = false;
};

// A work folder's stages build on the manifest: a new manifest under an old repair stage would
// pair repairs with failures they were not made for. So mining over a manifest is refused,
// and with --overwrite everything the later stages wrote goes with the old manifest.
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
       {RepairRunDir(dir), RepairsPath(dir), ReasoningPath(dir), dir + "/export"})
    fs::remove_all(later, ec);
  if (ec) throw EnvironmentError("cannot clear " + dir + ": " + ec.message());
}

int Mine(const MineArgs& a) {
  // Before --overwrite clears anything (each value alone is checked at parse time).
  if (a.o.max_turn && a.o.max_turn < a.o.min_turn)
    throw UsageError("--max-turn " + std::to_string(a.o.max_turn) + " is before --min-turn " +
                     std::to_string(a.o.min_turn));
  PrepareWorkFolder(a.dir, a.overwrite);
  std::vector<std::string> problems;
  Dataset d = LoadDatasetFor(a.db, a.runs, a.o.models, a.o.tasks, a.o.packs, a.o.archs, &problems);
  MineResult r = MineFailures(d, a.o);
  for (const std::string& p : problems) r.problems.push_back(p);
  Manifest m;
  m.settings = ToJson(a.o);
  m.settings["source"] = a.db.empty() ? json{{"runs", a.runs}} : json{{"db", a.db}};
  m.settings["mined_at"] = NowUtcIso8601();
  m.settings["excluded"] = r.excluded;
  m.settings["problems"] = r.problems;
  m.failures = std::move(r.failures);
  MakeDirs(a.dir);
  WriteFileAtomic(ManifestPath(a.dir), ToJson(m).dump(1) + "\n");
  std::map<std::string, int> by_outcome;
  for (const Failure& f : m.failures) ++by_outcome[f.outcome];
  std::string outcomes;
  for (const auto& [k, n] : by_outcome) outcomes += " " + k + "=" + std::to_string(n);
  std::printf("fixit mine: %zu failures%s -> %s\n", m.failures.size(), outcomes.c_str(),
              ManifestPath(a.dir).c_str());
  for (const auto& [why, n] : r.excluded) std::printf("  passed over: %s: %d\n", why.c_str(), n);
  for (const std::string& p : r.problems) std::fprintf(stderr, "fixit mine: %s\n", p.c_str());
  return 0;
}

// --- repair ---

struct RepairArgs {
  std::string dir, teacher, models, db, tasks_dir, evaluator;
  int turns = 3, concurrency = 4;
  double min_speedup = 0;
  EvaluationOptions evaluation;  // --sanitize, --timeout, --timing-budget; always timed
  bool resume = false, overwrite = false, quiet = false;
};

// The evaluation options a repair stage sends to an evaluation service.
const std::vector<std::string> kRepairEvaluationKeys = {"sanitize", "timeout", "timing",
                                                        "timing_budget"};

std::string ArchOf(const Manifest& m) {
  std::set<std::string> archs;
  for (const Failure& f : m.failures) archs.insert(f.arch);
  if (archs.size() > 1)
    throw UsageError("the manifest mixes architectures (" +
                     Join(std::vector<std::string>(archs.begin(), archs.end())) +
                     "): mine one at a time (--arch)");
  return archs.empty() ? "sm_90a" : *archs.begin();
}

// Every attempt of every failure's repair trajectory, judged from its record alone; the first
// kept attempt is the repair.
json CollectRepairs(const RepairArgs& a, const Manifest& m, const std::string& arch,
                    const json& teacher) {
  std::string run = RepairRunDir(a.dir);
  json repairs = json::array();
  std::map<std::string, int> reasons;
  int kept = 0;
  for (const Failure& f : m.failures) {
    std::string tid = f.key + "-0";
    json entry = {{"failure_id", f.id},
                  {"key", f.key},
                  {"task", f.task},
                  {"trajectory_id", tid},
                  {"kept", false}};
    std::string file = run + "/trajectories/" + tid + ".json";
    if (!FileExists(file)) {
      entry["reason"] = "not attempted";
      ++reasons["not attempted"];
      repairs.push_back(entry);
      continue;
    }
    Trajectory t = TrajectoryFromJson(json::parse(ReadFile(file)));
    entry["exit_status"] = t.exit_status;
    json attempts = json::array();
    std::string last_reason = t.turns.empty() ? "no attempt" : "";
    for (const TurnRecord& turn : t.turns) {
      json at = {{"turn", turn.turn}, {"outcome", turn.outcome}, {"status", turn.status}};
      bool has_record =
          !turn.evaluation_file.empty() && FileExists(run + "/" + turn.evaluation_file);
      json record = has_record ? json::parse(ReadFile(run + "/" + turn.evaluation_file)) : json();
      if (has_record) at["layers"] = LayerStates(record);
      if (!has_record || !turn.spent) {
        // A turn the harness could not judge (no GPU, a tool missing) or the endpoint lost is
        // no verdict on the repair: `--resume` tries it again.
        at["verdict"] = !turn.spent ? "not judged (" + turn.outcome + ": " +
                                          (turn.error.empty() ? "?" : turn.error) + ")"
                                    : std::string("no kernel");
        last_reason = !turn.spent ? "not judged (" + turn.outcome + ")" : "no kernel";
        attempts.push_back(at);
        continue;
      }
      RepairJudgement j = JudgeRepair(record, arch, Opt(a.min_speedup));
      at["verdict"] = j.reason;
      if (j.speedup) at["speedup"] = *j.speedup;
      attempts.push_back(at);
      last_reason = j.reason;
      if (j.kept && !entry["kept"].get<bool>()) {
        entry["kept"] = true;
        entry["turn"] = turn.turn;
        entry["repair_evaluation_id"] =
            std::filesystem::path(run).filename().string() + "/" + turn.evaluation_id;
        entry["kernel_file"] = turn.kernel_file;
        entry["evaluation_file"] = turn.evaluation_file;
        entry["status"] = j.status;
        entry["verification"] = j.verification;
        entry["arch_tag"] = j.arch_tag;
        entry["speedup"] = j.speedup ? json(*j.speedup) : json();
        entry["tflops"] = j.tflops ? json(*j.tflops) : json();
        entry["layers"] = LayerStates(record);
      }
    }
    entry["attempts"] = attempts;
    if (entry["kept"].get<bool>()) {
      ++kept;
      entry["reason"] = "kept";
    } else {
      entry["reason"] = last_reason;
      ++reasons[last_reason];
    }
    repairs.push_back(entry);
  }
  return {{"schema", "ptxbench.fixit.repairs/1"},
          {"teacher", teacher},
          {"arch", arch},
          {"settings",
           {{"turns", a.turns},
            {"min_speedup", a.min_speedup > 0 ? json(a.min_speedup) : json()},
            {"sanitize", ToString(a.evaluation.sanitize)},
            {"keep_rule", "PASSED, instructions.verification == dynamic_present with the arch tag" +
                              std::string(a.min_speedup > 0 ? ", speedup >= min_speedup" : "")}}},
          {"run_dir", run},
          {"kept", kept},
          {"not_kept", reasons},
          {"repairs", repairs}};
}

int Repair(RepairArgs a) {
  Manifest m = ReadManifest(ManifestPath(a.dir));
  std::string run = RepairRunDir(a.dir);
  // --resume continues it (finished repairs are kept, and it must be the same repair: the
  // same teacher, manifest and settings); --overwrite starts it again.
  PrepareRunFolder(run, a.resume, a.overwrite);
  std::string arch = ArchOf(m);
  RequireSupportedArch(arch);
  RequiredArchTag(arch);
  Teacher teacher = LoadTeacher(a.models, a.teacher);
  Catalog catalog = Catalog::Load(a.tasks_dir.empty() ? Catalog::DefaultDir() : a.tasks_dir);
  if (a.evaluator.empty()) FindNvcc("");  // a remote evaluator needs no compiler here

  AgentOptions o;
  std::set<std::string> tasks;
  for (const Failure& f : m.failures) {
    const Definition& d = catalog.Find(f.task);
    o.tasks.push_back({&d, &d.FindWorkload(f.workload), f.key, f.context});
    tasks.insert(f.task);
  }
  o.trajectories = 1;
  o.turns = a.turns;
  o.arch = arch;
  o.prompts_dir = DefaultPromptsDir();
  o.concurrency = a.concurrency;
  // The service queues per GPU (see `run --evaluator`); the local GPU takes one at a time.
  if (!a.evaluator.empty()) o.parallel_evaluations = a.concurrency;
  o.run_dir = run;
  o.resume = a.resume;
  o.progress = !a.quiet;
  std::optional<double> min_speedup = Opt(a.min_speedup);
  o.stop_when = [arch, min_speedup](const json& record) {
    return JudgeRepair(record, arch, min_speedup).kept;
  };
  std::set<std::string> packs;
  for (const Failure& f : m.failures) packs.insert(f.pack);
  o.run_info = {{"model", teacher.info},
                {"tasks", std::vector<std::string>(tasks.begin(), tasks.end())},
                {"trajectories", 1},
                {"turns", a.turns},
                {"arch", arch},
                {"pack", packs.size() == 1 ? *packs.begin() : std::string("mixed")},
                {"sanitize", ToString(a.evaluation.sanitize)},
                {"timing", true},
                {"evaluator", a.evaluator.empty() ? json("local") : json(a.evaluator)},
                {"fixit",
                 {{"stage", "repair"},
                  {"manifest_sha256", Sha256FileHex(ManifestPath(a.dir))},
                  {"failures", m.failures.size()},
                  {"min_speedup", a.min_speedup > 0 ? json(a.min_speedup) : json()}}},
                {"ptxbench_version", PTXBENCH_VERSION}};
  if (!a.db.empty()) o.on_save = StoreFollower(a.db, run);
  Evaluator evaluate =
      MakeEvaluator({arch, a.evaluation, kRepairEvaluationKeys, /*service_url=*/a.evaluator});
  RunSummary s = RunAgent(o, *teacher.provider, evaluate);

  json repairs = CollectRepairs(a, m, arch, teacher.info);
  WriteFileAtomic(RepairsPath(a.dir), repairs.dump(1) + "\n");
  std::printf("fixit repair: %zu failures, %d repairs kept (correct and verified at run time)",
              m.failures.size(), repairs["kept"].get<int>());
  for (const auto& [why, n] : repairs["not_kept"].items())
    std::printf("; %d %s", n.get<int>(), why.c_str());
  std::printf("; %d trajectories interrupted -> %s\n", s.interrupted, RepairsPath(a.dir).c_str());
  return s.interrupted ? 3 : 0;
}

// --- reason ---

struct ReasonArgs {
  std::string dir, teacher, models;
  int attempts = 3, concurrency = 4;
  ReasoningLimits limits;
};

// The newest line per failure id of reasoning.jsonl; a torn last line (a kill mid-write) is
// skipped and said.
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

std::string FixSummary(const json& r) {
  std::string s = r.value("status", "") + "; instructions " + r.value("verification", "") + " (" +
                  r.value("arch_tag", "") + ")";
  if (r["speedup"].is_number())
    s += "; " + FormatNumber("%.2f", r["speedup"].get<double>()) + "x the vendor baseline";
  if (r["tflops"].is_number())
    s += ", " + FormatNumber("%.0f", r["tflops"].get<double>()) + " TFLOP/s";
  return s;
}

int Reason(const ReasonArgs& a) {
  if (a.limits.min_chars > a.limits.max_chars)
    throw UsageError("--min-chars " + std::to_string(a.limits.min_chars) + " exceeds --max-chars " +
                     std::to_string(a.limits.max_chars));
  Manifest m = ReadManifest(ManifestPath(a.dir));
  if (!FileExists(RepairsPath(a.dir)))
    throw UsageError(RepairsPath(a.dir) + " is missing: run `ptxbench fixit repair` first");
  json repairs = json::parse(ReadFile(RepairsPath(a.dir)));
  Teacher teacher = LoadTeacher(a.models, a.teacher);
  std::map<std::string, const Failure*> failures;
  for (const Failure& f : m.failures) failures[f.id] = &f;
  std::map<std::string, json> done = ReadReasoning(ReasoningPath(a.dir));

  struct Job {
    const Failure* failure;
    json repair;
  };
  std::vector<Job> jobs;
  int reused = 0;
  for (const json& r : repairs["repairs"]) {
    if (!r.value("kept", false)) continue;
    auto it = failures.find(r["failure_id"]);
    if (it == failures.end())
      throw InputError("repairs.json names failure " + r["failure_id"].get<std::string>() +
                       ", which the manifest does not have");
    auto d = done.find(it->first);
    if (d != done.end() && d->second.value("accepted", false) &&
        d->second.value("repair_evaluation_id", "") == r.value("repair_evaluation_id", "") &&
        d->second.value("context_sha256", "") == it->second->context_sha256) {
      ++reused;
      continue;
    }
    jobs.push_back({it->second, r});
  }

  std::mutex mu;
  std::ofstream out(ReasoningPath(a.dir), std::ios::app);
  if (!out) throw InputError("cannot write " + ReasoningPath(a.dir));
  std::atomic<size_t> next{0};
  std::atomic<int> accepted{0}, rejected{0}, infra{0};
  std::string prompts = DefaultPromptsDir();
  auto work = [&] {
    for (size_t i; (i = next++) < jobs.size();) {
      const Failure& f = *jobs[i].failure;
      const json& r = jobs[i].repair;
      std::string kernel =
          ReadFile(RepairRunDir(a.dir) + "/" + r["kernel_file"].get<std::string>());
      std::vector<ChatMessage> req = ReasoningRequest(prompts, f, kernel, FixSummary(r), a.limits);
      json entry = {{"failure_id", f.id},
                    {"key", f.key},
                    {"repair_evaluation_id", r["repair_evaluation_id"]},
                    {"teacher", teacher.info.value("name", "")},
                    {"context_sha256", f.context_sha256},
                    {"accepted", false}};
      json rejections = json::array();
      bool lost = false;
      for (int k = 0; k < a.attempts; ++k) {
        ChatReply reply = teacher.provider->Complete(req);
        if (reply.outcome == ChatOutcome::kInfraError) {
          lost = true;  // not the teacher's: not written, the next run retries it
          std::fprintf(stderr, "fixit reason: %s: the endpoint failed (%s); run again to retry\n",
                       f.id.c_str(), reply.error.c_str());
          break;
        }
        ReasoningCheck c = reply.outcome == ChatOutcome::kModelError
                               ? ReasoningCheck{false, "the endpoint refused: " + reply.error}
                               : ValidateReasoning(reply.text, kernel, a.limits);
        entry["attempts"] = k + 1;
        if (c.ok) {
          entry["accepted"] = true;
          entry["text"] = Trim(reply.text);
          break;
        }
        rejections.push_back(c.why);
        req.push_back({"assistant", reply.text});
        req.push_back({"user", "That reasoning was rejected: " + c.why +
                                   ". Write it again, following the rules."});
      }
      if (lost) {
        ++infra;
        continue;
      }
      entry["rejections"] = rejections;
      entry["written_at"] = NowUtcIso8601();
      (entry["accepted"].get<bool>() ? accepted : rejected)++;
      std::lock_guard<std::mutex> lock(mu);
      out << entry.dump() << "\n";
      out.flush();
    }
  };
  std::vector<std::thread> pool;
  int n = std::max(1, std::min<int>(a.concurrency, static_cast<int>(jobs.size())));
  for (int i = 0; i < n; ++i) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  std::printf(
      "fixit reason: %d accepted, %d rejected after %d attempts, %d lost to the endpoint, %d "
      "accepted earlier -> %s\n",
      accepted.load(), rejected.load(), a.attempts, infra.load(), reused,
      ReasoningPath(a.dir).c_str());
  return infra ? 3 : 0;
}

// --- export ---

struct ExportArgs {
  std::string dir;
  ExportOptions e;
};

int Export(ExportArgs a) {
  Manifest m = ReadManifest(ManifestPath(a.dir));
  if (!FileExists(RepairsPath(a.dir)))
    throw UsageError(RepairsPath(a.dir) + " is missing: run `ptxbench fixit repair` first");
  json repairs = json::parse(ReadFile(RepairsPath(a.dir)));
  std::map<std::string, json> reasoning = ReadReasoning(ReasoningPath(a.dir));
  std::map<std::string, json> repair_of;
  for (const json& r : repairs["repairs"]) repair_of[r["failure_id"]] = r;
  std::string teacher = repairs["teacher"].value("name", "");
  json dropped = json::object();
  auto drop = [&](const std::string& why) { dropped[why] = dropped.value(why, 0) + 1; };
  std::vector<SftRow> rows;
  std::set<std::string> reasoning_teachers, source_runs;
  for (const Failure& f : m.failures) {
    auto r = repair_of.find(f.id);
    if (r == repair_of.end() || !r->second.value("kept", false)) {
      drop("no verified repair");
      continue;
    }
    auto z = reasoning.find(f.id);
    if (z == reasoning.end() || !z->second.value("accepted", false)) {
      drop("no accepted reasoning");
      continue;
    }
    if (z->second.value("context_sha256", "") != f.context_sha256 ||
        z->second.value("repair_evaluation_id", "") !=
            r->second.value("repair_evaluation_id", "")) {
      drop("reasoning written for another context or repair");
      continue;
    }
    std::string kernel =
        ReadFile(RepairRunDir(a.dir) + "/" + r->second["kernel_file"].get<std::string>());
    SftRow row;
    row.id = f.id + " -> " + r->second["repair_evaluation_id"].get<std::string>();
    row.task = f.task;
    for (const ChatMessage& c : f.context) row.messages.push_back({c.role, c.content, false});
    row.messages.push_back(
        {"assistant", ThinkThenKernel(z->second["text"].get<std::string>(), kernel), true});
    std::string rt = z->second.value("teacher", "");
    reasoning_teachers.insert(rt);
    source_runs.insert(f.run_id);
    row.metadata = {{"kind", "fixit"},
                    {"failure_evaluation_id", f.id},
                    {"repair_evaluation_id", r->second["repair_evaluation_id"]},
                    {"task", f.task},
                    {"workload", f.workload},
                    {"arch", f.arch},
                    {"pack", f.pack},
                    {"student_model", f.model},
                    {"outcome", f.outcome},
                    {"status", f.status},
                    {"turn", f.turn},
                    {"teachers", {{"repair", teacher}, {"reasoning", rt}}},
                    {"repair_turn", r->second["turn"]},
                    {"speedup", r->second["speedup"]},
                    {"tflops", r->second["tflops"]},
                    {"verification", r->second["verification"]},
                    {"arch_tag", r->second["arch_tag"]},
                    {"context_sha256", f.context_sha256}};
    rows.push_back(std::move(row));
  }
  if (a.e.out_dir.empty()) a.e.out_dir = a.dir + "/export";
  json card = {
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
        {"manifest_sha256", Sha256FileHex(ManifestPath(a.dir))},
        {"repairs_sha256", Sha256FileHex(RepairsPath(a.dir))},
        {"source_runs", std::vector<std::string>(source_runs.begin(), source_runs.end())},
        {"repair_run", RepairRunDir(a.dir)},
        {"teachers",
         {{"repair", repairs["teacher"]},
          {"reasoning",
           std::vector<std::string>(reasoning_teachers.begin(), reasoning_teachers.end())}}}}}};
  ExportSummary s = WriteSftExport(std::move(rows), a.e, card);
  std::printf("fixit export: %d train, %d validation rows -> %s", s.train, s.validation,
              a.e.out_dir.c_str());
  for (const auto& [why, n] : s.dropped) std::printf("; dropped %d: %s", n, why.c_str());
  std::printf("\n");
  return 0;
}

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

}  // namespace

void AddSftExportOptions(CLI::App* cmd, ExportOptions* e) {
  cmd->add_option("--format", e->format, "messages (per-message train flag) or prompt-completion")
      ->check(CLI::IsMember({"messages", "prompt-completion"}))
      ->capture_default_str();
  AddRangeOption(cmd, "--max-tokens", &e->max_tokens,
                 "Drop rows longer than this (estimated tokens)", 1, 100000000);
  cmd->add_option("--chars-per-token", e->chars_per_token, "The token estimate's divisor")
      ->check(GreaterThanZero())
      ->capture_default_str();
  cmd->add_option("--validation-fraction", e->validation_fraction,
                  "Share of each task's rows in validation.jsonl")
      ->check(FractionBelowOne())
      ->capture_default_str();
  cmd->add_option("--split-seed", e->split_seed, "Seed of the deterministic split")
      ->capture_default_str();
}

CommandRunner AddFixitCommand(CLI::App& app) {
  CLI::App* fixit = app.add_subcommand(
      "fixit",
      "A model's failures into verified repair-conditioned SFT data (mine, repair, "
      "reason, export)");
  fixit->require_subcommand(1);

  auto mine = std::make_shared<MineArgs>();
  CLI::App* m = fixit->add_subcommand("mine", "Select failed turns of stored trajectories");
  AddStoreOption(m, &mine->db, "The results store to read", StoreSource::kExistingFile);
  m->add_option("--runs", mine->runs, "Run folders, or folders of them (instead of --db)")
      ->check(CLI::ExistingDirectory);
  m->add_option("--dir", mine->dir, "The fixit work folder (manifest.json goes there)")->required();
  m->add_option("--outcome", mine->o.outcomes,
                "compile, runtime, memory, incorrect (repeatable; default all four)")
      ->check(CLI::IsMember(RepairableOutcomes()));
  AddRunFilterOptions(m, {&mine->o.models, &mine->o.tasks, &mine->o.packs, &mine->o.archs});
  AddRangeOption(m, "--min-turn", &mine->o.min_turn, "First turn to take", 1, 100);
  AddRangeOption(m, "--max-turn", &mine->o.max_turn, "Last turn to take (0: any)", 0, 100);
  AddRangeOption(m, "--cap-per-task", &mine->o.cap_per_task,
                 "At most this many failures per task, stratified by (outcome, turn); 0: no cap", 0,
                 100000000);
  m->add_flag("--overwrite", mine->overwrite,
              "Mine again into a work folder that has a manifest (the later stages' files go)");

  auto repair = std::make_shared<RepairArgs>();
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

  auto reason = std::make_shared<ReasonArgs>();
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

  auto exp = std::make_shared<ExportArgs>();
  CLI::App* e = fixit->add_subcommand("export", "SFT rows (chat JSONL), split, dataset card");
  e->add_option("--dir", exp->dir, "The fixit work folder")
      ->required()
      ->check(CLI::ExistingDirectory);
  e->add_option("--out", exp->e.out_dir, "Where to write (default DIR/export)");
  AddSftExportOptions(e, &exp->e);

  return [=]() {
    if (m->parsed()) return Mine(*mine);
    if (r->parsed()) return Repair(*repair);
    if (z->parsed()) return Reason(*reason);
    if (e->parsed()) return Export(*exp);
    return 2;
  };
}

}  // namespace ptxbench
