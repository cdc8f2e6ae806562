// The queue's contract, on both backends: a claim is exclusive, a lease lost is a job
// retried, a late result of a lost lease is refused, two lost leases end the job with
// worker_lost, and concurrent workers never take the same job. PostgreSQL runs as a real
// throwaway server (postgres_fixture.h); where none can start, its tests skip with the reason.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "common/files.h"
#include "report/metrics.h"
#include "serve/job_queue.h"
#include "serve/job_request.h"
#include "serve/postgres_fixture.h"
#include "serve/service_dataset.h"
#include "store/storage_error.h"
#ifdef PTXBENCH_HAVE_SQLITE
#include <sqlite3.h>

#include "store/store.h"
#endif

namespace ptxbench {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new testing::PostgresEnvironment);

json Request(int i) {
  return {{"task", "gemm_n128_k2048"},
          {"workload", "w"},
          {"arch", "sm_90a"},
          {"source", "// kernel " + std::to_string(i)},
          {"options", json::object()}};
}
json Record(const std::string& status = "PASSED") {
  return {{"schema", "ptxbench.evaluation/1"}, {"status", status}, {"message", "m"}};
}
WorkerIdentity Worker(const std::string& name) { return {name, "host", 1, "0"}; }

class JobQueueTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgres") {
      where_ = testing::PostgresDatabaseOrSkip();
      if (where_.empty()) return;
    } else {
#ifndef PTXBENCH_HAVE_SQLITE
      GTEST_SKIP() << "built without SQLite";
#endif
      where_ = dir_.File("store.db");
    }
    q_ = OpenJobQueue(where_);
  }
  ScratchDir dir_{"job-queue-test"};
  std::string where_;
  std::unique_ptr<JobQueue> q_;
};

TEST_P(JobQueueTest, AClaimIsExclusiveAndTheResultIsWrittenOnce) {
  std::string id = q_->Submit(Request(1));
  EXPECT_EQ(id.size(), 32u);
  EXPECT_EQ(q_->State(id), JobState::kQueued);
  auto job = q_->Claim(Worker("a"), 30s);
  ASSERT_TRUE(job);
  EXPECT_EQ(q_->State(id), JobState::kRunning);
  EXPECT_EQ(job->id, id);
  EXPECT_EQ(job->state, JobState::kRunning);
  EXPECT_EQ(job->attempts, 1);
  EXPECT_EQ(job->worker, "a");
  EXPECT_EQ(job->request["source"], "// kernel 1");
  EXPECT_FALSE(q_->Claim(Worker("b"), 30s)) << "a running job is nobody else's";
  EXPECT_FALSE(q_->Complete(id, "not-the-token", Record(), {}));
  EXPECT_TRUE(q_->Complete(id, job->lease_token, Record(), {10.0, 12.5}));
  EXPECT_FALSE(q_->Complete(id, job->lease_token, Record("INCORRECT"), {}))
      << "a second result for the same job";
  auto done = q_->Get(id);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state, JobState::kDone);
  ASSERT_TRUE(done->result);
  EXPECT_EQ((*done->result)["status"], "PASSED");
  EXPECT_DOUBLE_EQ(done->gpu_started_at, 10.0);
  EXPECT_DOUBLE_EQ(done->gpu_ended_at, 12.5);
  EXPECT_FALSE(q_->Get(RandomId()));
  EXPECT_EQ(q_->State(id), JobState::kDone);
  EXPECT_FALSE(q_->State(RandomId()));
#ifdef PTXBENCH_HAVE_SQLITE
  if (GetParam() == "sqlite") {  // the store's evaluations table has it, once
    auto store = ResultsStore::Open(where_);
    auto rec = store->GetEvaluation("serve/" + id);
    ASSERT_TRUE(rec);
    EXPECT_EQ((*rec)["status"], "PASSED");
    EXPECT_EQ(store->Counts().evaluations, 1);
  }
#endif
}

