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
  const json& usage = ObjField(j, "usage");
  return {.turn = n->get<int>(),
          .outcome = outcome->get<std::string>(),
          .status = StrField(j, "status"),
          .reason = StrField(j, "reason"),
          .summary = StrField(j, "summary"),
          .kernel_file = StrField(j, "kernel_file"),
          .evaluation_file = StrField(j, "evaluation_file"),
          .evaluation_id = StrField(j, "evaluation_id"),
          .usage = {.prompt_tokens = IntField(usage, "prompt_tokens"),
                    .completion_tokens = IntField(usage, "completion_tokens"),
                    .reasoning_tokens = IntField(usage, "reasoning_tokens")},
          .attempts = static_cast<int>(IntField(j, "attempts")),
          .model_seconds = NumField(j, "model_seconds").value_or(0),
          .evaluation_seconds = NumField(j, "evaluation_seconds").value_or(0),
          .overhead_seconds = NumField(j, "overhead_seconds").value_or(0),
          .speedup = NumField(j, "speedup"),
          .tflops = NumField(j, "tflops"),
          .verified = BoolField(j, "verified").value_or(false),
          .spent = BoolField(j, "spent").value_or(true),
          .error = StrField(j, "error")};
}

bool TrajectoryExitFinished(std::string_view exit_status) {
  return exit_status == "turn_limit" || exit_status == "target_reached" ||
         exit_status == "model_error";
}

}  // namespace ptxbench
