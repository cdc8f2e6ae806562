// What the parent tells each child (its spec, one type per role) and the events whose meaning
// the parent decides on, in one place (docs/design.md section 6: fail closed). A child never sizes
// anything from what it finds at run time (free memory after the candidate's constructors ran,
// a count in its own message): it honours its spec or fails. Every spec is parsed strictly
// here, with its defaults defined only here, so the parent's and the child's views of a spec
// cannot drift apart.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ptxbench {

// The roles a child can take; its spec's `role` field.
enum class ChildRole { kProbe, kLoadCheck, kReference, kCandidate, kTiming };
const char* ToString(ChildRole role);
// Throws std::invalid_argument for a spec that is not an object or names no known role.
ChildRole ParseChildRole(const nlohmann::json& spec);

// A candidate-free child that only reports the device (role "probe"): the parent's own
// evidence about the GPU's health.
nlohmann::json ProbeSpecJson();

// What every spec of a child that runs a workload starts with: the family, its axes, and the
// folder the child writes its outputs to.
struct WorkloadSpec {
  std::string family;
  nlohmann::json axes = nlohmann::json::object();
  std::string out_dir;
};

// A reference child (role "reference"): the trusted reference on `seeds`, its expected outputs
// written to `out_dir`. With `set_seeds` (one per seed), the inputs are the family's timed
// inputs derived from that buffer set's base, as the timing layer's re-checked calls had them.
struct ReferenceSpec : WorkloadSpec {
  std::vector<uint64_t> seeds;
  std::vector<uint64_t> set_seeds;
};
nlohmann::json ToJson(const ReferenceSpec& spec);
ReferenceSpec ParseReferenceSpec(const nlohmann::json& j);

// A candidate's correctness child (role "candidate"): one call per seed on fresh inputs, its
// outputs written out for the parent to compare. Also the memory-checked and profiled calls.
// The loader's own fields (`confine`, `preload`, `shared_object_sha256`) are added by
// run/children.cc and read by the loader, not here.
struct CandidateRunSpec : WorkloadSpec {
  std::vector<uint64_t> seeds;  // at least one
  std::string shared_object, abi = "native";
  std::string arch;      // empty: no architecture check before loading
  bool kernels = false;  // record the launched kernels' names (CUPTI)
  bool write_outputs = true;
  bool guard_pages = true;  // off under compute-sanitizer, which knows exact bounds
};
nlohmann::json ToJson(const CandidateRunSpec& spec);
CandidateRunSpec ParseCandidateRunSpec(const nlohmann::json& j);

// The spec of a timing child (role "timing"): a candidate's, or a baseline's alone
// (`baseline_only`), in a process no candidate ever enters.
struct TimingSpec : WorkloadSpec {
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
  // Set up (context, library or buffers) first, then ask the parent (a baseline with
  // baseline_ready, the candidate's child with candidate_ready, before loading it) and go on
  // only after its "go": the parent holds the GPU alone from then on, not for the set-up.
  bool wait_for_go = false;
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

// The events the parent decides on, by name: a child's line with any other event is shown,
// never believed.
namespace event {
inline constexpr const char* kDevice = "device";
inline constexpr const char* kLoading = "loading";
inline constexpr const char* kCallStarted = "call_started";
inline constexpr const char* kTrial = "trial";
inline constexpr const char* kReference = "reference";
inline constexpr const char* kRefused = "refused";
inline constexpr const char* kError = "error";
inline constexpr const char* kNoGpu = "no_gpu";
inline constexpr const char* kArchUnavailable = "arch_unavailable";
inline constexpr const char* kLibraries = "libraries";
inline constexpr const char* kTimingSample = "timing_sample";
inline constexpr const char* kTimedLoopDone = "timed_loop_done";
inline constexpr const char* kDone = "done";
// The GPU gate (GpuGate below): a child about to make its first CUDA call asks for the GPU
// (shared); a timing child whose set-up is done asks for it alone before the candidate loads.
inline constexpr const char* kGpuWanted = "gpu_wanted";
inline constexpr const char* kCandidateReady = "candidate_ready";
}  // namespace event

// The spec key that makes a child wait at its first CUDA call for the parent's "go": the
// parent then takes the GPU lock only for what needs the GPU, not for the process's start-up,
// its confinement or a wrapping tool's own start (the profiler's takes seconds).
inline constexpr const char* kGpuGateKey = "gpu_gate";
// The parent's answers on the control descriptor.
inline constexpr const char* kGateGo = "go";
inline constexpr const char* kGateStop = "stop";

// Events that say "the harness could not do this" rather than "the candidate failed". The
// parent believes one only from a process that had not yet loaded a candidate, or from a
// process that never loads one; in a candidate's process after its load they are the
// candidate's word, and earn it nothing (docs/design.md section 6).
bool IsHarnessClaim(const nlohmann::json& message);

// The marker a child sends right before it maps a candidate: what it sent before is the
// harness's own word; everything after may be forged.
inline constexpr const char* kLoadingEvent = event::kLoading;

// The index of the first `loading` marker in a child's messages; messages.size() when the
// child never came to load a candidate (then all it sent is the harness's).
size_t LoadingIndex(const std::vector<nlohmann::json>& messages);

}  // namespace ptxbench
