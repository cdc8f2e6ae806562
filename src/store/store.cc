#include "store/store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <utility>

#include "common/error.h"
#include "common/json_fields.h"
#include "common/sha256.h"
#include "record/layers.h"
#include "record/record.h"
#include "record/report_rows.h"
#include "record/turn.h"
#include "store/sqlite_util.h"

namespace ptxbench {

using nlohmann::json;
namespace fs = std::filesystem;

using sqlite::Exec;
using sqlite::Fail;
using sqlite::QueryInt;
using sqlite::Stmt;
using sqlite::Transaction;

namespace {

// "PTXB": marks a file as a ptxbench store, so that Open refuses to add tables to some other
// program's database that happens to be at the path.
constexpr int kApplicationId = 0x50545842;

// A writer waits this long for another process's transaction before giving up. Transactions
// here are short (one trajectory), so only a stuck process makes anyone wait this long.

// Migration k (0-based) brings the schema from version k to k + 1. Append only: a file records
// how many have been applied (PRAGMA user_version) and the rest run, in one transaction, the
// next time the file is opened. Never edit a migration that has shipped.
const char* const kMigrations[] = {
    // 1: the initial schema.
    R"sql(
CREATE TABLE runs (
  id TEXT PRIMARY KEY,
  run_key TEXT NOT NULL UNIQUE,  -- what makes two writes the same run (see PutRun)
  model_name TEXT NOT NULL DEFAULT '',
  provider TEXT NOT NULL DEFAULT '',
  model_id TEXT NOT NULL DEFAULT '',
  base_url TEXT NOT NULL DEFAULT '',
  sampling_json TEXT,
  reasoning_json TEXT,
  pack_variant TEXT NOT NULL DEFAULT '',
  pack_sha256 TEXT NOT NULL DEFAULT '',
  arch TEXT NOT NULL DEFAULT '',
  ptxbench_version TEXT NOT NULL DEFAULT '',
  git_commit TEXT,
  gpu_name TEXT,
  toolchain_json TEXT,
  started_at TEXT NOT NULL DEFAULT '',
  run_dir TEXT NOT NULL DEFAULT '',
  ingested_at TEXT NOT NULL,
  run_json TEXT NOT NULL
);
CREATE INDEX runs_model_name ON runs(model_name);
CREATE INDEX runs_model_id ON runs(model_id);
CREATE INDEX runs_arch ON runs(arch);
CREATE INDEX runs_pack ON runs(pack_variant);
CREATE INDEX runs_started ON runs(started_at);

CREATE TABLE trajectories (
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  trajectory_id TEXT NOT NULL,
  task TEXT NOT NULL,
  workload TEXT NOT NULL DEFAULT '',
  idx INTEGER NOT NULL DEFAULT 0,
  exit_status TEXT NOT NULL,
  prompt_version TEXT NOT NULL DEFAULT '',
  model_stats_json TEXT,
  infra_events_json TEXT,
  ingested_at TEXT NOT NULL,
  PRIMARY KEY (run_id, trajectory_id)
) WITHOUT ROWID;
CREATE INDEX trajectories_task ON trajectories(task);
CREATE INDEX trajectories_exit ON trajectories(exit_status);

CREATE TABLE turns (
  run_id TEXT NOT NULL,
  trajectory_id TEXT NOT NULL,
  seq INTEGER NOT NULL,  -- position in the file's info.turns (an infra turn shares its number)
  turn INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT '',
  reason TEXT NOT NULL DEFAULT '',
  spent INTEGER NOT NULL,
  speedup REAL,
  tflops REAL,
  verified INTEGER NOT NULL DEFAULT 0,
  evaluation_id TEXT NOT NULL DEFAULT '',  -- as the trajectory names it
  evaluation_key TEXT,                     -- evaluations.evaluation_id
  kernel_file TEXT NOT NULL DEFAULT '',
  evaluation_file TEXT NOT NULL DEFAULT '',
  prompt_tokens INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  reasoning_tokens INTEGER NOT NULL DEFAULT 0,
  model_seconds REAL NOT NULL DEFAULT 0,
  evaluation_seconds REAL NOT NULL DEFAULT 0,
  overhead_seconds REAL NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  summary TEXT NOT NULL DEFAULT '',
  error TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (run_id, trajectory_id, seq),
  FOREIGN KEY (run_id, trajectory_id) REFERENCES trajectories(run_id, trajectory_id)
    ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX turns_outcome ON turns(outcome);
CREATE INDEX turns_status ON turns(status);
CREATE INDEX turns_evaluation ON turns(evaluation_key);

CREATE TABLE evaluations (
  evaluation_id TEXT NOT NULL UNIQUE,
  run_id TEXT,  -- the run whose turn it judged; NULL for a lone record
  schema TEXT NOT NULL DEFAULT '',
  task TEXT NOT NULL DEFAULT '',
  workload_id TEXT NOT NULL DEFAULT '',
  arch TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  verification TEXT NOT NULL DEFAULT '',
  arch_tag TEXT NOT NULL DEFAULT '',
  speedup REAL,
  tflops REAL,
  candidate_sha256 TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL DEFAULT '',
  ingested_at TEXT NOT NULL,
  record_json TEXT NOT NULL  -- last, so that reading the columns above skips its pages
);
-- Covers Load's join (named there with INDEXED BY: the planner would take the UNIQUE one), so
-- that Load never reads the (large) rows themselves.
CREATE INDEX evaluations_join ON evaluations(evaluation_id, verification, arch_tag);
CREATE INDEX evaluations_run ON evaluations(run_id);
CREATE INDEX evaluations_task ON evaluations(task, workload_id);
CREATE INDEX evaluations_workload ON evaluations(workload_id);
CREATE INDEX evaluations_arch ON evaluations(arch);
CREATE INDEX evaluations_status ON evaluations(status, reason);
CREATE INDEX evaluations_verification ON evaluations(verification, arch_tag);
CREATE INDEX evaluations_arch_tag ON evaluations(arch_tag);
CREATE INDEX evaluations_speedup ON evaluations(speedup);
CREATE INDEX evaluations_tflops ON evaluations(tflops);
CREATE INDEX evaluations_candidate ON evaluations(candidate_sha256);
CREATE INDEX evaluations_created ON evaluations(created_at);
)sql",
    // 2: the evaluation service's job queue (src/serve/queue_sqlite.cc). A job is claimed under
    // a lease (lease_token, lease_until); its result is written once, by the holder of the
    // current lease. Times are Unix seconds.
    R"sql(
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  state TEXT NOT NULL,  -- queued, running, done, failed
  request_json TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  worker TEXT NOT NULL DEFAULT '',
  gpu TEXT NOT NULL DEFAULT '',
  lease_token TEXT NOT NULL DEFAULT '',
  lease_until REAL,
  submitted_at REAL NOT NULL,
  claimed_at REAL,
  finished_at REAL,
  gpu_started_at REAL,
  gpu_ended_at REAL,
  history_json TEXT NOT NULL DEFAULT '[]',
  result_json TEXT
);
CREATE INDEX jobs_queued ON jobs(state, submitted_at);
CREATE TABLE workers (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  gpu TEXT NOT NULL DEFAULT '',
  started_at REAL NOT NULL,
  heartbeat_at REAL NOT NULL
);
)sql",
    // 3: the architecture tag under the paper's rule (instructions.upstream_arch_tag), beside
    // arch_tag, which became stricter. A record written before the field has none: its arch_tag
    // was given under the paper's rule, so it is the upstream tag too. The join index grows the
    // column so that Load still reads only the index.
    R"sql(
ALTER TABLE evaluations ADD COLUMN upstream_arch_tag TEXT NOT NULL DEFAULT '';
UPDATE evaluations SET upstream_arch_tag = CASE
  WHEN NOT json_valid(record_json) THEN arch_tag
  WHEN json_type(record_json, '$.instructions.upstream_arch_tag') IS NULL THEN arch_tag
  WHEN json_type(record_json, '$.instructions.upstream_arch_tag') = 'text'
    THEN json_extract(record_json, '$.instructions.upstream_arch_tag')
  ELSE '' END;
DROP INDEX evaluations_join;
CREATE INDEX evaluations_join
  ON evaluations(evaluation_id, verification, arch_tag, upstream_arch_tag);
CREATE INDEX evaluations_upstream_arch_tag ON evaluations(upstream_arch_tag);
)sql",
};
constexpr int kSchemaVersion = static_cast<int>(std::size(kMigrations));

