#include "evaluate/baseline_run.h"

#include "common/error.h"
#include "common/files.h"
#include "evaluate/gpu_access.h"
#include "evaluate/timing_judge.h"
#include "measure/baseline.h"
#include "run/children.h"
#include "run/gpu_lock.h"

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
  GpuAccess gpu(GpuLockPath(VisibleGpuId()), req.gpu_lock_timeout, nullptr);
  if (!gpu.Hold(GpuLock::Mode::kAlone))
    return {
        {"task", def.name},
        {"workload", wl.id},
        {"axes", axes},
        {"flops", def.Flops(wl)},
        {"headline", wl.headline},
        {"state", "failed"},
        {"reason", gpu.Failure()},
        {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}};
  ChildOutcome to = RunChild(tc);
  gpu.Release();

  TimingContext ctx;
  ctx.flops = def.Flops(wl);
  ctx.timeout = req.timeout;
  ctx.warmup = req.warmup;
  ctx.iterations = req.iterations;
  TimingJudgement j = JudgeTiming(to.messages, to.exit, ctx);
  const PerformanceLayer& perf = j.performance;
  BaselineTiming base;
  base.state = "not_reached";
  if (perf.baseline) base = *perf.baseline;

  json out = {{"task", def.name},
              {"workload", wl.id},
              {"axes", axes},
              {"flops", ctx.flops},
              {"headline", wl.headline}};
  std::string state = base.state;
  if (!base.choice.empty()) out["choice"] = base.choice;
  if (perf.state == "skipped") {
    state = "skipped";
    out["reason"] = perf.reason;
  } else if (state == "ran") {
    if (base.pooled) {
      out["median"] = base.pooled->median;
      out["p10"] = base.pooled->p10;
      out["p90"] = base.pooled->p90;
    }
    if (base.tflops) out["tflops"] = *base.tflops;
    out["count"] = base.before ? base.before->count : 0;
    out["name"] = base.name.value_or("");
    out["library"] = base.library.value_or(json());
  } else if (state == "unsupported" || state == "skipped") {
    out["reason"] = base.reason;
  } else {
    state = "failed";
    const json* e = nullptr;
    for (const char* ev : {"baseline_error", "error"})
      if (!e) e = to.First(ev);
    out["reason"] = e ? e->value("message", "") : "the timing child " + to.exit.Describe();
  }
  out["state"] = state;
  if (perf.protocol) out["protocol"] = ToJson(*perf.protocol);
  if (const json* d = to.First("device")) {
    out["gpu"] = *d;
    out["gpu"].erase("event");
  }
  out["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

std::vector<AttentionBaseline> AttentionBaselinesOf(const std::string& word) {
  std::vector<AttentionBaseline> out;
  if (word == "both" || word == "all") {
    out.push_back(AttentionBaseline::Cudnn());
    if (word == "both") {
      out.push_back(AttentionBaseline::FlashInfer());
    } else {
      for (const std::string& v : FlashInferVersions())
        out.push_back(AttentionBaseline::FlashInfer(v));
    }
    return out;
  }
  std::string why;
  std::optional<AttentionBaseline> one = ParseAttentionBaseline(word, &why);
  if (!one) throw UsageError("--baseline " + word + ": " + why);
  return {*one};
}

std::vector<std::string> BaselineCommandWords() {
  std::vector<std::string> words = AttentionBaselineWords();
  words.push_back("both");
  words.push_back("all");
  return words;
}

}  // namespace ptxbench
