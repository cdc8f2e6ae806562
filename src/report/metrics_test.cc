#include "report/metrics.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "common/error.h"

namespace ptxbench {
namespace {

TurnRow Turn(int turn, const std::string& outcome, std::optional<double> speedup = std::nullopt) {
  TurnRow r;
  r.turn = turn;
  r.outcome = outcome;
  r.speedup = speedup;
  return r;
}

TrajectoryRow Trajectory(std::vector<TurnRow> turns, const std::string& task = "gemm",
                         const std::string& model = "m") {
  TrajectoryRow t;
  t.model = model;
  t.arch = "hopper";
  t.task = task;
  t.pack = "p";
  t.turns = std::move(turns);
  return t;
}

// Five trajectories whose every metric is worked out by hand in the tests below.
//   A: 1 compile, 2 correct x0.5, 3 verified x1.2
//   B: 1 verified x0.9, 2 verified x0.8           (stops early: target reached)
//   C: 1 incorrect, 2 runtime, 3 memory, 4 extraction, 5 correct (not timed)
//   D: 1 rejected, 2 rule_violation, 3 model_error
//   E: 1 compile, 2 compile, 3 incorrect, 4 incorrect, 5 verified x3.0, 6 "infra_x"
Dataset FiveTrajectories() {
  Dataset d;
  d.trajectories.push_back(
      Trajectory({Turn(1, "compile"), Turn(2, "correct", 0.5), Turn(3, "verified", 1.2)}));
  d.trajectories.push_back(Trajectory({Turn(1, "verified", 0.9), Turn(2, "verified", 0.8)}));
  d.trajectories.push_back(Trajectory({Turn(1, "incorrect"), Turn(2, "runtime"), Turn(3, "memory"),
                                       Turn(4, "extraction"), Turn(5, "correct")}));
  d.trajectories.push_back(
      Trajectory({Turn(1, "rejected"), Turn(2, "rule_violation"), Turn(3, "model_error")}));
  d.trajectories.push_back(
      Trajectory({Turn(1, "compile"), Turn(2, "compile"), Turn(3, "incorrect"),
                  Turn(4, "incorrect"), Turn(5, "verified", 3.0), Turn(6, "infra_x")}));
  return d;
}

GroupMetrics OnlyGroup(const Dataset& d, const MetricOptions& o = {}) {
  std::vector<GroupMetrics> g = ComputeMetrics(d, o);
  EXPECT_EQ(g.size(), 1u);
  return g.at(0);
}

const PassAtKResult* FindK(const TurnLimitMetrics& m, int k) {
  for (const PassAtKResult& p : m.pass_at_k) {
    if (p.k == k) return &p;
  }
  return nullptr;
}

void ExpectBrackets(const std::optional<ConfidenceInterval>& ci, double point) {
  ASSERT_TRUE(ci.has_value());
  EXPECT_LE(ci->low, point);
  EXPECT_GE(ci->high, point);
}

void ExpectPoint(const std::optional<ConfidenceInterval>& ci, double point) {
  ASSERT_TRUE(ci.has_value());
  EXPECT_DOUBLE_EQ(ci->low, point);
  EXPECT_DOUBLE_EQ(ci->high, point);
}

TEST(PassAtK, MatchesTheBinomialFormula) {
  // 1 - C(3,2)/C(5,2) = 1 - 3/10 = 0.7.
  EXPECT_NEAR(PassAtK(5, 2, 2), 0.7, 1e-12);
  // 1 - C(6,3)/C(10,3) = 1 - 20/120 = 5/6.
  EXPECT_NEAR(PassAtK(10, 4, 3), 5.0 / 6.0, 1e-12);
  // k = 1 reduces to c/n.
  for (int c = 0; c <= 7; ++c) EXPECT_NEAR(PassAtK(7, c, 1), c / 7.0, 1e-12);
}

TEST(PassAtK, EdgesAndRejectedArguments) {
  EXPECT_EQ(PassAtK(5, 0, 3), 0.0);       // no correct trajectory: no subset has one
  EXPECT_EQ(PassAtK(5, 5, 3), 1.0);       // all correct
  EXPECT_EQ(PassAtK(5, 3, 3), 1.0);       // n - c = 2 < k = 3: every 3-subset holds a correct one
  EXPECT_THROW(PassAtK(5, 2, 6), Error);  // k > n: the estimator is undefined
  EXPECT_THROW(PassAtK(5, 2, 0), Error);
  EXPECT_THROW(PassAtK(5, 6, 1), Error);
}

TEST(PassAtK, LargeCountsDoNotOverflow) {
  // C(100000, 10) overflows 64 bits; compare with the same ratio taken through lgamma.
  int n = 100000, c = 50000, k = 10;
  double log_ratio = std::lgamma(n - c + 1.0) - std::lgamma(n - c - k + 1.0) -
                     std::lgamma(n + 1.0) + std::lgamma(n - k + 1.0);
  EXPECT_NEAR(PassAtK(n, c, k), 1 - std::exp(log_ratio), 1e-9);
}

TEST(MedianOf, OddEvenAndEmpty) {
  EXPECT_EQ(MedianOf({3, 1, 2}), 2.0);
  EXPECT_EQ(MedianOf({4, 1, 3, 2}), 2.5);  // mean of the middle values 2 and 3
  EXPECT_EQ(MedianOf({7}), 7.0);
  EXPECT_FALSE(MedianOf({}).has_value());
}

TEST(Metrics, CorrectAndVerifiedWithinEachLimit) {
  MetricOptions o;
  o.turn_limits = {1, 2, 4, 8};
  GroupMetrics g = OnlyGroup(FiveTrajectories(), o);
  EXPECT_EQ(g.trajectories, 5);
  ASSERT_EQ(g.by_limit.size(), 4u);
  struct Want {
    int correct, verified;  // of 5
  };
  const Want want[] = {
      {1, 1},  // T=1: only B is correct (verified at turn 1)
      {2, 1},  // T=2: A (correct at 2, not verified until 3) and B; verified only B
      {2, 2},  // T=4: A verified at 3; C's and E's turn 5 are beyond the limit
      {4, 3},  // T=8: A, B, C (turn 5, correct), E (turn 5, verified); verified A, B, E
  };
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE("T=" + std::to_string(o.turn_limits[i]));
    EXPECT_EQ(g.by_limit[i].correct.count, want[i].correct);
    EXPECT_EQ(g.by_limit[i].verified.count, want[i].verified);
  }
  EXPECT_EQ(g.by_limit[0].turn_limit, 1);
  EXPECT_EQ(g.by_limit[0].correct.total, 5);
  EXPECT_DOUBLE_EQ(g.by_limit[0].correct.share, 0.2);
  EXPECT_DOUBLE_EQ(g.by_limit[3].correct.share, 0.8);
  EXPECT_DOUBLE_EQ(g.by_limit[3].verified.share, 0.6);
}

TEST(Metrics, BestSpeedupsWithinEachLimit) {
  GroupMetrics g = OnlyGroup(FiveTrajectories());  // limits 1, 4, 8
  // T=1: only B's turn 1 (x0.9) is correct and timed.
  EXPECT_EQ(g.by_limit[0].best_speedup, 0.9);
  EXPECT_EQ(g.by_limit[0].per_trajectory_best.trajectories, 1);
  EXPECT_EQ(g.by_limit[0].per_trajectory_best.median, 0.9);
  // T=4: A's best max(0.5, 1.2) = 1.2, B's max(0.9, 0.8) = 0.9. Group max 1.2; the median of
  // an even count is the mean of the middle two: (0.9 + 1.2) / 2 = 1.05, as is the mean.
  EXPECT_EQ(g.by_limit[1].best_speedup, 1.2);
  EXPECT_EQ(g.by_limit[1].per_trajectory_best.trajectories, 2);
  EXPECT_NEAR(*g.by_limit[1].per_trajectory_best.median, 1.05, 1e-12);
  EXPECT_NEAR(*g.by_limit[1].per_trajectory_best.mean, 1.05, 1e-12);
  // T=8: E's x3.0 joins; C is correct but untimed, so it is excluded: {0.9, 1.2, 3.0}:
  // max 3.0, median 1.2, mean 5.1 / 3 = 1.7.
  EXPECT_EQ(g.by_limit[2].best_speedup, 3.0);
  EXPECT_EQ(g.by_limit[2].per_trajectory_best.trajectories, 3);
  EXPECT_NEAR(*g.by_limit[2].per_trajectory_best.median, 1.2, 1e-12);
  EXPECT_NEAR(*g.by_limit[2].per_trajectory_best.mean, 1.7, 1e-12);
}

TEST(Metrics, EvenCountMedianDiffersFromMean) {
  // Four trajectories with best speedups 1, 2, 4, 10: median (2 + 4) / 2 = 3, mean 17 / 4.
  Dataset d;
  for (double s : {4.0, 1.0, 10.0, 2.0})
    d.trajectories.push_back(Trajectory({Turn(1, "correct", s)}));
  GroupMetrics g = OnlyGroup(d);
  EXPECT_DOUBLE_EQ(*g.by_limit[0].per_trajectory_best.median, 3.0);
  EXPECT_DOUBLE_EQ(*g.by_limit[0].per_trajectory_best.mean, 4.25);
  EXPECT_EQ(g.by_limit[0].best_speedup, 10.0);
}

TEST(Metrics, UntimedCorrectCountsForCorrectnessOnly) {
  // A correct turn without a speedup, and an incorrect turn that carries one (which must not
  // count: speedups are only of correct turns).
  Dataset d;
  d.trajectories.push_back(Trajectory({Turn(1, "incorrect", 5.0), Turn(2, "correct")}));
  GroupMetrics g = OnlyGroup(d);
  const TurnLimitMetrics& t8 = g.by_limit[2];
  EXPECT_EQ(t8.correct.count, 1);
  EXPECT_FALSE(t8.best_speedup.has_value());
  EXPECT_EQ(t8.per_trajectory_best.trajectories, 0);
  EXPECT_FALSE(t8.per_trajectory_best.median.has_value());
  EXPECT_FALSE(t8.per_trajectory_best.mean.has_value());
  EXPECT_FALSE(t8.per_trajectory_best.median_ci.has_value());
}

TEST(Metrics, VerifiedNeedsTheVerifiedOutcome) {
  // A "correct" turn whose record fields look like credit is still not Verified().
  TurnRow r = Turn(1, "correct", 1.0);
  r.arch_tag = "H";
  r.verification = "verified";
  Dataset d;
  d.trajectories.push_back(Trajectory({r}));
  GroupMetrics g = OnlyGroup(d);
  EXPECT_EQ(g.by_limit[0].correct.count, 1);
  EXPECT_EQ(g.by_limit[0].verified.count, 0);
}

TEST(Metrics, VerifiedUnderThePapersRuleOnly) {
  // Ours is stricter: a correct turn with the paper's tag H but none of ours counts under the
  // paper's rule only. An old record (no paper's tag) counts the same under both.
  TurnRow paper_only = Turn(1, "correct", 1.0);
  paper_only.upstream_arch_tag = "H";
  TurnRow old = Turn(2, "verified", 2.0);
  old.arch_tag = "H";
  TurnRow both = Turn(1, "verified", 1.5);
  both.arch_tag = "H";
  both.upstream_arch_tag = "H";
  TurnRow no_tag = Turn(1, "correct", 0.5);
  no_tag.upstream_arch_tag = "";
  TurnRow failed_with_tag = Turn(1, "incorrect");  // a tag never counts without correctness
  failed_with_tag.upstream_arch_tag = "H";
  Dataset d;
  d.trajectories.push_back(Trajectory({paper_only}));
  d.trajectories.push_back(Trajectory({Turn(1, "compile"), old}));
  d.trajectories.push_back(Trajectory({both}));
  d.trajectories.push_back(Trajectory({no_tag}));
  d.trajectories.push_back(Trajectory({failed_with_tag}));
  GroupMetrics g = OnlyGroup(d);
  const TurnLimitMetrics& t1 = g.by_limit[0];
  EXPECT_EQ(t1.correct.count, 3);
  EXPECT_EQ(t1.verified.count, 1);           // both
  EXPECT_EQ(t1.verified_upstream.count, 2);  // paper_only, both
  EXPECT_DOUBLE_EQ(t1.verified_upstream.share, 0.4);
  ExpectBrackets(t1.verified_upstream.ci, 0.4);
  const TurnLimitMetrics& t4 = g.by_limit[1];
  EXPECT_EQ(t4.verified.count, 2);  // and old, at turn 2
  EXPECT_EQ(t4.verified_upstream.count, 3);
  nlohmann::json j = ToJson(g);
  EXPECT_EQ(j["by_turn_limit"][0]["verified"]["count"], 1);
  EXPECT_EQ(j["by_turn_limit"][0]["verified_upstream"]["count"], 2);
  EXPECT_EQ(j["by_turn_limit"][0]["verified_upstream"]["ci"].size(), 2u);

  // Without any paper's tag, the two rules agree everywhere, intervals included.
  GroupMetrics five = OnlyGroup(FiveTrajectories());
  for (const TurnLimitMetrics& m : five.by_limit) {
    EXPECT_EQ(m.verified_upstream.count, m.verified.count);
    ASSERT_TRUE(m.verified_upstream.ci && m.verified.ci);
    EXPECT_DOUBLE_EQ(m.verified_upstream.ci->low, m.verified.ci->low);
    EXPECT_DOUBLE_EQ(m.verified_upstream.ci->high, m.verified.ci->high);
  }
}

TEST(Metrics, TurnsCountByNumberNotPosition) {
  // Rows out of order: the correct row is turn 5, so it is beyond T=4 though listed first.
  Dataset d;
  d.trajectories.push_back(Trajectory({Turn(5, "correct", 2.0), Turn(1, "compile")}));
  GroupMetrics g = OnlyGroup(d);
  EXPECT_EQ(g.by_limit[1].correct.count, 0);
  EXPECT_EQ(g.by_limit[2].correct.count, 1);
  EXPECT_EQ(g.first_correct_turn, (std::map<int, int>{{5, 1}}));
}

TEST(Metrics, PassAtKPerLimit) {
  GroupMetrics g = OnlyGroup(FiveTrajectories());  // n = 5; c = 1, 2, 4 at T = 1, 4, 8
  // pass@1 = c / n.
  EXPECT_DOUBLE_EQ(FindK(g.by_limit[0], 1)->value, 0.2);
  EXPECT_DOUBLE_EQ(FindK(g.by_limit[1], 1)->value, 0.4);
  EXPECT_DOUBLE_EQ(FindK(g.by_limit[2], 1)->value, 0.8);
  // pass@4, T=1: 1 - C(4,4)/C(5,4) = 1 - 1/5 = 0.8; T=4 and T=8: n - c < 4, so 1.
  EXPECT_NEAR(FindK(g.by_limit[0], 4)->value, 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(FindK(g.by_limit[1], 4)->value, 1.0);
  EXPECT_DOUBLE_EQ(FindK(g.by_limit[2], 4)->value, 1.0);
}

TEST(Metrics, PassAtKTableMatchesTheFormula) {
  // n = 10, c = 4, k = 3: 1 - C(6,3)/C(10,3) = 1 - 20/120 = 5/6, through ComputeMetrics' table.
  Dataset d;
  for (int i = 0; i < 10; ++i) {
    d.trajectories.push_back(Trajectory({Turn(1, i < 4 ? "correct" : "incorrect")}));
  }
  MetricOptions o;
  o.pass_k = {3};
  GroupMetrics g = OnlyGroup(d, o);
  EXPECT_NEAR(FindK(g.by_limit[0], 3)->value, 5.0 / 6.0, 1e-12);
  ExpectBrackets(FindK(g.by_limit[0], 3)->ci, 5.0 / 6.0);
}

TEST(Metrics, PassAtKAboveTheTrajectoryCountIsLeftOut) {
  Dataset d;
  for (int i = 0; i < 3; ++i) d.trajectories.push_back(Trajectory({Turn(1, "correct")}));
  MetricOptions o;
  o.pass_k = {1, 3, 4};
  GroupMetrics g = OnlyGroup(d, o);
  ASSERT_EQ(g.by_limit[0].pass_at_k.size(), 2u);  // k = 4 > n = 3 is not reported
  EXPECT_NE(FindK(g.by_limit[0], 3), nullptr);
  EXPECT_EQ(FindK(g.by_limit[0], 4), nullptr);
}

TEST(Metrics, FirstCorrectTurnHistogram) {
  // A first correct at 2, B at 1, C at 5, E at 5; D never.
  GroupMetrics g = OnlyGroup(FiveTrajectories());
  EXPECT_EQ(g.first_correct_turn, (std::map<int, int>{{1, 1}, {2, 1}, {5, 2}}));
  EXPECT_EQ(g.never_correct, 1);
}

TEST(Metrics, OutcomesPerTurn) {
  GroupMetrics g = OnlyGroup(FiveTrajectories());
  ASSERT_EQ(g.outcomes_by_turn.size(), 6u);
  auto expect = [&](int turn, int reached, std::map<std::string, int> nonzero) {
    const TurnOutcomes& o = g.outcomes_by_turn[turn - 1];
    EXPECT_EQ(o.turn, turn);
    EXPECT_EQ(o.reached, reached);
    EXPECT_EQ(o.counts.size(), OutcomeCategories().size());  // zeros are present too
    for (const auto& [name, count] : o.counts) {
      int want = nonzero.count(name) ? nonzero[name] : 0;
      EXPECT_EQ(count, want) << "turn " << turn << " outcome " << name;
    }
  };
  // Read column-wise off the fixture's A..E lines.
  expect(1, 5, {{"compile", 2}, {"verified", 1}, {"incorrect", 1}, {"rejected", 1}});
  expect(2, 5,
         {{"correct", 1}, {"verified", 1}, {"runtime", 1}, {"rule_violation", 1}, {"compile", 1}});
  expect(3, 4, {{"verified", 1}, {"memory", 1}, {"model_error", 1}, {"incorrect", 1}});
  expect(4, 2, {{"extraction", 1}, {"incorrect", 1}});
  expect(5, 2, {{"correct", 1}, {"verified", 1}});
  expect(6, 1, {{"other", 1}});  // "infra_x" is not a category
}

TEST(Metrics, TokensPerTurn) {
  // Four turns: prompt 100, 200, 300, 1000 -> mean 400, median (200 + 300) / 2 = 250;
  // completion 10, 20, 30, 40 -> mean 25, median 25; reasoning 0, 0, 0, 8 -> mean 2, median 0.
  auto tokens = [](int turn, int64_t p, int64_t c, int64_t r) {
    TurnRow t = Turn(turn, "compile");
    t.prompt_tokens = p;
    t.completion_tokens = c;
    t.reasoning_tokens = r;
    return t;
  };
  Dataset d;
  d.trajectories.push_back(Trajectory({tokens(1, 100, 10, 0), tokens(2, 1000, 40, 8)}));
  d.trajectories.push_back(Trajectory({tokens(1, 300, 30, 0), tokens(2, 200, 20, 0)}));
  GroupMetrics g = OnlyGroup(d);
  EXPECT_EQ(g.tokens.turns, 4);
  EXPECT_DOUBLE_EQ(g.tokens.prompt.mean, 400);
  EXPECT_DOUBLE_EQ(g.tokens.prompt.median, 250);
  EXPECT_DOUBLE_EQ(g.tokens.completion.mean, 25);
  EXPECT_DOUBLE_EQ(g.tokens.completion.median, 25);
  EXPECT_DOUBLE_EQ(g.tokens.reasoning.mean, 2);
  EXPECT_DOUBLE_EQ(g.tokens.reasoning.median, 0);
}

TEST(Metrics, GroupsAreSortedByKey) {
  Dataset d;
  d.trajectories.push_back(Trajectory({Turn(1, "compile")}, "b", "m2"));
  d.trajectories.push_back(Trajectory({Turn(1, "compile")}, "z", "m1"));
  d.trajectories.push_back(Trajectory({Turn(1, "correct")}, "a", "m2"));
  d.trajectories.push_back(Trajectory({Turn(1, "compile")}, "a", "m2"));
  std::vector<GroupMetrics> g = ComputeMetrics(d, {});
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].key.model + "/" + g[0].key.task, "m1/z");
  EXPECT_EQ(g[1].key.model + "/" + g[1].key.task, "m2/a");
  EXPECT_EQ(g[1].trajectories, 2);
  EXPECT_EQ(g[2].key.model + "/" + g[2].key.task, "m2/b");
}

