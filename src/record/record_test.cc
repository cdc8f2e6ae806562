#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "record/outcome.h"
#include "record/record.h"
#include "record/report_rows.h"

namespace ptxbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every evaluation record kept as a file in the repository (GPU runs in docs/, test data).
std::vector<fs::path> RecordFiles() {
  const char* root = std::getenv("PTXBENCH_SOURCE_DIR");
  std::vector<fs::path> out;
  if (!root) return out;
  for (const char* dir : {"docs", "tests", "src", "controls"}) {
    std::error_code ec;
    fs::path base = fs::path(root) / dir;
    if (!fs::exists(base)) continue;
    for (auto it = fs::recursive_directory_iterator(base, ec); it != fs::end(it); it.increment(ec))
      if (it->path().extension() == ".json" &&
          Slurp(it->path()).find("\"ptxbench.evaluation/1\"") != std::string::npos)
        out.push_back(it->path());
  }
  return out;
}

TEST(RecordContract, EveryRecordFileRoundTrips) {
  std::vector<fs::path> files = RecordFiles();
  if (!std::getenv("PTXBENCH_SOURCE_DIR")) GTEST_SKIP() << "PTXBENCH_SOURCE_DIR is not set";
  ASSERT_GE(files.size(), 10u);
  for (const fs::path& f : files) {
    json original = json::parse(Slurp(f), nullptr, false);
    if (!original.is_object() || original.value("schema", "") != kEvaluationSchema) continue;
    json again = FromJson(original).ToJson();
    // Records from before ptxbench_commit was written get it back empty: the writer always
    // writes it.
    if (!original.contains("ptxbench_commit")) {
      EXPECT_EQ(again["ptxbench_commit"], "") << f;
      again.erase("ptxbench_commit");
    }
    EXPECT_EQ(again, original) << f << "\n" << json::diff(original, again).dump(1);
  }
}

TEST(RecordContract, UnknownKeysAndTheEvaluationIdSurvive) {
  json j = EvaluationRecord{}.ToJson();
  j["evaluation_id"] = "gemm-1/turn2";
  j["from_the_future"] = {{"x", 1}};
  EvaluationRecord r = FromJson(j);
  EXPECT_EQ(r.evaluation_id, "gemm-1/turn2");
  EXPECT_EQ(r.ToJson(), j);
  EXPECT_FALSE(EvaluationRecord{}.ToJson().contains("evaluation_id"));
}

TEST(RecordContract, ReadingNeverThrows) {
  for (const json& j : {json(), json(3), json::array(), json({{"status", 5}}),
                        json({{"status", "SOMETHING_NEW"}, {"instructions", "x"}}),
                        json({{"instructions", {{"verification", 7}, {"arch_tag", nullptr}}},
                              {"performance", {{"speedup", "fast"}}}})}) {
    EvaluationRecord r = FromJson(j);
    EXPECT_EQ(r.status, Status::kUnknown) << j;
    EXPECT_EQ(r.Instructions().verification, Verification::kNone) << j;
    EXPECT_FALSE(r.Performance().speedup) << j;
    EXPECT_EQ(JudgeTurn(r, Arch::kSm90a).outcome, TurnOutcome::kInfra) << j;
  }
}

TEST(RecordContract, EachTableReadsBackWhatItWrites) {
  for (int i = 0; i <= static_cast<int>(Status::kInfraError); ++i)
    EXPECT_EQ(StatusFromString(ToString(Status(i))), Status(i));
  for (int i = 0; i < static_cast<int>(FailureReason::kUnknown); ++i)
    EXPECT_EQ(FailureReasonFromString(ToString(FailureReason(i))), FailureReason(i));
  for (int i = 0; i < static_cast<int>(Verification::kUnknown); ++i)
    EXPECT_EQ(VerificationFromString(ToString(Verification(i))), Verification(i));
  for (int i = 0; i < static_cast<int>(TurnOutcome::kUnknown); ++i)
    EXPECT_EQ(TurnOutcomeFromString(ToString(TurnOutcome(i))), TurnOutcome(i));
  EXPECT_EQ(StatusFromString("passed"), Status::kUnknown);
  EXPECT_EQ(FailureReasonFromString("new_reason"), FailureReason::kUnknown);
  EXPECT_EQ(VerificationFromString("dynamic"), Verification::kUnknown);
  EXPECT_EQ(TurnOutcomeFromString("great"), TurnOutcome::kUnknown);
}

