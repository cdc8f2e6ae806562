#include "record/vocabulary.h"

#include <array>

#include "common/enum_names.h"

namespace ptxbench {

namespace {

// Each status with its names in upstream PTXBench's results and in FlashInfer-Bench's traces
// ("" where a status is no verdict on the candidate), and the turn outcome it gives (a PASSED
// turn is judged further by JudgeTurn).
struct StatusRow {
  Status status;
  std::string_view name, upstream, flashinfer;
  TurnOutcome outcome;
};
constexpr StatusRow kStatuses[] = {
    {Status::kPassed, "PASSED", "PASSED", "PASSED", TurnOutcome::kCorrect},
    // Upstream rejects at build time.
    {Status::kRejected, "REJECTED", "COMPILE_ERROR", "COMPILE_ERROR", TurnOutcome::kRejected},
    {Status::kCompileError, "COMPILE_ERROR", "COMPILE_ERROR", "COMPILE_ERROR",
     TurnOutcome::kCompile},
    {Status::kRuntimeError, "RUNTIME_ERROR", "RUNTIME_ERROR", "RUNTIME_ERROR",
     TurnOutcome::kRuntime},
    {Status::kTimeout, "TIMEOUT", "TIMEOUT", "TIMEOUT", TurnOutcome::kRuntime},
    {Status::kMemoryError, "MEMORY_ERROR", "RUNTIME_ERROR", "RUNTIME_ERROR", TurnOutcome::kMemory},
    // Upstream has one name for wrong, non-finite and unwritten.
    {Status::kIncorrect, "INCORRECT", "INCORRECT_NUMERICAL", "INCORRECT_NUMERICAL",
     TurnOutcome::kIncorrect},
    {Status::kRuleViolation, "RULE_VIOLATION", "RUNTIME_ERROR", "RUNTIME_ERROR",
     TurnOutcome::kRuleViolation},
    {Status::kInfraError, "INFRA_ERROR", "EVALUATION_ERROR", "", TurnOutcome::kInfra},
};
// A status this version does not know: the harness's problem, never the model's.
constexpr StatusRow kUnknownStatus = {Status::kUnknown, "UNKNOWN", "EVALUATION_ERROR", "",
                                      TurnOutcome::kInfra};

const StatusRow& RowOf(Status s) {
  for (const StatusRow& r : kStatuses)
    if (r.status == s) return r;
  return kUnknownStatus;
}

constexpr EnumName<FailureReason> kReasonNames[] = {
    {FailureReason::kNone, ""},
    {FailureReason::kNumerical, "numerical"},
    {FailureReason::kNonFinite, "non_finite"},
    {FailureReason::kUnwritten, "unwritten"},
    {FailureReason::kForeignKernel, "foreign_kernel"},
    {FailureReason::kInputsModified, "inputs_modified"},
    {FailureReason::kCallHistory, "call_history"},
    {FailureReason::kOutsideStream, "outside_stream"},
    {FailureReason::kForbiddenLibrary, "forbidden_library"},
    {FailureReason::kChannelTampered, "channel_tampered"},
    {FailureReason::kWitnessDisagrees, "witness_disagrees"},
    {FailureReason::kWitnessMissing, "witness_missing"},
    {FailureReason::kImpossibleSpeed, "impossible_speed"},
    {FailureReason::kUninspectable, "uninspectable"},
    {FailureReason::kForeignDeviceCode, "foreign_device_code"},
    {FailureReason::kObservedOutputDiffers, "observed_output_differs"},
    {FailureReason::kKernelsDiffer, "kernels_differ"},
    {FailureReason::kNoGpu, "no_gpu"},
    {FailureReason::kArchUnavailable, "arch_unavailable"},
    {FailureReason::kAbiUnsupported, "abi_unsupported"},
    {FailureReason::kWorkerLost, "worker_lost"},
};

constexpr EnumName<Verification> kVerificationNames[] = {
    {Verification::kNone, ""},
    {Verification::kDynamicPresent, "dynamic_present"},
    {Verification::kDynamicNotExecuted, "dynamic_not_executed"},
    {Verification::kSassAbsent, "sass_absent"},
    {Verification::kProfileError, "profile_error"},
    {Verification::kNotRequested, "not_requested"},
    {Verification::kNotCorrect, "not_correct"},
};

constexpr EnumName<TurnOutcome> kOutcomeNames[] = {
    {TurnOutcome::kExtraction, "extraction"},
    {TurnOutcome::kRejected, "rejected"},
    {TurnOutcome::kCompile, "compile"},
    {TurnOutcome::kRuntime, "runtime"},
    {TurnOutcome::kMemory, "memory"},
    {TurnOutcome::kIncorrect, "incorrect"},
    {TurnOutcome::kRuleViolation, "rule_violation"},
    {TurnOutcome::kCorrect, "correct"},
    {TurnOutcome::kVerified, "verified"},
    {TurnOutcome::kModelError, "model_error"},
    {TurnOutcome::kInfra, "infra"},
};

}  // namespace

std::string ToString(Status s) { return std::string(RowOf(s).name); }
Status StatusFromString(std::string_view s) {
  for (const StatusRow& r : kStatuses)
    if (r.name == s) return r.status;
  return Status::kUnknown;
}
std::string UpstreamStatusName(Status s) { return std::string(RowOf(s).upstream); }
std::string FlashInferStatusName(Status s) { return std::string(RowOf(s).flashinfer); }
TurnOutcome OutcomeOfStatus(Status s) { return RowOf(s).outcome; }

std::string ToString(FailureReason r) { return NameOf<FailureReason>(kReasonNames, r, "unknown"); }
FailureReason FailureReasonFromString(std::string_view s) {
  return ValueOf<FailureReason>(kReasonNames, s, FailureReason::kUnknown);
}

std::string ToString(Verification v) {
  return NameOf<Verification>(kVerificationNames, v, "unknown");
}
Verification VerificationFromString(std::string_view s) {
  return ValueOf<Verification>(kVerificationNames, s, Verification::kUnknown);
}

std::string ToString(TurnOutcome o) { return NameOf<TurnOutcome>(kOutcomeNames, o, "unknown"); }
TurnOutcome TurnOutcomeFromString(std::string_view s) {
  return ValueOf<TurnOutcome>(kOutcomeNames, s, TurnOutcome::kUnknown);
}

std::string ToString(Arch a) {
  for (const ArchInfo& r : Architectures())
    if (r.arch == a) return std::string(r.name);
  return "unknown";
}
Arch ArchFromString(std::string_view s) {
  for (const ArchInfo& r : Architectures())
    if (r.name == s) return r.arch;
  return Arch::kUnknown;
}
Arch ArchFamilyOf(std::string_view s) {
  for (const ArchInfo& r : Architectures())
    if (s.substr(0, r.family.size()) == r.family) return r.arch;
  return Arch::kUnknown;
}
const std::vector<ArchInfo>& Architectures() {
  static const std::vector<ArchInfo> rows = {
      {Arch::kSm90a, "sm_90a", "sm_90", "H", "arch=compute_90a,code=sm_90a", "hopper",
       "NVIDIA Hopper (H100, H200)",
       "warpgroup MMA (`wgmma.mma_async`) and the TMA bulk-tensor copies "
       "(`cp.async.bulk.tensor`)",
       "gmma"},
      {Arch::kSm100a, "sm_100a", "sm_100", "B", "arch=compute_100a,code=sm_100a", "blackwell",
       "NVIDIA Blackwell (B200)",
       "the fifth-generation tensor cores (`tcgen05.mma`) and tensor memory", "tcgen05"},
  };
  return rows;
}

const ArchInfo* FindArchitecture(std::string_view name) {
  for (const ArchInfo& r : Architectures())
    if (r.name == name) return &r;
  return nullptr;
}

std::string CreditTag(Arch a) {
  for (const ArchInfo& r : Architectures())
    if (r.arch == a) return std::string(r.credit_tag);
  return "";
}

}  // namespace ptxbench
