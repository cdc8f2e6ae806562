// One turn of a trajectory as its file (info.turns[k]) holds it, and the one codec for it: the
// agent loop writes turns with TurnToJson, and the loop's resume, the results store and the
// reports read them with TurnFromJson. Also the one rule for whether a trajectory is finished.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ptxbench {

// As the provider reports it, the same way for all three formats: prompt_tokens counts cached
// prompt tokens too; completion_tokens counts the reasoning tokens too (reasoning_tokens is
// that part, where the provider says it: OpenAI, Gemini; Anthropic does not, 0).
struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0, reasoning_tokens = 0;
};

struct TurnRecord {
  int turn = 0;  // 1-based, counting spent turns only
  // extraction, rejected, compile, runtime, memory, incorrect, rule_violation, correct,
  // verified, model_error, infra (record/vocabulary.h: TurnOutcome)
  std::string outcome;
  std::string status, reason, summary;
  std::string kernel_file;      // relative to the run folder; empty without a kernel
  std::string evaluation_file;  // relative to the run folder; empty without an evaluation
  std::string evaluation_id;
  Usage usage;
  int attempts = 0;
  double model_seconds = 0, evaluation_seconds = 0, overhead_seconds = 0;
  std::optional<double> speedup, tflops;
  bool verified = false;
  bool spent = true;  // infra turns are not
  std::string error;  // the provider's, for model_error and infra
};

nlohmann::json TurnToJson(const TurnRecord& t);
// "turn" (an integer) and "outcome" (a string) are required: InputError naming `where`
// otherwise. Any other field that is missing or of another type reads as its default, as
// files written by older versions have them.
TurnRecord TurnFromJson(const nlohmann::json& j, const std::string& where = "a turn");

// A trajectory is finished when it has had all the turns it will get: the turn limit, the
// target reached, the model refusing, or a coding agent that exited (agent_exit) or ran out of
// wall time (wall_limit) or tokens (token_limit). "running" (stopped or still going) and
// "infra_error" (the harness failed; resume retries it) are not, nor is a status this version does
// not know.
bool TrajectoryExitFinished(std::string_view exit_status);

}  // namespace ptxbench
