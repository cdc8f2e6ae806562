#include "agent/coding_agent.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include "agent/agent_usage.h"
#include "agent/feedback.h"
#include "agent/mcp_bridge.h"
#include "common/error.h"
#include "common/files.h"
#include "common/subprocess.h"

namespace ptxbench {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr char kKernelFile[] = "kernel.cu";

// How the folder works, before the loop's own system message (written for a chat model: its
// "answer with a fenced block" is, here, the kernel file handed in through the tool).
std::string WorkHere(int evaluations_left) {
  return std::string("# Working here\n\n") +
         "You are a coding agent working in this folder on one GPU kernel task (its statement "
         "is TASK.md). Write the kernel to `" +
         kKernelFile +
         "` and call the MCP tool `evaluate_kernel` (server `ptxbench`, no arguments) to have it "
         "judged: correctness against a trusted reference, whether the architecture's own "
         "instructions executed, and speed against the vendor library. Each call is one turn; "
         "you have " +
         std::to_string(evaluations_left) +
         ". Nothing else here judges the kernel: there is no GPU, harness or reference in this "
         "folder. Where the rules below speak of your answer's code block, they mean `" +
         kKernelFile + "` as it is when you call the tool.\n\n";
}

std::string TomlString(const std::string& s) { return json(s).dump(); }  // a basic string

}  // namespace

std::map<std::string, std::string> WorkspaceFiles(const CodingAgentOptions& o,
                                                  const std::vector<ChatMessage>& messages,
                                                  int evaluations_left,
                                                  const std::vector<std::string>& mcp_args,
                                                  const std::map<std::string, std::string>& env) {
  const std::string system = messages.size() > 0 ? messages[0].content : "";
  const std::string task = messages.size() > 1 ? messages[1].content : "";
  std::map<std::string, std::string> files;
  files["AGENTS.md"] = WorkHere(evaluations_left) + system + "\n";
  files["CLAUDE.md"] = files["AGENTS.md"];
  files["TASK.md"] = task + "\n";
  files["PROMPT.md"] =
      "Read AGENTS.md and TASK.md. Write the kernel to " + std::string(kKernelFile) +
      ", evaluate it with the evaluate_kernel tool, and improve it with what the evaluation "
      "says, until it is correct, verified and as fast as you can make it within your " +
      std::to_string(evaluations_left) + " evaluations.\n";
  files[kKernelFile] = "// Write the kernel here: see AGENTS.md and TASK.md.\n";
  json server = {
      {"type", "stdio"}, {"command", o.ptxbench}, {"args", mcp_args}, {"env", json::object()}};
  for (const auto& [k, v] : env) server["env"][k] = v;
  files[".mcp.json"] = json({{"mcpServers", {{"ptxbench", server}}}}).dump(2) + "\n";
  std::string toml = "[mcp_servers.ptxbench]\ncommand = " + TomlString(o.ptxbench) + "\nargs = [";
  for (size_t i = 0; i < mcp_args.size(); ++i) toml += (i ? ", " : "") + TomlString(mcp_args[i]);
  toml += "]\n\n[mcp_servers.ptxbench.env]\n";
  for (const auto& [k, v] : env) toml += k + " = " + TomlString(v) + "\n";
  files[".codex/config.toml"] = toml;
  return files;
}

struct CodingAgentProvider::Seat {
  std::string id, workspace;
  std::unique_ptr<BridgeServer> bridge;
  std::optional<Child> agent;
  std::thread waiter;  // reaps the agent
  std::atomic<bool> exited{false};
  std::string exit_text;  // set before `exited`
  Clock::time_point deadline;
  int handed_in = 0;
  // The tokens its CLI reported in its log (agent_usage.h), read while the run waits for it.
  AgentUsage usage;
  std::optional<AgentLogFollower> log;

