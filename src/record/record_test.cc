#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "record/layers.h"
#include "record/outcome.h"
#include "record/record.h"
#include "record/report_rows.h"
#include "record/vocabulary.h"

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

// The detail views read what the evaluator writes (compare/compare.cc's output JSON, the
// timing layer's distributions).
TEST(RecordLayers, TheDetailViewsReadWhatTheEvaluatorWrites) {
  json j = EvaluationRecord{}.ToJson();
  j["task"] = {{"definition", "gemm_n128_k2048"},
               {"axes", {{"M", 93}}},
               {"required_families", {"gmma", "tma"}}};
  j["screening"] = {{"findings",
                     {{{"line", 23},
                       {"what", "#include <cublas_v2.h>"},
                       {"library", "cuBLAS"},
                       {"excerpt", "x"}}}}};
  j["build"] = {{"errors", "candidate.cu(3): error"}, {"log", "the log"}};
  j["correctness"] = {
      {"state", "ran"},
      {"tolerance", {{"rule", "allclose"}, {"atol", 0.01}, {"rtol", 0.01}}},
      {"trial_results",
       {{{"seed", 20260001},
         {"inputs_unchanged", false},
         {"outputs",
          {{{"name", "C"},
            {"verdict", "numerical"},
            {"elements", 100},
            {"mismatched", 7},
            {"max_abs_error", 2.5},
            {"max_rel_error", 0.5},
            {"first_bad", {{"index", 4}, {"got", nullptr}, {"expected", 1.5}}}}}}}}},
      {"new_vendor_libraries", {"libcublasLt.so.13"}},
      {"child_exit", "killed by signal 9"}};
  j["memcheck"] = {{"state", "ran"},
                   {"error_count", 3},
                   {"errors", {{{"kind", "Invalid __global__ read"}, {"thread", "(0,0,0)"}}}}};
  j["instructions"] = {{"static", {{"state", "ran"}, {"totals", {{"gmma", 12}, {"tma", 0}}}}},
                       {"dynamic", {{"families", {{"gmma", {{"thread_executions_true", 4096}}}}}}}};
  j["performance"] = {
      {"state", "ran"},
      {"candidate", {{"median", 2e-3}, {"p10", 1e-3}, {"p90", 3e-3}, {"count", 50}}},
      {"baseline",
       {{"name", "cuBLASLt"},
        {"state", "ran"},
        {"median", 1e-3},
        {"drift_flagged", true},
        {"drift", 0.04}}},
      {"speedup_range", {0.4, 0.6}},
      {"child_log_tail", "last words"}};
  const EvaluationRecord r = FromJson(j);

  const TaskDetail task = TaskDetailOf(r);
  EXPECT_EQ(task.definition, "gemm_n128_k2048");
  ASSERT_EQ(task.axes.size(), 1u);
  EXPECT_EQ(task.axes[0].first, "M");
  EXPECT_EQ(task.required_families, (std::vector<std::string>{"gmma", "tma"}));

  const auto findings = ScreeningFindingsOf(r);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].line, 23);
  EXPECT_EQ(findings[0].library, "cuBLAS");
  EXPECT_EQ(CompilerOutputOf(r).errors, "candidate.cu(3): error");

  const CorrectnessDetail c = CorrectnessDetailOf(r);
  EXPECT_EQ(c.state, "ran");
  ASSERT_TRUE(c.tolerance);
  EXPECT_EQ(c.tolerance->atol, 0.01);
  ASSERT_EQ(c.trials.size(), 1u);
  EXPECT_TRUE(c.trials[0].Failed());
  EXPECT_EQ(c.trials[0].seed, 20260001);
  const OutputCheck& o = c.trials[0].outputs.at(0);
  EXPECT_EQ(o.mismatched, 7);
  EXPECT_EQ(o.max_abs_error, 2.5);
  ASSERT_TRUE(o.first_bad);
  EXPECT_EQ(o.first_bad->index, 4);
  EXPECT_FALSE(o.first_bad->got);
  EXPECT_TRUE(o.first_bad->got_non_finite);
  EXPECT_EQ(o.first_bad->expected, 1.5);
  EXPECT_EQ(c.new_vendor_libraries.size(), 1u);
  EXPECT_EQ(c.child.exit, "killed by signal 9");

  const MemcheckDetail m = MemcheckDetailOf(r);
  EXPECT_EQ(m.error_count, 3);
  ASSERT_EQ(m.errors.size(), 1u);
  EXPECT_EQ(m.errors[0].thread, "(0,0,0)");

  const InstructionDetail ins = InstructionDetailOf(r);
  EXPECT_TRUE(ins.has_static);
  ASSERT_TRUE(ins.sass_totals && ins.executed);
  EXPECT_EQ(InstructionDetail::CountOf(*ins.sass_totals, "gmma"), 12);
  EXPECT_EQ(InstructionDetail::CountOf(*ins.sass_totals, "tma"), 0);
  EXPECT_EQ(InstructionDetail::CountOf(*ins.executed, "gmma"), 4096);
  EXPECT_EQ(InstructionDetail::CountOf(*ins.executed, "tma"), 0);  // not listed

  const PerformanceDetail p = PerformanceDetailOf(r);
  EXPECT_EQ(p.candidate.count, 50);
  EXPECT_EQ(p.candidate.p90, 3e-3);
  EXPECT_TRUE(p.baseline.present);
  EXPECT_TRUE(p.baseline.drift_flagged);
  EXPECT_EQ(p.baseline.time.median, 1e-3);
  ASSERT_TRUE(p.speedup_range);
  EXPECT_EQ(p.speedup_range->second, 0.6);
  EXPECT_EQ(p.child.log_tail, "last words");
}

