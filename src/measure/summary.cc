#include "measure/summary.h"

#include <algorithm>
#include <numeric>

namespace ptxbench {

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  double pos = p * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Summary Summarize(std::vector<double> v) {
  Summary s;
  s.count = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = Percentile(v, 0.5);
  s.p10 = Percentile(v, 0.1);
  s.p90 = Percentile(v, 0.9);
  s.min = v.front();
  s.max = v.back();
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  return s;
}

nlohmann::json ToJson(const Summary& s) {
  return {{"count", s.count}, {"median", s.median}, {"p10", s.p10},  {"p90", s.p90},
          {"min", s.min},     {"max", s.max},       {"mean", s.mean}};
}

}  // namespace ptxbench
