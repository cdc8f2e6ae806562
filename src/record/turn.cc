#include "record/turn.h"

#include "common/error.h"
#include "common/json_fields.h"

namespace ptxbench {

using nlohmann::json;

json TurnToJson(const TurnRecord& t) {
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

TurnRecord TurnFromJson(const json& j, const std::string& where) {
  const json* n = FindField(j, "turn");
  if (!n || !n->is_number_integer())
    throw InputError(where + ": \"turn\" is missing or not an integer");
  const json* outcome = FindField(j, "outcome");
  if (!outcome || !outcome->is_string())
    throw InputError(where + ": \"outcome\" is missing or not a string");
  TurnRecord t;
  t.turn = n->get<int>();
  t.outcome = outcome->get<std::string>();
  PTXBENCH_JSON_GET_FIELDS(StrField, j, t, status, reason, summary, kernel_file, evaluation_file,
                           evaluation_id, error);
  PTXBENCH_JSON_GET_FIELDS(IntField, ObjField(j, "usage"), t.usage, prompt_tokens,
                           completion_tokens, reasoning_tokens);
  t.attempts = static_cast<int>(IntField(j, "attempts"));
  auto seconds = [](const json& o, const char* key) { return NumField(o, key).value_or(0); };
  PTXBENCH_JSON_GET_FIELDS(seconds, j, t, model_seconds, evaluation_seconds, overhead_seconds);
  PTXBENCH_JSON_GET_FIELDS(NumField, j, t, speedup, tflops);
  t.verified = BoolField(j, "verified").value_or(false);
  t.spent = BoolField(j, "spent").value_or(true);
  return t;
}

bool TrajectoryExitFinished(std::string_view exit_status) {
  return exit_status == "turn_limit" || exit_status == "target_reached" ||
         exit_status == "model_error" || exit_status == "agent_exit" ||
         exit_status == "wall_limit" || exit_status == "token_limit";
}

}  // namespace ptxbench
