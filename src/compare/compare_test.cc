#include "compare/compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "task/device_ops.h"

namespace ptxbench {
namespace {

uint16_t ToBf16(float f) {  // round to nearest even, as the device does
  uint32_t w;
  std::memcpy(&w, &f, sizeof w);
  w += 0x7FFF + ((w >> 16) & 1);
  return static_cast<uint16_t>(w >> 16);
}

const Tolerance kPublished{ToleranceRule::kPublished, 1e-2, 1e-2};
const Tolerance kAllclose{ToleranceRule::kAllclose, 1e-2, 1e-2};

TEST(Tolerance, PublishedRuleNeedsBothBoundsExceeded) {
  // |diff| = 0.5 > atol, but relative 0.5/100 = 0.005 <= rtol: passes.
  EXPECT_TRUE(WithinTolerance(100.5, 100.0, kPublished));
  // allclose: 0.5 > 0.01 + 0.01*100 = 1.01? no: passes too.
  EXPECT_TRUE(WithinTolerance(100.5, 100.0, kAllclose));
  // |diff| = 2 : relative 0.02 > rtol and abs > atol: fails both.
  EXPECT_FALSE(WithinTolerance(102, 100, kPublished));
  EXPECT_FALSE(WithinTolerance(102, 100, kAllclose));
  // Near zero: diff 0.009 <= atol passes both.
  EXPECT_TRUE(WithinTolerance(0.009, 0.0, kPublished));
  EXPECT_TRUE(WithinTolerance(0.009, 0.0, kAllclose));
  // Where the rules differ: expected 1, got 1.015: published fails (abs .015 > .01 and
  // rel .015 > .01); allclose allows .01 + .01 = .02 and passes.
  EXPECT_FALSE(WithinTolerance(1.015, 1.0, kPublished));
  EXPECT_TRUE(WithinTolerance(1.015, 1.0, kAllclose));
}

TEST(Compare, AllMatch) {
  std::vector<float> exp = {1.0f, -2.5f, 3.25f, 0.0f};
  std::vector<uint16_t> got;
  for (float f : exp) got.push_back(ToBf16(f));
  OutputComparison c = CompareBf16(got.data(), exp.data(), exp.size(), kPublished);
  EXPECT_EQ(c.verdict, CompareVerdict::kMatch);
  EXPECT_EQ(c.matched_ratio, 1.0);
  EXPECT_EQ(c.first_bad_index, -1);
}

TEST(Compare, NumericalMismatchIsLocated) {
  std::vector<float> exp(12, 1.0f);
  std::vector<uint16_t> got(12, ToBf16(1.0f));
  got[7] = ToBf16(1.5f);
  OutputComparison c = CompareBf16(got.data(), exp.data(), exp.size(), kPublished);
  EXPECT_EQ(c.verdict, CompareVerdict::kNumerical);
  EXPECT_EQ(c.mismatched, 1u);
  EXPECT_EQ(c.first_bad_index, 7);
  EXPECT_NEAR(c.max_abs_error, 0.5, 1e-6);
  EXPECT_NEAR(c.matched_ratio, 11.0 / 12.0, 1e-12);
  c.name = "C";
  EXPECT_NE(Describe(c, 4).find("first at [1, 3]: got 1.5, expected 1"), std::string::npos);
}

TEST(Compare, PoisonMeansUnwrittenAndWinsOverOtherFailures) {
  std::vector<float> exp(6, 2.0f);
  std::vector<uint16_t> got(6, ToBf16(2.0f));
  got[1] = ToBf16(std::numeric_limits<float>::quiet_NaN());
  got[3] = kPoisonBf16;
  got[4] = ToBf16(9.0f);
  OutputComparison c = CompareBf16(got.data(), exp.data(), exp.size(), kPublished);
  EXPECT_EQ(c.verdict, CompareVerdict::kUnwritten);
  EXPECT_EQ(c.unwritten, 1u);
  EXPECT_EQ(c.non_finite, 1u);
  EXPECT_EQ(c.mismatched, 1u);
  EXPECT_EQ(c.first_bad_index, 1);
}

TEST(Compare, ComputedNaNAndInfAreNonFiniteNotUnwritten) {
  std::vector<float> exp(4, 1.0f);
  std::vector<uint16_t> got(4, ToBf16(1.0f));
  got[2] = ToBf16(std::numeric_limits<float>::infinity());
  OutputComparison c = CompareBf16(got.data(), exp.data(), exp.size(), kPublished);
  EXPECT_EQ(c.verdict, CompareVerdict::kNonFinite);
  // A NaN the candidate computed is never mistaken for the poison pattern.
  EXPECT_NE(ToBf16(std::numeric_limits<float>::quiet_NaN()), kPoisonBf16);
  EXPECT_NE(ToBf16(-std::numeric_limits<float>::quiet_NaN()), kPoisonBf16);
}

// IEEE half to float: normals, subnormals, signed zero, infinities, NaN; the poison pattern is
// a NaN in half too, so an fp16 output the candidate never wrote is "unwritten".
TEST(Compare, F16OutputsAreReadAsIeeeHalf) {
  EXPECT_EQ(F16ToFloat(0x3C00), 1.0f);
  EXPECT_EQ(F16ToFloat(0xC100), -2.5f);
  EXPECT_EQ(F16ToFloat(0x7BFF), 65504.0f);               // the largest half
  EXPECT_EQ(F16ToFloat(0x0001), std::ldexp(1.0f, -24));  // the smallest subnormal
  EXPECT_EQ(F16ToFloat(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_TRUE(std::signbit(F16ToFloat(0x8000)));
  EXPECT_EQ(F16ToFloat(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(F16ToFloat(0x7E00)));
  EXPECT_TRUE(std::isnan(F16ToFloat(kPoisonF16)));
  std::vector<float> exp = {1.0f, -2.5f, 0.5f};
  std::vector<uint16_t> got = {0x3C00, 0xC100, 0x3800};
  EXPECT_EQ(CompareF16(got.data(), exp.data(), exp.size(), kPublished).verdict,
            CompareVerdict::kMatch);
  got[1] = kPoisonF16;
  got[2] = 0x3C00;  // 1.0 where 0.5 is expected
  OutputComparison c = CompareF16(got.data(), exp.data(), exp.size(), kPublished);
  EXPECT_EQ(c.verdict, CompareVerdict::kUnwritten);
  EXPECT_EQ(c.unwritten, 1u);
  EXPECT_EQ(c.mismatched, 1u);
}

TEST(Compare, F32OutputsUseTheirOwnPoison) {
  std::vector<float> exp = {0.5f, 0.25f, 1.0f};
  std::vector<float> got = exp;
  uint32_t poison = kPoisonF32;
  std::memcpy(&got[2], &poison, sizeof poison);
  OutputComparison c = CompareF32(got.data(), exp.data(), exp.size(), kPublished);
  EXPECT_EQ(c.verdict, CompareVerdict::kUnwritten);
  EXPECT_EQ(c.first_bad_index, 2);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(kPoisonBf16)));
}

TEST(Compare, LargeArraysAreComparedInParallelWithTheSameResult) {
  const size_t n = (1u << 22) + 3;
  std::vector<float> exp(n);
  std::vector<uint16_t> got(n);
  for (size_t i = 0; i < n; ++i) {
    exp[i] = static_cast<float>((i % 1000) * 0.01);
    got[i] = ToBf16(exp[i]);
  }
  got[n - 1] = ToBf16(exp[n - 1] + 5.0f);
  got[n / 2] = ToBf16(exp[n / 2] + 7.0f);
  OutputComparison c = CompareBf16(got.data(), exp.data(), n, kPublished);
  EXPECT_EQ(c.mismatched, 2u);
  EXPECT_EQ(c.first_bad_index, static_cast<long long>(n / 2));
  EXPECT_NEAR(c.max_abs_error, 7.0, 0.1);
}

TEST(Checksum, SingleWordChangesAreSeen) {
  std::vector<uint16_t> a(1000, 0x3F80);
  uint64_t base = HostChecksum(a.data(), a.size() * 2);
  a[999] = 0x3F81;
  EXPECT_NE(HostChecksum(a.data(), a.size() * 2), base);
  a[999] = 0x3F80;
  std::swap(a[0], a[1]);
  EXPECT_EQ(HostChecksum(a.data(), a.size() * 2), base);  // equal words swapped: same data
  a[0] = 0;
  a[1] = 0xFFFF;
  EXPECT_NE(HostChecksum(a.data(), a.size() * 2), base);
}

}  // namespace
}  // namespace ptxbench