TEST(RecordContract, TheArchTableGivesTheCreditTag) {
  // --arch as written: exact, by family, and the tag it must earn.
  struct Case {
    const char* arch;
    Arch exact, family;
    const char* tag;
  };
  for (const Case& c : {Case{"sm_90a", Arch::kSm90a, Arch::kSm90a, "H"},
                        Case{"sm_100a", Arch::kSm100a, Arch::kSm100a, "B"},
                        Case{"sm_90", Arch::kUnknown, Arch::kSm90a, "H"},
                        Case{"sm_80", Arch::kUnknown, Arch::kUnknown, ""}}) {
    EXPECT_EQ(ArchFromString(c.arch), c.exact) << c.arch;
    EXPECT_EQ(ArchFamilyOf(c.arch), c.family) << c.arch;
    EXPECT_EQ(CreditTag(ArchFamilyOf(c.arch)), c.tag) << c.arch;
  }
}

EvaluationRecord Passed(const std::string& verification, json tag) {
  return FromJson({{"status", "PASSED"},
                   {"arch", "sm_90a"},
                   {"instructions", {{"verification", verification}, {"arch_tag", tag}}}});
}

TEST(RecordContract, TheCreditNeedsTheArchsOwnTag) {
  EXPECT_EQ(JudgeTurn(Passed("dynamic_present", "H"), Arch::kSm90a).outcome,
            TurnOutcome::kVerified);
  EXPECT_EQ(JudgeTurn(Passed("dynamic_present", "H"), Arch::kSm90a).credit_tag, "H");
  EXPECT_EQ(JudgeTurn(Passed("dynamic_present", "H"), Arch::kSm100a).outcome,
            TurnOutcome::kCorrect);
  EXPECT_EQ(JudgeTurn(Passed("dynamic_present", "H"), Arch::kUnknown).outcome,
            TurnOutcome::kCorrect);
  EXPECT_EQ(JudgeTurn(Passed("dynamic_present", ""), Arch::kSm90a).outcome, TurnOutcome::kCorrect);
  EXPECT_EQ(JudgeTurn(Passed("sass_absent", "H"), Arch::kSm90a).outcome, TurnOutcome::kCorrect);
  EXPECT_EQ(JudgeTurn(FromJson({{"status", "TIMEOUT"}}), Arch::kSm90a).outcome,
            TurnOutcome::kRuntime);
  EXPECT_EQ(JudgeTurn(FromJson({{"status", "INFRA_ERROR"}}), Arch::kSm90a).outcome,
            TurnOutcome::kInfra);
}

TEST(RecordContract, OneRowBuilderForEverySource) {
  EvaluationRecord r = Passed("dynamic_present", "H");
  r.instructions["upstream_arch_tag"] = "H";
  r.performance = {{"state", "ran"}, {"speedup", 1.5}, {"tflops", 700.0}};
  r.stage_seconds["total"] = 12.5;
  TurnRow row = TurnRowFromRecord(r, "sm_90a", 3, "gemm-1/turn3");
  EXPECT_EQ(row.turn, 3);
  EXPECT_EQ(row.outcome, "verified");
  EXPECT_EQ(row.status, "PASSED");
  EXPECT_EQ(row.speedup, 1.5);
  EXPECT_EQ(row.tflops, 700.0);
  EXPECT_EQ(row.evaluation_seconds, 12.5);
  EXPECT_EQ(row.verification, "dynamic_present");
  EXPECT_EQ(row.arch_tag, "H");
  EXPECT_EQ(row.upstream_arch_tag, std::optional<std::string>("H"));
  EXPECT_EQ(row.upstream_sass.size(), 14u);
}

}  // namespace
}  // namespace ptxbench
