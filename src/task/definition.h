// Task definitions and workloads, loaded from the data files under tasks/.
//
//   tasks/definitions/NAME.json   the definition: family, description, constant axes,
//                                 variable axes, tolerance, FLOP formula, required
//                                 instruction families per arch, baseline name
//   tasks/workloads/NAME.jsonl    one workload per line: {"id", "axes", "headline"?}
//
// Upstream workload identifiers are kept as ids so results join with the published ones.
//
// A tasks folder may instead be a FlashInfer-Bench trace set (definitions/**.json with op_type,
// workloads/**.jsonl): task/flashinfer_set.h reads it into the same Definitions.
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

// Where a definition read from a FlashInfer-Bench trace set came from, so that a record and a
// Trace name their definition, their axes and their workload exactly as their files do.
struct FlashInferLink {
  std::string trace_set;  // the folder
  std::string file;       // the definition's file
  std::string op_type;
  std::map<std::string, std::string> axis_names;  // our family's axis -> theirs
  std::vector<std::string> tensor_names;          // theirs, in the family's Tensors() order
  // Scalar inputs (shape null) whose value the family implies (the attention scale 1/sqrt(D));
  // our native ABI has no parameter for them.
  std::vector<std::string> scalar_inputs;
  std::map<std::string, nlohmann::json> workloads;  // uuid -> their "workload" object, verbatim
};

// A workload of the definition's source that is not judged here, and why.
struct RefusedWorkload {
  std::string id;
  std::string reason;
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
  std::optional<FlashInferLink> flashinfer;        // set when read from a FlashInfer-Bench set
  std::vector<RefusedWorkload> refused_workloads;  // FlashInfer-Bench only

  // All axes of a workload: the constant ones and the workload's own.
  Axes FullAxes(const Workload& w) const;
  double Flops(const Workload& w) const;
  // The headline workload, else the one with the most FLOPs.
  const Workload& DefaultWorkload() const;
  // Resolves "--workload" text: an id, or axis assignments "M=8192" (comma or semicolon
  // separated) that must match exactly one defined workload. Throws UsageError naming the
  // problem: malformed value, unknown axis, a shape the task does not define, or a refused
  // workload's id (with why it was refused).
  const Workload& FindWorkload(const std::string& spec) const;
};

nlohmann::json ToJson(const Definition& d, bool with_workloads);

// A definition of a FlashInfer-Bench trace set that maps onto no family judged here.
struct LeftOutDefinition {
  std::string name;  // the file's stem when the name itself is unusable
  std::string file;
  std::string op_type;
  std::string reason;
};

// Every definition under a tasks folder, sorted by name.
class Catalog {
 public:
  // Reads every definition and its workloads; throws InputError naming the bad file. The folder
  // is either ours (definitions/NAME.json with "family", workloads/NAME.jsonl) or a
  // FlashInfer-Bench trace set (definitions with "op_type"); a folder mixing both is refused.
  static Catalog Load(const std::string& tasks_dir);
  // The tasks folder: $PTXBENCH_TASKS, else the source tree's tasks/.
  static std::string DefaultDir();

  const std::vector<Definition>& definitions() const { return definitions_; }
  // FlashInfer-Bench definitions that were not taken, sorted by name (empty for ours).
  const std::vector<LeftOutDefinition>& left_out() const { return left_out_; }
  bool is_flashinfer_set() const { return flashinfer_set_; }
  // Throws UsageError "unknown task X (did you mean Y?)", or, for a left-out definition, why
  // it is not judged here.
  const Definition& Find(const std::string& name) const;

 private:
  std::vector<Definition> definitions_;
  std::vector<LeftOutDefinition> left_out_;
  bool flashinfer_set_ = false;
};

// The closest of `candidates` to `word` by edit distance, when close enough to suggest.
std::optional<std::string> DidYouMean(const std::string& word,
                                      const std::vector<std::string>& candidates);

}  // namespace ptxbench
