#include "common/strings.h"

#include <gtest/gtest.h>

namespace ptxbench {
namespace {

TEST(Strings, SplitKeepsEmptyFields) {
  EXPECT_EQ(Split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(SplitLines("x\r\ny\n"), (std::vector<std::string>{"x", "y"}));
}

TEST(Strings, ParseInt64RejectsPartialNumbers) {
  long long v;
  EXPECT_TRUE(ParseInt64("8192", &v));
  EXPECT_EQ(v, 8192);
  EXPECT_FALSE(ParseInt64("81x", &v));
  EXPECT_FALSE(ParseInt64("", &v));
  EXPECT_FALSE(ParseInt64(" 1", &v));
  EXPECT_FALSE(ParseInt64("99999999999999999999", &v));
}

TEST(Strings, TailLinesSaysHowManyWereCut) {
  EXPECT_EQ(TailLines("1\n2\n3\n", 2), "[1 earlier lines cut]\n2\n3\n");
  EXPECT_EQ(Trim("  a b \n"), "a b");
  EXPECT_EQ(Join({"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(Join({}), "");
  EXPECT_EQ(Join({"x"}, "+"), "x");
  EXPECT_EQ(Truncate("abcdef", 3), "abc…");
}

}  // namespace
}  // namespace ptxbench

namespace ptxbench {
namespace {
TEST(Strings, HumanCountKeepsThreeDigits) {
  EXPECT_EQ(HumanCount(42), "42");
  EXPECT_EQ(HumanCount(1234), "1.23k");
  EXPECT_EQ(HumanCount(573412), "573k");
  EXPECT_EQ(HumanCount(294e6), "294M");
  EXPECT_EQ(HumanCount(1.5e9), "1.5G");
}
}  // namespace
}  // namespace ptxbench
