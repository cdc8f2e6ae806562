// Fixit's pieces without a GPU or a model: normalization and deduplication, what mining
// selects and refuses, the stratified cap, the keep rule on fixture evaluation records (it
// must never keep an unverified repair), the reasoning checks, the split and the export rows.
#include <gtest/gtest.h>

#include <set>

#include "agent/trajectory.h"
#include "common/error.h"
#include "common/files.h"
#include "common/strings.h"
#include "fixit/failure.h"
#include "fixit/keep.h"
#include "fixit/mine.h"
#include "fixit/reasoning.h"
#include "fixit/sft.h"

namespace ptxbench {
namespace {

using nlohmann::json;

TEST(NormalizeSource, CommentsAndWhitespaceDoNotMatterButCodeAndLiteralsDo) {
  std::string a = "// a kernel\nextern \"C\" int run() {\n  return 0;  /* ok */\n}\n";
  std::string b = "extern \"C\"   int run() { return 0; }";
  EXPECT_EQ(NormalizeSource(a), NormalizeSource(b));
  EXPECT_NE(NormalizeSource(b), NormalizeSource("extern \"C\" int run() { return 1; }"));
  EXPECT_NE(NormalizeSource("f(\"a  b\");"), NormalizeSource("f(\"a b\");"));
  EXPECT_EQ(NormalizeSource("f(\"// not a comment\");"), "f(\"// not a comment\");");
}

// A run folder with one trajectory per entry of `turns` (outcome and kernel text per turn).
class MineTest : public ::testing::Test {
 protected:
  TrajectoryRow AddTrajectory(const std::string& task, int index,
                              const std::vector<std::pair<std::string, std::string>>& turns) {
    Trajectory t;
    t.task = task;
    t.workload = "w1";
    t.index = index;
    t.id = task + "-" + std::to_string(index);
    t.messages = {{"system", "SYSTEM"}, {"user", "TASK " + task}};
    TrajectoryRow row;
    row.run_id = "run1";
    row.run_dir = dir_.path();
    row.id = t.id;
    row.model = "student";
    row.task = task;
    row.workload = "w1";
    row.arch = "sm_90a";
    row.pack = "full";
    MakeDirs(dir_.File("kernels/" + t.id));
    MakeDirs(dir_.File("trajectories"));
    for (size_t k = 0; k < turns.size(); ++k) {
      int n = static_cast<int>(k) + 1;
      TurnRecord tr;
      tr.turn = n;
      tr.outcome = turns[k].first;
      tr.evaluation_id = t.id + "/turn" + std::to_string(n);
      if (!turns[k].second.empty()) {
        tr.kernel_file = "kernels/" + t.id + "/turn" + std::to_string(n) + ".cu";
        WriteFileAtomic(dir_.File(tr.kernel_file), turns[k].second);
      }
      t.turns.push_back(tr);
      t.messages.push_back({"assistant", "reply " + std::to_string(n)});
      t.messages.push_back({"user", "feedback " + std::to_string(n)});
      TurnRow u;
      u.turn = n;
      u.outcome = tr.outcome;
      u.evaluation_id = tr.evaluation_id;
      u.kernel_file = tr.kernel_file;
      row.turns.push_back(u);
    }
    t.exit_status = "turn_limit";
    WriteFileAtomic(dir_.File("trajectories/" + t.id + ".json"), ToJson(t).dump());
    return row;
  }
  ScratchDir dir_{"fixit-mine-test"};
};

TEST_F(MineTest, SelectsOnlyKernelFailuresWithTheirExactContextAndDropsNearDuplicates) {
  Dataset d;
  d.trajectories.push_back(AddTrajectory("gemm_a", 0,
                                         {{"extraction", ""},
                                          {"compile", "int run() { x }"},
                                          {"incorrect", "int run() { y }"},
                                          {"verified", "int run() { z }"},
                                          {"rule_violation", "int run() { w }"}}));
  // The same compile failure once more, differently indented and commented: a duplicate.
  d.trajectories.push_back(AddTrajectory(
      "gemm_a", 1,
      {{"compile", "// again\nint run() {\n  x\n}\n"}, {"memory", "int run() { m }"}}));
  MineResult r = MineFailures(d, {});
  ASSERT_EQ(r.failures.size(), 3u);
  EXPECT_EQ(r.failures[0].outcome, "compile");
  EXPECT_EQ(r.failures[1].outcome, "incorrect");
  EXPECT_EQ(r.failures[2].outcome, "memory");
  EXPECT_EQ(r.excluded["duplicate kernel (normalized source)"], 1);
  EXPECT_EQ(r.excluded["outcome extraction"], 1);
  EXPECT_EQ(r.excluded["outcome verified"], 1);
  EXPECT_EQ(r.excluded["outcome rule_violation"], 1);
  const Failure& f = r.failures[1];
  EXPECT_EQ(f.id, "run1/gemm_a-0/turn3");
  EXPECT_EQ(f.turn, 3);
  ASSERT_EQ(f.context.size(), 4u);
  EXPECT_EQ(f.context[0].content, "SYSTEM");
  EXPECT_EQ(f.context[1].content, "TASK gemm_a");
  EXPECT_EQ(f.context[2].role, "assistant");
  EXPECT_EQ(f.context[2].content, "```cuda\nint run() { y }\n```");
  EXPECT_EQ(f.context[3].content, "feedback 3");  // the feedback of that very turn
  EXPECT_EQ(f.context_sha256, ContextSha256(f.context));
  EXPECT_EQ(f.key.size(), 16u);

  // Round trip through the manifest; a tampered context is refused.
  json j = ToJson(f);
  EXPECT_EQ(FailureFromJson(j).context[3].content, "feedback 3");
  j["context"][3]["content"] = "other feedback";
  EXPECT_THROW(FailureFromJson(j), Error);
}

TEST_F(MineTest, RefusesNonKernelOutcomesAndAppliesFiltersAndTurnRange) {
  Dataset d;
  d.trajectories.push_back(
      AddTrajectory("gemm_a", 0, {{"compile", "a1"}, {"runtime", "a2"}, {"incorrect", "a3"}}));
  MineOptions o;
  o.outcomes = {"extraction"};
  EXPECT_THROW(MineFailures(d, o), Error);
  o.outcomes = {"infra"};
  EXPECT_THROW(MineFailures(d, o), Error);
  o.outcomes = {"runtime", "incorrect"};
  o.max_turn = 2;
  MineResult r = MineFailures(d, o);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].outcome, "runtime");
  MineOptions other;
  other.models = {"someone-else"};
  EXPECT_TRUE(MineFailures(d, other).failures.empty());
  other = {};
  other.packs = {"none"};
  EXPECT_TRUE(MineFailures(d, other).failures.empty());
}

