#include "agent/trajectory.h"

#include "common/error.h"
#include "common/json_fields.h"
#include "record/outcome.h"

namespace ptxbench {

using nlohmann::json;

void JudgeTurnRecord(const json& record, const std::string& arch, TurnRecord* turn) {
  const EvaluationRecord r = FromJson(record);
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

namespace {

json TurnJson(const TurnRecord& t) {
  json j;
  PTXBENCH_JSON_SET_FIELDS(j, t, turn, outcome, status, reason, summary, kernel_file,
                           evaluation_file, evaluation_id, attempts, model_seconds,
                           evaluation_seconds, overhead_seconds, verified, spent);
  PTXBENCH_JSON_SET_FIELDS(j["usage"], t.usage, prompt_tokens, completion_tokens, reasoning_tokens);
  if (t.speedup) j["speedup"] = *t.speedup;
  if (t.tflops) j["tflops"] = *t.tflops;
  if (!t.error.empty()) j["error"] = t.error;
  return j;
}

TurnRecord TurnFromJson(const json& j) {
  TurnRecord t;
  t.turn = j.at("turn");
  t.outcome = j.at("outcome");
  t.status = j.value("status", "");
  t.reason = j.value("reason", "");
  t.summary = j.value("summary", "");
  t.kernel_file = j.value("kernel_file", "");
  t.evaluation_file = j.value("evaluation_file", "");
  t.evaluation_id = j.value("evaluation_id", "");
  const json u = j.value("usage", json::object());
  t.usage.prompt_tokens = u.value("prompt_tokens", int64_t{0});
  t.usage.completion_tokens = u.value("completion_tokens", int64_t{0});
  t.usage.reasoning_tokens = u.value("reasoning_tokens", int64_t{0});
  t.attempts = j.value("attempts", 0);
  t.model_seconds = j.value("model_seconds", 0.0);
  t.evaluation_seconds = j.value("evaluation_seconds", 0.0);
  t.overhead_seconds = j.value("overhead_seconds", 0.0);
  if (j.contains("speedup")) t.speedup = j["speedup"].get<double>();
  if (j.contains("tflops")) t.tflops = j["tflops"].get<double>();
  t.verified = j.value("verified", false);
  t.spent = j.value("spent", true);
  t.error = j.value("error", "");
  return t;
}

}  // namespace

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
  for (const auto& e : t.infra_events) infra.push_back(TurnJson(e));
  Usage total;
  for (const auto& turn : t.turns) turns.push_back(TurnJson(turn));
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
    for (const auto& turn : info.at("turns")) t.turns.push_back(TurnFromJson(turn));
    for (const auto& e : info.value("infra_events", json::array()))
      t.infra_events.push_back(TurnFromJson(e));
    return t;
  } catch (const json::exception& e) {
    throw InputError(std::string("malformed trajectory: ") + e.what());
  }
}

}  // namespace ptxbench
