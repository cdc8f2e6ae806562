#include "common/bounded_json.h"

#include <gtest/gtest.h>

#include <string>

#include "common/error.h"

namespace ptxbench {
namespace {

std::string Nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(BoundedJson, ADocumentWithinTheLimitsParses) {
  EXPECT_EQ(ParseBoundedJson(R"({"a": [1, {"b": "]]]"}]})", "x")["a"][1]["b"], "]]]");
  EXPECT_NO_THROW(ParseBoundedJson(Nested(64), "x"));
}

TEST(BoundedJson, DeepNestingIsRefusedWithoutRecursion) {
  // 100,000 arrays: the service's crash of issue 35. Refused at the 65th, with the limit named.
  try {
    ParseBoundedJson(Nested(100000), "the request body");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    EXPECT_NE(std::string(e.what()).find("the request body: nests deeper than 64"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ParseBoundedJson(Nested(65), "x"), Error);
  EXPECT_THROW(ParseBoundedJson(std::string(3000000, '{'), "x"), Error);  // also unterminated
  EXPECT_TRUE(ParseBoundedJsonOrDiscarded(Nested(100000)).is_discarded());
  JsonLimits shallow;
  shallow.max_depth = 2;
  EXPECT_THROW(ParseBoundedJson(R"({"a": {"b": {}}})", "x", shallow), Error);
  EXPECT_NO_THROW(ParseBoundedJson(R"({"a": {"b": 1}})", "x", shallow));
}

TEST(BoundedJson, SizeAndSyntaxAreRefusedWithAClearError) {
  JsonLimits small;
  small.max_bytes = 10;
  EXPECT_THROW(ParseBoundedJson(R"({"a": "0123456789"})", "x", small), Error);
  try {
    ParseBoundedJson("{\"a\": ", "runs/x/run.json");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("runs/x/run.json: not valid JSON"), std::string::npos);
  }
  EXPECT_TRUE(ParseBoundedJsonOrDiscarded("not json").is_discarded());
}

TEST(BoundedJson, AValueCountLimitRefusesWideDocumentsAsTheyAreRead) {
  JsonLimits few;
  few.max_values = 5;
  // 5 values: the object, the array, three numbers; keys are not values.
  EXPECT_NO_THROW(ParseBoundedJson(R"({"a": [1, 2], "b": 3})", "x", few));
  EXPECT_THROW(ParseBoundedJson(R"({"a": [1, 2], "b": 3, "c": 4})", "x", few), Error);
  std::string wide = "[";
  for (int i = 0; i < 300000; ++i) wide += "0,";
  wide += "0]";
  try {
    ParseBoundedJson(wide, "the body", few);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the body: holds more than 5 values"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(ParseBoundedJsonOrDiscarded(wide, few).is_discarded());
  EXPECT_EQ(ParseBoundedJson(wide, "x").size(), 300001u) << "no limit by default";
}

}  // namespace
}  // namespace ptxbench
