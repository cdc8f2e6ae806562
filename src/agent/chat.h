// A model endpoint as the agent loop sees it: messages in, one reply out, with what it cost
// and, when it failed, whose failure it was. Providers (provider.h) speak the wire formats.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/turn.h"

namespace ptxbench {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

// Usage (what a reply cost in tokens) is in record/turn.h: a turn's file carries it.

// Whose failure a reply is. An infrastructure failure (unreachable endpoint, 5xx or 429 after
// every retry, the deadline, a cut stream, a reply that is not the wire format) is never the
// model's: the turn is not spent, and `ptxbench run --resume` retries it. A model failure
// (the endpoint answered properly and refused: 400 on our request, a content filter) is
// recorded as the model's outcome.
//
// A coding agent (agent/coding_agent.h) can also end its trajectory without a turn: it exited,
// or its wall-time budget ran out (kEnded; finish_reason is the trajectory's exit status).
enum class ChatOutcome { kOk, kInfraError, kModelError, kEnded };
std::string ToString(ChatOutcome o);

struct ChatReply {
  ChatOutcome outcome = ChatOutcome::kOk;
  std::string text;           // the assistant's content (reasoning text excluded)
  std::string finish_reason;  // as the provider says it ("stop", "length", "end_turn", ...)
  Usage usage;
  int http_status = 0;  // of the last attempt; 0 when none completed
  int attempts = 0;
  double seconds = 0;  // wall, all attempts and waits
  std::string error;   // why, when not kOk: one line, never containing the API key
  // A coding agent's kernel file, handed in as it is (no extraction from `text`, which only
  // shows it in the trajectory).
  std::optional<std::string> kernel;
};

class ChatProvider {
 public:
  virtual ~ChatProvider() = default;
  // One completion of `messages`. Thread-safe: trajectories call it concurrently.
  virtual ChatReply Complete(const std::vector<ChatMessage>& messages) = 0;
  // The same, for a named trajectory of the loop: a replay of many recorded trajectories
  // (upstream.h) answers each from its own; a model needs no name.
  virtual ChatReply CompleteFor(const std::string& trajectory_id,
                                const std::vector<ChatMessage>& messages) {
    (void)trajectory_id;
    return Complete(messages);
  }
  // The loop is done with a trajectory (its exit status: turn_limit, target_reached, ...), the
  // last message being the feedback on its last turn. A coding agent hears it and is stopped.
  virtual void TrajectoryEnded(const std::string& trajectory_id,
                               const std::vector<ChatMessage>& messages,
                               const std::string& exit_status) {
    (void)trajectory_id, (void)messages, (void)exit_status;
  }
  virtual std::string Describe() const = 0;  // "openai gpt-x at https://…", no secrets
};

}  // namespace ptxbench
