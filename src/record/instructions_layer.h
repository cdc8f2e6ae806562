// The instructions layer (`record.instructions`) as the evaluator writes it (ToJson) and every
// reader takes it apart (InstructionsLayerOf): one structure both ways, so that the format has
// one definition. EvaluationRecord::Instructions() and InstructionDetailOf (record/layers.h)
// read through it. The stages write the layer in turn (the static inspection, then the
// verification and the tag, then the cross-check), each reading what the earlier ones wrote
// and writing the whole layer back; so every field keeps whether it was written, and a round
// trip gives back the very JSON it read.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/record.h"

namespace ptxbench {

// A field written as a value, as an explicit null (decided later, or not measured), or not at
// all: nullopt is "not written", an empty inner optional is null. A field present with a value
// of another type reads as null, as it read before the layer was typed.
template <typename T>
using NullableField = std::optional<std::optional<T>>;
// A NullableField written as null.
template <typename T>
NullableField<T> WrittenNull() {
  return NullableField<T>(std::in_place);
}

// The disassembler's candidate-free probe, run when the candidate's object could not be
// inspected: whose failure that was.
struct StaticProbe {
  std::string state;  // "ran" or "failed"
  std::string message;
  bool operator==(const StaticProbe&) const = default;
};

// The profiled process: what ran it and what came back.
struct ProfileRun {
  std::string tool;                // ncu's path
  std::optional<long long> calls;  // how many it completed (records of older versions lack it)
  uint64_t kernels = 0;            // how many kernels of the candidate the profiler reported
  uint64_t bad_rows = 0;           // rows of its report that could not be read
  std::string exit;                // how the profiled process ended
  uint64_t seed = 0;               // of its first call
  bool operator==(const ProfileRun&) const = default;
};

// The same behaviour under every observer (the memory checker, the timed calls, the profiler).
struct CrossCheck {
  // An observed call's outputs against the reference: "matches" or what differs; not written
  // when that call was not compared.
  std::optional<std::string> memcheck_output, profile_output;
  // The kernels each run launched; nullopt where it could not say (written "unavailable").
  struct Kernels {
    std::optional<std::set<std::string>> trials, memcheck, timed, profiled;
    bool operator==(const Kernels&) const = default;
  } kernels;
  bool operator==(const CrossCheck&) const = default;
};

struct InstructionsLayer {
  // "static": the SASS inspection of the built object, as it wrote itself (inspect/sass.h);
  // null when not written.
  nlohmann::json static_sass;
  std::optional<StaticProbe> static_probe;
  std::optional<std::vector<std::string>> required_families;
  // A Verification's name (record/vocabulary.h), kept as text so that a name this version
  // lacks still reads.
  std::optional<std::string> verification;
  NullableField<std::string> arch_tag;           // the credit under our rule: "H", "B" or ""
  NullableField<std::string> upstream_arch_tag;  // the credit under the paper's rule
  NullableField<double> tensor_core_work_fraction;
  std::optional<std::vector<std::string>> tag_withheld;  // why our tag was withheld
  std::optional<std::string> message;
  std::optional<ProfileRun> profile;
  // "dynamic": the profile joined to the SASS, as it wrote itself (inspect/ncu.h); null when
  // not written.
  nlohmann::json dynamic;
  std::optional<CrossCheck> cross_check;
  bool operator==(const InstructionsLayer&) const = default;
};

nlohmann::json ToJson(const InstructionsLayer& layer);
// Lenient: a field missing or of another type reads as not written (NullableField: as null).
InstructionsLayer InstructionsLayerOf(const nlohmann::json& layer);
inline InstructionsLayer InstructionsLayerOf(const EvaluationRecord& record) {
  return InstructionsLayerOf(record.instructions);
}

}  // namespace ptxbench
