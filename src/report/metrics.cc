#include "report/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "common/error.h"

namespace ptxbench {
namespace {

void CheckOptions(const MetricOptions& o) {
  for (int t : o.turn_limits) {
    if (t < 1) throw UsageError("metrics: turn limit " + std::to_string(t) + " is below 1");
  }
  for (int k : o.pass_k) {
    if (k < 1) throw UsageError("metrics: pass@k needs k >= 1, got " + std::to_string(k));
  }
  if (!(o.confidence > 0 && o.confidence < 1)) {
    throw UsageError("metrics: confidence must lie in (0, 1)");
  }
  if (o.bootstrap_resamples < 0) throw UsageError("metrics: bootstrap resamples below 0");
}

// FNV-1a over the key's fields: a portable hash (std::hash is not), so a group's bootstrap
// stream is the same on every platform and independent of the other groups.
uint64_t GroupSeed(uint64_t seed, const GroupKey& key) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (const std::string* s : {&key.model, &key.arch, &key.task, &key.pack}) {
    for (unsigned char c : *s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull;  // field separator: ("ab","c") differs from ("a","bc")
  }
  return h;
}

// Indices in [0, n) for the bootstrap, two from each 64-bit draw (its 32-bit halves scaled
// by n): the generator was a fifth of the run time. std::uniform_int_distribution's algorithm
// is implementation-defined; this one is not, so intervals match across standard libraries.
// Its bias (< n / 2^32, under 3e-6 for 12 500 trajectories) is far below bootstrap noise.
class IndexDrawer {
 public:
  explicit IndexDrawer(uint64_t seed) : rng_(seed) {}
  int Draw(uint32_t n) {
    if (!have_half_) {
      word_ = rng_();
      have_half_ = true;
      return Scale(static_cast<uint32_t>(word_ >> 32), n);
    }
    have_half_ = false;
    return Scale(static_cast<uint32_t>(word_), n);
  }

