// Reports as text: the terminal tables, CSV and JSONL exports, the upstream per-turn layout,
// and the comparison with the published figures (../shared/reference/published-results.csv).
#pragma once

#include <string>
#include <vector>

#include "record/report_rows.h"
#include "report/metrics.h"
#include "report/upstream_csv.h"

namespace ptxbench {

// One table row per group and turn limit: correct@T and verified@T under our rule and under the
// paper's (count/n, share, CI),
// best speedup@T (the paper's max), median per-trajectory best, pass@k; then each group's
// outcome distribution per turn and first-correct turns.
std::string MetricsTable(const std::vector<GroupMetrics>& groups);

// " | pack not proven on hardware (N of M)" for a group with such trajectories, else "".
std::string UnprovenPackNote(const GroupMetrics& g);
// " | 2 unfinished, counted as they stand (...)", or "" when every trajectory finished.
std::string UnfinishedNote(const GroupMetrics& g);

// A row per group and turn limit, every figure of MetricsTable, intervals as low/high columns.
std::string MetricsCsv(const std::vector<GroupMetrics>& groups);

// A JSON object per turn (the trajectory's keys and the turn's).
std::string TurnsJsonl(const Dataset& data);


struct PublishedResult {
  std::string model, arch, definition, run;  // arch as published: hopper, blackwell
  int turn_limit = 0, trajectories = 0, correct = 0, verified = 0;
  double best_speedup = 0;
};
std::vector<PublishedResult> LoadPublishedResults(const std::string& path);  // throws InputError
std::string PublishedArch(const std::string& arch);  // sm_90a → hopper, sm_100a → blackwell

// Ours next to the published figure wherever model (case-insensitive), arch, task and turn
// limit match; "" when nothing matches. Verified counts are compared under the paper's rule,
// with ours (stricter) beside them.
std::string ComparisonTable(const std::vector<GroupMetrics>& groups,
                            const std::vector<PublishedResult>& published);

}  // namespace ptxbench
