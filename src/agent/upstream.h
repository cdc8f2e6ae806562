// Upstream PTXBench's agent output, read so that its trajectories can be judged again by our
// layers (`ptxbench run --upstream FOLDER`, `ptxbench import FOLDER`). An experiment folder:
//
//   trajectories/exp_NNN.json        mini-swe-agent-1.1: info, messages (system, task, then
//                                    assistant/user pairs; a user observation's "extra" has
//                                    upstream's verdict: returncode, event, all_passed, ...)
//   kernels/exp_NNN/kernel_t{N}.cu   the kernel of turn N, as upstream's analysis wrote it
//                                    (optional: upstream's own exporter reads the messages)
//
// Upstream's turn N is its N-th assistant message, counted from 0, whether or not the reply
// held a kernel (its agent, its analysis script and its per-turn CSV all count so): a reply
// without a ```cpp block is a turn, "Extraction error" in its CSV, and the next reply is turn
// N + 1 however many kernels came before. Its verdict is the extra of the observation that
// follows it. We replay each turn's assistant message verbatim, followed by its kernel in a
// fenced block where it had one; the feedback the replayed trajectory shows is ours.
// Upstream's own verdicts are kept beside ours in run.json.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/chat.h"
#include "task/definition.h"

namespace ptxbench {

struct UpstreamTurn {
  int turn = 0;             // ours: upstream_turn + 1 (our loop counts from 1)
  int upstream_turn = 0;    // upstream's N: the index of its assistant message, from 0
  std::string kernel;       // path of kernel_t{N}.cu; "" where the kernel came from the message
  std::string kernel_from;  // "kernels" (the file), "message" (extracted), "" (no kernel)
  std::string code;         // the kernel; "" where the reply had no ```cpp block
  std::string reply;        // the assistant message
  nlohmann::json verdict;   // upstream's observation extra for that message
  bool HasKernel() const { return !code.empty(); }
};

struct UpstreamTrajectory {
  std::string id;     // "exp_003"
  std::string task;   // a definition of our catalog
  std::string model;  // info.config.model.model_name where upstream says it; "" otherwise
  std::string exit_status;
  std::vector<ChatMessage> seed;  // upstream's system and task messages (empty when absent)
  std::vector<UpstreamTurn> turns;
};

struct UpstreamProblem {
  std::string path, message;
};

struct UpstreamExperiment {
  std::string folder;
  std::vector<UpstreamTrajectory> trajectories;
  std::vector<UpstreamProblem> problems;  // trajectories left out, and why
};

// Whether `path` is an upstream experiment folder: a trajectories/ folder holding exp_*.json in
// mini-swe-agent's format, and no run.json of ours.
bool IsUpstreamExperiment(const std::string& path);

// Reads the folder. A trajectory's task: `task` when given; else the one catalog definition
// named in its info (any string value equal to a definition's name), else the longest
// definition name found in its task message. Its turns: every assistant message an observation
// answered (upstream's CSV has a row for each; a last one left unanswered, when the run broke
// off, has none). A turn's kernel: kernels/<id>/kernel_t<N>.cu where that folder has it, else
// what upstream's extractor takes from the message (UpstreamKernelOf). A trajectory that is
// malformed, names no task, has no answered turn or kernel files that do not match its
// messages is left out with a problem; throws InputError only when nothing is usable.
UpstreamExperiment ReadUpstreamExperiment(const std::string& folder, const Catalog& catalog,
                                          const std::string& task = "");

// The kernel upstream takes from an assistant message (accrl/utils/code_utils.py
// extract_code_block, languages ["cpp"]): of the blocks that open with "```cpp" and a line
// break, the last whose code looks like a CUDA kernel with a binding, else the last one;
// trailing white space dropped; "" when there is none or that block is blank. Other tags
// (```cuda, untagged) are not read: upstream calls such a reply an extraction error.
std::string UpstreamKernelOf(const std::string& reply);

// What run.json records of the experiment: the folder, and per trajectory the task, model,
// exit status and every turn with upstream's verdict.
nlohmann::json UpstreamRunInfo(const UpstreamExperiment& e);

// Plays each trajectory's replies back, turn by turn, keyed by the trajectory id the loop
// gives ("<upstream id>-<k>").
class UpstreamReplayProvider : public ChatProvider {
 public:
  explicit UpstreamReplayProvider(const UpstreamExperiment& e);
  ChatReply Complete(const std::vector<ChatMessage>& messages) override;
  ChatReply CompleteFor(const std::string& trajectory_id,
                        const std::vector<ChatMessage>& messages) override;
  std::string Describe() const override;

 private:
  std::string folder_;
  std::map<std::string, std::vector<std::string>> replies_;  // upstream id -> per turn
};

}  // namespace ptxbench
