#include "compare/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <thread>
#include <vector>

#include "common/enum_names.h"
#include "common/json_fields.h"
#include "task/device_ops.h"

namespace ptxbench {

constexpr EnumName<CompareVerdict> kVerdictNames[] = {
    {CompareVerdict::kMatch, "match"},
    {CompareVerdict::kNumerical, "numerical"},
    {CompareVerdict::kNonFinite, "non_finite"},
    {CompareVerdict::kUnwritten, "unwritten"},
};
std::string ToString(CompareVerdict v) { return NameOf<CompareVerdict>(kVerdictNames, v, "?"); }

float Bf16ToFloat(uint16_t bits) {
  uint32_t w = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &w, sizeof f);
  return f;
}

float F16ToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  const uint32_t mantissa = bits & 0x3FFu;
  uint32_t w;
  if (exponent == 0x1F) {  // infinity or NaN, the payload kept
    w = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent != 0) {  // normal: rebias 15 -> 127
    w = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else {  // zero or subnormal: mantissa x 2^-24, exact in a float
    float f = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -f : f;
  }
  float f;
  std::memcpy(&f, &w, sizeof f);
  return f;
}

bool WithinTolerance(double got, double expected, const Tolerance& tol) {
  double diff = std::fabs(got - expected);
  if (tol.rule == ToleranceRule::kPublished)
    return !(diff > tol.atol && diff / (std::fabs(expected) + 1e-8) > tol.rtol);
  return diff <= tol.atol + tol.rtol * std::fabs(expected);
}

namespace {

// Compares [begin, end) into `out`; the caller merges the chunks in order.
template <typename Load, typename IsPoison>
void CompareRange(Load load, IsPoison is_poison, const float* expected, size_t begin, size_t end,
                  const Tolerance& tol, OutputComparison* out) {
  for (size_t i = begin; i < end; ++i) {
    bool bad = false;
    double x = 0, y = expected[i];
    if (is_poison(i)) {
      ++out->unwritten;
      bad = true;
    } else {
      x = load(i);
      if (!std::isfinite(x)) {
        ++out->non_finite;
        bad = true;
      } else {
        double diff = std::fabs(x - y);
        out->max_abs_error = std::max(out->max_abs_error, diff);
        out->max_rel_error = std::max(out->max_rel_error, diff / (std::fabs(y) + 1e-8));
        if (!std::isfinite(y) || !WithinTolerance(x, y, tol)) {
          ++out->mismatched;
          bad = true;
        }
      }
    }
    if (bad && out->first_bad_index < 0) {
      out->first_bad_index = static_cast<long long>(i);
      out->first_bad_got = x;
      out->first_bad_expected = y;
    }
  }
}

template <typename Load, typename IsPoison>
OutputComparison CompareParallel(Load load, IsPoison is_poison, const float* expected, size_t n,
                                 const Tolerance& tol) {
  unsigned threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  if (n < (1u << 20)) threads = 1;
  std::vector<OutputComparison> parts(threads);
  std::vector<std::thread> pool;
  size_t chunk = (n + threads - 1) / threads;
  for (unsigned t = 0; t < threads; ++t) {
    size_t b = std::min(n, t * chunk), e = std::min(n, b + chunk);
    pool.emplace_back(
        [&, t, b, e] { CompareRange(load, is_poison, expected, b, e, tol, &parts[t]); });
  }
  for (auto& th : pool) th.join();
  OutputComparison r;
  r.elements = n;
  for (const auto& p : parts) {
    r.mismatched += p.mismatched;
    r.unwritten += p.unwritten;
    r.non_finite += p.non_finite;
    r.max_abs_error = std::max(r.max_abs_error, p.max_abs_error);
    r.max_rel_error = std::max(r.max_rel_error, p.max_rel_error);
    if (r.first_bad_index < 0 && p.first_bad_index >= 0) {
      r.first_bad_index = p.first_bad_index;
      r.first_bad_got = p.first_bad_got;
      r.first_bad_expected = p.first_bad_expected;
    }
  }
  size_t bad = r.mismatched + r.unwritten + r.non_finite;
  r.matched_ratio = n ? static_cast<double>(n - bad) / static_cast<double>(n) : 1.0;
  if (r.unwritten)
    r.verdict = CompareVerdict::kUnwritten;
  else if (r.non_finite)
    r.verdict = CompareVerdict::kNonFinite;
  else if (r.mismatched)
    r.verdict = CompareVerdict::kNumerical;
  return r;
}

}  // namespace

OutputComparison CompareBf16(const uint16_t* got, const float* expected, size_t n,
                             const Tolerance& tol) {
  return CompareParallel([got](size_t i) { return double(Bf16ToFloat(got[i])); },
                         [got](size_t i) { return got[i] == kPoisonBf16; }, expected, n, tol);
}

OutputComparison CompareF16(const uint16_t* got, const float* expected, size_t n,
                            const Tolerance& tol) {
  return CompareParallel([got](size_t i) { return double(F16ToFloat(got[i])); },
                         [got](size_t i) { return got[i] == kPoisonF16; }, expected, n, tol);
}

OutputComparison CompareF32(const float* got, const float* expected, size_t n,
                            const Tolerance& tol) {
  return CompareParallel([got](size_t i) { return double(got[i]); },
                         [got](size_t i) {
                           uint32_t bits;
                           std::memcpy(&bits, &got[i], sizeof bits);
                           return bits == kPoisonF32;
                         },
                         expected, n, tol);
}

nlohmann::json ToJson(const OutputComparison& c) {
  nlohmann::json j;
  PTXBENCH_JSON_SET_FIELDS(j, c, name, elements, mismatched, unwritten, non_finite, max_abs_error,
                           max_rel_error, matched_ratio);
  j["verdict"] = ToString(c.verdict);
  if (c.first_bad_index >= 0)
    j["first_bad"] = {{"index", c.first_bad_index},
                      {"got", std::isfinite(c.first_bad_got) ? nlohmann::json(c.first_bad_got)
                                                             : nlohmann::json(nullptr)},
                      {"expected", c.first_bad_expected}};
  return j;
}

std::string Describe(const OutputComparison& c, long long cols) {
  std::ostringstream s;
  s.precision(4);
  s << c.name << ": ";
  if (c.verdict == CompareVerdict::kMatch) {
    s << "all " << c.elements << " elements within tolerance (max abs " << c.max_abs_error
      << ", max rel " << c.max_rel_error << ")";
    return s.str();
  }
  if (c.unwritten)
    s << c.unwritten << " of " << c.elements << " elements never written";
  else if (c.non_finite)
    s << c.non_finite << " of " << c.elements << " elements NaN or Inf";
  else
    s << c.mismatched << " of " << c.elements << " elements outside tolerance (max abs "
      << c.max_abs_error << ", max rel " << c.max_rel_error << ")";
  if (c.first_bad_index >= 0) {
    s << "; first at ";
    if (cols > 0)
      s << "[" << c.first_bad_index / cols << ", " << c.first_bad_index % cols << "]";
    else
      s << "[" << c.first_bad_index << "]";
    if (c.verdict == CompareVerdict::kNumerical)
      s << ": got " << c.first_bad_got << ", expected " << c.first_bad_expected;
    else if (c.verdict == CompareVerdict::kNonFinite)
      s << ": got " << c.first_bad_got;
  }
  return s.str();
}

}  // namespace ptxbench
