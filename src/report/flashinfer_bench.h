// FlashInfer-Bench's files, so that their tooling and leaderboards read our verdicts and their
// solutions run here: a Trace per evaluation (their fields and status words) and the CUDA
// source inside a Solution. Formats: docs/contract.md and ../shared/reference/upstream-formats.md.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ptxbench {

// FlashInfer-Bench's status word for a record: PASSED; INCORRECT_NUMERICAL (our INCORRECT,
// whatever its reason); COMPILE_ERROR (COMPILE_ERROR, and REJECTED: the build was refused);
// TIMEOUT; RUNTIME_ERROR (RUNTIME_ERROR, MEMORY_ERROR, RULE_VIOLATION). "" for INFRA_ERROR:
// the machine could not judge, which is no verdict on the solution.
std::string FlashInferStatus(const nlohmann::json& record);

// One Trace for an evaluation record: definition, workload {uuid, axes (the variable ones),
// inputs (each "random": the harness draws them)}, solution (its name), evaluation {status,
// environment {hardware, libs}, timestamp, log, correctness (PASSED and INCORRECT_NUMERICAL),
// performance (PASSED, when timed)}. A record of a task read from a FlashInfer-Bench trace set
// (task.flashinfer_bench) names their definition and carries their workload object verbatim
// instead (variable_axes and input_names unused). Throws InputError for an INFRA_ERROR record.
nlohmann::json FlashInferTrace(const nlohmann::json& record,
                               const std::vector<std::string>& variable_axes,
                               const std::vector<std::string>& input_names,
                               const std::string& solution_name);

// A Solution's CUDA source: the file its entry point names ("kernel.cu::run") with the
// solution's own headers (and source files) it includes inlined, one translation unit; a
// TVM-FFI entry point of another name is exported as run. Throws InputError, naming what is
// wrong, for anything that is not a CUDA solution we can run.
struct FlashInferSolution {
  std::string name, definition, binding, entry_file, entry_symbol, source;
};
FlashInferSolution ReadFlashInferSolution(const nlohmann::json& solution);

// A candidate as the commands that take one read it (eval, inspect, submit): a .cu file's
// text, or a FlashInfer-Bench solution (.json) unpacked to its entry file's source, under the
// same source policy. With `task` given, a solution for another definition is refused.
// Throws InputError naming the file.
struct CandidateFile {
  std::string source;
  std::optional<FlashInferSolution> solution;
};
CandidateFile ReadCandidateFile(const std::string& path, const std::string& task);

}  // namespace ptxbench
