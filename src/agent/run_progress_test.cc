#include "agent/run_progress.h"

#include <gtest/gtest.h>

namespace ptxbench {
namespace {

using namespace std::chrono_literals;

TEST(RunProgress, CountsAndEstimatesFromThisRunsPace) {
  auto t0 = RunProgress::Clock::time_point{} + 1000s;
  RunProgress p(3, 4, t0);  // 12 turns possible
  EXPECT_EQ(p.Line(t0), "run: 0/3 trajectories, 0/12 turns") << "no pace yet: no estimate";
  p.TurnDone();
  p.TurnDone();
  // 2 turns in 60 s, 10 left: 300 s.
  EXPECT_EQ(p.Line(t0 + 60s), "run: 0/3 trajectories, 2/12 turns, at most about 5 min left");
  p.EvaluationWaiting();
  p.EvaluationWaiting();
  p.EvaluationStarted();
  EXPECT_NE(p.Line(t0 + 60s).find("1 evaluation waiting for a GPU"), std::string::npos);
  p.EvaluationStarted();
  // A trajectory that reached its target after 2 turns gives its other 2 back.
  p.TrajectoryDone(2);
  EXPECT_EQ(p.Line(t0 + 60s), "run: 1/3 trajectories, 2/12 turns, at most about 4 min left");
}

TEST(RunProgress, ResumedTurnsCountAsDoneButNotAsPace) {
  auto t0 = RunProgress::Clock::time_point{} + 1000s;
  RunProgress p(2, 3, t0);
  p.Resumed(3, true);   // finished earlier
  p.Resumed(1, false);  // one turn kept
  EXPECT_EQ(p.Line(t0 + 10s), "run: 1/2 trajectories, 4/6 turns");
  p.TurnDone();
  EXPECT_EQ(p.Line(t0 + 10s), "run: 1/2 trajectories, 5/6 turns, at most about 10 s left");
  p.TurnDone();
  p.TrajectoryDone(3);
  EXPECT_EQ(p.Line(t0 + 20s), "run: 2/2 trajectories, 6/6 turns, done");
}

TEST(RunProgress, ShortDurations) {
  EXPECT_EQ(ShortDuration(0), "0 s");
  EXPECT_EQ(ShortDuration(89.4), "89 s");
  EXPECT_EQ(ShortDuration(180), "3 min");
  EXPECT_EQ(ShortDuration(4800), "80 min");
  EXPECT_EQ(ShortDuration(6000), "1 h 40 min");
  EXPECT_EQ(ShortDuration(-5), "0 s");
}

}  // namespace
}  // namespace ptxbench
