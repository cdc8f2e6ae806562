// Reports from run folders: the loader, the exports' exact contents on a fixture, the
// comparison with published figures, and `ptxbench report` end to end.
#include "report/tables.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/files.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "report/from_runs.h"
#include "report/html.h"

namespace ptxbench {
namespace {

using nlohmann::json;

json Turn(int n, const std::string& outcome, std::optional<double> speedup = {},
          bool spent = true) {
  json t = {
      {"turn", n},
      {"outcome", outcome},
      {"status", outcome == "correct" || outcome == "verified" ? "PASSED"
                 : outcome == "compile"                          ? "COMPILE_ERROR"
                 : outcome == "incorrect"                        ? "INCORRECT"
                                                                 : "X"},
      {"spent", spent},
      {"usage", {{"prompt_tokens", 100 * n}, {"completion_tokens", 10}, {"reasoning_tokens", 0}}},
      {"evaluation_file", ""},
      {"kernel_file", ""}};
  if (speedup) t["speedup"] = *speedup;
  return t;
}

// A run of model "Fixture Model" on gemm_n7168_k5120, three trajectories:
//   0: compile, correct 0.5, verified 0.8        → correct@1 no, @4 yes; verified@4 yes
//   1: verified 1.2                              → correct@1 yes, verified@1 yes
//   2: incorrect, (infra, not spent), incorrect  → never correct
void WriteFixtureRun(const std::string& dir) {
  MakeDirs(dir + "/trajectories");
  MakeDirs(dir + "/evaluations/gemm_n7168_k5120-1");
  WriteFileAtomic(dir + "/run.json",
                  json{{"model", {{"name", "Fixture Model"}, {"provider", "openai"}}},
                       {"arch", "sm_90a"},
                       {"pack", "full"}}
                      .dump());
  std::vector<json> turns = {
      json::array({Turn(1, "compile"), Turn(2, "correct", 0.5), Turn(3, "verified", 0.8)}),
      json::array({Turn(1, "verified", 1.2)}),
      json::array({Turn(1, "incorrect"), Turn(2, "infra", {}, false), Turn(2, "incorrect")})};
  turns[1][0]["evaluation_file"] = "evaluations/gemm_n7168_k5120-1/turn1.json";
  turns[1][0]["evaluation_id"] = "ev-traj1-turn1";
  // The record's evidence as the harness writes it: static totals, the profiled counts.
  json families = {
      {"gmma", {{"static_count", 4}, {"warp_executions", 9175040.0}, {"thread_executions_true", 293601280.0}}},
      {"tma", {{"static_count", 2}, {"warp_executions", 573440.0}, {"thread_executions_true", 573440.0}}},
      {"tcgen05", {{"static_count", 0}, {"warp_executions", 0.0}, {"thread_executions_true", 0.0}}},
      {"tmem", {{"static_count", 0}, {"warp_executions", 0.0}, {"thread_executions_true", 0.0}}}};
  WriteFileAtomic(
      dir + "/evaluations/gemm_n7168_k5120-1/turn1.json",
      json{{"status", "PASSED"},
           {"build", {{"shared_object_sha256", std::string(64, 'a')}}},
           {"instructions",
            {{"verification", "dynamic_present"},
             {"arch_tag", "H"},
             {"static",
              {{"state", "ran"}, {"totals", {{"gmma", 4}, {"tma", 2}, {"tcgen05", 0}, {"tmem", 0}}}}},
             {"dynamic", {{"families", families}}}}}}
          .dump());
  for (int k = 0; k < 3; ++k) {
    std::string id = "gemm_n7168_k5120-" + std::to_string(k);
    WriteFileAtomic(dir + "/trajectories/" + id + ".json", json{{"info",
                                                                 {{"id", id},
                                                                  {"task", "gemm_n7168_k5120"},
                                                                  {"index", k},
                                                                  {"exit_status", "turn_limit"},
                                                                  {"turns", turns[k]}}},
                                                                {"messages", json::array()}}
                                                               .dump());
  }
}

TEST(Report, LoadsSpentTurnsWithTheInstructionVerdict) {
  ScratchDir dir("report-test");
  WriteFixtureRun(dir.File("runs/r1"));
  WriteFileAtomic(dir.File("runs/broken/run.json"), "{not json");
  RunFolderLoad load = LoadRunFolders({dir.File("runs")});
  ASSERT_EQ(load.dataset.trajectories.size(), 3u);
  EXPECT_EQ(load.skipped.size(), 1u);  // the broken run, named
  const auto& t2 = load.dataset.trajectories[2];
  ASSERT_EQ(t2.turns.size(), 2u);  // the infra turn is not in reports
  EXPECT_EQ(t2.turns[1].turn, 2);
  EXPECT_EQ(load.dataset.trajectories[1].turns[0].arch_tag, "H");
  EXPECT_EQ(load.dataset.trajectories[1].turns[0].verification, "dynamic_present");
  EXPECT_EQ(load.dataset.trajectories[0].model, "Fixture Model");
  EXPECT_EQ(load.dataset.trajectories[0].pack, "full");
}

TEST(Report, ExportsCarryTheHandComputedFigures) {
  ScratchDir dir("report-test");
  WriteFixtureRun(dir.File("r1"));
  Dataset d = LoadRunFolders({dir.File("r1")}).dataset;
  MetricOptions mo;
  mo.turn_limits = {1, 4};
  mo.pass_k = {1, 2};
  mo.bootstrap_resamples = 0;
  auto groups = ComputeMetrics(d, mo);
  ASSERT_EQ(groups.size(), 1u);
  std::string csv = MetricsCsv(groups);
  // T=1: correct 1/3 (trajectory 1), verified 1/3, best 1.2; T=4: correct 2/3, verified 2/3,
  // best 1.2, per-trajectory bests {0.8, 1.2}: median 1, mean 1; pass@1 = 2/3, pass@2 =
  // 1 - C(1,2)/C(3,2) = 1.
  // Verified under our rule, then under the paper's: the same here (no record has the paper's
  // tag apart from arch_tag).
  EXPECT_NE(csv.find("Fixture Model,sm_90a,gemm_n7168_k5120,full,1,3,1,0.333333,,,1,0.333333,,,"
                     "1,0.333333,,,1.2,1,1.2,,,1.2,1:0.333333;2:0.666667\n"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find("Fixture Model,sm_90a,gemm_n7168_k5120,full,4,3,2,0.666667,,,2,0.666667,,,"
                     "2,0.666667,,,1.2,2,1,,,1,1:0.666667;2:1\n"),
            std::string::npos)
      << csv;
  // Upstream's per-turn CSV, column by column against a fixture written from the format's
  // description (docs/upstream-formats.md): 18 columns, turns from 0, upstream's words, and
  // its speedup cells (0.0 for a kernel that ran and failed, as its exporter writes; empty for
  // one that did not compile).
  std::vector<std::string> want = SplitLines(
      ReadFile(std::string(PTXBENCH_SOURCE_DIR) + "/src/report/testdata/upstream_turns.csv"));
  std::vector<std::string> got = SplitLines(UpstreamTurnsCsv(d));
  ASSERT_EQ(got.size(), want.size()) << UpstreamTurnsCsv(d);
  for (size_t i = 0; i < want.size(); ++i) {
    std::vector<std::string> w = Split(want[i], ','), g = Split(got[i], ',');
    ASSERT_EQ(g.size(), 18u) << got[i];
    ASSERT_EQ(w.size(), 18u) << want[i];
    for (size_t c = 0; c < 18; ++c)
      EXPECT_EQ(g[c], w[c]) << "line " << i + 1 << ", column " << UpstreamTurnColumns()[c];
  }
  std::string jsonl = TurnsJsonl(d);
  EXPECT_EQ(std::count(jsonl.begin(), jsonl.end(), '\n'), 6);  // 3 + 1 + 2 spent turns
  std::string table = MetricsTable(groups);
  EXPECT_NE(table.find("first correct turn: 1:1 2:1 never:1"), std::string::npos) << table;

  WriteFileAtomic(dir.File("pub.csv"),
                  "model,arch,definition,run,turn_limit,trajectories,correct,"
                  "correct_with_verified_arch_instructions,best_speedup\n"
                  "fixture model,hopper,gemm_n7168_k5120,paper-run,4,12,9,5,0.95\n"
                  "fixture model,blackwell,gemm_n7168_k5120,other,4,12,1,1,0.1\n");
  std::string cmp = ComparisonTable(groups, LoadPublishedResults(dir.File("pub.csv")));
  EXPECT_NE(cmp.find("2/3 vs 9/12"), std::string::npos) << cmp;
  EXPECT_NE(cmp.find("1.200 vs 0.950  (paper-run)"), std::string::npos) << cmp;
  EXPECT_EQ(cmp.find("other"), std::string::npos) << cmp;  // arch must match
  WriteFileAtomic(dir.File("bad.csv"), "a,b\n");
  EXPECT_THROW(LoadPublishedResults(dir.File("bad.csv")), Error);
}

// A turn whose record has the paper's tag but not ours (ours is stricter) counts as verified
// under the paper's rule only: in the metrics, and in the upstream per-turn CSV, which lines up
// with published results.
TEST(Report, ThePapersTagIsKeptBesideOurs) {
  ScratchDir dir("report-test");
  WriteFixtureRun(dir.File("runs/r1"));
  // Trajectory 0's turn 2 (correct, 0.5): H under the paper's rule, not under ours.
  json t0 = json::parse(ReadFile(dir.File("runs/r1/trajectories/gemm_n7168_k5120-0.json")));
  t0["info"]["turns"][1]["evaluation_file"] = "evaluations/gemm_n7168_k5120-0/turn2.json";
  WriteFileAtomic(dir.File("runs/r1/trajectories/gemm_n7168_k5120-0.json"), t0.dump());
  WriteFileAtomic(dir.File("runs/r1/evaluations/gemm_n7168_k5120-0/turn2.json"),
                  json{{"status", "PASSED"},
                       {"instructions",
                        {{"verification", "dynamic_present"},
                         {"arch_tag", nullptr},
                         {"upstream_arch_tag", "H"},
                         {"tensor_core_work_fraction", 0.0001}}}}
                      .dump());
  Dataset d = LoadRunFolders({dir.File("runs/r1")}).dataset;
  ASSERT_EQ(d.trajectories.size(), 3u);
  const TurnRow& paper_only = d.trajectories[0].turns.at(1);
  EXPECT_EQ(paper_only.arch_tag, "");
  EXPECT_EQ(paper_only.upstream_arch_tag, std::optional<std::string>("H"));
  EXPECT_FALSE(paper_only.Verified());
  EXPECT_TRUE(paper_only.VerifiedUpstream());
  // Trajectory 1's record predates the field: its arch_tag is the paper's tag too.
  const TurnRow& old = d.trajectories[1].turns.at(0);
  EXPECT_EQ(old.upstream_arch_tag, std::nullopt);
  EXPECT_EQ(old.UpstreamArchTag(), "H");
  EXPECT_TRUE(old.VerifiedUpstream());

  MetricOptions mo;
  mo.turn_limits = {2};
  mo.pass_k = {1};
  mo.bootstrap_resamples = 0;
  auto groups = ComputeMetrics(d, mo);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].by_limit[0].verified.count, 1);           // trajectory 1
  EXPECT_EQ(groups[0].by_limit[0].verified_upstream.count, 2);  // and trajectory 0
  EXPECT_NE(MetricsCsv(groups).find(",2,3,2,0.666667,,,1,0.333333,,,2,0.666667,,,1.2,"),
            std::string::npos)
      << MetricsCsv(groups);
  std::string table = MetricsTable(groups);
  EXPECT_NE(table.find("verified@T (paper) [CI]"), std::string::npos) << table;
  EXPECT_NE(table.find("1/3 0.33                  2/3 0.67"), std::string::npos) << table;

