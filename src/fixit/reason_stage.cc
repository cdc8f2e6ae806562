#include "fixit/reason_stage.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/prompt.h"
#include "common/error.h"
#include "common/files.h"
#include "common/strings.h"
#include "fixit/failure.h"
#include "fixit/teacher.h"
#include "fixit/work_folder.h"
#include "record/record.h"

namespace ptxbench {
namespace {

using nlohmann::json;

// How the repair was judged, in the words the reasoning teacher reads.
std::string FixSummary(const json& r) {
  std::string s = r.value("status", "") + "; instructions " + r.value("verification", "") + " (" +
                  r.value("arch_tag", "") + ")";
  if (r["speedup"].is_number())
    s += "; " + FormatNumber("%.2f", r["speedup"].get<double>()) + "x the vendor baseline";
  if (r["tflops"].is_number())
    s += ", " + FormatNumber("%.0f", r["tflops"].get<double>()) + " TFLOP/s";
  return s;
}

struct ReasonJob {
  const Failure* failure;
  json repair;
};

// The kept repairs still without accepted reasoning for their context and repair; those that
// have it are counted in `reused`.
std::vector<ReasonJob> ReasonJobs(const json& repairs, const Manifest& m,
                                  const std::map<std::string, json>& done, int* reused) {
  std::map<std::string, const Failure*> failures;
  for (const Failure& f : m.failures) failures[f.id] = &f;
  std::vector<ReasonJob> jobs;
  for (const json& r : repairs["repairs"]) {
    if (!r.value("kept", false)) continue;
    auto it = failures.find(r["failure_id"]);
    if (it == failures.end())
      throw InputError("repairs.json names failure " + r["failure_id"].get<std::string>() +
                       ", which the manifest does not have");
    auto d = done.find(it->first);
    if (d != done.end() && d->second.value("accepted", false) &&
        d->second.value("repair_evaluation_id", "") == r.value("repair_evaluation_id", "") &&
        d->second.value("context_sha256", "") == it->second->context_sha256) {
      ++*reused;
      continue;
    }
    jobs.push_back({it->second, r});
  }
  return jobs;
}

// Asks the teacher up to `attempts` times, telling it why each rejected text was rejected.
// The reasoning.jsonl entry, or nothing when the endpoint failed (not the teacher's fault:
// not written, so the next run retries it).
std::optional<json> AskForReasoning(const ReasonStageOptions& a, Teacher& teacher,
                                    const std::string& prompts, const ReasonJob& job) {
  const Failure& f = *job.failure;
  const json& r = job.repair;
  std::string kernel = ReadFile(RepairRunDir(a.dir) + "/" + r["kernel_file"].get<std::string>());
  std::vector<ChatMessage> req = ReasoningRequest(prompts, f, kernel, FixSummary(r), a.limits);
  json entry = {{"failure_id", f.id},
                {"key", f.key},
                {"repair_evaluation_id", r["repair_evaluation_id"]},
                {"teacher", teacher.info.value("name", "")},
                {"context_sha256", f.context_sha256},
                {"accepted", false}};
  json rejections = json::array();
  for (int k = 0; k < a.attempts; ++k) {
    ChatReply reply = teacher.provider->Complete(req);
    if (reply.outcome == ChatOutcome::kInfraError) {
      std::fprintf(stderr, "fixit reason: %s: the endpoint failed (%s); run again to retry\n",
                   f.id.c_str(), reply.error.c_str());
      return std::nullopt;
    }
    ReasoningCheck c = reply.outcome == ChatOutcome::kModelError
                           ? ReasoningCheck{false, "the endpoint refused: " + reply.error}
                           : ValidateReasoning(reply.text, kernel, a.limits);
    entry["attempts"] = k + 1;
    if (c.ok) {
      entry["accepted"] = true;
      entry["text"] = Trim(reply.text);
      break;
    }
    rejections.push_back(c.why);
    req.push_back({"assistant", reply.text});
    req.push_back({"user", "That reasoning was rejected: " + c.why +
                               ". Write it again, following the rules."});
  }
  entry["rejections"] = rejections;
  entry["written_at"] = NowUtcIso8601();
  return entry;
}

}  // namespace

ReasonStageResult RunReasonStage(const ReasonStageOptions& a) {
  if (a.limits.min_chars > a.limits.max_chars)
    throw UsageError("--min-chars " + std::to_string(a.limits.min_chars) + " exceeds --max-chars " +
                     std::to_string(a.limits.max_chars));
  Manifest m = ReadManifest(ManifestPath(a.dir));
  json repairs = ReadRepairs(a.dir);
  Teacher teacher = LoadTeacher(a.models, a.teacher);
  std::map<std::string, json> done = ReadReasoning(ReasoningPath(a.dir));
  ReasonStageResult result;
  std::vector<ReasonJob> jobs = ReasonJobs(repairs, m, done, &result.reused);

  std::mutex mu;
  std::ofstream out(ReasoningPath(a.dir), std::ios::app);
  if (!out) throw InputError("cannot write " + ReasoningPath(a.dir));
  std::atomic<size_t> next{0};
  std::atomic<int> accepted{0}, rejected{0}, lost{0};
  const std::string prompts = DefaultPromptsDir();
  auto work = [&] {
    for (size_t i; (i = next++) < jobs.size();) {
      std::optional<json> entry = AskForReasoning(a, teacher, prompts, jobs[i]);
      if (!entry) {
        ++lost;
        continue;
      }
      ((*entry)["accepted"].get<bool>() ? accepted : rejected)++;
      std::lock_guard<std::mutex> lock(mu);
      out << entry->dump() << "\n";
      out.flush();
    }
  };
  std::vector<std::thread> pool;
  int n = std::max(1, std::min<int>(a.concurrency, static_cast<int>(jobs.size())));
  for (int i = 0; i < n; ++i) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  result.accepted = accepted.load();
  result.rejected = rejected.load();
  result.lost = lost.load();
  return result;
}

}  // namespace ptxbench
