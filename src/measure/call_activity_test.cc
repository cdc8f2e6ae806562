// The span and attribution rules on recorded activity (no GPU): what a call costs and which
// records betray a cheat.
#include "measure/call_activity.h"

#include <gtest/gtest.h>

namespace ptxbench {
namespace {

using K = ActivitySpan::Kind;
constexpr uint32_t kHarness = 7, kCandidate = 13, kPrivate = 21;

HarnessMarks Marks() {
  HarnessMarks m;
  m.harness_stream = kHarness;
  m.candidate_stream = kCandidate;
  return m;
}

ActivitySpan Kernel(uint64_t start, uint64_t end, uint32_t stream, std::string name) {
  return {K::kKernel, start, end, stream, 0, std::move(name)};
}

TEST(AttributeCall, SpanRunsFromFirstStartToLastEndOnEveryStream) {
  std::vector<ActivitySpan> r = {
      Kernel(1000, 1400, kCandidate, "_Z4gemmv"),
      Kernel(1100, 2600, kPrivate, "_Z6helperv"),  // longer, on a side stream, joined back
      {K::kMemset, 1050, 1090, kCandidate, 0, "memset"},
  };
  CallActivity a = AttributeCall(r, {900, 2700}, Marks());
  EXPECT_EQ(a.span_ns, 2600u - 1000u);
  EXPECT_EQ(a.records, 3u);
  EXPECT_EQ(a.kernels.at("_Z4gemmv"), 1);
  EXPECT_EQ(a.kernels.at("_Z6helperv"), 1);
  EXPECT_EQ(a.outlived, 0);
  EXPECT_EQ(a.stray, 0);
}

TEST(AttributeCall, HarnessWorkBetweenCallsIsNeitherCountedNorStray) {
  std::vector<ActivitySpan> r = {
      Kernel(100, 300, kHarness, "ptxbench_fill_normal_bf16"),
      {K::kMemcpy, 310, 320, kHarness, 0, "memcpy"},
      Kernel(1000, 1500, kCandidate, "_Z4gemmv"),
      Kernel(3000, 3100, kHarness, "ptxbench_checksum"),
  };
  CallActivity a = AttributeCall(r, {900, 1600}, Marks());
  EXPECT_EQ(a.span_ns, 500u);
  EXPECT_EQ(a.records, 1u);
  EXPECT_EQ(a.stray, 0);
}

TEST(AttributeCall, AHarnessNameOutsideTheHarnessStreamIsTheCandidates) {
  // A kernel named like the harness's (a module the candidate loaded at run time) that runs
  // after the call's window, off the harness's stream: the candidate's stray work, not ours.
  std::vector<ActivitySpan> r = {
      Kernel(1000, 1100, kCandidate, "_Z5decoyv"),
      Kernel(3200, 9300, kCandidate,
             "_ZN8ptxbench12_GLOBAL__N_121ptxbench_fill_patternItEEvPT_mS3_"),
      Kernel(9400, 9900, kPrivate, "ptxbench_checksum"),
  };
  CallActivity a = AttributeCall(r, {900, 1600}, Marks());
  EXPECT_EQ(a.records, 1u);
  EXPECT_EQ(a.stray, 2);
}

TEST(AttributeCall, WorkOnAnotherStreamThatOutlivesTheSyncIsFlagged) {
  // The private-stream cheat: run() returns at once, its stream is empty, the real kernel
  // runs on a stream of its own and ends 5 ms after "synchronized".
  std::vector<ActivitySpan> r = {Kernel(1000, 5'001'000, kPrivate, "_Z4gemmv")};
  CallActivity a = AttributeCall(r, {900, 1200}, Marks());
  EXPECT_EQ(a.outlived, 1);
  EXPECT_EQ(a.outlived_by_ns, 5'001'000u - 1200u);
  EXPECT_EQ(a.outlived_names, std::vector<std::string>{"_Z4gemmv"});
  // It is still timed in full: the span covers the hidden kernel.
  EXPECT_EQ(a.span_ns, 5'000'000u);
}

TEST(AttributeCall, AFewMicrosecondsOfClockSkewIsNotOutliving) {
  std::vector<ActivitySpan> r = {Kernel(1000, 1200 + 15000, kPrivate, "_Z4gemmv")};
  EXPECT_EQ(AttributeCall(r, {900, 1200}, Marks()).outlived, 0);
  // On the candidate's own stream nothing can outlive its synchronization.
  std::vector<ActivitySpan> own = {Kernel(1000, 1200 + 900000, kCandidate, "_Z4gemmv")};
  EXPECT_EQ(AttributeCall(own, {900, 1200}, Marks()).outlived, 0);
}

TEST(AttributeCall, CandidateWorkOutsideTheWindowIsStray) {
  // A host thread launches after run() returned; its kernel starts after the window.
  std::vector<ActivitySpan> r = {
      Kernel(1000, 1100, kCandidate, "_Z5tokenv"),
      Kernel(2000, 9000, kPrivate, "_Z4gemmv"),
      {K::kMemcpy, 9100, 9200, kPrivate, 0, "memcpy"},
  };
  CallActivity a = AttributeCall(r, {900, 1500}, Marks());
  EXPECT_EQ(a.records, 1u);
  EXPECT_EQ(a.stray, 2);
  EXPECT_EQ(a.stray_names, (std::vector<std::string>{"_Z4gemmv", "memcpy"}));
  EXPECT_EQ(a.span_ns, 100u);
}

TEST(AttributeCall, AHarnessNamedKernelOnTheCandidatesStreamInTheWindowIsTheCandidates) {
  // A candidate that names its kernel ptxbench_* to hide still pays for it inside the call.
  std::vector<ActivitySpan> r = {Kernel(1000, 3000, kCandidate, "ptxbench_fake")};
  CallActivity a = AttributeCall(r, {900, 3100}, Marks());
  EXPECT_EQ(a.span_ns, 2000u);
  EXPECT_EQ(a.kernels.count("ptxbench_fake"), 1u);
}

TEST(AttributeCall, BusyTimeIsTheUnionOfTheRecordsIntervals) {
  // Two overlapping kernels, then a gap, then a copy: busy excludes the gap, counts the
  // overlap once.
  std::vector<ActivitySpan> r = {
      Kernel(1000, 3000, kCandidate, "_Z1av"),
      Kernel(2000, 4000, kPrivate, "_Z1bv"),
      {K::kMemcpy, 10000, 10500, kCandidate, 0, "memcpy"},
  };
  CallActivity a = AttributeCall(r, {900, 11000}, Marks());
  EXPECT_EQ(a.span_ns, 9500u);
  EXPECT_EQ(a.busy_ns, 3000u + 500u);
}

TEST(AttributeCall, AHostComputationBetweenCopiesShowsAsIdleGpu) {
  // The host-thread cheat: copy A and B to the host, 10 ms of CPU loop, copy C back.
  std::vector<ActivitySpan> r = {
      {K::kMemcpy, 1000, 3000, kCandidate, 0, "memcpy"},
      {K::kMemcpy, 3100, 5000, kCandidate, 0, "memcpy"},
      {K::kMemcpy, 10'005'000, 10'007'000, kCandidate, 0, "memcpy"},
  };
  CallActivity a = AttributeCall(r, {900, 10'008'000}, Marks());
  EXPECT_GT(a.span_ns - a.busy_ns, 9'000'000u);
  EXPECT_TRUE(a.kernels.empty());
}

TEST(AttributeCall, AnEmptyWindowHasNoSpan) {
  CallActivity a = AttributeCall({}, {900, 1000}, Marks());
  EXPECT_EQ(a.records, 0u);
  EXPECT_EQ(a.span_ns, 0u);
}

TEST(AttributeCall, NamesAreCappedSoThousandsOfKernelsStayReadable) {
  std::vector<ActivitySpan> r;
  for (int i = 0; i < 1000; ++i)
    r.push_back(Kernel(5000 + i, 5001 + i, kPrivate, "_Z1k" + std::to_string(i)));
  CallActivity a = AttributeCall(r, {0, 100}, Marks());
  EXPECT_EQ(a.stray, 1000);
  EXPECT_EQ(a.stray_names.size(), 16u);
}

TEST(ForeignKernels, OnlyTheCandidatesOwnFunctionsMayRun) {
  std::map<std::string, int> seen = {{"_Z4gemmv", 60}, {"nvjet_hsh_256x128_2cta", 60}};
  EXPECT_EQ(ForeignKernels(seen, {"_Z4gemmv"}, {}),
            std::vector<std::string>{"nvjet_hsh_256x128_2cta"});
  EXPECT_TRUE(ForeignKernels({{"_Z4gemmv", 1}}, {"_Z4gemmv", "_Z5otherv"}, {}).empty());
}

TEST(ForeignKernels, AStubNamedLikeTheBaselinesKernelDoesNotMakeItAllowed) {
  // The candidate ships an empty kernel under cuBLAS's kernel name and calls cuBLAS.
  std::string lib = "sm90_xmma_gemm_bf16bf16_bf16f32";
  std::map<std::string, int> seen = {{lib, 60}};
  EXPECT_EQ(ForeignKernels(seen, {lib}, {lib}), std::vector<std::string>{lib});
}

}  // namespace
}  // namespace ptxbench
