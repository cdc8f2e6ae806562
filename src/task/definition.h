// Task definitions and workloads, loaded from the data files under tasks/.
//
//   tasks/definitions/NAME.json   the definition: family, description, constant axes,
//                                 variable axes, tolerance, FLOP formula, required
//                                 instruction families per arch, baseline name
//   tasks/workloads/NAME.jsonl    one workload per line: {"id", "axes", "headline"?}
//
// Upstream workload identifiers are kept as ids so results join with the published ones.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "task/expression.h"

namespace ptxbench {

enum class ToleranceRule {
  kPublished,  // fails iff |x-y| > atol AND |x-y|/(|y|+1e-8) > rtol (upstream PTXBench)
  kAllclose,   // fails iff |x-y| > atol + rtol*|y|
};

struct Tolerance {
  ToleranceRule rule = ToleranceRule::kPublished;
  double atol = 1e-2;
  double rtol = 1e-2;
};
std::string ToString(ToleranceRule rule);
ToleranceRule ParseToleranceRule(const std::string& text);  // throws UsageError

struct Workload {
  std::string id;  // upstream workload uuid
  Axes axes;       // values of the variable axes only
  bool headline = false;
};

struct Definition {
  std::string name;
  std::string family;
  std::string description;
  Axes constant_axes;
  std::vector<std::string> variable_axes;
  Tolerance tolerance;
  std::string flops_formula;
  std::map<std::string, std::vector<std::string>> required_families;  // arch -> families
  std::string baseline;
  std::vector<Workload> workloads;

  // All axes of a workload: the constant ones and the workload's own.
  Axes FullAxes(const Workload& w) const;
  double Flops(const Workload& w) const;
  // The headline workload, else the one with the most FLOPs.
  const Workload& DefaultWorkload() const;
  // Resolves "--workload" text: an id, or axis assignments "M=8192" (comma or semicolon
  // separated) that must match exactly one defined workload. Throws UsageError naming the
  // problem: malformed value, unknown axis, or a shape the task does not define.
  const Workload& FindWorkload(const std::string& spec) const;
};

nlohmann::json ToJson(const Definition& d, bool with_workloads);

// Every definition under a tasks folder, sorted by name.
class Catalog {
 public:
  // Reads every definition and its workloads; throws InputError naming the bad file.
  static Catalog Load(const std::string& tasks_dir);
  // The tasks folder: $PTXBENCH_TASKS, else the source tree's tasks/.
  static std::string DefaultDir();

  const std::vector<Definition>& definitions() const { return definitions_; }
  // Throws UsageError "unknown task X (did you mean Y?)".
  const Definition& Find(const std::string& name) const;

 private:
  std::vector<Definition> definitions_;
};

// The closest of `candidates` to `word` by edit distance, when close enough to suggest.
std::optional<std::string> DidYouMean(const std::string& word,
                                      const std::vector<std::string>& candidates);

}  // namespace ptxbench
