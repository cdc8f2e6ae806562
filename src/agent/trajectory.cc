#include "agent/trajectory.h"

#include "common/error.h"
#include "common/json_fields.h"
#include "record/outcome.h"

namespace ptxbench {

using nlohmann::json;

void JudgeTurnRecord(const EvaluationRecord& r, const std::string& arch, TurnRecord* turn) {
  const TurnVerdict verdict = JudgeTurn(r, arch);
  turn->outcome = ToString(verdict.outcome);
  turn->status = r.status == Status::kUnknown ? "" : ToString(r.status);
  turn->reason = r.reason;
  const PerformanceView perf = r.Performance();
  turn->speedup = perf.speedup;
  turn->tflops = perf.tflops;
  turn->verified = verdict.Verified();
  if (verdict.outcome == TurnOutcome::kInfra) turn->error = r.message;
}

int Trajectory::SpentTurns() const {
  int n = 0;
  for (const auto& t : turns) n += t.spent;
  return n;
}

json ToJson(const Trajectory& t) {
  json messages = json::array();
  // Message k ≥ preamble belongs to turn (k − preamble) / 2 + 1: an assistant reply, then its
  // feedback. Seeded messages (between the task message and the preamble's end) say so.
  for (size_t k = 0; k < t.messages.size(); ++k) {
    json m = {{"role", t.messages[k].role}, {"content", t.messages[k].content}};
    if (k >= t.preamble)
      m["extra"] = {{"turn", int(k - t.preamble) / 2 + 1}};
    else if (k >= 2)
      m["extra"] = {{"seeded", true}};
    messages.push_back(m);
  }
  json turns = json::array(), infra = json::array();
  for (const auto& e : t.infra_events) infra.push_back(TurnToJson(e));
  Usage total;
  for (const auto& turn : t.turns) turns.push_back(TurnToJson(turn));
  for (const auto* list : {&t.turns, &t.infra_events})  // what the run cost, lost turns too
    for (const auto& turn : *list) {
      total.prompt_tokens += turn.usage.prompt_tokens;
      total.completion_tokens += turn.usage.completion_tokens;
      total.reasoning_tokens += turn.usage.reasoning_tokens;
    }
  return {{"trajectory_format", "mini-swe-agent-1"},
          {"info",
           {{"exit_status", t.exit_status},
            {"ptxbench", "ptxbench.trajectory/1"},
            {"id", t.id},
            {"task", t.task},
            {"workload", t.workload},
            {"index", t.index},
            {"prompt_version", t.prompt_version},
            {"preamble_messages", t.preamble},
            {"model_stats",
             {{"api_calls", t.turns.size() + t.infra_events.size()},
              {"prompt_tokens", total.prompt_tokens},
              {"completion_tokens", total.completion_tokens},
              {"reasoning_tokens", total.reasoning_tokens}}},
            {"turns", turns},
            {"infra_events", infra}}},
          {"messages", messages}};
}

Trajectory TrajectoryFromJson(const json& j) {
  try {
    Trajectory t;
    const json& info = j.at("info");
    t.exit_status = info.at("exit_status");
    t.id = info.at("id");
    t.task = info.at("task");
    t.workload = info.value("workload", "");
    t.index = info.value("index", 0);
    t.prompt_version = info.value("prompt_version", "");
    for (const auto& m : j.at("messages")) t.messages.push_back({m.at("role"), m.at("content")});
    t.preamble = info.value("preamble_messages", size_t{2});
    if (t.preamble < 2 || t.preamble > t.messages.size())
      throw InputError("malformed trajectory: preamble_messages " + std::to_string(t.preamble) +
                       " with " + std::to_string(t.messages.size()) + " messages");
    for (const auto& turn : info.at("turns"))
      t.turns.push_back(TurnFromJson(turn, "malformed trajectory: a turn"));
    for (const auto& e : info.value("infra_events", json::array()))
      t.infra_events.push_back(TurnFromJson(e, "malformed trajectory: an infra event"));
    return t;
  } catch (const json::exception& e) {
    throw InputError(std::string("malformed trajectory: ") + e.what());
  }
}

}  // namespace ptxbench
