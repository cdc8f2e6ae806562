#include "agent/loop.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "agent/extract.h"
#include "agent/feedback.h"
#include "agent/prompt.h"
#include "agent/run_identity.h"
#include "agent/run_progress.h"
#include "common/bounded_json.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/files.h"
#include "common/sha256.h"
#include "record/record.h"

namespace ptxbench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Evaluations wait here for one of `slots` places: one per local GPU, so that timed
// evaluations never share it; more for a remote evaluator, whose service queues per GPU.
class EvaluationSlots {
 public:
  explicit EvaluationSlots(int slots) : free_(std::max(1, slots)) {}
  EvaluationRecord Evaluate(const Evaluator& evaluate, const std::string& path,
                            const Definition& def, const Workload& wl, const EvaluationTag& tag,
                            RunProgress* progress) {
    progress->EvaluationWaiting();
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return free_ > 0; });
      --free_;
    }
    progress->EvaluationStarted();
    struct Release {
      EvaluationSlots* s;
      ~Release() {
        {
          std::lock_guard<std::mutex> lock(s->mu_);
          ++s->free_;
        }
        s->cv_.notify_one();
      }
    } release{this};
    return evaluate(path, def, wl, tag);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int free_;
};

class Runner {
 public:
  Runner(const AgentOptions& o, ChatProvider& model, const Evaluator& evaluate)
      : o_(o), model_(model), evaluate_(evaluate), slots_(o.parallel_evaluations) {}

