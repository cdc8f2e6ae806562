// The single-host queue: the jobs and workers tables of the SQLite results store (migration 2
// in store.cc). Every change is one BEGIN IMMEDIATE transaction, so the server and the worker
// processes of a host share the file safely; a finished job's record is also written to the
// store's evaluations table (id "serve/<job id>"), where `ptxbench report` and SQL find it.
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "common/error.h"
#include "serve/job_queue.h"
#include "serve/queue_backend.h"
#include "store/sqlite_util.h"
#include "store/store.h"

namespace ptxbench {
namespace {

using nlohmann::json;
using sqlite::Exec;
using sqlite::Stmt;
using sqlite::Transaction;

const char* kJobColumns =
    "id, state, request_json, attempts, worker, gpu, lease_token, lease_until, submitted_at, "
    "claimed_at, finished_at, gpu_started_at, gpu_ended_at, history_json, result_json";

Job ReadJob(const Stmt& s) {
  Job j;
  j.id = s.ColText(0);
  j.state = ParseJobState(s.ColText(1));
  // A row that does not parse is still a job (its worker records why it cannot run it), not
  // an exception that would fail every claim after it.
  j.request = json::parse(s.ColText(2), nullptr, false);
  if (j.request.is_discarded()) j.request = json();
  j.attempts = static_cast<int>(s.ColInt(3));
  j.worker = s.ColText(4);
  j.gpu = s.ColText(5);
  j.lease_token = s.ColText(6);
  j.lease_until = s.ColReal(7);
  j.submitted_at = s.ColReal(8);
  j.claimed_at = s.ColReal(9);
  j.finished_at = s.ColReal(10);
  j.gpu_started_at = s.ColReal(11);
  j.gpu_ended_at = s.ColReal(12);
  j.history = json::parse(s.ColText(13), nullptr, false);
  if (!j.history.is_array()) j.history = json::array();
  if (!s.ColNull(14)) {
    j.result = json::parse(s.ColText(14), nullptr, false);
    if (j.result->is_discarded()) j.result.reset();
  }
  return j;
}

std::string EvaluationIdOf(const std::string& job_id) { return "serve/" + job_id; }

// The queue holds every submitted source and record: readable by its owner only. The file is
// created 0600 before SQLite opens it (SQLite gives its -wal and -shm files the same mode); an
// older one of ours that others could read is made 0600. Not a symlink.
void MakePrivateFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    if (errno == ELOOP)
      throw EnvironmentError(path + ": the job queue's file is a symbolic link; refused");
    return;  // SQLite says what is wrong with it
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_uid == ::geteuid() && (st.st_mode & 077) != 0)
    ::fchmod(fd, 0600);
  ::close(fd);
  for (const char* suffix : {"-wal", "-shm"}) {
    std::string side = path + suffix;
    struct stat ss {};
    if (::lstat(side.c_str(), &ss) == 0 && S_ISREG(ss.st_mode) && ss.st_uid == ::geteuid() &&
        (ss.st_mode & 077) != 0)
      ::chmod(side.c_str(), 0600);
  }
}

const std::string& CreatedPrivate(const std::string& path) {
  MakePrivateFile(path);
  return path;
}

class SqliteJobQueue final : public JobQueue {
 public:
  explicit SqliteJobQueue(const std::string& path)
      : path_(path), store_(ResultsStore::Open(CreatedPrivate(path))) {  // creates or migrates
    db_ = sqlite::OpenConnection(path_, "the job queue", /*create=*/false,
                                 "PRAGMA synchronous=NORMAL");
  }
  ~SqliteJobQueue() override { sqlite3_close_v2(db_); }

