#include "fixit/repair_stage.h"

#include <memory>

#include <optional>
#include <set>

#include "agent/prompt.h"
#include "agent/run_identity.h"
#include "common/error.h"
#include "common/files.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "compile/nvcc.h"
#include "fixit/failure.h"
#include "fixit/keep.h"
#include "fixit/repairs.h"
#include "fixit/teacher.h"
#include "fixit/work_folder.h"
#include "store/store_follower.h"
#include "task/definition.h"

namespace ptxbench {

const std::vector<std::string> kRepairEvaluationKeys = {"sanitize", "timeout", "timing",
                                                        "timing_budget"};

namespace {

using nlohmann::json;

std::optional<double> MinSpeedup(const RepairStageOptions& a) {
  return a.min_speedup > 0 ? std::optional<double>(a.min_speedup) : std::nullopt;
}

// The one arch of the manifest's failures (a repair is judged for one arch's tag).
std::string ArchOf(const Manifest& m) {
  std::set<std::string> archs;
  for (const Failure& f : m.failures) archs.insert(f.arch);
  if (archs.size() > 1)
    throw UsageError("the manifest mixes architectures (" +
                     Join(std::vector<std::string>(archs.begin(), archs.end())) +
                     "): mine one at a time (--arch)");
  return archs.empty() ? "sm_90a" : *archs.begin();
}

// What the repair run's run.json records: the teacher, the settings, and which manifest it
// repairs (a --resume with another manifest is refused by the run folder's identity).
json RepairRunInfo(const RepairStageOptions& a, const Manifest& m, const std::string& arch,
                   const json& teacher, const std::set<std::string>& tasks) {
  std::set<std::string> packs;
  for (const Failure& f : m.failures) packs.insert(f.pack);
  return {{"model", teacher},
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
}

// One trajectory per failure, seeded with its conversation, stopped at the first attempt that
// would be kept.
AgentOptions RepairAgentOptions(const RepairStageOptions& a, const Manifest& m,
                                const std::string& arch, const json& teacher,
                                const Catalog& catalog) {
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
  o.run_dir = RepairRunDir(a.dir);
  o.resume = a.resume;
  o.progress = !a.quiet;
  std::optional<double> min_speedup = MinSpeedup(a);
  o.stop_when = [arch, min_speedup](const EvaluationRecord& record) {
    return JudgeRepair(record, arch, min_speedup).kept;
  };
  o.run_info = RepairRunInfo(a, m, arch, teacher, tasks);
  return o;
}

// repairs.json: the verdicts, with the teacher and the settings they were reached under.
json RepairsFile(const RepairStageOptions& a, const Manifest& m, const std::string& arch,
                 const json& teacher) {
  std::string run = RepairRunDir(a.dir);
  CollectedRepairs c = CollectRepairs(run, m, arch, MinSpeedup(a));
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
          {"kept", c.kept},
          {"not_kept", c.not_kept},
          {"repairs", c.repairs}};
}

}  // namespace

RepairStageResult RunRepairStage(const RepairStageOptions& a,
                                 const RepairEvaluatorFactory& make_evaluator) {
  Manifest m = ReadManifest(ManifestPath(a.dir));
  // --resume continues it (finished repairs are kept, and it must be the same repair: the
  // same teacher, manifest and settings); --overwrite starts it again.
  PrepareRunFolder(RepairRunDir(a.dir), a.resume, a.overwrite);
  std::string arch = ArchOf(m);
  RequireSupportedArch(arch);
  RequiredArchTag(arch);
  Teacher teacher = LoadTeacher(a.models, a.teacher);
  Catalog catalog = Catalog::Load(a.tasks_dir.empty() ? Catalog::DefaultDir() : a.tasks_dir);
  if (a.evaluator.empty()) FindNvcc("");  // a remote evaluator needs no compiler here

  AgentOptions o = RepairAgentOptions(a, m, arch, teacher.info, catalog);
  std::unique_ptr<StoreFollower> store;
  if (!a.db.empty()) {
    store = std::make_unique<StoreFollower>(a.db, o.run_dir, "fixit", a.resume, /*quiet=*/false);
    o.on_save = store->OnSave();
  }
  Evaluator evaluate = make_evaluator(arch);
  RunSummary s = RunAgent(o, *teacher.provider, evaluate);
  if (store) store->Converge();

  RepairStageResult out;
  out.failures = m.failures.size();
  out.repairs = RepairsFile(a, m, arch, teacher.info);
  out.interrupted = s.interrupted;
  WriteFileAtomic(RepairsPath(a.dir), out.repairs.dump(1) + "\n");
  return out;
}

}  // namespace ptxbench
