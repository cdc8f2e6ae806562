// The evaluation service's queue: jobs submitted through the API, claimed by workers under
// leases, each result written exactly once. Two backends behind one interface: the embedded
// SQLite store for one host (queue_sqlite.cc) and PostgreSQL for many (queue_postgres.cc).
//
// Life of a job:
//
//   Submit ─► queued ──Claim──► running ──Complete (current lease)──► done
//                ▲                 │
//                │   lease expired │ (worker killed, host lost)
//                └── attempts < N ─┤
//                                  └── attempts = N ──► failed (INFRA_ERROR, worker_lost)
//
// A lease is a token and an expiry; the holder renews it while it works. Only the holder of
// the current lease may complete the job: a late result from a worker whose lease expired
// (presumed dead, and the job retried elsewhere) is refused, so every job has one result.
//
// A failure of the database throws StorageError (store/storage_error.h): retryable() when it is
// down, restarting or locked, so that the service answers 503 with Retry-After, not 500.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/storage_error.h"

namespace ptxbench {

enum class JobState { kQueued, kRunning, kDone, kFailed };
std::string ToString(JobState s);
JobState ParseJobState(const std::string& s);  // throws InternalError on an unknown name

// Who works on jobs: one worker process, normally one per GPU.
struct WorkerIdentity {
  std::string id;  // unique over all hosts: host:pid:gpu
  std::string host;
  int64_t pid = 0;
  std::string gpu;  // the device label it sees ("0", a UUID, or "none")
};

struct Job {
  std::string id;
  JobState state = JobState::kQueued;
  nlohmann::json request;  // task, workload, arch, source, options (server.h validates)
  int attempts = 0;        // claims so far
  std::string worker, gpu, lease_token;
  double lease_until = 0, submitted_at = 0, claimed_at = 0, finished_at = 0;
  double gpu_started_at = 0, gpu_ended_at = 0;       // the GPU stage of the attempt that completed
  nlohmann::json history = nlohmann::json::array();  // one entry per lost lease
  std::optional<nlohmann::json> result;              // the evaluation record (done or failed)
};

struct WorkerStatus {
  WorkerIdentity identity;
  double heartbeat_age_s = 0;
  bool alive = false;
};

struct QueueHealth {
  int64_t queued = 0, running = 0, done = 0, failed = 0;
  std::map<std::string, int64_t> running_by_gpu;
  std::vector<WorkerStatus> workers;
};

// A job with its result, as reports read it: the client's tag (null for untagged jobs, such as
// `ptxbench submit`) and the evaluation record, without the source.
struct FinishedJob {
  std::string id;
  JobState state = JobState::kDone;
  nlohmann::json tag;
  nlohmann::json record;
  std::string worker, gpu;
};

// What a worker reports with its result: the GPU stage's wall-clock span (Unix seconds), so
// that overlapping timed evaluations on one device can be found afterwards.
struct GpuStageTimes {
  double started_at = 0, ended_at = 0;
};

// A job whose lease expired this many times ends failed instead of going back to the queue.
constexpr int kMaxJobAttempts = 2;

// The most one job may write as its result: a record over this is refused by Complete (an
// InputError; nothing written). The evaluation caps its own record at 1 MiB (CapRecordSize);
// this is the queue's own word, whatever a worker sends.
constexpr size_t kMaxStoredRecordBytes = 2 << 20;

// The text a record is stored as; throws InputError, naming the sizes, over
// kMaxStoredRecordBytes.
std::string StoredRecordText(const nlohmann::json& record, const std::string& job_id);

// `record` made to fit `limit` bytes for storage: its small fields (schema, status, reason,
// task, candidate, service, …) kept, a string over 16 KiB cut to its first 16 KiB, any other
// field over 16 KiB replaced by {"cut": true, "bytes": N}, and "record_cut" saying how large it
// was. Unchanged when it fits.
nlohmann::json FitRecord(const nlohmann::json& record, size_t limit = kMaxStoredRecordBytes);

class JobQueue {
 public:
  virtual ~JobQueue() = default;
  // A backend's name and where it is, for logs and health ("sqlite:/path", "postgresql:host").
  virtual std::string Describe() const = 0;