TEST_P(JobQueueTest, AnExpiredLeaseIsRetriedElsewhereAndTheLateResultRefused) {
  std::string id = q_->Submit(Request(1));
  auto a = q_->Claim(Worker("a"), 1s);
  ASSERT_TRUE(a);
  std::this_thread::sleep_for(1300ms);
  EXPECT_FALSE(q_->Renew(id, "other", 30s));
  auto b = q_->Claim(Worker("b"), 30s);  // expires a's lease, then takes the job
  ASSERT_TRUE(b);
  EXPECT_EQ(b->id, id);
  EXPECT_EQ(b->attempts, 2);
  ASSERT_EQ(b->history.size(), 1u);
  EXPECT_EQ(b->history[0]["worker"], "a");
  EXPECT_FALSE(q_->Renew(id, a->lease_token, 30s)) << "a's lease is gone";
  EXPECT_FALSE(q_->Complete(id, a->lease_token, Record("INCORRECT"), {}))
      << "the presumed-dead worker's late result";
  EXPECT_TRUE(q_->Complete(id, b->lease_token, Record(), {}));
  EXPECT_EQ((*q_->Get(id)->result)["status"], "PASSED");
}

TEST_P(JobQueueTest, AJobThatLosesItsWorkerTwiceEndsWorkerLost) {
  std::string id = q_->Submit(Request(7));
  ASSERT_TRUE(q_->Claim(Worker("a"), 1s));
  std::this_thread::sleep_for(1300ms);
  auto b = q_->Claim(Worker("b"), 1s);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->attempts, 2);
  std::this_thread::sleep_for(1300ms);
  EXPECT_EQ(q_->ExpireLeases(), 1);
  auto j = q_->Get(id);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->state, JobState::kFailed);
  EXPECT_EQ(q_->State(id), JobState::kFailed) << "what a long poll sees ends the wait too";
  ASSERT_TRUE(j->result);
  EXPECT_EQ((*j->result)["status"], "INFRA_ERROR");
  EXPECT_EQ((*j->result)["reason"], "worker_lost");
  EXPECT_NE((*j->result)["message"].get<std::string>().find("a, b"), std::string::npos)
      << (*j->result)["message"];
  EXPECT_EQ((*j->result)["task"]["definition"], "gemm_n128_k2048");
  EXPECT_FALSE(q_->Claim(Worker("c"), 1s)) << "not retried a third time";
  EXPECT_FALSE(q_->Complete(id, b->lease_token, Record(), {}));
}

TEST_P(JobQueueTest, RenewalKeepsALeaseAlive) {
  std::string id = q_->Submit(Request(1));
  auto a = q_->Claim(Worker("a"), 2s);
  ASSERT_TRUE(a);
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(1000ms);
    EXPECT_TRUE(q_->Renew(id, a->lease_token, 2s));
  }
  EXPECT_EQ(q_->ExpireLeases(), 0) << "3 s after a 2 s lease, but renewed";
  EXPECT_TRUE(q_->Complete(id, a->lease_token, Record(), {}));
}