 private:
  static int Scale(uint32_t bits, uint32_t n) {
    return static_cast<int>((static_cast<uint64_t>(bits) * n) >> 32);
  }
  std::mt19937_64 rng_;
  uint64_t word_ = 0;
  bool have_half_ = false;
};

// Quantile p of values, linear between order statistics (R's type 7). nth_element instead of
// a sort: thousands of groups times a few intervals each made sorting the resamples dominate.
double Quantile(std::vector<double>& values, double p) {
  double h = (values.size() - 1) * p;
  size_t lo = static_cast<size_t>(std::floor(h));
  std::nth_element(values.begin(), values.begin() + lo, values.end());
  double low = values[lo];
  if (lo + 1 == values.size()) return low;
  double high = *std::min_element(values.begin() + lo + 1, values.end());
  return low + (h - lo) * (high - low);
}

std::optional<ConfidenceInterval> PercentileInterval(std::vector<double> stats, double confidence) {
  if (stats.empty()) return std::nullopt;
  double tail = (1 - confidence) / 2;
  return ConfidenceInterval{Quantile(stats, tail), Quantile(stats, 1 - tail)};
}

CenterStats Center(const std::vector<double>& values) {
  CenterStats s;
  if (values.empty()) return s;
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / values.size();
  s.median = *MedianOf(values);
  return s;
}

// What one trajectory contributes at one turn limit.
struct LimitFacts {
  bool correct = false, verified = false, verified_upstream = false;
  std::optional<double> best;  // over its correct, timed turns
};

LimitFacts FactsWithin(const TrajectoryRow& t, int limit) {
  LimitFacts f;
  for (const TurnRow& turn : t.turns) {
    if (turn.turn > limit) continue;  // by turn number, not position: rows may be unordered
    f.correct |= turn.Correct();
    f.verified |= turn.Verified();
    f.verified_upstream |= turn.VerifiedUpstream();
    if (turn.Correct() && turn.speedup && std::isfinite(*turn.speedup)) {
      f.best = f.best ? std::max(*f.best, *turn.speedup) : *turn.speedup;
    }
  }
  return f;
}

// One turn limit's per-trajectory columns, laid out for the bootstrap's inner loop.
struct LimitColumns {
  int limit = 0;
  std::vector<uint8_t> correct, verified, verified_upstream, timed;  // timed: has a best speedup
  std::vector<int> by_speedup;  // indices of trajectories with a best, ascending by it
  std::vector<double> best;     // indexed by trajectory; meaningful where it has one
};

LimitColumns Columns(const std::vector<const TrajectoryRow*>& group, int limit) {
  LimitColumns c;
  c.limit = limit;
  size_t n = group.size();
  c.correct.resize(n);
  c.verified.resize(n);
  c.verified_upstream.resize(n);
  c.timed.resize(n);
  c.best.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    LimitFacts f = FactsWithin(*group[i], limit);
    c.correct[i] = f.correct;
    c.verified[i] = f.verified;
    c.verified_upstream[i] = f.verified_upstream;
    if (f.best) {
      c.timed[i] = 1;
      c.best[i] = *f.best;
      c.by_speedup.push_back(static_cast<int>(i));
    }
  }
  std::stable_sort(c.by_speedup.begin(), c.by_speedup.end(),
                   [&](int a, int b) { return c.best[a] < c.best[b]; });
  return c;
}

int CountSet(const std::vector<uint8_t>& flags) {
  return static_cast<int>(std::count(flags.begin(), flags.end(), 1));
}

// Median of the speedups of a resample that holds m > 0 timed trajectories, given each
// trajectory's multiplicity in it: walks the trajectories in speedup order up to the middle
// instead of sorting the resample.
double WeightedMedian(const LimitColumns& c, const std::vector<int>& mult, int m) {
  int lo_rank = (m - 1) / 2, hi_rank = m / 2;  // 0-based; equal for odd m
  double lo = 0;
  int seen = 0;
  for (int i : c.by_speedup) {
    int before = seen;
    seen += mult[i];
    if (before <= lo_rank && seen > lo_rank) lo = c.best[i];
    if (seen > hi_rank) return (lo + c.best[i]) / 2;
  }
  return lo;  // unreachable: seen reaches m > hi_rank
}

// The bootstrap's statistics for one turn limit, one entry per resample.
struct LimitResamples {
  std::vector<int> correct, verified, verified_upstream;  // counts
  std::vector<double> median;                             // only resamples that had a speedup
};

// A trajectory's indicators at one limit packed into two words of 21-bit lanes (correct,
// verified and timed in the first, verified under the paper's rule in the second), so that
// adding the words of the drawn trajectories counts all of them at once.
constexpr int kLaneBits = 21;
constexpr uint64_t kLaneMask = (uint64_t{1} << kLaneBits) - 1;
constexpr int kMaxBootstrapTrajectories = (1 << kLaneBits) - 1;  // a lane's sum must not carry
constexpr size_t kWordsPerLimit = 2;

std::vector<uint64_t> PackedIndicators(const std::vector<LimitColumns>& columns, int n) {
  size_t limits = columns.size();
  // Trajectory-major: one draw reads adjacent words.
  std::vector<uint64_t> packed(n * kWordsPerLimit * limits);
  for (int i = 0; i < n; ++i) {
    for (size_t l = 0; l < limits; ++l) {
      const LimitColumns& c = columns[l];
      uint64_t* words = &packed[(i * limits + l) * kWordsPerLimit];
      words[0] = uint64_t{c.correct[i]} | uint64_t{c.verified[i]} << kLaneBits |
                 uint64_t{c.timed[i]} << (2 * kLaneBits);
      words[1] = uint64_t{c.verified_upstream[i]};
    }
  }
  return packed;
}

// Resamples trajectories (not turns) with replacement; every statistic of every limit is
// computed from the same resample. Per resample: one draw and two adds per limit for each
// trajectory, plus a walk to the median of the timed ones.
std::vector<LimitResamples> Bootstrap(const std::vector<LimitColumns>& columns, int n,
                                      int resamples, uint64_t seed) {
  if (n > kMaxBootstrapTrajectories) {
    throw UsageError("metrics: a group of " + std::to_string(n) +
                     " trajectories is too large for the bootstrap");
  }
  size_t limits = columns.size();
  std::vector<LimitResamples> out(limits);
  for (LimitResamples& r : out) {
    r.correct.reserve(resamples);
    r.verified.reserve(resamples);
    r.verified_upstream.reserve(resamples);
    r.median.reserve(resamples);
  }
  std::vector<uint64_t> packed = PackedIndicators(columns, n);
  IndexDrawer draw(seed);
  std::vector<int> mult(n);
  std::vector<uint64_t> sums(limits * kWordsPerLimit);
  for (int r = 0; r < resamples; ++r) {
    std::fill(mult.begin(), mult.end(), 0);
    std::fill(sums.begin(), sums.end(), 0);
    for (int j = 0; j < n; ++j) {
      int i = draw.Draw(n);
      ++mult[i];
      const uint64_t* words = &packed[i * limits * kWordsPerLimit];
      for (size_t w = 0; w < sums.size(); ++w) sums[w] += words[w];
    }
    for (size_t l = 0; l < limits; ++l) {
      uint64_t first = sums[l * kWordsPerLimit], second = sums[l * kWordsPerLimit + 1];
      out[l].correct.push_back(static_cast<int>(first & kLaneMask));
      out[l].verified.push_back(static_cast<int>(first >> kLaneBits & kLaneMask));
      out[l].verified_upstream.push_back(static_cast<int>(second & kLaneMask));
      int timed = static_cast<int>(first >> (2 * kLaneBits));
      if (timed > 0) out[l].median.push_back(WeightedMedian(columns[l], mult, timed));
    }
  }
  return out;
}

// pass@k for every c in [0, n], built incrementally: the ratio C(n-c,k)/C(n,k) for c equals
// the one for c-1 times (1 - k/(n-c+1)), so the whole table costs O(n), and each resample's
// value is a lookup.
std::vector<double> PassAtKTable(int n, int k) {
  std::vector<double> table(n + 1);
  double ratio = 1;
  for (int c = 0; c <= n; ++c) {
    if (c > 0) ratio = n - c + 1 <= k ? 0 : ratio * (1 - static_cast<double>(k) / (n - c + 1));
    table[c] = 1 - ratio;
  }
  return table;
}

// Percentile interval of value_of_count[c] over the resampled counts c. Shares and pass@k are
// non-decreasing in c, so their order statistics are the values of the counts' order
// statistics, which a histogram of the counts (in [0, n]) gives without sorting.
std::optional<ConfidenceInterval> IntervalOf(const std::vector<int>& counts,
                                             const std::vector<double>& value_of_count,
                                             double confidence) {
  if (counts.empty()) return std::nullopt;
  std::vector<int> histogram(value_of_count.size());
  for (int c : counts) ++histogram[c];
  auto order_statistic = [&](size_t rank) {  // 0-based rank among the sorted counts
    size_t seen = 0;
    for (size_t c = 0; c < histogram.size(); ++c) {
      seen += histogram[c];
      if (seen > rank) return value_of_count[c];
    }
    return value_of_count.back();  // unreachable: the histogram holds counts.size() entries
  };
  auto quantile = [&](double p) {
    double h = (counts.size() - 1) * p;
    size_t lo = static_cast<size_t>(std::floor(h));
    size_t hi = std::min(lo + 1, counts.size() - 1);
    double low = order_statistic(lo);
    return low + (h - lo) * (order_statistic(hi) - low);
  };
  double tail = (1 - confidence) / 2;
  return ConfidenceInterval{quantile(tail), quantile(1 - tail)};
}

// `resampled`: the count in each bootstrap resample; nullptr without resamples.
Share MakeShare(int count, int n, const std::vector<int>* resampled, double confidence) {
  Share s{count, n, static_cast<double>(count) / n, std::nullopt};
  if (resampled == nullptr) return s;
  std::vector<double> share_of(n + 1);
  for (int c = 0; c <= n; ++c) share_of[c] = static_cast<double>(c) / n;
  s.ci = IntervalOf(*resampled, share_of, confidence);
  return s;
}

SpeedupSummary Speedups(const LimitColumns& c, const LimitResamples* r, double confidence) {
  SpeedupSummary s;
  s.trajectories = static_cast<int>(c.by_speedup.size());
  if (s.trajectories == 0) return s;
  std::vector<double> values;
  for (int i : c.by_speedup) values.push_back(c.best[i]);
  CenterStats center = Center(values);
  s.mean = center.mean;
  s.median = center.median;
  if (r != nullptr) s.median_ci = PercentileInterval(r->median, confidence);
  return s;
}

TurnLimitMetrics LimitMetrics(const LimitColumns& c, const LimitResamples* r,
                              const MetricOptions& o) {
  int n = static_cast<int>(c.correct.size());
  TurnLimitMetrics m;
  m.turn_limit = c.limit;
  int correct = CountSet(c.correct);
  m.correct = MakeShare(correct, n, r ? &r->correct : nullptr, o.confidence);
  m.verified = MakeShare(CountSet(c.verified), n, r ? &r->verified : nullptr, o.confidence);
  m.verified_upstream = MakeShare(CountSet(c.verified_upstream), n,
                                  r ? &r->verified_upstream : nullptr, o.confidence);
  if (!c.by_speedup.empty()) m.best_speedup = c.best[c.by_speedup.back()];
  m.per_trajectory_best = Speedups(c, r, o.confidence);
  for (int k : o.pass_k) {
    if (k > n) continue;  // documented in MetricOptions::pass_k
    std::vector<double> table = PassAtKTable(n, k);
    PassAtKResult p{k, table[correct], std::nullopt};
    if (r != nullptr) p.ci = IntervalOf(r->correct, table, o.confidence);
    m.pass_at_k.push_back(p);
  }
  return m;
}

void CountFirstCorrect(const std::vector<const TrajectoryRow*>& group, GroupMetrics& g) {
  for (const TrajectoryRow* t : group) {
    std::optional<int> first;
    for (const TurnRow& turn : t->turns) {
      if (turn.Correct() && (!first || turn.turn < *first)) first = turn.turn;
    }
    if (first) {
      ++g.first_correct_turn[*first];
    } else {
      ++g.never_correct;
    }
  }
}

void CountOutcomes(const std::vector<const TrajectoryRow*>& group, GroupMetrics& g) {
  const std::vector<std::string>& names = OutcomeCategories();
  std::map<int, TurnOutcomes> by_turn;
  for (const TrajectoryRow* t : group) {
    for (const TurnRow& turn : t->turns) {
      TurnOutcomes& o = by_turn[turn.turn];
      if (o.counts.empty()) {
        o.turn = turn.turn;
        for (const std::string& name : names) o.counts[name] = 0;
      }
      ++o.reached;
      bool known = std::find(names.begin(), names.end() - 1, turn.outcome) != names.end() - 1;
      ++o.counts[known ? turn.outcome : "other"];
    }
  }
  for (auto& [turn, o] : by_turn) g.outcomes_by_turn.push_back(std::move(o));
}

TokenStats Tokens(const std::vector<const TrajectoryRow*>& group) {
  std::vector<double> prompt, completion, reasoning;
  for (const TrajectoryRow* t : group) {
    for (const TurnRow& turn : t->turns) {
      prompt.push_back(static_cast<double>(turn.prompt_tokens));
      completion.push_back(static_cast<double>(turn.completion_tokens));
      reasoning.push_back(static_cast<double>(turn.reasoning_tokens));
    }
  }
  return TokenStats{static_cast<int>(prompt.size()), Center(prompt), Center(completion),
                    Center(reasoning)};
}

GroupMetrics Group(const GroupKey& key, const std::vector<const TrajectoryRow*>& group,
                   const MetricOptions& o) {
  GroupMetrics g;
  g.key = key;
  g.trajectories = static_cast<int>(group.size());
  g.confidence = o.confidence;
  g.bootstrap_resamples = o.bootstrap_resamples;
  for (const TrajectoryRow* t : group) {
    if (t->pack_hardware_verified == false) ++g.unproven_pack_trajectories;
    if (!TrajectoryFinished(*t)) ++g.unfinished_trajectories;
  }
  std::vector<LimitColumns> columns;
  for (int limit : o.turn_limits) columns.push_back(Columns(group, limit));
  std::vector<LimitResamples> resamples;
  if (o.bootstrap_resamples > 0) {
    resamples = Bootstrap(columns, g.trajectories, o.bootstrap_resamples, GroupSeed(o.seed, key));
  }
  for (size_t l = 0; l < columns.size(); ++l) {
    const LimitResamples* r = resamples.empty() ? nullptr : &resamples[l];
    g.by_limit.push_back(LimitMetrics(columns[l], r, o));
  }
  CountFirstCorrect(group, g);
  CountOutcomes(group, g);
  g.tokens = Tokens(group);
  return g;
}

nlohmann::json IntervalJson(const std::optional<ConfidenceInterval>& ci) {
  if (!ci) return nullptr;
  return nlohmann::json::array({ci->low, ci->high});
}

nlohmann::json OptionalJson(const std::optional<double>& v) {
  if (!v) return nullptr;
  return *v;
}

nlohmann::json ShareJson(const Share& s) {
  return {{"count", s.count}, {"total", s.total}, {"share", s.share}, {"ci", IntervalJson(s.ci)}};
}

nlohmann::json LimitJson(const TurnLimitMetrics& m) {
  nlohmann::json pass = nlohmann::json::array();
  for (const PassAtKResult& p : m.pass_at_k) {
    pass.push_back({{"k", p.k}, {"value", p.value}, {"ci", IntervalJson(p.ci)}});
  }
  const SpeedupSummary& s = m.per_trajectory_best;
  return {{"turn_limit", m.turn_limit},
          {"correct", ShareJson(m.correct)},
          {"verified", ShareJson(m.verified)},
          {"verified_upstream", ShareJson(m.verified_upstream)},
          {"best_speedup", OptionalJson(m.best_speedup)},
          {"per_trajectory_best_speedup",
           {{"trajectories", s.trajectories},
            {"median", OptionalJson(s.median)},
            {"mean", OptionalJson(s.mean)},
            {"median_ci", IntervalJson(s.median_ci)}}},
          {"pass_at_k", pass}};
}

nlohmann::json CenterJson(const CenterStats& c) { return {{"mean", c.mean}, {"median", c.median}}; }

}  // namespace