  // Upstream's CSV judges by the evidence under its own rule, whatever either tag says.
  std::string up = UpstreamTurnsCsv(d);
  EXPECT_NE(up.find("\ngemm_n7168_k5120-1,0,Correct,1.2,H,4,2,0,"), std::string::npos) << up;
  int seen = 0;
  for (const std::string& line : SplitLines(TurnsJsonl(d))) {
    json j = json::parse(line);
    if (j["trajectory"] != "gemm_n7168_k5120-0" || j["turn"] != 2) continue;
    ++seen;
    EXPECT_EQ(j["arch_tag"], "");
    EXPECT_EQ(j["upstream_arch_tag"], "H");
  }
  EXPECT_EQ(seen, 1);

  // The published comparison counts under the paper's rule, with ours beside it.
  WriteFileAtomic(dir.File("pub.csv"),
                  "model,arch,definition,run,turn_limit,trajectories,correct,"
                  "correct_with_verified_arch_instructions,best_speedup\n"
                  "fixture model,hopper,gemm_n7168_k5120,paper-run,2,12,9,5,0.95\n");
  std::string cmp = ComparisonTable(groups, LoadPublishedResults(dir.File("pub.csv")));
  EXPECT_NE(cmp.find("2/3 vs 5/12"), std::string::npos) << cmp;
  EXPECT_NE(cmp.find("1/3"), std::string::npos) << cmp;