TEST(Metrics, InvalidOptionsAreRejected) {
  Dataset d = FiveTrajectories();
  MetricOptions o;
  o.turn_limits = {0};
  EXPECT_THROW(ComputeMetrics(d, o), Error);
  o = {};
  o.pass_k = {0};
  EXPECT_THROW(ComputeMetrics(d, o), Error);
  o = {};
  o.confidence = 1.0;
  EXPECT_THROW(ComputeMetrics(d, o), Error);
  o = {};
  o.bootstrap_resamples = -1;
  EXPECT_THROW(ComputeMetrics(d, o), Error);
}

TEST(Bootstrap, IntervalsBracketThePointEstimates) {
  GroupMetrics g = OnlyGroup(FiveTrajectories());
  for (const TurnLimitMetrics& m : g.by_limit) {
    ExpectBrackets(m.correct.ci, m.correct.share);
    ExpectBrackets(m.verified.ci, m.verified.share);
    ExpectBrackets(m.per_trajectory_best.median_ci, *m.per_trajectory_best.median);
    for (const PassAtKResult& p : m.pass_at_k) ExpectBrackets(p.ci, p.value);
  }
  // T=8, c=4 of 5: resampled counts are Binomial(5, 0.8); P(count <= 1) = 0.0067 < 0.025 <
  // P(count <= 2) = 0.058, so the 2.5 % quantile is 2/5 (with interpolation it cannot fall
  // below 1/5), and P(count = 5) = 0.33 > 0.025 makes the upper end 1.
  EXPECT_GE(g.by_limit[2].correct.ci->low, 0.2);
  EXPECT_LE(g.by_limit[2].correct.ci->low, 0.4);
  EXPECT_DOUBLE_EQ(g.by_limit[2].correct.ci->high, 1.0);
}