  std::string Describe() const override { return "sqlite:" + path_; }
  void SetLockWait(std::chrono::milliseconds wait) override {
    std::lock_guard<std::timed_mutex> lock(mu_);
    busy_timeout_ms_ = static_cast<int>(wait.count());
    sqlite3_busy_timeout(db_, busy_timeout_ms_);
  }
  std::string LocalFolder() const override {
    size_t slash = path_.rfind('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
  }

  bool Release(const std::string& job_id, const std::string& token) override {
    std::lock_guard<std::timed_mutex> lock(mu_);
    Stmt s(db_, path_,
           "UPDATE jobs SET state='queued', attempts=max(attempts-1,0), worker='', "
           "lease_token='', lease_until=NULL WHERE id=?1 AND lease_token=?2 AND state='running'");
    s.Text(1, job_id);
    s.Text(2, token);
    s.Run();
    return sqlite3_changes(db_) == 1;
  }

  // A row written and removed in one committed transaction: the pages are written to the WAL,
  // so a full disk or a database nobody can write fails here; a writer holding the lock
  // longer than `timeout` too.
  std::optional<StorageError> ProbeWrite(std::chrono::milliseconds timeout) override {
    std::unique_lock<std::timed_mutex> lock(mu_, timeout);
    if (!lock)
      return queue_backend::Busy(std::to_string(timeout.count()) +
                                 " ms (locked by another process?)");
    sqlite3_busy_timeout(db_, static_cast<int>(timeout.count()));
    std::optional<StorageError> problem = queue_backend::ProblemOf([&] {
      Transaction txn(db_, path_);
      Exec(db_, path_,
           "INSERT OR REPLACE INTO workers (id, host, pid, gpu, started_at, heartbeat_at) "
           "VALUES ('~health-probe', '', 0, '', 0, 0)");
      Exec(db_, path_, "DELETE FROM workers WHERE id='~health-probe'");
      txn.Commit();
    });
    sqlite3_busy_timeout(db_, busy_timeout_ms_);
    return problem;
  }

  std::string Submit(const json& request) override {
    std::string id = RandomId();
    std::string text = request.dump(-1, ' ', false, json::error_handler_t::replace);
    std::lock_guard<std::timed_mutex> lock(mu_);
    Stmt s(db_, path_,
           "INSERT INTO jobs (id, state, request_json, submitted_at) VALUES (?1,'queued',?2,?3)");
    s.Text(1, id);
    s.Text(2, text);
    s.Real(3, UnixNow());
    s.Run();
    return id;
  }

  std::optional<Job> Claim(const WorkerIdentity& w, std::chrono::seconds lease) override {
    std::vector<json> failed;
    std::optional<Job> job;
    {
      std::lock_guard<std::timed_mutex> lock(mu_);
      Transaction txn(db_, path_);
      double now = UnixNow();
      failed = ExpireLocked(now);
      std::string id;
      {
        Stmt pick(db_, path_,
                  "SELECT id FROM jobs WHERE state='queued' ORDER BY submitted_at, id LIMIT 1");
        if (pick.Step()) id = pick.ColText(0);
      }
      if (!id.empty()) {
        Stmt claim(db_, path_,
                   "UPDATE jobs SET state='running', attempts=attempts+1, worker=?1, gpu=?2, "
                   "lease_token=?3, lease_until=?4, claimed_at=?5 WHERE id=?6");
        claim.Text(1, w.id);
        claim.Text(2, w.gpu);
        claim.Text(3, RandomId());
        claim.Real(4, now + static_cast<double>(lease.count()));
        claim.Real(5, now);
        claim.Text(6, id);
        claim.Run();
        job = GetLocked(id);
      }
      txn.Commit();
    }
    MirrorFailed(failed);
    return job;
  }

  bool Renew(const std::string& job_id, const std::string& token,
             std::chrono::seconds lease) override {
    std::lock_guard<std::timed_mutex> lock(mu_);
    Stmt s(db_, path_,
           "UPDATE jobs SET lease_until=?1 WHERE id=?2 AND lease_token=?3 AND state='running'");
    s.Real(1, UnixNow() + static_cast<double>(lease.count()));
    s.Text(2, job_id);
    s.Text(3, token);
    s.Run();
    return sqlite3_changes(db_) == 1;
  }

  bool Complete(const std::string& job_id, const std::string& token, const json& record,
                const GpuStageTimes& gpu) override {
    ResultsStore::CheckEvaluation(record, "the result of job " + job_id);
    const std::string text = StoredRecordText(record, job_id);
    {
      std::lock_guard<std::timed_mutex> lock(mu_);
      Stmt s(db_, path_,
             "UPDATE jobs SET state='done', result_json=?1, finished_at=?2, gpu_started_at=?3, "
             "gpu_ended_at=?4, lease_token='' WHERE id=?5 AND lease_token=?6 AND "
             "state='running'");
      s.Text(1, text);
      s.Real(2, UnixNow());
      s.Real(3, gpu.started_at);
      s.Real(4, gpu.ended_at);
      s.Text(5, job_id);
      s.Text(6, token);
      s.Run();
      if (sqlite3_changes(db_) != 1) return false;
    }
    // Only the one completion that won the row gets here: the evaluations row is written once
    // per job (an upsert by the job's id, so a crash between the two writes is repaired by
    // nothing worse than the record missing from evaluations; the job row has it).
    store_->PutEvaluation(record, EvaluationIdOf(job_id));
    return true;
  }

  int ExpireLeases() override {
    std::vector<json> failed;
    int n = 0;
    {
      std::lock_guard<std::timed_mutex> lock(mu_);
      Transaction txn(db_, path_);
      int before = sqlite3_total_changes(db_);
      failed = ExpireLocked(UnixNow());
      n = (sqlite3_total_changes(db_) - before);
      txn.Commit();
    }
    MirrorFailed(failed);
    return n;
  }

  std::optional<Job> Get(const std::string& job_id) override {
    std::lock_guard<std::timed_mutex> lock(mu_);
    return GetLocked(job_id);
  }

  std::vector<FinishedJob> Finished() override {
    std::lock_guard<std::timed_mutex> lock(mu_);
    Stmt s(db_, path_,
           "SELECT id, state, json_extract(request_json, '$.tag'), result_json, worker, gpu "
           "FROM jobs WHERE state IN ('done','failed') AND result_json IS NOT NULL "
           "ORDER BY submitted_at, id");
    std::vector<FinishedJob> out;
    while (s.Step()) {
      FinishedJob f;
      f.id = s.ColText(0);
      f.state = ParseJobState(s.ColText(1));
      if (!s.ColNull(2)) f.tag = json::parse(s.ColText(2), nullptr, false);
      f.record = json::parse(s.ColText(3), nullptr, false);
      f.worker = s.ColText(4);
      f.gpu = s.ColText(5);
      out.push_back(std::move(f));
    }
    return out;
  }

  std::optional<JobState> State(const std::string& job_id) override {
    std::lock_guard<std::timed_mutex> lock(mu_);
    Stmt s(db_, path_, "SELECT state FROM jobs WHERE id=?1");
    s.Text(1, job_id);
    if (!s.Step()) return std::nullopt;
    return ParseJobState(s.ColText(0));
  }

  void Heartbeat(const WorkerIdentity& w) override {
    std::lock_guard<std::timed_mutex> lock(mu_);
    Stmt s(db_, path_,
           "INSERT INTO workers (id, host, pid, gpu, started_at, heartbeat_at) VALUES "
           "(?1,?2,?3,?4,?5,?5) ON CONFLICT(id) DO UPDATE SET heartbeat_at=excluded.heartbeat_at");
    s.Text(1, w.id);
    s.Text(2, w.host);
    s.Int(3, w.pid);
    s.Text(4, w.gpu);
    s.Real(5, UnixNow());
    s.Run();
  }

  QueueHealth Health(std::chrono::seconds alive_within) override {
    std::unique_lock<std::timed_mutex> lock = queue_backend::LockForHealth(mu_);
    QueueHealth h;
    {
      Stmt s(db_, path_, "SELECT state, gpu, count(*) FROM jobs GROUP BY state, gpu");
      while (s.Step()) queue_backend::AddJobCount(s.ColText(0), s.ColText(1), s.ColInt(2), &h);
    }
    double now = UnixNow();
    Stmt w(db_, path_,
           "SELECT id, host, pid, gpu, heartbeat_at FROM workers WHERE heartbeat_at > ?1 "
           "ORDER BY id");
    // Workers not seen for an hour are history, not health.
    w.Real(1, now - 3600);
    while (w.Step())
      h.workers.push_back(
          queue_backend::StatusOf({w.ColText(0), w.ColText(1), w.ColInt(2), w.ColText(3)},
                                  now - w.ColReal(4), alive_within));
    return h;
  }

 private:
  std::optional<Job> GetLocked(const std::string& id) {
    Stmt s(db_, path_, std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id=?1");
    s.Text(1, id);
    if (!s.Step()) return std::nullopt;
    return ReadJob(s);
  }

  // Inside a transaction: every running job whose lease has passed goes back to the queue, or
  // ends failed after kMaxJobAttempts lost leases. Returns the failed jobs' ids and records.
  std::vector<json> ExpireLocked(double now) {
    std::vector<Job> expired;
    {
      Stmt s(db_, path_,
             std::string("SELECT ") + kJobColumns +
                 " FROM jobs WHERE state='running' AND lease_until < ?1");
      s.Real(1, now);
      while (s.Step()) expired.push_back(ReadJob(s));
    }
    std::vector<json> failed;
    for (Job& j : expired) {
      bool give_up = queue_backend::NoteLostLease(&j);
      json record = give_up ? WorkerLostRecord(j) : json();
      Stmt u(db_, path_,
             "UPDATE jobs SET state=?1, worker='', lease_token='', lease_until=NULL, "
             "history_json=?2, result_json=?3, finished_at=?4 WHERE id=?5");
      u.Text(1, give_up ? "failed" : "queued");
      u.Text(2, j.history.dump());
      if (give_up) {
        u.Text(3, record.dump());
        u.Real(4, now);
      }
      u.Text(5, j.id);
      u.Run();
      if (give_up) failed.push_back({{"id", j.id}, {"record", record}});
    }
    return failed;
  }

  void MirrorFailed(const std::vector<json>& failed) {
    for (const json& f : failed) store_->PutEvaluation(f["record"], EvaluationIdOf(f["id"]));
  }

  std::string path_;
  std::unique_ptr<ResultsStore> store_;
  std::timed_mutex mu_;  // one connection, used by one thread at a time
  sqlite3* db_ = nullptr;
  int busy_timeout_ms_ = sqlite::kBusyTimeoutMs;
};

}  // namespace

std::unique_ptr<JobQueue> OpenSqliteJobQueue(const std::string& path) {
  return std::make_unique<SqliteJobQueue>(path);
}

}  // namespace ptxbench
