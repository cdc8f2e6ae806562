// A model endpoint as the agent loop sees it: messages in, one reply out, with what it cost
// and, when it failed, whose failure it was. Providers (provider.h) speak the wire formats.
#pragma once

#include <cstdint>
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
enum class ChatOutcome { kOk, kInfraError, kModelError };
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
  virtual std::string Describe() const = 0;  // "openai gpt-x at https://…", no secrets
};

}  // namespace ptxbench
