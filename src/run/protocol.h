// The numbers of the timing protocol, decided by the parent and sent to the timing child
// (DESIGN.md section 6: fail closed). A child never sizes anything from what it finds at run
// time (free memory after the candidate's constructors ran, a count in its own message):
// it honours these or fails. Parsed strictly here, with the defaults defined only here, so
// the parent's and the child's views of a spec cannot drift apart.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ptxbench {

// The spec of a timing child (role "timing"): a candidate's, or a baseline's alone
// (`baseline_only`), in a process no candidate ever enters.
struct TimingSpec {
  std::string family;
  nlohmann::json axes = nlohmann::json::object();
  std::string out_dir;
  int warmup = 10, iterations = 50;
  int buffer_sets = 3;  // exactly this many; a set that cannot be allocated is an error
  uint64_t seed_base = 0, set_seed_base = 0;
  std::string pci_bus_id;
  // The candidate's child only.
  std::string shared_object, abi = "native";
  // Output buffers of the first `kept_outputs` timed calls, allocated before the candidate is
  // loaded; the parent draws which to check after the loop.
  int kept_outputs = 0;
  // Fresh input sets for the witness phase (one call each, one round), allocated before the
  // candidate is loaded; filled only once the parent sends their seeds after the loop.
  int witness_calls = 0;
  // Key of the digest of every kept output, taken in stream order right after its call.
  uint64_t digest_key = 0;
  // A baseline child's.
  bool baseline_only = false;
  std::string baseline_phase = "baseline_before";
  uint64_t baseline_seed_offset = 1000000;
  int peak_n = 0;  // > 0: measure the bf16 dense peak at this square size after the baseline
  nlohmann::json baseline_options = nlohmann::json::object();
};

nlohmann::json ToJson(const TimingSpec& spec);
// Throws std::invalid_argument naming the field when a field is missing, of the wrong type or
// out of range. Fields it does not know are ignored (the child's confinement adds some).
TimingSpec ParseTimingSpec(const nlohmann::json& j);

// What the parent sends on the control descriptor after the candidate's timed loop: which
// kept calls to write out, and the witness's seeds and digest key (never known before).
struct AfterLoopPlan {
  std::vector<int> check;
  bool witness = false;
  uint64_t witness_seed0 = 0, witness_key = 0;
};

nlohmann::json ToJson(const AfterLoopPlan& plan);
// nullopt when the line is not a plan (the child then fails: no plan, no witness).
std::optional<AfterLoopPlan> ParseAfterLoopPlan(const std::string& line);

// Events that say "the harness could not do this" rather than "the candidate failed". The
// parent believes one only from a process that had not yet loaded a candidate, or from a
// process that never loads one; in a candidate's process after its load they are the
// candidate's word, and earn it nothing (DESIGN.md section 6).
bool IsHarnessClaim(const nlohmann::json& message);

// The marker a child sends right before it maps a candidate: what it sent before is the
// harness's own word; everything after may be forged.
inline constexpr const char* kLoadingEvent = "loading";

// The index of the first `loading` marker in a child's messages; messages.size() when the
// child never came to load a candidate (then all it sent is the harness's).
size_t LoadingIndex(const std::vector<nlohmann::json>& messages);

}  // namespace ptxbench
