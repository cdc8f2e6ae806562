// What a coding agent's process may touch (issue 39). The agent needs the network (its model's
// API), its own programs and the system, so it gets no namespaces; Landlock keeps its files:
//  - read and execute: the system folders (/usr, /bin, /lib*, /etc, /opt, /proc, /sys, /run,
//    those that exist), this program (its MCP server is `ptxbench mcp --bridge`), and what
//    the user names with --agent-read (e.g. where the CLI keeps its login: ~/.claude);
//  - write: its workspace (with a temporary folder inside it, its TMPDIR) and what the user
//    names with --agent-write;
//  - a few devices (/dev/null, /dev/zero, /dev/random, /dev/urandom, /dev/tty, /dev/ptmx).
// Not the run folder: other trajectories' workspaces, the evaluation records, run.json and the
// agents' logs stay out of its reach, so it can neither read what others did nor forge what
// the report reads. A policy that would open the run folder (a readable path above it, or one
// inside it other than the workspace) is refused, not weakened. Landlock also keeps it from
// ptrace and signals outside its domain (the run's process and its environment).
//
// Without Landlock on this machine the agent is not started, unless the run says so in its
// identity (--agent-unconfined).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/sandbox.h"

namespace ptxbench {

struct AgentConfinement {
  bool confined = true;
  std::vector<std::string> read_paths;   // --agent-read, absolute
  std::vector<std::string> write_paths;  // --agent-write, absolute
};

nlohmann::json ToJson(const AgentConfinement& c);
// A run.json's "confinement" (absent in runs before it existed: confined, nothing added).
AgentConfinement AgentConfinementFromJson(const nlohmann::json& j);

// The agent's temporary folder (its TMPDIR), inside its workspace (the caller makes it and
// sets the variable).
inline constexpr const char* kAgentTmpFolder = ".tmp";

// The policy for one trajectory's agent (disabled when not `c.confined`). Throws UsageError
// naming the path when a readable or writable path would open the run folder, and
// EnvironmentError when Landlock is missing and `c.confined`.
SandboxPolicy AgentSandboxPolicy(const AgentConfinement& c, const std::string& run_dir,
                                 const std::string& workspace, const std::string& ptxbench);

}  // namespace ptxbench