TEST_P(JobQueueTest, ConcurrentWorkersTakeEveryJobExactlyOnce) {
  constexpr int kJobs = 120, kWorkers = 6;
  std::map<std::string, int> submitted;
  for (int i = 0; i < kJobs; ++i) submitted[q_->Submit(Request(i))] = i;
  std::mutex mu;
  std::map<std::string, std::vector<std::string>> claimed_by;
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w)
    threads.emplace_back([&, w] {
      auto q = OpenJobQueue(where_);  // each worker its own connection, as processes have
      WorkerIdentity me = Worker("w" + std::to_string(w));
      q->Heartbeat(me);
      while (auto job = q->Claim(me, 30s)) {
        {
          std::lock_guard<std::mutex> lock(mu);
          claimed_by[job->id].push_back(me.id);
        }
        if (!q->Complete(job->id, job->lease_token, Record(), {})) ++refused;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(refused, 0);
  ASSERT_EQ(claimed_by.size(), submitted.size());
  for (const auto& [id, who] : claimed_by) EXPECT_EQ(who.size(), 1u) << id << " claimed twice";
  QueueHealth h = q_->Health(60s);
  EXPECT_EQ(h.done, kJobs);
  EXPECT_EQ(h.queued, 0);
  EXPECT_EQ(h.running, 0);
  EXPECT_EQ(h.workers.size(), static_cast<size_t>(kWorkers));
  for (const auto& w : h.workers) EXPECT_TRUE(w.alive) << w.identity.id;
}

TEST_P(JobQueueTest, HealthCountsRunningJobsPerGpu) {
  q_->Submit(Request(1));
  q_->Submit(Request(2));
  q_->Submit(Request(3));
  ASSERT_TRUE(q_->Claim({"x", "h", 2, "GPU-aaaa"}, 30s));
  QueueHealth h = q_->Health(60s);
  EXPECT_EQ(h.queued, 2);
  EXPECT_EQ(h.running, 1);
  EXPECT_EQ(h.running_by_gpu["GPU-aaaa"], 1);
}

// A worker that stops before evaluating gives its job back: queued again, the attempt not
// counted, and only with the current lease.
TEST_P(JobQueueTest, AReleasedJobIsQueuedAgainWithoutCountingTheAttempt) {
  std::string id = q_->Submit(Request(1));
  auto a = q_->Claim(Worker("a"), 30s);
  ASSERT_TRUE(a);
  EXPECT_FALSE(q_->Release(id, "not-the-token"));
  EXPECT_EQ(q_->State(id), JobState::kRunning);
  EXPECT_TRUE(q_->Release(id, a->lease_token));
  EXPECT_EQ(q_->State(id), JobState::kQueued);
  EXPECT_FALSE(q_->Complete(id, a->lease_token, Record(), {})) << "the released lease is gone";
  auto b = q_->Claim(Worker("b"), 30s);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->attempts, 1) << "the released attempt does not count";
  EXPECT_TRUE(b->history.empty());
}

// Health's probe is a real write that succeeds on a healthy queue.
TEST_P(JobQueueTest, TheWriteProbeSucceedsOnAHealthyQueueAndLeavesNoTrace) {
  EXPECT_EQ(q_->ProbeWrite(2000ms), std::nullopt);
  EXPECT_EQ(q_->ProbeWrite(2000ms), std::nullopt);
  EXPECT_TRUE(q_->Health(60s).workers.empty()) << "the probe row was left behind";
}

// Issue 35: one job writes at most kMaxStoredRecordBytes; a larger record is refused with
// nothing written (the job keeps its lease), and FitRecord keeps its verdict within the limit.
TEST_P(JobQueueTest, ARecordOverTheQueuesLimitIsRefusedAndFitRecordKeepsTheVerdict) {
  std::string id = q_->Submit(Request(1));
  auto job = q_->Claim(Worker("a"), 30s);
  ASSERT_TRUE(job);
  json huge = Record("COMPILE_ERROR");
  huge["build"] = {{"log", std::string(3 << 20, 'x')}};
  try {
    q_->Complete(id, job->lease_token, huge, {});
    ADD_FAILURE() << "a 3 MiB record was stored";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput) << e.what();
    EXPECT_NE(std::string(e.what()).find("over the queue's limit"), std::string::npos) << e.what();
  }
  EXPECT_EQ(q_->State(id), JobState::kRunning) << "nothing was written";
  json fit = FitRecord(huge);
  EXPECT_LE(fit.dump().size(), kMaxStoredRecordBytes);
  EXPECT_EQ(fit["status"], "COMPILE_ERROR");
  EXPECT_EQ(fit["build"]["cut"], true);
  EXPECT_GT(fit["record_cut"]["bytes"].get<size_t>(), size_t{3} << 20);
  EXPECT_EQ(FitRecord(Record()), Record()) << "a record that fits is left alone";
  json long_message = Record("INFRA_ERROR");
  long_message["message"] = std::string(3 << 20, 'm');
  json cut = FitRecord(long_message);
  ASSERT_TRUE(cut["message"].is_string()) << "a message stays a string";
  EXPECT_LT(cut["message"].get<std::string>().size(), 17u * 1024);
  EXPECT_TRUE(q_->Complete(id, job->lease_token, fit, {}));
  EXPECT_EQ(q_->Get(id)->result->at("status"), "COMPILE_ERROR");
}

