#include "fixit/keep.h"

#include "common/error.h"
#include "common/strings.h"
#include "record/layers.h"
#include "record/outcome.h"

namespace ptxbench {

using nlohmann::json;

std::string RequiredArchTag(const std::string& arch) {
  std::string tag = CreditTag(ArchFromString(arch));
  if (tag.empty()) throw UsageError("no architecture credit is defined for " + arch);
  return tag;
}

RepairJudgement JudgeRepair(const json& record, const std::string& arch,
                            std::optional<double> min_speedup) {
  return JudgeRepair(FromJson(record), arch, min_speedup);
}

RepairJudgement JudgeRepair(const EvaluationRecord& record, const std::string& arch,
                            std::optional<double> min_speedup) {
  const InstructionsView ins = record.Instructions();
  const PerformanceView perf = record.Performance();
  RepairJudgement j;
  j.status = record.status == Status::kUnknown ? "" : ToString(record.status);
  j.verification = ins.verification_text;
  j.arch_tag = ins.arch_tag;
  j.speedup = perf.speedup;
  j.tflops = perf.tflops;
  if (record.status != Status::kPassed) {
    j.reason = "not correct (" + (j.status.empty() ? std::string("no status") : j.status) + ")";
    return j;
  }
  const std::string tag = RequiredArchTag(arch);
  const TurnVerdict verdict = JudgeTurn(record, ArchFromString(arch));
  if (!verdict.Verified()) {
    j.reason = "not verified (" + (j.verification.empty() ? "no verification" : j.verification) +
               (j.arch_tag.empty() ? "" : ", tag " + j.arch_tag) + "; needs dynamic_present, " +
               tag + ")";
    return j;
  }
  if (min_speedup) {
    if (!j.speedup) {
      j.reason = "not timed (performance " + (perf.state.empty() ? "absent" : perf.state) +
                 (perf.reason.empty() ? "" : ": " + perf.reason) +
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

std::map<std::string, std::string> LayerStates(const json& json_record) {
  const EvaluationRecord record = FromJson(json_record);
  std::map<std::string, std::string> out;
  for (const auto& [name, layer] : LayerStatusesOf(record)) {
    if (!layer.present)
      out[name] = "absent";
    else
      out[name] = layer.reason.empty() || layer.state == "ran" ? layer.state
                                                               : layer.state + ": " + layer.reason;
  }
  return out;
}

}  // namespace ptxbench
