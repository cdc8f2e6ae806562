#include "serve/job_queue.h"

#include <chrono>
#include <cstdio>
#include <random>

#include "common/error.h"
#include "common/sha256.h"
#include "record/record.h"

namespace ptxbench {

using nlohmann::json;

std::string ToString(JobState s) {
  switch (s) {
    case JobState::kQueued:
      return "queued";
    case JobState::kRunning:
      return "running";
    case JobState::kDone:
      return "done";
    case JobState::kFailed:
      return "failed";
  }
  return "unknown";
}

JobState ParseJobState(const std::string& s) {
  if (s == "queued") return JobState::kQueued;
  if (s == "running") return JobState::kRunning;
  if (s == "done") return JobState::kDone;
  if (s == "failed") return JobState::kFailed;
  throw InternalError("unknown job state '" + s + "' in the queue");
}

bool IsPostgresUrl(const std::string& where) {
  return where.rfind("postgresql://", 0) == 0 || where.rfind("postgres://", 0) == 0;
}

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string RandomId() {
  // Seeded per thread from the OS: ids from many processes and hosts must not collide.
  thread_local std::mt19937_64 gen((static_cast<uint64_t>(std::random_device{}()) << 32) ^
                                   std::random_device{}());
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(gen()),
                static_cast<unsigned long long>(gen()));
  return buf;
}

json WorkerLostRecord(const Job& job) {
  const json& r = job.request;
  std::string source = r.value("source", "");
  std::string who;
  for (const auto& h : job.history) {
    if (!who.empty()) who += ", ";
    who += h.value("worker", "?");
  }
  json rec = {
      {"schema", kEvaluationSchema},
      {"status", ToString(Status::kInfraError)},
      {"reason", "worker_lost"},
      {"message", "the evaluation lost its worker " + std::to_string(job.history.size()) +
                      " times (" + who +
                      ": killed, or its host lost, before a result); not retried again"},
      {"task", {{"definition", r.value("task", "")}, {"workload_id", r.value("workload", "")}}},
      {"arch", r.value("arch", "")},
      {"candidate", {{"sha256", Sha256Hex(source)}, {"bytes", source.size()}}},
      {"service", {{"job_id", job.id}, {"attempts", job.attempts}, {"lost", job.history}}},
      {"created_at", NowUtcIso8601()},
      {"ptxbench_version", PTXBENCH_VERSION}};
  return rec;
}

}  // namespace ptxbench
