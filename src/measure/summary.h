// Named summaries of repeated measurements, in SI units (seconds), read by every writer.
#pragma once

#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

namespace ptxbench {

struct Summary {
  size_t count = 0;
  double median = 0, p10 = 0, p90 = 0, min = 0, max = 0, mean = 0;
};

// Percentiles by linear interpolation between order statistics (the p-th percentile of n
// sorted samples sits at position p·(n−1)). An empty input gives count 0 and zeros.
Summary Summarize(std::vector<double> samples);
double Percentile(const std::vector<double>& sorted, double p);

// {"count", "median", "p10", "p90", "min", "max", "mean"}.
nlohmann::json ToJson(const Summary& s);

}  // namespace ptxbench
