// The evaluation record (schema `ptxbench.evaluation/1`, DESIGN.md section 3) and its
// statuses. Every writer (terminal, JSON, later SQLite and HTML) reads this one structure.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace ptxbench {

constexpr const char* kEvaluationSchema = "ptxbench.evaluation/1";

enum class Status {
  kPassed,
  kRejected,  // screening
  kCompileError,
  kRuntimeError,
  kTimeout,
  kMemoryError,    // the memory checker
  kIncorrect,      // reason: numerical, non_finite, unwritten
  kRuleViolation,  // reason: foreign_kernel, inputs_modified, call_history, outside_stream,
                   //         forbidden_library
  kInfraError,     // the harness or the machine, not the candidate (also: no GPU)
};
std::string ToString(Status s);
// The upstream PTXBench name of a status and reason, for joining with published results.
std::string UpstreamStatus(Status s, const std::string& reason);

// A layer of the pipeline: ran, or skipped with a reason, so that a record never implies a
// check that did not happen.
enum class LayerState { kRan, kSkipped, kNotReached };
std::string ToString(LayerState s);

struct EvaluationRecord {
  Status status = Status::kInfraError;
  std::string reason;   // a precise sub-status for INCORRECT and RULE_VIOLATION
  std::string message;  // one line for people
  nlohmann::json task;  // definition, family, workload id, axes, flops
  std::string arch;
  nlohmann::json candidate;  // path, sha256, bytes
  nlohmann::json toolchain;  // nvcc, driver, runtime, GPU name, SM count, clocks
  nlohmann::json screening;
  nlohmann::json build;
  nlohmann::json correctness;
  nlohmann::json memcheck;
  nlohmann::json instructions;  // issue 3
  nlohmann::json performance;   // issue 4
  // The confinement of the processes that loaded the candidate: what the probe found, what
  // each child ran under, and what the child saw from inside before the candidate loaded.
  nlohmann::json sandbox;
  std::map<std::string, double> stage_seconds;
  std::string created_at;  // UTC, ISO 8601
  std::string ptxbench_version;
  std::string ptxbench_commit;  // the source commit (common/version.h), "unknown" if none

  nlohmann::json ToJson() const;
};

// Skipped-layer JSON: {"state": "skipped", "reason": why}.
nlohmann::json SkippedLayer(const std::string& why);
nlohmann::json NotReachedLayer(const std::string& why);

// Exit codes of `ptxbench eval`: 0 passed, 1 the candidate failed, 2 bad usage or input,
// 3 the harness or machine could not judge (no GPU, a tool missing, an internal error).
int ExitCodeFor(Status s);

std::string NowUtcIso8601();

}  // namespace ptxbench
