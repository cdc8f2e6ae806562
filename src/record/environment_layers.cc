#include "record/environment_layers.h"

#include "record/field_readers.h"

namespace ptxbench {

using nlohmann::json;
using namespace record_fields;

json ToJson(const ToolchainLayer& t) {
  json j = json::object();
  if (t.nvcc) j["nvcc"] = *t.nvcc;
  if (!t.gpu.is_null()) j["gpu"] = t.gpu;
  return j;
}

ToolchainLayer ToolchainLayerOf(const EvaluationRecord& record) {
  return {OptionalString(record.toolchain, "nvcc"), ObjectOrNull(record.toolchain, "gpu")};
}

std::string ToolchainLayer::GpuId() const {
  if (std::optional<std::string> uuid = OptionalString(gpu, "uuid")) return *uuid;
  return StrField(gpu, "pci_bus_id");
}

ToolchainDetail ToolchainDetailOf(const EvaluationRecord& record) {
  const ToolchainLayer layer = ToolchainLayerOf(record);
  const json& tc = record.toolchain;
  return {StrField(layer.gpu, "name"), layer.nvcc.value_or(""), tc.is_object() && !tc.empty()};
}

json ToJson(const BuildLayer& b) {
  json j = b.compiler.is_object() ? b.compiler : json::object();
  if (b.needed) j["needed"] = *b.needed;
  return j;
}

BuildLayer BuildLayerOf(const EvaluationRecord& record) {
  BuildLayer b;
  if (record.build.is_object()) b.compiler = record.build;
  b.compiler.erase("needed");
  b.needed = OptionalStrings(record.build, "needed");
  return b;
}

json ToJson(const SandboxLayer& s) {
  json j = json::object();
  using Report = std::pair<const char*, const json*>;
  for (const auto& [key, report] :
       {Report{"probe", &s.probe}, Report{"candidate_child", &s.candidate_child},
        Report{"inside", &s.inside}})
    if (!report->is_null()) j[key] = *report;
  if (s.health_probe) {
    j["health_probe"] = {{"healthy", s.health_probe->healthy}};
    if (!s.health_probe->healthy) j["health_probe"]["why"] = s.health_probe->why;
  }
  if (s.gpu_lock) j["gpu_lock"] = *s.gpu_lock;
  if (s.record_strings_cut) j["record_strings_cut"] = *s.record_strings_cut;
  return j;
}

SandboxLayer SandboxLayerOf(const EvaluationRecord& record) {
  const json& j = record.sandbox;
  SandboxLayer s;
  PTXBENCH_JSON_GET_FIELDS(ObjectOrNull, j, s, probe, candidate_child, inside);
  if (const json* h = FindField(j, "health_probe"); h && h->is_object())
    s.health_probe = {BoolField(*h, "healthy").value_or(false), StrField(*h, "why")};
  s.gpu_lock = OptionalString(j, "gpu_lock");
  if (const json* cut = FindField(j, "record_strings_cut"); cut && cut->is_number_unsigned())
    s.record_strings_cut = cut->get<uint64_t>();
  return s;
}

}  // namespace ptxbench
