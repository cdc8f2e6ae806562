// The tokens a coding agent spent, read from what its CLI prints (issue 39: a token budget
// where the agent reports usage). The run captures the agent's output in its log
// (<run>/agents/<trajectory>.log); a CLI asked for JSON events prints its usage there:
//  - Codex CLI (`codex exec --json`): a "turn.completed" event per turn with
//    usage {input_tokens, cached_input_tokens, output_tokens}; cached tokens are part of the
//    input: a turn costs input + output.
//  - Claude Code (`claude -p --output-format stream-json --verbose`): "assistant" events whose
//    message.usage has input_tokens, cache_creation_input_tokens, cache_read_input_tokens and
//    output_tokens (the three inputs apart): a message costs their sum, counted once per
//    message id (one message comes as several events); a final "result" event carries the
//    session's total, which counts when it is the larger.
// Any other line is ignored. The count is the CLI's word, read as it arrives: a budget against
// runaway spending, not a verdict (an agent could print less than it spent, never undo a
// count already read).
#pragma once

#include <cstdint>
#include <set>
#include <string>

namespace ptxbench {

class AgentUsage {
 public:
  // One line of the agent's output.
  void Feed(const std::string& line);
  int64_t tokens() const;
  bool reported() const { return reported_; }

 private:
  int64_t summed_ = 0;         // turns and messages, as they came
  int64_t session_total_ = 0;  // the largest total a "result" event gave
  std::set<std::string> messages_seen_;
  bool reported_ = false;
};

// Follows a growing log file: each call reads what was appended since the last one and
// feeds its complete lines.
class AgentLogFollower {
 public:
  explicit AgentLogFollower(std::string path) : path_(std::move(path)) {}
  void Update(AgentUsage* usage);

 private:
  std::string path_;
  uint64_t offset_ = 0;
  std::string partial_;
};

}  // namespace ptxbench
