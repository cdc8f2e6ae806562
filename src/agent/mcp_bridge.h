// The line between a coding agent's MCP server (`ptxbench mcp --bridge SOCKET`, serve/mcp.h)
// and the run that launched the agent (agent/coding_agent.h). A Unix socket in a private
// folder outside the agent's workspace; one JSON request per connection, one JSON answer:
//
//   {"token", "op": "info"}                -> {"task", "kernel", "statement", "pack",
//                                              "evaluations"}   at once
//   {"token", "op": "evaluate", "source"}  -> {"text", "summary", "error", "counted"}
//                                             once the run has judged the kernel as a turn
//
// A request without the run's token is answered with an error and nothing else. The socket
// is removed when the trajectory ends, so the token is worthless after the run.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

namespace ptxbench {

// A fresh random token (32 hex digits) from the system's entropy source.
std::string NewBridgeToken();

// The run's end of one trajectory's bridge. Listens from construction to destruction on a
// thread of its own; answers "info" itself and queues one "evaluate" at a time for the run.
class BridgeServer {
 public:
  // Throws EnvironmentError when the socket cannot be made.
  BridgeServer(std::string socket_path, std::string token, nlohmann::json info);
  ~BridgeServer();  // a kernel waiting for its answer is told the run is over
  BridgeServer(const BridgeServer&) = delete;
  BridgeServer& operator=(const BridgeServer&) = delete;

  // The next kernel handed in, waiting until `until` or until `stop()` says true (checked
  // every 100 ms; it may read state guarded elsewhere). nullopt when none came.
  std::optional<std::string> NextKernel(std::chrono::steady_clock::time_point until,
                                        const std::function<bool()>& stop);
  // Answers the kernel NextKernel returned; false when there is none waiting or its caller
  // is gone.
  bool Answer(const nlohmann::json& answer);
  bool HasWaitingKernel();
  void SetEvaluationsLeft(int left);
  const std::string& path() const { return path_; }

 private:
  void Serve();
  void HandleConnection(int fd);

  std::string path_, token_;
  nlohmann::json info_;
  int listen_fd_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<std::string> queued_;  // handed in, not yet taken by NextKernel
  int waiting_fd_ = -1;                // the connection whose kernel is queued or being judged
  bool stopping_ = false;
  std::thread thread_;
};

// The MCP server's end: sends `request` (the token added) and returns the answer. Throws
// EnvironmentError when the run cannot be reached (it ended) or answers nothing in `timeout`.
nlohmann::json BridgeCall(const std::string& socket_path, const std::string& token,
                          nlohmann::json request, std::chrono::seconds timeout);

}  // namespace ptxbench
