#include "run/protocol.h"

#include <set>
#include <stdexcept>
#include <utility>

#include "common/json_fields.h"

namespace ptxbench {
namespace {

using nlohmann::json;

// One field of a spec: required ones throw when absent; every present one must have the
// expected type, whatever its default.
template <typename T>
void ReadAs(const char* spec, const json& j, const char* key, T* out, bool required) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) throw std::invalid_argument(std::string(spec) + " spec: no field `" + key + "`");
    return;
  }
  try {
    *out = it->get<T>();
  } catch (const json::exception&) {
    throw std::invalid_argument(std::string(spec) + " spec: field `" + key +
                                "` has the wrong type");
  }
}

void CheckAs(const char* spec, bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string(spec) + " spec: " + what);
}

template <typename T>
void Read(const json& j, const char* key, T* out, bool required) {
  ReadAs("timing", j, key, out, required);
}
void Check(bool ok, const char* what) { CheckAs("timing", ok, what); }

void RequireObject(const char* spec, const json& j) {
  if (!j.is_object()) throw std::invalid_argument(std::string(spec) + " spec: not a JSON object");
}

// What every spec of a child that runs a workload opens with, written and read alike.
json WorkloadHead(const char* role, const WorkloadSpec& s) {
  json j = {{"role", role}};
  PTXBENCH_JSON_SET_FIELDS(j, s, family, axes, out_dir);
  return j;
}

void ReadWorkloadHead(const char* spec, const json& j, WorkloadSpec* s) {
  RequireObject(spec, j);
  ReadAs(spec, j, "family", &s->family, true);
  ReadAs(spec, j, "axes", &s->axes, true);
  ReadAs(spec, j, "out_dir", &s->out_dir, true);
}

constexpr std::pair<ChildRole, const char*> kRoleNames[] = {{ChildRole::kProbe, "probe"},
                                                            {ChildRole::kLoadCheck, "load_check"},
                                                            {ChildRole::kReference, "reference"},
                                                            {ChildRole::kCandidate, "candidate"},
                                                            {ChildRole::kTiming, "timing"}};

}  // namespace

const char* ToString(ChildRole role) {
  for (const auto& [r, name] : kRoleNames)
    if (r == role) return name;
  return "unknown";
}

ChildRole ParseChildRole(const json& spec) {
  RequireObject("child", spec);
  std::string name;
  ReadAs("child", spec, "role", &name, true);
  for (const auto& [r, n] : kRoleNames)
    if (name == n) return r;
  throw std::invalid_argument("child spec: unknown role `" + name + "`");
}

json ProbeSpecJson() { return {{"role", "probe"}}; }

json ToJson(const ReferenceSpec& s) {
  json j = WorkloadHead("reference", s);
  j["seeds"] = s.seeds;
  if (!s.set_seeds.empty()) j["set_seeds"] = s.set_seeds;
  return j;
}

ReferenceSpec ParseReferenceSpec(const json& j) {
  const char* what = "reference";
  ReferenceSpec s;
  ReadWorkloadHead(what, j, &s);
  ReadAs(what, j, "seeds", &s.seeds, true);
  ReadAs(what, j, "set_seeds", &s.set_seeds, false);
  CheckAs(what, s.axes.is_object(), "`axes` is not an object");
  CheckAs(what, !s.seeds.empty(), "no seeds");
  CheckAs(what, s.set_seeds.empty() || s.set_seeds.size() == s.seeds.size(),
          "`set_seeds` and `seeds` differ in length");
  return s;
}

json ToJson(const CandidateRunSpec& s) {
  json j = WorkloadHead("candidate", s);
  PTXBENCH_JSON_SET_FIELDS(j, s, seeds, shared_object, abi, kernels, write_outputs, guard_pages);
  if (!s.arch.empty()) j["arch"] = s.arch;
  return j;
}

CandidateRunSpec ParseCandidateRunSpec(const json& j) {
  const char* what = "candidate";
  CandidateRunSpec s;
  ReadWorkloadHead(what, j, &s);
  ReadAs(what, j, "seeds", &s.seeds, true);
  ReadAs(what, j, "shared_object", &s.shared_object, true);
  ReadAs(what, j, "abi", &s.abi, false);
  ReadAs(what, j, "arch", &s.arch, false);
  ReadAs(what, j, "kernels", &s.kernels, false);
  ReadAs(what, j, "write_outputs", &s.write_outputs, false);
  ReadAs(what, j, "guard_pages", &s.guard_pages, false);
  CheckAs(what, s.axes.is_object(), "`axes` is not an object");
  CheckAs(what, !s.seeds.empty(), "no seeds");
  return s;
}

