#include "record/upstream_sass.h"

#include "common/json_fields.h"

namespace ptxbench {

using nlohmann::json;

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

}  // namespace

std::vector<std::string> UpstreamSassColumns(const EvaluationRecord& record,
                                             const std::string& arch, bool correct,
                                             const std::string& profile_id) {
  std::vector<std::string> c(14);
  const json& instructions = record.instructions;
  if (!correct || !instructions.is_object()) return c;
  const Arch credited = ArchFromString(arch);
  const bool hopper = credited == Arch::kSm90a;
  const std::string tag = CreditTag(credited);
  const std::string shared_object_sha256 = record.Build().shared_object_sha256;
  std::string& status = c[13];
  const json st = instructions.value("static", json::object());
  if (VerificationFromString(StrField(instructions, "verification")) ==
      Verification::kNotRequested) {
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
  const double gmma = total("gmma"), tma = total("tma"), tcgen = total("tcgen05") + total("tmem");
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

}  // namespace ptxbench
