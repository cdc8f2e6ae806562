// The timing verdicts on recorded child messages (no GPU): statistics, speedup, peak, drift,
// and each defense with the cheat it is there for.
#include "evaluate/timing_judge.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ptxbench {
namespace {

using nlohmann::json;

json Sample(const std::string& phase, int index, bool warmup, double span_ns, double host_ns,
            json kernels = {{"_Z4gemmv", 1}}) {
  return {{"event", "timing_sample"},
          {"phase", phase},
          {"index", index},
          {"warmup", warmup},
          {"host_ns", host_ns},
          {"inputs_unchanged", true},
          {"activity", {{"span_ns", span_ns}, {"records", 1}, {"kernels", kernels}}}};
}

// A clean run: baseline 1.0 ms before and 1.02 ms after, candidate 2.0 ms (p10..p90 spread).
std::vector<json> CleanRun(int warmup = 2, int iterations = 10) {
  std::vector<json> m;
  auto phase = [&](const std::string& name, double base_ns, json kernels) {
    for (int i = 0; i < warmup + iterations; ++i)
      m.push_back(
          Sample(name, i, i < warmup, base_ns + 1000.0 * (i % 5), base_ns + 30000, kernels));
  };
  phase("baseline_before", 1'000'000, {{"nvjet_tst_128x256", 1}});
  m.push_back({{"event", "call_started"}, {"phase", "candidate"}});
  phase("candidate", 2'000'000, {{"_Z4gemmv", 1}});
  m.back()["seed"] = 42;
  m.back()["set"] = 1;
  m.back()["outputs"] = json::array({{{"name", "C"}, {"file", "/s/timing11_C.out"}}});
  phase("baseline_after", 1'020'000, {{"nvjet_tst_128x256", 1}});
  m.push_back({{"event", "timing_done"},
               {"protocol", {{"buffer_sets", 3}, {"l2_bytes", 62914560}}},
               {"baseline_name", "cuBLASLt"},
               {"baseline", {{"version", "13.1.0"}}},
               {"new_vendor_libraries", json::array()}});
  m.push_back({{"event", "done"}});
  return m;
}

TimingContext Context() {
  TimingContext c;
  c.flops = 2.0 * 8192 * 7168 * 5120;
  c.allowed_known = true;
  c.allowed_kernels = {"_Z4gemmv"};
  c.warmup = 2;
  c.iterations = 10;
  c.peak_flops = 800e12;
  return c;
}

ExitInfo Exited() { return ExitInfo{}; }

TEST(JudgeTiming, ACleanRunGivesStatisticsSpeedupAndPeakShare) {
  TimingJudgement j = JudgeTiming(CleanRun(), Exited(), Context());
  ASSERT_FALSE(j.verdict) << j.verdict->message;
  const json p = ToJson(j.performance);
  EXPECT_EQ(p["state"], "ran");
  EXPECT_EQ(p["baseline"]["name"], "cuBLASLt");
  EXPECT_EQ(p["candidate"]["count"], 10);  // warm-up calls are not samples
  EXPECT_NEAR(p["candidate"]["median"].get<double>(), 2.002e-3, 1e-9);
  EXPECT_NEAR(p["baseline"]["before"]["median"].get<double>(), 1.002e-3, 1e-9);
  EXPECT_NEAR(p["baseline"]["after"]["median"].get<double>(), 1.022e-3, 1e-9);
  double speedup = p["speedup"];
  EXPECT_GT(speedup, 0.5);
  EXPECT_LT(speedup, 0.52);
  EXPECT_LE(p["speedup_range"][0].get<double>(), speedup);
  EXPECT_GE(p["speedup_range"][1].get<double>(), speedup);
  double tflops = p["tflops"];
  EXPECT_NEAR(tflops, Context().flops / 2.002e-3 * 1e-12, 1e-6);
  EXPECT_NEAR(p["percent_of_peak"].get<double>(), 100 * tflops / 800, 1e-6);
  EXPECT_FALSE(p["baseline"]["drift_flagged"].get<bool>());  // 2 % < 5 %
  ASSERT_EQ(j.outputs.size(), 1u);
  EXPECT_EQ(j.outputs[0].seed, 42u);
  EXPECT_EQ(j.outputs[0].files, std::vector<std::string>{"/s/timing11_C.out"});
}

TEST(JudgeTiming, ABaselineThatMovedIsFlagged) {
  TimingContext c = Context();
  c.drift_threshold = 0.01;
  TimingJudgement j = JudgeTiming(CleanRun(), Exited(), c);
  EXPECT_TRUE(ToJson(j.performance)["baseline"]["drift_flagged"].get<bool>());
  EXPECT_FALSE(j.verdict);  // flagged in the record, not the candidate's fault
}

TEST(JudgeTiming, AForeignKernelIsARuleViolation) {
  auto m = CleanRun();
  for (auto& x : m)
    if (x.value("phase", "") == "candidate" && x.contains("activity"))
      x["activity"]["kernels"]["nvjet_tst_128x256"] = 1;  // cuBLAS ran inside its calls
  TimingJudgement j = JudgeTiming(m, Exited(), Context());
  ASSERT_TRUE(j.verdict);
  EXPECT_EQ(j.verdict->status, Status::kRuleViolation);
  EXPECT_EQ(j.verdict->reason, "foreign_kernel");
  EXPECT_NE(j.verdict->message.find("nvjet_tst_128x256"), std::string::npos);
}

TEST(JudgeTiming, AStubNamedLikeTheBaselinesKernelIsStillForeign) {
  // The candidate's cubin has an empty kernel under cuBLAS's name and calls cuBLAS: the name
  // is "allowed", but the baseline ran it, so it is forbidden.
  auto m = CleanRun();
  for (auto& x : m)
    if (x.value("phase", "") == "candidate" && x.contains("activity"))
      x["activity"]["kernels"] = {{"nvjet_tst_128x256", 1}};
  TimingContext c = Context();
  c.allowed_kernels.push_back("nvjet_tst_128x256");
  TimingJudgement j = JudgeTiming(m, Exited(), c);
  ASSERT_TRUE(j.verdict);
  EXPECT_EQ(j.verdict->reason, "foreign_kernel");
}

TEST(JudgeTiming, WithoutTheCubinsFunctionsTheForeignCheckSaysItDidNotRun) {
  TimingContext c = Context();
  c.allowed_known = false;
  TimingJudgement j = JudgeTiming(CleanRun(), Exited(), c);
  EXPECT_FALSE(j.verdict);
  EXPECT_EQ(ToJson(j.performance)["defenses"]["foreign_kernels"]["state"], "skipped");
  // Fail closed: a check that did not run credits no speed.
  EXPECT_FALSE(ToJson(j.performance).contains("speedup")) << ToJson(j.performance).dump();
  EXPECT_FALSE(ToJson(j.performance).contains("speedup_range"));
  EXPECT_NE(ToJson(j.performance).value("speedup_withheld", "").find("foreign-kernel"),
            std::string::npos);
  // The same run with the functions known is credited: the withholding is the check's alone.
  EXPECT_TRUE(ToJson(JudgeTiming(CleanRun(), Exited(), Context()).performance).contains("speedup"));
}

TEST(JudgeTiming, WorkThatOutlivesTheStreamIsOutsideTheStream) {
  auto m = CleanRun();
  for (auto& x : m)
    if (x.value("phase", "") == "candidate" && x.value("index", 0) == 3) {
      x["activity"]["outlived"] = 1;
      x["activity"]["outlived_by_ns"] = 1.9e6;
      x["activity"]["outlived_names"] = {"_Z4gemmv"};
    }
  TimingJudgement j = JudgeTiming(m, Exited(), Context());
  ASSERT_TRUE(j.verdict);
  EXPECT_EQ(j.verdict->reason, "outside_stream");
  EXPECT_NE(j.verdict->message.find("call 3"), std::string::npos);
  EXPECT_NE(j.verdict->message.find("1.900 ms"), std::string::npos);
}

TEST(JudgeTiming, WorkDoneOnTheHostIsOutsideTheStream) {
  auto m = CleanRun();
  for (auto& x : m)
    if (x.value("phase", "") == "candidate" && x.contains("host_ns"))
      x["host_ns"] = 40e6;  // 40 ms on the host for a 2 ms GPU span
  TimingJudgement j = JudgeTiming(m, Exited(), Context());
  ASSERT_TRUE(j.verdict);
  EXPECT_EQ(j.verdict->reason, "outside_stream");
  EXPECT_NE(j.verdict->message.find("on the host"), std::string::npos);
}

TEST(JudgeTiming, HostTimeRuleLeavesLaunchOverheadAlone) {
  EXPECT_FALSE(HostTimeExceedsGpu(12e-6, 5e-6));     // a tiny kernel and its launch
  EXPECT_FALSE(HostTimeExceedsGpu(13.1e-3, 13e-3));  // a big one
  EXPECT_TRUE(HostTimeExceedsGpu(5e-3, 0.1e-3));
}

TEST(JudgeTiming, AGpuIdleBetweenCopiesMeansHostWork) {
  auto m = CleanRun();
  for (auto& x : m)
    if (x.value("phase", "") == "candidate" && x.contains("activity")) {
      x["activity"]["span_ns"] = 10e6;
      x["activity"]["busy_ns"] = 0.02e6;  // two copies; the rest was a CPU loop
      x["host_ns"] = 10.03e6;             // which the host-time rule cannot see
    }
  TimingJudgement j = JudgeTiming(m, Exited(), Context());
  ASSERT_TRUE(j.verdict);
  EXPECT_EQ(j.verdict->reason, "outside_stream");
  EXPECT_NE(j.verdict->message.find("idle"), std::string::npos);
  EXPECT_FALSE(GpuMostlyIdle(5e-6, 20e-6));  // launch gaps of a small multi-kernel call
  EXPECT_FALSE(GpuMostlyIdle(1.5e-3, 13e-3));
}

TEST(JudgeTiming, ACallThatLaunchedNothingIsCaught) {
  // The pointer-memoizing cheat: from some call on it returns without launching.
  auto m = CleanRun();
  for (auto& x : m)
    if (x.value("phase", "") == "candidate" && x.value("index", 0) >= 4 && x.contains("activity"))
      x["activity"] = {{"span_ns", 0}, {"records", 0}, {"kernels", json::object()}};
  TimingJudgement j = JudgeTiming(m, Exited(), Context());
  ASSERT_TRUE(j.verdict);
  EXPECT_EQ(j.verdict->reason, "call_history");
  EXPECT_NE(j.verdict->message.find("first: call 4"), std::string::npos) << j.verdict->message;
}

TEST(JudgeTiming, WorkThatStartsAfterTheCallIsNotMistakenForNoWork) {
  // The private-stream cheat on the H200: run() returns before its kernel even starts, so
  // the window is empty and the kernel is stray. The stray work is the precise reason.
  auto m = CleanRun();
  for (auto& x : m)
    if (x.value("phase", "") == "candidate" && x.contains("activity"))
      x["activity"] = {{"span_ns", 0},
                       {"records", 0},
                       {"kernels", json::object()},
                       {"stray", 1},
                       {"stray_names", {"_Z4gemmv"}}};
  TimingJudgement j = JudgeTiming(m, Exited(), Context());
  ASSERT_TRUE(j.verdict);
  EXPECT_EQ(j.verdict->reason, "outside_stream") << j.verdict->message;
}

TEST(JudgeTiming, StrayWorkAndModifiedInputsAreViolations) {
  auto m = CleanRun();
  m[15]["activity"]["stray"] = 2;
  m[15]["activity"]["stray_names"] = {"_Z4gemmv", "memcpy"};
  TimingJudgement j = JudgeTiming(m, Exited(), Context());
  ASSERT_TRUE(j.verdict);
  EXPECT_EQ(j.verdict->reason, "outside_stream");

  auto n = CleanRun();
  n[14]["inputs_unchanged"] = false;
  j = JudgeTiming(n, Exited(), Context());
  ASSERT_TRUE(j.verdict);
  EXPECT_EQ(j.verdict->reason, "inputs_modified");
}

TEST(JudgeTiming, AVendorLibraryLoadedByTheCandidateIsForbidden) {
  auto m = CleanRun();
  m[m.size() - 2]["new_vendor_libraries"] = {"/usr/local/cuda/lib64/libcublas.so.13"};
  TimingJudgement j = JudgeTiming(m, Exited(), Context());
  ASSERT_TRUE(j.verdict);
  EXPECT_EQ(j.verdict->reason, "forbidden_library");
}

TEST(JudgeTiming, ATimeoutKeepsThePartialSamples) {
  std::vector<json> m;
  for (int i = 0; i < 12; ++i) m.push_back(Sample("baseline_before", i, i < 2, 1e6, 1.03e6));
  m.push_back({{"event", "call_started"}, {"phase", "candidate"}});
  for (int i = 0; i < 5; ++i) m.push_back(Sample("candidate", i, i < 2, 9e8, 9e8));
  ExitInfo timed_out;
  timed_out.kind = ExitKind::kTimedOut;
  TimingJudgement j = JudgeTiming(m, timed_out, Context());
  ASSERT_TRUE(j.verdict);
  EXPECT_EQ(j.verdict->status, Status::kTimeout);
  EXPECT_NE(j.verdict->message.find("5 done"), std::string::npos);
  EXPECT_EQ(ToJson(j.performance)["state"], "timed_out");
  EXPECT_EQ(ToJson(j.performance)["candidate"]["count"], 3);
  EXPECT_NEAR(ToJson(j.performance)["candidate"]["median"].get<double>(), 0.9, 1e-12);
}

TEST(JudgeTiming, ABaselineFailureIsAnInfrastructureErrorNamingTheLibrary) {
  std::vector<json> m = {{{"event", "baseline_error"},
                          {"phase", "baseline_before"},
                          {"message",
                           "cuBLASLt: cublasLtMatmulAlgoGetHeuristic: "
                           "CUBLAS_STATUS_NOT_SUPPORTED"}}};
  auto rest = CleanRun();
  m.insert(m.end(), rest.begin() + 12, rest.end());  // no baseline samples
  TimingJudgement j = JudgeTiming(m, Exited(), Context());
  ASSERT_TRUE(j.verdict);
  EXPECT_EQ(j.verdict->status, Status::kInfraError);
  EXPECT_NE(j.verdict->message.find("cuBLASLt"), std::string::npos);
  EXPECT_EQ(ToJson(j.performance)["baseline"]["state"], "failed");
  EXPECT_FALSE(ToJson(j.performance).contains("speedup"));
}

TEST(JudgeTiming, AShapeTheLibraryDoesNotSupportIsSaidAndClaimsNoSpeedup) {
  std::vector<json> m = {{{"event", "baseline_unsupported"},
                          {"message", "cuDNN 9.14.0 has no engine for fwd B=4 H=48 S=512 D=256"}}};
  auto rest = CleanRun();
  m.insert(m.end(), rest.begin() + 12, rest.end());  // the candidate's calls, no baseline's
  m.erase(std::remove_if(m.begin(), m.end(),
                         [](const json& x) { return x.value("phase", "") == "baseline_after"; }),
          m.end());
  TimingJudgement j = JudgeTiming(m, Exited(), Context());
  EXPECT_FALSE(j.verdict) << j.verdict->message;  // nobody's fault: the candidate still passes
  EXPECT_EQ(ToJson(j.performance)["baseline"]["state"], "unsupported");
  EXPECT_NE(ToJson(j.performance)["baseline"]["reason"].get<std::string>().find("no engine"),
            std::string::npos);
  EXPECT_FALSE(ToJson(j.performance).contains("speedup"));
  EXPECT_GT(ToJson(j.performance)["candidate"]["median"].get<double>(), 0);  // still timed
}

TEST(PlanTimedCalls, AFastKernelGetsEveryRequestedCall) {
  TimedCallPlan p = PlanTimedCalls(10, 50, 0.003, 10);
  EXPECT_EQ(p.warmup, 10);
  EXPECT_EQ(p.iterations, 50);
  EXPECT_FALSE(p.reduced);
  EXPECT_EQ(PlanTimedCalls(10, 50, 0, 10).iterations, 50);   // no estimate: no reduction
  EXPECT_EQ(PlanTimedCalls(10, 50, 1.0, 0).iterations, 50);  // no budget
}

TEST(PlanTimedCalls, ASlowKernelFitsTheBudgetButKeepsAFloor) {
  TimedCallPlan p = PlanTimedCalls(10, 50, 0.367, 10);  // a CUDA-core attention forward
  EXPECT_TRUE(p.reduced);
  EXPECT_EQ(p.warmup, 5);  // 27 calls fit: a fifth of them warm up
  EXPECT_EQ(p.iterations, 22);
  EXPECT_LE((p.warmup + p.iterations) * 0.367, 10.0);
  TimedCallPlan slow = PlanTimedCalls(10, 50, 5.0, 10);  // even slower: the floor holds
  EXPECT_EQ(slow.warmup, 2);
  EXPECT_EQ(slow.iterations, 10);
  EXPECT_EQ(ToJson(slow)["requested_iterations"], 50);
}

TEST(JudgeTiming, NoCuptiMeansTheLayerIsSkippedWithTheReason) {
  std::vector<json> m = {
      {{"event", "timing_unavailable"}, {"reason", "CUPTI_ERROR_NOT_INITIALIZED"}},
      {{"event", "done"}}};
  TimingJudgement j = JudgeTiming(m, Exited(), Context());
  EXPECT_FALSE(j.verdict);
  EXPECT_EQ(ToJson(j.performance)["state"], "skipped");
  EXPECT_NE(ToJson(j.performance)["reason"].get<std::string>().find("CUPTI"), std::string::npos);
}

TEST(JudgeTiming, ACrashWhileBeingTimedIsTheCandidatesRuntimeError) {
  auto m = CleanRun();
  m.resize(16);  // dies during its calls
  m.push_back({{"event", "error"},
               {"stage", "timing"},
               {"phase", "candidate"},
               {"index", 3},
               {"message", "cudaErrorIllegalAddress: an illegal memory access was encountered"}});
  TimingJudgement j = JudgeTiming(m, Exited(), Context());
  ASSERT_TRUE(j.verdict);
  EXPECT_EQ(j.verdict->status, Status::kRuntimeError);
  EXPECT_NE(j.verdict->message.find("call 3"), std::string::npos);
}

TEST(JudgeTiming, ThePeakMeasuredThisTimeIsReturnedForTheCache) {
  auto m = CleanRun();
  for (int i = 0; i < 13; ++i)
    m.insert(m.begin() + 12, Sample("peak", i, i < 3, 11e6, 11e6, {{"nvjet", 1}}));
  m.insert(m.begin() + 25, json{{"event", "peak_done"}, {"n", 16384}, {"ok", true}});
  TimingContext c = Context();
  c.peak_flops.reset();
  TimingJudgement j = JudgeTiming(m, Exited(), c);
  ASSERT_TRUE(j.peak_measured);
  EXPECT_NEAR(*j.peak_measured, 2.0 * 16384 * 16384 * 16384 / 11e-3, 1e6);
  EXPECT_TRUE(ToJson(j.performance).contains("percent_of_peak"));
}

}  // namespace
}  // namespace ptxbench