TEST(Bootstrap, CollapsesWhenAllTrajectoriesAgree) {
  Dataset d;
  for (int i = 0; i < 6; ++i) d.trajectories.push_back(Trajectory({Turn(1, "verified", 1.5)}));
  GroupMetrics g = OnlyGroup(d);
  ExpectPoint(g.by_limit[0].correct.ci, 1.0);
  ExpectPoint(g.by_limit[0].verified.ci, 1.0);
  ExpectPoint(g.by_limit[0].per_trajectory_best.median_ci, 1.5);
  ExpectPoint(FindK(g.by_limit[0], 4)->ci, 1.0);

  Dataset none;
  for (int i = 0; i < 6; ++i) none.trajectories.push_back(Trajectory({Turn(1, "compile")}));
  GroupMetrics z = OnlyGroup(none);
  ExpectPoint(z.by_limit[0].correct.ci, 0.0);
  ExpectPoint(FindK(z.by_limit[0], 1)->ci, 0.0);
}

Dataset HalfCorrect(int n) {
  Dataset d;
  for (int i = 0; i < n; ++i) {
    d.trajectories.push_back(
        Trajectory({i % 2 ? Turn(1, "correct", 1.0 + i / 100.0) : Turn(1, "incorrect")}));
  }
  return d;
}

