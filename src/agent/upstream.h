// Upstream PTXBench's agent output, read so that its trajectories can be judged again by our
// layers (`ptxbench run --upstream FOLDER`, `ptxbench import FOLDER`). An experiment folder:
//
//   trajectories/exp_NNN.json        mini-swe-agent-1.1: info, messages (system, task, then
//                                    assistant/user pairs; a user observation's "extra" has
//                                    upstream's verdict: returncode, all_passed, min_speedup, ...)
//   kernels/exp_NNN/kernel_t{N}.cu   the kernel of turn N, as upstream's analysis wrote it
//
// Turn N is upstream's N-th assistant message; its verdict is the extra of the observation
// that follows it. We replay the assistant messages verbatim, each followed by its kernel in a
// fenced block (upstream's agent writes files with shell commands, so its replies need not hold
// the kernel in a form our extractor reads); the feedback the replayed trajectory shows is
// ours. Upstream's own verdicts are kept beside ours in run.json.
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
  int turn = 0;            // ours: 1, 2, ... in the order of upstream's kernel files
  int upstream_turn = 0;   // N of kernel_t{N}.cu
  std::string kernel;      // path of kernel_t{N}.cu
  std::string reply;       // the assistant message (empty when the trajectory has none for N)
  nlohmann::json verdict;  // upstream's observation extra for that message; null when none
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
// definition name found in its task message. A trajectory that is malformed, names no task or
// has no kernels is left out with a problem; throws InputError only when nothing is usable.
UpstreamExperiment ReadUpstreamExperiment(const std::string& folder, const Catalog& catalog,
                                          const std::string& task = "");

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
