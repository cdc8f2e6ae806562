#include "record/outcome.h"

namespace ptxbench {

TurnVerdict JudgeTurn(const EvaluationRecord& record, Arch arch) {
  TurnVerdict v;
  if (record.status != Status::kPassed) {
    v.outcome = OutcomeOfStatus(record.status);
    return v;
  }
  const InstructionsView ins = record.Instructions();
  const std::string required = CreditTag(arch);
  const bool credit = ins.verification == Verification::kDynamicPresent && !required.empty() &&
                      ins.arch_tag == required;
  v.outcome = credit ? TurnOutcome::kVerified : TurnOutcome::kCorrect;
  if (credit) v.credit_tag = required;
  return v;
}

TurnVerdict JudgeTurn(const EvaluationRecord& record, const std::string& arch) {
  return JudgeTurn(record, ArchFamilyOf(arch.empty() ? record.arch : arch));
}

}  // namespace ptxbench