  RunSummary Run() {
    MakeDirs(o_.run_dir + "/trajectories");
    json info = o_.run_info;
    info["schema"] = "ptxbench.run/1";
    std::string run_json = o_.run_dir + "/run.json";
    if (o_.resume && FileExists(run_json)) {
      json before = ParseBoundedJson(ReadFile(run_json), run_json);
      // Never two runs in one folder: the resumed run must be the same run.
      if (auto diff = RunIdentityDifference(before, info))
        throw UsageError("--resume: " + o_.run_dir + " is another run: " + *diff);
      info["started_at"] = before.value("started_at", NowUtcIso8601());
      json resumed = before.value("resumed_at", json::array());
      resumed.push_back(NowUtcIso8601());
      info["resumed_at"] = resumed;
    } else {
      info["started_at"] = NowUtcIso8601();
    }
    WriteFileAtomic(run_json, info.dump(2) + "\n");
    started_at_ = info.value("started_at", "");

    std::vector<std::pair<const RunTask*, int>> jobs;
    for (const RunTask& t : o_.tasks)
      for (int k = 0; k < o_.trajectories; ++k) jobs.push_back({&t, k});
    progress_.emplace(static_cast<int>(jobs.size()), o_.turns);
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t i; (i = next++) < jobs.size();) RunTrajectory(*jobs[i].first, jobs[i].second);
    };
    std::vector<std::thread> pool;
    int n = std::max(1, std::min<int>(o_.concurrency, static_cast<int>(jobs.size())));
    for (int i = 0; i < n; ++i) pool.emplace_back(worker);
    for (auto& th : pool) th.join();
    if (overhead_n_) summary_.mean_overhead_s = overhead_sum_ / overhead_n_;
    return summary_;
  }

 private:
  std::string TrajectoryPath(const std::string& id) const {
    return o_.run_dir + "/trajectories/" + id + ".json";
  }

  // The file first (the truth a resume reads), then the results store when there is one;
  // `record` is the evaluation of the turn just added, or null.
  void Save(const Trajectory& t, const json& record = json()) {
    json j = ToJson(t);
    // A stray invalid UTF-8 byte (a log quoted somewhere) becomes U+FFFD rather than a throw.
    WriteFileAtomic(TrajectoryPath(t.id),
                    j.dump(1, ' ', false, json::error_handler_t::replace) + "\n");
    if (o_.on_save) o_.on_save(j, record);
  }

  // A trajectory's line; `with_run` adds where the whole run stands (after a turn or an end).
  void Progress(const Trajectory& t, const std::string& line, bool with_run = false) {
    if (!o_.progress) return;
    std::lock_guard<std::mutex> lock(print_mu_);
    std::fprintf(stderr, "[%s] %s\n", t.id.c_str(), line.c_str());
    if (with_run) std::fprintf(stderr, "  %s\n", progress_->Line().c_str());
  }

  // Resumes from the file when there is one: finished trajectories are left alone; turns lost
  // to infrastructure (and anything after them) are dropped and run again.
  Trajectory Start(const RunTask& task, int index, int* reused) {
    Trajectory t;
    t.task = task.definition->name;
    t.workload = task.workload->id;
    t.index = index;
    t.id = (task.id.empty() ? t.task : task.id) + "-" + std::to_string(index);
    if (o_.resume && FileExists(TrajectoryPath(t.id))) {
      Trajectory old = TrajectoryFromJson(
          ParseBoundedJson(ReadFile(TrajectoryPath(t.id)), TrajectoryPath(t.id)));
      if (old.Finished()) {
        *reused = -1;
        return old;
      }
      size_t keep = 0;
      while (keep < old.turns.size() && old.turns[keep].spent) ++keep;
      for (size_t k = keep; k < old.turns.size(); ++k) {
        // Kept for the record; its evaluation file moves aside (the retried turn takes the
        // name).
        TurnRecord lost = old.turns[k];
        if (!lost.evaluation_file.empty() && FileExists(o_.run_dir + "/" + lost.evaluation_file)) {
          std::string aside = lost.evaluation_file;
          aside.insert(aside.size() - 5, ".infra" + std::to_string(old.infra_events.size() + 1));
          std::filesystem::rename(o_.run_dir + "/" + lost.evaluation_file,
                                  o_.run_dir + "/" + aside);
          lost.evaluation_file = aside;
          lost.evaluation_id += ".infra" + std::to_string(old.infra_events.size() + 1);
        }
        old.infra_events.push_back(lost);
      }
      old.turns.resize(keep);
      old.messages.resize(std::min(old.messages.size(), old.preamble + 2 * keep));
      old.exit_status = "running";
      *reused = static_cast<int>(keep);
      return old;
    }
    if (!task.seed.empty()) {
      if (task.seed.size() < 2 || task.seed.size() % 2 != 0)
        throw UsageError("a seeded trajectory starts with system, task, then reply/feedback pairs");
      std::string all;
      for (const ChatMessage& m : task.seed) all += m.role + "\n" + m.content + "\n";
      t.prompt_version = Sha256Hex(all);
      t.messages = task.seed;
      t.preamble = task.seed.size();
      *reused = 0;
      return t;
    }
    Prompts p =
        RenderPrompts(o_.prompts_dir, *task.definition, *task.workload, o_.arch, o_.pack_text);
    t.prompt_version = p.version;
    t.messages = {{"system", p.system}, {"user", p.task}};
    *reused = 0;
    return t;
  }

  // The best correct kernel among the earlier turns and `current` (the one being fed back).
  static std::optional<BestSoFar> Best(const Trajectory& t, const TurnRecord& current) {
    std::optional<BestSoFar> best;
    std::vector<const TurnRecord*> all;
    for (const auto& turn : t.turns) all.push_back(&turn);
    all.push_back(&current);
    for (const TurnRecord* p : all) {
      const TurnRecord& turn = *p;
      if (turn.outcome != "correct" && turn.outcome != "verified") continue;
      double s = turn.speedup.value_or(0);
      if (!best || s > best->speedup || (s == best->speedup && turn.verified && !best->verified))
        best = BestSoFar{turn.turn, s, turn.tflops.value_or(0), turn.verified};
    }
    return best;
  }

  bool StopRequested() const {
    return o_.stop_requested && o_.stop_requested->load(std::memory_order_relaxed);
  }

  // The model could not answer (its endpoint failed: not the model's turn, `--resume` retries
  // it) or refused: the turn is recorded and the trajectory ends.
  void EndOnModelFailure(Trajectory& t, TurnRecord& turn, const ChatReply& reply) {
    turn.error = reply.error;
    if (reply.outcome == ChatOutcome::kInfraError) {
      turn.outcome = "infra";
      turn.spent = false;
      t.turns.push_back(turn);
      t.exit_status = "infra_error";
      Save(t);
      Progress(t, "turn " + std::to_string(turn.turn) + ": model endpoint failed (" + reply.error +
                      "); --resume retries it");
      return;
    }
    turn.outcome = "model_error";
    t.turns.push_back(turn);
    t.exit_status = "model_error";
    Save(t);
    progress_->TurnDone();
    Progress(t, "turn " + std::to_string(turn.turn) + ": the model refused (" + reply.error + ")");
  }

  // The reply's kernel written into the run, evaluated (a throwing evaluator is the harness's
  // INFRA_ERROR) and judged into `turn`; returns the evaluation record.
  EvaluationRecord EvaluateKernel(const RunTask& task, const Trajectory& t, const std::string& code,
                                  const std::string& kernel_dir, const std::string& eval_dir,
                                  TurnRecord& turn) {
    turn.kernel_file = kernel_dir + "/turn" + std::to_string(turn.turn) + ".cu";
    std::string kernel_path = o_.run_dir + "/" + turn.kernel_file;
    WriteFileAtomic(kernel_path, code);
    auto te = Clock::now();
    EvaluationRecord record;
    try {
      record = slots_.Evaluate(evaluate_, kernel_path, *task.definition, *task.workload,
                               TagFor(t, turn.turn), &*progress_);
    } catch (const std::exception& e) {
      record = EvaluationRecord{};
      record.status = Status::kInfraError;
      record.message = std::string("evaluator: ") + e.what();
      record.created_at = NowUtcIso8601();
    }
    turn.evaluation_seconds = SecondsSince(te);
    turn.evaluation_file = eval_dir + "/turn" + std::to_string(turn.turn) + ".json";
    turn.evaluation_id = t.id + "/turn" + std::to_string(turn.turn);
    record.evaluation_id = turn.evaluation_id;
    WriteFileAtomic(o_.run_dir + "/" + turn.evaluation_file,
                    record.ToJson().dump(1, ' ', false, json::error_handler_t::replace) + "\n");
    JudgeTurnRecord(record, o_.arch, &turn);
    turn.summary = SummarizeTurn(turn.turn, record);
    return record;
  }

  // One turn: the model's reply, its kernel evaluated, the feedback appended. False when the
  // trajectory ends with it (the endpoint or the harness failed, the model refused, the target
  // was reached).
  bool PlayTurn(const RunTask& task, Trajectory& t, const std::string& kernel_dir,
                const std::string& eval_dir, int limit) {
    auto t0 = Clock::now();
    TurnRecord turn;
    turn.turn = t.SpentTurns() + 1;
    std::vector<ChatMessage> context = ContextFor(t, o_.context);
    auto tm = Clock::now();
    ChatReply reply = model_.CompleteFor(t.id, context);
    turn.model_seconds = SecondsSince(tm);
    turn.usage = reply.usage;
    turn.attempts = reply.attempts;
    if (reply.outcome == ChatOutcome::kInfraError || reply.outcome == ChatOutcome::kModelError) {
      EndOnModelFailure(t, turn, reply);
      return false;
    }
    if (reply.outcome == ChatOutcome::kEnded) {  // a coding agent ended: no turn
      t.exit_status = reply.finish_reason;
      Save(t);
      Progress(t, "ended without turn " + std::to_string(turn.turn) + ": " + reply.error);
      return false;
    }
    std::string feedback;
    Extraction ex;
    if (reply.kernel) {  // handed in as a file: nothing to extract
      ex.found = true;
      ex.code = *reply.kernel;
    } else {
      ex = ExtractKernel(reply.text);
    }
    std::optional<EvaluationRecord> record;
    if (!ex.found) {
      turn.outcome = "extraction";
      turn.summary = "no kernel in the reply";
      feedback = "## Turn " + std::to_string(turn.turn) + ": no kernel\n" + ex.message;
    } else {
      record = EvaluateKernel(task, t, ex.code, kernel_dir, eval_dir, turn);
      if (turn.outcome == "infra") {
        // The harness could not judge (no GPU, a tool missing): not the model's turn.
        turn.spent = false;
        t.turns.push_back(turn);
        t.exit_status = "infra_error";
        Save(t, record->ToJson());
        Progress(t, "turn " + std::to_string(turn.turn) + ": the harness could not judge (" +
                        turn.error + "); --resume retries it");
        return false;
      }
      feedback = RenderFeedback(*record, Best(t, turn));
    }
    t.messages.push_back({"assistant", reply.text});
    t.messages.push_back({"user", feedback});
    turn.overhead_seconds =
        std::max(0.0, SecondsSince(t0) - turn.model_seconds - turn.evaluation_seconds);
    t.turns.push_back(turn);
    bool reached =
        (o_.target_speedup && (turn.outcome == "correct" || turn.outcome == "verified") &&
         turn.speedup && *turn.speedup >= *o_.target_speedup) ||
        (o_.stop_when && record && o_.stop_when(*record));
    if (reached)
      t.exit_status = "target_reached";
    else if (t.SpentTurns() >= limit)
      t.exit_status = "turn_limit";
    Save(t, record ? record->ToJson() : json());
    NoteOverhead(turn.overhead_seconds);
    progress_->TurnDone();
    Progress(t,
             turn.summary.empty() ? "turn " + std::to_string(turn.turn) + ": " + turn.outcome
                                  : turn.summary,
             true);
    return !reached;
  }

  void RunTrajectory(const RunTask& task, int index) {
    if (StopRequested()) {  // never started: nothing to save, `--resume` starts it
      std::lock_guard<std::mutex> lock(sum_mu_);
      ++summary_.trajectories;
      ++summary_.interrupted;
      return;
    }
    int reused = 0;
    Trajectory t = Start(task, index, &reused);
    if (reused < 0) {
      progress_->Resumed(t.SpentTurns(), true);
      Progress(t, "finished earlier (" + t.exit_status + "), kept");
      Count(t, 0, true);
      return;
    }
    progress_->Resumed(reused, false);
    if (reused > 0) Progress(t, "resumed after " + std::to_string(reused) + " turns");
    std::string kernel_dir = "kernels/" + t.id, eval_dir = "evaluations/" + t.id;
    MakeDirs(o_.run_dir + "/" + kernel_dir);
    MakeDirs(o_.run_dir + "/" + eval_dir);
    int ran = 0;
    const int limit = task.turns > 0 ? task.turns : o_.turns;
    while (t.SpentTurns() < limit) {
      if (StopRequested()) {
        Progress(t, "stopped before turn " + std::to_string(t.SpentTurns() + 1) +
                        " (interrupted); --resume continues it");
        break;
      }
      ++ran;
      if (!PlayTurn(task, t, kernel_dir, eval_dir, limit)) break;
    }
    // Zero turns asked for, or resumed at the limit; a stopped trajectory stays "running" (as
    // one whose process was killed), which is what --resume continues.
    if (t.exit_status == "running" && t.SpentTurns() >= limit) {
      t.exit_status = "turn_limit";
      Save(t);
    }
    model_.TrajectoryEnded(t.id, t.messages, t.exit_status);  // a coding agent is stopped
    Count(t, ran, false);
    progress_->TrajectoryDone(t.SpentTurns());
    if (!t.Finished() || t.exit_status == "target_reached" || t.exit_status == "model_error")
      Progress(t, "ended: " + t.exit_status, true);
    std::lock_guard<std::mutex> lock(sum_mu_);
    summary_.turns_reused += reused;
  }

  void NoteOverhead(double s) {
    std::lock_guard<std::mutex> lock(sum_mu_);
    summary_.max_overhead_s = std::max(summary_.max_overhead_s, s);
    overhead_sum_ += s;
    ++overhead_n_;
  }

  void Count(const Trajectory& t, int ran, bool kept) {
    std::lock_guard<std::mutex> lock(sum_mu_);
    ++summary_.trajectories;
    summary_.turns_run += ran;
    if (t.Finished())
      ++summary_.finished;
    else
      ++summary_.interrupted;
    bool correct = false, verified = false;
    for (const auto& turn : t.turns) {
      correct |= turn.outcome == "correct" || turn.outcome == "verified";
      verified |= turn.outcome == "verified";
    }
    summary_.correct += correct;
    summary_.verified += verified;
    (void)kept;
  }

  EvaluationTag TagFor(const Trajectory& t, int turn) const {
    EvaluationTag tag;
    tag.run = std::filesystem::path(o_.run_dir).lexically_normal().filename().string();
    if (tag.run.empty())  // "runs/m/" ends with an empty name
      tag.run = std::filesystem::path(o_.run_dir).lexically_normal().parent_path().filename();
    tag.started_at = started_at_;
    tag.trajectory = t.id;
    tag.evaluation_id = t.id + "/turn" + std::to_string(turn);
    tag.task = t.task;
    tag.workload = t.workload;
    auto str = [](const json& j, const char* key) {
      return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
                                                                    : std::string();
    };
    const json model = o_.run_info.is_object() && o_.run_info.contains("model")
                           ? o_.run_info["model"]
                           : json::object();
    tag.model = str(model, "name");
    tag.provider = str(model, "provider");
    tag.pack = str(o_.run_info, "pack");
    tag.arch = o_.arch;
    tag.turn = turn;
    tag.index = t.index;
    return tag;
  }

  const AgentOptions& o_;
  ChatProvider& model_;
  const Evaluator& evaluate_;
  EvaluationSlots slots_;
  std::optional<RunProgress> progress_;  // made in Run(), once the trajectories are known
  std::string started_at_;
  std::mutex print_mu_, sum_mu_;
  RunSummary summary_;
  double overhead_sum_ = 0;
  int overhead_n_ = 0;
};

}  // namespace

