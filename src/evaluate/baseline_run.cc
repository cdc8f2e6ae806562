#include "evaluate/baseline_run.h"

#include "common/files.h"
#include "evaluate/timing_judge.h"
#include "measure/baseline.h"
#include "run/children.h"

namespace ptxbench {

using nlohmann::json;

json MeasureBaseline(const BaselineRequest& req) {
  auto t0 = std::chrono::steady_clock::now();
  const Definition& def = *req.definition;
  const Workload& wl = *req.workload;
  Axes axes = def.FullAxes(wl);
  ScratchDir scratch("ptxbench-baseline");
  const json baseline_options =
      PrepareBaselineOptions(*FindFamily(def.family), axes, req.attention,
                             req.cache_root.empty() ? CacheRoot() : req.cache_root);
  ChildRequest tc;
  tc.name = "timing";
  tc.work_dir = scratch.path();
  tc.executable = req.executable;
  tc.timeout = req.timeout;
  tc.spec = {{"role", "timing"},
             {"family", def.family},
             {"axes", axes},
             {"out_dir", scratch.path()},
             {"warmup", req.warmup},
             {"iterations", req.iterations},
             {"buffer_sets", req.buffer_sets},
             {"seed_base", req.seed},
             {"baseline", true},
             {"baseline_only", true},
             {"baseline_options", baseline_options},
             {"peak_n", 0}};
  ChildOutcome to = RunChild(tc);

  TimingContext ctx;
  ctx.flops = def.Flops(wl);
  ctx.timeout = req.timeout;
  ctx.warmup = req.warmup;
  ctx.iterations = req.iterations;
  TimingJudgement j = JudgeTiming(to.messages, to.exit, ctx);
  const json& base = j.performance.value("baseline", json::object());

  json out = {{"task", def.name},
              {"workload", wl.id},
              {"axes", axes},
              {"flops", ctx.flops},
              {"headline", wl.headline}};
  std::string state = base.value("state", "not_reached");
  if (base.contains("choice")) out["choice"] = base["choice"];
  if (j.performance.value("state", "") == "skipped") {
    state = "skipped";
    out["reason"] = j.performance.value("reason", "");
  } else if (state == "ran") {
    for (const char* k : {"median", "p10", "p90", "tflops"})
      if (base.contains(k)) out[k] = base[k];
    out["count"] = base["before"].value("count", 0);
    out["name"] = base.value("name", "");
    out["library"] = base.value("library", json());
  } else if (state == "unsupported" || state == "skipped") {
    out["reason"] = base.value("reason", "");
  } else {
    state = "failed";
    const json* e = nullptr;
    for (const char* ev : {"baseline_error", "error"})
      if (!e) e = to.First(ev);
    out["reason"] = e ? e->value("message", "") : "the timing child " + to.exit.Describe();
  }
  out["state"] = state;
  if (j.performance.contains("protocol")) out["protocol"] = j.performance["protocol"];
  if (const json* d = to.First("device")) {
    out["gpu"] = *d;
    out["gpu"].erase("event");
  }
  out["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace ptxbench
