// Comparison of a candidate's outputs with the reference, element by element.
//
// Every element is classified, in this order of precedence:
//   unwritten   the poison pattern survived: the candidate never stored to it
//   non-finite  NaN or ±Inf that the candidate wrote
//   mismatch    outside the tolerance rule (task/definition.h)
// and the verdict of an output is the first class that has any element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "task/definition.h"

namespace ptxbench {

enum class CompareVerdict { kMatch, kNumerical, kNonFinite, kUnwritten };
std::string ToString(CompareVerdict v);  // "match", "numerical", "non_finite", "unwritten"

struct OutputComparison {
  std::string name;
  size_t elements = 0;
  size_t mismatched = 0;
  size_t unwritten = 0;
  size_t non_finite = 0;
  double max_abs_error = 0;  // over written, finite elements
  double max_rel_error = 0;  // |x-y|/(|y|+1e-8), same elements
  double matched_ratio = 0;  // elements within tolerance / elements
  // The first failing element (in memory order), when there is one.
  long long first_bad_index = -1;
  double first_bad_got = 0, first_bad_expected = 0;
  CompareVerdict verdict = CompareVerdict::kMatch;
};

// got: candidate bf16 bits; expected: fp32 reference; both `n` elements.
OutputComparison CompareBf16(const uint16_t* got, const float* expected, size_t n,
                             const Tolerance& tol);
// got: candidate fp16 (IEEE half) bits.
OutputComparison CompareF16(const uint16_t* got, const float* expected, size_t n,
                            const Tolerance& tol);
// got: candidate fp32 values.
OutputComparison CompareF32(const float* got, const float* expected, size_t n,
                            const Tolerance& tol);

// Whether one finite value passes the rule (exposed for tests).
bool WithinTolerance(double got, double expected, const Tolerance& tol);
float Bf16ToFloat(uint16_t bits);
float F16ToFloat(uint16_t bits);  // exact: every half is a float

nlohmann::json ToJson(const OutputComparison& c);
// "C: 1234 of 58720256 elements outside tolerance (max abs 0.51, max rel 0.031); first at
// [3, 17]: got 1.5, expected 2.25" — `cols` turns the flat index into a row and column.
std::string Describe(const OutputComparison& c, long long cols);

}  // namespace ptxbench