TEST_F(MineTest, TheCapPerTaskTakesEvenlyAcrossOutcomeAndTurnStrata) {
  Dataset d;
  // Ten compile failures at turn 1, two incorrect at turn 2, one memory at turn 3.
  for (int k = 0; k < 10; ++k)
    d.trajectories.push_back(
        AddTrajectory("gemm_a", k,
                      {{"compile", "c" + std::to_string(k)},
                       {k < 2 ? "incorrect" : "extraction", k < 2 ? "i" + std::to_string(k) : ""},
                       {k == 0 ? "memory" : "extraction", k == 0 ? "m" : ""}}));
  d.trajectories.push_back(AddTrajectory("gemm_b", 0, {{"compile", "other"}}));
  MineOptions o;
  o.cap_per_task = 4;
  MineResult r = MineFailures(d, o);
  std::map<std::string, int> by;
  int b = 0;
  for (const Failure& f : r.failures) {
    if (f.task == "gemm_b")
      ++b;
    else
      ++by[f.outcome + "@" + std::to_string(f.turn)];
  }
  EXPECT_EQ(b, 1);  // under its cap: untouched
  EXPECT_EQ(by["compile@1"], 2);
  EXPECT_EQ(by["incorrect@2"], 1);
  EXPECT_EQ(by["memory@3"], 1);
  EXPECT_EQ(r.excluded["cap per task"], 13 - 4);
  // Deterministic: the same selection again.
  MineResult again = MineFailures(d, o);
  ASSERT_EQ(again.failures.size(), r.failures.size());
  for (size_t k = 0; k < r.failures.size(); ++k) EXPECT_EQ(again.failures[k].id, r.failures[k].id);
}

