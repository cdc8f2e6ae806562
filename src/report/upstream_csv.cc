#include "report/upstream_csv.h"

#include <charconv>
#include <set>

#include "common/strings.h"

namespace ptxbench {

using nlohmann::json;

namespace {

// Python's repr of a float: the shortest text that reads back as the same number, with ".0"
// on a whole number.
std::string PythonFloat(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, ec == std::errc() ? end : buf);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// A run that replayed an upstream experiment (`run --upstream`, `import`; cmd_run.cc names its
// provider so): its trajectories are upstream's, each played once as "<upstream id>-0".
bool IsUpstreamReplay(const TrajectoryRow& t) { return t.provider == "upstream-replay"; }

// Upstream's trajectory_id is its trajectory file's name: "exp_000" for a replayed upstream
// trajectory (not our loop's "exp_000-0"), our own id for our runs.
std::string UpstreamTrajectoryId(const TrajectoryRow& t) {
  size_t dash = t.id.rfind('-');
  return IsUpstreamReplay(t) && dash != std::string::npos ? t.id.substr(0, dash) : t.id;
}

// Whether the kernel compiled and ran. Upstream's test.py writes traces for every such kernel,
// and its agent then sets the observation's min_speedup (0.0 unless all passed); a kernel that
// never ran (no code, screened, not compiled) has no min_speedup.
bool ReachedEvaluation(const TurnRow& r) {
  return r.Correct() || r.status == "INCORRECT" || r.status == "RUNTIME_ERROR" ||
         r.status == "TIMEOUT" || r.status == "MEMORY_ERROR";
}

// Upstream's speedup cell: the measured speedup; else, for a kernel that ran, the
// observation's min_speedup its exporter falls back on, 0.0; else empty.
std::string UpstreamSpeedup(const TurnRow& r) {
  if (r.Correct() && r.speedup) return PythonFloat(*r.speedup);
  return ReachedEvaluation(r) ? "0.0" : "";
}

}  // namespace

const std::vector<std::string>& UpstreamTurnColumns() {
  static const std::vector<std::string> columns = {
      "trajectory_id",
      "turn",
      "correctness",
      "speedup",
      "cubin_sass_arch_tag",
      "cubin_gmma_instruction_count",
      "cubin_tma_instruction_count",
      "cubin_tcgen_instruction_count",
      "cubin_container_sha256",
      "sass_arch_tag",
      "sass_gmma_count",
      "sass_tma_count",
      "sass_tcgen_count",
      "sass_gmma_thread_inst_executed_true",
      "sass_tma_thread_inst_executed_true",
      "sass_tcgen_thread_inst_executed_true",
      "sass_profile_task_id",
      "sass_verification_status"};
  return columns;
}

std::string UpstreamCorrectness(const TurnRow& r) {
  if (r.Correct()) return "Correct";
  if (r.outcome == "extraction") return "Extraction error";
  if (r.status == "INCORRECT") return "Numerical error";
  if (r.status == "COMPILE_ERROR") return "Compilation error";
  if (r.status == "TIMEOUT") return "Kernel Execution Timeout";
  if (r.status == "RUNTIME_ERROR" || r.status == "MEMORY_ERROR") return "Runtime error";
  // REJECTED (upstream screens nothing), RULE_VIOLATION, a model error: upstream's catch-all.
  return "Other error";
}

std::string UpstreamTurnsCsv(const Dataset& data) {
  std::set<std::string> runs;
  for (const TrajectoryRow& t : data.trajectories) runs.insert(t.run_id);
  std::string out = CsvRow(UpstreamTurnColumns());
  for (const TrajectoryRow& t : data.trajectories)
    for (const TurnRow& r : t.turns) {
      std::string id = UpstreamTrajectoryId(t);
      std::vector<std::string> row = {runs.size() > 1 ? t.run_id + "/" + id : id,
                                      std::to_string(r.turn - 1), UpstreamCorrectness(r),
                                      UpstreamSpeedup(r)};
      std::vector<std::string> sass = r.upstream_sass;
      sass.resize(14);
      if (!r.Correct()) sass.assign(14, "");
      row.insert(row.end(), sass.begin(), sass.end());
      out += CsvRow(row);
    }
  return out;
}

}  // namespace ptxbench
