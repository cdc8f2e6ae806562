// The embedded default model: plays a bundled trajectory of replies that we wrote (kernels
// from controls/), so `ptxbench run` with no model named exercises the whole loop and every
// layer of the harness on a real GPU without any endpoint. Reply k goes to the k-th turn
// (counted from the assistant messages already in the conversation), so a resumed replay
// continues where it stopped.
//
//   {"description": "...", "task": "gemm_n7168_k5120",
//    "turns": [{"text": "prose before the code", "kernel": "controls/gemm/does_not_compile.cu"},
//              {"text": "a reply without code"}, ...]}
//
// Kernel paths are relative to the source tree.
#pragma once

#include <string>
#include <vector>

#include "agent/chat.h"

namespace ptxbench {

class ReplayProvider : public ChatProvider {
 public:
  // Reads and checks the file (every kernel must exist); throws InputError.
  static std::unique_ptr<ReplayProvider> Load(const std::string& path,
                                              const std::string& source_dir);
  ChatReply Complete(const std::vector<ChatMessage>& messages) override;
  std::string Describe() const override;
  const std::string& task() const { return task_; }
  size_t turns() const { return replies_.size(); }

 private:
  std::string path_, task_;
  std::vector<std::string> replies_;
};

// What a replayed reply is said to cost: no tokenizer here, so characters / 4 of the prompt
// and of the reply (the reports' token columns stay comparable between replays).
Usage EstimatedReplayUsage(const std::vector<ChatMessage>& messages, const std::string& reply);

// The bundled default: agent/replay/default.json of the source tree.
std::string DefaultReplayFile();

}  // namespace ptxbench
