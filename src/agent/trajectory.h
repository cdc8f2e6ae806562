// One trajectory: a model's attempts at one task, turn by turn, as a JSON file in the layout
// of mini-swe-agent's trajectories ({"info", "messages", "trajectory_format"}) so its viewers
// open them; ptxbench's own per-turn data sits in each message's "extra" and in info.turns.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/record.h"

#include "agent/chat.h"
#include "record/turn.h"

namespace ptxbench {

struct Trajectory {
  std::string id;  // "<task>-<index>"
  std::string task, workload;
  int index = 0;
  std::vector<ChatMessage> messages;  // system, task, then assistant/feedback per turn
  // How many messages come before this trajectory's first turn: the system and task messages,
  // and for a seeded trajectory (fixit repair: a teacher starting from another model's failed
  // turn) the assistant reply and feedback it was seeded with.
  size_t preamble = 2;
  std::vector<TurnRecord> turns;
  // Turns lost to infrastructure in earlier sessions of a resumed run, kept for the record
  // (their turn numbers were run again).
  std::vector<TurnRecord> infra_events;
  // running, turn_limit, target_reached, model_error, infra_error (resume retries it)
  std::string exit_status = "running";
  std::string prompt_version;
  bool Finished() const { return TrajectoryExitFinished(exit_status); }
  int SpentTurns() const;
};

// A judged turn's fields from its evaluation record: the outcome (extraction, rejected, compile,
// runtime, memory, incorrect, rule_violation, correct, verified, model_error, infra) under the
// one credit rule (record/outcome.h: PASSED, dynamic_present and the tag of `arch`, the
// architecture the turn was for), status, reason, speedup, tflops, verified, and for an infra
// turn (a record that cannot be read too: never the model's fault) the message as its error.
void JudgeTurnRecord(const EvaluationRecord& record, const std::string& arch, TurnRecord* turn);

nlohmann::json ToJson(const Trajectory& t);
Trajectory TrajectoryFromJson(const nlohmann::json& j);  // throws InputError when malformed

}  // namespace ptxbench
