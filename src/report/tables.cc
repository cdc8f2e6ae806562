#include "report/tables.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/files.h"
#include "common/strings.h"
#include "record/vocabulary.h"

namespace ptxbench {
namespace {

using nlohmann::json;

std::string Fmt(const char* f, double v) { return FormatNumber(f, v); }
std::string Opt(const std::optional<double>& v, const char* f = "%.3f") {
  return v ? Fmt(f, *v) : "-";
}
std::string ShareText(const Share& s) {
  std::string t =
      std::to_string(s.count) + "/" + std::to_string(s.total) + " " + Fmt("%.2f", s.share);
  if (s.ci) t += " [" + Fmt("%.2f", s.ci->low) + "," + Fmt("%.2f", s.ci->high) + "]";
  return t;
}
std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
// CSV fields: the one writer (common/strings.h).
std::string Csv(const std::string& s) { return CsvField(s); }
std::string Pad(const std::string& s, size_t w) {
  return s.size() >= w ? s : s + std::string(w - s.size(), ' ');
}

}  // namespace

std::string UnprovenPackNote(const GroupMetrics& g) {
  if (g.unproven_pack_trajectories == 0) return "";
  return " | pack not proven on hardware (" + std::to_string(g.unproven_pack_trajectories) +
         " of " + std::to_string(g.trajectories) + ")";
}

std::string UnfinishedNote(const GroupMetrics& g) {
  if (g.unfinished_trajectories == 0) return "";
  return " | " + std::to_string(g.unfinished_trajectories) +
         " unfinished, counted as they stand (rates are lower bounds)";
}

std::string MetricsTable(const std::vector<GroupMetrics>& groups) {
  std::string out;
  for (const GroupMetrics& g : groups) {
    out += g.key.model + " | " + g.key.arch + " | " + g.key.task + " | pack " + g.key.pack + " | " +
           std::to_string(g.trajectories) + " trajectories" + UnprovenPackNote(g) +
           UnfinishedNote(g) + "\n";
    out += "  " + Pad("T", 4) + Pad("correct@T [CI]", 26) + Pad("verified@T [CI]", 26) +
           Pad("verified@T (paper) [CI]", 26) + Pad("best", 8) + Pad("median best [CI]", 26) +
           "pass@k\n";
    for (const TurnLimitMetrics& m : g.by_limit) {
      std::string med = Opt(m.per_trajectory_best.median);
      if (m.per_trajectory_best.median_ci)
        med += " [" + Fmt("%.3f", m.per_trajectory_best.median_ci->low) + "," +
               Fmt("%.3f", m.per_trajectory_best.median_ci->high) + "]";
      med += " (n=" + std::to_string(m.per_trajectory_best.trajectories) + ")";
      std::string pass;
      for (const auto& p : m.pass_at_k)
        pass += "@" + std::to_string(p.k) + "=" + Fmt("%.2f", p.value) + " ";
      out += "  " + Pad(std::to_string(m.turn_limit), 4) + Pad(ShareText(m.correct), 26) +
             Pad(ShareText(m.verified), 26) + Pad(ShareText(m.verified_upstream), 26) +
             Pad(Opt(m.best_speedup), 8) + Pad(med, 26) + pass + "\n";
    }
    out += "  first correct turn:";
    for (const auto& [turn, n] : g.first_correct_turn)
      out += " " + std::to_string(turn) + ":" + std::to_string(n);
    out += " never:" + std::to_string(g.never_correct) + "\n";
    out += "  outcomes per turn:\n";
    for (const TurnOutcomes& t : g.outcomes_by_turn) {
      out += "    turn " + std::to_string(t.turn) + " (" + std::to_string(t.reached) + "):";
      for (const auto& [name, n] : t.counts)
        if (n) out += " " + name + " " + std::to_string(n);
      out += "\n";
    }
    out += "  tokens per turn (mean/median): prompt " + Fmt("%.0f", g.tokens.prompt.mean) + "/" +
           Fmt("%.0f", g.tokens.prompt.median) + ", completion " +
           Fmt("%.0f", g.tokens.completion.mean) + "/" + Fmt("%.0f", g.tokens.completion.median) +
           ", reasoning " + Fmt("%.0f", g.tokens.reasoning.mean) + "/" +
           Fmt("%.0f", g.tokens.reasoning.median) + "\n";
  }
  return out;
}

std::string MetricsCsv(const std::vector<GroupMetrics>& groups) {
  std::string out =
      "model,arch,task,pack,turn_limit,trajectories,correct,correct_share,correct_ci_low,"
      "correct_ci_high,verified,verified_share,verified_ci_low,verified_ci_high,"
      "verified_upstream,verified_upstream_share,verified_upstream_ci_low,"
      "verified_upstream_ci_high,best_speedup,"
      "timed_trajectories,median_best_speedup,median_best_ci_low,median_best_ci_high,"
      "mean_best_speedup,pass_at_k\n";
  auto ci = [](const std::optional<ConfidenceInterval>& c) {
    return c ? Fmt("%.6g", c->low) + "," + Fmt("%.6g", c->high) : std::string(",");
  };
  for (const GroupMetrics& g : groups)
    for (const TurnLimitMetrics& m : g.by_limit) {
      std::string pass;
      for (const auto& p : m.pass_at_k)
        pass += (pass.empty() ? "" : ";") + std::to_string(p.k) + ":" + Fmt("%.6g", p.value);
      out += Csv(g.key.model) + "," + Csv(g.key.arch) + "," + Csv(g.key.task) + "," +
             Csv(g.key.pack) + "," + std::to_string(m.turn_limit) + "," +
             std::to_string(g.trajectories) + "," + std::to_string(m.correct.count) + "," +
             Fmt("%.6g", m.correct.share) + "," + ci(m.correct.ci) + "," +
             std::to_string(m.verified.count) + "," + Fmt("%.6g", m.verified.share) + "," +
             ci(m.verified.ci) + "," + std::to_string(m.verified_upstream.count) + "," +
             Fmt("%.6g", m.verified_upstream.share) + "," + ci(m.verified_upstream.ci) + "," +
             (m.best_speedup ? Fmt("%.6g", *m.best_speedup) : "") + "," +
             std::to_string(m.per_trajectory_best.trajectories) + "," +
             (m.per_trajectory_best.median ? Fmt("%.6g", *m.per_trajectory_best.median) : "") +
             "," + ci(m.per_trajectory_best.median_ci) + "," +
             (m.per_trajectory_best.mean ? Fmt("%.6g", *m.per_trajectory_best.mean) : "") + "," +
             Csv(pass) + "\n";
    }
  return out;
}

std::string TurnsJsonl(const Dataset& data) {
  std::string out;
  for (const TrajectoryRow& t : data.trajectories)
    for (const TurnRow& r : t.turns) {
      json j = {{"run", t.run_id},
                {"trajectory", t.id},
                {"model", t.model},
                {"provider", t.provider},
                {"task", t.task},
                {"workload", t.workload},
                {"arch", t.arch},
                {"pack", t.pack},
                {"turn", r.turn},
                {"outcome", r.outcome},
                {"status", r.status},
                {"reason", r.reason},
                {"verification", r.verification},
                {"arch_tag", r.arch_tag},
                {"upstream_arch_tag", r.UpstreamArchTag()},
                {"evaluation_id", r.evaluation_id},
                {"kernel_file", r.kernel_file},
                {"prompt_tokens", r.prompt_tokens},
                {"completion_tokens", r.completion_tokens},
                {"reasoning_tokens", r.reasoning_tokens}};
      j["speedup"] = r.speedup ? json(*r.speedup) : json();
      j["tflops"] = r.tflops ? json(*r.tflops) : json();
      out += j.dump() + "\n";
    }
  return out;
}

std::string PublishedArch(const std::string& arch) {
  const ArchInfo* a = FindArchitecture(arch);
  return a ? std::string(a->published) : arch;
}

std::vector<PublishedResult> LoadPublishedResults(const std::string& path) {
  if (!FileExists(path)) throw InputError(path + ": no such readable file");
  std::vector<std::string> lines = SplitLines(ReadFile(path));
  if (lines.empty() || Trim(lines[0]) !=
                           "model,arch,definition,run,turn_limit,trajectories,correct,"
                           "correct_with_verified_arch_instructions,best_speedup")
    throw InputError(path + ": not the published results layout (header differs)");
  std::vector<PublishedResult> rows;
  for (size_t i = 1; i < lines.size(); ++i) {
    if (Trim(lines[i]).empty()) continue;
    std::vector<std::string> f = Split(lines[i], ',');
    if (f.size() != 9) throw InputError(path + ":" + std::to_string(i + 1) + ": expected 9 fields");
    try {
      rows.push_back({f[0], f[1], f[2], f[3], std::stoi(f[4]), std::stoi(f[5]), std::stoi(f[6]),
                      std::stoi(f[7]), f[8].empty() ? 0.0 : std::stod(f[8])});
    } catch (const std::exception&) {
      throw InputError(path + ":" + std::to_string(i + 1) + ": malformed number");
    }
  }
  return rows;
}

std::string ComparisonTable(const std::vector<GroupMetrics>& groups,
                            const std::vector<PublishedResult>& published) {
  std::string out;
  for (const GroupMetrics& g : groups)
    for (const TurnLimitMetrics& m : g.by_limit)
      for (const PublishedResult& p : published) {
        if (Lower(p.model) != Lower(g.key.model) || p.arch != PublishedArch(g.key.arch) ||
            p.definition != g.key.task || p.turn_limit != m.turn_limit)
          continue;
        if (out.empty())
          out = Pad("model", 22) + Pad("task", 24) + Pad("T", 4) + Pad("correct ours/pub", 22) +
                Pad("verified (paper) ours/pub", 28) + Pad("verified (ours)", 17) +
                "best speedup ours/pub\n";
        auto pair = [](int a, int n, int b, int m) {
          return std::to_string(a) + "/" + std::to_string(n) + " vs " + std::to_string(b) + "/" +
                 std::to_string(m);
        };
        out += Pad(g.key.model, 22) + Pad(g.key.task, 24) + Pad(std::to_string(m.turn_limit), 4) +
               Pad(pair(m.correct.count, m.correct.total, p.correct, p.trajectories), 22) +
               // The published figure counts under the paper's rule: compare like with like.
               Pad(pair(m.verified_upstream.count, m.verified_upstream.total, p.verified,
                        p.trajectories),
                   28) +
               Pad(std::to_string(m.verified.count) + "/" + std::to_string(m.verified.total), 17) +
               Opt(m.best_speedup) + " vs " + Fmt("%.3f", p.best_speedup) + "  (" + p.run + ")\n";
      }
  return out;
}

}  // namespace ptxbench