double PassAtK(int n, int c, int k) {
  if (n < 0 || c < 0 || c > n) throw UsageError("pass@k: need 0 <= c <= n");
  if (k < 1 || k > n) throw UsageError("pass@k: need 1 <= k <= n");
  if (n - c < k) return 1;  // every k-subset holds a correct trajectory
  // C(n-c,k)/C(n,k) = prod over i in (n-c, n] of (1 - k/i): each factor lies in (0, 1].
  double ratio = 1;
  for (int i = n - c + 1; i <= n; ++i) ratio *= 1 - static_cast<double>(k) / i;
  return 1 - ratio;
}

std::optional<double> MedianOf(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  // The lower middle value is the largest of the half that nth_element left below mid.
  double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2;
}

std::vector<GroupMetrics> ComputeMetrics(const Dataset& data, const MetricOptions& options) {
  CheckOptions(options);
  std::map<GroupKey, std::vector<const TrajectoryRow*>> groups;  // ordered: sorted output
  for (const TrajectoryRow& t : data.trajectories) {
    groups[GroupKey{t.model, t.arch, t.task, t.pack}].push_back(&t);
  }
  std::vector<GroupMetrics> out;
  out.reserve(groups.size());
  for (const auto& [key, group] : groups) out.push_back(Group(key, group, options));
  return out;
}

