// What the model reads after a turn: a deterministic, structured text from the evaluation
// record (docs/design.md section 3), the same record giving the same text.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "record/record.h"

namespace ptxbench {

struct BestSoFar {
  int turn = 0;        // 1-based
  double speedup = 0;  // over the baseline; 0 when not timed
  double tflops = 0;
  bool verified = false;  // the architecture credit (dynamic_present)
};

struct FeedbackOptions {
  int max_compiler_lines = 20;  // the compiler's first errors, with their lines
  int max_chars = 6000;         // the whole feedback, truncated with a note beyond
};

// The status and message; compile errors (first lines); wrong results (which output, max
// errors, first mismatching index, seed); runtime and memory errors (CUDA error, sanitizer
// report); the instruction evidence (families in the SASS, executed at run time, the
// tensor-core work fraction, what is missing for the credit); the time, the baseline's time,
// speedup and TFLOP/s; the best correct kernel so far.
std::string RenderFeedback(const EvaluationRecord& record, const std::optional<BestSoFar>& best,
                           const FeedbackOptions& options = {});
// The same for a record as its file holds it (read with FromJson).
std::string RenderFeedback(const nlohmann::json& record, const std::optional<BestSoFar>& best,
                           const FeedbackOptions& options = {});

// A one-line summary of a turn, for condensed histories and the progress display:
// "turn 3: INCORRECT (O: 12 of 4096 outside tolerance)".
std::string SummarizeTurn(int turn, const EvaluationRecord& record);
// The machine-readable part of a coding agent's tool answer (serve/mcp.h): turn, status,
// reason, outcome under the credit rule of `arch`, arch_tag, speedup.
nlohmann::json ToolSummary(int turn, const EvaluationRecord& record, const std::string& arch);
std::string SummarizeTurn(int turn, const nlohmann::json& record);

}  // namespace ptxbench
