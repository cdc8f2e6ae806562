// Parent side of the child processes: start one with a spec, supervise it under a deadline,
// collect its channel messages and the tail of its log.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/subprocess.h"

namespace ptxbench {

struct ChildOutcome {
  ExitInfo exit;
  std::vector<nlohmann::json> messages;
  std::vector<std::string> garbage;  // channel lines that were not harness messages
  std::string log_tail;  // the end of the child's stdout/stderr (the candidate's printf too)
  std::string log_path;
  std::string folder;      // a confined child's own folder (its outputs are there)
  nlohmann::json sandbox;  // what confined it (PreparedSandbox::Describe)

  // The first (or last) message with this event name.
  const nlohmann::json* First(const std::string& event) const;
  const nlohmann::json* Last(const std::string& event) const;
  std::vector<const nlohmann::json*> All(const std::string& event) const;
};

struct ChildRequest {
  nlohmann::json spec;   // what the child does (child/child_main.h)
  std::string work_dir;  // where the spec and the log are written
  std::string name;      // "reference", "candidate", "memcheck": names the files
  std::chrono::seconds timeout{60};
  std::vector<std::string> wrapper;  // a program to run the child under (compute-sanitizer …)
  std::string executable;            // the ptxbench binary; empty: this one
  // A child that loads a candidate: confined (run/confine.h) in its own folder
  // (ChildFolder(work_dir, name)), with its own copy of spec["shared_object"]; spec["out_dir"]
  // is set to that folder. It runs as the evaluation's own user: the one claimed for work_dir
  // (ClaimSandboxUser), which every confined child working there shares.
  bool confine = false;
  std::vector<std::string> tool_roots;  // install folders of the wrapper, readable inside
  bool allow_inet = false;              // the wrapper talks to its target over loopback TCP
  // Keep the caller's user (root on the GPU machines): the profiler's hardware counters are
  // reserved to administrators where the driver says so. Every other protection stays.
  bool keep_user = false;
  // Sees each message as it arrives and may answer on the child's control pipe.
  using Reply = std::function<bool(const std::string&)>;
  std::function<void(const nlohmann::json&, const Reply&)> on_message;
  // The time on_message takes is not counted against `timeout` (it waits for the GPU lock).
  bool answer_time_is_not_the_childs = false;
};

// The folder a confined child `name` works in (made by RunChild).
std::string ChildFolder(const std::string& work_dir, const std::string& name);

// Sets spec["shared_object_sha256"] to the hash of spec["shared_object"] (the object as the
// parent built it, in a folder no child can reach) where the spec names one and carries no
// hash yet. The child hashes what it opens and loads that very descriptor only when the two
// agree (child/child_support.h, LoadCandidateRun). RunChild does this for every request.
void HashSharedObject(nlohmann::json* spec);

ChildOutcome RunChild(const ChildRequest& request);

// A probe child (this process stays CUDA-free): its "device" message, or "no_gpu" with why.
ChildOutcome RunProbeChild();
// Whether a GPU can be used: nullopt when one can, else why not ("no NVIDIA driver ...",
// "no CUDA device visible", ...).
std::optional<std::string> WhyNoGpu();

}  // namespace ptxbench
