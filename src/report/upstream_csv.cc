#include "report/upstream_csv.h"

#include <charconv>
#include <set>

#include "common/strings.h"

namespace ptxbench {

using nlohmann::json;

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

namespace {

// Counts are written as integers, like upstream's Python; a missing one is blank.
std::string Count(const json& v) {
  if (!v.is_number()) return "";
  return std::to_string(static_cast<long long>(v.get<double>() + 0.5));
}

double Num(const json& obj, const char* family, const char* key) {
  if (!obj.is_object() || !obj.contains(family) || !obj[family].is_object()) return 0;
  const json& v = obj[family].value(key, json());
  return v.is_number() ? v.get<double>() : 0;
}

// Python's repr of a float: the shortest text that reads back as the same number, with ".0"
// on a whole number.
std::string PythonFloat(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, ec == std::errc() ? end : buf);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::vector<std::string> UpstreamSassColumns(const json& instructions,
                                             const std::string& shared_object_sha256,
                                             const std::string& arch, bool correct,
                                             const std::string& profile_id) {
  std::vector<std::string> c(14);
  if (!correct || !instructions.is_object()) return c;
  const bool hopper = arch == "sm_90a";
  const std::string tag = hopper ? "H" : arch == "sm_100a" ? "B" : "";
  std::string& status = c[13];
  const json st = instructions.value("static", json::object());
  if (instructions.value("verification", "") == "not_requested") {
    status = "not_requested";
    return c;
  }
  if (!st.is_object() || st.value("state", "") != "ran") {
    status = "cubin_inspection_error";
    return c;
  }
  const json totals = st.value("totals", json::object());
  auto total = [&](const char* f) {
    return totals.is_object() && totals.value(f, json()).is_number() ? totals[f].get<double>() : 0;
  };
  const double gmma = total("gmma"), tma = total("tma"),
               tcgen = total("tcgen05") + total("tmem");
  const bool cubin_has = hopper ? gmma + tma > 0 : tcgen > 0;
  c[0] = cubin_has ? tag : "";
  c[1] = Count(gmma);
  c[2] = Count(tma);
  c[3] = Count(tcgen);
  c[4] = shared_object_sha256;
  if (!cubin_has) {
    status = "cubin_sass_absent";
    return c;
  }
  const json dyn = instructions.value("dynamic", json());
  if (!dyn.is_object() || !dyn.contains("families")) {
    // Our rule stopped before the profiler (e.g. a TMA-only GEMM: no GMMA in the SASS), or the
    // profile failed: upstream would have profiled it.
    status = "profile_error";
    return c;
  }
  const json fam = dyn["families"];
  const double gmma_true = Num(fam, "gmma", "thread_executions_true"),
               tma_true = Num(fam, "tma", "thread_executions_true"),
               tcgen_true = Num(fam, "tcgen05", "thread_executions_true") +
                            Num(fam, "tmem", "thread_executions_true");
  // Warp-level executions of the family where any thread ran it with a true predicate.
  auto warps = [&](double threads_true, double w) { return threads_true > 0 ? w : 0.0; };
  const double gmma_w = warps(gmma_true, Num(fam, "gmma", "warp_executions")),
               tma_w = warps(tma_true, Num(fam, "tma", "warp_executions")),
               tcgen_w = warps(Num(fam, "tcgen05", "thread_executions_true"),
                               Num(fam, "tcgen05", "warp_executions")) +
                         warps(Num(fam, "tmem", "thread_executions_true"),
                               Num(fam, "tmem", "warp_executions"));
  const bool executed = hopper ? gmma_w + tma_w > 0 : tcgen_w > 0;
  c[5] = executed ? tag : "";
  c[6] = Count(gmma_w);
  c[7] = Count(tma_w);
  c[8] = Count(tcgen_w);
  c[9] = Count(gmma_true);
  c[10] = Count(tma_true);
  c[11] = Count(tcgen_true);
  c[12] = profile_id;
  status = executed ? "dynamic_present" : "dynamic_not_executed";
  return c;
}

std::string UpstreamTurnsCsv(const Dataset& data) {
  std::set<std::string> runs;
  for (const TrajectoryRow& t : data.trajectories) runs.insert(t.run_id);
  std::string out = CsvRow(UpstreamTurnColumns());
  for (const TrajectoryRow& t : data.trajectories)
    for (const TurnRow& r : t.turns) {
      std::vector<std::string> row = {runs.size() > 1 ? t.run_id + "/" + t.id : t.id,
                                      std::to_string(r.turn - 1), UpstreamCorrectness(r),
                                      r.Correct() && r.speedup ? PythonFloat(*r.speedup) : ""};
      std::vector<std::string> sass = r.upstream_sass;
      sass.resize(14);
      if (!r.Correct()) sass.assign(14, "");
      row.insert(row.end(), sass.begin(), sass.end());
      out += CsvRow(row);
    }
  return out;
}

}  // namespace ptxbench
