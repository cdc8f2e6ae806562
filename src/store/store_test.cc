// The results store: a run folder in and a Dataset out, idempotent re-import, the schema's
// versions, filters, many writers (threads and processes), a writer killed mid-transaction,
// malformed input, and the speed of loading 100 000 turns.
#include "store/store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/files.h"
#include "store/import.h"
#include "store/store_follower.h"

namespace ptxbench {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// --- fixtures, as the agent loop writes them ---

json RunJson(const std::string& model, const std::string& started, const std::string& pack = "none",
             const std::string& arch = "sm_90a", json tasks = {"gemm_n7168_k5120"}) {
  return {{"schema", "ptxbench.run/1"},
          {"arch", arch},
          {"model",
           {{"name", model},
            {"provider", "openai"},
            {"model", model + "-id"},
            {"base_url", "http://127.0.0.1:8000/v1"},
            {"sampling", {{"temperature", 0.6}}},
            {"reasoning", json::object()}}},
          {"pack", pack},
          {"pack_info", {{"variant", pack}, {"sha256", "ab12"}, {"characters", 0}}},
          {"ptxbench_version", "0.1.0"},
          {"started_at", started},
          {"tasks", tasks},
          {"trajectories", 2},
          {"turns", 3}};
}

json Record(const std::string& status, const std::string& verification = "not_correct",
            json arch_tag = nullptr, std::optional<double> speedup = std::nullopt,
            const std::string& task = "gemm_n7168_k5120") {
  json perf = json::object();
  if (speedup) perf = {{"speedup", *speedup}, {"tflops", *speedup * 800}};
  return {{"schema", "ptxbench.evaluation/1"},
          {"status", status},
          {"reason", nullptr},
          {"created_at", "2026-12-03T06:47:00Z"},
          {"task", {{"definition", task}, {"workload_id", "wl-1"}}},
          {"arch", "sm_90a"},
          {"candidate", {{"sha256", "cafe"}, {"bytes", 10}}},
          {"toolchain", {{"nvcc", "12.8"}, {"gpu", {{"name", "NVIDIA H200"}}}}},
          {"instructions", {{"verification", verification}, {"arch_tag", arch_tag}}},
          {"performance", perf}};
}

json Turn(const std::string& traj, int n, const std::string& outcome, const std::string& status,
          bool with_eval = true, std::optional<double> speedup = std::nullopt, bool spent = true) {
  json t = {{"turn", n},
            {"outcome", outcome},
            {"status", status},
            {"reason", ""},
            {"summary", "turn " + std::to_string(n) + ": " + status},
            {"kernel_file", "kernels/" + traj + "/turn" + std::to_string(n) + ".cu"},
            {"evaluation_file", ""},
            {"evaluation_id", ""},
            {"usage",
             {{"prompt_tokens", 100 * n}, {"completion_tokens", 10 * n}, {"reasoning_tokens", n}}},
            {"attempts", 1},
            {"model_seconds", 1.5},
            {"evaluation_seconds", 2.5},
            {"overhead_seconds", 0.001},
            {"verified", outcome == "verified"},
            {"spent", spent}};
  if (with_eval) {
    t["evaluation_file"] = "evaluations/" + traj + "/turn" + std::to_string(n) + ".json";
    t["evaluation_id"] = traj + "/turn" + std::to_string(n);
  }
  if (speedup) {
    t["speedup"] = *speedup;
    t["tflops"] = *speedup * 800;
  }
  return t;
}

// Turns as a vector: a braced list of one json would be that json itself, not an array of it.
json Trajectory(const std::string& task, int index, const std::vector<json>& turns,
                const std::string& exit = "turn_limit") {
  std::string id = task + "-" + std::to_string(index);
  return {{"trajectory_format", "mini-swe-agent-1"},
          {"info",
           {{"exit_status", exit},
            {"ptxbench", "ptxbench.trajectory/1"},
            {"id", id},
            {"task", task},
            {"workload", "wl-1"},
            {"index", index},
            {"prompt_version", "pv1"},
            {"model_stats", {{"api_calls", turns.size()}}},
            {"turns", json(turns)},
            {"infra_events", json::array()}}},
          {"messages", {{{"role", "system"}, {"content", "x"}}}}};
}

// A filter built field by field (designated initializers warn under -Wextra when partial).
struct Where {
  StoreFilter f;
  Where& Models(std::vector<std::string> v) { return f.models = std::move(v), *this; }
  Where& Tasks(std::vector<std::string> v) { return f.tasks = std::move(v), *this; }
  Where& Archs(std::vector<std::string> v) { return f.archs = std::move(v), *this; }
  Where& Packs(std::vector<std::string> v) { return f.packs = std::move(v), *this; }
  Where& Runs(std::vector<std::string> v) { return f.runs = std::move(v), *this; }
  operator StoreFilter() const { return f; }
};

void WriteJson(const std::string& path, const json& j) { WriteFileAtomic(path, j.dump(1) + "\n"); }

// The fixture run: gemm-0 compile, correct, verified (with records); gemm-1 an extraction turn
// (no record) and an infra turn (not spent).
void WriteFixtureRun(const std::string& dir, const std::string& model = "m1",
                     const std::string& started = "2026-12-03T06:46:54Z") {
  const std::string task = "gemm_n7168_k5120";
  WriteJson(dir + "/run.json", RunJson(model, started));
  std::string t0 = task + "-0", t1 = task + "-1";
  WriteJson(dir + "/trajectories/" + t0 + ".json",
            Trajectory(task, 0,
                       {Turn(t0, 1, "compile", "COMPILE_ERROR"),
                        Turn(t0, 2, "correct", "PASSED", true, 0.25),
                        Turn(t0, 3, "verified", "PASSED", true, 0.75)}));
  WriteJson(dir + "/evaluations/" + t0 + "/turn1.json", Record("COMPILE_ERROR"));
  WriteJson(dir + "/evaluations/" + t0 + "/turn2.json",
            Record("PASSED", "sass_absent", nullptr, 0.25));
  WriteJson(dir + "/evaluations/" + t0 + "/turn3.json",
            Record("PASSED", "dynamic_present", "H", 0.75));
  WriteJson(dir + "/trajectories/" + t1 + ".json",
            Trajectory(task, 1,
                       {Turn(t1, 1, "extraction", "", false),
                        Turn(t1, 2, "infra", "INFRA_ERROR", true, std::nullopt, false)},
                       "infra_error"));
  WriteJson(
      dir + "/evaluations/" + t1 + "/turn2.json",
      json{{"status", "INFRA_ERROR"}, {"message", "no GPU"}, {"evaluation_id", t1 + "/turn2"}});
}

std::string SqlOne(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open(db_path.c_str(), &db);
  sqlite3_stmt* s = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
    out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

class StoreTest : public ::testing::Test {
 protected:
  std::string Db() const { return dir_.File("results.db"); }
  ScratchDir dir_{"ptxbench-store-test"};
};

TEST_F(StoreTest, RoundTripOfARunFolder) {
  std::string run = dir_.File("runs/20261203-m1");
  WriteFixtureRun(run);
  auto store = ResultsStore::Open(Db());
  ImportSummary s = ImportPath(*store, run);
  EXPECT_EQ(s.runs, 1);
  EXPECT_EQ(s.trajectories, 2);
  EXPECT_EQ(s.turns, 5);
  EXPECT_EQ(s.evaluations, 4);
  EXPECT_EQ(s.malformed, 0);
  EXPECT_TRUE(s.problems.empty());

  Dataset d = store->Load({});
  ASSERT_EQ(d.trajectories.size(), 2u);
  const TrajectoryRow& a = d.trajectories[0];
  EXPECT_EQ(a.run_id, "20261203-m1");
  EXPECT_EQ(a.id, "gemm_n7168_k5120-0");
  EXPECT_EQ(a.model, "m1");
  EXPECT_EQ(a.provider, "openai");
  EXPECT_EQ(a.task, "gemm_n7168_k5120");
  EXPECT_EQ(a.workload, "wl-1");
  EXPECT_EQ(a.arch, "sm_90a");
  EXPECT_EQ(a.pack, "none");
  EXPECT_EQ(a.index, 0);
  EXPECT_EQ(a.exit_status, "turn_limit");
  EXPECT_EQ(a.run_dir, fs::absolute(run).lexically_normal().string());
  ASSERT_EQ(a.turns.size(), 3u);
  EXPECT_EQ(a.turns[0].outcome, "compile");
  EXPECT_EQ(a.turns[0].status, "COMPILE_ERROR");
  EXPECT_FALSE(a.turns[0].speedup);
  EXPECT_EQ(a.turns[0].verification, "not_correct");
  EXPECT_EQ(a.turns[1].verification, "sass_absent");
  EXPECT_EQ(a.turns[1].arch_tag, "");
  EXPECT_TRUE(a.turns[1].Correct());
  EXPECT_DOUBLE_EQ(*a.turns[1].speedup, 0.25);
  EXPECT_DOUBLE_EQ(*a.turns[1].tflops, 200);
  const TurnRow& v = a.turns[2];
  EXPECT_EQ(v.turn, 3);
  EXPECT_TRUE(v.Verified());
  EXPECT_EQ(v.verification, "dynamic_present");
  EXPECT_EQ(v.arch_tag, "H");
  EXPECT_EQ(v.evaluation_id, "gemm_n7168_k5120-0/turn3");
  EXPECT_EQ(v.evaluation_file, "evaluations/gemm_n7168_k5120-0/turn3.json");
  EXPECT_EQ(v.kernel_file, "kernels/gemm_n7168_k5120-0/turn3.cu");
  EXPECT_EQ(v.prompt_tokens, 300);
  EXPECT_EQ(v.completion_tokens, 30);
  EXPECT_EQ(v.reasoning_tokens, 3);
  EXPECT_DOUBLE_EQ(v.model_seconds, 1.5);
  EXPECT_DOUBLE_EQ(v.evaluation_seconds, 2.5);

  // The infra turn is stored but is not a spent turn; the extraction turn has no record.
  const TrajectoryRow& b = d.trajectories[1];
  EXPECT_EQ(b.exit_status, "infra_error");
  ASSERT_EQ(b.turns.size(), 1u);
  EXPECT_EQ(b.turns[0].outcome, "extraction");
  EXPECT_EQ(b.turns[0].verification, "");
  EXPECT_EQ(store->Counts().turns, 5);

  // What went in comes back whole; the run's GPU comes from its records.
  EXPECT_EQ(*store->GetRun("20261203-m1"), json::parse(ReadFile(run + "/run.json")));
  EXPECT_EQ(
      *store->GetEvaluation(ResultsStore::EvaluationKey("20261203-m1", "gemm_n7168_k5120-0/turn3")),
      json::parse(ReadFile(run + "/evaluations/gemm_n7168_k5120-0/turn3.json")));
  store.reset();
  EXPECT_EQ(SqlOne(Db(), "SELECT gpu_name FROM runs"), "NVIDIA H200");
  EXPECT_EQ(SqlOne(Db(), "SELECT model_id FROM runs"), "m1-id");
  EXPECT_EQ(SqlOne(Db(), "SELECT sampling_json FROM runs"), R"({"temperature":0.6})");
  EXPECT_EQ(SqlOne(Db(),
                   "SELECT count(*) FROM evaluations WHERE verification='dynamic_present' "
                   "AND arch_tag='H' AND speedup=0.75"),
            "1");
}

// `run --db` and `fixit repair --db` follow their folder with the one follower: a write that
// fails (here a trajectory the store cannot take) is reported and does not stop the run, and
// Converge brings the store up to the folder; a resumed follower imports the folder first.
TEST_F(StoreTest, TheFollowerCatchesUpAfterAFailedWrite) {
  std::string run = dir_.File("runs/20261203-m1");
  WriteFixtureRun(run);
  {
    StoreFollower follower(Db(), run, "run", /*resume=*/false, /*quiet=*/true);
    testing::internal::CaptureStderr();
    follower.Save(json::array(), Record("PASSED"));
    const std::string said = testing::internal::GetCapturedStderr();
    EXPECT_NE(said.find("run: a write to the store"), std::string::npos) << said;
    EXPECT_EQ(ResultsStore::Open(Db())->Load({}).trajectories.size(), 0u);
    testing::internal::CaptureStderr();
    follower.Converge();
    EXPECT_NE(testing::internal::GetCapturedStderr().find("now holds the whole run"),
              std::string::npos);
  }
  EXPECT_EQ(ResultsStore::Open(Db())->Load({}).trajectories.size(), 2u);

  const std::string other_db = dir_.File("resumed.db");
  StoreFollower resumed(other_db, run, "fixit", /*resume=*/true, /*quiet=*/true);
  EXPECT_EQ(ResultsStore::Open(other_db)->Load({}).trajectories.size(), 2u);
}

TEST_F(StoreTest, ReimportIsIdempotentAndAResumedRunUpdatesInPlace) {
  std::string run = dir_.File("runs/r1");
  WriteFixtureRun(run);
  auto store = ResultsStore::Open(Db());
  ImportPath(*store, run);
  StoreCounts before = store->Counts();
  Dataset d1 = store->Load({});
  ImportPath(*store, run);
  ImportPath(*store, run + "/trajectories/gemm_n7168_k5120-0.json");  // the same file alone
  StoreCounts after = store->Counts();
  EXPECT_EQ(after.runs, before.runs);
  EXPECT_EQ(after.trajectories, before.trajectories);
  EXPECT_EQ(after.turns, before.turns);
  EXPECT_EQ(after.evaluations, before.evaluations);
  Dataset d2 = store->Load({});
  ASSERT_EQ(d2.trajectories.size(), d1.trajectories.size());
  EXPECT_EQ(d2.trajectories[0].turns.size(), d1.trajectories[0].turns.size());

  // --resume: run.json gains resumed_at, gemm-1's infra turn is run again and passes.
  json rj = json::parse(ReadFile(run + "/run.json"));
  rj["resumed_at"] = {"2026-12-04T00:00:00Z"};
  rj["concurrency"] = 8;
  WriteJson(run + "/run.json", rj);
  std::string t1 = "gemm_n7168_k5120-1";
  WriteJson(run + "/trajectories/" + t1 + ".json",
            Trajectory("gemm_n7168_k5120", 1,
                       {Turn(t1, 1, "extraction", "", false),
                        Turn(t1, 2, "verified", "PASSED", true, 1.5)}));
  WriteJson(run + "/evaluations/" + t1 + "/turn2.json",
            Record("PASSED", "dynamic_present", "H", 1.5));
  ImportPath(*store, run);
  EXPECT_EQ(store->Counts().runs, 1);
  EXPECT_EQ(store->Counts().turns, before.turns);
  Dataset d3 = store->Load({});
  ASSERT_EQ(d3.trajectories.size(), 2u);
  EXPECT_EQ(d3.trajectories[1].run_id, "r1");
  EXPECT_EQ(d3.trajectories[1].exit_status, "turn_limit");
  ASSERT_EQ(d3.trajectories[1].turns.size(), 2u);
  EXPECT_EQ(d3.trajectories[1].turns[1].arch_tag, "H");
  EXPECT_EQ(store->GetRun("r1")->at("concurrency"), 8);

  // A different run in a folder of the same name elsewhere gets its own id.
  std::string other = dir_.File("elsewhere/r1");
  WriteFixtureRun(other, "m2", "2026-12-05T00:00:00Z");
  ImportPath(*store, other);
  Dataset d4 = store->Load({});
  ASSERT_EQ(d4.trajectories.size(), 4u);
  EXPECT_EQ(d4.trajectories[2].run_id.rfind("r1-", 0), 0u) << d4.trajectories[2].run_id;
  EXPECT_EQ(d4.trajectories[2].model, "m2");
}

TEST_F(StoreTest, MigratesAnEmptyFileAndRefusesNewerOrForeignFiles) {
  WriteFileAtomic(Db(), "");  // a zero-byte file is an empty database
  {
    auto store = ResultsStore::Open(Db());
    EXPECT_EQ(store->SchemaVersion(), ResultsStore::CodeSchemaVersion());
    EXPECT_EQ(store->IntegrityCheck(), "ok");
  }
  EXPECT_EQ(SqlOne(Db(), "PRAGMA journal_mode"), "wal");
  { ResultsStore::Open(Db()); }  // opening again changes nothing
  EXPECT_EQ(SqlOne(Db(), "PRAGMA user_version"), std::to_string(ResultsStore::CodeSchemaVersion()));

  SqlOne(Db(), "PRAGMA user_version=" + std::to_string(ResultsStore::CodeSchemaVersion() + 1));
  try {
    ResultsStore::Open(Db());
    FAIL() << "a newer schema was opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kEnvironment);
    EXPECT_NE(std::string(e.what()).find("newer than this ptxbench"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(Db()), std::string::npos) << e.what();
  }

  std::string foreign = dir_.File("foreign.db");
  SqlOne(foreign, "CREATE TABLE t (x)");
  try {
    ResultsStore::Open(foreign);
    FAIL() << "another program's database was opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);  // the user's --db, exit 2
    EXPECT_NE(std::string(e.what()).find("not a ptxbench results store"), std::string::npos);
  }
  std::string garbage = dir_.File("garbage.db");
  WriteFileAtomic(garbage, std::string(4096, 'x'));
  try {
    ResultsStore::Open(garbage);
    FAIL() << "a non-database file was opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    EXPECT_NE(std::string(e.what()).find(garbage + ": not an SQLite database"), std::string::npos)
        << e.what();
  }
  // A folder given as --db (issue 35: was exit 3, "cannot open").
  try {
    ResultsStore::Open(dir_.path());
    FAIL() << "a folder was opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    EXPECT_NE(std::string(e.what()).find("is a folder"), std::string::npos) << e.what();
  }
  try {
    ResultsStore::Open(dir_.File("no/such/folder/x.db"));
    FAIL() << "opened a store in a missing folder";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kEnvironment);
  }
}

// A run whose turns carry the three kinds of record there are now: the tag under both rules,
// under the paper's rule only (ours is stricter), and an old record with no paper's tag.
std::string PutTagRun(ResultsStore& store, const std::string& dir) {
  std::string id = store.PutRun(RunJson("m1", "2026-12-04T00:00:00Z"), dir);
  json both = Record("PASSED", "dynamic_present", "H", 1.5);
  both["instructions"]["upstream_arch_tag"] = "H";
  json paper_only = Record("PASSED", "dynamic_present", nullptr, 0.9);
  paper_only["instructions"]["upstream_arch_tag"] = "H";
  paper_only["instructions"]["tensor_core_work_fraction"] = 0.0001;
  json old = Record("PASSED", "dynamic_present", "H", 1.1);  // no upstream_arch_tag
  json none = Record("PASSED", "sass_absent", nullptr, 0.5);
  none["instructions"]["upstream_arch_tag"] = nullptr;
  const std::string t = "gemm_n7168_k5120-0";
  std::vector<json> turns = {
      Turn(t, 1, "verified", "PASSED", true, 1.5), Turn(t, 2, "correct", "PASSED", true, 0.9),
      Turn(t, 3, "verified", "PASSED", true, 1.1), Turn(t, 4, "correct", "PASSED", true, 0.5)};
  std::vector<StoredEvaluation> evals;
  int n = 0;
  for (const json& r : {both, paper_only, old, none})
    evals.push_back({ResultsStore::EvaluationKey(id, t + "/turn" + std::to_string(++n)), r});
  store.PutTrajectory(id, Trajectory("gemm_n7168_k5120", 0, turns), evals);
  return id;
}

void ExpectTagsOfPutTagRun(const Dataset& d) {
  ASSERT_EQ(d.trajectories.size(), 1u);
  const auto& u = d.trajectories[0].turns;
  ASSERT_EQ(u.size(), 4u);
  EXPECT_EQ(u[0].arch_tag, "H");
  EXPECT_EQ(u[0].upstream_arch_tag, std::optional<std::string>("H"));
  EXPECT_EQ(u[1].arch_tag, "");
  EXPECT_EQ(u[1].upstream_arch_tag, std::optional<std::string>("H"));
  EXPECT_FALSE(u[1].Verified());
  EXPECT_TRUE(u[1].VerifiedUpstream());
  EXPECT_EQ(u[2].arch_tag, "H");
  EXPECT_EQ(u[2].upstream_arch_tag, std::optional<std::string>("H"));  // old: its arch_tag
  EXPECT_EQ(u[3].upstream_arch_tag, std::optional<std::string>(""));
  EXPECT_FALSE(u[3].VerifiedUpstream());
}

TEST_F(StoreTest, TheUpstreamArchTagRoundTrips) {
  auto store = ResultsStore::Open(Db());
  std::string id = PutTagRun(*store, dir_.File("tags"));
  ExpectTagsOfPutTagRun(store->Load({}));
  // A turn without a stored record has no tag under either rule.
  store->PutTrajectory(id,
                       Trajectory("mha", 0, {Turn("mha-0", 1, "compile", "COMPILE_ERROR", false)}));
  Dataset m = store->Load(Where().Tasks({"mha"}));
  ASSERT_EQ(m.trajectories.size(), 1u);
  EXPECT_EQ(m.trajectories[0].turns.at(0).upstream_arch_tag, std::nullopt);
  store.reset();
  EXPECT_EQ(SqlOne(Db(), "SELECT count(*) FROM evaluations WHERE upstream_arch_tag='H'"), "3");
  EXPECT_EQ(SqlOne(Db(), "SELECT count(*) FROM evaluations WHERE arch_tag='H'"), "2");
  // Load's join still reads only the index.
  EXPECT_EQ(SqlOne(Db(),
                   "SELECT count(*) FROM pragma_index_info('evaluations_join') "
                   "WHERE name='upstream_arch_tag'"),
            "1");
}

TEST_F(StoreTest, AStoreOfSchemaTwoMigratesAndKeepsItsTags) {
  {
    auto store = ResultsStore::Open(Db());
    PutTagRun(*store, dir_.File("tags"));
  }
  // Back to schema 2 as it shipped: no upstream_arch_tag column, the join index without it.
  for (const char* sql :
       {"DROP INDEX evaluations_upstream_arch_tag", "DROP INDEX evaluations_join",
        "ALTER TABLE evaluations DROP COLUMN upstream_arch_tag",
        "CREATE INDEX evaluations_join ON evaluations(evaluation_id, verification, arch_tag)",
        "PRAGMA user_version=2"})
    SqlOne(Db(), sql);
  ASSERT_EQ(SqlOne(Db(), "PRAGMA user_version"), "2");
  ASSERT_EQ(SqlOne(Db(),
                   "SELECT count(*) FROM pragma_table_info('evaluations') "
                   "WHERE name='upstream_arch_tag'"),
            "0");
  auto store = ResultsStore::Open(Db());
  EXPECT_EQ(store->SchemaVersion(), ResultsStore::CodeSchemaVersion());
  EXPECT_EQ(store->IntegrityCheck(), "ok");
  // The column is filled from each record: its upstream_arch_tag, else (an old record) its
  // arch_tag; a null tag is no tag.
  ExpectTagsOfPutTagRun(store->Load({}));
  store.reset();
  EXPECT_EQ(SqlOne(Db(), "SELECT count(*) FROM evaluations WHERE upstream_arch_tag='H'"), "3");
  EXPECT_EQ(SqlOne(Db(), "SELECT count(*) FROM evaluations WHERE upstream_arch_tag=''"), "1");
}

TEST_F(StoreTest, Filters) {
  auto store = ResultsStore::Open(Db());
  auto add = [&](const std::string& name, const std::string& model, const std::string& pack,
                 const std::string& arch) {
    std::string id = store->PutRun(
        RunJson(model, "2026-12-03T00:00:0" + name.substr(1), pack, arch, {"gemm", "mha"}),
        dir_.File(name));
    for (std::string task : {"gemm", "mha"})
      store->PutTrajectory(
          id, Trajectory(task, 0, {Turn(task + "-0", 1, "compile", "COMPILE_ERROR", false)}));
    return id;
  };
  std::string r1 = add("r1", "alpha", "none", "sm_90a");
  std::string r2 = add("r2", "beta", "full", "sm_90a");
  std::string r3 = add("r3", "alpha", "full", "sm_100a");
  EXPECT_EQ(r1, "r1");
  auto count = [&](const StoreFilter& f) { return store->Load(f).trajectories.size(); };
  EXPECT_EQ(count({}), 6u);
  EXPECT_EQ(count(Where().Models({"alpha"})), 4u);
  EXPECT_EQ(count(Where().Models({"beta-id"})), 2u);  // the provider's id works too
  EXPECT_EQ(count(Where().Models({"alpha", "beta"})), 6u);
  EXPECT_EQ(count(Where().Tasks({"mha"})), 3u);
  EXPECT_EQ(count(Where().Archs({"sm_100a"})), 2u);
  EXPECT_EQ(count(Where().Packs({"full"})), 4u);
  EXPECT_EQ(count(Where().Runs({r2})), 2u);
  EXPECT_EQ(count(Where().Models({"alpha"}).Tasks({"gemm"}).Packs({"full"})), 1u);
  EXPECT_EQ(count(Where().Models({"gamma"})), 0u);
  Dataset d = store->Load(Where().Tasks({"gemm"}).Archs({"sm_90a"}));
  ASSERT_EQ(d.trajectories.size(), 2u);
  EXPECT_EQ(d.trajectories[0].run_id, r1);
  EXPECT_EQ(d.trajectories[1].run_id, r2);
  EXPECT_EQ(d.trajectories[1].pack, "full");
  EXPECT_EQ(d.trajectories[1].turns.size(), 1u);
  EXPECT_EQ(r3, "r3");
  // A Blackwell pack that never ran on its chip: the store keeps the flag for the reports.
  json bw = RunJson("alpha", "2026-12-03T00:00:09", "full", "sm_100a", {"gemm"});
  bw["pack_info"]["hardware_verified"] = false;
  std::string r4 = store->PutRun(bw, dir_.File("r4"));
  store->PutTrajectory(
      r4, Trajectory("gemm", 0, {Turn("gemm-0", 1, "compile", "COMPILE_ERROR", false)}));
  Dataset b = store->Load(Where().Runs({r4}));
  ASSERT_EQ(b.trajectories.size(), 1u);
  EXPECT_EQ(b.trajectories[0].pack_hardware_verified, std::optional<bool>(false));
  EXPECT_EQ(d.trajectories[0].pack_hardware_verified, std::nullopt);  // no flag recorded
}

TEST_F(StoreTest, AFailedWriteRollsBackAndUnknownRunsAreRefused) {
  auto store = ResultsStore::Open(Db());
  std::string id = store->PutRun(RunJson("m", "2026-12-03T00:00:00Z"), dir_.File("r"));
  json good = Trajectory("gemm", 0, {Turn("gemm-0", 1, "compile", "COMPILE_ERROR", false)});
  store->PutTrajectory(id, good);
  // The third turn is malformed: the two before it, already inserted, must not survive.
  json bad = Trajectory("gemm", 0,
                        {Turn("gemm-0", 1, "compile", "COMPILE_ERROR", false),
                         Turn("gemm-0", 2, "compile", "COMPILE_ERROR", false),
                         {{"turn", "three"}}});
  bad["info"]["exit_status"] = "turn_limit_changed";
  EXPECT_THROW(store->PutTrajectory(id, bad, {{"run/e1", Record("PASSED")}}), Error);
  Dataset d = store->Load({});
  ASSERT_EQ(d.trajectories.size(), 1u);
  EXPECT_EQ(d.trajectories[0].exit_status, "turn_limit");
  EXPECT_EQ(d.trajectories[0].turns.size(), 1u);
  EXPECT_EQ(store->Counts().evaluations, 0);

  try {
    store->PutTrajectory("no-such-run", good);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
  }
  EXPECT_THROW(store->PutEvaluation(json{{"no", "status"}}, "x"), Error);
  EXPECT_THROW(store->PutRun(json::array(), "r"), Error);
  EXPECT_THROW(store->PutRun({{"schema", "something.else/1"}}, "r"), Error);
}

TEST_F(StoreTest, SixteenThreadsWriteAtOnce) {
  auto store = ResultsStore::Open(Db());
  std::string id = store->PutRun(RunJson("m", "2026-12-03T00:00:00Z"), dir_.File("r"));
  constexpr int kThreads = 16, kEach = 100, kTurns = 5;
  std::atomic<int> errors{0};
  std::atomic<bool> writing{true};
  std::vector<std::thread> pool;
  for (int w = 0; w < kThreads; ++w)
    pool.emplace_back([&, w] {
      for (int i = 0; i < kEach; ++i) {
        try {
          std::string task = "task" + std::to_string(w);
          std::string traj = task + "-" + std::to_string(i);
          std::vector<json> turns;
          std::vector<StoredEvaluation> evals;
          for (int n = 1; n <= kTurns; ++n) {
            turns.push_back(Turn(traj, n, "correct", "PASSED", true, 0.5));
            evals.push_back({ResultsStore::TurnEvaluationKey(id, turns.back()),
                             Record("PASSED", "sass_absent", nullptr, 0.5)});
          }
          store->PutTrajectory(id, Trajectory(task, i, turns), evals);
        } catch (const std::exception& e) {
          ++errors;
          std::fprintf(stderr, "writer %d: %s\n", w, e.what());
        }
      }
    });
  // Readers alongside, as a report would run during a run.
  std::thread reader([&] {
    while (writing) {
      try {
        store->Load(Where().Tasks({"task3"}));
        store->Counts();
      } catch (const std::exception& e) {
        ++errors;
        std::fprintf(stderr, "reader: %s\n", e.what());
      }
    }
  });
  for (auto& t : pool) t.join();
  writing = false;
  reader.join();
  EXPECT_EQ(errors, 0);
  StoreCounts c = store->Counts();
  EXPECT_EQ(c.trajectories, kThreads * kEach);
  EXPECT_EQ(c.turns, kThreads * kEach * kTurns);
  EXPECT_EQ(c.evaluations, kThreads * kEach * kTurns);
  Dataset d = store->Load({});
  ASSERT_EQ(d.trajectories.size(), size_t{kThreads * kEach});
  for (const auto& t : d.trajectories) {
    ASSERT_EQ(t.turns.size(), size_t{kTurns}) << t.id;
    EXPECT_EQ(t.turns[0].verification, "sass_absent");
  }
}

// Children that each open the store and write; returns how many failed.
int RunChildren(int n, const std::function<void(int)>& body) {
  std::vector<pid_t> pids;
  for (int k = 0; k < n; ++k) {
    pid_t pid = fork();
    if (pid == 0) {
      int rc = 0;
      try {
        body(k);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", k, e.what());
        rc = 1;
      }
      std::fflush(stderr);
      _exit(rc);
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return failed;
}

TEST_F(StoreTest, SeveralProcessesCreateAndWriteAtOnce) {
  // The file does not exist yet: the children race to create it, migrate it and put the same
  // run, and every one must end up with the same run id.
  constexpr int kProcs = 4, kEach = 50;
  int failed = RunChildren(kProcs, [&](int k) {
    auto store = ResultsStore::Open(Db());
    for (int i = 0; i < kEach; ++i) {
      std::string id = store->PutRun(RunJson("m", "2026-12-03T00:00:00Z"), dir_.File("r"));
      if (id != "r") throw InternalError("run id " + id);
      std::string task = "p" + std::to_string(k);
      store->PutTrajectory(id, Trajectory(task, i,
                                          {Turn(task, 1, "compile", "COMPILE_ERROR", false),
                                           Turn(task, 2, "compile", "COMPILE_ERROR", false)}));
    }
  });
  EXPECT_EQ(failed, 0);
  // Only opening, many times over: the first open of a file converts it to WAL, which SQLite
  // does without its busy handler, so the race at creation is where "locked" would show.
  for (int round = 0; round < 10; ++round) {
    std::string fresh = dir_.File("fresh" + std::to_string(round) + ".db");
    EXPECT_EQ(RunChildren(6, [&](int) { ResultsStore::Open(fresh)->Counts(); }), 0) << round;
  }
  auto store = ResultsStore::Open(Db());
  EXPECT_EQ(store->IntegrityCheck(), "ok");
  EXPECT_EQ(store->Counts().runs, 1);
  EXPECT_EQ(store->Counts().trajectories, kProcs * kEach);
  EXPECT_EQ(store->Counts().turns, kProcs * kEach * 2);
}

TEST_F(StoreTest, AWriterKilledMidWriteLeavesAConsistentStore) {
  std::string id;
  {
    auto store = ResultsStore::Open(Db());
    id = store->PutRun(RunJson("m", "2026-12-03T00:00:00Z"), dir_.File("r"));
  }
  // Trajectory k % 50 is rewritten over and over with k % 40 + 1 turns and index k: after the
  // kill, each one must have exactly the turns of the version its row says was written last.
  // The 200 versions are built before the loop, so that the writer spends its time in the
  // store and a kill lands inside a transaction as often as possible.
  std::vector<std::pair<json, std::vector<StoredEvaluation>>> versions(200);
  for (int k = 0; k < 200; ++k) {
    std::vector<json> turns;
    for (int n = 1; n <= k % 40 + 1; ++n) {
      turns.push_back(Turn("t-" + std::to_string(k % 50), n, "correct", "PASSED", true, 1.0));
      versions[k].second.push_back(
          {ResultsStore::TurnEvaluationKey(id, turns.back()), Record("PASSED")});
    }
    versions[k].first = Trajectory("t", k % 50, turns);
  }
  constexpr int kRounds = 10;
  for (int round = 0; round < kRounds; ++round) {
    pid_t pid = fork();
    if (pid == 0) {
      try {
        auto store = ResultsStore::Open(Db());
        for (int k = round * 1000000;; ++k) {
          auto& [traj, evals] = versions[k % 200];
          traj["info"]["index"] = k;  // which write this version is
          store->PutTrajectory(id, traj, evals);
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "killed writer: %s\n", e.what());
      }
      _exit(1);
    }
    // Let it write a while, then kill it wherever it is.
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + 53 * round));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer ended on its own (status " << status << ")";

    auto store = ResultsStore::Open(Db());
    EXPECT_EQ(store->IntegrityCheck(), "ok");
    Dataset d = store->Load({});
    EXPECT_GT(d.trajectories.size(), 0u);
    for (const auto& t : d.trajectories) {
      // The row's index is the k of the write it came from.
      EXPECT_EQ(t.turns.size(), size_t(t.index % 40 + 1)) << t.id << " round " << round;
      for (const auto& u : t.turns) EXPECT_EQ(u.verification, "not_correct");  // and its record
    }
    std::printf("round %d: %zu trajectories checked after SIGKILL\n", round, d.trajectories.size());
  }
}

TEST_F(StoreTest, MalformedFilesAreReportedAndSkipped) {
  std::string runs = dir_.File("runs");
  WriteFixtureRun(runs + "/good");
  // A run with a broken run.json: skipped whole.
  MakeDirs(runs + "/broken-run/trajectories");
  WriteFileAtomic(runs + "/broken-run/run.json", "{ not json");
  // In the good run: a trajectory that is not JSON, one without an id, a record that is not
  // JSON and a record that is missing.
  WriteFileAtomic(runs + "/good/trajectories/garbage.json", "{\"info\": ");
  WriteJson(runs + "/good/trajectories/noid.json",
            {{"info", {{"task", "x"}}}, {"messages", json::array()}});
  std::string t2 = "gemm_n7168_k5120-2";
  WriteJson(
      runs + "/good/trajectories/" + t2 + ".json",
      Trajectory("gemm_n7168_k5120", 2,
                 {Turn(t2, 1, "compile", "COMPILE_ERROR"), Turn(t2, 2, "compile", "COMPILE_ERROR"),
                  Turn(t2, 3, "correct", "PASSED")}));
  WriteFileAtomic(runs + "/good/evaluations/" + t2 + "/turn1.json", "[1, 2");
  WriteJson(runs + "/good/evaluations/" + t2 + "/turn3.json",
            json{{"schema", "other/1"}, {"status", "PASSED"}});
  // Loose files next to the runs: a lone record with an id, one without, and a stray file.
  WriteJson(runs + "/lone-a.json", [] {
    json r = Record("INCORRECT");
    r["evaluation_id"] = "lone-a";
    return r;
  }());
  WriteJson(runs + "/lone-b.json", Record("TIMEOUT"));
  WriteJson(runs + "/stray.json", {{"hello", "world"}});

  auto store = ResultsStore::Open(Db());
  ImportSummary s = ImportPath(*store, runs);
  std::vector<std::string> names;
  for (const auto& p : s.problems)
    names.push_back(fs::path(p.path).filename().string() + ": " + p.message);
  auto mentions = [&](const std::string& needle) {
    for (const auto& n : names)
      if (n.find(needle) != std::string::npos) return true;
    return false;
  };
  EXPECT_EQ(s.malformed, 6) << testing::PrintToString(names);
  EXPECT_EQ(s.missing_evaluations, 1);
  EXPECT_TRUE(mentions("run.json")) << testing::PrintToString(names);
  EXPECT_TRUE(mentions("garbage.json: not valid JSON"));
  EXPECT_TRUE(mentions("noid.json"));
  EXPECT_TRUE(mentions("turn1.json: not valid JSON"));
  EXPECT_TRUE(mentions("turn3.json"));
  EXPECT_TRUE(mentions("turn2.json: named by"));
  EXPECT_TRUE(mentions("stray.json: not a ptxbench"));
  EXPECT_EQ(s.runs, 1);
  EXPECT_EQ(s.trajectories, 3);  // the fixture's two and gemm-2 without its bad records
  EXPECT_EQ(s.evaluations, 4 + 2);
  Dataset d = store->Load({});
  ASSERT_EQ(d.trajectories.size(), 3u);
  EXPECT_EQ(d.trajectories[2].turns.size(), 3u);
  EXPECT_EQ(d.trajectories[2].turns[0].verification, "");  // its record was skipped
  EXPECT_TRUE(store->GetEvaluation("lone-a"));
  EXPECT_EQ(store->Counts().evaluations, 6);

  EXPECT_THROW(ImportPath(*store, dir_.File("nothing-here")), Error);
}

TEST_F(StoreTest, LoneTrajectoryAndEvaluationFiles) {
  std::string run = dir_.File("runs/r9");
  WriteFixtureRun(run);
  auto store = ResultsStore::Open(Db());
  ImportSummary s = ImportPath(*store, run + "/trajectories/gemm_n7168_k5120-0.json");
  EXPECT_EQ(s.runs, 1);
  EXPECT_EQ(s.trajectories, 1);
  EXPECT_EQ(s.evaluations, 3);
  Dataset d = store->Load({});
  ASSERT_EQ(d.trajectories.size(), 1u);
  EXPECT_EQ(d.trajectories[0].run_id, "r9");
  EXPECT_EQ(d.trajectories[0].turns[2].arch_tag, "H");

  // A trajectory with no run.json around it: stored under a run named after its folder.
  std::string loose = dir_.File("loose/x.json");
  WriteJson(loose, Trajectory("mha", 0, {Turn("mha-0", 1, "compile", "COMPILE_ERROR", false)}));
  s = ImportPath(*store, loose);
  EXPECT_EQ(s.trajectories, 1);
  EXPECT_EQ(store->Load(Where().Runs({"loose"})).trajectories.size(), 1u);
  // Another one in the same folder, with the same trajectory id, is another run's.
  WriteJson(dir_.File("loose/y.json"),
            Trajectory("mha", 0, {Turn("mha-0", 1, "extraction", "", false)}));
  ImportPath(*store, dir_.File("loose"));
  EXPECT_EQ(store->Load(Where().Tasks({"mha"})).trajectories.size(), 2u);
  ImportPath(*store, dir_.File("loose"));  // and again: still two
  EXPECT_EQ(store->Load(Where().Tasks({"mha"})).trajectories.size(), 2u);

  std::string rec = dir_.File("rec.json");
  WriteJson(rec, Record("PASSED", "dynamic_present", "H", 2.0));
  s = ImportPath(*store, rec);
  EXPECT_EQ(s.evaluations, 1);
  std::string sha = SqlOne(Db(), "SELECT evaluation_id FROM evaluations WHERE speedup=2.0");
  EXPECT_EQ(sha.size(), 64u);
  EXPECT_EQ(*store->GetEvaluation(sha), json::parse(ReadFile(rec)));
}

// A performance budget: the ctest entry store_test_perf (label perf) runs it, and
// scripts/test.sh reports its result without failing on it.
class StorePerf : public StoreTest {};
TEST_F(StorePerf, OneHundredThousandTurnsLoadInUnderASecond) {
  // On the disk, not /dev/shm, so that the timing is an honest one.
  std::string tmpl = (fs::temp_directory_path() / "ptxbench-store-speed.XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  std::string db = tmpl + "/results.db";
  struct Cleanup {
    std::string dir;
    ~Cleanup() { fs::remove_all(dir); }
  } cleanup{tmpl};

  auto store = ResultsStore::Open(db);
  std::string id = store->PutRun(RunJson("m", "2026-12-03T00:00:00Z"), tmpl + "/r");
  constexpr int kTrajectories = 2000, kTurns = 50;
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  double write_s = 0;
  for (int i = 0; i < kTrajectories; ++i) {
    std::string traj = "gemm-" + std::to_string(i);
    std::vector<json> turns;
    std::vector<StoredEvaluation> evals;
    for (int n = 1; n <= kTurns; ++n) {
      bool ok = n % 3 == 0;
      turns.push_back(Turn(traj, n, ok ? "verified" : "compile", ok ? "PASSED" : "COMPILE_ERROR",
                           true, ok ? std::optional<double>(0.01 * n) : std::nullopt));
      evals.push_back(
          {ResultsStore::TurnEvaluationKey(id, turns.back()),
           ok ? Record("PASSED", "dynamic_present", "H", 0.01 * n) : Record("COMPILE_ERROR")});
    }
    json trajectory = Trajectory("gemm", i, turns);
    auto tw = Clock::now();  // the store's time only, not the fixture's
    store->PutTrajectory(id, trajectory, evals);
    write_s += std::chrono::duration<double>(Clock::now() - tw).count();
  }
  double total_s = std::chrono::duration<double>(Clock::now() - t0).count();
  // The best of three loads, each on a cold connection as a report's would be: the claim is
  // what the store can do, and one load on a busy two-core machine reads a neighbour's work.
  Dataset d;
  double load_s = 1e9;
  for (int round = 0; round < 3; ++round) {
    store.reset();
    store = ResultsStore::Open(db);
    auto t1 = Clock::now();
    d = store->Load({});
    load_s = std::min(load_s, std::chrono::duration<double>(Clock::now() - t1).count());
  }
  size_t turns = 0, verified = 0;
  for (const auto& t : d.trajectories) {
    turns += t.turns.size();
    for (const auto& u : t.turns) verified += u.arch_tag == "H";
  }
  std::printf(
      "100000 turns (+100000 records) in %d transactions: PutTrajectory %.2f s (%.2f s with "
      "building the JSON); Load %.3f s\n",
      kTrajectories, write_s, total_s, load_s);
  EXPECT_EQ(turns, size_t{kTrajectories * kTurns});
  EXPECT_EQ(verified, size_t{kTrajectories * (kTurns / 3)});
  EXPECT_LT(load_s, 1.0);
}

}  // namespace
}  // namespace ptxbench
