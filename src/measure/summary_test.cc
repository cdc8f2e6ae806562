#include "measure/summary.h"

#include <gtest/gtest.h>

namespace ptxbench {
namespace {

TEST(Summary, InterpolatesPercentiles) {
  Summary s = Summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.p10, 1.4);
  EXPECT_DOUBLE_EQ(s.p90, 4.6);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(Summarize({1, 2, 3, 4}).median, 2.5);
}

TEST(Summary, OneAndNoSamples) {
  Summary one = Summarize({7e-3});
  EXPECT_DOUBLE_EQ(one.median, 7e-3);
  EXPECT_DOUBLE_EQ(one.p10, 7e-3);
  EXPECT_DOUBLE_EQ(one.p90, 7e-3);
  Summary none = Summarize({});
  EXPECT_EQ(none.count, 0u);
  EXPECT_EQ(ToJson(none)["count"], 0);
}

TEST(Summary, AnOutlierMovesTheMeanNotTheMedian) {
  std::vector<double> v(49, 1e-3);
  v.push_back(1.0);
  Summary s = Summarize(v);
  EXPECT_DOUBLE_EQ(s.median, 1e-3);
  EXPECT_GT(s.mean, 1e-2);
  EXPECT_DOUBLE_EQ(s.p90, 1e-3);
}

}  // namespace
}  // namespace ptxbench
