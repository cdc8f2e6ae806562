// The confinement of a child process that loads a candidate (candidate, memcheck, profile and
// timing roles): its own folder, its own copy of the shared object, and a sandbox policy
// (common/sandbox.h) that lets it read the system and the CUDA tools, write only that folder,
// open only the GPU's device files, and see none of the caches, the store, the reference
// outputs or other evaluations.
#pragma once

#include <string>
#include <vector>

#include "common/sandbox.h"

namespace ptxbench {

// A folder owned by the sandbox's user (when the parent is root and drops to it), mode 0700,
// inside `parent_dir` (which is made traversable, not listable, for that user).
std::string MakeChildFolder(const std::string& parent_dir, const std::string& name,
                            const SandboxPolicy& policy);

// The policy for a child working in `folder`. `tool_roots` are the install folders of a
// wrapper (compute-sanitizer, ncu) that must be readable. Its user is 65534 until the caller
// sets the evaluation's own (ClaimSandboxUser, common/sandbox.h).
SandboxPolicy CandidateChildPolicy(const std::string& folder,
                                   const std::vector<std::string>& tool_roots);

// For test programs only: lets variables named by `pattern` (a name, or a prefix ending in
// '*') through the children's environment allow-list from now on, in this process. The test
// suite's stand-in child (tests/fake_child.cc) reads its part from PTXBENCH_FAKE_MODE; the
// ptxbench program never calls this, so no such variable reaches a candidate in production.
void AllowChildEnvironmentForTests(const std::string& pattern);

// A copy of this executable that the sandbox's user can read and run (our own build folder
// may lie under a home folder it cannot enter). Made once per process.
std::string SandboxedExecutable(const std::string& executable);

// Copies `file` into `folder` as `name`, owned by the sandbox's user, read-only; returns the
// new path.
std::string CopyIntoChildFolder(const std::string& file, const std::string& folder,
                                const std::string& name, const SandboxPolicy& policy);

}  // namespace ptxbench
