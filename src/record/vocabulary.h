// The words of the evaluation record (schema `ptxbench.evaluation/1`) as enums, each with ONE
// table of its strings. Reading never throws: a string this version does not know reads as the
// enum's kUnknown (older or newer records stay readable), and an absent one as its "none".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ptxbench {

enum class Status {
  kPassed,
  kRejected,  // screening
  kCompileError,
  kRuntimeError,
  kTimeout,
  kMemoryError,    // the memory checker
  kIncorrect,      // reason: numerical, non_finite, unwritten
  kRuleViolation,  // reason: foreign_kernel, inputs_modified, call_history, outside_stream,
                   //         forbidden_library, channel_tampered, witness_disagrees, ...
  kInfraError,     // the harness or the machine, not the candidate (also: no GPU)
  kUnknown,        // read only: a record without a status, or with one this version lacks
};
std::string ToString(Status s);
Status StatusFromString(std::string_view s);

// The record's `reason`: a precise sub-status of INCORRECT, RULE_VIOLATION and INFRA_ERROR.
enum class FailureReason {
  kNone,  // no reason (null or "")
  kNumerical,
  kNonFinite,
  kUnwritten,
  kForeignKernel,
  kInputsModified,
  kCallHistory,
  kOutsideStream,
  kForbiddenLibrary,
  kChannelTampered,
  kWitnessDisagrees,
  kWitnessMissing,
  kImpossibleSpeed,
  kUninspectable,      // the disassembler reads a harness-built object but not the candidate's
  kForeignDeviceCode,  // the object's .nv_fatbin holds bytes nvcc did not make for the source
  kObservedOutputDiffers,
  kKernelsDiffer,
  kNoGpu,
  kArchUnavailable,
  kAbiUnsupported,
  kWorkerLost,  // the service gave up on a job whose workers kept dying
  kUnknown,
};
std::string ToString(FailureReason r);
FailureReason FailureReasonFromString(std::string_view s);

// instructions.verification: how far the architecture's own instructions were shown to do the
// work. Only kDynamicPresent can earn the architecture credit.
enum class Verification {
  kNone,  // the record has no verification (a layer not reached, an older record)
  kDynamicPresent,
  kDynamicNotExecuted,
  kSassAbsent,
  kProfileError,
  kNotRequested,
  kNotCorrect,
  kUnknown,
};
std::string ToString(Verification v);
Verification VerificationFromString(std::string_view s);

// A turn's outcome, for trajectories and the reports' per-turn distribution. Only kInfra is
// not the model's: such a turn is not spent.
enum class TurnOutcome {
  kExtraction,  // no kernel could be extracted from the reply
  kRejected,
  kCompile,
  kRuntime,  // RUNTIME_ERROR and TIMEOUT
  kMemory,
  kIncorrect,
  kRuleViolation,
  kCorrect,     // passed, without the architecture credit
  kVerified,    // passed with it
  kModelError,  // the endpoint refused; spent
  kInfra,       // the harness could not judge; not spent
  kUnknown,
};
std::string ToString(TurnOutcome o);
TurnOutcome TurnOutcomeFromString(std::string_view s);

// A status's name in upstream PTXBench's results (record.upstream_status).
std::string UpstreamStatusName(Status s);
// A status's name in FlashInfer-Bench's traces; "" for one that is no verdict on the candidate
// (INFRA_ERROR, unknown).
std::string FlashInferStatusName(Status s);
// The turn outcome of a status; for kPassed, kCorrect until the credit rule (JudgeTurn) says
// more.
TurnOutcome OutcomeOfStatus(Status s);

// The architectures with an architecture credit, each with its tag (H for Hopper, B for
// Blackwell).
enum class Arch { kSm90a, kSm100a, kUnknown };
std::string ToString(Arch a);
Arch ArchFromString(std::string_view s);  // exact: "sm_90a", "sm_100a"
// By family: any "sm_90…" is Hopper's, any "sm_100…" Blackwell's (the evaluator's and the
// feedback's reading of --arch).
Arch ArchFamilyOf(std::string_view s);
// "H", "B"; "" for kUnknown.
std::string CreditTag(Arch a);

// Everything the project says about an architecture, in one row: the compiler's target, the
// credit, the names the published results and the prompts use, and the tensor-core family
// that a task requires of a kernel there.
struct ArchInfo {
  Arch arch;
  std::string_view name;           // "sm_90a": --arch, records
  std::string_view family;         // "sm_90": any sm_90… reads as this arch (ArchFamilyOf)
  std::string_view credit_tag;     // "H"
  std::string_view gencode;        // nvcc's -gencode value
  std::string_view published;      // "hopper": the published results' arch column
  std::string_view gpus;           // "NVIDIA Hopper (H100, H200)": the prompts
  std::string_view instructions;   // the prompts' words for its own instructions
  std::string_view tensor_family;  // "gmma": the family a task requires there
};
// The rows, in the order --arch lists them.
const std::vector<ArchInfo>& Architectures();
// The row of an exact name ("sm_90a"); nullptr when there is none.
const ArchInfo* FindArchitecture(std::string_view name);

}  // namespace ptxbench