// Fixture records, in the evaluation record's layout (docs/design.md section 3).
json Record(const std::string& status, const std::string& verification, const std::string& tag,
            std::optional<double> speedup) {
  json r = {{"schema", "ptxbench.evaluation/1"}, {"status", status}};
  r["instructions"] = {{"verification", verification}};
  if (!tag.empty()) r["instructions"]["arch_tag"] = tag;
  if (speedup)
    r["performance"] = {{"state", "ran"}, {"speedup", *speedup}, {"tflops", 300.0}};
  else
    r["performance"] = {{"state", "skipped"}, {"reason", "no GPU"}};
  return r;
}

TEST(KeepRule, OnlyCorrectAndVerifiedAtRunTimeWithTheArchTag) {
  EXPECT_TRUE(JudgeRepair(Record("PASSED", "dynamic_present", "H", 1.2), "sm_90a", {}).kept);
  RepairJudgement slow = JudgeRepair(Record("PASSED", "dynamic_present", "H", 0.4), "sm_90a", 1.0);
  EXPECT_FALSE(slow.kept);
  EXPECT_NE(slow.reason.find("slower than --min-speedup"), std::string::npos) << slow.reason;
  ASSERT_TRUE(slow.speedup);  // its speed is recorded either way
  EXPECT_DOUBLE_EQ(*slow.speedup, 0.4);
  // Unverified in every way the record can say it.
  for (const char* v : {"sass_absent", "dynamic_not_executed", "profile_error", "not_requested",
                        "not_correct", ""}) {
    RepairJudgement j = JudgeRepair(Record("PASSED", v, "", 2.0), "sm_90a", {});
    EXPECT_FALSE(j.kept) << v;
    EXPECT_NE(j.reason.find("not verified"), std::string::npos) << j.reason;
  }
  EXPECT_FALSE(JudgeRepair(Record("PASSED", "dynamic_present", "", 2.0), "sm_90a", {}).kept);
  EXPECT_FALSE(JudgeRepair(Record("PASSED", "dynamic_present", "B", 2.0), "sm_90a", {}).kept);
  EXPECT_TRUE(JudgeRepair(Record("PASSED", "dynamic_present", "B", 2.0), "sm_100a", {}).kept);
  for (const char* s : {"COMPILE_ERROR", "INCORRECT", "RULE_VIOLATION", "INFRA_ERROR", ""})
    EXPECT_FALSE(JudgeRepair(Record(s, "dynamic_present", "H", 2.0), "sm_90a", {}).kept) << s;
  // A minimum speedup cannot be checked on an untimed repair: not kept, and says why.
  RepairJudgement untimed =
      JudgeRepair(Record("PASSED", "dynamic_present", "H", std::nullopt), "sm_90a", 1.0);
  EXPECT_FALSE(untimed.kept);
  EXPECT_NE(untimed.reason.find("not timed (performance skipped: no GPU)"), std::string::npos)
      << untimed.reason;
  EXPECT_THROW(RequiredArchTag("sm_80"), Error);
}

TEST(KeepRule, LayerStatesSayWhatRan) {
  json r = {{"screening", {{"passed", true}}},
            {"build", {{"state", "ran"}}},
            {"correctness", {{"state", "skipped"}, {"reason", "no GPU"}}}};
  auto s = LayerStates(r);
  EXPECT_EQ(s["screening"], "ran");
  EXPECT_EQ(s["build"], "ran");
  EXPECT_EQ(s["correctness"], "skipped: no GPU");
  EXPECT_EQ(s["performance"], "absent");
}

