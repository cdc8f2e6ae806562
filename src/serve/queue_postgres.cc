// The many-host queue: PostgreSQL tables shared by every worker host. Claims lock the oldest
// queued row with FOR UPDATE SKIP LOCKED, so concurrent workers never wait on each other nor
// take the same job; times come from the database's clock (hosts' clocks may differ); a
// result goes into ptxbench_results, whose primary key is the job id, in the same transaction
// that checks the lease, so each job has exactly one result.
#include <libpq-fe.h>

#include <algorithm>
#include <memory>
#include <mutex>

#include "common/error.h"
#include "record/record.h"
#include "serve/job_queue.h"
#include "serve/queue_backend.h"
#include "store/storage_error.h"

namespace ptxbench {
namespace {

using nlohmann::json;

// The schema, created once per database (under an advisory lock: CREATE … IF NOT EXISTS
// from several processes at once can still collide in the catalog).
constexpr const char* kSchemaSql = R"sql(
SELECT pg_advisory_xact_lock(5054584201);
CREATE TABLE IF NOT EXISTS ptxbench_jobs (
  id TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  request_json TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  worker TEXT NOT NULL DEFAULT '',
  gpu TEXT NOT NULL DEFAULT '',
  lease_token TEXT NOT NULL DEFAULT '',
  lease_until DOUBLE PRECISION,
  submitted_at DOUBLE PRECISION NOT NULL,
  claimed_at DOUBLE PRECISION,
  finished_at DOUBLE PRECISION,
  gpu_started_at DOUBLE PRECISION,
  gpu_ended_at DOUBLE PRECISION,
  history_json TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS ptxbench_jobs_queued ON ptxbench_jobs (submitted_at, id)
  WHERE state = 'queued';
CREATE INDEX IF NOT EXISTS ptxbench_jobs_running ON ptxbench_jobs (lease_until)
  WHERE state = 'running';
CREATE TABLE IF NOT EXISTS ptxbench_results (
  job_id TEXT PRIMARY KEY REFERENCES ptxbench_jobs(id),
  worker TEXT NOT NULL,
  status TEXT NOT NULL,
  recorded_at DOUBLE PRECISION NOT NULL,
  record_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ptxbench_workers (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  pid BIGINT NOT NULL,
  gpu TEXT NOT NULL DEFAULT '',
  started_at DOUBLE PRECISION NOT NULL,
  heartbeat_at DOUBLE PRECISION NOT NULL
);
)sql";

constexpr const char* kNow = "extract(epoch from clock_timestamp())::double precision";

const char* kJobColumns =
    "j.id, j.state, j.request_json, j.attempts, j.worker, j.gpu, j.lease_token, "
    "coalesce(j.lease_until,0), j.submitted_at, coalesce(j.claimed_at,0), "
    "coalesce(j.finished_at,0), coalesce(j.gpu_started_at,0), coalesce(j.gpu_ended_at,0), "
    "j.history_json";

using ResultPtr = std::unique_ptr<PGresult, decltype(&PQclear)>;

class PgJobQueue final : public JobQueue {
 public:
  explicit PgJobQueue(const std::string& url) : url_(url) {
    conn_ = PQconnectdb(url.c_str());
    if (PQstatus(conn_) != CONNECTION_OK) {
      std::string msg = PQerrorMessage(conn_);
      PQfinish(conn_);
      conn_ = nullptr;
      throw EnvironmentError("cannot connect to PostgreSQL at " + Redacted() + ": " +
                             RedactSecrets(Trimmed(msg)));
    }
    std::lock_guard<std::timed_mutex> lock(mu_);
    // The schema's IF NOT EXISTS notices are not news for a worker's log.
    Run("SET client_min_messages TO warning");
    Run("BEGIN");
    Run(kSchemaSql);
    Run("COMMIT");
  }
  ~PgJobQueue() override {
    if (conn_) PQfinish(conn_);
  }

  std::string Describe() const override { return "postgresql:" + Redacted(); }

  std::string Submit(const json& request) override {
    std::string id = RandomId();
    std::string text = request.dump(-1, ' ', false, json::error_handler_t::replace);
    std::lock_guard<std::timed_mutex> lock(mu_);
    Run(std::string("INSERT INTO ptxbench_jobs (id, state, request_json, submitted_at) VALUES "
                    "($1, 'queued', $2, ") +
            kNow + ")",
        {id, text});
    return id;
  }

  std::optional<Job> Claim(const WorkerIdentity& w, std::chrono::seconds lease) override {
    std::lock_guard<std::timed_mutex> lock(mu_);
    Transaction txn(*this);
    ExpireLocked();
    ResultPtr r = Run(std::string("WITH next AS (SELECT id FROM ptxbench_jobs WHERE "
                                  "state='queued' ORDER BY submitted_at, id LIMIT 1 FOR UPDATE "
                                  "SKIP LOCKED) UPDATE ptxbench_jobs j SET state='running', "
                                  "attempts=j.attempts+1, worker=$1, gpu=$2, lease_token=$3, "
                                  "lease_until=") +
                          kNow + " + $4::double precision, claimed_at=" + kNow +
                          " FROM next WHERE j.id = next.id RETURNING " + kJobColumns,
                      {w.id, w.gpu, RandomId(), std::to_string(lease.count())});
    std::optional<Job> job;
    if (PQntuples(r.get()) == 1) job = ReadJob(r.get(), 0);
    txn.Commit();
    return job;
  }

  bool Renew(const std::string& job_id, const std::string& token,
             std::chrono::seconds lease) override {
    std::lock_guard<std::timed_mutex> lock(mu_);
    ResultPtr r = Run(std::string("UPDATE ptxbench_jobs SET lease_until=") + kNow +
                          " + $3::double precision WHERE id=$1 AND lease_token=$2 AND "
                          "state='running'",
                      {job_id, token, std::to_string(lease.count())});
    return std::string(PQcmdTuples(r.get())) == "1";
  }

  bool Complete(const std::string& job_id, const std::string& token, const json& record,
                const GpuStageTimes& gpu) override {
    const Status status = FromJson(record).status;
    if (status == Status::kUnknown)
      throw InputError("the result of job " + job_id + ": not an evaluation record");
    const std::string text = StoredRecordText(record, job_id);
    std::lock_guard<std::timed_mutex> lock(mu_);
    Transaction txn(*this);
    ResultPtr r = Run(std::string("UPDATE ptxbench_jobs SET state='done', lease_token='', "
                                  "finished_at=") +
                          kNow +
                          ", gpu_started_at=$3::double precision, gpu_ended_at=$4::double "
                          "precision WHERE id=$1 AND lease_token=$2 AND state='running' "
                          "RETURNING worker",
                      {job_id, token, Num(gpu.started_at), Num(gpu.ended_at)});
    if (PQntuples(r.get()) != 1) return false;  // rolled back: not this lease's any more
    // The primary key refuses a second result for the job, whatever went before.
    Run(std::string("INSERT INTO ptxbench_results (job_id, worker, status, recorded_at, "
                    "record_json) VALUES ($1, $2, $3, ") +
            kNow + ", $4)",
        {job_id, PQgetvalue(r.get(), 0, 0), ToString(status), text});
    txn.Commit();
    return true;
  }

  bool Release(const std::string& job_id, const std::string& token) override {
    std::lock_guard<std::timed_mutex> lock(mu_);
    ResultPtr r =
        Run("UPDATE ptxbench_jobs SET state='queued', attempts=greatest(attempts-1,0), worker='', "
            "lease_token='', lease_until=NULL WHERE id=$1 AND lease_token=$2 AND state='running'",
            {job_id, token});
    return std::string(PQcmdTuples(r.get())) == "1";
  }

  std::optional<StorageError> ProbeWrite(std::chrono::milliseconds timeout) override {
    std::unique_lock<std::timed_mutex> lock(mu_, timeout);
    if (!lock)
      return queue_backend::Busy(std::to_string(timeout.count()) +
                                 " ms (locked by another process?)");
    return queue_backend::ProblemOf([&] {
      Transaction txn(*this);
      std::string ms = std::to_string(std::max<int64_t>(1, timeout.count()));
      Run("SET LOCAL statement_timeout = " + ms);
      Run("SET LOCAL lock_timeout = " + ms);
      Run(
          std::string("INSERT INTO ptxbench_workers (id, host, pid, gpu, started_at, "
                      "heartbeat_at) VALUES ('~health-probe', '', 0, '', 0, 0) ON CONFLICT (id) "
                      "DO NOTHING"));
      Run("DELETE FROM ptxbench_workers WHERE id='~health-probe'");
      txn.Commit();
    });
  }

  int ExpireLeases() override {
    std::lock_guard<std::timed_mutex> lock(mu_);
    Transaction txn(*this);
    int n = ExpireLocked();
    txn.Commit();
    return n;
  }

  std::optional<Job> Get(const std::string& job_id) override {
    std::lock_guard<std::timed_mutex> lock(mu_);
    ResultPtr r = Run(std::string("SELECT ") + kJobColumns +
                          ", r.record_json FROM ptxbench_jobs j LEFT JOIN ptxbench_results r ON "
                          "r.job_id = j.id WHERE j.id=$1",
                      {job_id});
    if (PQntuples(r.get()) != 1) return std::nullopt;
    Job j = ReadJob(r.get(), 0);
    if (!PQgetisnull(r.get(), 0, 14)) j.result = json::parse(PQgetvalue(r.get(), 0, 14));
    return j;
  }

  std::vector<FinishedJob> Finished() override {
    std::lock_guard<std::timed_mutex> lock(mu_);
    ResultPtr r =
        Run("SELECT j.id, j.state, (j.request_json::json -> 'tag')::text, r.record_json, r.worker, "
            "j.gpu FROM ptxbench_jobs j JOIN ptxbench_results r ON r.job_id = j.id "
            "ORDER BY j.submitted_at, j.id");
    std::vector<FinishedJob> out;
    for (int i = 0; i < PQntuples(r.get()); ++i) {
      FinishedJob f;
      f.id = PQgetvalue(r.get(), i, 0);
      f.state = ParseJobState(PQgetvalue(r.get(), i, 1));
      if (!PQgetisnull(r.get(), i, 2))
        f.tag = json::parse(PQgetvalue(r.get(), i, 2), nullptr, false);
      f.record = json::parse(PQgetvalue(r.get(), i, 3), nullptr, false);
      f.worker = PQgetvalue(r.get(), i, 4);
      f.gpu = PQgetvalue(r.get(), i, 5);
      out.push_back(std::move(f));
    }
    return out;
  }

  std::optional<JobState> State(const std::string& job_id) override {
    std::lock_guard<std::timed_mutex> lock(mu_);
    ResultPtr r = Run("SELECT state FROM ptxbench_jobs WHERE id=$1", {job_id});
    if (PQntuples(r.get()) != 1) return std::nullopt;
    return ParseJobState(PQgetvalue(r.get(), 0, 0));
  }

  void Heartbeat(const WorkerIdentity& w) override {
    std::lock_guard<std::timed_mutex> lock(mu_);
    Run(std::string("INSERT INTO ptxbench_workers (id, host, pid, gpu, started_at, "
                    "heartbeat_at) VALUES ($1, $2, $3, $4, ") +
            kNow + ", " + kNow +
            ") ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
        {w.id, w.host, std::to_string(w.pid), w.gpu});
  }

  QueueHealth Health(std::chrono::seconds alive_within) override {
    std::unique_lock<std::timed_mutex> lock = queue_backend::LockForHealth(mu_);
    QueueHealth h;
    ResultPtr c = Run("SELECT state, gpu, count(*) FROM ptxbench_jobs GROUP BY state, gpu");
    for (int i = 0; i < PQntuples(c.get()); ++i)
      queue_backend::AddJobCount(PQgetvalue(c.get(), i, 0), PQgetvalue(c.get(), i, 1),
                                 std::stoll(PQgetvalue(c.get(), i, 2)), &h);
    ResultPtr w = Run(std::string("SELECT id, host, pid, gpu, ") + kNow +
                      " - heartbeat_at FROM ptxbench_workers WHERE heartbeat_at > " + kNow +
                      " - 3600 ORDER BY id");
    for (int i = 0; i < PQntuples(w.get()); ++i)
      h.workers.push_back(queue_backend::StatusOf(
          {PQgetvalue(w.get(), i, 0), PQgetvalue(w.get(), i, 1),
           std::stoll(PQgetvalue(w.get(), i, 2)), PQgetvalue(w.get(), i, 3)},
          std::stod(PQgetvalue(w.get(), i, 4)), alive_within));
    return h;
  }

 private:
  // BEGIN … COMMIT, rolled back when Commit was not reached.
  class Transaction {
   public:
    explicit Transaction(PgJobQueue& q) : q_(q) { q_.Run("BEGIN"); }
    ~Transaction() {
      if (!done_) PQclear(PQexec(q_.conn_, "ROLLBACK"));
    }
    void Commit() {
      q_.Run("COMMIT");
      done_ = true;
    }

   private:
    PgJobQueue& q_;
    bool done_ = false;
  };

  static std::string Trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }
  static std::string Num(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6f", v);
    return buf;
  }
  // The URL without a password, for messages.
  std::string Redacted() const { return RedactSecrets(url_); }

  // One statement with text parameters; throws StorageError on failure. A broken connection
  // (the server restarted) is reset once, outside a transaction, and a BEGIN or a SELECT sent
  // again on the new one.
  ResultPtr Run(const std::string& sql, const std::vector<std::string>& params = {}) {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p.c_str());
    for (int attempt = 0;; ++attempt) {
      ResultPtr r(params.empty() ? PQexec(conn_, sql.c_str())
                                 : PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()),
                                                nullptr, values.data(), nullptr, nullptr, 0),
                  PQclear);
      ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
      if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
      std::string msg = Trimmed(PQerrorMessage(conn_));
      if (attempt == 0 && PQstatus(conn_) == CONNECTION_BAD && sql != "COMMIT" &&
          PQtransactionStatus(conn_) != PQTRANS_INTRANS) {
        PQreset(conn_);
        // Again on the new connection only what the lost one cannot have done already.
        if (PQstatus(conn_) == CONNECTION_OK && (sql == "BEGIN" || sql.rfind("SELECT", 0) == 0))
          continue;
      }
      throw StorageError(FailureOf(r.get()), "PostgreSQL (" + Redacted() +
                                                 "): " + RedactSecrets(msg) +
                                                 " (in: " + sql.substr(0, 80) + ")");
    }
  }

  // What kind of failure the last statement's is: a lost or refused connection (the server
  // down or restarting: SQLSTATE classes 08 and 57P, too many connections) is worth another
  // try, as are a lock or statement timeout and a transaction the server gave up (40001,
  // 40P01); a full disk (53100) is full.
  StorageFailure FailureOf(const PGresult* r) const {
    if (PQstatus(conn_) != CONNECTION_OK) return StorageFailure::kUnavailable;
    const char* code = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    if (!code) return StorageFailure::kUnavailable;  // no answer from the server at all
    std::string state = code;
    if (state.rfind("08", 0) == 0 || state.rfind("57P", 0) == 0 || state == "53300")
      return StorageFailure::kUnavailable;
    if (state == "55P03" || state == "57014" || state == "40001" || state == "40P01")
      return StorageFailure::kBusy;
    if (state == "53100") return StorageFailure::kFull;
    return StorageFailure::kOther;
  }

  static Job ReadJob(PGresult* r, int row) {
    auto text = [&](int c) { return std::string(PQgetvalue(r, row, c)); };
    Job j;
    j.id = text(0);
    j.state = ParseJobState(text(1));
    j.request = json::parse(text(2), nullptr, false);  // a bad row is its worker's to report
    if (j.request.is_discarded()) j.request = json();
    j.attempts = std::stoi(text(3));
    j.worker = text(4);
    j.gpu = text(5);
    j.lease_token = text(6);
    j.lease_until = std::stod(text(7));
    j.submitted_at = std::stod(text(8));
    j.claimed_at = std::stod(text(9));
    j.finished_at = std::stod(text(10));
    j.gpu_started_at = std::stod(text(11));
    j.gpu_ended_at = std::stod(text(12));
    j.history = json::parse(text(13), nullptr, false);
    if (!j.history.is_array()) j.history = json::array();
    return j;
  }

  // Inside a transaction: expired leases back to the queue, or failed with a worker_lost
  // record after kMaxJobAttempts. Rows another worker is expiring are skipped, not waited for.
  int ExpireLocked() {
    ResultPtr r = Run(std::string("SELECT ") + kJobColumns +
                      " FROM ptxbench_jobs j WHERE j.state='running' AND j.lease_until < " + kNow +
                      " FOR UPDATE SKIP LOCKED");
    int n = PQntuples(r.get());
    for (int i = 0; i < n; ++i) {
      Job j = ReadJob(r.get(), i);
      bool give_up = queue_backend::NoteLostLease(&j);
      Run(std::string("UPDATE ptxbench_jobs SET state=$2, worker='', lease_token='', "
                      "lease_until=NULL, history_json=$3") +
              (give_up ? std::string(", finished_at=") + kNow : "") + " WHERE id=$1",
          {j.id, give_up ? "failed" : "queued", j.history.dump()});
      if (give_up) {
        json record = WorkerLostRecord(j);
        Run(std::string("INSERT INTO ptxbench_results (job_id, worker, status, recorded_at, "
                        "record_json) VALUES ($1, '', $2, ") +
                kNow + ", $3)",
            {j.id, ToString(FromJson(record).status), record.dump()});
      }
    }
    return n;
  }

  std::string url_;
  std::timed_mutex mu_;  // one connection, used by one thread at a time
  PGconn* conn_ = nullptr;
};

}  // namespace

std::unique_ptr<JobQueue> OpenPostgresJobQueue(const std::string& url) {
  return std::make_unique<PgJobQueue>(url);
}

}  // namespace ptxbench