TEST(Bootstrap, KnownCaseIsNearTheNormalApproximation) {
  // n = 100, c = 50: the share's standard error is sqrt(0.25 / 100) = 0.05, so a 95 % interval
  // is about 0.5 -/+ 1.96 * 0.05 = [0.402, 0.598]; the percentile bootstrap should be close.
  GroupMetrics g = OnlyGroup(HalfCorrect(100));
  const Share& s = g.by_limit[0].correct;
  EXPECT_DOUBLE_EQ(s.share, 0.5);
  EXPECT_GT(s.ci->low, 0.38);
  EXPECT_LT(s.ci->low, 0.43);
  EXPECT_GT(s.ci->high, 0.57);
  EXPECT_LT(s.ci->high, 0.62);
}

TEST(Bootstrap, DeterministicForASeedAndIndependentOfOtherGroups) {
  Dataset d = HalfCorrect(200);
  GroupMetrics a = OnlyGroup(d), b = OnlyGroup(d);
  EXPECT_EQ(ToJson(a), ToJson(b));

  MetricOptions other;
  other.seed = 7;
  EXPECT_NE(ToJson(OnlyGroup(d, other)), ToJson(a));

  // Another group in the dataset does not move this group's intervals.
  Dataset more = d;
  more.trajectories.push_back(Trajectory({Turn(1, "correct")}, "another-task"));
  std::vector<GroupMetrics> both = ComputeMetrics(more, {});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(ToJson(both[1]), ToJson(a));  // "gemm" sorts after "another-task"
}

