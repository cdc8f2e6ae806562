// The evaluator of `ptxbench run` and of `ptxbench fixit repair`: the local pipeline
// (evaluate/evaluate.h), one call per kernel, or the evaluation service (`--evaluator URL`)
// with the same settings. It lives here, not in agent/ or fixit/, because it is the one place
// that sees both the local pipeline and the service's client (serve/client.h).
#pragma once

#include <string>
#include <vector>

#include "agent/loop.h"
#include "evaluate/evaluation_options.h"

namespace ptxbench {

struct EvaluatorSettings {
  std::string arch = "sm_90a";
  EvaluationOptions options;
  // The options the service is sent (their JSON form); it applies its defaults to the rest.
  std::vector<std::string> service_keys;
  std::string service_url;  // not empty: send every evaluation to `ptxbench serve` there
};

Evaluator MakeEvaluator(const EvaluatorSettings& settings);

}  // namespace ptxbench
