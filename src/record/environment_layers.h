// What judged a candidate and how: the toolchain (`record.toolchain`), the build layer
// (`record.build`) and the confinement (`record.sandbox`), as the evaluator writes them
// (ToJson) and readers take them apart (...LayerOf). The evaluator's stages add to these in
// turn, each reading what the earlier ones wrote and writing the whole part back; so every
// field keeps whether it was written, and a round trip gives back the JSON it read. Reports
// of other modules are kept verbatim (objects; null where not written). Readers are lenient:
// a field missing or of another type reads as not written.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/record.h"

namespace ptxbench {

struct ToolchainLayer {
  std::optional<std::string> nvcc;  // the version nvcc gave, written by the build
  // The GPU a child of the harness reported (its `device` message, less the event), verbatim.
  nlohmann::json gpu;
  // What names that GPU on this machine: its UUID, else its PCI bus id; "" when neither.
  std::string GpuId() const;
  bool operator==(const ToolchainLayer&) const = default;
};
nlohmann::json ToJson(const ToolchainLayer& toolchain);
ToolchainLayer ToolchainLayerOf(const EvaluationRecord& record);

// What the record says of the machine that judged it (read over ToolchainLayer).
struct ToolchainDetail {
  std::string gpu_name, nvcc;
  bool present = false;  // the toolchain layer was written (a REJECTED record has none)
};
ToolchainDetail ToolchainDetailOf(const EvaluationRecord& record);

struct BuildLayer {
  // The compiler's account (ToJson(BuildResult), compile/nvcc.h), verbatim: every key of the
  // layer but those below.
  nlohmann::json compiler = nlohmann::json::object();
  // The shared object's DT_NEEDED entries, in file order, once the link check read them.
  std::optional<std::vector<std::string>> needed;
  bool operator==(const BuildLayer&) const = default;
};
nlohmann::json ToJson(const BuildLayer& build);
BuildLayer BuildLayerOf(const EvaluationRecord& record);

// The confinement of the processes that loaded the candidate.
struct SandboxLayer {
  nlohmann::json probe;            // what this machine can confine (ProbeSandbox, common/sandbox.h)
  nlohmann::json candidate_child;  // what the candidate's child ran under
  // What that child saw from inside before the candidate loaded (its `confinement` message).
  nlohmann::json inside;
  // The candidate-free probe of the GPU after the candidate's process claimed a harness
  // failure.
  struct HealthProbe {
    bool healthy = false;
    std::string why;  // written when not healthy
    bool operator==(const HealthProbe&) const = default;
  };
  std::optional<HealthProbe> health_probe;
  std::optional<std::string> gpu_lock;         // the path of the GPU's lock, once taken
  std::optional<uint64_t> record_strings_cut;  // strings cut to bound the record's size
  bool operator==(const SandboxLayer&) const = default;
};
nlohmann::json ToJson(const SandboxLayer& sandbox);
SandboxLayer SandboxLayerOf(const EvaluationRecord& record);

}  // namespace ptxbench
