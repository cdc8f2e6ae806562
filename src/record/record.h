// The evaluation record (schema `ptxbench.evaluation/1`, docs/design.md section 3) and its
// statuses. Every writer (terminal, JSON, SQLite, HTML) and every reader (the agent's feedback,
// trajectories, Fixit, the store, the reports) goes through this one structure: ToJson writes
// it, FromJson reads it back, and the typed views below (the verdict's fields) and in
// record/layers.h (the detail inside each layer) are what consumers read of it, never the JSON
// by key.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/vocabulary.h"

namespace ptxbench {

constexpr const char* kEvaluationSchema = "ptxbench.evaluation/1";

// The upstream PTXBench name of a status and reason, for joining with published results.
std::string UpstreamStatus(Status s, const std::string& reason);


// What consumers read of the `instructions` layer.
struct InstructionsView {
  Verification verification = Verification::kNone;
  std::string verification_text;  // as written, for showing a value this version lacks
  std::string arch_tag;           // the credit under our rule: "H", "B" or ""
  // The tag under the paper's rule; nullopt in records written before the field (their
  // arch_tag was given under that rule).
  std::optional<std::string> upstream_arch_tag;
  std::optional<double> tensor_core_work_fraction;
  std::vector<std::string> tag_withheld;  // the evaluator's reasons for withholding our tag
  std::vector<std::string> required_families;
  std::string message;
  // The paper's tag, arch_tag standing in for records from before upstream_arch_tag.
  const std::string& UpstreamArchTag() const {
    return upstream_arch_tag ? *upstream_arch_tag : arch_tag;
  }
};

// What consumers read of the `performance` layer.
struct PerformanceView {
  std::string state, reason;  // "ran", or skipped / not_reached and why
  std::optional<double> speedup, tflops;
};

// What consumers read of the `build` layer.
struct BuildView {
  std::string shared_object_sha256;
};

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
  // Set by the agent loop once the record is a turn's ("<trajectory>/turn3"); written only
  // when set.
  std::string evaluation_id;
  // Top-level keys this version does not know, kept so that a record read and written again
  // loses nothing; written only when there are some.
  nlohmann::json extra = nlohmann::json::object();

  FailureReason Reason() const { return FailureReasonFromString(reason); }
  // The layers of the pipeline in order (screening, build, correctness, memcheck,
  // instructions, performance), by name.
  std::vector<std::pair<const char*, const nlohmann::json*>> Layers() const {
    return {{"screening", &screening},       {"build", &build},
            {"correctness", &correctness},   {"memcheck", &memcheck},
            {"instructions", &instructions}, {"performance", &performance}};
  }
  InstructionsView Instructions() const;
  PerformanceView Performance() const;
  BuildView Build() const;
  std::optional<double> TotalSeconds() const;  // stage_seconds.total, when measured

  nlohmann::json ToJson() const;
};

// Reads a record written by ToJson, of this version or an older one: a missing field stays
// empty (status: Status::kUnknown), a string this version does not know reads as its enum's
// kUnknown, and nothing throws. A value that is not a JSON object gives an empty record.
EvaluationRecord FromJson(const nlohmann::json& j);

// Skipped-layer JSON: {"state": "skipped", "reason": why}.
nlohmann::json SkippedLayer(const std::string& why);
nlohmann::json NotReachedLayer(const std::string& why);

// Exit codes of `ptxbench eval`: 0 passed, 1 the candidate failed, 2 bad usage or input,
// 3 the harness or machine could not judge (no GPU, a tool missing, an internal error).
int ExitCodeFor(Status s);

std::string NowUtcIso8601();

}  // namespace ptxbench
