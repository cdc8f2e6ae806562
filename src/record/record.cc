#include "record/record.h"

#include <ctime>

namespace ptxbench {

std::string ToString(Status s) {
  switch (s) {
    case Status::kPassed:
      return "PASSED";
    case Status::kRejected:
      return "REJECTED";
    case Status::kCompileError:
      return "COMPILE_ERROR";
    case Status::kRuntimeError:
      return "RUNTIME_ERROR";
    case Status::kTimeout:
      return "TIMEOUT";
    case Status::kMemoryError:
      return "MEMORY_ERROR";
    case Status::kIncorrect:
      return "INCORRECT";
    case Status::kRuleViolation:
      return "RULE_VIOLATION";
    case Status::kInfraError:
      return "INFRA_ERROR";
  }
  return "?";
}

std::string UpstreamStatus(Status s, const std::string& /*reason*/) {
  switch (s) {
    case Status::kPassed:
      return "PASSED";
    case Status::kRejected:
      return "COMPILE_ERROR";  // upstream rejects at build time
    case Status::kCompileError:
      return "COMPILE_ERROR";
    case Status::kRuntimeError:
      return "RUNTIME_ERROR";
    case Status::kTimeout:
      return "TIMEOUT";
    case Status::kMemoryError:
      return "RUNTIME_ERROR";
    case Status::kIncorrect:  // upstream has one name for wrong, non-finite and unwritten
      return "INCORRECT_NUMERICAL";
    case Status::kRuleViolation:
      return "RUNTIME_ERROR";
    case Status::kInfraError:
      return "EVALUATION_ERROR";
  }
  return "?";
}

std::string ToString(LayerState s) {
  switch (s) {
    case LayerState::kRan:
      return "ran";
    case LayerState::kSkipped:
      return "skipped";
    case LayerState::kNotReached:
      return "not_reached";
  }
  return "?";
}

nlohmann::json SkippedLayer(const std::string& why) {
  return {{"state", "skipped"}, {"reason", why}};
}
nlohmann::json NotReachedLayer(const std::string& why) {
  return {{"state", "not_reached"}, {"reason", why}};
}

nlohmann::json EvaluationRecord::ToJson() const {
  nlohmann::json stages = nlohmann::json::object();
  double total = 0;
  for (const auto& [k, v] : stage_seconds) {
    stages[k] = v;
    if (k != "total") total += v;
  }
  nlohmann::json j = {{"schema", kEvaluationSchema},
                      {"ptxbench_version", ptxbench_version},
                      {"ptxbench_commit", ptxbench_commit},
                      {"created_at", created_at},
                      {"status", ToString(status)},
                      {"reason", reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(reason)},
                      {"upstream_status", UpstreamStatus(status, reason)},
                      {"message", message},
                      {"task", task},
                      {"arch", arch},
                      {"candidate", candidate},
                      {"toolchain", toolchain},
                      {"screening", screening},
                      {"build", build},
                      {"correctness", correctness},
                      {"memcheck", memcheck},
                      {"instructions", instructions},
                      {"performance", performance},
                      {"stage_seconds", stages}};
  if (!sandbox.is_null()) j["sandbox"] = sandbox;
  return j;
}

int ExitCodeFor(Status s) {
  if (s == Status::kPassed) return 0;
  if (s == Status::kInfraError) return 3;
  return 1;
}

std::string NowUtcIso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace ptxbench