TEST(RecordLayers, FieldsOfAnotherTypeReadAsAbsent) {
  json j = EvaluationRecord{}.ToJson();
  j["correctness"] = {{"state", 3},
                      {"tolerance", "loose"},
                      {"trial_results",
                       {{{"outputs", {{{"elements", "many"}, {"first_bad", {{"index", "x"}}}}}}}}}};
  j["instructions"] = {{"static", "ran"}, {"dynamic", {{"families", {1, 2}}}}};
  j["performance"] = {{"baseline", "cuBLASLt"}, {"speedup_range", {1}}};
  j["memcheck"] = {{"state", 1},
                   {"error_count", "3"},
                   {"errors", {{{"thread", 0}, {"kind", "race"}}, "an error"}},
                   {"first_error", {"x"}}};
  j["screening"] = {{"findings", {{{"line", "12"}, {"what", 3}, {"library", "cublas"}}}}};
  j["task"] = {{"definition", 7},
               {"axes", {1, 2}},
               {"required_families", {"gmma", 3}},
               {"flashinfer_bench", {{"definition", "d"}, {"workload", "w"}}}};
  const EvaluationRecord r = FromJson(j);
  const CorrectnessDetail c = CorrectnessDetailOf(r);
  EXPECT_EQ(c.state, "");
  EXPECT_FALSE(c.tolerance);
  ASSERT_EQ(c.trials.size(), 1u);
  EXPECT_TRUE(c.trials[0].inputs_unchanged);
  EXPECT_EQ(c.trials[0].outputs.at(0).elements, 0);
  EXPECT_FALSE(c.trials[0].outputs.at(0).first_bad);
  const InstructionDetail ins = InstructionDetailOf(r);
  EXPECT_FALSE(ins.has_static);
  EXPECT_FALSE(ins.sass_totals);
  EXPECT_FALSE(ins.executed);
  const PerformanceDetail p = PerformanceDetailOf(r);
  EXPECT_FALSE(p.baseline.present);
  EXPECT_FALSE(p.speedup_range);
  const MemcheckDetail m = MemcheckDetailOf(r);
  EXPECT_EQ(m.state, "");
  EXPECT_EQ(m.error_count, 0);
  ASSERT_EQ(m.errors.size(), 2u);  // each entry read, what is not an object as empty
  EXPECT_EQ(m.errors[0].thread, "");
  EXPECT_EQ(m.errors[0].kind, "race");
  EXPECT_EQ(m.errors[1].kind, "");
  EXPECT_EQ(m.first_error, "");
  const std::vector<ScreeningFinding> found = ScreeningFindingsOf(r);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_FALSE(found[0].line);
  EXPECT_EQ(found[0].what, "");
  EXPECT_EQ(found[0].library, "cublas");
  const TaskDetail t = TaskDetailOf(r);
  EXPECT_EQ(t.definition, "");
  EXPECT_TRUE(t.axes.empty());
  EXPECT_EQ(t.required_families, std::vector<std::string>{"gmma"});
  EXPECT_EQ(t.flashinfer_definition, "d");
  EXPECT_TRUE(t.flashinfer_workload.is_null());
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

// One table for every use of an architecture (the compiler's target, the published name, the
// prompts, the tensor-core family a task requires): each row complete, each name once.
TEST(RecordContract, EachArchitectureRowIsCompleteAndFoundByItsName) {
  std::set<std::string_view> names;
  for (const ArchInfo& a : Architectures()) {
    EXPECT_TRUE(names.insert(a.name).second) << a.name;
    EXPECT_EQ(FindArchitecture(a.name), &a);
    EXPECT_EQ(ArchFromString(a.name), a.arch);
    EXPECT_EQ(ToString(a.arch), a.name);
    EXPECT_TRUE(a.name.starts_with(a.family)) << a.name;
    EXPECT_NE(a.gencode.find(std::string("code=") + std::string(a.name)), std::string_view::npos)
        << a.gencode;
    for (std::string_view field :
         {a.credit_tag, a.published, a.gpus, a.instructions, a.tensor_family})
      EXPECT_FALSE(field.empty()) << a.name;
  }
  EXPECT_EQ(FindArchitecture("sm_90"), nullptr);
  EXPECT_EQ(FindArchitecture("sm_80"), nullptr);
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

// The memory check has one structure both ways: what the evaluator writes is what the
// consumers read, field for field (a field added to one side and not the other fails here).
TEST(RecordLayers, TheMemcheckLayerRoundTrips) {
  MemcheckDetail written;
  written.state = "failed";
  written.exit = "exit code 0";
  written.error_count = 2;
  written.summary_seen = true;
  written.mode = "always";
  written.seed = 0xfedcba9876543210ull;  // beyond int64: a seed is a uint64
  written.errors = {{"Invalid __global__ read of size 2 bytes at k+0x10", "Invalid read", "k+0x10",
                     "(0,0,0) in block (1,0,0)", "0x7f00"}};
  written.first_error = "Invalid __global__ read of size 2 bytes at k+0x10";
  written.log_tail = "========= ERROR SUMMARY: 2 errors";
  written.call_completed = true;
  EvaluationRecord r;
  r.memcheck = ToJson(written);
  EXPECT_EQ(MemcheckDetailOf(FromJson(r.ToJson())), written) << r.memcheck.dump();
  // The optional lines are left out when empty, and read back empty.
  MemcheckDetail clean = written;
  clean.first_error.clear();
  clean.log_tail.clear();
  r.memcheck = ToJson(clean);
  EXPECT_FALSE(r.memcheck.contains("first_error"));
  EXPECT_FALSE(r.memcheck.contains("log_tail"));
  EXPECT_EQ(MemcheckDetailOf(r), clean);
}

// The correctness layer of a candidate that ran: one structure both ways, every field.
TEST(RecordLayers, TheCorrectnessLayerRoundTrips) {
  CorrectnessDetail written;
  written.state = "ran";
  written.trial_count = 2;
  written.seeds = {20260001, 0xfedcba9876543210ull};
  written.tolerance = CorrectnessDetail::Tolerance{"published", 1e-2, 1e-2};
  written.reference = {{"cache", "hit"}, {"seconds", 0.5}};
  Trial good;
  good.seed = 20260001;
  good.seconds = 0.25;
  good.call_seconds = 0.001;
  OutputCheck c;
  c.name = "C";
  c.verdict = "match";
  c.summary = "C: all 12 elements within tolerance";
  c.elements = 12;
  c.max_abs_error = 0.004;
  c.max_rel_error = 0.002;
  c.matched_ratio = 1;
  good.outputs = {c};
  Trial bad = good;
  bad.seed = 0xfedcba9876543210ull;
  bad.inputs_unchanged = false;
  bad.outputs[0].verdict = "non_finite";
  bad.outputs[0].non_finite = 3;
  bad.outputs[0].first_bad = OutputCheck::FirstBad{5, std::nullopt, 1.5, true};
  written.trials = {good, bad};
  written.new_vendor_libraries = {"libcublasLt.so.13"};
  written.channel_garbage_lines = 4;
  written.candidate_claims = {"no_gpu"};
  written.child = {"exit code 0", "last words"};
  EvaluationRecord r;
  r.correctness = ToJson(written);
  const CorrectnessDetail read = CorrectnessDetailOf(FromJson(r.ToJson()));
  EXPECT_EQ(read, written) << r.correctness.dump(1);
  EXPECT_TRUE(read.trials[1].Failed());
  EXPECT_FALSE(read.trials[0].Failed());
}

}  // namespace
}  // namespace ptxbench
