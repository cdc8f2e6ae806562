#include "common/strings.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

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
  const std::vector<std::pair<double, std::string>> cases = {
      {42, "42"}, {1234, "1.23k"}, {573412, "573k"}, {294e6, "294M"}, {1.5e9, "1.5G"}};
  for (const auto& [n, text] : cases) EXPECT_EQ(HumanCount(n), text) << n;
}

TEST(Strings, ValidUtf8KeepsGoodTextAndReplacesEachBadSequence) {
  const std::string fffd = "\xEF\xBF\xBD";
  // Valid text, ASCII and multibyte (2, 3 and 4 bytes), comes back unchanged.
  for (const std::string& good : {std::string(""), std::string("plain ascii\n\t"),
                                  std::string("caf\xC3\xA9 \xE2\x86\x92 \xE2\x82\xAC"),
                                  std::string("\xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF \xED\x9F\xBF"),
                                  std::string("nul\0inside", 10)}) {
    EXPECT_EQ(ValidUtf8(good), good);
    EXPECT_TRUE(IsValidUtf8(ValidUtf8(good)));
  }
  // A lone 0xFF.
  EXPECT_EQ(ValidUtf8("a\xFFz"), "a" + fffd + "z");
  // A 3-byte sequence cut short at the end: one replacement for what there is of it.
  EXPECT_EQ(ValidUtf8("x\xE2\x82"), "x" + fffd);
  EXPECT_EQ(ValidUtf8("\xE2"), fffd);
  // An overlong '/' (C0 AF): C0 never starts a sequence and AF is a stray continuation byte.
  EXPECT_EQ(ValidUtf8("\xC0\xAF"), fffd + fffd);
  EXPECT_EQ(ValidUtf8("\xE0\x80\xAF"), fffd + fffd + fffd);  // overlong 3-byte form
  // A surrogate (U+D800 as ED A0 80): ED cannot be followed by A0, and the rest is stray.
  EXPECT_EQ(ValidUtf8("\xED\xA0\x80"), fffd + fffd + fffd);
  // Above U+10FFFF, and a continuation byte alone.
  EXPECT_EQ(ValidUtf8("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);
  EXPECT_EQ(ValidUtf8("\x80ok"), fffd + "ok");
  // A good sequence right after a truncated one is kept whole.
  EXPECT_EQ(ValidUtf8("\xF0\x9F\xC3\xA9"), fffd + "\xC3\xA9");
  // Whatever the input, the output is valid.
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_TRUE(IsValidUtf8(ValidUtf8(all + all)));
}

}  // namespace
}  // namespace ptxbench

namespace ptxbench {
namespace {

TEST(Csv, FieldsAreQuotedOnlyWhenTheyMustBeAndRowsJoinThem) {
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"plain text; more", "plain text; more"},
      {"a,b", "\"a,b\""},
      {"say \"hi\"", "\"say \"\"hi\"\"\""},
      {"two\nlines", "\"two\nlines\""},
      {"cr\rhere", "\"cr\rhere\""},
      {"", ""},
  };
  for (const auto& [field, quoted] : fields) EXPECT_EQ(CsvField(field), quoted) << field;
  EXPECT_EQ(CsvRow({"gemm", "M=93;N=128", "plan {\"algo\": 1, \"tile\": 2}", ""}),
            "gemm,M=93;N=128,\"plan {\"\"algo\"\": 1, \"\"tile\"\": 2}\",\n");
}

}  // namespace
// Bytes above 0x7f (a char is signed here) still give two digits each, as a UUID needs.
TEST(Strings, LowerHexGivesTwoDigitsPerByte) {
  EXPECT_EQ(LowerHex(std::string("\x00\x0a\xff\x80", 4)), "000aff80");
  EXPECT_EQ(LowerHex(""), "");
}

}  // namespace ptxbench