const std::string kFixed =
    "extern \"C\" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C,\n"
    "                     int M, int N, int K, cudaStream_t stream) {\n"
    "  dim3 grid((N + 127) / 128, (M + 127) / 128);\n"
    "  gemm_kernel<<<grid, 256, 0, stream>>>(A, B, C, M, N, K);\n"
    "  return cudaGetLastError() == cudaSuccess ? 0 : 1;\n"
    "}\n";

std::string GoodReasoning() {
  return "The feedback says the build failed: nvcc reports an undeclared identifier in my run "
         "function, so nothing was launched at all. I look at my kernel and see that I return a "
         "name I never declared; I meant to return the launch status. I also notice that my grid "
         "does not cover the edges when N is not a multiple of the tile, so I round the grid up "
         "and keep the bounds checks in the kernel. With that, I launch on the given stream and "
         "return zero when the launch succeeded.";
}

TEST(Reasoning, AcceptsAFirstPersonDerivationAndRejectsCopiesAndGiveaways) {
  ReasoningLimits l;
  EXPECT_TRUE(ValidateReasoning(GoodReasoning(), kFixed, l).ok)
      << ValidateReasoning(GoodReasoning(), kFixed, l).why;
  EXPECT_NE(ValidateReasoning("I fix it.", kFixed, l).why.find("too short"), std::string::npos);
  std::string third =
      "The feedback says the build failed: nvcc reports an undeclared identifier in the run "
      "function, so nothing was launched. The kernel returns a name that was never declared; it "
      "should return the launch status. The grid also misses the edges when N is not a multiple "
      "of the tile, so the grid is rounded up and the bounds checks stay in the kernel. The "
      "launch then goes on the given stream and run returns zero when the launch succeeded.";
  EXPECT_NE(ValidateReasoning(third, kFixed, l).why.find("first person"), std::string::npos)
      << ValidateReasoning(third, kFixed, l).why;
  std::string pasted = GoodReasoning() + "\n```cuda\n" + kFixed + kFixed + kFixed + "```\n";
  EXPECT_FALSE(ValidateReasoning(pasted, kFixed, l).ok);
  ReasoningLimits loose = l;
  loose.max_code_lines = 100;
  loose.max_quoted_lines = 2;
  EXPECT_NE(ValidateReasoning(pasted, kFixed, loose).why.find("verbatim"), std::string::npos)
      << ValidateReasoning(pasted, kFixed, loose).why;
  EXPECT_NE(
      ValidateReasoning("<think>" + GoodReasoning() + "</think>", kFixed, l).why.find("<think>"),
      std::string::npos);
  EXPECT_NE(ValidateReasoning(GoodReasoning() + " Looking at the fixed kernel, I agree.", kFixed, l)
                .why.find("the fixed kernel"),
            std::string::npos);
}

SftRow Row(const std::string& task, int k) {
  SftRow r;
  r.id = task + "/" + std::to_string(k);
  r.task = task;
  r.messages = {{"system", "S", false},
                {"user", "T", false},
                {"assistant", "```cuda\nbad\n```", false},
                {"user", "feedback", false},
                {"assistant", ThinkThenKernel("I fix it.", "good"), true}};
  r.metadata = {{"outcome", k % 2 ? "compile" : "incorrect"},
                {"turn", 1 + k % 3},
                {"teachers", {{"repair", "t1"}, {"reasoning", "t2"}}}};
  return r;
}

TEST(SftExport, SplitIsDeterministicStratifiedByTaskAndSeeded) {
  std::vector<SftRow> rows;
  for (int k = 0; k < 20; ++k) rows.push_back(Row("a", k));
  for (int k = 0; k < 3; ++k) rows.push_back(Row("b", k));
  rows.push_back(Row("c", 0));
  std::vector<SftRow> copy = rows;
  SplitByTask(&rows, 0.1, "s1");
  SplitByTask(&copy, 0.1, "s1");
  std::map<std::string, int> val;
  for (size_t k = 0; k < rows.size(); ++k) {
    EXPECT_EQ(rows[k].split, copy[k].split);
    val[rows[k].task] += rows[k].split == "validation";
  }
  EXPECT_EQ(val["a"], 2);
  EXPECT_EQ(val["b"], 1);  // at least one where a task has two rows or more
  EXPECT_EQ(val["c"], 0);  // never all of a task's rows
  std::vector<SftRow> other = copy;
  SplitByTask(&other, 0.1, "s2");
  bool differs = false;
  for (size_t k = 0; k < rows.size(); ++k) differs |= other[k].split != rows[k].split;
  EXPECT_TRUE(differs) << "another seed should draw another split";
}

