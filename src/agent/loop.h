// The agent loop: for each (task, trajectory index) a model writes a kernel, the harness
// evaluates it, the model reads the feedback and tries again, until the turn limit or a
// correct kernel at the target speedup. Trajectories run concurrently against the model;
// evaluations go through one queue (one evaluation at a time on the GPU). Every turn is
// persisted as it happens, so an interrupted run resumes where it stopped.
//
// Run folder:
//   run.json                                  the run: model (no secrets), tasks, options
//   trajectories/<task>-<k>.json              one per trajectory (trajectory.h)
//   kernels/<task>-<k>/turn<N>.cu             every extracted kernel
//   evaluations/<task>-<k>/turn<N>.json       every evaluation record
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/record.h"

#include "agent/chat.h"
#include "agent/trajectory.h"
#include "task/definition.h"

namespace ptxbench {

// Which turn of which trajectory an evaluation belongs to. A local evaluator ignores it; the
// service's client sends it with the job, so that the service's database alone can rebuild
// trajectories for `ptxbench report --db postgresql://…`.
struct EvaluationTag {
  std::string run;         // the run folder's name
  std::string started_at;  // the run's start (run.json), which tells apart runs of one name
  std::string trajectory, evaluation_id, task, workload, model, provider, arch, pack;
  int turn = 0, index = 0;
  nlohmann::json ToJson() const;
};

// Evaluates one kernel file on a task's workload; returns its record (typed: a remote service's
// JSON is read once, where it arrives). Must not throw for a bad kernel (the record says what is
// wrong); a throw counts as infra.
using Evaluator =
    std::function<EvaluationRecord(const std::string& kernel_path, const Definition& def,
                                   const Workload& wl, const EvaluationTag& tag)>;

struct RunTask {
  const Definition* definition = nullptr;
  const Workload* workload = nullptr;
  // Trajectory ids are "<id>-<k>"; empty: the task's name.
  std::string id;
  // Empty: the conversation starts from the rendered system and task messages. Otherwise it
  // starts from these (system, task, then assistant/feedback pairs of earlier turns that are
  // not this model's: fixit repair seeds a teacher with a failed turn); the model's own turns
  // follow and are counted from 1.
  std::vector<ChatMessage> seed;
  // This trajectory's turn limit; 0: AgentOptions::turns (a replay of upstream's trajectories
  // runs each for as many turns as it had).
  int turns = 0;
};

struct AgentOptions {
  std::vector<RunTask> tasks;
  int trajectories = 1;  // per task
  int turns = 8;
  std::optional<double> target_speedup;  // stop a trajectory at a correct kernel this fast
  // Also stop a trajectory after a turn whose evaluation record this accepts (fixit repair:
  // the first repair that would be kept). Thread-safe; must not throw.
  std::function<bool(const EvaluationRecord& record)> stop_when;
  std::string arch = "sm_90a";
  std::string pack_text;  // rendered into the system message
  std::string prompts_dir;
  std::string context = "full";  // full: every turn; condensed: older turns as one-line notes
  int concurrency = 4;           // trajectories in flight
  // Evaluations in flight at once. 1 for the local GPU, so that timed evaluations never share
  // it; a remote evaluator (the service) has its own per-GPU queue and takes up to
  // `concurrency`, or a sweep against many GPUs would use one at a time.
  int parallel_evaluations = 1;
  std::string run_dir;
  bool resume = false;
  nlohmann::json run_info = nlohmann::json::object();  // model and options, for run.json
  bool progress = true;                                // a line per turn on stderr
  // Called after each trajectory file is written, with its JSON and the evaluation record of
  // the turn just added (null when none): where the results store is written. Thread-safe
  // (trajectories call it concurrently); must not throw.
  std::function<void(const nlohmann::json& trajectory, const nlohmann::json& record)> on_save;
  // Set (from a signal handler, say) to stop: no new turn or trajectory starts; the turns in
  // flight finish and are saved, and the rest count as interrupted (`--resume` continues).
  const std::atomic<bool>* stop_requested = nullptr;
};

struct RunSummary {
  int trajectories = 0, finished = 0, interrupted = 0, turns_run = 0, turns_reused = 0;
  int correct = 0, verified = 0;  // trajectories with such a turn
  double max_overhead_s = 0, mean_overhead_s = 0;
};

// The messages sent for the next turn: the full history, or (condensed) the system and task
// messages, one note per older turn, and the last turn in full.
std::vector<ChatMessage> ContextFor(const Trajectory& t, const std::string& policy);

RunSummary RunAgent(const AgentOptions& options, ChatProvider& model, const Evaluator& evaluate);

}  // namespace ptxbench
