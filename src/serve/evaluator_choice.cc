#include "serve/evaluator_choice.h"

#include "evaluate/evaluate.h"
#include "serve/client.h"

namespace ptxbench {

Evaluator MakeEvaluator(const EvaluatorSettings& s) {
  if (!s.service_url.empty()) {
    RemoteOptions remote;
    remote.url = s.service_url;
    remote.arch = s.arch;
    remote.options = EvaluationOptionsJson(s.options, s.service_keys);
    return MakeRemoteEvaluator(remote);
  }
  return [s](const std::string& path, const Definition& def, const Workload& wl,
             const EvaluationTag&) {
    EvalRequest req;
    req.kernel_path = path;
    req.definition = &def;
    req.workload = &wl;
    req.arch = s.arch;
    req.options = s.options;
    return Evaluate(req);
  };
}

}  // namespace ptxbench