  // `report --upstream-csv` writes the paper's tag.
  CommandResult r = RunCommand({std::getenv("PTXBENCH_BIN"), "report", "--runs", dir.File("runs"),
                                "--upstream-csv", dir.File("u.csv"), "--no-published"},
                               std::chrono::seconds(60));
  ASSERT_EQ(r.exit.code, 0) << r.output;
  std::string u = ReadFile(dir.File("u.csv"));
  EXPECT_EQ(u.rfind("trajectory_id,turn,correctness,speedup,cubin_sass_arch_tag,", 0), 0u) << u;
  EXPECT_NE(u.find("\ngemm_n7168_k5120-1,0,Correct,1.2,H,4,2,0,"), std::string::npos) << u;
}

// A run whose pack was never run on its chip (the Blackwell pack) is marked in every report.
TEST(Report, GroupsWithAPackNotProvenOnHardwareAreMarked) {
  ScratchDir dir("report-test");
  WriteFixtureRun(dir.File("r1"));
  json run = json::parse(ReadFile(dir.File("r1/run.json")));
  run["arch"] = "sm_100a";
  run["pack_info"] = {{"variant", "full"}, {"hardware_verified", false}};
  WriteFileAtomic(dir.File("r1/run.json"), run.dump());
  WriteFixtureRun(dir.File("r2"));  // Hopper, no flag: not marked
  Dataset d = LoadRunFolders({dir.File("r1"), dir.File("r2")}).dataset;
  ASSERT_EQ(d.trajectories.size(), 6u);
  EXPECT_EQ(d.trajectories[0].pack_hardware_verified, std::optional<bool>(false));
  EXPECT_EQ(d.trajectories[3].pack_hardware_verified, std::nullopt);
  MetricOptions mo;
  mo.bootstrap_resamples = 0;
  auto groups = ComputeMetrics(d, mo);
  ASSERT_EQ(groups.size(), 2u);
  std::string table = MetricsTable(groups);
  EXPECT_NE(table.find("sm_100a | gemm_n7168_k5120 | pack full | 3 trajectories | pack not proven "
                       "on hardware (3 of 3)"),
            std::string::npos)
      << table;
  EXPECT_EQ(table.find("sm_90a | gemm_n7168_k5120 | pack full | 3 trajectories |"),
            std::string::npos)
      << table;
  EXPECT_EQ(ToJson(groups)[0]["unproven_pack_trajectories"], 3);
  std::string html = HtmlReport(d, groups, {});
  EXPECT_NE(html.find("data-unproven-pack=\"3\""), std::string::npos);
  EXPECT_NE(html.find("pack not proven on hardware (3 of 3)</span>"), std::string::npos);
}

TEST(Report, TheCommandWritesEveryExport) {
  ScratchDir dir("report-test");
  WriteFixtureRun(dir.File("runs/r1"));
  // An interrupted trajectory is left out, and said so: it has not failed yet.
  WriteFileAtomic(dir.File("runs/r1/trajectories/gemm_n7168_k5120-3.json"),
                  json{{"info",
                        {{"id", "gemm_n7168_k5120-3"},
                         {"task", "gemm_n7168_k5120"},
                         {"exit_status", "infra_error"},
                         {"turns", json::array({Turn(1, "compile")})}}}}
                      .dump());
  CommandResult r = RunCommand(
      {std::getenv("PTXBENCH_BIN"), "report", "--runs", dir.File("runs"), "--turns", "1,4", "--csv",
       dir.File("m.csv"), "--jsonl", dir.File("t.jsonl"), "--upstream-csv", dir.File("u.csv"),
       "--json", dir.File("m.json"), "--no-published"},
      std::chrono::seconds(60));
  ASSERT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("Fixture Model | sm_90a | gemm_n7168_k5120 | pack full | 3 trajectories"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("1 unfinished trajectories left out"), std::string::npos) << r.output;
  for (const char* f : {"m.csv", "t.jsonl", "u.csv", "m.json"})
    EXPECT_TRUE(FileExists(dir.File(f)));
  json m = json::parse(ReadFile(dir.File("m.json")));
  ASSERT_TRUE(m.is_array());
  EXPECT_EQ(m.size(), 1u);
  r = RunCommand(
      {std::getenv("PTXBENCH_BIN"), "report", "--runs", dir.File("runs"), "--turns", "0"},
      std::chrono::seconds(60));
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("malformed --turns"), std::string::npos) << r.output;

