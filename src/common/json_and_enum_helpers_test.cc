// The two writing helpers that many modules lean on: one name table per enum, and a JSON writer
// whose keys are the struct's own field names.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/enum_names.h"
#include "common/json_fields.h"

namespace ptxbench {
namespace {

enum class Colour { kRed, kGreen, kBlue, kUnlisted };
constexpr EnumName<Colour> kColourNames[] = {
    {Colour::kRed, "red"}, {Colour::kGreen, "green"}, {Colour::kBlue, "blue"}};

TEST(EnumNames, ReadBothWaysAndNameTheUnknown) {
  EXPECT_EQ(NameOf<Colour>(kColourNames, Colour::kGreen, "?"), "green");
  EXPECT_EQ(NameOf<Colour>(kColourNames, Colour::kUnlisted, "?"), "?");
  EXPECT_EQ(FindValue<Colour>(kColourNames, "blue"), Colour::kBlue);
  EXPECT_FALSE(FindValue<Colour>(kColourNames, "Blue").has_value());  // exact, case and all
  EXPECT_EQ(ValueOf<Colour>(kColourNames, "mauve", Colour::kUnlisted), Colour::kUnlisted);
  for (const auto& [value, name] : kColourNames)  // every row reads back to itself
    EXPECT_EQ(
        ValueOf<Colour>(kColourNames, NameOf<Colour>(kColourNames, value, ""), Colour::kUnlisted),
        value);
}

TEST(EnumNames, ChoicesListEveryNameForAnErrorMessage) {
  EXPECT_EQ(ChoicesOf<Colour>(kColourNames), "red, green or blue");
  constexpr EnumName<Colour> kOne[] = {{Colour::kRed, "red"}};
  EXPECT_EQ(ChoicesOf<Colour>(kOne), "red");
}

struct Sample {
  std::string name = "gemm";
  int turns = 3;
  double seconds = 1.5;
  bool spent = true;
  std::vector<std::string> tags = {"H"};
  std::string secret = "not written";
};

TEST(JsonSetFields, WritesEachNamedFieldUnderItsOwnNameAndNothingElse) {
  Sample s;
  nlohmann::json j = {{"kept", 1}};
  PTXBENCH_JSON_SET_FIELDS(j, s, name, turns, seconds, spent, tags);
  EXPECT_EQ(j, (nlohmann::json{{"kept", 1},
                               {"name", "gemm"},
                               {"turns", 3},
                               {"seconds", 1.5},
                               {"spent", true},
                               {"tags", {"H"}}}));
  EXPECT_FALSE(j.contains("secret"));
  // Into a nested object that does not exist yet.
  PTXBENCH_JSON_SET_FIELDS(j["inner"], s, turns);
  EXPECT_EQ(j["inner"], (nlohmann::json{{"turns", 3}}));
}

}  // namespace
}  // namespace ptxbench
