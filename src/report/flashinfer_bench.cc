#include "report/flashinfer_bench.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace ptxbench {

using nlohmann::json;

namespace {

std::string Str(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

// The member `key` when it is an object, else an empty one: a record's layers are null when
// they were not reached (a REJECTED record has no toolchain), and value() throws on null.
json Object(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_object()) return json::object();
  return j[key];
}

double Median(const json& stats) {
  return stats.is_object() && stats.value("median", json()).is_number()
             ? stats["median"].get<double>()
             : NAN;
}

}  // namespace

std::string FlashInferStatus(const json& record) {
  const std::string s = Str(record, "status");
  if (s == "PASSED") return "PASSED";
  if (s == "INCORRECT") return "INCORRECT_NUMERICAL";
  if (s == "COMPILE_ERROR" || s == "REJECTED") return "COMPILE_ERROR";
  if (s == "TIMEOUT") return "TIMEOUT";
  if (s == "RUNTIME_ERROR" || s == "MEMORY_ERROR" || s == "RULE_VIOLATION") return "RUNTIME_ERROR";
  return "";
}

json FlashInferTrace(const json& record, const std::vector<std::string>& variable_axes,
                     const std::vector<std::string>& input_names,
                     const std::string& solution_name) {
  const std::string status = FlashInferStatus(record);
  if (status.empty())
    throw InputError("a record with status " + Str(record, "status") +
                     " is no verdict on the solution: no trace");
  const json task = Object(record, "task");
  json axes = json::object();
  const json all_axes = Object(task, "axes");
  for (const std::string& a : variable_axes)
    if (all_axes.contains(a)) axes[a] = all_axes[a];
  json inputs = json::object();
  for (const std::string& n : input_names) inputs[n] = {{"type", "random"}};

  const json toolchain = Object(record, "toolchain");
  const json gpu = Object(toolchain, "gpu");
  json evaluation = {{"status", status},
                     {"environment",
                      {{"hardware", Str(gpu, "name").empty() ? "unknown" : Str(gpu, "name")},
                       {"libs",
                        {{"ptxbench", Str(record, "ptxbench_version")},
                         {"ptxbench_commit", Str(record, "ptxbench_commit")},
                         {"nvcc", Str(toolchain, "nvcc")}}}}},
                     {"timestamp", Str(record, "created_at")},
                     {"log", Str(record, "message")}};

  if (status == "PASSED" || status == "INCORRECT_NUMERICAL") {
    // The worst error over every trial and output, as their harness reports one pair.
    double max_abs = 0, max_rel = 0;
    const json trials = Object(record, "correctness").value("trial_results", json());
    for (const json& t : trials.is_array() ? trials : json::array())
      for (const json& o : t.is_object() ? t.value("outputs", json::array()) : json::array()) {
        if (!o.is_object()) continue;
        if (o.value("max_abs_error", json()).is_number())
          max_abs = std::max(max_abs, o["max_abs_error"].get<double>());
        if (o.value("max_rel_error", json()).is_number())
          max_rel = std::max(max_rel, o["max_rel_error"].get<double>());
      }
    evaluation["correctness"] = {{"max_relative_error", max_rel}, {"max_absolute_error", max_abs}};
  }
  const json perf = Object(record, "performance");
  if (status == "PASSED" && perf.is_object() && perf.value("speedup", json()).is_number()) {
    const double candidate = Median(perf.value("candidate", json()));
    const json baseline = Object(perf, "baseline");
    // The baseline ran before and after the candidate; its latency is the mean of both medians.
    const double before = Median(baseline.value("before", json())),
                 after = Median(baseline.value("after", json()));
    const double reference = std::isnan(after)    ? before
                             : std::isnan(before) ? after
                                                  : (before + after) / 2;
    if (std::isfinite(candidate) && std::isfinite(reference))
      evaluation["performance"] = {{"latency_ms", candidate * 1e3},
                                   {"reference_latency_ms", reference * 1e3},
                                   {"speedup_factor", perf["speedup"].get<double>()}};
  }
  // A task read from a FlashInfer-Bench trace set: their definition name and their workload
  // (uuid, axes under their names, inputs as their file gives them), verbatim.
  const json fib = Object(task, "flashinfer_bench");
  if (fib.is_object() && fib.value("workload", json()).is_object())
    return {{"definition", Str(fib, "definition")},
            {"workload", fib["workload"]},
            {"solution", solution_name},
            {"evaluation", evaluation}};
  return {{"definition", Str(task, "definition")},
          {"workload", {{"uuid", Str(task, "workload_id")}, {"axes", axes}, {"inputs", inputs}}},
          {"solution", solution_name},
          {"evaluation", evaluation}};
}

FlashInferSolution ReadFlashInferSolution(const json& solution) {
  if (!solution.is_object()) throw InputError("a FlashInfer-Bench solution is a JSON object");
  FlashInferSolution s;
  s.name = Str(solution, "name");
  s.definition = Str(solution, "definition");
  const json spec = solution.value("spec", json());
  if (!spec.is_object()) throw InputError("the solution has no \"spec\" object");
  if (Str(spec, "language") != "cuda")
    throw InputError("the solution's spec.language is \"" + Str(spec, "language") +
                     "\": only cuda solutions run here");
  s.binding = Str(spec, "binding");
  const std::string entry = Str(spec, "entry_point");
  const size_t sep = entry.find("::");
  if (sep == std::string::npos || entry.substr(sep + 2) != "run")
    throw InputError("the solution's spec.entry_point \"" + entry +
                     "\" is not FILE::run (the entry point here is always run)");
  s.entry_file = entry.substr(0, sep);
  const json sources = solution.value("sources", json());
  for (const json& f : sources.is_array() ? sources : json::array())
    if (Str(f, "path") == s.entry_file && f.contains("content") && f["content"].is_string()) {
      s.source = f["content"].get<std::string>();
      if (sources.size() > 1)
        throw InputError("the solution has " + std::to_string(sources.size()) +
                         " source files: a candidate here is one self-contained file");
      return s;
    }
  throw InputError("the solution has no source \"" + s.entry_file + "\" (its entry point's file)");
}

}  // namespace ptxbench