nlohmann::json ToJson(const GroupMetrics& g) {
  nlohmann::json limits = nlohmann::json::array();
  for (const TurnLimitMetrics& m : g.by_limit) limits.push_back(LimitJson(m));
  nlohmann::json first = nlohmann::json::object();
  for (const auto& [turn, count] : g.first_correct_turn) first[std::to_string(turn)] = count;
  nlohmann::json outcomes = nlohmann::json::array();
  for (const TurnOutcomes& o : g.outcomes_by_turn) {
    outcomes.push_back({{"turn", o.turn}, {"reached", o.reached}, {"counts", o.counts}});
  }
  return {{"model", g.key.model},
          {"arch", g.key.arch},
          {"task", g.key.task},
          {"pack", g.key.pack},
          {"trajectories", g.trajectories},
          {"unproven_pack_trajectories", g.unproven_pack_trajectories},
          {"unfinished_trajectories", g.unfinished_trajectories},
          {"confidence", g.confidence},
          {"bootstrap_resamples", g.bootstrap_resamples},
          {"by_turn_limit", limits},
          {"first_correct_turn", {{"by_turn", first}, {"never", g.never_correct}}},
          {"outcomes_by_turn", outcomes},
          {"tokens",
           {{"turns", g.tokens.turns},
            {"prompt", CenterJson(g.tokens.prompt)},
            {"completion", CenterJson(g.tokens.completion)},
            {"reasoning", CenterJson(g.tokens.reasoning)}}}};
}

nlohmann::json ToJson(const std::vector<GroupMetrics>& groups) {
  nlohmann::json out = nlohmann::json::array();
  for (const GroupMetrics& g : groups) out.push_back(ToJson(g));
  return out;
}

}  // namespace ptxbench
