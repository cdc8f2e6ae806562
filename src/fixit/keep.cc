#include "fixit/keep.h"

#include "common/error.h"
#include "common/strings.h"

namespace ptxbench {

using nlohmann::json;

namespace {

std::string Str(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

}  // namespace

std::string RequiredArchTag(const std::string& arch) {
  if (arch == "sm_90a") return "H";
  if (arch == "sm_100a") return "B";
  throw UsageError("no architecture credit is defined for " + arch);
}

RepairJudgement JudgeRepair(const json& record, const std::string& arch,
                            std::optional<double> min_speedup) {
  RepairJudgement j;
  j.status = Str(record, "status");
  const json ins = record.is_object() ? record.value("instructions", json::object()) : json();
  j.verification = Str(ins, "verification");
  j.arch_tag = Str(ins, "arch_tag");
  const json perf = record.is_object() ? record.value("performance", json::object()) : json();
  if (perf.is_object() && perf.contains("speedup") && perf["speedup"].is_number())
    j.speedup = perf["speedup"].get<double>();
  if (perf.is_object() && perf.contains("tflops") && perf["tflops"].is_number())
    j.tflops = perf["tflops"].get<double>();
  if (j.status != "PASSED") {
    j.reason = "not correct (" + (j.status.empty() ? std::string("no status") : j.status) + ")";
    return j;
  }
  std::string tag = RequiredArchTag(arch);
  if (j.verification != "dynamic_present" || j.arch_tag != tag) {
    j.reason = "not verified (" + (j.verification.empty() ? "no verification" : j.verification) +
               (j.arch_tag.empty() ? "" : ", tag " + j.arch_tag) + "; needs dynamic_present, " +
               tag + ")";
    return j;
  }
  if (min_speedup) {
    if (!j.speedup) {
      std::string why = Str(perf, "state");
      j.reason = "not timed (performance " + (why.empty() ? "absent" : why) +
                 (Str(perf, "reason").empty() ? "" : ": " + Str(perf, "reason")) +
                 "), so --min-speedup cannot be checked";
      return j;
    }
    if (*j.speedup < *min_speedup) {
      j.reason = "slower than --min-speedup " + FormatNumber("%.2f", *min_speedup) + " (" +
                 FormatNumber("%.3f", *j.speedup) + ")";
      return j;
    }
  }
  j.kept = true;
  j.reason = "kept";
  return j;
}

std::map<std::string, std::string> LayerStates(const json& record) {
  std::map<std::string, std::string> out;
  for (const char* layer :
       {"screening", "build", "correctness", "memcheck", "instructions", "performance"}) {
    const json l = record.is_object() ? record.value(layer, json()) : json();
    if (!l.is_object() || l.empty()) {
      out[layer] = "absent";
      continue;
    }
    std::string state = Str(l, "state");
    if (state.empty()) state = "ran";  // layers that always run carry no state field
    std::string reason = Str(l, "reason");
    out[layer] = reason.empty() || state == "ran" ? state : state + ": " + reason;
  }
  return out;
}

}  // namespace ptxbench