constexpr const char* kNow = "strftime('%Y-%m-%dT%H:%M:%SZ','now')";

// WAL: readers do not block the writer nor it them, and a commit is one append. The mode is
// a property of the file, so only the first open converts it; that conversion needs the file
// to itself and SQLite does not run the busy handler for it, so processes that create a store
// at once retry here instead of failing with "database is locked".
void SetWalMode(sqlite3* db, const std::string& path) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(sqlite::kBusyTimeoutMs);
  for (int attempt = 0;; ++attempt) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &s, nullptr) != SQLITE_OK)
      Fail(db, path, "cannot set the journal mode");
    int rc = sqlite3_step(s);
    std::string mode;
    if (rc == SQLITE_ROW && sqlite3_column_text(s, 0))
      mode = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);  // before the migration's transaction, which must find none open
    if (rc == SQLITE_ROW && mode == "wal") return;
    if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) {
      if (std::chrono::steady_clock::now() > deadline) Fail(db, path, "cannot set WAL mode");
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(5 + 5 * attempt, 100)));
      continue;
    }
    if (rc != SQLITE_ROW) Fail(db, path, "cannot set WAL mode");
    throw EnvironmentError(path + ": cannot put the results store in WAL mode (got \"" + mode +
                           "\"; a network file system?)");
  }
}

