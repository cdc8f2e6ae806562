#include "report/html.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "record/layers.h"
#include "report/tables.h"

#include "common/files.h"
#include "common/strings.h"
#include "record/record.h"

namespace ptxbench {
namespace {

using nlohmann::json;

// Numbers in data-value attributes: %.6g, so a test can write the expected value the same way.
std::string Num(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  return FormatNumber("%.6g", v);
}

// SVG coordinates: one decimal is finer than a pixel and keeps the output short.
std::string Px(double v) { return FormatNumber("%.1f", v); }

std::string Pct(double share) { return FormatNumber("%.1f%%", 100 * share); }

std::string Attr(const std::string& name, const std::string& value) {
  return " " + name + "=\"" + HtmlEscape(value) + "\"";
}

// An id fragment from free text (task names, trajectory ids): letters, digits, - and _ only, so
// ids stay valid and stable.
std::string IdPart(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-') ? c : '_';
  return out;
}

// Category colours, fixed so the same outcome always has the same colour across groups.
const char* OutcomeColor(const std::string& outcome) {
  static const std::map<std::string, const char*> kColors = {
      {"extraction", "#9e9e9e"},     {"rejected", "#795548"}, {"compile", "#e57373"},
      {"runtime", "#ff8a65"},        {"memory", "#ffb74d"},   {"incorrect", "#fdd835"},
      {"rule_violation", "#ba68c8"}, {"correct", "#64b5f6"},  {"verified", "#2e7d32"},
      {"model_error", "#546e7a"},    {"other", "#cfd8dc"}};
  auto it = kColors.find(outcome);
  return it == kColors.end() ? "#cfd8dc" : it->second;
}

std::string CiText(const std::optional<ConfidenceInterval>& ci) {
  if (!ci) return "";
  return " <span class=\"ci\">[" + Pct(ci->low) + ", " + Pct(ci->high) + "]</span>";
}

std::string CiAttrs(const std::optional<ConfidenceInterval>& ci) {
  if (!ci) return "";
  return Attr("data-ci-low", Num(ci->low)) + Attr("data-ci-high", Num(ci->high));
}

std::optional<double> FiniteSpeedup(const TurnRow& r) {
  if (!r.Correct() || !r.speedup || !std::isfinite(*r.speedup)) return std::nullopt;
  return r.speedup;
}

// The turn a trajectory is judged by: its verified turn with the highest speedup, else its
// correct turn with the highest speedup (untimed below timed, earlier turn on ties), else its
// last turn; nullptr when it has no turns.
const TurnRow* BestTurn(const TrajectoryRow& t) {
  const TurnRow* best = nullptr;
  auto rank = [](const TurnRow& r) { return r.Verified() ? 2 : r.Correct() ? 1 : 0; };
  for (const TurnRow& r : t.turns) {
    if (!best) {
      best = &r;
      continue;
    }
    int a = rank(r), b = rank(*best);
    if (a != b) {
      if (a > b) best = &r;
      continue;
    }
    if (a == 0) {
      best = &r;  // among failures, the last one says where the trajectory ended
      continue;
    }
    double sa = FiniteSpeedup(r).value_or(-1), sb = FiniteSpeedup(*best).value_or(-1);
    if (sa > sb) best = &r;
  }
  return best;
}

std::optional<double> BestSpeedup(const TrajectoryRow& t) {
  std::optional<double> best;
  for (const TurnRow& r : t.turns)
    if (auto s = FiniteSpeedup(r); s && (!best || *s > *best)) best = s;
  return best;
}

// Reads a file under the run folder, bounded; nullopt when it is not there.
std::optional<std::string> ReadRunFile(const TrajectoryRow& t, const std::string& rel,
                                       size_t max_bytes, bool* cut) {
  *cut = false;
  if (rel.empty() || t.run_dir.empty()) return std::nullopt;
  std::string path = t.run_dir + "/" + rel;
  if (!FileExists(path)) return std::nullopt;
  try {
    std::string s = ReadFile(path);
    if (s.size() > max_bytes) {
      s.resize(max_bytes);
      *cut = true;
    }
    return s;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string JsonText(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

class Page {
 public:
  explicit Page(const HtmlOptions& o) : opt_(o) {}

  void Group(size_t n, const GroupMetrics& g, const std::vector<const TrajectoryRow*>& trs);
  std::string& out() { return out_; }
  int charts() const { return charts_; }

 private:
  void Summary(const std::string& gid, const GroupMetrics& g);
  void Curve(const std::string& gid, const std::vector<const TrajectoryRow*>& trs);
  void Speedups(const std::string& gid, const std::vector<const TrajectoryRow*>& trs);
  void Outcomes(const std::string& gid, const GroupMetrics& g);
  void Evidence(const std::string& gid, const std::vector<const TrajectoryRow*>& trs);
  void Kernels(const std::string& gid, const std::vector<const TrajectoryRow*>& trs);
  void Sass(const EvaluationRecord& record);

  const HtmlOptions& opt_;
  std::string out_;
  int charts_ = 0;
};

void Page::Group(size_t n, const GroupMetrics& g, const std::vector<const TrajectoryRow*>& trs) {
  std::string gid = "g" + std::to_string(n);
  out_ +=
      "<section class=\"group\"" + Attr("id", gid) + Attr("data-model", g.key.model) +
      Attr("data-arch", g.key.arch) + Attr("data-task", g.key.task) +
      Attr("data-pack", g.key.pack) + Attr("data-trajectories", std::to_string(g.trajectories)) +
      Attr("data-unproven-pack", std::to_string(g.unproven_pack_trajectories)) +
      Attr("data-unfinished", std::to_string(g.unfinished_trajectories)) + ">\n<h2>" +
      HtmlEscape(g.key.task) + " <small>" + HtmlEscape(g.key.model) + " · " +
      HtmlEscape(g.key.arch) + (g.key.pack.empty() ? "" : " · " + HtmlEscape(g.key.pack)) + " · " +
      std::to_string(g.trajectories) + " trajectories</small>" +
      (g.unproven_pack_trajectories == 0
           ? ""
           : " <span class=\"unproven\">" + HtmlEscape(UnprovenPackNote(g).substr(3)) + "</span>") +
      (g.unfinished_trajectories == 0
           ? ""
           : " <span class=\"unproven\">" + HtmlEscape(UnfinishedNote(g).substr(3)) + "</span>") +
      "</h2>\n";
  Summary(gid, g);
  out_ += "<div class=\"charts\">\n";
  Curve(gid, trs);
  Speedups(gid, trs);
  Outcomes(gid, g);
  out_ += "</div>\n";
  Evidence(gid, trs);
  Kernels(gid, trs);
  out_ += "</section>\n";
}

void Page::Summary(const std::string& gid, const GroupMetrics& g) {
  std::vector<int> ks;
  for (const auto& l : g.by_limit)
    for (const auto& p : l.pass_at_k)
      if (std::find(ks.begin(), ks.end(), p.k) == ks.end()) ks.push_back(p.k);
  std::sort(ks.begin(), ks.end());
  out_ += "<table class=\"summary\"" + Attr("id", gid + "-summary") +
          ">\n<caption>Summary per turn limit T";
  if (g.bootstrap_resamples > 0)
    out_ += " (intervals: " + Num(100 * g.confidence) + "% bootstrap, " +
            std::to_string(g.bootstrap_resamples) + " resamples)";
  out_ +=
      "</caption>\n<thead><tr><th>T</th><th>trajectories</th><th>correct@T</th>"
      "<th>verified@T</th><th>verified@T (paper)</th><th>best speedup@T</th>"
      "<th>median per-trajectory best</th>";
  for (int k : ks) out_ += "<th>pass@" + std::to_string(k) + "</th>";
  out_ += "</tr></thead>\n<tbody>\n";
  for (const auto& l : g.by_limit) {
    std::string t = std::to_string(l.turn_limit);
    out_ += "<tr" + Attr("data-turn-limit", t) + "><td>" + t + "</td><td>" +
            std::to_string(g.trajectories) + "</td>";
    auto share = [&](const char* name, const Share& s) {
      out_ += "<td" + Attr("data-metric", std::string(name) + "@" + t) +
              Attr("data-value", Num(s.share)) + Attr("data-count", std::to_string(s.count)) +
              CiAttrs(s.ci) + ">" + std::to_string(s.count) + "/" + std::to_string(s.total) + " (" +
              Pct(s.share) + ")" + CiText(s.ci) + "</td>";
    };
    share("correct", l.correct);
    share("verified", l.verified);
    share("verified_upstream", l.verified_upstream);
    auto value = [&](const std::string& metric, const std::optional<double>& v,
                     const std::string& extra) {
      out_ += "<td" + Attr("data-metric", metric) +
              (v ? Attr("data-value", Num(*v)) : std::string()) + ">" +
              (v ? Num(*v) + "×" : std::string("—")) + extra + "</td>";
    };
    value("best_speedup@" + t, l.best_speedup, "");
    const SpeedupSummary& p = l.per_trajectory_best;
    std::string extra =
        " <span class=\"ci\">(" + std::to_string(p.trajectories) + " timed" +
        (p.median_ci ? ", [" + Num(p.median_ci->low) + ", " + Num(p.median_ci->high) + "]"
                     : std::string()) +
        ")</span>";
    value("median_best@" + t, p.median, extra);
    for (int k : ks) {
      auto it = std::find_if(l.pass_at_k.begin(), l.pass_at_k.end(),
                             [&](const PassAtKResult& r) { return r.k == k; });
      std::string metric = "pass@" + std::to_string(k) + "@" + t;
      if (it == l.pass_at_k.end()) {
        out_ += "<td" + Attr("data-metric", metric) + ">—</td>";
        continue;
      }
      out_ += "<td" + Attr("data-metric", metric) + Attr("data-value", Num(it->value)) +
              CiAttrs(it->ci) + ">" + Pct(it->value) + CiText(it->ci) + "</td>";
    }
    out_ += "</tr>\n";
  }
  out_ += "</tbody></table>\n";
  // First-correct turns, as a line: where trajectories start to succeed.
  out_ +=
      "<p class=\"first-correct\"" + Attr("id", gid + "-first-correct") + ">First correct turn: ";
  for (const auto& [turn, count] : g.first_correct_turn)
    out_ += "<span" + Attr("data-turn", std::to_string(turn)) +
            Attr("data-value", std::to_string(count)) + ">turn " + std::to_string(turn) + ": " +
            std::to_string(count) + "</span>; ";
  out_ += "<span data-turn=\"never\"" + Attr("data-value", std::to_string(g.never_correct)) +
          ">never: " + std::to_string(g.never_correct) +
          "</span>. Tokens per turn (mean): prompt " + Num(g.tokens.prompt.mean) + ", completion " +
          Num(g.tokens.completion.mean) + ", reasoning " + Num(g.tokens.reasoning.mean) + ".</p>\n";
}

constexpr double kW = 420, kH = 220, kLeft = 44, kRight = 12, kTop = 12, kBottom = 34;

// Opens a chart: the figure carries data-chart so the page's self-check finds every chart.
std::string ChartOpen(const std::string& id, const std::string& kind, const std::string& caption,
                      double width = kW, double height = kH) {
  return "<figure class=\"chart\"" + Attr("id", id) + Attr("data-chart", kind) + "><figcaption>" +
         HtmlEscape(caption) + "</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\"" +
         Attr("width", Px(width)) + Attr("height", Px(height)) +
         Attr("viewBox", "0 0 " + Px(width) + " " + Px(height)) + " role=\"img\">\n";
}

// The y axis of a share chart: 0..100% with grid lines.
std::string ShareAxis(double plot_w, double plot_h) {
  std::string s;
  for (int i = 0; i <= 4; ++i) {
    double y = kTop + plot_h * (1 - i / 4.0);
    s += "<line class=\"grid\" x1=\"" + Px(kLeft) + "\" x2=\"" + Px(kLeft + plot_w) + "\" y1=\"" +
         Px(y) + "\" y2=\"" + Px(y) + "\"/><text class=\"tick\" x=\"" + Px(kLeft - 4) + "\" y=\"" +
         Px(y + 4) + "\" text-anchor=\"end\">" + std::to_string(25 * i) + "%</text>\n";
  }
  return s;
}

void Page::Curve(const std::string& gid, const std::vector<const TrajectoryRow*>& trs) {
  int max_turn = 1;
  for (const auto* t : trs)
    for (const auto& r : t->turns) max_turn = std::max(max_turn, r.turn);
  ++charts_;
  out_ += ChartOpen(gid + "-curve", "curve", "Share correct / verified within turn limit t");
  double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  out_ += ShareAxis(pw, ph);
  auto x = [&](int t) { return kLeft + (max_turn == 1 ? pw / 2 : pw * (t - 1) / (max_turn - 1)); };
  for (int t = 1; t <= max_turn; ++t)
    out_ += "<text class=\"tick\" x=\"" + Px(x(t)) + "\" y=\"" + Px(kTop + ph + 14) +
            "\" text-anchor=\"middle\">" + std::to_string(t) + "</text>\n";
  out_ += "<text class=\"label\" x=\"" + Px(kLeft + pw / 2) + "\" y=\"" + Px(kH - 4) +
          "\" text-anchor=\"middle\">turn limit t</text>\n";
  for (const char* series : {"correct", "verified", "verified_upstream"}) {
    std::string_view name = series;
    auto counts = [&](const TurnRow& r) {
      return name == "verified"            ? r.Verified()
             : name == "verified_upstream" ? r.VerifiedUpstream()
                                           : r.Correct();
    };
    std::string points, dots;
    for (int t = 1; t <= max_turn; ++t) {
      int n = 0;
      for (const auto* tr : trs)
        for (const auto& r : tr->turns)
          if (r.turn <= t && counts(r)) {
            ++n;
            break;
          }
      double share = trs.empty() ? 0 : static_cast<double>(n) / trs.size();
      double y = kTop + ph * (1 - share);
      points += (points.empty() ? "" : " ") + Px(x(t)) + "," + Px(y);
      dots += "<circle class=\"" + std::string(series) + "\" cx=\"" + Px(x(t)) + "\" cy=\"" +
              Px(y) + "\" r=\"3.5\"" + Attr("data-series", series) +
              Attr("data-turn", std::to_string(t)) + Attr("data-count", std::to_string(n)) +
              Attr("data-value", Num(share)) + "><title>" + series + " within " +
              std::to_string(t) + ": " + std::to_string(n) + "/" + std::to_string(trs.size()) +
              "</title></circle>\n";
    }
    out_ += "<polyline class=\"" + std::string(series) + "\" fill=\"none\" points=\"" + points +
            "\"/>\n" + dots;
  }
  out_ +=
      "</svg>\n<p class=\"key\"><span class=\"swatch correct\"></span>correct "
      "<span class=\"swatch verified\"></span>verified "
      "<span class=\"swatch verified_upstream\"></span>verified (paper's rule)</p></figure>\n";
}

void Page::Speedups(const std::string& gid, const std::vector<const TrajectoryRow*>& trs) {
  std::vector<std::pair<std::string, double>> best;
  for (const auto* t : trs)
    if (auto s = BestSpeedup(*t); s && *s > 0) best.emplace_back(t->id, *s);
  ++charts_;
  double height = 130;
  out_ += ChartOpen(gid + "-speedup", "speedup",
                    "Per-trajectory best speedup (log scale; the line at 1× is the library)", kW,
                    height);
  double lo = 1, hi = 1;
  for (const auto& [id, s] : best) lo = std::min(lo, s), hi = std::max(hi, s);
  // At least 0.5x..2x, so the axis always has ticks on both sides of the library.
  lo = std::min(lo, 0.5) / 1.2;
  hi = std::max(hi, 2.0) * 1.2;
  double pw = kW - kLeft - kRight;
  auto x = [&](double v) {
    return kLeft + pw * (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo));
  };
  double axis_y = height - 30;
  out_ += "<line class=\"axis\" x1=\"" + Px(kLeft) + "\" x2=\"" + Px(kLeft + pw) + "\" y1=\"" +
          Px(axis_y) + "\" y2=\"" + Px(axis_y) + "\"/>\n";
  // Ticks at powers of two inside the range, so the scale reads as "twice as fast".
  for (int e = -10; e <= 10; ++e) {
    double v = std::ldexp(1.0, e);
    if (v < lo || v > hi) continue;
    out_ += "<text class=\"tick\" x=\"" + Px(x(v)) + "\" y=\"" + Px(axis_y + 14) +
            "\" text-anchor=\"middle\">" + Num(v) + "×</text>\n";
  }
  if (auto median = MedianOf([&] {
        std::vector<double> v;
        for (const auto& b : best) v.push_back(b.second);
        return v;
      }())) {
    out_ += "<line class=\"median\" data-metric=\"median_best\"" +
            Attr("data-value", Num(*median)) + " x1=\"" + Px(x(*median)) + "\" x2=\"" +
            Px(x(*median)) + "\" y1=\"" + Px(kTop + 8) + "\" y2=\"" + Px(axis_y - 8) +
            "\"><title>median " + Num(*median) + "×</title></line>\n";
  }
  out_ += "<line class=\"reference\" data-reference=\"1\" x1=\"" + Px(x(1)) + "\" x2=\"" +
          Px(x(1)) + "\" y1=\"" + Px(kTop) + "\" y2=\"" + Px(axis_y) + "\"/>\n";
  for (size_t i = 0; i < best.size(); ++i) {
    // A fixed vertical spread by index, so overlapping points stay visible and the output
    // stays deterministic.
    double y = kTop + 16 + static_cast<double>(i % 5) * ((axis_y - kTop - 32) / 4);
    out_ += "<circle class=\"point\" cx=\"" + Px(x(best[i].second)) + "\" cy=\"" + Px(y) +
            "\" r=\"4\"" + Attr("data-trajectory", best[i].first) +
            Attr("data-value", Num(best[i].second)) + "><title>" + HtmlEscape(best[i].first) +
            ": " + Num(best[i].second) + "×</title></circle>\n";
  }
  out_ += "<text class=\"label\" x=\"" + Px(kLeft + pw / 2) + "\" y=\"" + Px(height - 2) +
          "\" text-anchor=\"middle\">" + std::to_string(best.size()) + " of " +
          std::to_string(trs.size()) + " trajectories timed</text>\n</svg></figure>\n";
}

void Page::Outcomes(const std::string& gid, const GroupMetrics& g) {
  ++charts_;
  out_ += ChartOpen(gid + "-outcomes", "outcomes", "Outcomes per turn (share of trajectories)");
  double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  out_ += ShareAxis(pw, ph);
  size_t n = std::max<size_t>(1, g.outcomes_by_turn.size());
  double slot = pw / n, bar = std::min(40.0, slot * 0.7);
  for (size_t i = 0; i < g.outcomes_by_turn.size(); ++i) {
    const TurnOutcomes& to = g.outcomes_by_turn[i];
    double cx = kLeft + slot * (i + 0.5), y = kTop + ph;
    out_ += "<g class=\"bar\"" + Attr("data-turn", std::to_string(to.turn)) +
            Attr("data-reached", std::to_string(to.reached)) + ">\n";
    for (const std::string& c : OutcomeCategories()) {
      auto it = to.counts.find(c);
      int count = it == to.counts.end() ? 0 : it->second;
      if (count == 0) continue;
      double h = g.trajectories ? ph * count / g.trajectories : 0;
      y -= h;
      out_ += "<rect x=\"" + Px(cx - bar / 2) + "\" y=\"" + Px(y) + "\" width=\"" + Px(bar) +
              "\" height=\"" + Px(h) + "\"" + Attr("fill", OutcomeColor(c)) +
              Attr("data-outcome", c) + Attr("data-count", std::to_string(count)) +
              "><title>turn " + std::to_string(to.turn) + ", " + c + ": " + std::to_string(count) +
              "</title></rect>\n";
    }
    out_ += "</g><text class=\"tick\" x=\"" + Px(cx) + "\" y=\"" + Px(kTop + ph + 14) +
            "\" text-anchor=\"middle\">" + std::to_string(to.turn) + "</text>\n";
  }
  out_ += "<text class=\"label\" x=\"" + Px(kLeft + pw / 2) + "\" y=\"" + Px(kH - 4) +
          "\" text-anchor=\"middle\">turn</text>\n</svg>\n<ul class=\"legend\"" +
          Attr("id", gid + "-legend") + ">";
  for (const std::string& c : OutcomeCategories())
    out_ += "<li" + Attr("data-outcome", c) + "><span class=\"swatch\"" +
            Attr("style", std::string("background:") + OutcomeColor(c)) + "></span>" + c + "</li>";
  out_ += "</ul></figure>\n";
}

void Page::Evidence(const std::string& gid, const std::vector<const TrajectoryRow*>& trs) {
  out_ += "<table class=\"evidence\"" + Attr("id", gid + "-evidence") +
          ">\n<caption>Instruction evidence per trajectory (its best turn: verified, else "
          "correct, fastest first; else its last turn)</caption>\n<thead><tr><th>trajectory</th>"
          "<th>turns</th><th>best turn</th><th>best outcome</th><th>speedup</th>"
          "<th>verification</th><th>arch tag</th><th>tag (paper)</th><th>exit</th></tr></thead>\n"
          "<tbody>\n";
  for (const auto* t : trs) {
    const TurnRow* b = BestTurn(*t);
    auto speed = b ? FiniteSpeedup(*b) : std::nullopt;
    out_ += "<tr" + Attr("data-trajectory", t->id) + "><td>" + HtmlEscape(t->id) + "</td><td" +
            Attr("data-field", "turns") + ">" + std::to_string(t->turns.size()) + "</td><td" +
            Attr("data-field", "best_turn") + ">" + (b ? std::to_string(b->turn) : "—") +
            "</td><td" + Attr("data-field", "best_outcome") +
            (b ? Attr("class", "outcome-" + IdPart(b->outcome)) : "") + ">" +
            (b ? HtmlEscape(b->outcome) : "—") + "</td><td" + Attr("data-field", "speedup") +
            (speed ? Attr("data-value", Num(*speed)) : "") + ">" +
            (speed ? Num(*speed) + "×" : "—") + "</td><td" + Attr("data-field", "verification") +
            ">" + (b ? HtmlEscape(b->verification) : "") + "</td><td" +
            Attr("data-field", "arch_tag") + ">" + (b ? HtmlEscape(b->arch_tag) : "") + "</td><td" +
            Attr("data-field", "upstream_arch_tag") + ">" +
            (b ? HtmlEscape(b->UpstreamArchTag()) : "") + "</td><td>" + HtmlEscape(t->exit_status) +
            "</td></tr>\n";
  }
  out_ += "</tbody></table>\n";
}

void Page::Sass(const EvaluationRecord& record) {
  const InstructionDetail d = InstructionDetailOf(record);
  out_ += "<div class=\"sass\">";
  if (!d.has_static) {
    out_ += "<p>No SASS inspection in the record.</p></div>\n";
    return;
  }
  const std::vector<std::string> required = record.Instructions().required_families;
  out_ += "<p>SASS inspection: " + HtmlEscape(d.static_state) +
          (d.static_message.empty() ? "" : " — " + HtmlEscape(d.static_message)) +
          (required.empty() ? "" : "; required: " + HtmlEscape(JsonText(json(required)))) +
          "</p>\n";
  if (d.sass_totals) {
    out_ +=
        "<table class=\"families\"><thead><tr><th>family</th><th>static count</th>"
        "<th>executed (true predicate)</th></tr></thead><tbody>\n";
    for (const InstructionDetail::FamilyCount& n : *d.sass_totals) {
      const InstructionDetail::FamilyCount* e =
          d.executed ? InstructionDetail::Find(*d.executed, n.family) : nullptr;
      out_ += "<tr" + Attr("data-family", n.family) + "><td>" + HtmlEscape(n.family) +
              "</td><td data-field=\"static\"" + Attr("data-value", JsonText(n.written)) + ">" +
              HtmlEscape(JsonText(n.written)) + "</td><td>" +
              (e ? HtmlEscape(JsonText(e->written)) : "—") + "</td></tr>\n";
    }
    out_ += "</tbody></table>\n";
  }
  for (const InstructionDetail::SassFunction& f : d.functions) {
    out_ += "<p class=\"function\">" + HtmlEscape(f.demangled) + " (" +
            HtmlEscape(JsonText(f.instructions)) + " instructions";
    for (const InstructionDetail::FamilyCount& n : f.families)
      out_ += ", " + HtmlEscape(n.family) + " " + HtmlEscape(JsonText(n.written));
    out_ += ")</p>\n";
    if (!f.evidence.empty()) {
      out_ += "<pre class=\"evidence-lines\">";
      size_t shown = 0;
      for (const std::string& line : f.evidence) {
        if (shown++ == opt_.max_evidence_lines) {
          out_ += "… " + std::to_string(f.evidence.size() - opt_.max_evidence_lines) + " more\n";
          break;
        }
        out_ += HtmlEscape(line) + "\n";
      }
      out_ += "</pre>\n";
    }
  }
  if (!d.run_time_evidence.empty()) {
    out_ += "<p>Run-time evidence:</p><pre class=\"evidence-lines\">";
    for (const std::string& line : d.run_time_evidence) out_ += HtmlEscape(line) + "\n";
    out_ += "</pre>\n";
  }
  out_ += "</div>\n";
}

void Page::Kernels(const std::string& gid, const std::vector<const TrajectoryRow*>& trs) {
  int shown = 0;
  for (const auto* t : trs)
    for (const TurnRow& r : t->turns) {
      if (!r.Correct()) continue;
      if (shown++ == 0) out_ += "<h3>Correct kernels</h3>\n";
      std::string id = gid + "-k-" + IdPart(t->id) + "-t" + std::to_string(r.turn);
      auto speed = FiniteSpeedup(r);
      out_ += "<details class=\"kernel\"" + Attr("id", id) + Attr("data-trajectory", t->id) +
              Attr("data-turn", std::to_string(r.turn)) + Attr("data-outcome", r.outcome) +
              "><summary>" + HtmlEscape(t->id) + " turn " + std::to_string(r.turn) + ": " +
              HtmlEscape(r.outcome) + (speed ? ", " + Num(*speed) + "×" : "") +
              (r.arch_tag.empty() ? "" : ", tag " + HtmlEscape(r.arch_tag)) +
              (r.UpstreamArchTag() == r.arch_tag || r.UpstreamArchTag().empty()
                   ? ""
                   : ", tag " + HtmlEscape(r.UpstreamArchTag()) + " under the paper's rule only") +
              "</summary>\n";
      bool cut = false;
      if (auto src = ReadRunFile(*t, r.kernel_file, opt_.max_source_bytes, &cut)) {
        out_ += "<h4>Kernel source (" + HtmlEscape(r.kernel_file) + ")</h4><pre class=\"source\">" +
                HtmlEscape(*src) + "</pre>\n";
        if (cut)
          out_ +=
              "<p class=\"note\">cut at " + std::to_string(opt_.max_source_bytes) + " bytes</p>\n";
      } else {
        out_ += "<p class=\"note\">No kernel source" +
                (r.kernel_file.empty() ? std::string() : " at " + HtmlEscape(r.kernel_file)) +
                ".</p>\n";
      }
      if (auto rec = ReadRunFile(*t, r.evaluation_file, SIZE_MAX, &cut)) {
        json j = json::parse(*rec, nullptr, false);
        std::string pretty =
            j.is_discarded() ? *rec : j.dump(2, ' ', false, json::error_handler_t::replace);
        bool long_record = pretty.size() > opt_.max_record_bytes;
        if (long_record) pretty.resize(opt_.max_record_bytes);
        out_ += "<h4>SASS evidence</h4>\n";
        if (j.is_discarded())
          out_ += "<p class=\"note\">The record is not JSON.</p>\n";
        else
          Sass(FromJson(j));
        out_ += "<h4>Evaluation record (" + HtmlEscape(r.evaluation_file) +
                ")</h4><pre class=\"record\">" + HtmlEscape(pretty) + "</pre>\n";
        if (long_record)
          out_ +=
              "<p class=\"note\">cut at " + std::to_string(opt_.max_record_bytes) + " bytes</p>\n";
      } else {
        out_ += "<p class=\"note\">No evaluation record.</p>\n";
      }
      out_ += "</details>\n";
    }
}

// Kept small and plain: the page must read well without it; it only proves scripts ran.
constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ccc}
h2 small{font-weight:normal;color:#666;font-size:13px}
h2 .unproven{font-size:12px;font-weight:normal;color:#8a4b00;background:#fff1dc;padding:1px 6px}h4{margin:10px 0 4px}
table{border-collapse:collapse;margin:8px 0}caption{text-align:left;color:#555;padding:2px 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left}th{background:#f3f3f3}
.ci{color:#777;font-size:12px}.charts{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
figure.chart{margin:0;border:1px solid #e3e3e3;padding:6px}figcaption{font-size:12px;color:#555}
svg text{font-size:11px;fill:#444}.grid{stroke:#eee}.axis{stroke:#888}
polyline.correct{stroke:#1e88e5;stroke-width:2}polyline.verified{stroke:#2e7d32;stroke-width:2}
polyline.verified_upstream{stroke:#9ccc65;stroke-width:2;stroke-dasharray:5 3}
circle.correct{fill:#1e88e5}circle.verified{fill:#2e7d32}circle.verified_upstream{fill:#9ccc65}circle.point{fill:#6a1b9a;opacity:.75}
.reference{stroke:#d32f2f;stroke-dasharray:4 3}.median{stroke:#222;stroke-width:2}
.swatch{display:inline-block;width:10px;height:10px;margin:0 4px 0 8px;vertical-align:middle}
.swatch.correct{background:#1e88e5}.swatch.verified{background:#2e7d32}
.swatch.verified_upstream{background:#9ccc65}
ul.legend{list-style:none;padding:0;margin:4px 0;font-size:12px;max-width:420px}
ul.legend li{display:inline-block}.key{font-size:12px;margin:2px 0}
pre{background:#f7f7f7;border:1px solid #e3e3e3;padding:8px;overflow:auto;max-height:480px;font-size:12px}
details.kernel{margin:4px 0;border:1px solid #e3e3e3;padding:4px 8px}summary{cursor:pointer}
.note{color:#888}.outcome-verified{color:#2e7d32;font-weight:bold}.outcome-correct{color:#1565c0}
)";

constexpr const char* kScript = R"(
document.addEventListener('DOMContentLoaded', function () {
  var figures = document.querySelectorAll('figure[data-chart]');
  var expected = Number(document.body.getAttribute('data-charts'));
  var ok = figures.length === expected;
  figures.forEach(function (f) {
    var svg = f.querySelector('svg');
    if (!svg || svg.getBoundingClientRect().width <= 0) ok = false;
  });
  document.body.dataset.selfcheck = ok ? 'ok' : 'failed';
});
)";

}  // namespace

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&#39;";
          break;
        default:
          out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A well-formed multi-byte sequence (no overlongs, no surrogates, <= U+10FFFF) is kept.
    size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
    if (c >= 0xF5) len = 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k)
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && len == 3) {
      unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);
    }
    if (ok && len == 4) {
      unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::string HtmlReport(const Dataset& data, const std::vector<GroupMetrics>& groups,
                       const HtmlOptions& options) {
  std::map<GroupKey, std::vector<const TrajectoryRow*>> by_key;
  for (const auto& t : data.trajectories)
    by_key[GroupKey{t.model, t.arch, t.task, t.pack}].push_back(&t);
  Page page(options);
  for (size_t i = 0; i < groups.size(); ++i) {
    auto it = by_key.find(groups[i].key);
    page.Group(i, groups[i], it == by_key.end() ? std::vector<const TrajectoryRow*>{} : it->second);
  }
  std::string head =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
      HtmlEscape(options.title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body" +
      Attr("data-charts", std::to_string(page.charts())) +
      Attr("data-groups", std::to_string(groups.size())) + ">\n<h1>" + HtmlEscape(options.title) +
      "</h1>\n<p class=\"meta\">" + std::to_string(groups.size()) +
      (groups.size() == 1 ? " group, " : " groups, ") + std::to_string(data.trajectories.size()) +
      " trajectories" +
      (options.generated_at.empty() ? std::string()
                                    : "; generated " + HtmlEscape(options.generated_at)) +
      ". Speedups are against the library (cuBLAS/cuDNN) measured in the same "
      "run; verified = passed with the architecture's instructions present and "
      "executed, doing at least half of the work on tensor cores, confirmed out of process; "
      "verified (paper) = the paper's rule, which published figures use: passed with the "
      "instructions present and executed at least once.</p>\n";
  return head + page.out() + "<script>" + kScript + "</script>\n</body>\n</html>\n";
}

}  // namespace ptxbench