json EvaluationTag::ToJson() const {
  return {{"run", run},
          {"started_at", started_at},
          {"trajectory", trajectory},
          {"evaluation_id", evaluation_id},
          {"task", task},
          {"workload", workload},
          {"model", model},
          {"provider", provider},
          {"arch", arch},
          {"pack", pack},
          {"turn", turn},
          {"index", index}};
}

std::vector<ChatMessage> ContextFor(const Trajectory& t, const std::string& policy) {
  if (policy == "full" || t.messages.size() <= t.preamble + 2) return t.messages;
  if (policy != "condensed") throw UsageError("unknown --context '" + policy + "'");
  // The preamble (system, task, seeded turns; the task message with a note per older turn),
  // then the last turn's reply and feedback.
  std::vector<ChatMessage> out(t.messages.begin(), t.messages.begin() + t.preamble);
  std::string notes = "\n\nYour earlier attempts (condensed):";
  size_t turns = (t.messages.size() - t.preamble) / 2;
  for (size_t k = 0; k + 1 < turns; ++k) {
    const TurnRecord* rec = k < t.turns.size() ? &t.turns[k] : nullptr;
    notes += "\n- " + (rec && !rec->summary.empty()
                           ? rec->summary
                           : "turn " + std::to_string(k + 1) + ": " + (rec ? rec->outcome : "?"));
  }
  out[1].content += notes;
  out.push_back(t.messages[t.messages.size() - 2]);
  out.push_back(t.messages.back());
  return out;
}

RunSummary RunAgent(const AgentOptions& options, ChatProvider& model, const Evaluator& evaluate) {
  if (options.run_dir.empty()) throw UsageError("a run needs an output folder");
  return Runner(options, model, evaluate).Run();
}

}  // namespace ptxbench