// JSON is read leniently (common/json_fields.h): optional fields of the wrong type count as
// missing.

// JSON text for a column; invalid UTF-8 (model output) is replaced rather than refused.
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }
std::string DumpOrEmpty(const json* j) { return j && !j->is_null() ? Dump(*j) : std::string(); }

const std::string& RequireStr(const json& j, const char* key, const std::string& what) {
  const json* f = FindField(j, key);
  if (!f || !f->is_string())
    throw InputError(what + ": \"" + key + "\" is missing or not a string");
  return f->get_ref<const std::string&>();
}

// The columns of an evaluation record that reports filter on.
struct EvaluationColumns {
  std::string schema, task, workload_id, arch, status, reason, verification, arch_tag,
      upstream_arch_tag, sha256, created_at;
  std::optional<double> speedup, tflops;
  std::string gpu_name, toolchain;  // for the run's row, when it has none
};

EvaluationColumns ReadEvaluation(const json& r, const std::string& id) {
  std::string what = "evaluation " + id;
  if (!r.is_object()) throw InputError(what + ": not a JSON object");
  EvaluationColumns c;
  // The envelope is checked as written (the status column keeps a status this version does
  // not know); the rest is read through the record's typed API.
  c.status = RequireStr(r, "status", what);
  c.schema = StrField(r, "schema");
  if (!c.schema.empty() && c.schema.rfind("ptxbench.evaluation/", 0) != 0)
    throw InputError(what + ": schema \"" + c.schema + "\" is not ptxbench.evaluation/N");
  const EvaluationRecord record = FromJson(r);
  const TaskDetail task = TaskDetailOf(record);
  c.task = task.definition;
  c.workload_id = task.workload_id;
  c.arch = record.arch;
  c.reason = record.reason;  // null when there is none
  const InstructionsView ins = record.Instructions();
  c.verification = ins.verification_text;
  c.arch_tag = ins.arch_tag;
  c.upstream_arch_tag = ins.UpstreamArchTag();
  const PerformanceView perf = record.Performance();
  c.speedup = perf.speedup;
  c.tflops = perf.tflops;
  c.sha256 = CandidateDetailOf(record).sha256;
  c.created_at = record.created_at;
  const ToolchainDetail toolchain = ToolchainDetailOf(record);
  c.gpu_name = toolchain.gpu_name;
  if (toolchain.present) c.toolchain = Dump(record.toolchain);  // kept whole, as written
  return c;
}

// Prepared once per write and run per record: parsing this statement costs more than running it.
std::string UpsertEvaluationSql() {
  return std::string(
             "INSERT INTO evaluations (evaluation_id, run_id, schema, task, workload_id, "
             "arch, status, reason, verification, arch_tag, speedup, tflops, "
             "candidate_sha256, created_at, ingested_at, record_json, upstream_arch_tag) VALUES "
             "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,") +
         kNow +
         ",?15,?16) ON CONFLICT(evaluation_id) DO UPDATE SET "
         "run_id=COALESCE(excluded.run_id, run_id), schema=excluded.schema, "
         "task=excluded.task, workload_id=excluded.workload_id, arch=excluded.arch, "
         "status=excluded.status, reason=excluded.reason, "
         "verification=excluded.verification, arch_tag=excluded.arch_tag, "
         "upstream_arch_tag=excluded.upstream_arch_tag, "
         "speedup=excluded.speedup, tflops=excluded.tflops, "
         "candidate_sha256=excluded.candidate_sha256, created_at=excluded.created_at, "
         "ingested_at=excluded.ingested_at, record_json=excluded.record_json";
}

