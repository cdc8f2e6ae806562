#include "record/record.h"

#include <ctime>

#include "common/enum_names.h"
#include "common/json_fields.h"
#include "record/instructions_layer.h"
#include "record/stage_seconds.h"

namespace ptxbench {

std::string UpstreamStatus(Status s, const std::string& /*reason*/) {
  return UpstreamStatusName(s);
}


nlohmann::json SkippedLayer(const std::string& why) {
  return {{"state", "skipped"}, {"reason", why}};
}
nlohmann::json NotReachedLayer(const std::string& why) {
  return {{"state", "not_reached"}, {"reason", why}};
}

nlohmann::json EvaluationRecord::ToJson() const {
  nlohmann::json stages = nlohmann::json::object();
  double total = 0;
  for (const auto& [k, v] : stage_seconds) {
    stages[k] = v;
    if (k != stage_key::kTotal) total += v;
  }
  nlohmann::json j = {{"schema", kEvaluationSchema},
                      {"ptxbench_version", ptxbench_version},
                      {"ptxbench_commit", ptxbench_commit},
                      {"created_at", created_at},
                      {"status", ToString(status)},
                      {"reason", reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(reason)},
                      {"upstream_status", UpstreamStatus(status, reason)},
                      {"message", message},
                      {"task", task},
                      {"arch", arch},
                      {"candidate", candidate},
                      {"toolchain", toolchain},
                      {"screening", screening},
                      {"build", build},
                      {"correctness", correctness},
                      {"memcheck", memcheck},
                      {"instructions", instructions},
                      {"performance", performance},
                      {"stage_seconds", stages}};
  if (!sandbox.is_null()) j["sandbox"] = sandbox;
  if (!evaluation_id.empty()) j["evaluation_id"] = evaluation_id;
  for (const auto& [key, value] : extra.items()) j[key] = value;
  return j;
}

namespace {

// The keys FromJson reads into fields, and those ToJson derives (schema, upstream_status):
// every other top-level key is kept in `extra`.
bool KnownKey(const std::string& key) {
  static const char* const kKnown[] = {
      "schema",       "ptxbench_version", "ptxbench_commit", "created_at",    "status",
      "reason",       "upstream_status",  "message",         "task",          "arch",
      "candidate",    "toolchain",        "screening",       "build",         "correctness",
      "memcheck",     "instructions",     "performance",     "stage_seconds", "sandbox",
      "evaluation_id"};
  for (const char* k : kKnown)
    if (key == k) return true;
  return false;
}

}  // namespace

EvaluationRecord FromJson(const nlohmann::json& j) {
  EvaluationRecord r;
  r.status = Status::kUnknown;
  if (!j.is_object()) return r;
  r.status = StatusFromString(StrField(j, "status"));
  using Text = std::pair<const char*, std::string*>;
  for (auto [key, text] :
       {Text{"reason", &r.reason}, Text{"message", &r.message}, Text{"arch", &r.arch},
        Text{"created_at", &r.created_at}, Text{"ptxbench_version", &r.ptxbench_version},
        Text{"ptxbench_commit", &r.ptxbench_commit}, Text{"evaluation_id", &r.evaluation_id}})
    *text = StrField(j, key);
  using Layer = std::pair<const char*, nlohmann::json*>;
  for (auto [key, layer] : {Layer{"task", &r.task}, Layer{"candidate", &r.candidate},
                            Layer{"toolchain", &r.toolchain}, Layer{"screening", &r.screening},
                            Layer{"build", &r.build}, Layer{"correctness", &r.correctness},
                            Layer{"memcheck", &r.memcheck}, Layer{"instructions", &r.instructions},
                            Layer{"performance", &r.performance}, Layer{"sandbox", &r.sandbox}})
    *layer = FieldOrNull(j, key);
  for (const auto& [stage, seconds] : ObjField(j, "stage_seconds").items())
    if (seconds.is_number()) r.stage_seconds[stage] = seconds.get<double>();
  for (const auto& [key, value] : j.items())
    if (!KnownKey(key)) r.extra[key] = value;
  return r;
}

InstructionsView EvaluationRecord::Instructions() const {
  const InstructionsLayer layer = InstructionsLayerOf(instructions);
  auto text = [](const NullableField<std::string>& field) {
    return field.value_or(std::nullopt).value_or("");
  };
  InstructionsView v;
  v.verification_text = layer.verification.value_or("");
  v.verification = VerificationFromString(v.verification_text);
  v.arch_tag = text(layer.arch_tag);
  // Present but null (not correct): no tag under the paper's rule either.
  if (layer.upstream_arch_tag) v.upstream_arch_tag = text(layer.upstream_arch_tag);
  v.tensor_core_work_fraction = layer.tensor_core_work_fraction.value_or(std::nullopt);
  v.tag_withheld = layer.tag_withheld.value_or(std::vector<std::string>{});
  v.required_families = layer.required_families.value_or(std::vector<std::string>{});
  v.message = layer.message.value_or("");
  return v;
}

PerformanceView EvaluationRecord::Performance() const {
  return {StrField(performance, "state"), StrField(performance, "reason"),
          NumField(performance, "speedup"), NumField(performance, "tflops")};
}

BuildView EvaluationRecord::Build() const { return {StrField(build, "shared_object_sha256")}; }

std::optional<double> EvaluationRecord::TotalSeconds() const {
  auto it = stage_seconds.find(stage_key::kTotal);
  return it == stage_seconds.end() ? std::nullopt : std::optional<double>(it->second);
}

int ExitCodeFor(Status s) {
  if (s == Status::kPassed) return 0;
  if (s == Status::kInfraError || s == Status::kUnknown) return 3;
  return 1;
}

std::string NowUtcIso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace ptxbench