TEST(SftExport, RowsTrainOnTheLastMessageOnlyAndTheCardCounts) {
  ScratchDir dir("fixit-export-test");
  std::vector<SftRow> rows;
  for (int k = 0; k < 10; ++k) rows.push_back(Row("a", k));
  SftRow big = Row("a", 99);
  big.messages[3].content = std::string(100000, 'x');
  rows.push_back(big);
  ExportOptions o;
  o.out_dir = dir.File("out");
  o.max_tokens = 1000;
  ExportSummary s = WriteSftExport(rows, o, {{"title", "test"}, {"settings", {{"k", 1}}}});
  EXPECT_EQ(s.train + s.validation, 10);
  EXPECT_EQ(s.validation, 1);
  EXPECT_EQ(s.dropped.begin()->second, 1);
  std::vector<std::string> lines = SplitLines(ReadFile(o.out_dir + "/train.jsonl"));
  ASSERT_EQ(lines.size(), 9u);
  json row = json::parse(lines[0]);
  ASSERT_EQ(row["messages"].size(), 5u);
  for (int k = 0; k < 4; ++k) EXPECT_FALSE(row["messages"][k]["train"].get<bool>());
  EXPECT_TRUE(row["messages"][4]["train"].get<bool>());
  EXPECT_EQ(row["messages"][4]["content"], "<think>\nI fix it.\n</think>\n\n```cuda\ngood\n```");
  EXPECT_EQ(row["metadata"]["split"], "train");
  json card = json::parse(ReadFile(o.out_dir + "/card.json"));
  EXPECT_EQ(card["rows"]["train"], 9);
  EXPECT_EQ(card["counts"]["by_task"]["a"]["train"], 9);
  EXPECT_EQ(card["counts"]["by_teacher"]["repair: t1"]["validation"], 1);
  EXPECT_EQ(card["settings"]["k"], 1);
  EXPECT_NE(ReadFile(o.out_dir + "/card.md").find("| a | 9 | 1 |"), std::string::npos);

  o.format = "prompt-completion";
  o.out_dir = dir.File("pc");
  WriteSftExport(rows, o, {});
  json pc = json::parse(SplitLines(ReadFile(o.out_dir + "/train.jsonl"))[0]);
  EXPECT_EQ(pc["prompt"].size(), 4u);
  EXPECT_EQ(pc["completion"].size(), 1u);
  EXPECT_EQ(pc["completion"][0]["role"], "assistant");
  o.format = "alpaca";
  EXPECT_THROW(WriteSftExport(rows, o, {}), Error);
}

}  // namespace
}  // namespace ptxbench

namespace ptxbench {
namespace {

// The reasoning the GPU suite's scripted teacher sends (scripts/gpu_suite.sh fixit) must pass
// the checks against the repair it explains, or the suite's export would be empty.
TEST(Reasoning, TheGpuSuitesScriptedReasoningPassesAgainstItsRepair) {
  std::string src = PTXBENCH_SOURCE_DIR;
  json reason = json::parse(ReadFile(src + "/agent/replay/fixit_reason.json"));
  json repair = json::parse(ReadFile(src + "/agent/replay/fixit_repair.json"));
  std::string kernel = ReadFile(src + "/" + repair["turns"][1]["kernel"].get<std::string>());
  ReasoningCheck c = ValidateReasoning(reason["turns"][0]["text"], kernel, {});
  EXPECT_TRUE(c.ok) << c.why;
}

}  // namespace
}  // namespace ptxbench