// Returns the columns read, whose GPU and toolchain the run's row takes when it has none.
EvaluationColumns UpsertEvaluation(Stmt& s, const json& record, const std::string& id,
                                   const std::string& run_id) {
  if (id.empty()) throw InputError("an evaluation record needs an id");
  EvaluationColumns c = ReadEvaluation(record, id);
  s.Text(1, id);
  s.TextOrNull(2, run_id);
  s.Text(3, c.schema);
  s.Text(4, c.task);
  s.Text(5, c.workload_id);
  s.Text(6, c.arch);
  s.Text(7, c.status);
  s.Text(8, c.reason);
  s.Text(9, c.verification);
  s.Text(10, c.arch_tag);
  s.Real(11, c.speedup);
  s.Real(12, c.tflops);
  s.Text(13, c.sha256);
  s.Text(14, c.created_at);
  s.Text(15, Dump(record));
  s.Text(16, c.upstream_arch_tag);
  s.Run();
  return c;
}

std::string Placeholders(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += i ? ",?" : "?";
  return s;
}

}  // namespace

// --- connections ---

class ResultsStore::Reader {
 public:
  explicit Reader(const ResultsStore& s) : s_(s) {
    {
      std::lock_guard<std::mutex> lock(s.pool_mu_);
      if (!s.idle_readers_.empty()) {
        db_ = s.idle_readers_.back();
        s.idle_readers_.pop_back();
      }
    }
    if (!db_) db_ = s.Connect();
  }
  ~Reader() {
    std::lock_guard<std::mutex> lock(s_.pool_mu_);
    s_.idle_readers_.push_back(db_);
  }
  sqlite3* db() const { return db_; }

 private:
  const ResultsStore& s_;
  sqlite3* db_ = nullptr;
};

ResultsStore::ResultsStore(std::string path) : path_(std::move(path)) {}

ResultsStore::~ResultsStore() {
  for (sqlite3* db : idle_readers_) sqlite3_close_v2(db);
  if (writer_) sqlite3_close_v2(writer_);
}

int ResultsStore::CodeSchemaVersion() { return kSchemaVersion; }

sqlite3* ResultsStore::Connect() const {
  // NORMAL is durable against a killed process (every commit is in the WAL file) and only
  // risks the last commits, never consistency, on a power loss; FULL would fsync per turn.
  return sqlite::OpenConnection(path_, "the results store", /*create=*/true,
                                "PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL");
}

// A path the user gave that cannot be a store is their input's fault (exit 2), said before
// SQLite is asked: a folder, something that is not a regular file, or a file that is not an
// SQLite database at all (its first 16 bytes are SQLite's header; an empty file is a new store).
static void RefuseWhatIsNotAStoreFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // a new store
  if (S_ISDIR(st.st_mode))
    throw InputError(path + ": is a folder; --db names the results store's file (e.g. " + path +
                     "/ptxbench.db)");
  if (!S_ISREG(st.st_mode)) throw InputError(path + ": not a regular file, so not a results store");
  if (st.st_size == 0) return;
  static const char kHeader[16] = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f',
                                   'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};
  char head[16] = {};
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return;  // unreadable: SQLite says why
  size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  if (n != sizeof head || std::memcmp(head, kHeader, sizeof head) != 0)
    throw InputError(path + ": not an SQLite database, so not a results store");
}

std::unique_ptr<ResultsStore> ResultsStore::Open(const std::string& path) {
  if (path.empty()) throw EnvironmentError("the results store needs a path (--db or $PTXBENCH_DB)");
  if (!sqlite3_threadsafe())
    throw EnvironmentError(path + ": this SQLite library is built without thread support");
  RefuseWhatIsNotAStoreFile(path);
  std::unique_ptr<ResultsStore> s(new ResultsStore(path));
  s->writer_ = s->Connect();
  sqlite3* db = s->writer_;
  try {
    // Refuse a database that is not ours before changing anything in it.
    int64_t n_objects = QueryInt(db, path, "SELECT count(*) FROM sqlite_master");
    if (n_objects > 0 && QueryInt(db, path, "PRAGMA application_id") != kApplicationId)
      throw InputError(path + ": not a ptxbench results store (another program's database)");
    int64_t version = QueryInt(db, path, "PRAGMA user_version");
    auto refuse_newer = [&](int64_t v) {
      if (v > kSchemaVersion)
        throw EnvironmentError(path + ": the results store has schema version " +
                               std::to_string(v) + ", newer than this ptxbench knows (" +
                               std::to_string(kSchemaVersion) + "); use a newer ptxbench");
    };
    refuse_newer(version);

    SetWalMode(db, path);

    if (version < kSchemaVersion) {
      Transaction txn(db, path);
      // Another process may have migrated while this one waited for the lock.
      version = QueryInt(db, path, "PRAGMA user_version");
      refuse_newer(version);
      for (int64_t k = version; k < kSchemaVersion; ++k) Exec(db, path, kMigrations[k]);
      Exec(db, path,
           "PRAGMA application_id=" + std::to_string(kApplicationId) +
               "; PRAGMA user_version=" + std::to_string(kSchemaVersion));
      txn.Commit();
    }
  } catch (const Error& e) {
    // The user's own --db that is not a store stays their input's fault (exit 2).
    if (e.kind() == ErrorKind::kEnvironment || e.kind() == ErrorKind::kInput) throw;
    throw EnvironmentError(std::string(e.what()));
  }
  return s;
}