TEST(Bootstrap, NoResamplesNoIntervals) {
  MetricOptions o;
  o.bootstrap_resamples = 0;
  GroupMetrics g = OnlyGroup(FiveTrajectories(), o);
  EXPECT_FALSE(g.by_limit[2].correct.ci.has_value());
  EXPECT_FALSE(g.by_limit[2].per_trajectory_best.median_ci.has_value());
  EXPECT_FALSE(g.by_limit[2].pass_at_k[0].ci.has_value());
}

TEST(Json, CarriesEveryMetric) {
  nlohmann::json j = ToJson(OnlyGroup(FiveTrajectories()));
  EXPECT_EQ(j["task"], "gemm");
  EXPECT_EQ(j["trajectories"], 5);
  EXPECT_EQ(j["bootstrap_resamples"], 2000);
  const nlohmann::json& t8 = j["by_turn_limit"][2];
  EXPECT_EQ(t8["turn_limit"], 8);
  EXPECT_EQ(t8["correct"]["count"], 4);
  EXPECT_EQ(t8["verified"]["count"], 3);
  EXPECT_EQ(t8["best_speedup"], 3.0);
  EXPECT_EQ(t8["per_trajectory_best_speedup"]["trajectories"], 3);
  EXPECT_EQ(t8["correct"]["ci"].size(), 2u);
  EXPECT_EQ(t8["pass_at_k"][1]["k"], 4);
  EXPECT_EQ(j["first_correct_turn"]["by_turn"]["5"], 2);
  EXPECT_EQ(j["first_correct_turn"]["never"], 1);
  EXPECT_EQ(j["outcomes_by_turn"][5]["counts"]["other"], 1);
  EXPECT_EQ(j["tokens"]["turns"], 19);  // 3 + 2 + 5 + 3 + 6

  Dataset untimed;
  untimed.trajectories.push_back(Trajectory({Turn(1, "correct")}));
  nlohmann::json u = ToJson(ComputeMetrics(untimed, {}));
  EXPECT_TRUE(u[0]["by_turn_limit"][0]["best_speedup"].is_null());
  EXPECT_TRUE(u[0]["by_turn_limit"][0]["per_trajectory_best_speedup"]["median_ci"].is_null());
}

