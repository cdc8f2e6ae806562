// A coding agent (Codex CLI, Claude Code, any program) in the seat of the agent loop's model
// (issue 39). The loop asks this provider for a turn; the provider answers with the kernel the
// agent handed in through its MCP tool `evaluate_kernel`, and gives the loop's feedback back
// to the agent as the tool's answer. So each tool call is a turn of a trajectory of the loop's
// own format: run.json, --resume, the results store, reports, the upstream CSV and Fixit work
// on coding-agent runs as they are.
//
// Per trajectory, in <run>/workspaces/<trajectory>/ (the agent's working folder, nothing of
// the harness): AGENTS.md and CLAUDE.md (how to work here, then the loop's system message with
// the rules and the pack), TASK.md (the task statement), PROMPT.md (the first instruction to
// give the agent), kernel.cu (a starting file), .mcp.json (Claude Code's MCP configuration) and
// .codex/config.toml (Codex CLI's). The agent's command runs there through /bin/sh in a process
// group of its own, its output in <run>/agents/<trajectory>.log; its MCP server reaches the
// run through a socket outside the workspace with a token of this trajectory (mcp_bridge.h).
//
// The agent's process is confined (agent_confinement.h): its workspace and the system, not the
// run folder.
//
// A resumed trajectory starts a new agent in the same workspace (its kernel.cu kept), told how
// many evaluations are left; its turns go on from the last one judged.
//
// Budgets: evaluations (the loop's turn limit), wall time from the agent's start (then the
// trajectory ends `wall_limit`), tokens where its CLI reports them (`token_limit`); an agent
// that exits ends it `agent_exit`. All are finished trajectories. An agent that cannot be started
// is the harness's failure (infra, resumable).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "agent/agent_confinement.h"
#include "agent/chat.h"

namespace ptxbench {

struct CodingAgentOptions {
  std::string command;         // run by /bin/sh -c in the workspace
  std::string name;            // for reports: "codex", "claude-code"
  std::string run_dir;         // workspaces/ and agents/ are made here
  int evaluations = 8;         // the loop's turn limit, told to the agent
  double wall_seconds = 3600;  // per trajectory, from the agent's start
  // Per trajectory, as its CLI reports them in its output (agent_usage.h); 0: no budget.
  int64_t token_budget = 0;
  std::string ptxbench;          // this program, which the MCP configurations start
  std::string arch = "sm_90a";   // whose credit rule the tool's summary applies
  AgentConfinement confinement;  // what its process may touch (agent_confinement.h)
  // The run's stop request (Ctrl-C): a turn waiting for the agent's next kernel ends at once,
  // as the harness's failure (not the agent's turn: --resume starts the agent again).
  const std::atomic<bool>* stop = nullptr;
};

class CodingAgentProvider : public ChatProvider {
 public:
  explicit CodingAgentProvider(CodingAgentOptions o);
  ~CodingAgentProvider() override;

  ChatReply Complete(const std::vector<ChatMessage>& messages) override;
  ChatReply CompleteFor(const std::string& trajectory_id,
                        const std::vector<ChatMessage>& messages) override;
  void TrajectoryEnded(const std::string& trajectory_id, const std::vector<ChatMessage>& messages,
                       const std::string& exit_status) override;
  std::string Describe() const override;

  struct Seat;  // one trajectory's workspace, bridge and agent process

 private:
  nlohmann::json Summary(const std::string& id, int turn) const;
  std::shared_ptr<Seat> SeatFor(const std::string& id, const std::vector<ChatMessage>& messages,
                                std::string* error);

  CodingAgentOptions o_;
  std::string socket_dir_;  // private (0700), outside every workspace
  std::atomic<int> next_socket_{0};
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Seat>> seats_;
};

// The files a workspace starts with, by name (relative to the workspace), for a trajectory
// whose loop messages are `messages` (system, task, then earlier turns of a resumed run).
// `mcp_command` and `mcp_args` start the MCP server; `env` is given to it.
std::map<std::string, std::string> WorkspaceFiles(const CodingAgentOptions& o,
                                                  const std::vector<ChatMessage>& messages,
                                                  int evaluations_left,
                                                  const std::vector<std::string>& mcp_args,
                                                  const std::map<std::string, std::string>& env);

}  // namespace ptxbench
