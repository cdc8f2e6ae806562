#include "report/flashinfer_bench.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "common/json_fields.h"
#include "common/source_policy.h"
#include "common/strings.h"
#include "record/layers.h"
#include "record/record.h"

namespace ptxbench {

using nlohmann::json;

namespace {

double MedianOr(const TimeDistribution& t) { return t.median.value_or(NAN); }

}  // namespace

std::string FlashInferStatus(const json& record) {
  return FlashInferStatusName(FromJson(record).status);
}

json FlashInferTrace(const json& json_record, const std::vector<std::string>& variable_axes,
                     const std::vector<std::string>& input_names,
                     const std::string& solution_name) {
  const EvaluationRecord record = FromJson(json_record);
  const std::string status = FlashInferStatusName(record.status);
  if (status.empty())
    throw InputError("a record with status " + ToString(record.status) +
                     " is no verdict on the solution: no trace");
  const TaskDetail task = TaskDetailOf(record);
  json axes = json::object();
  for (const std::string& a : variable_axes)
    if (!task.Axis(a).is_null()) axes[a] = task.Axis(a);
  json inputs = json::object();
  for (const std::string& n : input_names) inputs[n] = {{"type", "random"}};

  const ToolchainDetail toolchain = ToolchainDetailOf(record);
  json evaluation = {{"status", status},
                     {"environment",
                      {{"hardware", toolchain.gpu_name.empty() ? "unknown" : toolchain.gpu_name},
                       {"libs",
                        {{"ptxbench", record.ptxbench_version},
                         {"ptxbench_commit", record.ptxbench_commit},
                         {"nvcc", toolchain.nvcc}}}}},
                     {"timestamp", record.created_at},
                     {"log", record.message}};

  if (status == "PASSED" || status == "INCORRECT_NUMERICAL") {
    // The worst error over every trial and output, as their harness reports one pair.
    double max_abs = 0, max_rel = 0;
    for (const Trial& t : CorrectnessDetailOf(record).trials)
      for (const OutputCheck& o : t.outputs) {
        max_abs = std::max(max_abs, o.max_abs_error);
        max_rel = std::max(max_rel, o.max_rel_error);
      }
    evaluation["correctness"] = {{"max_relative_error", max_rel}, {"max_absolute_error", max_abs}};
  }
  const std::optional<double> speedup = record.Performance().speedup;
  if (status == "PASSED" && speedup) {
    const PerformanceDetail perf = PerformanceDetailOf(record);
    const double candidate = MedianOr(perf.candidate);
    // The baseline ran before and after the candidate; its latency is the mean of both medians.
    const double before = MedianOr(perf.baseline.before), after = MedianOr(perf.baseline.after);
    const double reference = std::isnan(after)    ? before
                             : std::isnan(before) ? after
                                                  : (before + after) / 2;
    if (std::isfinite(candidate) && std::isfinite(reference))
      evaluation["performance"] = {{"latency_ms", candidate * 1e3},
                                   {"reference_latency_ms", reference * 1e3},
                                   {"speedup_factor", *speedup}};
  }
  // A task read from a FlashInfer-Bench trace set: their definition name and their workload
  // (uuid, axes under their names, inputs as their file gives them), verbatim.
  if (task.flashinfer_workload.is_object())
    return {{"definition", task.flashinfer_definition},
            {"workload", task.flashinfer_workload},
            {"solution", solution_name},
            {"evaluation", evaluation}};
  return {{"definition", task.definition},
          {"workload", {{"uuid", task.workload_id}, {"axes", axes}, {"inputs", inputs}}},
          {"solution", solution_name},
          {"evaluation", evaluation}};
}

FlashInferSolution ReadFlashInferSolution(const json& solution) {
  if (!solution.is_object()) throw InputError("a FlashInfer-Bench solution is a JSON object");
  FlashInferSolution s;
  s.name = StrField(solution, "name");
  s.definition = StrField(solution, "definition");
  const json spec = solution.value("spec", json());
  if (!spec.is_object()) throw InputError("the solution has no \"spec\" object");
  if (StrField(spec, "language") != "cuda")
    throw InputError("the solution's spec.language is \"" + StrField(spec, "language") +
                     "\": only cuda solutions run here");
  // The binding says how the entry point is loaded. TVM-FFI's (upstream PTXBench's) and none
  // (ptxbench's own C entry point) load here; any other (a torch extension) cannot, and is
  // refused by name rather than loaded as if it were one of these.
  s.binding = StrField(spec, "binding");
  if (!s.binding.empty() && s.binding != "tvm-ffi")
    throw InputError("the solution's spec.binding is \"" + s.binding +
                     "\": solutions load here through TVM-FFI (\"tvm-ffi\") or ptxbench's own "
                     "entry point (no binding), not through \"" +
                     s.binding + "\"");
  const std::string entry = StrField(spec, "entry_point");
  const size_t sep = entry.find("::");
  if (sep == std::string::npos || entry.substr(sep + 2) != "run")
    throw InputError("the solution's spec.entry_point \"" + entry +
                     "\" is not FILE::run (the entry point here is always run)");
  s.entry_file = entry.substr(0, sep);
  const json sources = solution.value("sources", json());
  for (const json& f : sources.is_array() ? sources : json::array())
    if (StrField(f, "path") == s.entry_file && f.contains("content") && f["content"].is_string()) {
      s.source = f["content"].get<std::string>();
      if (sources.size() > 1)
        throw InputError("the solution has " + std::to_string(sources.size()) +
                         " source files: a candidate here is one self-contained file");
      return s;
    }
  throw InputError("the solution has no source \"" + s.entry_file + "\" (its entry point's file)");
}

CandidateFile ReadCandidateFile(const std::string& path, const std::string& task) {
  CandidateFile f;
  f.source = ReadSourceFile(path);
  if (!EndsWith(path, ".json")) return f;
  json parsed = json::parse(f.source, nullptr, false);
  if (parsed.is_discarded())
    throw InputError(path + ": not JSON (a .json candidate is a FlashInfer-Bench solution)");
  try {
    f.solution = ReadFlashInferSolution(parsed);
  } catch (const Error& e) {
    throw Error(e.kind(), path + ": " + e.what());
  }
  if (!task.empty() && !f.solution->definition.empty() && f.solution->definition != task)
    throw InputError(path + ": the solution is for " + f.solution->definition + ", not --task " +
                     task);
  if (auto problem = SourceFileProblem(f.solution->source))
    throw InputError(path + ": its " + f.solution->entry_file + ": " + *problem);
  f.source = f.solution->source;
  return f;
}

}  // namespace ptxbench
