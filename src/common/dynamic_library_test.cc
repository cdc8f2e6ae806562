#include "common/dynamic_library.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "common/status_check.h"

namespace ptxbench {
namespace {

constexpr char kLibm[] = "libm.so.6";
constexpr char kAbsent[] = "libptxbench-no-such-library.so.1";

TEST(DynamicLibrary, OpensAndFindsTypedSymbols) {
  std::optional<DynamicLibrary> libm = DynamicLibrary::Open(kLibm);
  ASSERT_TRUE(libm.has_value());
  auto* cosine = libm->Find<double(double)>("cos");
  ASSERT_NE(cosine, nullptr);
  EXPECT_DOUBLE_EQ(cosine(0.0), 1.0);
  EXPECT_EQ(libm->Find<void()>("ptxbench_no_such_symbol"), nullptr);
  EXPECT_NE(libm->Path().find("libm"), std::string::npos) << libm->Path();
}

TEST(DynamicLibrary, SaysWhyALibraryDidNotLoad) {
  std::string why;
  EXPECT_FALSE(DynamicLibrary::Open(kAbsent, &why).has_value());
  EXPECT_NE(why.find(kAbsent), std::string::npos) << why;
}

TEST(SymbolBinder, NamesEveryMissingSymbolAndTakesTheFirstAlternative) {
  std::optional<DynamicLibrary> libm = DynamicLibrary::Open(kLibm);
  ASSERT_TRUE(libm.has_value());
  double (*cosine)(double) = nullptr;
  void (*absent)() = nullptr;
  void (*also_absent)() = nullptr;
  void (*optional)() = nullptr;
  double (*renamed)(double) = nullptr;
  SymbolBinder binder(*libm);
  binder.Require(cosine, "cos");
  binder.Require(absent, "ptxbench_absent_a");
  binder.Optional(optional, "ptxbench_absent_optional");
  binder.Require(also_absent, "ptxbench_absent_b");
  EXPECT_STREQ(binder.RequireFirstOf(renamed, {"ptxbench_new_name", "sin"}), "sin");
  EXPECT_NE(cosine, nullptr);
  EXPECT_NE(renamed, nullptr);
  EXPECT_EQ(optional, nullptr);
  EXPECT_EQ(binder.missing(), "ptxbench_absent_a, ptxbench_absent_b");
}

TEST(OpenFirstOf, NotesEachCandidatePassedOver) {
  auto needs_cos = [](const DynamicLibrary& library) {
    return library.Address("cos") ? std::string() : std::string("cos");
  };
  LibraryChoice found = OpenFirstOf({kAbsent, kLibm}, needs_cos);
  ASSERT_TRUE(found.library.has_value());
  ASSERT_EQ(found.passed_over.size(), 1u);
  // The loader's reason names the file, so the name is not repeated.
  EXPECT_EQ(found.passed_over[0].find(kAbsent), 0u) << found.passed_over[0];
  EXPECT_EQ(found.passed_over[0].find(kAbsent, 1), std::string::npos) << found.passed_over[0];

  auto needs_nothing_libm_has = [](const DynamicLibrary&) { return std::string("ptxbench_x"); };
  LibraryChoice none = OpenFirstOf({kLibm}, needs_nothing_libm_has);
  EXPECT_FALSE(none.library.has_value());
  EXPECT_EQ(none.passed_over, (std::vector<std::string>{"libm.so.6: lacks ptxbench_x"}));
}

// A library in the shape status_check.h asks for.
struct FakeStatus {
  using Status = int;
  static constexpr Status kSuccess = 0;
  std::string Describe(Status s) const { return "fake error " + std::to_string(s); }
  [[noreturn]] void Throw(Status s, const CheckedCall& call) const {
    throw std::runtime_error("fake: " + FailureText(*this, s, call.what));
  }
};

TEST(StatusCheck, ThrowsTheLibrarysErrorOnlyOnFailure) {
  EXPECT_NO_THROW(PTXBENCH_CHECK_STATUS(FakeStatus{}, 0, "fakeCall"));
  try {
    PTXBENCH_CHECK_STATUS(FakeStatus{}, 7, std::string("fakeCall(") + "x" + ")");
    FAIL() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "fake: fakeCall(x): fake error 7");
  }
}

}  // namespace
}  // namespace ptxbench