std::string ResultsStore::EvaluationKey(const std::string& run_id,
                                        const std::string& evaluation_id) {
  return run_id + "/" + evaluation_id;
}

// --- writes ---

std::string ResultsStore::PutRun(const json& run, const std::string& run_dir) {
  if (!run.is_object()) throw InputError("run.json in " + run_dir + ": not a JSON object");
  std::string schema = StrField(run, "schema");
  if (!schema.empty() && schema.rfind("ptxbench.run/", 0) != 0)
    throw InputError("run.json in " + run_dir + ": schema \"" + schema +
                     "\" is not ptxbench.run/N");
  std::error_code ec;
  fs::path dir = run_dir.empty() ? fs::path() : fs::absolute(run_dir, ec).lexically_normal();
  std::string dir_text = dir.string();
  while (dir_text.size() > 1 && dir_text.back() == '/') dir_text.pop_back();
  std::string name = fs::path(dir_text).filename().string();
  if (name.empty() || name == "/") name = "run";

  const json& model = ObjField(run, "model");
  const json& pack_info = ObjField(run, "pack_info");
  std::string pack = StrField(pack_info, "variant");
  if (pack.empty()) pack = StrField(run, "pack");
  std::string git = StrField(run, "git_commit");
  if (git.empty()) git = StrField(ObjField(run, "git"), "commit");
  const json& toolchain = ObjField(run, "toolchain");
  std::string gpu = StrField(run, "gpu");
  if (gpu.empty()) gpu = StrField(ObjField(run, "gpu"), "name");
  if (gpu.empty()) gpu = StrField(ObjField(toolchain, "gpu"), "name");
  std::string started = StrField(run, "started_at");

  // A run is the same run when it started at the same time in a folder of the same name with
  // the same model and tasks: all of that survives --resume (which rewrites the options) and
  // a move of the folder, and two runs that differ in it are different runs.
  // A stand-in run.json (import.h) has no started_at: its folder and content tell it apart.
  std::string key =
      started.empty()
          ? "dir:" + dir_text + "\n" + Dump(run)
          : Sha256Hex(started + "\n" + name + "\n" + StrField(model, "name") + "\n" +
                      StrField(model, "model") + "\n" + Dump(run.value("tasks", json::array())));

  std::lock_guard<std::mutex> lock(write_mu_);
  Transaction txn(writer_, path_);
  std::string id;
  {
    Stmt find(writer_, path_, "SELECT id FROM runs WHERE run_key=?1");
    find.Text(1, key);
    if (find.Step()) id = find.ColText(0);
  }
  bool exists = !id.empty();
  if (!exists) {
    // The folder's name is the id people know the run by; a clash gets the key's prefix.
    id = name;
    Stmt taken(writer_, path_, "SELECT 1 FROM runs WHERE id=?1");
    taken.Text(1, id);
    if (taken.Step()) id = name + "-" + Sha256Hex(key).substr(0, 8);
  }
  Stmt s(writer_, path_,
         exists
             ? std::string("UPDATE runs SET model_name=?2, provider=?3, model_id=?4, base_url=?5, "
                           "sampling_json=?6, reasoning_json=?7, pack_variant=?8, pack_sha256=?9, "
                           "arch=?10, ptxbench_version=?11, git_commit=COALESCE(?12, git_commit), "
                           "gpu_name=COALESCE(?13, gpu_name), "
                           "toolchain_json=COALESCE(?14, toolchain_json), started_at=?15, "
                           "run_dir=?16, run_json=?17, ingested_at=") +
                   kNow + " WHERE id=?1"
             : std::string("INSERT INTO runs (id, model_name, provider, model_id, base_url, "
                           "sampling_json, reasoning_json, pack_variant, pack_sha256, arch, "
                           "ptxbench_version, git_commit, gpu_name, toolchain_json, "
                           "started_at, run_dir, run_json, run_key, ingested_at) VALUES "
                           "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,") +
                   kNow + ")");
  s.Text(1, id);
  s.Text(2, StrField(model, "name"));
  s.Text(3, StrField(model, "provider"));
  s.Text(4, StrField(model, "model"));
  s.Text(5, StrField(model, "base_url"));
  s.TextOrNull(6, DumpOrEmpty(FindField(model, "sampling")));
  s.TextOrNull(7, DumpOrEmpty(FindField(model, "reasoning")));
  s.Text(8, pack);
  s.Text(9, StrField(pack_info, "sha256"));
  s.Text(10, StrField(run, "arch"));
  s.Text(11, StrField(run, "ptxbench_version"));
  s.TextOrNull(12, git);
  s.TextOrNull(13, gpu);
  s.TextOrNull(14, toolchain.empty() ? std::string() : Dump(toolchain));
  s.Text(15, started);
  s.Text(16, dir_text);
  s.Text(17, Dump(run));
  if (!exists) s.Text(18, key);
  s.Run();
  txn.Commit();
  return id;
}