  // Queues a job; returns its id (random, unique across hosts).
  virtual std::string Submit(const nlohmann::json& request) = 0;
  // Ends expired leases (back to the queue, or failed after kMaxJobAttempts), then claims the
  // oldest queued job for `worker` with a lease of `lease`; nullopt when none is queued.
  // Concurrent claims never return the same job.
  virtual std::optional<Job> Claim(const WorkerIdentity& worker, std::chrono::seconds lease) = 0;
  // Extends a lease; false when it is no longer this token's (expired and taken over).
  virtual bool Renew(const std::string& job_id, const std::string& lease_token,
                     std::chrono::seconds lease) = 0;
  // Writes the result of the current lease; false (nothing written) when the lease is no
  // longer this token's: the job was retried elsewhere or already has its result.
  virtual bool Complete(const std::string& job_id, const std::string& lease_token,
                        const nlohmann::json& record, const GpuStageTimes& gpu) = 0;
  // Ends expired leases now; returns how many jobs it requeued or failed.
  virtual int ExpireLeases() = 0;
  virtual std::optional<Job> Get(const std::string& job_id) = 0;
  // Only the state of a job (nullopt: no such job): one indexed lookup, no JSON, cheap enough
  // for every long-polling client to ask every few milliseconds.
  virtual std::optional<JobState> State(const std::string& job_id) = 0;
  // Every job that has its result (done or failed), in submission order.
  virtual std::vector<FinishedJob> Finished() = 0;
  // Registers the worker or refreshes its heartbeat.
  virtual void Heartbeat(const WorkerIdentity& worker) = 0;
  // Queue depth, running jobs per GPU, and the workers seen within `alive_within`.
  virtual QueueHealth Health(std::chrono::seconds alive_within) = 0;
  // Gives a claimed job back to the queue without a result (its worker is stopping before it
  // could evaluate it): queued again, this attempt not counted. False when the lease is no
  // longer this token's.
  virtual bool Release(const std::string& job_id, const std::string& lease_token) = 0;
  // A small real write to the queue's database, for health: nullopt when it went through,
  // else what failed (a lock not had within `timeout`, a full disk, a lost connection).
  virtual std::optional<StorageError> ProbeWrite(std::chrono::milliseconds timeout) = 0;
  // The local folder whose free space decides whether writes can succeed (the SQLite file's);
  // empty where the database is elsewhere (PostgreSQL).
  virtual std::string LocalFolder() const { return ""; }
  // How long a write waits for another writer's lock before it fails (StorageError, busy):
  // the HTTP server answers within seconds (503) rather than after the workers' minute.
  // SQLite only; a no-op elsewhere.
  virtual void SetLockWait(std::chrono::milliseconds) {}
};

// "postgresql://…" or "postgres://…": PostgreSQL; anything else: a SQLite store file. Throws
// EnvironmentError when the backend is not built in or cannot be reached.
std::unique_ptr<JobQueue> OpenJobQueue(const std::string& where);
bool IsPostgresUrl(const std::string& where);

// The queue's location from a file (--db-file, $PTXBENCH_DB_FILE): its first line, trimmed. It
// may hold a password, so the file must be a regular file of this user's that no one else can
// read or write (0600 or 0400, as ssh wants of a key); throws UsageError saying what is wrong.
std::string ReadQueueLocationFile(const std::string& path);

// The record of a job that lost its worker kMaxJobAttempts times: INFRA_ERROR, reason
// worker_lost, with the workers and times of each lost attempt.
nlohmann::json WorkerLostRecord(const Job& job);

// `text` with every password it may hold replaced by ***: "password=…" (connection strings,
// in any case) and the "user:password@" of a URL. For every log line and message that may quote
// a queue's location or its database's errors.
std::string RedactSecrets(const std::string& text);

// Shared by the backends.
double UnixNow();
std::string RandomId();  // 32 hex digits

}  // namespace ptxbench
