// What the queue's backends (queue_sqlite.cc, queue_postgres.cc) share, so that both answer
// alike: header only, for those two files.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "serve/job_queue.h"
#include "store/storage_error.h"

namespace ptxbench::queue_backend {

// The connection's lock was not had within `waited` ("1 s"): a write holds it.
inline StorageError Busy(const std::string& waited) {
  return StorageError(StorageFailure::kBusy,
                      "the queue database is busy: a write has waited on it for over " + waited);
}

// The connection's lock for Health: behind a write stuck on the database's lock, health says
// so (StorageError, busy) instead of waiting with it.
inline std::unique_lock<std::timed_mutex> LockForHealth(std::timed_mutex& mu) {
  std::unique_lock<std::timed_mutex> lock(mu, std::chrono::seconds(1));
  if (!lock) throw Busy("1 s");
  return lock;
}

// What ProbeWrite reports of `write` (the probe's transaction): nothing, or why it failed.
template <typename Write>
std::optional<StorageError> ProblemOf(Write&& write) {
  try {
    write();
  } catch (const StorageError& e) {
    return e;
  } catch (const std::exception& e) {
    return StorageError(StorageFailure::kOther, e.what());
  }
  return std::nullopt;
}

// One row of "SELECT state, gpu, count(*) … GROUP BY state, gpu", added to the counts.
inline void AddJobCount(const std::string& state, const std::string& gpu, int64_t n,
                        QueueHealth* h) {
  if (state == "queued") h->queued += n;
  if (state == "done") h->done += n;
  if (state == "failed") h->failed += n;
  if (state == "running") {
    h->running += n;
    h->running_by_gpu[gpu] += n;
  }
}

// A worker last heard from `heartbeat_age_s` ago: alive if that is within `alive_within`.
inline WorkerStatus StatusOf(WorkerIdentity identity, double heartbeat_age_s,
                             std::chrono::seconds alive_within) {
  return {std::move(identity), heartbeat_age_s,
          heartbeat_age_s <= static_cast<double>(alive_within.count())};
}

// A running job whose lease passed: the lost attempt goes into its history. True when that was
// its last (kMaxJobAttempts): the job ends failed instead of going back to the queue.
inline bool NoteLostLease(Job* j) {
  j->history.push_back({{"attempt", j->attempts},
                        {"worker", j->worker},
                        {"gpu", j->gpu},
                        {"claimed_at", j->claimed_at},
                        {"lease_expired_at", j->lease_until}});
  return j->attempts >= kMaxJobAttempts;
}

}  // namespace ptxbench::queue_backend
