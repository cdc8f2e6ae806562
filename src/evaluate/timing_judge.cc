#include "evaluate/timing_judge.h"

#include <cmath>
#include <map>
#include <set>

#include "common/json_fields.h"
#include "common/strings.h"
#include "measure/call_activity.h"
#include "measure/summary.h"

namespace ptxbench {

using nlohmann::json;

namespace {

struct Phase {
  std::vector<double> span_s, host_s, idle_s;  // timed calls only
  int first_empty_call = -1;
  int calls = 0, empty = 0, outlived = 0, stray = 0, inputs_changed = 0;
  int first_bad_call = -1;
  std::map<std::string, int> kernels;  // every call, warm-up included
  std::vector<std::string> outlived_names, stray_names;
  double outlived_by_s = 0;
};

void AddUnique(std::vector<std::string>* v, const json& names) {
  for (const auto& n : names) {
    std::string s = n.get<std::string>();
    if (std::find(v->begin(), v->end(), s) == v->end() && v->size() < kMaxActivityNames)
      v->push_back(s);
  }
}

// A summary as the record keeps it.
SampleSummary Recorded(const Summary& s) {
  return {s.count, s.median, s.p10, s.p90, s.min, s.max, s.mean};
}

// A baseline that was not timed, and why: no name, no numbers.
BaselineTiming NotTimed(const std::string& state, const std::string& reason) {
  BaselineTiming b;
  b.state = state;
  b.reason = reason;
  return b;
}

// What the record says one timed call's span covers.
constexpr const char* kSpanCovers =
    "first start to last end of every kernel, copy and set started between the call and the "
    "stream's synchronization, on any stream";

std::string Ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  return buf;
}

std::string Tflops(double flops_per_second) {
  return FormatNumber("%.0f", flops_per_second * 1e-12) + " TFLOP/s";
}

}  // namespace

bool HostTimeExceedsGpu(double host_median_s, double gpu_median_s) {
  return host_median_s > 1.5 * gpu_median_s + 1e-3;
}

bool GpuMostlyIdle(double idle_median_s, double span_median_s) {
  return idle_median_s > 1e-3 && idle_median_s > 0.5 * span_median_s;
}

TimedCallPlan PlanTimedCalls(int warmup, int iterations, double est, double budget_s) {
  TimedCallPlan p;
  p.warmup = p.requested_warmup = warmup;
  p.iterations = p.requested_iterations = iterations;
  p.estimated_call_s = est;
  p.budget_s = budget_s;
  if (est <= 0 || budget_s <= 0 || (warmup + iterations) * est <= budget_s) return p;
  int fit = static_cast<int>(budget_s / est);
  p.warmup = std::min(warmup, std::max(2, fit / 5));
  p.iterations = std::min(iterations, std::max(10, fit - p.warmup));
  p.reduced = p.warmup != warmup || p.iterations != iterations;
  return p;
}

json ToJson(const TimedCallPlan& p) {
  json j;
  PTXBENCH_JSON_SET_FIELDS(j, p, warmup, iterations, requested_warmup, requested_iterations,
                           estimated_call_s, budget_s, reduced);
  return j;
}

namespace {

// The judge's reading of one timing conversation: the phases' samples and the events that
// decide, then one method per question (how the child ended, the defenses, the baseline, the
// speed). The first verdict found stands.
struct Judge {
  Judge(const ExitInfo& e, const TimingContext& c) : exit(e), ctx(c) {}
  const ExitInfo& exit;
  const TimingContext& ctx;
  TimingJudgement j;
  std::map<std::string, Phase> phases;
  const json* done = nullptr;
  const json* error = nullptr;
  const json* refused = nullptr;
  std::vector<const json*> baseline_errors;
  std::string baseline_none, baseline_unsupported, unavailable, last_phase;
  bool candidate_started = false;
  Summary cs;  // the candidate's timed spans

