// What a record judged: the task (`record.task`) and the candidate (`record.candidate`), as
// the evaluator writes them (ToJson) and every consumer reads them (TaskDetailOf,
// CandidateDetailOf): one structure each, both ways. Readers are lenient: a field missing or
// of another type reads as empty.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/record.h"

namespace ptxbench {

// The task as the record names it.
struct TaskDetail {
  std::string definition, family, workload_id;
  std::vector<std::pair<std::string, nlohmann::json>> axes;  // name and value, in key order
  double flops = 0;                                          // the workload's nominal FLOPs
  std::vector<std::string> required_families;                // on the record's arch
  // A task read from a FlashInfer-Bench trace set (task.flashinfer_bench written): where it
  // came from, their definition name and their workload object, verbatim, to be given back in
  // traces; empty and null for our own tasks.
  bool from_flashinfer = false;
  std::string flashinfer_trace_set, flashinfer_file;
  std::string flashinfer_definition;
  nlohmann::json flashinfer_workload;
  // The value of axis `name`, or null.
  const nlohmann::json& Axis(const std::string& name) const;
  bool operator==(const TaskDetail&) const = default;
};
TaskDetail TaskDetailOf(const EvaluationRecord& record);
nlohmann::json ToJson(const TaskDetail& task);

// The candidate as judged: where it was read, the SHA-256 and size of its source and the ABI
// it was called through.
struct CandidateDetail {
  std::string sha256, abi;
  std::string path;
  uint64_t bytes = 0;
  // A FlashInfer-Bench solution file judged through its CUDA source (eval writes it after the
  // evaluation): the file, its name, binding and entry file.
  struct Solution {
    std::string file, name, binding, entry_file;
    bool operator==(const Solution&) const = default;
  };
  std::optional<Solution> solution;
  bool operator==(const CandidateDetail&) const = default;
};
CandidateDetail CandidateDetailOf(const EvaluationRecord& record);
nlohmann::json ToJson(const CandidateDetail& candidate);

}  // namespace ptxbench