  void Stop() {
    if (agent && !exited) {
      ::kill(-agent->pid(), SIGTERM);
      for (int i = 0; i < 50 && !exited; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (!exited) ::kill(-agent->pid(), SIGKILL);
    }
    if (waiter.joinable()) waiter.join();
    bridge.reset();  // the socket goes: the token is worthless from now on
  }
};

CodingAgentProvider::CodingAgentProvider(CodingAgentOptions o) : o_(std::move(o)) {
  char dir[] = "/tmp/ptxbench-agents-XXXXXX";
  if (!::mkdtemp(dir)) throw EnvironmentError("cannot make a folder for the agents' sockets");
  socket_dir_ = dir;
}

CodingAgentProvider::~CodingAgentProvider() {
  std::map<std::string, std::shared_ptr<Seat>> seats;
  {
    std::lock_guard<std::mutex> l(mu_);
    seats.swap(seats_);
  }
  for (auto& [id, seat] : seats) seat->Stop();
  ::rmdir(socket_dir_.c_str());
}

// The tool's machine-readable summary of a trajectory's turn, from the record the loop wrote
// (agent/loop.h's layout); only the turn when there is none (a kernel not judged).
json CodingAgentProvider::Summary(const std::string& id, int turn) const {
  const std::string path =
      o_.run_dir + "/evaluations/" + id + "/turn" + std::to_string(turn) + ".json";
  try {
    if (FileExists(path)) return ToolSummary(turn, FromJson(json::parse(ReadFile(path))), o_.arch);
  } catch (const std::exception&) {
  }
  return {{"turn", turn}};
}

ChatReply CodingAgentProvider::Complete(const std::vector<ChatMessage>& messages) {
  return CompleteFor("agent", messages);
}

std::string CodingAgentProvider::Describe() const {
  return "coding agent " + o_.name + " (" + o_.command + ")";
}

// The trajectory's seat, made (workspace written, bridge opened, agent started) on its first
// turn; null with `error` set when the agent cannot be started.
std::shared_ptr<CodingAgentProvider::Seat> CodingAgentProvider::SeatFor(
    const std::string& id, const std::vector<ChatMessage>& messages, std::string* error) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (auto it = seats_.find(id); it != seats_.end()) return it->second;
  }
  auto seat = std::make_shared<Seat>();
  seat->id = id;
  seat->workspace = o_.run_dir + "/workspaces/" + id;
  // Turns of a resumed trajectory are in `messages` after the system and task messages: the
  // agent's next evaluation is turn done + 1, and its budget what is left of the run's.
  const int done = static_cast<int>(messages.size() > 2 ? (messages.size() - 2) / 2 : 0);
  const int left = std::max(0, o_.evaluations - done);
  seat->handed_in = done;
  const std::string token = NewBridgeToken();
  const std::string socket = socket_dir_ + "/" + std::to_string(next_socket_++) + ".sock";
  const std::vector<std::string> args = {"mcp", "--bridge", socket};
  const std::map<std::string, std::string> env = {{"PTXBENCH_MCP_TOKEN", token}};
  try {
    const bool resumed = FileExists(seat->workspace + "/" + kKernelFile);
    MakeDirs(seat->workspace + "/.codex");
    MakeDirs(o_.run_dir + "/agents");
    for (const auto& [name, text] : WorkspaceFiles(o_, messages, left, args, env))
      if (!(resumed && name == kKernelFile)) WriteFileAtomic(seat->workspace + "/" + name, text);
    json info = {{"task", id},
                 {"kernel", seat->workspace + "/" + kKernelFile},
                 {"statement", messages.size() > 1 ? messages[1].content : ""},
                 {"pack", messages.size() > 0 ? messages[0].content : ""},
                 {"evaluations", left}};
    seat->bridge = std::make_unique<BridgeServer>(socket, token, info);
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", "cd \"$PTXBENCH_WORKSPACE\" || exit 127\n" + o_.command};
    spec.set_env = {{"PTXBENCH_WORKSPACE", seat->workspace},
                    {"PTXBENCH_TRAJECTORY", id},
                    {"PTXBENCH_PROMPT_FILE", seat->workspace + "/PROMPT.md"},
                    {"PTXBENCH_MCP_COMMAND", o_.ptxbench},
                    {"PTXBENCH_MCP_SOCKET", socket},
                    {"PTXBENCH_MCP_TOKEN", token},
                    {"TMPDIR", seat->workspace + "/" + kAgentTmpFolder}};
    // The run's own credentials are not the agent's business.
    spec.unset_env = {"PTXBENCH_SERVE_TOKEN", "PTXBENCH_EVALUATOR"};
    spec.log_path = o_.run_dir + "/agents/" + id + ".log";
    MakeDirs(seat->workspace + "/" + kAgentTmpFolder);
    const PreparedSandbox sandbox(
        AgentSandboxPolicy(o_.confinement, o_.run_dir, seat->workspace, o_.ptxbench));
    if (sandbox.active()) spec.sandbox = &sandbox;
    seat->deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(o_.wall_seconds));
    seat->log.emplace(spec.log_path);
    seat->agent.emplace(Child::Start(spec));
  } catch (const std::exception& e) {
    *error = std::string("the agent could not be started: ") + e.what();
    return nullptr;
  }
  Seat* s = seat.get();
  seat->waiter = std::thread([s] {
    const ExitInfo e = s->agent->Wait(Clock::now() + std::chrono::hours(24 * 365));
    s->exit_text = e.Describe();
    s->exited = true;
  });
  std::lock_guard<std::mutex> l(mu_);
  seats_[id] = seat;
  return seat;
}