void ResultsStore::PutTrajectory(const std::string& run_id, const json& traj,
                                 const std::vector<StoredEvaluation>& evaluations) {
  // What the trajectory must have (as TrajectoryFromJson requires), checked before anything
  // is written; a malformed turn found later still rolls everything back.
  if (!traj.is_object()) throw InputError("trajectory: not a JSON object");
  const json* info_p = FindField(traj, "info");
  if (!info_p || !info_p->is_object()) throw InputError("trajectory: no \"info\" object");
  const json& info = *info_p;
  const std::string& id = RequireStr(info, "id", "trajectory");
  std::string what = "trajectory " + id;
  const std::string& task = RequireStr(info, "task", what);
  const std::string& exit_status = RequireStr(info, "exit_status", what);
  std::string format = StrField(info, "ptxbench");
  if (!format.empty() && format.rfind("ptxbench.trajectory/", 0) != 0)
    throw InputError(what + ": format \"" + format + "\" is not ptxbench.trajectory/N");
  const json* turns = FindField(info, "turns");
  if (!turns || !turns->is_array()) throw InputError(what + ": no \"turns\" array");

  std::lock_guard<std::mutex> lock(write_mu_);
  Transaction txn(writer_, path_);
  {
    Stmt run(writer_, path_, "SELECT 1 FROM runs WHERE id=?1");
    run.Text(1, run_id);
    if (!run.Step()) throw InputError(what + ": unknown run \"" + run_id + "\" (PutRun first)");
  }
  std::string gpu, toolchain;
  Stmt upsert(writer_, path_, UpsertEvaluationSql());
  for (const StoredEvaluation& e : evaluations) {
    const EvaluationColumns c = UpsertEvaluation(upsert, e.record, e.id, run_id);
    if (gpu.empty() && !c.gpu_name.empty()) {
      gpu = c.gpu_name;
      toolchain = c.toolchain;
    }
  }
  if (!gpu.empty()) {  // a run.json does not say which GPU ran it; its records do
    Stmt s(writer_, path_,
           "UPDATE runs SET gpu_name=COALESCE(gpu_name, ?2), "
           "toolchain_json=COALESCE(toolchain_json, ?3) WHERE id=?1");
    s.Text(1, run_id);
    s.Text(2, gpu);
    s.Text(3, toolchain);
    s.Run();
  }
  {
    Stmt s(writer_, path_,
           std::string("INSERT INTO trajectories (run_id, trajectory_id, task, workload, idx, "
                       "exit_status, prompt_version, model_stats_json, infra_events_json, "
                       "ingested_at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,") +
               kNow +
               ") ON CONFLICT(run_id, trajectory_id) DO UPDATE SET task=excluded.task, "
               "workload=excluded.workload, idx=excluded.idx, exit_status=excluded.exit_status, "
               "prompt_version=excluded.prompt_version, "
               "model_stats_json=excluded.model_stats_json, "
               "infra_events_json=excluded.infra_events_json, ingested_at=excluded.ingested_at");
    s.Text(1, run_id);
    s.Text(2, id);
    s.Text(3, task);
    s.Text(4, StrField(info, "workload"));
    s.Int(5, IntField(info, "index"));
    s.Text(6, exit_status);
    s.Text(7, StrField(info, "prompt_version"));
    s.TextOrNull(8, DumpOrEmpty(FindField(info, "model_stats")));
    s.TextOrNull(9, DumpOrEmpty(FindField(info, "infra_events")));
    s.Run();
  }
  {
    // The file is the whole truth about its turns: replace, so that a turn that a resumed
    // run dropped or renumbered does not linger.
    Stmt del(writer_, path_, "DELETE FROM turns WHERE run_id=?1 AND trajectory_id=?2");
    del.Text(1, run_id);
    del.Text(2, id);
    del.Run();
  }
  Stmt ins(writer_, path_,
           "INSERT INTO turns (run_id, trajectory_id, seq, turn, outcome, status, reason, "
           "spent, speedup, tflops, verified, evaluation_id, evaluation_key, kernel_file, "
           "evaluation_file, prompt_tokens, completion_tokens, reasoning_tokens, "
           "model_seconds, evaluation_seconds, overhead_seconds, attempts, summary, error) "
           "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,"
           "?21,?22,?23,?24)");
  int64_t seq = 0;
  for (const json& t : *turns) {
    const TurnRecord turn = TurnFromJson(t, what + " turn #" + std::to_string(seq + 1));
    ins.Text(1, run_id);
    ins.Text(2, id);
    ins.Int(3, seq++);
    ins.Int(4, turn.turn);
    ins.Text(5, turn.outcome);
    ins.Text(6, turn.status);
    ins.Text(7, turn.reason);
    ins.Int(8, turn.spent);
    ins.Real(9, turn.speedup);
    ins.Real(10, turn.tflops);
    ins.Int(11, turn.verified);
    ins.Text(12, turn.evaluation_id);
    ins.TextOrNull(13, TurnEvaluationKey(run_id, t));
    ins.Text(14, turn.kernel_file);
    ins.Text(15, turn.evaluation_file);
    ins.Int(16, turn.usage.prompt_tokens);
    ins.Int(17, turn.usage.completion_tokens);
    ins.Int(18, turn.usage.reasoning_tokens);
    ins.Real(19, turn.model_seconds);
    ins.Real(20, turn.evaluation_seconds);
    ins.Real(21, turn.overhead_seconds);
    ins.Int(22, turn.attempts);
    ins.Text(23, turn.summary);
    ins.Text(24, turn.error);
    ins.Run();
  }
  txn.Commit();
}

