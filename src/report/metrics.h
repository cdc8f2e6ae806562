// Metrics over a Dataset, per group of trajectories (model, arch, task, pack): what the
// paper's tables report (correct@T, verified@T under our rule and the paper's, best speedup@T)
// and what it does not report
// but a reader needs to judge them (pass@k, bootstrap confidence intervals, per-trajectory
// speedups, where trajectories first succeed, how turns fail, token use).
//
// Pure and deterministic: no I/O, no clocks; the bootstrap draws from a std::mt19937_64 seeded
// per group from MetricOptions::seed and the group's key, so a group's intervals do not change
// when other groups are added to or removed from the dataset.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/report_rows.h"

namespace ptxbench {

// Turn outcomes that the per-turn distribution counts by name; any other outcome string
// (including "") is counted as "other".
inline const std::vector<std::string>& OutcomeCategories() {
  static const std::vector<std::string> kCategories = {
      "extraction",     "rejected", "compile",  "runtime",     "memory", "incorrect",
      "rule_violation", "correct",  "verified", "model_error", "other"};
  return kCategories;
}

struct GroupKey {
  std::string model, arch, task, pack;
  auto operator<=>(const GroupKey&) const = default;
};

struct MetricOptions {
  std::vector<int> turn_limits = {1, 4, 8};  // each >= 1; reported in the order given
  // Each >= 1. A k larger than a group's trajectory count is left out of that group's results
  // (the unbiased estimator needs k <= n), rather than failing the whole dataset.
  std::vector<int> pass_k = {1, 4};
  double confidence = 0.95;        // in (0, 1)
  int bootstrap_resamples = 2000;  // 0: no intervals
  uint64_t seed = 20260001;
};

struct ConfidenceInterval {
  double low = 0, high = 0;
};

// count of total trajectories met the condition; share = count / total.
struct Share {
  int count = 0, total = 0;
  double share = 0;
  std::optional<ConfidenceInterval> ci;  // nullopt without resamples
};

struct PassAtKResult {
  int k = 0;
  double value = 0;
  std::optional<ConfidenceInterval> ci;
};

// Per trajectory, its best speedup among its correct, timed turns within the limit (a
// non-finite speedup counts as untimed); only
// trajectories that have one are summarised (`trajectories` says how many).
struct SpeedupSummary {
  int trajectories = 0;
  std::optional<double> median, mean;
  // Resamples all of the group's trajectories and takes the median of those that have a
  // speedup; resamples with none are skipped. nullopt when none had one.
  std::optional<ConfidenceInterval> median_ci;
};

struct TurnLimitMetrics {
  int turn_limit = 0;
  Share correct;   // a TurnRow::Correct() turn within the limit
  Share verified;  // a TurnRow::Verified() turn within the limit (our rule)
  // A TurnRow::VerifiedUpstream() turn within the limit: the paper's rule, which published
  // "verified" figures use. At least `verified`: ours only adds conditions.
  Share verified_upstream;
  // The paper's figure: the max over all correct, timed turns within the limit.
  std::optional<double> best_speedup;
  SpeedupSummary per_trajectory_best;
  std::vector<PassAtKResult> pass_at_k;  // from correct@T; only k <= trajectories
};

struct TurnOutcomes {
  int turn = 0;
  int reached = 0;                    // trajectories that have this turn
  std::map<std::string, int> counts;  // every OutcomeCategories() name, zeros included
};

struct CenterStats {
  double mean = 0, median = 0;
};

struct TokenStats {
  int turns = 0;  // every turn of the group, regardless of turn limits
  CenterStats prompt, completion, reasoning;
};

struct GroupMetrics {
  GroupKey key;
  int trajectories = 0;
  std::vector<TurnLimitMetrics> by_limit;  // in MetricOptions::turn_limits order
  // First correct turn (any turn, no limit) -> trajectories; never_correct: the rest.
  std::map<int, int> first_correct_turn;
  int never_correct = 0;
  std::vector<TurnOutcomes> outcomes_by_turn;  // ascending turn
  TokenStats tokens;
  // Trajectories whose pack was not proven on its hardware: reports mark the group.
  int unproven_pack_trajectories = 0;
  // Trajectories that stopped early (interrupted, `report --include-unfinished`): counted as
  // they stand, so the group's rates are lower bounds. Reports mark the group.
  int unfinished_trajectories = 0;
  // The settings the intervals were computed with, so JSON output describes itself.
  double confidence = 0;
  int bootstrap_resamples = 0;
};

// Groups sorted by key. Throws UsageError for invalid options.
std::vector<GroupMetrics> ComputeMetrics(const Dataset& data, const MetricOptions& options = {});

// Unbiased pass@k = 1 - C(n-c, k) / C(n, k), as a product of ratios (no binomials, so no
// overflow for any n). Throws UsageError unless 0 <= c <= n and 1 <= k <= n.
double PassAtK(int n, int c, int k);

// Median; for an even count the mean of the two middle values. nullopt when empty.
std::optional<double> MedianOf(std::vector<double> values);

nlohmann::json ToJson(const GroupMetrics& g);
nlohmann::json ToJson(const std::vector<GroupMetrics>& groups);

}  // namespace ptxbench
