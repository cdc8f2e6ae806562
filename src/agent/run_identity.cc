#include "agent/run_identity.h"

#include <algorithm>
#include <filesystem>

#include "common/error.h"
#include "common/files.h"
#include "common/sha256.h"
#include "common/strings.h"

namespace ptxbench {

namespace {

using nlohmann::json;

// The run's identity, as JSON pointers into run.json. Not in it: concurrency, the evaluator's
// address, the times: they change how fast a run goes, not what it finds.
const char* const kIdentity[] = {
    "/model", "/tasks", "/workload",
    // Where the definitions came from, and each definition and workload the run judges under
    // (their hashes): a definition edited between two sittings would otherwise leave one
    // trajectory holding turns judged under both.
    "/tasks_dir", "/definitions", "/trajectories", "/turns", "/target_speedup", "/arch", "/pack",
    "/pack_info/sha256", "/context", "/sanitize", "/timing", "/timeout", "/timing_budget",
    "/baseline", "/ptxbench_version", "/ptxbench_commit",
    // A fixit repair run: the manifest it repairs (its hash) and the bar a repair must pass.
    "/fixit"};

// The longest stretch of a value a refusal shows. Long enough for any path, model block or
// hash list in full; a value past it (a huge inline prompt) is shown around where it differs.
constexpr size_t kShownLimit = 2000;
// How much of what comes before the first difference an excerpt keeps, for context.
constexpr size_t kShownLead = 200;

// What identity compares: --task in any order names the same tasks (trajectory ids come from
// the task's name, not its place), so the list is compared sorted.
json Comparable(const std::string& field, const json& value) {
  if (field != "/tasks" || !value.is_array()) return value;
  json sorted = value;
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

// The first field where `a` and `b` differ, as a path below `at` ("model/temperature"), with
// both values there. Objects with the same keys are compared key by key so that the refusal
// names the one field that differs, not the whole block; anything else (objects with other
// keys, arrays, scalars) is the differing field itself.
struct Difference {
  std::string field;
  json before, now;
};
Difference FirstDifference(const std::string& at, const json& a, const json& b) {
  auto keys = [](const json& j) {
    std::vector<std::string> k;
    for (const auto& item : j.items()) k.push_back(item.key());
    return k;
  };
  if (a.is_object() && b.is_object() && keys(a) == keys(b))
    for (const auto& [key, value] : a.items())
      if (value != b.at(key)) return FirstDifference(at + "/" + key, value, b.at(key));
  return {at, a, b};
}

// Where two texts first differ (the shorter one's length when one begins the other).
size_t FirstDifferentCharacter(const std::string& a, const std::string& b) {
  return std::mismatch(a.begin(), a.begin() + std::min(a.size(), b.size()), b.begin()).first -
         a.begin();
}

// `text` in full when it is short enough; else the kShownLimit bytes around `from` (where it
// differs from the other value), kept on UTF-8 character boundaries, with a note saying which
// part of how much is shown.
std::string Excerpt(const std::string& text, size_t from) {
  if (text.size() <= kShownLimit) return text;
  auto continuation = [&](size_t i) { return i < text.size() && (text[i] & 0xC0) == 0x80; };
  size_t begin = std::min(from > kShownLead ? from - kShownLead : 0, text.size() - kShownLimit);
  size_t end = begin + kShownLimit;
  while (continuation(begin)) ++begin;
  while (continuation(end)) --end;
  return (begin > 0 ? "…" : "") + text.substr(begin, end - begin) + (end < text.size() ? "…" : "") +
         " (shown: characters " + std::to_string(begin + 1) + " to " + std::to_string(end) +
         " of " + std::to_string(text.size()) + ")";
}

// A hash says only that something changed: the refusal says what it is the hash of.
std::string WhatChanged(const std::string& field) {
  if (field.rfind("definitions/", 0) != 0) return "";
  return " (the task's definition or workload changed since the run began: its turns so far "
         "were judged under the old one)";
}

std::string DifferenceLine(const Difference& d, bool had, bool has) {
  std::string before = had ? d.before.dump() : "", now = has ? d.now.dump() : "";
  size_t from = FirstDifferentCharacter(before, now);
  return d.field + " differs: the run has " + (had ? Excerpt(before, from) : "none") +
         ", this command " + (has ? Excerpt(now, from) : "none") + WhatChanged(d.field);
}

}  // namespace

json DefinitionsRecord(const std::vector<std::pair<const Definition*, const Workload*>>& used) {
  json record = json::object();
  for (const auto& [d, w] : used) {
    json workload = {{"id", w->id}, {"axes", w->axes}, {"headline", w->headline}};
    // A FlashInfer-Bench workload's own object (its inputs) decides what is judged too.
    if (d->flashinfer && d->flashinfer->workloads.count(w->id))
      workload["flashinfer_bench"] = d->flashinfer->workloads.at(w->id);
    record[d->name] = {{"definition_sha256", Sha256Hex(ToJson(*d, false).dump())},
                       {"workload", w->id},
                       {"workload_sha256", Sha256Hex(workload.dump())}};
  }
  return record;
}

std::optional<std::string> RunIdentityDifference(const json& before, const json& now) {
  for (const char* field : kIdentity) {
    json::json_pointer p(field);
    bool had = before.contains(p), has = now.contains(p);
    if (!had && !has) continue;
    if (!had && std::string(field) == "/ptxbench_commit") continue;
    // A run from before the attention baseline could be chosen was timed against cuDNN.
    if (!had && std::string(field) == "/baseline" && now.at(p) == "cudnn") continue;
    // One from before FlashInfer's release was recorded says "flashinfer": that was 0.7.4.
    if (had && has && std::string(field) == "/baseline" && before.at(p) == "flashinfer" &&
        now.at(p) == kLegacyFlashInferBaseline)
      continue;
    json a = had ? Comparable(field, before.at(p)) : json(),
         b = has ? Comparable(field, now.at(p)) : json();
    if (had && has && a == b) continue;
    return DifferenceLine(FirstDifference(std::string(field).substr(1), a, b), had, has);
  }
  return std::nullopt;
}
void PrepareRunFolder(const std::string& dir, bool resume, bool overwrite) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool exists = fs::exists(dir, ec);
  const bool has_run = FileExists(dir + "/run.json");
  if (resume) {
    if (!has_run)
      throw UsageError("--resume: " + dir + " holds no run (no run.json); nothing to resume");
    return;
  }
  if (!exists) return;
  if (!fs::is_directory(dir, ec)) throw UsageError(dir + " exists and is not a folder");
  if (has_run) {
    if (!overwrite)
      throw UsageError(dir +
                       " holds a run already: --resume continues it, --overwrite replaces it");
    for (const auto& e : fs::directory_iterator(dir, ec)) fs::remove_all(e.path(), ec);
    if (ec) throw EnvironmentError("cannot empty " + dir + ": " + ec.message());
    return;
  }
  if (!fs::is_empty(dir, ec))
    throw UsageError(dir + " is a folder with other files in it (no run.json); " +
                     "choose an empty or new folder");
}

}  // namespace ptxbench