std::string ResultsStore::TurnEvaluationKey(const std::string& run_id, const json& turn) {
  std::string id = StrField(turn, "evaluation_id");
  if (id.empty()) id = StrField(turn, "evaluation_file");  // older files may name only the file
  return id.empty() ? std::string() : EvaluationKey(run_id, id);
}

void ResultsStore::CheckEvaluation(const json& record, const std::string& what) {
  ReadEvaluation(record, what);
}

void ResultsStore::PutEvaluation(const json& record, const std::string& evaluation_id) {
  ReadEvaluation(record, evaluation_id);  // refuse bad input before taking the write lock
  std::lock_guard<std::mutex> lock(write_mu_);
  Transaction txn(writer_, path_);
  Stmt upsert(writer_, path_, UpsertEvaluationSql());
  UpsertEvaluation(upsert, record, evaluation_id, "");
  txn.Commit();
}

// --- reads ---

Dataset ResultsStore::Load(const StoreFilter& f) const {
  std::string sql =
      "SELECT t.run_id, t.trajectory_id, r.model_name, r.provider, t.task, t.workload, r.arch, "
      "r.pack_variant, t.idx, t.exit_status, r.run_dir, "
      "u.turn, u.outcome, u.status, u.reason, u.speedup, u.tflops, e.verification, e.arch_tag, "
      "u.evaluation_id, u.kernel_file, u.evaluation_file, u.prompt_tokens, "
      "u.completion_tokens, u.reasoning_tokens, u.model_seconds, u.evaluation_seconds, "
      "json_extract(r.run_json, '$.pack_info.hardware_verified'), e.upstream_arch_tag, "
      "CASE WHEN json_valid(e.record_json) THEN json_extract(e.record_json, '$.instructions') END, "
      "CASE WHEN json_valid(e.record_json) "
      "THEN json_extract(e.record_json, '$.build.shared_object_sha256') END "
      "FROM trajectories t JOIN runs r ON r.id = t.run_id "
      "LEFT JOIN turns u ON u.run_id = t.run_id AND u.trajectory_id = t.trajectory_id "
      "AND u.spent = 1 "
      "LEFT JOIN evaluations e INDEXED BY evaluations_join "
      "ON e.evaluation_id = u.evaluation_key WHERE 1";
  std::vector<const std::string*> params;
  auto in = [&](const std::vector<std::string>& values, const std::string& clause) {
    if (values.empty()) return;
    std::string list = "(" + Placeholders(values.size()) + ")";
    std::string c = clause;
    for (size_t p; (p = c.find("@")) != std::string::npos;) {
      c.replace(p, 1, list);
      for (const std::string& v : values) params.push_back(&v);
    }
    sql += " AND (" + c + ")";
  };
  in(f.models, "r.model_name IN @ OR r.model_id IN @");
  in(f.tasks, "t.task IN @");
  in(f.archs, "r.arch IN @");
  in(f.packs, "r.pack_variant IN @");
  in(f.runs, "t.run_id IN @");
  sql += " ORDER BY t.run_id, t.trajectory_id, u.seq";

  Reader reader(*this);
  Stmt s(reader.db(), path_, sql);
  for (size_t i = 0; i < params.size(); ++i) s.Text(static_cast<int>(i + 1), *params[i]);
  Dataset d;
  while (s.Step()) {
    std::string run_id = s.ColText(0), id = s.ColText(1);
    if (d.trajectories.empty() || d.trajectories.back().id != id ||
        d.trajectories.back().run_id != run_id) {
      TrajectoryRow& t = d.trajectories.emplace_back();
      t.run_id = std::move(run_id);
      t.id = std::move(id);
      t.model = s.ColText(2);
      t.provider = s.ColText(3);
      t.task = s.ColText(4);
      t.workload = s.ColText(5);
      t.arch = s.ColText(6);
      t.pack = s.ColText(7);
      t.index = static_cast<int>(s.ColInt(8));
      t.exit_status = s.ColText(9);
      t.run_dir = s.ColText(10);
      if (!s.ColNull(27)) t.pack_hardware_verified = s.ColInt(27) != 0;
    }
    if (s.ColNull(11)) continue;  // a trajectory without a spent turn
    TurnRow& u = d.trajectories.back().turns.emplace_back();
    u.turn = static_cast<int>(s.ColInt(11));
    u.outcome = s.ColText(12);
    u.status = s.ColText(13);
    u.reason = s.ColText(14);
    u.speedup = s.ColOptReal(15);
    u.tflops = s.ColOptReal(16);
    u.verification = s.ColText(17);
    u.arch_tag = s.ColText(18);
    u.evaluation_id = s.ColText(19);
    u.kernel_file = s.ColText(20);
    u.evaluation_file = s.ColText(21);
    u.prompt_tokens = s.ColInt(22);
    u.completion_tokens = s.ColInt(23);
    u.reasoning_tokens = s.ColInt(24);
    u.model_seconds = s.ColReal(25);
    u.evaluation_seconds = s.ColReal(26);
    if (!s.ColNull(29)) {
      // The record's layers the rows need, as the store keeps them.
      EvaluationRecord record;
      record.instructions = json::parse(s.ColText(29), nullptr, false);
      if (!s.ColNull(30)) record.build = {{"shared_object_sha256", s.ColText(30)}};
      AddRecordColumns(record, d.trajectories.back().arch, &u);
    }
    // The store resolves the paper's tag at ingest (a record from before the field: its
    // arch_tag); NULL: the turn has no stored record, so no tag under either rule.
    u.upstream_arch_tag = s.ColNull(28) ? std::nullopt : std::optional(s.ColText(28));
  }
  return d;
}