INSTANTIATE_TEST_SUITE_P(Backends, JobQueueTest, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

// Issue 35: PostgreSQL down is a retryable StorageError whose public words name nothing of the
// database; once it is back, the same queue object works again without a failed call.
TEST(JobQueuePostgres, AnOutageIsARetryableStorageErrorAndTheQueueComesBack) {
  std::string url = testing::PostgresDatabaseOrSkip();
  if (url.empty()) return;
  auto q = OpenJobQueue(url);
  std::string id = q->Submit(Request(1));
  testing::PostgresServer* server = testing::PostgresEnvironment::Server();
  ASSERT_EQ(server->Stop(), "");
  int failures = 0;
  for (int op = 0; op < 3; ++op) {
    try {
      if (op == 0) q->State(id);
      if (op == 1) q->Submit(Request(2));
      if (op == 2) q->Claim(Worker("a"), 30s);
      ADD_FAILURE() << "operation " << op << " went through with the server down";
    } catch (const StorageError& e) {
      ++failures;
      EXPECT_TRUE(e.retryable()) << e.what();
      EXPECT_EQ(e.failure(), StorageFailure::kUnavailable) << e.what();
      for (const char* internal : {"/", "SELECT", "INSERT", "postgres", "ptxbench_"})
        EXPECT_EQ(e.PublicMessage().find(internal), std::string::npos)
            << internal << " in: " << e.PublicMessage();
    }
  }
  EXPECT_EQ(failures, 3);
  ASSERT_EQ(server->Restart(), "");
  EXPECT_EQ(q->State(id), JobState::kQueued) << "the first call after the restart";
  EXPECT_TRUE(q->Claim(Worker("a"), 30s));
}

// Issue 35: the queue's location from a private file, never from a file others can read.
TEST(JobQueueSecrets, TheDatabaseFileMustBePrivateAndGivesItsFirstLine) {
  ScratchDir dir("job-queue-test");
  std::string file = dir.File("db");
  WriteFileAtomic(file, "  postgresql://ptx:hunter2@db/ptxbench  \nsecond line\n");
  ASSERT_EQ(::chmod(file.c_str(), 0600), 0);
  EXPECT_EQ(ReadQueueLocationFile(file), "postgresql://ptx:hunter2@db/ptxbench");
  ASSERT_EQ(::chmod(file.c_str(), 0640), 0);
  try {
    ReadQueueLocationFile(file);
    ADD_FAILURE() << "a file others can read was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("chmod 600"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ReadQueueLocationFile(dir.File("missing")), Error);
}

TEST(JobQueueSecrets, PasswordsAreRedactedFromEveryFormOfConnectionString) {
  EXPECT_EQ(RedactSecrets("postgresql://ptx:hunter2@db-host:5432/ptxbench"),
            "postgresql://ptx:***@db-host:5432/ptxbench");
  EXPECT_EQ(RedactSecrets("cannot connect to postgres://u:p%40ss@h/db: refused"),
            "cannot connect to postgres://u:***@h/db: refused");
  EXPECT_EQ(RedactSecrets("host=db user=ptx password=hunter2 dbname=x"),
            "host=db user=ptx password=*** dbname=x");
  EXPECT_EQ(RedactSecrets("host=db PASSWORD='hun ter2' dbname=x"), "host=db PASSWORD=*** dbname=x");
  EXPECT_EQ(RedactSecrets("postgresql://h/db?user=u&password=hunter2&sslmode=require"),
            "postgresql://h/db?user=u&password=***&sslmode=require");
  EXPECT_EQ(RedactSecrets("postgresql://ptx@db-host/x"), "postgresql://ptx@db-host/x");
  EXPECT_EQ(RedactSecrets("no secret: http://host:8737/v1"), "no secret: http://host:8737/v1");
}

#ifdef PTXBENCH_HAVE_SQLITE
// A SQLite queue in a scratch folder.
class JobQueueSqlite : public ::testing::Test {
 protected:
  ScratchDir dir_{"job-queue-test"};
  std::string path_ = dir_.File("queue.db");
  std::unique_ptr<JobQueue> q_ = OpenJobQueue(path_);
};

TEST_F(JobQueueSqlite, TheQueueFileIsReadableByItsOwnerOnly) {
  q_->Submit(Request(1));
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  for (const char* side : {"-wal", "-shm"})
    if (::stat((path_ + side).c_str(), &st) == 0) EXPECT_EQ(st.st_mode & 0777, 0600u) << side;
  // An older queue that others could read is made private when opened.
  std::string old = dir_.File("old.db");
  { OpenJobQueue(old); }
  ASSERT_EQ(::chmod(old.c_str(), 0644), 0);
  { OpenJobQueue(old); }
  ASSERT_EQ(::stat(old.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // A symbolic link in its place is refused.
  std::string link = dir_.File("link.db");
  ASSERT_EQ(::symlink(old.c_str(), link.c_str()), 0);
  EXPECT_THROW(OpenJobQueue(link), std::exception);
}

// A row whose request is not JSON (written by hand, or damaged) must not fail every claim:
// it is claimed like any job, with no request, for its worker to report.
TEST_F(JobQueueSqlite, ARowThatDoesNotParseIsClaimedNotThrown) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "INSERT INTO jobs (id, state, request_json, submitted_at) VALUES "
                         "('poison', 'queued', '{not json', 1)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  std::string good = q_->Submit(Request(2));
  auto job = q_->Claim(Worker("a"), 30s);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->id, "poison");
  EXPECT_TRUE(job->request.is_null());
  auto next = q_->Claim(Worker("a"), 30s);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->id, good);
  // And when it loses its worker twice, the worker_lost record is still written.
  EXPECT_EQ(WorkerLostRecord(*job)["reason"], "worker_lost");
}

// Health's write probe fails, naming the cause, while another connection holds the write
// lock (a database nobody can write to), and succeeds again once it is released.
TEST_F(JobQueueSqlite, TheWriteProbeFailsWhileTheDatabaseCannotBeWritten) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto t0 = std::chrono::steady_clock::now();
  std::optional<StorageError> problem = q_->ProbeWrite(300ms);
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(problem);
  EXPECT_NE(std::string(problem->what()).find("locked"), std::string::npos) << problem->what();
  EXPECT_EQ(problem->failure(), StorageFailure::kBusy) << problem->what();
  EXPECT_TRUE(problem->retryable());
  // The behaviour: the probe gives up after its timeout (300 ms), not after the queue's busy
  // wait (60 s). A bound far from both, so that a loaded machine cannot fail it.
  EXPECT_LT(took, 20s) << "the probe waited past its timeout";
  sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  EXPECT_EQ(q_->ProbeWrite(2000ms), std::nullopt);
}
#endif