json ToJson(const TimingSpec& s) {
  json j = WorkloadHead("timing", s);
  PTXBENCH_JSON_SET_FIELDS(j, s, warmup, iterations, buffer_sets, seed_base, set_seed_base,
                           pci_bus_id);
  if (s.baseline_only)
    PTXBENCH_JSON_SET_FIELDS(j, s, baseline_only, baseline_phase, baseline_seed_offset, peak_n,
                             baseline_options, wait_for_go);
  else
    PTXBENCH_JSON_SET_FIELDS(j, s, shared_object, abi, kept_outputs, witness_calls, digest_key,
                             wait_for_go);
  return j;
}

TimingSpec ParseTimingSpec(const json& j) {
  TimingSpec s;
  ReadWorkloadHead("timing", j, &s);
  Read(j, "seed_base", &s.seed_base, true);
  Read(j, "warmup", &s.warmup, false);
  Read(j, "iterations", &s.iterations, false);
  Read(j, "buffer_sets", &s.buffer_sets, false);
  s.set_seed_base = s.seed_base ^ 1;
  Read(j, "set_seed_base", &s.set_seed_base, false);
  Read(j, "pci_bus_id", &s.pci_bus_id, false);
  Read(j, "baseline_only", &s.baseline_only, false);
  Check(s.axes.is_object(), "`axes` is not an object");
  Check(s.warmup >= 0 && s.iterations >= 1, "warm-up below 0 or no timed call");
  Check(s.buffer_sets >= 1 && s.buffer_sets <= s.warmup + s.iterations,
        "`buffer_sets` outside 1..(warm-up + timed calls)");
  if (s.baseline_only) {
    Read(j, "baseline_phase", &s.baseline_phase, false);
    Read(j, "baseline_seed_offset", &s.baseline_seed_offset, false);
    Read(j, "peak_n", &s.peak_n, false);
    Read(j, "baseline_options", &s.baseline_options, false);
    Read(j, "wait_for_go", &s.wait_for_go, false);
    Check(s.baseline_phase == "baseline_before" || s.baseline_phase == "baseline_after",
          "`baseline_phase` is neither baseline_before nor baseline_after");
    Check(s.peak_n >= 0 && s.peak_n <= 65536, "`peak_n` outside 0..65536");
    return s;
  }
  Read(j, "shared_object", &s.shared_object, true);
  Read(j, "wait_for_go", &s.wait_for_go, false);
  Read(j, "abi", &s.abi, false);
  Read(j, "kept_outputs", &s.kept_outputs, true);
  Read(j, "witness_calls", &s.witness_calls, true);
  Read(j, "digest_key", &s.digest_key, true);
  Check(s.kept_outputs >= 0 && s.kept_outputs <= s.iterations,
        "`kept_outputs` outside 0..timed calls");
  Check(s.witness_calls >= 0 && s.witness_calls <= s.kept_outputs,
        "`witness_calls` outside 0..kept_outputs (a witness call writes a kept output)");
  return s;
}

json ToJson(const AfterLoopPlan& p) {
  json j = {{"check", p.check}};
  if (p.witness) j["witness"] = {{"seed0", p.witness_seed0}, {"key", p.witness_key}};
  return j;
}

std::optional<AfterLoopPlan> ParseAfterLoopPlan(const std::string& line) {
  json j = json::parse(line, nullptr, false);
  if (!j.is_object() || !j.contains("check") || !j["check"].is_array()) return std::nullopt;
  AfterLoopPlan p;
  try {
    p.check = j["check"].get<std::vector<int>>();
    if (j.contains("witness")) {
      p.witness = true;
      p.witness_seed0 = j["witness"].at("seed0").get<uint64_t>();
      p.witness_key = j["witness"].at("key").get<uint64_t>();
    }
  } catch (const json::exception&) {
    return std::nullopt;
  }
  return p;
}

bool IsHarnessClaim(const json& m) {
  static const std::set<std::string> claims = {
      "no_gpu",         "arch_unavailable", "timing_unavailable",   "kernels_unavailable",
      "baseline_error", "baseline_none",    "baseline_unsupported", "peak_done",
      "object_mismatch"};
  const std::string ev = m.value("event", "");
  if (claims.count(ev)) return true;
  // A timing sample of a phase no candidate has: the baseline's or the peak's.
  if (ev == "timing_sample" && m.value("phase", "") != "candidate") return true;
  const std::string stage = m.value("stage", "");
  return ev == "error" && (stage == "harness" || stage == "setup");
}

size_t LoadingIndex(const std::vector<json>& messages) {
  for (size_t i = 0; i < messages.size(); ++i)
    if (messages[i].value("event", "") == kLoadingEvent) return i;
  return messages.size();
}

}  // namespace ptxbench
