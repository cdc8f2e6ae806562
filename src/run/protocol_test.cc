#include "run/protocol.h"

#include <gtest/gtest.h>

namespace ptxbench {
namespace {

using nlohmann::json;

TimingSpec CandidateTimingSpec() {
  TimingSpec s;
  s.family = "gemm";
  s.axes = {{"M", 64}, {"N", 64}, {"K", 64}};
  s.out_dir = "/tmp/x";
  s.seed_base = 7;
  s.shared_object = "/tmp/x/candidate.so";
  s.kept_outputs = 50;
  s.witness_calls = 20;
  s.digest_key = 99;
  return s;
}

TEST(Protocol, TimingSpecRoundTrips) {
  TimingSpec s = CandidateTimingSpec();
  TimingSpec back = ParseTimingSpec(ToJson(s));
  EXPECT_EQ(back.kept_outputs, 50);
  EXPECT_EQ(back.witness_calls, 20);
  EXPECT_EQ(back.digest_key, 99u);
  EXPECT_EQ(back.set_seed_base, s.set_seed_base);
  EXPECT_FALSE(back.baseline_only);
  EXPECT_FALSE(back.wait_for_go);
}

// The candidate's timed child asks for the GPU alone before its load only when its spec says
// so; a spec that lost the flag on its way (as the candidate's once did: it was written for
// baselines only) let the child time beside other evaluations.
TEST(Protocol, TheWaitForGoReachesTheCandidatesAndTheBaselinesChild) {
  TimingSpec s = CandidateTimingSpec();
  s.wait_for_go = true;
  EXPECT_TRUE(ParseTimingSpec(ToJson(s)).wait_for_go);
  s.baseline_only = true;
  EXPECT_TRUE(ParseTimingSpec(ToJson(s)).wait_for_go);
}

TEST(Protocol, CandidateSpecMustCarryTheParentsNumbers) {
  // A candidate's timing spec without the parent's counts is refused, never defaulted: the
  // child would otherwise size them itself.
  for (const char* field : {"kept_outputs", "witness_calls", "digest_key", "shared_object",
                            "family", "axes", "seed_base", "out_dir"}) {
    json j = ToJson(CandidateTimingSpec());
    j.erase(field);
    EXPECT_THROW(ParseTimingSpec(j), std::invalid_argument) << field;
  }
}

TEST(Protocol, OutOfRangeAndMistypedFieldsAreRefused) {
  json j = ToJson(CandidateTimingSpec());
  j["witness_calls"] = 51;  // more witness calls than kept outputs
  EXPECT_THROW(ParseTimingSpec(j), std::invalid_argument);
  j = ToJson(CandidateTimingSpec());
  j["kept_outputs"] = 51;  // more than the timed calls
  EXPECT_THROW(ParseTimingSpec(j), std::invalid_argument);
  j = ToJson(CandidateTimingSpec());
  j["kept_outputs"] = "50";
  EXPECT_THROW(ParseTimingSpec(j), std::invalid_argument);
  j = ToJson(CandidateTimingSpec());
  j["buffer_sets"] = 0;
  EXPECT_THROW(ParseTimingSpec(j), std::invalid_argument);
}

TEST(Protocol, BaselineSpecNeedsNoCandidateFields) {
  TimingSpec s = CandidateTimingSpec();
  s.baseline_only = true;
  s.baseline_phase = "baseline_after";
  s.peak_n = 8192;
  json j = ToJson(s);
  EXPECT_FALSE(j.contains("shared_object"));
  TimingSpec back = ParseTimingSpec(j);
  EXPECT_TRUE(back.baseline_only);
  EXPECT_EQ(back.peak_n, 8192);
  j["baseline_phase"] = "candidate";
  EXPECT_THROW(ParseTimingSpec(j), std::invalid_argument);
}

TEST(Protocol, AfterLoopPlanParsesStrictly) {
  AfterLoopPlan p{{3, 17}, true, 5, 6};
  auto back = ParseAfterLoopPlan(ToJson(p).dump());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->check, (std::vector<int>{3, 17}));
  EXPECT_TRUE(back->witness);
  EXPECT_EQ(back->witness_key, 6u);
  EXPECT_FALSE(ParseAfterLoopPlan("go"));
  EXPECT_FALSE(ParseAfterLoopPlan(R"({"check": 3})"));
  EXPECT_FALSE(ParseAfterLoopPlan(R"({"check": [1], "witness": {"seed0": "x", "key": 1}})"));
}

TEST(Protocol, HarnessClaimsAreRecognised) {
  EXPECT_TRUE(IsHarnessClaim({{"event", "no_gpu"}}));
  EXPECT_TRUE(IsHarnessClaim({{"event", "peak_done"}}));
  EXPECT_TRUE(IsHarnessClaim({{"event", "timing_sample"}, {"phase", "peak"}}));
  EXPECT_TRUE(IsHarnessClaim({{"event", "error"}, {"stage", "harness"}}));
  EXPECT_FALSE(IsHarnessClaim({{"event", "timing_sample"}, {"phase", "candidate"}}));
  EXPECT_FALSE(IsHarnessClaim({{"event", "error"}, {"stage", "timing"}}));
  EXPECT_FALSE(IsHarnessClaim({{"event", "trial"}}));
}

TEST(Protocol, LoadingIndexSplitsTheHarnessWordFromTheCandidates) {
  std::vector<json> m = {{{"event", "device"}}, {{"event", "loading"}}, {{"event", "no_gpu"}}};
  EXPECT_EQ(LoadingIndex(m), 1u);
  m.erase(m.begin() + 1);
  EXPECT_EQ(LoadingIndex(m), 2u);
}

TEST(Protocol, EveryRoleIsNamedAndUnknownOnesAreRefused) {
  for (ChildRole r : {ChildRole::kProbe, ChildRole::kLoadCheck, ChildRole::kReference,
                      ChildRole::kCandidate, ChildRole::kTiming})
    EXPECT_EQ(ParseChildRole({{"role", ToString(r)}}), r);
  EXPECT_EQ(ParseChildRole(ProbeSpecJson()), ChildRole::kProbe);
  EXPECT_THROW(ParseChildRole({{"role", "root_shell"}}), std::invalid_argument);
  EXPECT_THROW(ParseChildRole({{"role", 3}}), std::invalid_argument);
  EXPECT_THROW(ParseChildRole(json::array()), std::invalid_argument);
}

ReferenceSpec AReferenceSpec() {
  ReferenceSpec s;
  s.family = "gemm";
  s.axes = {{"M", 64}, {"N", 64}, {"K", 64}};
  s.out_dir = "/tmp/x";
  s.seeds = {1, 2};
  return s;
}

TEST(Protocol, ReferenceSpecRoundTripsAndIsCheckedStrictly) {
  ReferenceSpec s = AReferenceSpec();
  s.set_seeds = {10, 10};
  ReferenceSpec back = ParseReferenceSpec(ToJson(s));
  EXPECT_EQ(back.seeds, s.seeds);
  EXPECT_EQ(back.set_seeds, s.set_seeds);
  EXPECT_FALSE(ToJson(AReferenceSpec()).contains("set_seeds"));
  for (const char* field : {"family", "axes", "out_dir", "seeds"}) {
    json j = ToJson(s);
    j.erase(field);
    EXPECT_THROW(ParseReferenceSpec(j), std::invalid_argument) << field;
  }
  json j = ToJson(s);
  j["set_seeds"] = {10};  // one per seed or none
  EXPECT_THROW(ParseReferenceSpec(j), std::invalid_argument);
  j = ToJson(s);
  j["seeds"] = json::array();
  EXPECT_THROW(ParseReferenceSpec(j), std::invalid_argument);
  j = ToJson(s);
  j["seeds"] = {"1"};
  EXPECT_THROW(ParseReferenceSpec(j), std::invalid_argument);
}

TEST(Protocol, CandidateRunSpecRoundTripsWithItsDefaultsDefinedHere) {
  CandidateRunSpec s;
  s.family = "gemm";
  s.axes = {{"M", 64}, {"N", 64}, {"K", 64}};
  s.out_dir = "/tmp/x";
  s.seeds = {5};
  s.shared_object = "/tmp/x/candidate.so";
  s.arch = "sm_90a";
  s.kernels = true;
  CandidateRunSpec back = ParseCandidateRunSpec(ToJson(s));
  EXPECT_EQ(back.arch, "sm_90a");
  EXPECT_TRUE(back.kernels);
  EXPECT_TRUE(back.write_outputs);
  EXPECT_TRUE(back.guard_pages);
  EXPECT_EQ(back.abi, "native");
  json j = ToJson(s);
  j.erase("guard_pages");
  j.erase("write_outputs");
  EXPECT_TRUE(ParseCandidateRunSpec(j).guard_pages);  // absent means the safe default
  for (const char* field : {"family", "axes", "out_dir", "seeds", "shared_object"}) {
    json k = ToJson(s);
    k.erase(field);
    EXPECT_THROW(ParseCandidateRunSpec(k), std::invalid_argument) << field;
  }
  j = ToJson(s);
  j["guard_pages"] = "no";  // a mistyped switch is refused, not read as "off"
  EXPECT_THROW(ParseCandidateRunSpec(j), std::invalid_argument);
}

}  // namespace
}  // namespace ptxbench
