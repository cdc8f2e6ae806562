// The feedback the model reads after a turn, rendered from evaluation records written here in
// the shape src/evaluate/evaluate.cc gives them (schema ptxbench.evaluation/1).
#include "agent/feedback.h"

#include <gtest/gtest.h>

namespace ptxbench {
namespace {

using nlohmann::json;

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Each part is in the text: a failure names the part missing and shows the text.
void ExpectHasAll(const std::string& text, const std::vector<std::string>& parts) {
  for (const std::string& part : parts)
    EXPECT_TRUE(Has(text, part)) << "no " << part << "\n" << text;
}

json Task() {
  return {{"definition", "gemm_n128_k2048"},
          {"family", "gemm"},
          {"axes", {{"M", 93}, {"N", 128}, {"K", 2048}}},
          {"flops", 48758784.0},
          {"required_families", {"gmma"}}};
}

json Skipped(const std::string& why) { return {{"state", "skipped"}, {"reason", why}}; }
json NotReached() { return {{"state", "not_reached"}, {"reason", "an earlier stage failed"}}; }

json StaticSass(int gmma, int tma) {
  return {{"state", "ran"},
          {"message", ""},
          {"totals", {{"gmma", gmma}, {"mma_sync", 0}, {"tcgen05", 0}, {"tma", tma}, {"tmem", 0}}}};
}

json CompileErrorRecord() {
  return {{"status", "COMPILE_ERROR"},
          {"reason", nullptr},
          {"message", "candidate.cu(12): error: identifier \"tile\" is undefined"},
          {"task", Task()},
          {"arch", "sm_90a"},
          {"build",
           {{"outcome", "compile_error"},
            {"errors", ""},
            {"log",
             "candidate.cu(7): warning #177-D: variable \"x\" was declared but never referenced\n"
             "candidate.cu(12): error: identifier \"tile\" is undefined\n"
             "      tile[threadIdx.x] = 0;\n"
             "      ^\n"
             "\n"
             "candidate.cu(30): error: expected a \";\"\n"
             "2 errors detected in the compilation of \"candidate.cu\".\n"}}},
          {"correctness", NotReached()},
          {"memcheck", NotReached()},
          {"instructions", nullptr},
          {"performance", NotReached()}};
}

json Output(const std::string& name, const std::string& verdict, const std::string& summary) {
  json o = {{"name", name},       {"verdict", verdict}, {"elements", 25165824},
            {"mismatched", 0},    {"unwritten", 0},     {"non_finite", 0},
            {"max_abs_error", 0}, {"max_rel_error", 0}, {"matched_ratio", 1.0}};
  if (!summary.empty()) o["summary"] = summary;
  return o;
}

json IncorrectRecord() {
  json wrong = Output("O", "numerical",
                      "O: 975900 of 25165824 elements outside tolerance (max abs 4.175, max rel "
                      "7.79e+04); first at [1, 0]: got -1.125, expected -0.5625");
  wrong["mismatched"] = 975900;
  json lse =
      Output("LSE", "match", "LSE: all 196608 elements within tolerance (max abs 0, max rel 0)");
  // A trial whose output has no summary: rendered from its fields.
  json bare = Output("O", "numerical", "");
  bare["mismatched"] = 12;
  bare["max_abs_error"] = 0.5;
  bare["max_rel_error"] = 0.25;
  bare["first_bad"] = {{"index", 4096}, {"got", 1.5}, {"expected", 1.0}};
  return {
      {"status", "INCORRECT"},
      {"reason", "numerical"},
      {"message", "O: 975900 of 25165824 elements outside tolerance (seed 20260001)"},
      {"task", Task()},
      {"arch", "sm_90a"},
      {"build", {{"outcome", "built"}, {"errors", ""}, {"log", "ptxas info    : 0 bytes gmem\n"}}},
      {"correctness",
       {{"state", "ran"},
        {"trials", 3},
        {"tolerance", {{"rule", "published"}, {"atol", 0.01}, {"rtol", 0.01}}},
        {"trial_results",
         {{{"seed", 20260001}, {"inputs_unchanged", true}, {"outputs", {wrong, lse}}},
          {{"seed", 20260002}, {"inputs_unchanged", true}, {"outputs", {bare, lse}}},
          {{"seed", 20260003},
           {"inputs_unchanged", true},
           {"outputs", {Output("O", "match", ""), lse}}}}}}},
      {"memcheck", Skipped("--sanitize never")},
      {"instructions",
       {{"static", StaticSass(0, 0)},
        {"required_families", {"gmma"}},
        {"verification", "not_correct"},
        {"arch_tag", nullptr},
        {"message", "the candidate is not correct"}}},
      {"performance", {{"state", "not_reached"}, {"reason", "the candidate is not correct"}}},
      {"evaluation_id", "gemm_n128_k2048-0/turn3"}};
}

json PassedRecord() {
  return {
      {"status", "PASSED"},
      {"reason", nullptr},
      {"message",
       "correct on 3 trials (max abs error 0.0039, max rel error 0.012); memory check "
       "clean; 2x the baseline (0.0488 TFLOP/s)"},
      {"task", Task()},
      {"arch", "sm_90a"},
      {"correctness",
       {{"state", "ran"},
        {"trial_results",
         {{{"seed", 1},
           {"outputs",
            {{{"name", "C"},
              {"verdict", "match"},
              {"max_abs_error", 0.0039},
              {"max_rel_error", 0.012}}}}},
          {{"seed", 2},
           {"outputs",
            {{{"name", "C"},
              {"verdict", "match"},
              {"max_abs_error", 0.002},
              {"max_rel_error", 0.004}}}}}}}}},
      {"memcheck", {{"state", "ran"}, {"error_count", 0}, {"errors", json::array()}}},
      {"instructions",
       {{"static", StaticSass(128, 16)},
        {"required_families", {"gmma"}},
        {"verification", "dynamic_present"},
        {"arch_tag", "H"},
        {"message", "H verified: GMMA 97.3% of FLOPs, tma executed 1.2k threads"},
        {"dynamic",
         {{"families",
           {{"gmma", {{"static_count", 128}, {"thread_executions_true", 1.5e6}, {"flops", 4.7e7}}},
            {"tma", {{"static_count", 16}, {"thread_executions_true", 1200}}}}}}},
        {"tensor_core_work_fraction", 0.973}}},
      {"performance",
       {{"state", "ran"},
        {"candidate", {{"count", 50}, {"median", 0.001}, {"p10", 0.00098}, {"p90", 0.00105}}},
        {"baseline",
         {{"name", "cuBLASLt"},
          {"state", "ran"},
          {"median", 0.002},
          {"p10", 0.0019},
          {"p90", 0.0021},
          {"tflops", 0.0244},
          {"drift", 0.001},
          {"drift_flagged", false}}},
        {"speedup", 2.0},
        {"speedup_range", {1.81, 2.14}},
        {"tflops", 0.0488},
        {"peak_tflops", 989.0},
        {"percent_of_peak", 0.00493}}},
      {"stage_seconds", {{"total", 12.5}}}};
}

TEST(Feedback, CompileErrorsShowTheCompilersFirstErrorsWithTheirLines) {
  std::string f = RenderFeedback(CompileErrorRecord(), std::nullopt);
  EXPECT_TRUE(Has(f, "Status: COMPILE_ERROR\n")) << f;
  EXPECT_TRUE(Has(f,
                  "## Compiler errors\n```text\n"
                  "candidate.cu(12): error: identifier \"tile\" is undefined\n"
                  "      tile[threadIdx.x] = 0;\n"
                  "      ^\n"
                  "candidate.cu(30): error: expected a \";\"\n"))
      << f;
  EXPECT_FALSE(Has(f, "warning #177")) << f;  // errors only
  EXPECT_FALSE(Has(f, "## Performance"));
  EXPECT_FALSE(Has(f, "## Instructions"));  // null in the record
  // The first lines only, with a note on what was cut.
  FeedbackOptions o;
  o.max_compiler_lines = 1;
  f = RenderFeedback(CompileErrorRecord(), std::nullopt, o);
  EXPECT_TRUE(Has(f, "candidate.cu(12): error"));
  EXPECT_FALSE(Has(f, "candidate.cu(30): error")) << f;
  EXPECT_TRUE(Has(f, "[2 more error lines not shown")) << f;
  // The trimmed errors are preferred to the raw log where the record has them.
  json r = CompileErrorRecord();
  r["build"]["errors"] = "candidate.cu(99): error: from the trimmed list\n";
  f = RenderFeedback(r, std::nullopt);
  EXPECT_TRUE(Has(f, "candidate.cu(99): error: from the trimmed list"));
  EXPECT_FALSE(Has(f, "candidate.cu(30)"));  // the raw log is not read
  // A log without any line saying "error": its first lines, never the ptxas chatter.
  r["build"]["errors"] = "";
  r["build"]["log"] = "ptxas info    : 0 bytes gmem\nnvcc died of signal 9\n";
  f = RenderFeedback(r, std::nullopt);
  EXPECT_TRUE(Has(f, "nvcc died of signal 9")) << f;
  EXPECT_FALSE(Has(f, "ptxas info"));
}

TEST(Feedback, WrongResultsNameTheOutputTheErrorsAndTheFirstMismatch) {
  std::string f = RenderFeedback(IncorrectRecord(), std::nullopt);
  ExpectHasAll(f, {
                      "## Evaluation of your kernel (turn 3)\n",
                      "Task: gemm_n128_k2048 (K=2048, M=93, N=128) on sm_90a\n",
                      "Status: INCORRECT (numerical)\n",
                      "Tolerance: rule published, atol 0.01, rtol 0.01\n",
                      "Trial (seed 20260001):\n  O: 975900 of 25165824 elements outside tolerance "
                      "(max abs 4.175, max rel 7.79e+04); first at [1, 0]: got -1.125, expected "
                      "-0.5625\n  LSE: all 196608",
                  });
  // Built from the fields when there is no summary.
  EXPECT_TRUE(Has(f,
                  "  O: 12 of 25165824 elements outside tolerance (max abs 0.5, max rel 0.25); "
                  "first at flat index 4096: got 1.5, expected 1\n"))
      << f;
  EXPECT_FALSE(Has(f, "seed 20260003")) << f;  // a trial that matched is not listed
  ExpectHasAll(f, {
                      "2 of 3 trials failed\n",
                      "## Instructions\n",
                      "SASS of your shared object: gmma absent, mma_sync absent",
                      "Missing for the H credit: a correct kernel, gmma (absent from the SASS)",
                  });
  EXPECT_FALSE(Has(f, "## Performance")) << f;
  EXPECT_TRUE(Has(f, "## Best so far\nNo correct kernel yet.\n")) << f;
}

TEST(Feedback, RuntimeErrorsShowTheCudaErrorAndTheProcess) {
  json r = IncorrectRecord();
  r["status"] = "RUNTIME_ERROR";
  r["reason"] = nullptr;
  r["message"] =
      "cudaErrorIllegalAddress: an illegal memory access was encountered during the "
      "call (seed 20260001)";
  r["correctness"] = {{"state", "ran"},
                      {"child_exit", "exit code 1"},
                      {"child_log_tail", "launching 132 blocks\nCUDA error at line 88\n\n"}};
  std::string f = RenderFeedback(r, std::nullopt);
  ExpectHasAll(f, {
                      "Status: RUNTIME_ERROR\nYour code failed while running.\n"
                      "cudaErrorIllegalAddress: an illegal memory access",
                      "## Run\nProcess (correctness run): exit code 1\n",
                      "```text\nlaunching 132 blocks\nCUDA error at line 88\n```\n",
                  });
  // A timeout is rendered the same way, with its own explanation.
  r["status"] = "TIMEOUT";
  r["message"] = "the candidate did not finish within 3 s during the call (seed 20260001)";
  r["correctness"]["child_exit"] = "timed out after 3 s";
  f = RenderFeedback(r, std::nullopt);
  ExpectHasAll(f, {
                      "Status: TIMEOUT\n",
                      "a hang, a deadlock",
                      "Process (correctness run): timed out after 3 s",
                  });
}

TEST(Feedback, MemoryErrorsShowTheSanitizersReport) {
  json r = IncorrectRecord();
  r["status"] = "MEMORY_ERROR";
  r["reason"] = nullptr;
  r["message"] = "Invalid __global__ read of size 2 bytes at gemm+0x1b0 (12 errors in all)";
  json errors = json::array();
  for (int i = 0; i < 7; ++i)
    errors.push_back({{"kind", "Invalid __global__ read of size 2 bytes"},
                      {"location", "gemm(...)+0x1b0 in candidate.cu:42"},
                      {"thread", "by thread (" + std::to_string(i) + ",0,0) in block (0,0,0)"},
                      {"address", "Address 0x7f00 is out of bounds"},
                      {"summary",
                       "Invalid __global__ read of size 2 bytes at candidate.cu:42 by "
                       "thread (" +
                           std::to_string(i) + ",0,0)"}});
  errors[1].erase("summary");  // composed from its parts
  r["memcheck"] = {{"state", "ran"}, {"error_count", 12}, {"errors", errors}};
  std::string f = RenderFeedback(r, std::nullopt);
  ExpectHasAll(f, {
                      "Status: MEMORY_ERROR\n",
                      "## Memory check (compute-sanitizer)\n12 errors in all; the first:\n"
                      "- Invalid __global__ read of size 2 bytes at candidate.cu:42 by thread "
                      "(0,0,0)\n",
                      "- Invalid __global__ read of size 2 bytes; gemm(...)+0x1b0 in "
                      "candidate.cu:42; by thread (1,0,0) in block (0,0,0); Address 0x7f00",
                      "by thread (4,0,0)",
                  });
  EXPECT_FALSE(Has(f, "by thread (5,0,0)")) << f;  // five listed
  EXPECT_TRUE(Has(f, "[2 more not shown]")) << f;
}

TEST(Feedback, PassedShowsInstructionsPerformanceAndTheBestSoFar) {
  BestSoFar best{2, 0.45, 3.3, true};
  std::string f = RenderFeedback(PassedRecord(), best);
  ExpectHasAll(f, {
                      "Status: PASSED\nYour kernel is correct.\n",
                      "C: correct on 2 trials, max abs error 0.0039, max rel error 0.012\n",
                      "Memory check (compute-sanitizer): no error found.\n",
                      "Required for the H credit on sm_90a: gmma\n",
                      "SASS of your shared object: gmma 128, mma_sync absent, tcgen05 absent, tma "
                      "16, tmem absent\n",
                      "Executed at run time (ncu, thread instructions with a true predicate): gmma "
                      "1.5M, tma 1.2k\n",
                      "Tensor-core work fraction: 97.3% of the task's FLOPs done by GMMA",
                      "Verification: verified: the H credit is earned",
                  });
  EXPECT_FALSE(Has(f, "Missing for")) << f;
  EXPECT_TRUE(Has(f,
                  "## Performance\nYour kernel: 1 ms median (p10 980 us, p90 1.05 ms, 50 timed "
                  "calls)\nBaseline cuBLASLt: 2 ms median (p10 1.9 ms, p90 2.1 ms), 0.0244 "
                  "TFLOP/s\nSpeedup: 2x the baseline (range 1.81x to 2.14x)\nThroughput: "
                  "0.0488 TFLOP/s, 0.00493% of the GPU's bf16 dense peak (989 TFLOP/s)\n"))
      << f;
  EXPECT_TRUE(Has(f, "## Best so far\nturn 2: correct, speedup 0.45x, 3.3 TFLOP/s, H verified\n"))
      << f;
  // The best section comes last.
  EXPECT_GT(f.find("## Best so far"), f.find("## Performance"));
}

TEST(Feedback, PassedWithoutCreditSaysWhatIsMissing) {
  json r = PassedRecord();
  r["instructions"] = {{"static", StaticSass(0, 4)},
                       {"required_families", {"gmma"}},
                       {"verification", "sass_absent"},
                       {"arch_tag", nullptr},
                       {"message", "no gmma instruction in the SASS of the shared object"}};
  std::string f = RenderFeedback(r, BestSoFar{1, 0, 0, false});
  ExpectHasAll(f, {
                      "Verification: not verified: a required family is absent from the SASS",
                      "Missing for the H credit: gmma (absent from the SASS)\n",
                      "turn 1: correct, not timed, H not verified\n",
                  });
  // In the SASS but never executed.
  r["instructions"]["static"] = StaticSass(64, 0);
  r["instructions"]["verification"] = "dynamic_not_executed";
  r["instructions"]["dynamic"] = {
      {"families", {{"gmma", {{"static_count", 64}, {"thread_executions_true", 0}}}}}};
  f = RenderFeedback(r, std::nullopt);
  EXPECT_TRUE(Has(f, "Missing for the H credit: gmma (in the SASS, never executed)\n")) << f;
  EXPECT_TRUE(Has(f, "gmma not executed")) << f;
}

TEST(Feedback, ThePapersTagWithoutOursSaysBothAndWhy) {
  // H under the paper's rule (gmma in the SASS and executed), not under ours: a token wgmma.
  json r = PassedRecord();
  r["instructions"]["arch_tag"] = nullptr;
  r["instructions"]["upstream_arch_tag"] = "H";
  r["instructions"]["tensor_core_work_fraction"] = 0.0001;
  std::string f = RenderFeedback(r, std::nullopt);
  EXPECT_TRUE(Has(f,
                  "Tag H under the paper's rule, but not ours: tensor-core work fraction "
                  "0.0001 < 0.5\n"))
      << f;
  EXPECT_FALSE(Has(f, "the H credit is earned")) << f;
  EXPECT_TRUE(Has(f, "Verification: met under the paper's rule only: the H credit is not earned"))
      << f;
  EXPECT_EQ(SummarizeTurn(2, r),
            "turn 2: PASSED (speedup 2x, 0.0488 TFLOP/s, H under the paper's rule only)");
  // Enough tensor-core work, so what ours missed is the witness from outside the process.
  r["instructions"]["tensor_core_work_fraction"] = 0.97;
  f = RenderFeedback(r, std::nullopt);
  EXPECT_TRUE(Has(f,
                  "Tag H under the paper's rule, but not ours: the out-of-process witness did "
                  "not confirm the tensor-core work\n"))
      << f;
  // The evaluator's own reasons, where the record lists them, are what the model reads.
  r["instructions"]["tag_withheld"] = {"tensor-core work fraction 0.01% of the task's FLOPs",
                                       "no out-of-process witness (--no-timing)"};
  f = RenderFeedback(r, std::nullopt);
  EXPECT_TRUE(Has(f,
                  "Tag H under the paper's rule, but not ours: tensor-core work fraction "
                  "0.01% of the task's FLOPs; no out-of-process witness (--no-timing)\n"))
      << f;
  // Both rules agree, or an old record with arch_tag only: no such line.
  r["instructions"]["arch_tag"] = "H";
  EXPECT_FALSE(Has(RenderFeedback(r, std::nullopt), "under the paper's rule"));
  r["instructions"].erase("upstream_arch_tag");
  EXPECT_FALSE(Has(RenderFeedback(r, std::nullopt), "under the paper's rule"));
  EXPECT_EQ(SummarizeTurn(4, r), "turn 4: PASSED (speedup 2x, 0.0488 TFLOP/s, H verified)");
}

TEST(Feedback, PassedWithoutTimingSaysWhy) {
  json r = PassedRecord();
  r["performance"] = Skipped("CUPTI is unavailable, so GPU time cannot be measured");
  std::string f = RenderFeedback(r, std::nullopt);
  EXPECT_TRUE(Has(f,
                  "## Performance\nNot timed (skipped): CUPTI is unavailable, so GPU time "
                  "cannot be measured\n"))
      << f;
  EXPECT_FALSE(Has(f, "Speedup")) << f;
  // A baseline without a kernel for the shape: said, and no speedup.
  r = PassedRecord();
  r["performance"]["baseline"] = {{"state", "unsupported"}, {"reason", "no cuDNN plan"}};
  r["performance"].erase("speedup");
  r["performance"].erase("speedup_range");
  f = RenderFeedback(r, std::nullopt);
  EXPECT_TRUE(Has(f, "Baseline not timed (unsupported): no cuDNN plan; no speedup\n")) << f;
  EXPECT_TRUE(Has(f, "Your kernel: 1 ms median")) << f;
  EXPECT_FALSE(Has(f, "Speedup")) << f;
  // A drifting baseline is flagged.
  r = PassedRecord();
  r["performance"]["baseline"]["drift"] = 0.12;
  r["performance"]["baseline"]["drift_flagged"] = true;
  f = RenderFeedback(r, std::nullopt);
  EXPECT_TRUE(Has(f, "drifted by 12%")) << f;
}

TEST(Feedback, ScreeningRejectionsListTheFindings) {
  json r = {{"status", "REJECTED"},
            {"message", "line 1: includes cublas_v2.h (cuBLAS)"},
            {"screening",
             {{"passed", false},
              {"findings",
               {{{"line", 1},
                 {"library", "cuBLAS"},
                 {"what", "includes cublas_v2.h"},
                 {"excerpt", "#include <cublas_v2.h>"}}}}}}};
  std::string f = RenderFeedback(r, std::nullopt);
  EXPECT_TRUE(Has(f, "Status: REJECTED\n")) << f;
  EXPECT_TRUE(Has(f,
                  "## Screening\n- line 1: includes cublas_v2.h (cuBLAS): #include "
                  "<cublas_v2.h>\n"))
      << f;
}

TEST(Feedback, ARecordMissingMostFieldsNeverThrows) {
  const json odd[] = {
      json::object(),
      json(nullptr),
      json::array({1, 2}),
      json(42),
      json("PASSED"),
      {{"status", "INFRA_ERROR"}, {"message", "evaluator: no GPU"}},
      {{"status", "PASSED"}},
      {{"status", "INCORRECT"}, {"correctness", {{"state", "ran"}, {"trial_results", 5}}}},
      {{"status", 7},
       {"reason", 3},
       {"message", json::array()},
       {"task", "gemm"},
       {"build", {{"errors", 12}, {"log", nullptr}}},
       {"performance", {{"state", "ran"}, {"candidate", {{"median", "fast"}}}, {"speedup", "2"}}},
       {"instructions",
        {{"static", {{"state", "ran"}, {"totals", {{"gmma", "many"}}}}},
         {"dynamic", 3},
         {"required_families", {1, "gmma"}}}},
       {"memcheck", {{"state", "ran"}, {"errors", {nullptr, 5}}, {"error_count", "x"}}}},
      {{"status", "PASSED"},
       {"correctness", {{"state", "ran"}, {"trial_results", {{{"outputs", {nullptr}}}}}}},
       {"performance", {{"state", "ran"}, {"baseline", {{"state", "ran"}}}}}},
      {{"status", "COMPILE_ERROR"}, {"build", nullptr}},
      {{"status", "RUNTIME_ERROR"}, {"correctness", {{"child_exit", nullptr}}}},
  };
  for (const json& r : odd) {
    std::string f;
    EXPECT_NO_THROW(f = RenderFeedback(r, std::nullopt)) << r.dump();
    EXPECT_TRUE(Has(f, "## Evaluation of your kernel")) << r.dump();
    EXPECT_TRUE(Has(f, "Status: ")) << r.dump();
    EXPECT_NO_THROW(SummarizeTurn(1, r)) << r.dump();
  }
  EXPECT_TRUE(Has(RenderFeedback(json::object(), std::nullopt), "Status: UNKNOWN\n"));
  std::string infra = RenderFeedback(odd[5], std::nullopt);
  EXPECT_TRUE(Has(infra, "not counted against you")) << infra;
  EXPECT_TRUE(Has(infra, "evaluator: no GPU")) << infra;
  std::string passed = RenderFeedback(odd[6], std::nullopt);
  EXPECT_TRUE(Has(passed, "## Performance\nNot timed\n")) << passed;
}

TEST(Feedback, TheSameRecordGivesTheSameText) {
  const json records[] = {CompileErrorRecord(), IncorrectRecord(), PassedRecord()};
  for (const json& r : records) {
    std::string a = RenderFeedback(r, BestSoFar{1, 1.5, 10, true});
    // The same record parsed back from its text, its keys in another order of insertion.
    json copy = json::parse(r.dump(2));
    std::string b = RenderFeedback(copy, BestSoFar{1, 1.5, 10, true});
    EXPECT_EQ(a, b);
    EXPECT_EQ(a, RenderFeedback(r, BestSoFar{1, 1.5, 10, true}));
    EXPECT_EQ(SummarizeTurn(4, r), SummarizeTurn(4, copy));
  }
}

TEST(Feedback, LongFeedbackIsTruncatedWithANoteAndKeepsTheBestSoFar) {
  json r = CompileErrorRecord();
  std::string log;
  for (int i = 0; i < 400; ++i)
    log += "candidate.cu(" + std::to_string(i) + "): error: something is wrong at this point\n";
  r["build"]["log"] = log;
  FeedbackOptions o;
  o.max_compiler_lines = 400;
  o.max_chars = 1500;
  std::string f = RenderFeedback(r, BestSoFar{2, 1.2, 50, false}, o);
  EXPECT_LE(f.size(), 1500u) << f;
  EXPECT_TRUE(Has(f, "[feedback truncated: ")) << f;
  EXPECT_TRUE(Has(f, "candidate.cu(0): error"));
  EXPECT_FALSE(Has(f, "candidate.cu(399)"));
  // The best kernel so far survives, at the end.
  EXPECT_TRUE(f.size() > 60 && Has(f.substr(f.size() - 80), "turn 2: correct, speedup 1.2x")) << f;
  // The open ```text block is closed before the note.
  size_t fences = 0;
  for (size_t p = f.find("```"); p != std::string::npos; p = f.find("```", p + 3)) ++fences;
  EXPECT_EQ(fences % 2, 0u) << f;
  // Short feedback is left alone.
  std::string whole = RenderFeedback(CompileErrorRecord(), std::nullopt);
  EXPECT_FALSE(Has(whole, "truncated"));
  // A single enormous line is cut without splitting a UTF-8 character.
  json m = PassedRecord();
  std::string big;
  for (int i = 0; i < 3000; ++i) big += "é";
  m["message"] = big;
  o.max_chars = 700;
  f = RenderFeedback(m, std::nullopt, o);
  EXPECT_LE(f.size(), 700u);
  EXPECT_NO_THROW(json(f).dump());  // valid UTF-8, or dump() throws
}

TEST(Feedback, SummarizeTurnIsOneLine) {
  EXPECT_EQ(SummarizeTurn(3, IncorrectRecord()),
            "turn 3: INCORRECT (O: 975900 of 25165824 elements outside tolerance)");
  EXPECT_EQ(SummarizeTurn(1, CompileErrorRecord()),
            "turn 1: COMPILE_ERROR (candidate.cu(12): error: identifier \"tile\" is undefined)");
  EXPECT_EQ(SummarizeTurn(4, PassedRecord()),
            "turn 4: PASSED (speedup 2x, 0.0488 TFLOP/s, H verified)");
  json r = PassedRecord();
  r["performance"] = Skipped("--no-timing");
  r["instructions"]["verification"] = "sass_absent";
  r["instructions"]["arch_tag"] = nullptr;
  EXPECT_EQ(SummarizeTurn(5, r), "turn 5: PASSED (not timed, H not verified (sass_absent))");
  json v = {{"status", "RULE_VIOLATION"},
            {"reason", "outside_stream"},
            {"message", "kernels still running\nafter the call"}};
  std::string s = SummarizeTurn(6, v);
  EXPECT_EQ(s, "turn 6: RULE_VIOLATION (outside_stream: kernels still running after the call)");
  EXPECT_EQ(SummarizeTurn(2, json::object()), "turn 2: UNKNOWN");
  json longer = {{"status", "RUNTIME_ERROR"}, {"message", std::string(1000, 'x')}};
  std::string l = SummarizeTurn(7, longer);
  EXPECT_LT(l.size(), 260u);
  EXPECT_EQ(l.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace ptxbench
