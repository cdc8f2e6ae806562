#include "record/subject.h"

#include "record/field_readers.h"

namespace ptxbench {

using nlohmann::json;
using namespace record_fields;

TaskDetail TaskDetailOf(const EvaluationRecord& record) {
  const json& task = record.task;
  TaskDetail t;
  PTXBENCH_JSON_GET_FIELDS(StrField, task, t, definition, family, workload_id);
  t.flops = NumField(task, "flops").value_or(0);
  const json& fib = FieldOrNull(task, "flashinfer_bench");
  t.from_flashinfer = fib.is_object();
  t.flashinfer_trace_set = StrField(fib, "trace_set");
  t.flashinfer_file = StrField(fib, "file");
  t.flashinfer_definition = StrField(fib, "definition");
  t.flashinfer_workload = ObjectOrNull(fib, "workload");
  for (const auto& [name, value] : ObjField(task, "axes").items()) t.axes.emplace_back(name, value);
  t.required_families =
      OptionalStrings(task, "required_families").value_or(std::vector<std::string>{});
  return t;
}

json ToJson(const TaskDetail& t) {
  json j;
  PTXBENCH_JSON_SET_FIELDS(j, t, definition, family, workload_id, flops, required_families);
  j["axes"] = json::object();
  for (const auto& [name, value] : t.axes) j["axes"][name] = value;
  if (t.from_flashinfer)
    j["flashinfer_bench"] = {{"trace_set", t.flashinfer_trace_set},
                             {"file", t.flashinfer_file},
                             {"definition", t.flashinfer_definition},
                             {"workload", t.flashinfer_workload}};
  return j;
}

const json& TaskDetail::Axis(const std::string& name) const {
  static const json kNull;
  for (const auto& [axis, value] : axes)
    if (axis == name) return value;
  return kNull;
}

CandidateDetail CandidateDetailOf(const EvaluationRecord& record) {
  CandidateDetail c;
  PTXBENCH_JSON_GET_FIELDS(StrField, record.candidate, c, sha256, abi, path);
  c.bytes = UnsignedField(record.candidate, "bytes");
  if (const json* sol = record.candidate.is_object() && record.candidate.contains("solution")
                            ? &record.candidate["solution"]
                            : nullptr;
      sol && sol->is_object()) {
    CandidateDetail::Solution s;
    PTXBENCH_JSON_GET_FIELDS(StrField, *sol, s, file, name, binding, entry_file);
    c.solution = s;
  }
  return c;
}

json ToJson(const CandidateDetail& c) {
  json j;
  PTXBENCH_JSON_SET_FIELDS(j, c, path, sha256, bytes, abi);
  if (c.solution) {
    json& sol = j["solution"];
    PTXBENCH_JSON_SET_FIELDS(sol, (*c.solution), file, name, binding, entry_file);
  }
  return j;
}

}  // namespace ptxbench