  // --include-unfinished: the interrupted one counts as it stands, and the group says so.
  r = RunCommand({std::getenv("PTXBENCH_BIN"), "report", "--runs", dir.File("runs"), "--turns",
                  "1,4", "--include-unfinished", "--no-published", "--html", dir.File("u.html"),
                  "--json", dir.File("u.json")},
                 std::chrono::seconds(60));
  ASSERT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("| 4 trajectories | 1 unfinished, counted as they stand (rates are "
                          "lower bounds)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("1 unfinished trajectories included as they stand"), std::string::npos);
  EXPECT_EQ(json::parse(ReadFile(dir.File("u.json")))[0]["unfinished_trajectories"], 1);
  EXPECT_NE(ReadFile(dir.File("u.html")).find("data-unfinished=\"1\""), std::string::npos);
}

// A run whose every trajectory stopped at an infrastructure turn (no GPU): without the flag
// there is nothing to report, which is said, written nowhere, and not exit 0; with it, the
// report is made.
TEST(Report, OnlyUnfinishedTrajectoriesAreNotAnEmptySuccess) {
  ScratchDir dir("report-test");
  MakeDirs(dir.File("runs/r2/trajectories"));
  WriteFileAtomic(dir.File("runs/r2/run.json"),
                  json{{"model", {{"name", "M"}}}, {"arch", "sm_90a"}, {"pack", "none"}}.dump());
  WriteFileAtomic(dir.File("runs/r2/trajectories/gemm_n7168_k5120-0.json"),
                  json{{"info",
                        {{"id", "gemm_n7168_k5120-0"},
                         {"task", "gemm_n7168_k5120"},
                         {"exit_status", "infra_error"},
                         {"turns", json::array({Turn(1, "compile")})}}}}
                      .dump());
  std::string html = dir.File("r.html");
  CommandResult r = RunCommand({std::getenv("PTXBENCH_BIN"), "report", "--runs", dir.File("runs"),
                                "--no-published", "--html", html},
                               std::chrono::seconds(60));
  EXPECT_EQ(r.exit.code, 1) << r.output;
  EXPECT_NE(r.output.find("nothing to report: every matching trajectory is unfinished"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(FileExists(html));
  r = RunCommand({std::getenv("PTXBENCH_BIN"), "report", "--runs", dir.File("runs"),
                  "--no-published", "--include-unfinished", "--html", html},
                 std::chrono::seconds(60));
  EXPECT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("1 trajectories | 1 unfinished"), std::string::npos) << r.output;
  EXPECT_TRUE(FileExists(html));
}

}  // namespace
}  // namespace ptxbench
