#include "record/instructions_layer.h"

#include "record/field_readers.h"

namespace ptxbench {

using nlohmann::json;
using namespace record_fields;

namespace {

constexpr const char* kUnavailable = "unavailable";  // a run that could not name its kernels

template <typename T>
void SetNullable(json& j, const char* key, const NullableField<T>& field) {
  if (field) j[key] = *field ? json(**field) : json(nullptr);
}

NullableField<std::string> NullableString(const json& j, const char* key) {
  const json* f = FindField(j, key);
  if (!f) return std::nullopt;
  if (!f->is_string()) return WrittenNull<std::string>();
  return f->get<std::string>();
}

NullableField<double> NullableNumber(const json& j, const char* key) {
  const json* f = FindField(j, key);
  if (!f) return std::nullopt;
  if (!f->is_number()) return WrittenNull<double>();
  return f->get<double>();
}

json ToJson(const ProfileRun& p) {
  json j;
  PTXBENCH_JSON_SET_FIELDS(j, p, tool, kernels, bad_rows, exit, seed);
  if (p.calls) j["calls"] = *p.calls;
  return j;
}

ProfileRun ProfileRunOf(const json& j) {
  ProfileRun p;
  PTXBENCH_JSON_GET_FIELDS(StrField, j, p, tool, exit);
  if (NumField(j, "calls")) p.calls = IntField(j, "calls");
  PTXBENCH_JSON_GET_FIELDS(UnsignedField, j, p, kernels, bad_rows, seed);
  return p;
}

json KernelsJson(const std::optional<std::set<std::string>>& names) {
  return names ? json(*names) : json(kUnavailable);
}

std::optional<std::set<std::string>> KernelsOf(const json& kernels, const char* key) {
  std::optional<std::vector<std::string>> names = OptionalStrings(kernels, key);
  if (!names) return std::nullopt;
  return std::set<std::string>(names->begin(), names->end());
}

json ToJson(const CrossCheck& c) {
  json j;
  if (c.memcheck_output) j["memcheck_output"] = *c.memcheck_output;
  if (c.profile_output) j["profile_output"] = *c.profile_output;
  const CrossCheck::Kernels& k = c.kernels;
  j["kernels"] = {{"trials", KernelsJson(k.trials)},
                  {"memcheck", KernelsJson(k.memcheck)},
                  {"timed", KernelsJson(k.timed)},
                  {"profiled", KernelsJson(k.profiled)}};
  return j;
}

CrossCheck CrossCheckOf(const json& j) {
  CrossCheck c;
  c.memcheck_output = OptionalString(j, "memcheck_output");
  c.profile_output = OptionalString(j, "profile_output");
  const json& kernels = ObjField(j, "kernels");
  PTXBENCH_JSON_GET_FIELDS(KernelsOf, kernels, c.kernels, trials, memcheck, timed, profiled);
  return c;
}

}  // namespace

json ToJson(const InstructionsLayer& l) {
  json j = json::object();
  if (!l.static_sass.is_null()) j["static"] = l.static_sass;
  if (l.static_probe)
    j["static_probe"] = {{"state", l.static_probe->state}, {"message", l.static_probe->message}};
  if (l.required_families) j["required_families"] = *l.required_families;
  if (l.verification) j["verification"] = *l.verification;
  SetNullable(j, "arch_tag", l.arch_tag);
  SetNullable(j, "upstream_arch_tag", l.upstream_arch_tag);
  SetNullable(j, "tensor_core_work_fraction", l.tensor_core_work_fraction);
  if (l.tag_withheld) j["tag_withheld"] = *l.tag_withheld;
  if (l.message) j["message"] = *l.message;
  if (l.profile) j["profile"] = ToJson(*l.profile);
  if (!l.dynamic.is_null()) j["dynamic"] = l.dynamic;
  if (l.cross_check) j["cross_check"] = ToJson(*l.cross_check);
  return j;
}

InstructionsLayer InstructionsLayerOf(const json& j) {
  InstructionsLayer l;
  l.static_sass = ObjectOrNull(j, "static");
  if (const json* probe = FindField(j, "static_probe"); probe && probe->is_object())
    l.static_probe = StaticProbe{StrField(*probe, "state"), StrField(*probe, "message")};
  l.required_families = OptionalStrings(j, "required_families");
  l.verification = OptionalString(j, "verification");
  l.arch_tag = NullableString(j, "arch_tag");
  l.upstream_arch_tag = NullableString(j, "upstream_arch_tag");
  l.tensor_core_work_fraction = NullableNumber(j, "tensor_core_work_fraction");
  l.tag_withheld = OptionalStrings(j, "tag_withheld");
  l.message = OptionalString(j, "message");
  if (const json* profile = FindField(j, "profile"); profile && profile->is_object())
    l.profile = ProfileRunOf(*profile);
  l.dynamic = ObjectOrNull(j, "dynamic");
  if (const json* cross = FindField(j, "cross_check"); cross && cross->is_object())
    l.cross_check = CrossCheckOf(*cross);
  return l;
}

}  // namespace ptxbench
