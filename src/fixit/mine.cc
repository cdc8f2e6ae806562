#include "fixit/mine.h"

#include <algorithm>
#include <set>

#include "agent/trajectory.h"
#include "common/bounded_json.h"
#include "common/error.h"
#include "common/files.h"
#include "common/json_fields.h"
#include "common/sha256.h"
#include "common/strings.h"

namespace ptxbench {

using nlohmann::json;

namespace {

bool In(const std::vector<std::string>& accepted, const std::string& v) {
  return accepted.empty() || std::find(accepted.begin(), accepted.end(), v) != accepted.end();
}

// The conversation a failed turn is shown in, read from its run folder: the trajectory's
// system and task messages (as its model saw them), the kernel that was evaluated, and the
// feedback the model read after it. Throws InputError when a file is missing or does not fit.
std::vector<ChatMessage> FailureContext(const TrajectoryRow& t, const TurnRow& u) {
  if (t.run_dir.empty()) throw InputError("the run's folder is not known");
  std::string file = t.run_dir + "/trajectories/" + t.id + ".json";
  Trajectory tr = TrajectoryFromJson(ParseBoundedJson(ReadFile(file), file));
  size_t feedback = tr.preamble + 2 * static_cast<size_t>(u.turn - 1) + 1;
  if (feedback >= tr.messages.size())
    throw InputError(file + " has no feedback message for turn " + std::to_string(u.turn));
  if (u.kernel_file.empty()) throw InputError("turn " + std::to_string(u.turn) + " has no kernel");
  std::string kernel = ReadFile(t.run_dir + "/" + u.kernel_file);
  return {
      tr.messages[0], tr.messages[1], {"assistant", FencedKernel(kernel)}, tr.messages[feedback]};
}

}  // namespace

const std::vector<std::string>& RepairableOutcomes() {
  static const std::vector<std::string> k = {"compile", "runtime", "memory", "incorrect"};
  return k;
}

json ToJson(const MineOptions& o) {
  json j;
  PTXBENCH_JSON_SET_FIELDS(j, o, models, tasks, packs, archs, min_turn, max_turn, cap_per_task);
  j["outcomes"] = o.outcomes.empty() ? RepairableOutcomes() : o.outcomes;
  return j;
}

MineResult MineFailures(const Dataset& dataset, const MineOptions& o) {
  for (const std::string& out : o.outcomes)
    if (!In(RepairableOutcomes(), out))
      throw UsageError("--outcome " + out + " cannot be mined (only " + Join(RepairableOutcomes()) +
                       ": the model's own kernel failures)");
  if (o.min_turn < 1 || (o.max_turn && o.max_turn < o.min_turn))
    throw UsageError("bad turn range " + std::to_string(o.min_turn) + ".." +
                     std::to_string(o.max_turn));
  if (o.cap_per_task < 0) throw UsageError("--cap-per-task must not be negative");
  const std::vector<std::string>& outcomes = o.outcomes.empty() ? RepairableOutcomes() : o.outcomes;

  MineResult r;
  std::set<std::string> seen;  // task, workload, arch, normalized kernel
  std::map<std::string, std::vector<Failure>> by_task;
  for (const TrajectoryRow& t : dataset.trajectories) {
    bool selected =
        In(o.models, t.model) && In(o.tasks, t.task) && In(o.packs, t.pack) && In(o.archs, t.arch);
    for (const TurnRow& u : t.turns) {
      if (!selected) {
        ++r.excluded["filter (model, task, pack, arch)"];
        continue;
      }
      if (!In(outcomes, u.outcome)) {
        ++r.excluded["outcome " + (u.outcome.empty() ? "?" : u.outcome)];
        continue;
      }
      if (u.turn < o.min_turn || (o.max_turn && u.turn > o.max_turn)) {
        ++r.excluded["turn outside the range"];
        continue;
      }
      std::string id =
          t.run_id + "/" +
          (u.evaluation_id.empty() ? t.id + "/turn" + std::to_string(u.turn) : u.evaluation_id);
      Failure f;
      try {
        f.context = FailureContext(t, u);
      } catch (const Error& e) {
        r.problems.push_back(id + ": " + e.what());
        ++r.excluded["files unreadable"];
        continue;
      }
      std::string kernel = ReadFile(t.run_dir + "/" + u.kernel_file);
      f.kernel_sha256 = Sha256Hex(NormalizeSource(kernel));
      if (!seen.insert(t.task + "\n" + t.workload + "\n" + t.arch + "\n" + f.kernel_sha256)
               .second) {
        ++r.excluded["duplicate kernel (normalized source)"];
        continue;
      }
      f.id = id;
      f.key = "fix-" + Sha256Hex(id).substr(0, 12);
      f.run_id = t.run_id;
      f.run_dir = t.run_dir;
      f.trajectory_id = t.id;
      f.model = t.model;
      f.task = t.task;
      f.workload = t.workload;
      f.arch = t.arch;
      f.pack = t.pack;
      f.turn = u.turn;
      f.outcome = u.outcome;
      f.status = u.status;
      f.reason = u.reason;
      f.context_sha256 = ContextSha256(f.context);
      by_task[t.task].push_back(std::move(f));
    }
  }
  // The cap: strata (outcome, turn) in order, each shuffled deterministically by the id's
  // hash, then taken one from each stratum in turn until the cap.
  for (auto& [task, list] : by_task) {
    if (o.cap_per_task == 0 || static_cast<int>(list.size()) <= o.cap_per_task) {
      for (Failure& f : list) r.failures.push_back(std::move(f));
      continue;
    }
    std::map<std::pair<std::string, int>, std::vector<Failure*>> strata;
    for (Failure& f : list) strata[{f.outcome, f.turn}].push_back(&f);
    for (auto& [k, v] : strata)
      std::sort(v.begin(), v.end(), [](const Failure* a, const Failure* b) {
        return Sha256Hex(a->id) < Sha256Hex(b->id);
      });
    std::vector<Failure*> taken;
    for (size_t round = 0; static_cast<int>(taken.size()) < o.cap_per_task; ++round) {
      bool any = false;
      for (auto& [k, v] : strata)
        if (round < v.size() && static_cast<int>(taken.size()) < o.cap_per_task) {
          taken.push_back(v[round]);
          any = true;
        }
      if (!any) break;
    }
    r.excluded["cap per task"] += static_cast<int>(list.size() - taken.size());
    std::set<const Failure*> keep(taken.begin(), taken.end());
    for (Failure& f : list)  // in the dataset's order
      if (keep.count(&f)) r.failures.push_back(std::move(f));
  }
  return r;
}

}  // namespace ptxbench
