// The one rule that turns an evaluation record into a turn's outcome and its architecture
// credit. The agent loop, Fixit, KernelGen and every report judge through it, so that
// "verified" means the same thing everywhere.
#pragma once

#include <string>

#include "record/record.h"

namespace ptxbench {

struct TurnVerdict {
  TurnOutcome outcome = TurnOutcome::kInfra;
  std::string credit_tag;  // the tag earned ("H", "B"); "" without the credit
  bool Correct() const { return outcome == TurnOutcome::kCorrect || Verified(); }
  bool Verified() const { return outcome == TurnOutcome::kVerified; }
};

// The credit rule: the record PASSED, its instructions.verification is dynamic_present (the
// required family executed with a true predicate) and its instructions.arch_tag is the credit
// tag of `arch`, the architecture the turn was for (H for sm_90a, B for sm_100a). A passed
// record short of that is kCorrect. Any status this version cannot read is kInfra: never the
// model's fault.
TurnVerdict JudgeTurn(const EvaluationRecord& record, Arch arch);
// The same for an --arch as written (any sm_90… is Hopper's, as the evaluator reads it); an
// empty one stands for the record's own arch.
TurnVerdict JudgeTurn(const EvaluationRecord& record, const std::string& arch);

}  // namespace ptxbench