// 12 500 trajectories of 8 turns = 100 000 turns, split into `groups` groups, with outcomes
// and speedups drawn from a fixed generator.
Dataset Synthetic(int groups) {
  std::mt19937_64 rng(1);
  const char* outcomes[] = {"compile", "incorrect", "runtime", "correct", "verified"};
  Dataset d;
  for (int i = 0; i < 12500; ++i) {
    int g = i % groups;
    std::vector<TurnRow> turns;
    for (int t = 1; t <= 8; ++t) {
      TurnRow r = Turn(t, outcomes[rng() % 5]);
      if (r.Correct()) r.speedup = 0.1 + (rng() % 1000) / 250.0;
      r.prompt_tokens = 1000 + rng() % 5000;
      turns.push_back(r);
    }
    d.trajectories.push_back(Trajectory(std::move(turns), "task" + std::to_string(g % 50),
                                        "model" + std::to_string(g / 50)));
  }
  return d;
}

void ExpectFast(int groups) {
  Dataset d = Synthetic(groups);
  auto start = std::chrono::steady_clock::now();
  std::vector<GroupMetrics> m = ComputeMetrics(d, {});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ timing   ] 100000 turns in %d groups: %.3f s\n", groups, seconds);
  EXPECT_EQ(m.size(), static_cast<size_t>(groups));
  EXPECT_LT(seconds, 2.0);  // the whole report has 2 s; measured here 0.2-0.6 s
}

// Performance budgets: the ctest entry report_metrics_test_perf (label perf) runs them, and
// scripts/test.sh reports their results without failing on them.
TEST(MetricsPerf, HundredThousandTurnsInManySmallGroups) { ExpectFast(1000); }
TEST(MetricsPerf, HundredThousandTurnsInOneGroup) { ExpectFast(1); }

}  // namespace
}  // namespace ptxbench