ChatReply CodingAgentProvider::CompleteFor(const std::string& id,
                                           const std::vector<ChatMessage>& messages) {
  const auto t0 = Clock::now();
  ChatReply reply;
  std::string error;
  std::shared_ptr<Seat> seat = SeatFor(id, messages, &error);
  if (!seat) {
    reply.outcome = ChatOutcome::kInfraError;
    reply.error = error;
    return reply;
  }
  // The last turn's feedback is the tool call's answer; then the agent works on.
  if (seat->bridge->HasWaitingKernel() && !messages.empty() && messages.back().role == "user") {
    seat->bridge->SetEvaluationsLeft(o_.evaluations - seat->handed_in);
    seat->bridge->Answer({{"text", messages.back().content},
                          {"summary", Summary(id, seat->handed_in)},
                          {"error", false},
                          {"counted", true}});
  }
  auto stopped = [&] { return o_.stop && o_.stop->load(); };
  auto over_budget = [&] {
    if (o_.token_budget <= 0) return false;
    seat->log->Update(&seat->usage);
    return seat->usage.tokens() >= o_.token_budget;
  };
  std::optional<std::string> kernel = seat->bridge->NextKernel(
      seat->deadline, [&] { return seat->exited.load() || stopped() || over_budget(); });
  reply.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  reply.attempts = 1;
  if (kernel) {
    ++seat->handed_in;
    reply.kernel = *kernel;
    reply.text = "evaluate_kernel (" + std::string(kKernelFile) + "):\n\n```cuda\n" + *kernel +
                 (kernel->empty() || kernel->back() != '\n' ? "\n" : "") + "```\n";
    reply.finish_reason = "tool_call";
    return reply;
  }
  if (stopped() && !seat->exited) {
    reply.outcome = ChatOutcome::kInfraError;
    reply.error = "the run was stopped while the agent worked";
    return reply;
  }
  reply.outcome = ChatOutcome::kEnded;
  if (!seat->exited && over_budget()) {
    reply.finish_reason = "token_limit";
    reply.error = "the agent reported " + std::to_string(seat->usage.tokens()) +
                  " tokens, its budget is " + std::to_string(o_.token_budget);
  } else if (seat->exited) {
    reply.finish_reason = "agent_exit";
    reply.error = "the agent exited (" + seat->exit_text + ") after " +
                  std::to_string(seat->handed_in) + " evaluations";
  } else {
    reply.finish_reason = "wall_limit";
    reply.error = "the agent's wall time (" + std::to_string(static_cast<int>(o_.wall_seconds)) +
                  " s) ran out";
  }
  return reply;
}

void CodingAgentProvider::TrajectoryEnded(const std::string& id,
                                          const std::vector<ChatMessage>& messages,
                                          const std::string& exit_status) {
  std::shared_ptr<Seat> seat;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = seats_.find(id);
    if (it == seats_.end()) return;
    seat = it->second;
    seats_.erase(it);
  }
  if (seat->bridge && seat->bridge->HasWaitingKernel()) {
    // A judged last turn's feedback is the last message; a kernel the harness could not judge
    // (infra_error) or a stopped run (running) has none, and is not the agent's turn.
    const bool judged = exit_status != "infra_error" && exit_status != "running";
    const std::string last = judged && !messages.empty() && messages.back().role == "user"
                                 ? messages.back().content + "\n\n"
                                 : "The harness could not judge this kernel (not your fault; the "
                                   "run is resumed later).\n\n";
    seat->bridge->Answer({{"text", last + "The run is over for this task (" + exit_status +
                                       "): no more evaluations. Stop here."},
                          {"summary", Summary(id, seat->handed_in)},
                          {"error", false},
                          {"counted", true}});
    std::this_thread::sleep_for(std::chrono::seconds(1));  // the answer reaches the agent
  }
  seat->Stop();
}

}  // namespace ptxbench
