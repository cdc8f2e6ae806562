#include "record/layers.h"

#include "common/json_fields.h"
#include "record/instructions_layer.h"

namespace ptxbench {

using nlohmann::json;

namespace {

ChildEnd ChildEndOf(const json& layer) {
  return {StrField(layer, "child_exit"), StrField(layer, "child_log_tail")};
}

TimeDistribution TimeDistributionOf(const json& j) {
  return {NumField(j, "median"), NumField(j, "p10"), NumField(j, "p90"), NumField(j, "count")};
}

// An output's first bad element, where the check names one (by its index).
std::optional<OutputCheck::FirstBad> FirstBadOf(const json& fb) {
  auto index = NumField(fb, "index");
  if (!index) return std::nullopt;
  const json* got = FindField(fb, "got");
  return OutputCheck::FirstBad{.index = static_cast<long long>(*index),
                               .got = NumField(fb, "got"),
                               .expected = NumField(fb, "expected"),
                               .got_non_finite = got && got->is_null()};
}

OutputCheck OutputCheckOf(const json& o) {
  OutputCheck c;
  PTXBENCH_JSON_GET_FIELDS(StrField, o, c, name, verdict, summary);
  PTXBENCH_JSON_GET_FIELDS(IntField, o, c, elements, mismatched, unwritten, non_finite);
  auto number = [](const json& j, const char* key) { return NumField(j, key).value_or(0); };
  PTXBENCH_JSON_GET_FIELDS(number, o, c, max_abs_error, max_rel_error, matched_ratio);
  c.first_bad = FirstBadOf(FieldOrNull(o, "first_bad"));
  return c;
}

json ToJson(const OutputCheck& c) {
  json j;
  PTXBENCH_JSON_SET_FIELDS(j, c, name, verdict, summary, elements, mismatched, unwritten,
                           non_finite, max_abs_error, max_rel_error, matched_ratio);
  if (c.first_bad) {
    const OutputCheck::FirstBad& f = *c.first_bad;
    j["first_bad"] = {{"index", f.index},
                      {"got", f.got && !f.got_non_finite ? json(*f.got) : json(nullptr)},
                      {"expected", f.expected ? json(*f.expected) : json(nullptr)}};
  }
  return j;
}

json ToJson(const Trial& t) {
  json j;
  PTXBENCH_JSON_SET_FIELDS(j, t, seed, seconds, call_seconds, inputs_unchanged);
  j["outputs"] = json::array();
  for (const OutputCheck& o : t.outputs) j["outputs"].push_back(ToJson(o));
  return j;
}

// Each family of a {"family": value} object; with `key_inside`, the value is an object and the
// count is its field of that name (entries that are not objects are left out).
std::vector<InstructionDetail::FamilyCount> FamilyCountsOf(const json& object,
                                                           const char* key_inside) {
  std::vector<InstructionDetail::FamilyCount> out;
  if (!object.is_object()) return out;
  for (const auto& [family, value] : object.items()) {
    if (!key_inside) {
      out.push_back({family, value.is_number() ? value.get<double>() : 0, value});
    } else if (value.is_object()) {
      out.push_back(
          {family, NumField(value, key_inside).value_or(0), FieldOrNull(value, key_inside)});
    }
  }
  return out;
}

// Strings as they are; anything else as its JSON text.
std::vector<std::string> LinesOf(const json& array) {
  std::vector<std::string> out;
  if (!array.is_array()) return out;
  for (const json& line : array)
    out.push_back(line.is_string() ? line.get<std::string>()
                                   : line.dump(-1, ' ', false, json::error_handler_t::replace));
  return out;
}

}  // namespace

std::vector<std::pair<std::string, LayerStatus>> LayerStatusesOf(const EvaluationRecord& record) {
  std::vector<std::pair<std::string, LayerStatus>> out;
  for (const auto& [name, layer] : record.Layers()) {
    LayerStatus status;
    status.present = layer->is_object() && !layer->empty();
    if (status.present) {
      status.state = StrField(*layer, "state");
      if (status.state.empty()) status.state = "ran";
      status.reason = StrField(*layer, "reason");
    }
    out.emplace_back(name, std::move(status));
  }
  return out;
}

std::vector<ScreeningFinding> ScreeningFindingsOf(const EvaluationRecord& record) {
  std::vector<ScreeningFinding> out;
  for (const json& f : ArrField(record.screening, "findings")) {
    ScreeningFinding s;
    if (auto line = NumField(f, "line")) s.line = static_cast<long long>(*line);
    s.what = StrField(f, "what");
    s.library = StrField(f, "library");
    s.excerpt = StrField(f, "excerpt");
    out.push_back(std::move(s));
  }
  return out;
}

CompilerOutput CompilerOutputOf(const EvaluationRecord& record) {
  return {StrField(record.build, "errors"), StrField(record.build, "log")};
}

bool Trial::Failed() const {
  if (!inputs_unchanged) return true;
  for (const OutputCheck& o : outputs)
    if (o.verdict != "match") return true;
  return false;
}

CorrectnessDetail CorrectnessDetailOf(const EvaluationRecord& record) {
  const json& c = record.correctness;
  CorrectnessDetail d;
  d.state = StrField(c, "state");
  d.trial_count = IntField(c, "trials");  // the count; the list is trial_results
  for (const json& seed : ArrField(c, "seeds"))
    if (seed.is_number_unsigned()) d.seeds.push_back(seed.get<uint64_t>());
  const json& tol = FieldOrNull(c, "tolerance");
  if (tol.is_object())
    d.tolerance = CorrectnessDetail::Tolerance{StrField(tol, "rule"), NumField(tol, "atol"),
                                               NumField(tol, "rtol")};
  d.reference = FieldOrNull(c, "reference");
  for (const json& t : ArrField(c, "trial_results")) {
    Trial trial;
    trial.seed = FieldOrNull(t, "seed");
    auto number = [](const json& j, const char* key) { return NumField(j, key).value_or(0); };
    PTXBENCH_JSON_GET_FIELDS(number, t, trial, seconds, call_seconds);
    trial.inputs_unchanged = BoolField(t, "inputs_unchanged").value_or(true);
    for (const json& o : ArrField(t, "outputs")) trial.outputs.push_back(OutputCheckOf(o));
    d.trials.push_back(std::move(trial));
  }
  for (const json& l : ArrField(c, "new_vendor_libraries")) d.new_vendor_libraries.push_back(l);
  d.channel_garbage_lines = IntField(c, "channel_garbage_lines");
  for (const json& claim : ArrField(c, "candidate_claims"))
    if (claim.is_string()) d.candidate_claims.push_back(claim.get<std::string>());
  d.child = ChildEndOf(c);
  return d;
}

json ToJson(const CorrectnessDetail& d) {
  json j;
  PTXBENCH_JSON_SET_FIELDS(j, d, state, seeds, reference);
  j["trials"] = d.trial_count;
  j["trial_results"] = json::array();
  for (const Trial& t : d.trials) j["trial_results"].push_back(ToJson(t));
  j["child_exit"] = d.child.exit;
  j["child_log_tail"] = d.child.log_tail;
  if (d.tolerance) {
    auto number = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
    j["tolerance"] = {{"rule", d.tolerance->rule},
                      {"atol", number(d.tolerance->atol)},
                      {"rtol", number(d.tolerance->rtol)}};
  }
  if (!d.new_vendor_libraries.empty()) j["new_vendor_libraries"] = d.new_vendor_libraries;
  if (d.channel_garbage_lines > 0) j["channel_garbage_lines"] = d.channel_garbage_lines;
  if (!d.candidate_claims.empty()) j["candidate_claims"] = d.candidate_claims;
  return j;
}

MemcheckDetail MemcheckDetailOf(const EvaluationRecord& record) {
  const json& m = record.memcheck;
  MemcheckDetail d;
  PTXBENCH_JSON_GET_FIELDS(StrField, m, d, state, exit, mode, first_error, log_tail);
  d.error_count = IntField(m, "error_count");
  auto flag = [](const json& j, const char* key) { return BoolField(j, key).value_or(false); };
  PTXBENCH_JSON_GET_FIELDS(flag, m, d, summary_seen, call_completed);
  if (const json* seed = FindField(m, "seed"); seed && seed->is_number_unsigned())
    d.seed = seed->get<uint64_t>();
  for (const json& e : ArrField(m, "errors"))
    d.errors.push_back({StrField(e, "summary"), StrField(e, "kind"), StrField(e, "location"),
                        StrField(e, "thread"), StrField(e, "address")});
  return d;
}

json ToJson(const MemcheckDetail& d) {
  json j;
  PTXBENCH_JSON_SET_FIELDS(j, d, state, exit, error_count, summary_seen, mode, seed,
                           call_completed);
  j["errors"] = json::array();
  for (const MemcheckDetail::Error& e : d.errors) {
    json error;
    PTXBENCH_JSON_SET_FIELDS(error, e, kind, location, thread, address, summary);
    j["errors"].push_back(std::move(error));
  }
  if (!d.first_error.empty()) j["first_error"] = d.first_error;
  if (!d.log_tail.empty()) j["log_tail"] = d.log_tail;
  return j;
}

double InstructionDetail::CountOf(const std::vector<FamilyCount>& counts,
                                  const std::string& family) {
  for (const FamilyCount& c : counts)
    if (c.family == family) return c.count;
  return 0;
}

const InstructionDetail::FamilyCount* InstructionDetail::Find(
    const std::vector<FamilyCount>& counts, const std::string& family) {
  for (const FamilyCount& c : counts)
    if (c.family == family) return &c;
  return nullptr;
}

InstructionDetail InstructionDetailOf(const EvaluationRecord& record) {
  const InstructionsLayer layer = InstructionsLayerOf(record);
  InstructionDetail d;
  const json& st = layer.static_sass;
  d.has_static = st.is_object();
  d.static_state = StrField(st, "state");
  d.static_message = StrField(st, "message");
  const json& totals = FieldOrNull(st, "totals");
  if (totals.is_object()) d.sass_totals = FamilyCountsOf(totals, nullptr);
  for (const json& f : ArrField(st, "functions"))
    d.functions.push_back({StrField(f, "demangled"), FieldOrNull(f, "instructions"),
                           FamilyCountsOf(FieldOrNull(f, "families"), nullptr),
                           LinesOf(FieldOrNull(f, "evidence"))});
  const json& dyn = FieldOrNull(layer.dynamic, "families");
  if (dyn.is_object()) d.executed = FamilyCountsOf(dyn, "thread_executions_true");
  d.run_time_evidence = LinesOf(FieldOrNull(layer.dynamic, "evidence"));
  if (const json& kernels = FieldOrNull(layer.dynamic, "kernels"); kernels.is_array()) {
    d.profiled_functions.emplace();
    for (const json& k : kernels)
      if (k.is_string()) d.profiled_functions->insert(k.get<std::string>());
  }
  return d;
}

PerformanceDetail PerformanceDetailOf(const EvaluationRecord& record) {
  const json& p = record.performance;
  PerformanceDetail d;
  d.candidate = TimeDistributionOf(FieldOrNull(p, "candidate"));
  const json& b = FieldOrNull(p, "baseline");
  d.baseline.present = b.is_object();
  d.baseline.name = StrField(b, "name");
  d.baseline.state = StrField(b, "state");
  d.baseline.reason = StrField(b, "reason");
  d.baseline.time = TimeDistributionOf(b);
  d.baseline.before = TimeDistributionOf(FieldOrNull(b, "before"));
  d.baseline.after = TimeDistributionOf(FieldOrNull(b, "after"));
  d.baseline.tflops = NumField(b, "tflops");
  d.baseline.drift_flagged = BoolField(b, "drift_flagged").value_or(false);
  d.baseline.drift = NumField(b, "drift").value_or(0);
  const json& r = FieldOrNull(p, "speedup_range");
  if (r.is_array() && r.size() == 2 && r[0].is_number() && r[1].is_number())
    d.speedup_range = std::make_pair(r[0].get<double>(), r[1].get<double>());
  d.percent_of_peak = NumField(p, "percent_of_peak");
  d.peak_tflops = NumField(p, "peak_tflops");
  d.child = ChildEndOf(p);
  return d;
}

}  // namespace ptxbench
