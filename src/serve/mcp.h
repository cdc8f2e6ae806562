// A coding agent's seat (issue 39): an MCP server on standard input and output (JSON-RPC 2.0,
// one message per line) whose one tool, `evaluate_kernel`, takes no arguments. It reads the
// workspace's kernel file, sends it to the run's evaluation service for the run's fixed task
// and workload, waits, and answers with the feedback our agent loop gives a model and a short
// machine-readable summary. The agent can neither pick another task nor hand in evidence of its
// own; the evaluation runs in the service, out of its reach. Two resources are readable: the
// task statement and the run's knowledge pack.
//
// At most one evaluation is in flight: a call while one runs is answered at once with an error
// result. A run has a budget of evaluations; past it every call is refused. A malformed message
// is answered with JSON-RPC's error and the server goes on.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "serve/client.h"

namespace ptxbench {

struct McpServerOptions {
  RemoteOptions service;       // the run's evaluation service, its token and options
  std::string task, workload;  // fixed for the run
  std::string kernel_path;     // the workspace's kernel file
  std::string task_statement;  // the "ptxbench://task" resource
  std::string pack;            // the "ptxbench://pack" resource; empty: none
  int max_evaluations = 8;     // the paper's 8 turns
};

// Serves until `in` ends (an evaluation in flight is finished and answered first). Every
// answer is one line on `out`. Returns the number of evaluations made.
int ServeMcp(const McpServerOptions& options, std::istream& in, std::ostream& out);

// The evaluation of one kernel source, replaceable in tests: the record, or a throw
// (EnvironmentError, InputError) when the service could not judge it.
using McpEvaluate = std::function<nlohmann::json(const std::string& source)>;
int ServeMcpWith(const McpServerOptions& options, const McpEvaluate& evaluate, std::istream& in,
                 std::ostream& out);

// What the tool answers for one evaluation: the text for the agent, the summary for programs,
// whether it is an error, and whether it counts against the budget (the agent's turn).
struct McpToolAnswer {
  std::string text;
  nlohmann::json summary = nlohmann::json::object();
  bool error = false, counted = true;
};
// Judges the source as turn `turn` (1-based); never throws.
using McpJudge = std::function<McpToolAnswer(const std::string& source, int turn)>;
int ServeMcpJudged(const McpServerOptions& options, const McpJudge& judge, std::istream& in,
                   std::ostream& out);

// A coding agent's server inside a `ptxbench run --agent-command` run (agent/coding_agent.h):
// the task, kernel file, resources and budget come from the run over its bridge socket
// (agent/mcp_bridge.h), and each evaluation is a turn the run judges and feeds back. Throws
// EnvironmentError when the run cannot be reached.
int ServeMcpBridge(const std::string& socket_path, const std::string& token, std::istream& in,
                   std::ostream& out);

}  // namespace ptxbench