// `ptxbench report --db postgresql://…` reads only the service's database: the clients' tags
// must bring every evaluated turn back to its trajectory, in turn order, on both backends.
TEST_P(JobQueueTest, FinishedJobsRegroupIntoTrajectoriesByTheirTags) {
  auto tagged = [](const std::string& trajectory, int index, int turn) {
    json r = Request(turn);
    r["tag"] = {{"run", "sweep"},
                {"started_at", "2026-12-03T10:00:00Z"},
                {"trajectory", trajectory},
                {"evaluation_id", trajectory + "/turn" + std::to_string(turn)},
                {"task", "gemm_n128_k2048"},
                {"workload", "w"},
                {"model", "m1"},
                {"provider", "openai"},
                {"arch", "sm_90a"},
                {"pack", "none"},
                {"turn", turn},
                {"index", index}};
    return r;
  };
  json verified = Record("PASSED");
  verified["instructions"] = {{"verification", "dynamic_present"}, {"arch_tag", "H"}};
  verified["performance"] = {{"speedup", 0.8}, {"tflops", 600.0}};
  // Submission order is not turn order (trajectories interleave at the service).
  std::vector<std::pair<json, json>> jobs = {
      {tagged("gemm_n128_k2048-1", 1, 1), Record("INCORRECT")},
      {tagged("gemm_n128_k2048-0", 0, 3), verified},
      {tagged("gemm_n128_k2048-0", 0, 1), Record("COMPILE_ERROR")},
      {tagged("gemm_n128_k2048-0", 0, 2), Record("INFRA_ERROR")},  // not the model's turn
      {Request(99), Record("PASSED")},                             // ptxbench submit: no tag
  };
  for (auto& [request, record] : jobs) {
    q_->Submit(request);
    auto job = q_->Claim(Worker("a"), 30s);
    ASSERT_TRUE(job);
    ASSERT_TRUE(q_->Complete(job->id, job->lease_token, record, {1.0, 2.0}));
  }
  q_->Submit(tagged("gemm_n128_k2048-1", 1, 2));  // still queued: not in the report yet

  std::vector<FinishedJob> finished = q_->Finished();
  ASSERT_EQ(finished.size(), 5u);
  EXPECT_EQ(finished[1].tag["turn"], 3) << "the tag comes back as the client sent it";
  ServiceDatasetLoad load = DatasetFromServiceJobs(finished);
  EXPECT_EQ(load.evaluations, 5);
  EXPECT_EQ(load.untagged, 1);
  ASSERT_EQ(load.dataset.trajectories.size(), 2u);
  const TrajectoryRow& t0 = load.dataset.trajectories[0];
  EXPECT_EQ(t0.id, "gemm_n128_k2048-0");
  EXPECT_EQ(t0.run_id, "sweep@2026-12-03T10:00:00Z");
  EXPECT_EQ(t0.model, "m1");
  EXPECT_EQ(t0.pack, "none");
  ASSERT_EQ(t0.turns.size(), 2u) << "the INFRA_ERROR turn is left out, as in run folders";
  EXPECT_EQ(t0.turns[0].turn, 1);
  EXPECT_EQ(t0.turns[0].outcome, "compile");
  EXPECT_EQ(t0.turns[1].turn, 3);
  EXPECT_EQ(t0.turns[1].outcome, "verified");
  ASSERT_TRUE(t0.turns[1].speedup);
  EXPECT_DOUBLE_EQ(*t0.turns[1].speedup, 0.8);
  EXPECT_EQ(t0.turns[1].arch_tag, "H");
  EXPECT_EQ(t0.turns[1].evaluation_id, "gemm_n128_k2048-0/turn3");
  EXPECT_EQ(load.dataset.trajectories[1].turns.size(), 1u);

  MetricOptions mo;
  mo.turn_limits = {2, 3};
  mo.bootstrap_resamples = 0;
  std::vector<GroupMetrics> groups = ComputeMetrics(load.dataset, mo);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].trajectories, 2);
  EXPECT_EQ(groups[0].first_correct_turn[3], 1) << "turn numbers are the clients'";
  EXPECT_EQ(groups[0].never_correct, 1);
}

// Error bodies without internals (issue 35): the catalog names a left-out FlashInfer-Bench
// definition by its absolute path on the CLI; a client of the service gets its file name.
TEST(JobRequest, ClientMessagesCarryNoHostPaths) {
  EXPECT_EQ(
      WithoutHostPaths("task rmsnorm_h4096 (FlashInfer-Bench definition "
                       "/srv/ptxbench/tasks/fib/definitions/rmsnorm_h4096.json) is not judged"),
      "task rmsnorm_h4096 (FlashInfer-Bench definition rmsnorm_h4096.json) is not judged");
  EXPECT_EQ(WithoutHostPaths("/opt/a/b.json: not valid JSON at '/x/y'"),
            "b.json: not valid JSON at 'y'");
  EXPECT_EQ(WithoutHostPaths("unknown task 'gemm/1' (did you mean gemm_n128_k2048?)"),
            "unknown task 'gemm/1' (did you mean gemm_n128_k2048?)");
}

}  // namespace
}  // namespace ptxbench
