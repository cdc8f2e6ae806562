#include "measure/summary.h"

#include <gtest/gtest.h>

#include <utility>

namespace ptxbench {
namespace {

constexpr std::pair<const char*, double Summary::*> kStatistics[] = {
    {"median", &Summary::median}, {"p10", &Summary::p10}, {"p90", &Summary::p90},
    {"min", &Summary::min},       {"max", &Summary::max}, {"mean", &Summary::mean}};

// The count exactly, each statistic to within 4 ULPs (EXPECT_DOUBLE_EQ), named when it differs.
void ExpectSummary(const Summary& got, const Summary& want) {
  EXPECT_EQ(got.count, want.count);
  for (const auto& [name, statistic] : kStatistics)
    EXPECT_DOUBLE_EQ(got.*statistic, want.*statistic) << name;
}

TEST(Summary, InterpolatesPercentiles) {
  ExpectSummary(Summarize({5, 1, 4, 2, 3}),
                {.count = 5, .median = 3, .p10 = 1.4, .p90 = 4.6, .min = 1, .max = 5, .mean = 3});
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