namespace {

// The JSON document in the first column of the row `sql` selects by its one key (?1), if any.
std::optional<json> QueryJsonByKey(sqlite3* db, const std::string& path, const char* sql,
                                   const std::string& key) {
  Stmt s(db, path, sql);
  s.Text(1, key);
  if (!s.Step()) return std::nullopt;
  return json::parse(s.ColText(0));
}

}  // namespace

std::optional<json> ResultsStore::GetEvaluation(const std::string& evaluation_id) const {
  Reader reader(*this);
  return QueryJsonByKey(reader.db(), path_,
                        "SELECT record_json FROM evaluations WHERE evaluation_id=?1",
                        evaluation_id);
}

std::optional<json> ResultsStore::GetRun(const std::string& run_id) const {
  Reader reader(*this);
  return QueryJsonByKey(reader.db(), path_, "SELECT run_json FROM runs WHERE id=?1", run_id);
}

StoreCounts ResultsStore::Counts() const {
  Reader reader(*this);
  Stmt s(reader.db(), path_,
         "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM trajectories), "
         "(SELECT count(*) FROM turns), (SELECT count(*) FROM evaluations)");
  StoreCounts c;
  if (s.Step()) {
    c.runs = s.ColInt(0);
    c.trajectories = s.ColInt(1);
    c.turns = s.ColInt(2);
    c.evaluations = s.ColInt(3);
  }
  return c;
}

int ResultsStore::SchemaVersion() const {
  Reader reader(*this);
  return static_cast<int>(QueryInt(reader.db(), path_, "PRAGMA user_version"));
}

std::string ResultsStore::IntegrityCheck() const {
  Reader reader(*this);
  Stmt s(reader.db(), path_, "PRAGMA integrity_check");
  std::string out;
  while (s.Step()) out += (out.empty() ? "" : "\n") + s.ColText(0);
  return out;
}

}  // namespace ptxbench
