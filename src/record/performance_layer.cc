#include "record/performance_layer.h"

#include "common/json_fields.h"
#include "record/field_readers.h"

namespace ptxbench {

using nlohmann::json;
using record_fields::OptionalString;
using record_fields::OptionalUnsigned;
using record_fields::StringsField;
using record_fields::UnsignedField;

namespace {

// ---------------------------------------------------------------------------------------------
// Lenient reads of the kinds of field the layer holds.

double Number(const json& j, const char* key) { return NumField(j, key).value_or(0); }

std::optional<long long> OptionalInteger(const json& j, const char* key) {
  const json* f = FindField(j, key);
  return f && f->is_number() ? std::optional<long long>(IntField(j, key)) : std::nullopt;
}

// A verbatim blob: present whatever its type, null included.
std::optional<json> Verbatim(const json& j, const char* key) {
  const json* f = FindField(j, key);
  return f ? std::optional<json>(*f) : std::nullopt;
}

json NumberOrNull(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// ---------------------------------------------------------------------------------------------
// The parts, each written and read by a pair of functions.

SampleSummary SampleSummaryOf(const json& j) {
  SampleSummary s;
  s.count = UnsignedField(j, "count");
  PTXBENCH_JSON_GET_FIELDS(Number, j, s, median, p10, p90, min, max, mean);
  return s;
}

std::optional<SampleSummary> OptionalSummary(const json& j, const char* key) {
  const json& s = FieldOrNull(j, key);
  return s.is_object() ? std::optional<SampleSummary>(SampleSummaryOf(s)) : std::nullopt;
}

// The keys of "protocol" that are the judge's or the parent's; every other one is the child's.
bool OwnProtocolKey(const std::string& key) {
  for (const char* k : {"warmup", "iterations", "fresh_inputs_per_call",
                        "outputs_poisoned_per_call", "span", "parent_decided", "plan"})
    if (key == k) return true;
  return false;
}

TimingProtocol TimingProtocolOf(const json& j) {
  TimingProtocol p;
  if (FindField(j, "warmup") || FindField(j, "span")) {
    TimingProtocol::Calls c;
    PTXBENCH_JSON_GET_FIELDS(IntField, j, c, warmup, iterations);
    auto flag = [](const json& o, const char* key) { return BoolField(o, key).value_or(true); };
    PTXBENCH_JSON_GET_FIELDS(flag, j, c, fresh_inputs_per_call, outputs_poisoned_per_call);
    c.span = StrField(j, "span");
    p.calls = c;
  }
  if (j.is_object())
    for (const auto& [key, value] : j.items())
      if (!OwnProtocolKey(key)) p.child_additions[key] = value;
  if (const json& d = FieldOrNull(j, "parent_decided"); d.is_object()) {
    TimingProtocol::ParentDecided pd;
    PTXBENCH_JSON_GET_FIELDS(IntField, d, pd, kept_outputs, witness_calls, witness_rounds,
                             timed_checks, witness_checks);
    p.parent_decided = pd;
  }
  p.plan = FieldOrNull(j, "plan");
  return p;
}

json ToJson(const CandidateTiming& c) {
  json j = ToJson(c.span);
  j["host"] = ToJson(c.host);
  j["calls"] = c.calls;
  j["empty_calls"] = c.empty_calls;
  j["kernels"] = c.kernels;
  return j;
}

CandidateTiming CandidateTimingOf(const json& j) {
  CandidateTiming c;
  c.span = SampleSummaryOf(j);
  c.host = SampleSummaryOf(FieldOrNull(j, "host"));
  PTXBENCH_JSON_GET_FIELDS(IntField, j, c, calls, empty_calls);
  for (const auto& [name, count] : ObjField(j, "kernels").items())
    if (count.is_number()) c.kernels[name] = count.get<long long>();
  return c;
}

json ToJson(const TimingDefenses& d) {
  json j;
  PTXBENCH_JSON_SET_FIELDS(j, d, new_vendor_libraries, empty_calls, inputs_changed_calls);
  const TimingDefenses::ForeignKernels& f = d.foreign_kernels;
  j["foreign_kernels"] = {{"state", f.state}};
  if (f.state == "ran")
    j["foreign_kernels"]["names"] = f.names;
  else
    j["foreign_kernels"]["reason"] = f.reason;
  PTXBENCH_JSON_SET_FIELDS(j["outlived"], d.outlived, count, max_overrun_s, names);
  PTXBENCH_JSON_SET_FIELDS(j["stray"], d.stray, count, names);
  j["gpu_idle_in_call"] = ToJson(d.gpu_idle_in_call);
  return j;
}

TimingDefenses TimingDefensesOf(const json& j) {
  TimingDefenses d;
  d.new_vendor_libraries = StringsField(j, "new_vendor_libraries");
  const json& f = FieldOrNull(j, "foreign_kernels");
  d.foreign_kernels = {StrField(f, "state"), StringsField(f, "names"), StrField(f, "reason")};
  const json& outlived = FieldOrNull(j, "outlived");
  d.outlived = {IntField(outlived, "count"), Number(outlived, "max_overrun_s"),
                StringsField(outlived, "names")};
  const json& stray = FieldOrNull(j, "stray");
  d.stray = {IntField(stray, "count"), StringsField(stray, "names")};
  PTXBENCH_JSON_GET_FIELDS(IntField, j, d, empty_calls, inputs_changed_calls);
  d.gpu_idle_in_call = SampleSummaryOf(FieldOrNull(j, "gpu_idle_in_call"));
  return d;
}

json ToJson(const BaselineTiming& b) {
  json j = {{"state", b.state}};
  if (b.name) j["name"] = *b.name;
  if (!b.reason.empty()) j["reason"] = b.reason;
  if (b.library) j["library"] = *b.library;
  if (b.before) j["before"] = ToJson(*b.before);
  if (b.after) j["after"] = ToJson(*b.after);
  if (b.pooled) PTXBENCH_JSON_SET_FIELDS(j, *b.pooled, median, p10, p90);
  if (b.drift) {
    j["drift"] = b.drift->drift;
    j["drift_flagged"] = b.drift->flagged;
  }
  if (b.tflops) j["tflops"] = *b.tflops;
  if (!b.choice.empty()) j["choice"] = b.choice;
  return j;
}

BaselineTiming BaselineTimingOf(const json& j) {
  BaselineTiming b;
  b.name = OptionalString(j, "name");
  PTXBENCH_JSON_GET_FIELDS(StrField, j, b, state, reason, choice);
  b.library = Verbatim(j, "library");
  b.before = OptionalSummary(j, "before");
  b.after = OptionalSummary(j, "after");
  if (NumField(j, "median"))
    b.pooled = BaselineTiming::Pooled{Number(j, "median"), Number(j, "p10"), Number(j, "p90")};
  if (auto drift = NumField(j, "drift"))
    b.drift = BaselineTiming::Drift{*drift, BoolField(j, "drift_flagged").value_or(false)};
  b.tflops = NumField(j, "tflops");
  return b;
}

// An output's two keys: its comparison under its name, its digests under name + "_digest".
json ToJson(const RevalidatedCall& c) {
  json j = {{"call", c.call}, {"seed", c.seed}};
  for (const RevalidatedOutput& o : c.outputs) {
    if (o.digests)
      PTXBENCH_JSON_SET_FIELDS(j[o.name + "_digest"], *o.digests, committed, handed_over);
    PTXBENCH_JSON_SET_FIELDS(j[o.name], o, verdict, max_abs_error, mismatched);
  }
  return j;
}

RevalidatedCall RevalidatedCallOf(const json& j) {
  RevalidatedCall c{StrField(j, "call"), UnsignedField(j, "seed"), {}};
  if (!j.is_object()) return c;
  for (const auto& [name, compared] : j.items()) {
    if (!compared.is_object() || !compared.contains("verdict")) continue;
    RevalidatedOutput o{name, std::nullopt, StrField(compared, "verdict"),
                        Number(compared, "max_abs_error"), UnsignedField(compared, "mismatched")};
    const json& digests = FieldOrNull(j, (name + "_digest").c_str());
    if (digests.is_object())
      o.digests = {StrField(digests, "committed"), StrField(digests, "handed_over")};
    c.outputs.push_back(std::move(o));
  }
  return c;
}

json ToJson(const Revalidation& r) {
  json j = {{"state", r.state}};
  if (!r.reason.empty()) {
    j["reason"] = r.reason;
    return j;
  }
  PTXBENCH_JSON_SET_FIELDS(j, r, drawn_after_the_loop, kept_outputs);
  j["calls"] = json::array();
  for (const RevalidatedCall& c : r.calls) j["calls"].push_back(ToJson(c));
  return j;
}

Revalidation RevalidationOf(const json& j) {
  Revalidation r;
  PTXBENCH_JSON_GET_FIELDS(StrField, j, r, state, reason);
  r.drawn_after_the_loop = BoolField(j, "drawn_after_the_loop").value_or(true);
  r.kept_outputs = IntField(j, "kept_outputs");
  for (const json& c : ArrField(j, "calls")) r.calls.push_back(RevalidatedCallOf(c));
  return r;
}

json ToJson(const TimingWitness& w) {
  json j = {{"state", w.state}};
  if (!w.judged) j["reason"] = w.reason;
  if (!w.established_by.empty()) j["established_by"] = w.established_by;
  if (!w.judged) return j;
  const TimingWitness::Judged& x = *w.judged;
  PTXBENCH_JSON_SET_FIELDS(j, x, timing_ok, tensor_ok, message, window, calls, rounds,
                           timing_factor, tensor_factor);
  if (x.calls_reported) j["calls_reported"] = *x.calls_reported;
  j["per_call_busy_seconds"] = NumberOrNull(x.per_call_busy_seconds);
  j["tensor_work_fraction_seen"] = NumberOrNull(x.tensor_work_fraction_seen);
  j["tensor_share_of_sm"] = NumberOrNull(x.tensor_share_of_sm);
  if (x.busy_over_timed) j["busy_over_timed"] = *x.busy_over_timed;
  return j;
}

TimingWitness TimingWitnessOf(const json& j) {
  TimingWitness w;
  PTXBENCH_JSON_GET_FIELDS(StrField, j, w, state, reason, established_by);
  // A judged window is the one kind of witness that has counters.
  if (!FindField(j, "window")) return w;
  TimingWitness::Judged x;
  auto flag = [](const json& o, const char* key) { return BoolField(o, key).value_or(false); };
  PTXBENCH_JSON_GET_FIELDS(flag, j, x, timing_ok, tensor_ok);
  PTXBENCH_JSON_GET_FIELDS(NumField, j, x, per_call_busy_seconds, tensor_work_fraction_seen,
                           tensor_share_of_sm, busy_over_timed);
  x.message = StrField(j, "message");
  x.window = FieldOrNull(j, "window");
  PTXBENCH_JSON_GET_FIELDS(IntField, j, x, calls, rounds);
  x.calls_reported = OptionalInteger(j, "calls_reported");
  PTXBENCH_JSON_GET_FIELDS(Number, j, x, timing_factor, tensor_factor);
  w.judged = x;
  return w;
}

// The top-level keys PerformanceLayerOf reads into fields; every other one goes to `extra`.
bool KnownKey(const std::string& key) {
  static const char* const kKnown[] = {"state",
                                       "reason",
                                       "timer",
                                       "protocol",
                                       "child_exit",
                                       "child_log_tail",
                                       "clocks",
                                       "candidate",
                                       "defenses",
                                       "baseline",
                                       "speedup",
                                       "speedup_range",
                                       "speedup_withheld",
                                       "tflops",
                                       "peak_tflops",
                                       "percent_of_peak",
                                       "peak_source",
                                       "timing_seed_base",
                                       "sandbox",
                                       "candidate_claims_ignored",
                                       "kernels_launched",
                                       "confinement",
                                       "sealed",
                                       "channel_garbage_lines",
                                       "revalidation",
                                       "witness"};
  for (const char* k : kKnown)
    if (key == k) return true;
  return false;
}

// The blobs and scalars of the top level, each written when present.
void WriteScalars(const PerformanceLayer& p, json& j) {
  auto put = [&j](const char* key, const auto& value) {
    if (value) j[key] = *value;
  };
  put("child_exit", p.child_exit);
  put("child_log_tail", p.child_log_tail);
  put("clocks", p.clocks);
  put("speedup", p.speedup);
  put("tflops", p.tflops);
  put("peak_tflops", p.peak_tflops);
  put("percent_of_peak", p.percent_of_peak);
  put("timing_seed_base", p.timing_seed_base);
  put("sandbox", p.sandbox);
  put("kernels_launched", p.kernels_launched);
  put("confinement", p.confinement);
  put("sealed", p.sealed);
  if (p.speedup_range) j["speedup_range"] = {p.speedup_range->first, p.speedup_range->second};
  for (auto [key, text] :
       {std::pair{"state", &p.state}, std::pair{"reason", &p.reason}, std::pair{"timer", &p.timer},
        std::pair{"speedup_withheld", &p.speedup_withheld},
        std::pair{"peak_source", &p.peak_source}})
    if (!text->empty()) j[key] = *text;
  if (p.candidate_claims_ignored > 0) j["candidate_claims_ignored"] = p.candidate_claims_ignored;
  if (p.channel_garbage_lines > 0) j["channel_garbage_lines"] = p.channel_garbage_lines;
}

void ReadScalars(const json& j, PerformanceLayer& p) {
  PTXBENCH_JSON_GET_FIELDS(StrField, j, p, state, reason, timer, speedup_withheld, peak_source);
  PTXBENCH_JSON_GET_FIELDS(OptionalString, j, p, child_exit, child_log_tail);
  PTXBENCH_JSON_GET_FIELDS(Verbatim, j, p, clocks, sandbox, confinement, sealed);
  PTXBENCH_JSON_GET_FIELDS(NumField, j, p, speedup, tflops, peak_tflops, percent_of_peak);
  const json& range = FieldOrNull(j, "speedup_range");
  if (range.is_array() && range.size() == 2 && range[0].is_number() && range[1].is_number())
    p.speedup_range = std::pair{range[0].get<double>(), range[1].get<double>()};
  p.timing_seed_base = OptionalUnsigned(j, "timing_seed_base");
  PTXBENCH_JSON_GET_FIELDS(UnsignedField, j, p, candidate_claims_ignored, channel_garbage_lines);
  if (FieldOrNull(j, "kernels_launched").is_array())
    p.kernels_launched = StringsField(j, "kernels_launched");
}

}  // namespace

json ToJson(const SampleSummary& s) {
  json j;
  PTXBENCH_JSON_SET_FIELDS(j, s, count, median, p10, p90, min, max, mean);
  return j;
}

json ToJson(const TimingProtocol& p) {
  json j = json::object();
  if (p.calls)
    PTXBENCH_JSON_SET_FIELDS(j, *p.calls, warmup, iterations, fresh_inputs_per_call,
                             outputs_poisoned_per_call, span);
  if (p.child_additions.is_object()) j.update(p.child_additions);
  if (p.parent_decided)
    PTXBENCH_JSON_SET_FIELDS(j["parent_decided"], *p.parent_decided, kept_outputs, witness_calls,
                             witness_rounds, timed_checks, witness_checks);
  if (!p.plan.is_null()) j["plan"] = p.plan;
  return j;
}

PerformanceLayer PerformanceLayer::Skipped(const std::string& why) {
  PerformanceLayer p;
  p.state = "skipped";
  p.reason = why;
  return p;
}

json ToJson(const PerformanceLayer& p) {
  json j = json::object();
  WriteScalars(p, j);
  if (p.protocol) j["protocol"] = ToJson(*p.protocol);
  if (p.candidate) j["candidate"] = ToJson(*p.candidate);
  if (p.defenses) j["defenses"] = ToJson(*p.defenses);
  if (p.baseline) j["baseline"] = ToJson(*p.baseline);
  if (p.revalidation) j["revalidation"] = ToJson(*p.revalidation);
  if (p.witness) j["witness"] = ToJson(*p.witness);
  for (const auto& [key, value] : p.extra.items())
    if (!j.contains(key)) j[key] = value;
  return j;
}

PerformanceLayer PerformanceLayerOf(const json& j) {
  PerformanceLayer p;
  if (!j.is_object()) return p;
  ReadScalars(j, p);
  auto object = [&j](const char* key) -> const json* {
    const json* f = FindField(j, key);
    return f && f->is_object() ? f : nullptr;
  };
  if (const json* f = object("protocol")) p.protocol = TimingProtocolOf(*f);
  if (const json* f = object("candidate")) p.candidate = CandidateTimingOf(*f);
  if (const json* f = object("defenses")) p.defenses = TimingDefensesOf(*f);
  if (const json* f = object("baseline")) p.baseline = BaselineTimingOf(*f);
  if (const json* f = object("revalidation")) p.revalidation = RevalidationOf(*f);
  if (const json* f = object("witness")) p.witness = TimingWitnessOf(*f);
  for (const auto& [key, value] : j.items())
    if (!KnownKey(key)) p.extra[key] = value;
  return p;
}

PerformanceLayer PerformanceLayerOf(const EvaluationRecord& record) {
  return PerformanceLayerOf(record.performance);
}

}  // namespace ptxbench