  void verdict(Status s, std::string reason, std::string message, bool claimed_infra = false) {
    if (!j.verdict)
      j.verdict = TimingVerdict{s, std::move(reason), std::move(message), claimed_infra};
  }

  void AddSample(const json& m);
  void Read(const std::vector<json>& messages);
  bool Start();  // false: CUPTI was unavailable (the layer skipped)
  void JudgeEnding();
  void JudgeDefenses();
  void JudgeBaseline();
  void JudgeSpeed();
  void WithholdWithoutForeignCheck();
};

void Judge::AddSample(const json& m) {
  Phase& p = phases[m.value("phase", "")];
  last_phase = m.value("phase", "");
  ++p.calls;
  const json a = m.value("activity", json::object());
  const json kernels = a.value("kernels", json::object());  // kept alive for items()
  for (const auto& [name, count] : kernels.items()) p.kernels[name] += count.get<int>();
  if (a.value("records", 0) == 0) {
    ++p.empty;
    if (p.first_empty_call < 0) p.first_empty_call = m.value("index", 0);
  }
  if (int o = a.value("outlived", 0)) {
    p.outlived += o;
    p.outlived_by_s = std::max(p.outlived_by_s, a.value("outlived_by_ns", 0.0) * 1e-9);
    AddUnique(&p.outlived_names, a.value("outlived_names", json::array()));
    if (p.first_bad_call < 0) p.first_bad_call = m.value("index", 0);
  }
  if (int s = a.value("stray", 0)) {
    p.stray += s;
    AddUnique(&p.stray_names, a.value("stray_names", json::array()));
    if (p.first_bad_call < 0) p.first_bad_call = m.value("index", 0);
  }
  if (!m.value("inputs_unchanged", true)) ++p.inputs_changed;
  if (!m.value("warmup", false)) {
    p.span_s.push_back(a.value("span_ns", 0.0) * 1e-9);
    p.host_s.push_back(m.value("host_ns", 0.0) * 1e-9);
    double span = a.value("span_ns", 0.0), busy = a.value("busy_ns", span);
    p.idle_s.push_back(std::max(0.0, span - busy) * 1e-9);
  }
  if (m.contains("outputs")) {
    TimedOutput o{m.value("index", 0), m.value("set", 0), m.value("seed", uint64_t{0}), {}};
    for (const auto& f : m["outputs"]) o.files.push_back(f.at("file"));
    j.outputs.push_back(o);
  }
}

void Judge::Read(const std::vector<json>& messages) {
  for (const json& m : messages) {
    std::string ev = m.value("event", "");
    if (ev == "timing_sample") {
      AddSample(m);
    } else if (ev == "call_started" && m.value("phase", "") == "candidate") {
      candidate_started = true;
      last_phase = "candidate";
    } else if (ev == "timing_done") {
      done = &m;
    } else if (ev == "error" && !error) {
      error = &m;
    } else if (ev == "error" && error->value("_child", "") == "baseline" &&
               m.value("_child", "") == "candidate") {
      error = &m;  // the candidate's own failure explains more than a baseline's
    } else if (ev == "refused" && !refused) {
      refused = &m;
    } else if (ev == "baseline_error") {
      baseline_errors.push_back(&m);
    } else if (ev == "baseline_none") {
      baseline_none = m.value("reason", "");
    } else if (ev == "baseline_unsupported") {
      baseline_unsupported = m.value("message", "");
    } else if (ev == "timing_unavailable") {
      unavailable = m.value("reason", "");
    } else if (ev == "peak_done" && m.value("ok", false)) {
      j.peak_detail = m;
    }
  }
}

bool Judge::Start() {
  PerformanceLayer& perf = j.performance;
  if (!unavailable.empty()) {
    perf = PerformanceLayer::Skipped("CUPTI is unavailable, so GPU time cannot be measured: " +
                                     unavailable);
    return false;
  }
  perf.state = "ran";
  perf.timer = "cupti_activity";
  TimingProtocol& protocol = perf.protocol.emplace();
  protocol.calls = TimingProtocol::Calls{ctx.warmup, ctx.iterations, true, true, kSpanCovers};
  perf.child_exit = exit.Describe();
  if (done) {
    // A protocol that is not an object throws here, where merging it always did.
    protocol.child_additions.update(done->value("protocol", json::object()));
    perf.clocks = done->value("clocks", json::object());
  }

  // --- the candidate's samples ---
  Phase& c = phases["candidate"];
  cs = Summarize(c.span_s);
  perf.candidate = CandidateTiming{Recorded(cs),
                                   Recorded(Summarize(c.host_s)),
                                   c.calls,
                                   c.empty,
                                   {c.kernels.begin(), c.kernels.end()}};
  return true;
}

void Judge::JudgeEnding() {
  const Phase& c = phases["candidate"];
  const int total = ctx.warmup + ctx.iterations;
  // --- how the child ended ---
  if (exit.kind == ExitKind::kTimedOut) {
    j.performance.state = "timed_out";
    if (last_phase == "candidate" || ctx.candidate_loaded)
      verdict(Status::kTimeout, "",
              "the candidate did not finish its " + std::to_string(total) + " timed calls within " +
                  std::to_string(ctx.timeout.count()) + " s (" + std::to_string(c.calls) +
                  " done; the partial samples are kept)");
    else
      verdict(Status::kInfraError, "",
              "the timing child ran out of time in the " +
                  (last_phase.empty() ? std::string("setup") : last_phase) + " phase");
  }
  for (const json* e : baseline_errors)
    verdict(Status::kInfraError, "",
            "the baseline failed (" + e->value("phase", "") + "): " + e->value("message", ""));
  if (error) {
    std::string stage = error->value("stage", ""), phase = error->value("phase", "");
    std::string msg = error->value("message", "");
    std::string at = error->contains("index")
                         ? " (call " + std::to_string(error->value("index", 0)) + ")"
                         : std::string();
    const bool from_candidate = error->value("_child", "candidate") == "candidate";
    if (stage == "load" || (stage == "timing" && (phase == "candidate" || phase == "witness")))
      verdict(Status::kRuntimeError, "", msg + " while being timed" + at);
    else if (from_candidate && (ctx.candidate_loaded || candidate_started))
      // Whatever stage it names: the process had loaded the candidate, so the failure is the
      // candidate's unless a candidate-free probe finds the GPU unhealthy.
      verdict(Status::kRuntimeError, "", msg + " while being timed (" + stage + " " + phase + ")",
              stage == "harness" || stage == "setup");
    else
      verdict(Status::kInfraError, "",
              "the timing child failed (" + stage + " " + phase + "): " + msg);
  }
  if (refused)
    verdict(Status::kRuntimeError, "",
            "run returned " + std::to_string(refused->value("rc", 0)) + " on timed call " +
                std::to_string(refused->value("index", 0)) + " after accepting the shape");
  if (!done && !j.verdict) {
    if (ctx.candidate_loaded) candidate_started = true;
    if (exit.kind == ExitKind::kSignaled && candidate_started)
      verdict(Status::kRuntimeError, "",
              "the candidate process was " + exit.Describe() + " while being timed");
    else
      verdict(candidate_started ? Status::kRuntimeError : Status::kInfraError, "",
              "the timing child ended (" + exit.Describe() + ") before finishing");
  }
}

void Judge::JudgeDefenses() {
  const Phase& c = phases["candidate"];
  // --- the defenses, over every call of the candidate (warm-up included) ---
  TimingDefenses defenses;
  std::vector<std::string>& vendor = defenses.new_vendor_libraries;
  if (done)
    for (const auto& l : done->value("new_vendor_libraries", json::array()))
      vendor.push_back(l.get<std::string>());
  if (!vendor.empty())
    verdict(Status::kRuleViolation, "forbidden_library",
            "the candidate loaded " + Join(vendor) + " at run time");
  // The baseline's own kernels, as its calls before the candidate's ran them.
  std::vector<std::string> baseline_kernels;
  for (const auto& [name, count] : phases["baseline_before"].kernels)
    baseline_kernels.push_back(name);
  if (ctx.allowed_known) {
    std::vector<std::string> foreign =
        ForeignKernels(c.kernels, ctx.allowed_kernels, baseline_kernels);
    defenses.foreign_kernels = {"ran", foreign, ""};
    if (!foreign.empty())
      verdict(Status::kRuleViolation, "foreign_kernel",
              "kernels that are not functions of the candidate's cubin ran during its calls: " +
                  Truncate(Join(foreign), 300));
  } else {
    defenses.foreign_kernels = {
        "skipped",
        {},
        "the candidate cubin's functions are unknown (static inspection did not run)"};
  }
  defenses.outlived = {c.outlived, c.outlived_by_s, c.outlived_names};
  defenses.stray = {c.stray, c.stray_names};
  if (c.outlived > 0)
    verdict(Status::kRuleViolation, "outside_stream",
            "work the candidate launched on another stream was still running " +
                Ms(c.outlived_by_s) + " after its stream was synchronized (first at call " +
                std::to_string(c.first_bad_call) + ")");
  if (c.stray > 0)
    verdict(Status::kRuleViolation, "outside_stream",
            "the candidate launched GPU work outside its calls (" + Join(c.stray_names) +
                "; first at call " + std::to_string(c.first_bad_call) + ")");
  defenses.empty_calls = c.empty;
  if (c.empty > 0)
    verdict(Status::kRuleViolation, "call_history",
            std::to_string(c.empty) + " of the candidate's " + std::to_string(c.calls) +
                " timed-phase calls launched no GPU work at all (first: call " +
                std::to_string(c.first_empty_call) +
                "), so their outputs were never written after the poison fill");
  Summary host = Summarize(c.host_s);
  if (cs.count > 0 && HostTimeExceedsGpu(host.median, cs.median))
    verdict(Status::kRuleViolation, "outside_stream",
            "a call takes " + Ms(host.median) + " on the host but only " + Ms(cs.median) +
                " on the GPU: work done outside the GPU stream is not timed");
  Summary idle = Summarize(c.idle_s);
  defenses.gpu_idle_in_call = Recorded(idle);
  if (cs.count > 0 && GpuMostlyIdle(idle.median, cs.median))
    verdict(Status::kRuleViolation, "outside_stream",
            "the GPU sat idle for " + Ms(idle.median) + " of a call's " + Ms(cs.median) +
                " (median): the work was done on the host, not in GPU kernels");
  defenses.inputs_changed_calls = c.inputs_changed;
  if (c.inputs_changed > 0)
    verdict(Status::kRuleViolation, "inputs_modified",
            "the candidate modified its inputs in " + std::to_string(c.inputs_changed) +
                " timed calls");
  j.performance.defenses = std::move(defenses);
}

void Judge::JudgeBaseline() {
  PerformanceLayer& perf = j.performance;
  // --- the baseline, before and after ---
  Phase& b0 = phases["baseline_before"];
  Phase& b1 = phases["baseline_after"];
  BaselineTiming base;
  base.name = done ? done->value("baseline_name", "") : "";
  // The library asked for (attention forward: flashinfer@<release> or cudnn), kept whatever
  // happened.
  const std::string choice = done ? done->value("baseline_choice", "") : "";
  if (!baseline_none.empty()) {
    base = NotTimed("skipped", baseline_none);
  } else if (!baseline_unsupported.empty()) {
    // The library has no kernel for this shape: said, and no speedup claimed.
    base = NotTimed("unsupported", baseline_unsupported);
  } else if (!b0.span_s.empty()) {
    Summary before = Summarize(b0.span_s), after = Summarize(b1.span_s);
    std::vector<double> pooled = b0.span_s;
    pooled.insert(pooled.end(), b1.span_s.begin(), b1.span_s.end());
    Summary all = Summarize(pooled);
    base.state = "ran";
    if (done) base.library = done->value("baseline", json());
    base.before = Recorded(before);
    base.after = Recorded(after);
    base.pooled = BaselineTiming::Pooled{all.median, all.p10, all.p90};
    if (after.count > 0 && before.median > 0) {
      double drift = after.median / before.median - 1;
      base.drift = BaselineTiming::Drift{drift, std::fabs(drift) > ctx.drift_threshold};
    }
    if (cs.count > 0 && cs.median > 0) {
      perf.speedup = all.median / cs.median;
      // A conservative range from the two spreads: slow baseline over fast candidate and
      // the reverse.
      if (cs.p90 > 0 && cs.p10 > 0)
        perf.speedup_range = std::pair{all.p10 / cs.p90, all.p90 / cs.p10};
    }
    if (all.median > 0 && ctx.flops > 0) base.tflops = ctx.flops / all.median * 1e-12;
  } else {
    base.state = baseline_errors.empty() ? "not_reached" : "failed";
  }
  base.choice = choice;
  perf.baseline = std::move(base);
}

void Judge::JudgeSpeed() {
  PerformanceLayer& perf = j.performance;
  if (cs.count > 0 && cs.median > 0 && ctx.flops > 0) {
    double flops_s = ctx.flops / cs.median;
    perf.tflops = flops_s * 1e-12;
    std::optional<double> peak = ctx.peak_flops;
    Phase& pk = phases["peak"];
    if (!pk.span_s.empty() && !j.peak_detail.is_null()) {
      double n = j.peak_detail.value("n", 0.0);
      // The fastest call, not the median: a peak is what the GPU can do at best.
      double best = Summarize(pk.span_s).min;
      if (best > 0) {
        j.peak_measured = 2 * n * n * n / best;
        peak = j.peak_measured;
      }
    }
    if (peak) {
      perf.peak_tflops = *peak * 1e-12;
      perf.percent_of_peak = 100 * flops_s / *peak;
    }
    // A speed the GPU cannot reach is a forged time, never a speedup.
    const double limit = peak ? *peak * ctx.impossible_over_peak : ctx.model_ceiling_flops;
    if (limit > 0 && flops_s > limit) {
      verdict(Status::kRuleViolation, "impossible_speed",
              "the timed median claims " + Tflops(flops_s) + " for the task's FLOPs, above " +
                  (peak ? "the measured peak's " + Tflops(*peak) + " by more than " +
                              FormatNumber("%.2g", ctx.impossible_over_peak) + "x"
                        : "this GPU model's " + Tflops(limit)) +
                  ": no kernel does that");
      perf.speedup.reset();
      perf.speedup_range.reset();
    }
  }
}

// Fail closed: without the candidate's functions the foreign-kernel check did not run, and a
// vendor kernel could have done the timed work.
void Judge::WithholdWithoutForeignCheck() {
  PerformanceLayer& perf = j.performance;
  if (!ctx.allowed_known && perf.speedup) {
    perf.speedup.reset();
    perf.speedup_range.reset();
    perf.speedup_withheld =
        "the foreign-kernel check did not run (the candidate cubin's functions are unknown): no "
        "speed is credited without it";
  }
}

}  // namespace

TimingJudgement JudgeTiming(const std::vector<json>& messages, const ExitInfo& exit,
                            const TimingContext& ctx) {
  Judge judge(exit, ctx);
  judge.Read(messages);
  if (!judge.Start()) return judge.j;
  judge.JudgeEnding();
  judge.JudgeDefenses();
  judge.JudgeBaseline();
  judge.JudgeSpeed();
  judge.WithholdWithoutForeignCheck();
  return judge.j;
}

}  // namespace ptxbench
