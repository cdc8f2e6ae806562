#include "evaluate/timing_layer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include "common/clock.h"
#include "common/error.h"
#include "common/gpu_trace.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "evaluate/gpu_gate.h"
#include "measure/baseline.h"
#include "record/environment_layers.h"
#include "record/layers.h"
#include "record/performance_layer.h"
#include "record/stage_seconds.h"
#include "record/subject.h"
#include "run/protocol.h"
#include "run/reference_cache.h"
#include "task/device_ops.h"

namespace ptxbench::evaluation {

using Clock = std::chrono::steady_clock;

namespace {

// The bf16 dense peak of a GPU, measured once (by a baseline child, which never loads a
// candidate) and cached per device by the parent alone.
std::string PeakCachePath(const std::string& cache_root, const json& gpu) {
  return cache_root + "/peak/" + gpu.value("uuid", "unknown") + ".json";
}

// What a GPU of this compute capability can do at most in dense bf16 tensor-core work (FLOP/s),
// from the vendors' data sheets with headroom: a measured peak or a timed speed above it is
// not a measurement. 0 when the capability is unknown (then no ceiling applies).
double ModelBf16Ceiling(const json& gpu) {
  const std::string cc = gpu.value("compute_capability", std::string());
  if (cc.rfind("9.", 0) == 0) return 1.1e15;   // H100/H200: 989 TFLOP/s dense
  if (cc.rfind("10.", 0) == 0) return 2.6e15;  // B200: 2.25 PFLOP/s dense
  if (cc.rfind("8.", 0) == 0) return 0.36e15;  // A100: 312 TFLOP/s dense
  return 0;
}

// A peak is believed only inside what the GPU model can do: above a tenth of its ceiling (a
// forged or broken measurement of 0 makes every later speed look impossible or the witness
// unusable) and not above it.
bool PlausiblePeak(double flops_per_second, const json& gpu) {
  const double ceiling = ModelBf16Ceiling(gpu);
  if (!(flops_per_second > 0) || !std::isfinite(flops_per_second)) return false;
  return ceiling <= 0 || (flops_per_second >= 0.1 * ceiling && flops_per_second <= ceiling);
}

// The cache entry, verified on read: its own digest, the same GPU and driver, a plausible value.
std::optional<double> CachedPeak(const std::string& path, const json& gpu) {
  try {
    json p = json::parse(ReadFile(path));
    std::string digest = p.value("sha256", "");
    p.erase("sha256");
    if (digest != Sha256Hex(p.dump())) return std::nullopt;
    if (p.value("driver_version", -1) != gpu.value("driver_version", -2)) return std::nullopt;
    if (p.value("uuid", std::string()) != gpu.value("uuid", std::string("?"))) return std::nullopt;
    double peak = p.at("flops_per_second").get<double>();
    if (!PlausiblePeak(peak, gpu)) return std::nullopt;
    return peak;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void StorePeak(const std::string& cache_root, const std::string& path, json p) {
  p["sha256"] = Sha256Hex(p.dump());
  MakeDirs(cache_root + "/peak");
  WriteFileAtomic(path, p.dump(2) + "\n");
}

// The out-of-process witness: how long the phase of back-to-back calls runs (at least), and
// how long the GPU is left idle on each side of it. NVML's GPM counters reach the samples
// 150-200 ms late on the H200 (unpadded windows under ~140 ms read zero; a window opened
// right after other work is credited with it); with 300 ms of idle before the first sample
// and before the second, even 20 GEMM calls read 0.9-1.0 of their busy time.
constexpr double kWitnessWorkSeconds = 0.2;
constexpr double kWitnessSettleSeconds = 0.3;
constexpr double kWitnessMinWindowSeconds = 0.4;

// Tensor-pipe time as a share of SM-busy time below which the tensor pipes were not doing
// the work, whatever the FLOP ratio says: a slow CUDA-core loop reads ~0.05 (FFMA) and its
// long run can still add up to the task's tensor FLOPs; a real bf16 GEMM reads ~0.97 (0.23
// at K=64).
constexpr double kMinTensorShareOfSm = 0.15;

// Timed calls checked again after the loop, and witness calls checked after the window,
// drawn by the parent once the loop (the window) is over.
constexpr int kTimedChecks = 3;
constexpr int kWitnessChecks = 3;

// How much of the GPU's memory the protocol's own buffers may take, decided by the parent
// from the GPU's size (a candidate-free child's report): the kept outputs of the timed calls,
// and the witness's fresh input sets. The candidate keeps the rest.
constexpr double kKeptOutputsShareOfMemory = 0.2;
constexpr double kWitnessInputsShareOfMemory = 0.25;

// A timed speed above the measured peak by more than this factor is not a measurement: no
// kernel beats the vendor library's best square GEMM by a quarter.
constexpr double kImpossibleOverPeak = 1.25;

TimingNumbers PlanTimingNumbers(const Family& family, const Axes& axes, int iterations,
                                double est_call_s, bool witness, const json& gpu,
                                std::mt19937_64& rng) {
  double memory = gpu.value("global_memory_bytes", 0.0);
  if (!(memory > 0)) memory = 16.0 * (1ull << 30);  // an unknown GPU: a size every one has
  double out_bytes = 0, in_bytes = 0;
  for (const auto& t : family.Tensors(axes))
    (t.role == TensorRole::kOutput ? out_bytes : in_bytes) += static_cast<double>(t.Bytes());
  TimingNumbers n;
  n.digest_key = rng();
  n.kept_outputs = iterations;
  if (out_bytes > 0)
    n.kept_outputs = static_cast<int>(
        std::min<double>(iterations, std::floor(kKeptOutputsShareOfMemory * memory / out_bytes)));
  n.kept_outputs = std::max(1, n.kept_outputs);
  if (!witness) return n;
  // Enough calls to keep the GPU busy for the window's work time, by the trials' fastest call
  // (the candidate's own word: a lie only changes how many calls it must make, each on inputs
  // of its own), never more than there are kept outputs or memory for their inputs.
  double est = std::max(est_call_s, 1e-6);
  int calls = est_call_s > 0 ? static_cast<int>(std::ceil(kWitnessWorkSeconds / est)) : 1 << 20;
  calls = std::min(calls, n.kept_outputs);
  if (in_bytes > 0)
    calls = std::min<int>(
        calls, static_cast<int>(std::floor(kWitnessInputsShareOfMemory * memory / in_bytes)));
  n.witness_calls = std::max(0, std::min(std::max(calls, 2), n.kept_outputs));
  return n;
}

// What a timing child of either kind needs: the shape, the calls and the seeds of their
// inputs, all decided by the parent.
TimingSpec TimedCallsSpec(const Family& family, const Axes& axes, const TimedCallPlan& plan,
                          int sets, uint64_t seed_base, uint64_t set_seed_base, const json& gpu,
                          const std::string& out_dir) {
  TimingSpec spec;
  spec.family = family.Name();
  spec.axes = axes;
  spec.out_dir = out_dir;
  spec.warmup = plan.warmup;
  spec.iterations = plan.iterations;
  spec.buffer_sets = sets;
  spec.seed_base = seed_base;
  spec.set_seed_base = set_seed_base;
  spec.pci_bus_id = gpu.value("pci_bus_id", "");
  return spec;
}

// A child that times the vendor baseline alone (before or after the candidate's), in a
// process of its own: no candidate shares a process with a vendor library. With `gpu`, its
// set-up (context, library, buffers) runs holding the GPU shared and its timed calls alone:
// it asks (baseline_ready) and the parent answers "go" once it holds the GPU alone.
// `*gpu_refused` turns true when the GPU could not be had (the child then times nothing).
ChildOutcome RunBaselineChild(const EvalRequest& req, const ScratchDir& scratch,
                              const std::string& phase, uint64_t seed_offset, int peak_n,
                              TimingSpec spec, const json& baseline_options, GpuAccess* gpu,
                              bool* gpu_refused) {
  ChildRequest bc = HarnessChild(req, scratch, phase, req.options.timing_timeout);
  spec.out_dir = scratch.File(phase + ".out");
  MakeDirs(spec.out_dir);
  spec.baseline_only = true;
  spec.baseline_phase = phase;
  spec.baseline_seed_offset = seed_offset;
  spec.peak_n = peak_n;
  spec.baseline_options = baseline_options;
  std::shared_ptr<GpuGateState> gate;
  if (gpu) {
    spec.wait_for_go = true;
    bc.on_message = [gpu, gpu_refused](const json& m, const ChildRequest::Reply& reply) {
      if (m.value("event", "") != "baseline_ready") return;
      const bool held = gpu->Hold(GpuLock::Mode::kAlone);
      if (!held) *gpu_refused = true;
      reply(held ? kGateGo : kGateStop);
    };
  }
  bc.spec = ToJson(spec);
  // The set-up asks for the GPU shared at its first CUDA call (the gate), the timed calls
  // alone at baseline_ready (above).
  if (gpu && GpuGateEnabled()) {
    gate = GateChildOnGpu(&bc, gpu);
  } else if (gpu) {
    bc.answer_time_is_not_the_childs = true;  // the wait at baseline_ready is the lock's
    if (!gpu->Hold(GpuLock::Mode::kShared)) {
      *gpu_refused = true;
      return {};
    }
  }
  ChildOutcome outcome = RunChild(bc);
  if (gpu) gpu->Release();
  if (gate && gate->refused) *gpu_refused = true;
  return outcome;
}

// The candidate child's messages for the judge: tagged with where they came from (the parent's
// tag, whatever the child wrote), and without the harness claims it made after its load (a
// baseline's samples, a peak, "CUPTI is unavailable"): a candidate's process has no baseline,
// measures no peak, and earns nothing by saying a defense could not run.
std::vector<json> CandidateMessagesForTheJudge(const ChildOutcome& o, size_t* dropped,
                                               std::set<std::string>* forged) {
  std::vector<json> out;
  const size_t loaded_at = LoadingIndex(o.messages);
  for (size_t i = 0; i < o.messages.size(); ++i) {
    const json& m = o.messages[i];
    const std::string ev = m.value("event", "");
    if (ev == "done" || ev == "device" || ev == "timing_done") continue;
    const bool after_load = i >= loaded_at;
    const bool baseline_or_peak = ev == "baseline_error" || ev == "baseline_none" ||
                                  ev == "baseline_unsupported" || ev == "peak_done" ||
                                  (ev == "timing_sample" && m.value("phase", "") != "candidate");
    if (baseline_or_peak || (after_load && IsHarnessClaim(m) && ev != "error")) {
      ++*dropped;
      // Lines only a baseline child writes, from the candidate's process: a forgery.
      if (baseline_or_peak)
        forged->insert(ev == "timing_sample" ? "timing_sample phase " + m.value("phase", "") : ev);
      continue;
    }
    json t = m;
    t["_child"] = "candidate";
    t["_after_load"] = after_load;
    out.push_back(std::move(t));
  }
  return out;
}

// A number of the GPM judge's as the record keeps it: a value that is not finite is unknown.
std::optional<double> Finite(double v) {
  return std::isfinite(v) ? std::optional(v) : std::nullopt;
}

// Whether the parent asked for call `k` and this is the first output the child handed over
// for it: anything else (a call never asked for, or a second copy) is ignored, never trusted.
bool AskedForAndFirst(const std::vector<int>& asked, int k, std::set<int>* seen) {
  return std::find(asked.begin(), asked.end(), k) != asked.end() && seen->insert(k).second;
}

}  // namespace

std::vector<int> TimingConversation::Draw(int among, int count) {
  std::set<int> drawn;
  for (int tries = 0;
       among > 0 && static_cast<int>(drawn.size()) < std::min(count, among) && tries < 1000;
       ++tries)
    drawn.insert(static_cast<int>(rng() % static_cast<uint64_t>(among)));
  return {drawn.begin(), drawn.end()};
}

void TimingConversation::OnMessage(const json& m, const ChildRequest::Reply& reply) {
  std::string ev = m.value("event", "");
  if (ev == "timed_loop_done") {
    // The parent's count of kept outputs, whatever the message says.
    timed_checks = Draw(numbers.kept_outputs, kTimedChecks);
    AfterLoopPlan plan;
    plan.check = timed_checks;
    if (gpm && numbers.witness_calls > 0) {
      plan.witness = true;
      plan.witness_seed0 = witness_seed0 = rng();
      plan.witness_key = witness_key = rng();
    }
    reply(ToJson(plan).dump());
  } else if (ev == "witness_ready" && gpm && numbers.witness_calls > 0) {
    witness_calls_reported = m.value("calls", -1);
    // Idle before the window, and a phase in the counters' refresh cycle the child cannot
    // choose (gpm.h).
    std::this_thread::sleep_for(
        std::chrono::duration<double>(kWitnessSettleSeconds + RefreshPhaseDelaySeconds(rng())));
    std::string why;
    if (!gpm->Begin(&why)) gpm_error = why;
    window_begun = Clock::now();
    GpuTrace("window_begin");
    reply("go");
  } else if (ev == "witness_done" && gpm && numbers.witness_calls > 0 && !witness_done) {
    witness_done = true;
    witness_digests = m.value("digests", json());
    // Idle after the work, a window no shorter than the judge needs (a fast kernel's calls
    // take milliseconds, and a window under the minimum says nothing), ended just after a
    // whole number of the counters' refreshes (gpm.h: the rates are over those).
    double open_s = std::chrono::duration<double>(Clock::now() - window_begun).count();
    double at_least = std::max(open_s + kWitnessSettleSeconds, kWitnessMinWindowSeconds + 0.05);
    std::this_thread::sleep_for(std::chrono::duration<double>(
        gpm_error.empty() ? gpm->SecondsToAlignedEnd(at_least) : kWitnessSettleSeconds));
    if (gpm_error.empty()) window = gpm->End();
    GpuTrace("window_end", {{"sm_util_pct", window ? window->sm_util_pct : -1.0}});
    witness_checks = Draw(numbers.witness_calls, kWitnessChecks);
    reply(ToJson(AfterLoopPlan{witness_checks, false, 0, 0}).dump());
  }
}

TimingLayer::TimingLayer(const EvalContext& c, const ChildRequest& candidate,
                         const StaticInspection& sass, const ScratchDir& scratch,
                         EvaluationRecord* rec, Verdict* v)
    : c_(c), candidate_(candidate), sass_(sass), scratch_(scratch), rec_(rec), v_(v) {}

void TimingLayer::Run() {
  Plan();
  // Each child alone on the GPU while it times (another evaluation's kernels would change
  // its figures and the witness's window): the baselines ask when their set-up is done; the
  // candidate's child holds it alone from its start, or, with the gate on (gpu_gate.h), from
  // just before the candidate is loaded, its set-up shared from its first CUDA call (a loaded
  // candidate is never left unwatched on a GPU that another evaluation times on). Judging,
  // revalidating and the witness's judgement need the GPU only for a reference, shared.
  auto refused = [&] {
    if (!v_->decided) SetGpuRefused(*c_.gpu, v_);
    perf_.state = "not_reached";
    perf_.reason = v_->message;  // the lock's failure, or a timed child that was not alone
    rec_->performance = ToJson(perf_);
  };
  BaselineBefore();
  if (gpu_refused_) return refused();
  if (!Candidate()) return refused();
  BaselineAfter();
  if (gpu_refused_) return refused();
  Judge();
  if (Revalidate()) Witness();
  // The layer becomes the record's once, when the stage is over: the steps above read and
  // complete perf_, and nothing reads the record's layer meanwhile.
  rec_->performance = ToJson(perf_);
}

// How many calls: the requested ones, fewer when the trials say they would take longer than
// the budget (a CUDA-core attention kernel at the headline takes 0.4 s a call). Fresh,
// unpredictable inputs for every timed call: a kernel that recognises the trial inputs (the
// default seeds are public) or caches results by content gains nothing.
void TimingLayer::Plan() {
  for (const Trial& tr : CorrectnessDetailOf(*rec_).trials)
    if (double s = tr.call_seconds; s > 0 && (est_call_s_ == 0 || s < est_call_s_)) est_call_s_ = s;
  const EvaluationOptions& o = c_.req.options;
  plan_ = PlanTimedCalls(o.warmup, o.iterations, est_call_s_, o.timing_budget_s);
  sets_ = std::max(1, std::min(o.buffer_sets, plan_.warmup + plan_.iterations));
  // A family that derives its timed inputs from a base per buffer set (mha_bwd) gets the
  // bases' seeds from here too, so that the reference can rebuild them.
  set_seed_base_ = c_.fresh_seed ^ kSetSeedSalt;
  gpu_ = ToolchainLayerOf(*rec_).gpu;
  if (!gpu_.is_object()) gpu_ = json::object();  // no device report: every field reads absent
  peak_path_ = PeakCachePath(c_.cache_root, gpu_);
  peak_ = CachedPeak(peak_path_, gpu_);
}

TimingSpec TimingLayer::TimedCalls(const std::string& out_dir) const {
  return TimedCallsSpec(c_.family, c_.axes, plan_, sets_, c_.fresh_seed, set_seed_base_, gpu_,
                        out_dir);
}

void TimingLayer::BaselineBefore() {
  auto t = Clock::now();
  // Built here, in the parent, once for both baseline children (FlashInfer's kernel; the first
  // build of a variant takes minutes, then it is cached).
  baseline_options_ =
      PrepareBaselineOptions(c_.family, c_.axes, c_.req.options.attention_baseline, c_.cache_root);
  before_ =
      RunBaselineChild(c_.req, scratch_, "baseline_before", 1000000, peak_ ? 0 : kPeakGemmSize,
                       TimedCalls(""), baseline_options_, c_.gpu, &gpu_refused_);
  rec_->stage_seconds[stage_key::kTimingBaseline] = SecondsSince(t);
}

bool TimingLayer::Candidate() {
  // The parent's witness of what the GPU did, read outside every child. Whether this GPU has
  // one is the parent's finding, made here before the candidate's timing child exists.
  gpm_ = GpmWitness::Open(gpu_.value("pci_bus_id", ""), &gpm_why_);
  talk_.gpm = gpm_.get();
  talk_.rng.seed(c_.fresh_seed ^ 0x636865636bull ^ static_cast<uint64_t>(std::random_device{}()));
  talk_.numbers = PlanTimingNumbers(c_.family, c_.axes, plan_.iterations, est_call_s_,
                                    gpm_ != nullptr, gpu_, talk_.rng);

  auto t = Clock::now();
  ChildRequest tc = candidate_;
  tc.name = "timing";
  tc.confine = true;
  tc.wrapper.clear();
  // RunChild puts a confined child's own folder under the scratch folder.
  TimingSpec spec = TimedCalls(scratch_.path());
  spec.shared_object = candidate_.spec.at("shared_object");
  spec.abi = candidate_.spec.value("abi", std::string("native"));
  spec.kept_outputs = talk_.numbers.kept_outputs;
  spec.witness_calls = talk_.numbers.witness_calls;
  spec.digest_key = talk_.numbers.digest_key;
  tc.timeout = c_.req.options.timing_timeout;
  tc.on_message = [this](const json& m, const ChildRequest::Reply& reply) {
    talk_.OnMessage(m, reply);
  };
  if (!c_.gpu) {
    tc.spec = ToJson(spec);
    timed_ = RunChild(tc);
    rec_->stage_seconds[stage_key::kTiming] = SecondsSince(t);
    return true;
  }
  spec.wait_for_go = true;  // candidate_ready: the GPU alone before the candidate is loaded
  tc.spec = ToJson(spec);
  std::optional<ChildOutcome> gated = RunGatedChild(c_, tc, v_, /*alone_before_load=*/true);
  rec_->stage_seconds[stage_key::kTiming] = SecondsSince(t);
  if (!gated) return false;
  timed_ = std::move(*gated);
  return true;
}

void TimingLayer::BaselineAfter() {
  auto t = Clock::now();
  // A candidate that ran out of time leaves the judge its last phase: no baseline after it.
  if (timed_.exit.kind != ExitKind::kTimedOut)
    after_ = RunBaselineChild(c_.req, scratch_, "baseline_after", 2000000, 0, TimedCalls(""),
                              baseline_options_, c_.gpu, &gpu_refused_);
  rec_->stage_seconds[stage_key::kTimingBaseline] += SecondsSince(t);
}

// One conversation for the judge: the baseline's phases from its own processes, the
// candidate's from its child (its claims after the load dropped); the library named by the
// baseline's child.
std::vector<json> TimingLayer::MessagesForTheJudge(size_t* dropped_claims,
                                                   std::set<std::string>* forged_lines) const {
  std::vector<json> messages;
  auto take_baseline = [&](const ChildOutcome& o) {
    for (const auto& m : o.messages) {
      std::string ev = m.value("event", "");
      if (ev == "done" || ev == "device" || ev == "timing_done") continue;
      json tagged = m;
      tagged["_child"] = "baseline";
      messages.push_back(std::move(tagged));
    }
  };
  take_baseline(before_);
  for (json& m : CandidateMessagesForTheJudge(timed_, dropped_claims, forged_lines))
    messages.push_back(std::move(m));
  take_baseline(after_);
  if (const json* done = timed_.Last("timing_done")) {
    json d = *done;
    d["_child"] = "candidate";
    if (const json* baseline_done = before_.Last("timing_done")) {
      d["baseline_name"] = baseline_done->value("baseline_name", "");
      d["baseline_choice"] = baseline_done->value("baseline_choice", "");
      d["baseline"] = baseline_done->value("baseline", json());
    }
    messages.push_back(d);
  }
  return messages;
}

void TimingLayer::Judge() {
  size_t dropped_claims = 0;
  std::set<std::string> forged_lines;
  const std::vector<json> messages = MessagesForTheJudge(&dropped_claims, &forged_lines);
  TimingContext ctx;
  ctx.flops = c_.def.Flops(c_.wl);
  ctx.peak_flops = peak_;
  ctx.model_ceiling_flops = ModelBf16Ceiling(gpu_);
  ctx.impossible_over_peak = kImpossibleOverPeak;
  ctx.candidate_loaded = LoadingIndex(timed_.messages) < timed_.messages.size();
  ctx.allowed_known = sass_.state == "ran";
  for (const auto& f : sass_.functions) ctx.allowed_kernels.push_back(f.mangled);
  ctx.drift_threshold = c_.req.options.drift_threshold;
  ctx.timeout = c_.req.options.timing_timeout;
  ctx.warmup = plan_.warmup;
  ctx.iterations = plan_.iterations;
  TimingJudgement j = JudgeTiming(messages, timed_.exit, ctx);
  perf_ = std::move(j.performance);
  perf_.timing_seed_base = c_.fresh_seed;
  perf_.sandbox = timed_.sandbox;
  perf_.candidate_claims_ignored = dropped_claims;
  // Even a layer that skipped says what the parent decided.
  if (!perf_.protocol) perf_.protocol.emplace();
  perf_.protocol->parent_decided =
      TimingProtocol::ParentDecided{.kept_outputs = talk_.numbers.kept_outputs,
                                    .witness_calls = talk_.numbers.witness_calls,
                                    .witness_rounds = 1,
                                    .timed_checks = kTimedChecks,
                                    .witness_checks = kWitnessChecks};
  NoteWhatTheChildDid(forged_lines);
  if (j.verdict) {  // never PASSED: the judge only ever finds fault
    perf_.child_log_tail = ValidUtf8(timed_.log_tail);
    if (!v_->decided) {
      v_->Set(j.verdict->status, j.verdict->reason, j.verdict->message);
      v_->claimed_infra = j.verdict->claimed_infra;
    }
  }
  KeepPeak(j);
}

// The record's account of the timing child: the kernels it launched, its confinement and
// seals, and what it wrote onto the channel that only a baseline child may write.
void TimingLayer::NoteWhatTheChildDid(const std::set<std::string>& forged_lines) {
  // Every kernel that started inside a timed call is the candidate's, whatever its name: the
  // harness launches nothing during a call.
  std::set<std::string> launched;
  for (const json* m : timed_.All("timing_sample")) {
    if (m->value("phase", "") != "candidate") continue;
    const json kernels = m->value("activity", json::object()).value("kernels", json::object());
    for (const auto& [name, count] : kernels.items()) launched.insert(name);
  }
  perf_.kernels_launched = std::vector<std::string>(launched.begin(), launched.end());
  if (const json* conf = timed_.First("confinement")) perf_.confinement = *conf;
  // Sent before the load: the harness's word on whether its code and GOT were sealed.
  if (const json* sealed = BeforeLoading(timed_, "sealed")) perf_.sealed = *sealed;
  if (perf_.protocol) perf_.protocol->plan = ToJson(plan_);
  perf_.channel_garbage_lines = timed_.garbage.size();
  if (!forged_lines.empty() && !v_->decided)
    v_->Set(Status::kRuleViolation, "channel_tampered",
            "the candidate's process wrote lines only a baseline child sends (" +
                Join(std::vector<std::string>(forged_lines.begin(), forged_lines.end())) +
                ") onto the result channel");
  if (timed_.exit.channel_overflow && !v_->decided)
    v_->Set(Status::kRuleViolation, "channel_tampered",
            "the candidate's process flooded the result channel while being timed");
}

// A peak measured now by a baseline child is cached when the GPU model can reach it.
void TimingLayer::KeepPeak(const TimingJudgement& j) {
  if (j.peak_measured) {
    if (PlausiblePeak(*j.peak_measured, gpu_)) {
      StorePeak(c_.cache_root, peak_path_,
                {{"flops_per_second", *j.peak_measured},
                 {"gpu", gpu_.value("name", "")},
                 {"uuid", gpu_.value("uuid", "")},
                 {"driver_version", gpu_.value("driver_version", 0)},
                 {"shape", j.peak_detail.value("n", 0)},
                 {"library", j.peak_detail.value("baseline", json())},
                 {"measured_at", NowUtcIso8601()}});
      perf_.peak_source = "measured now by a baseline child (cached in " + peak_path_ + ")";
      peak_ = *j.peak_measured;
    } else {
      perf_.peak_source = "measured now but implausible for this GPU (" + Count(*j.peak_measured) +
                          " FLOP/s): not used, not cached";
      peak_.reset();
    }
  } else if (peak_) {
    perf_.peak_source = "cached: " + peak_path_;
  }
}

// The outputs the parent drew after the loop (timed calls) and after the window (witness
// calls), each with the seeds of its inputs: the parent's own (call index → seed, buffer set),
// never the child's word.
std::vector<DrawnCheck> TimingLayer::DrawnChecks() {
  std::map<int, json> kept_digests;  // kept index → the digests taken right after that call
  for (const json* m : timed_.All("timing_sample"))
    if (m->value("phase", "") == "candidate" && m->contains("kept"))
      kept_digests[m->value("kept", -1)] = m->value("digests", json());
  std::vector<DrawnCheck> checks;
  std::set<int> timed_seen;
  for (const json* m : timed_.All("timed_output")) {
    int k = m->value("kept", -1);
    if (!AskedForAndFirst(talk_.timed_checks, k, &timed_seen)) continue;
    int index = plan_.warmup + k;
    checks.push_back({"timed call " + std::to_string(index) + " (buffer set " +
                          std::to_string(index % sets_) + ", fresh inputs)",
                      c_.fresh_seed + static_cast<uint64_t>(index),
                      set_seed_base_ + static_cast<uint64_t>(index % sets_), m->at("outputs"),
                      kept_digests.count(k) ? kept_digests[k] : json::array(),
                      talk_.numbers.digest_key, false});
  }
  timed_expected_ = talk_.timed_checks.size();
  timed_got_ = checks.size();
  std::set<int> witness_seen;
  for (const json* m : timed_.All("witness_output")) {
    int jx = m->value("index", -1);
    if (!AskedForAndFirst(talk_.witness_checks, jx, &witness_seen)) continue;
    json committed =
        talk_.witness_digests.is_array() && jx < static_cast<int>(talk_.witness_digests.size())
            ? talk_.witness_digests[jx]
            : json();
    checks.push_back({"witness call " + std::to_string(jx),
                      talk_.witness_seed0 + static_cast<uint64_t>(jx),
                      set_seed_base_ + static_cast<uint64_t>(jx % sets_), m->at("outputs"),
                      committed.is_array() ? committed : json::array(), talk_.witness_key, true});
  }
  witness_expected_ = talk_.witness_checks.size();
  witness_got_ = checks.size() - timed_got_;
  return checks;
}

// One drawn output against its reference: the digest taken when the call ended (or in the
// window) must be what was handed over, and the values must match.
RevalidatedCall TimingLayer::CompareCheck(const DrawnCheck& check,
                                          const std::vector<std::string>& expected_files) {
  RevalidatedCall checked{check.what, check.seed, {}};
  size_t k = 0;
  for (const auto& spec : c_.family.Tensors(c_.axes)) {
    if (spec.role != TensorRole::kOutput) continue;
    // The output handed over must be what the call wrote: the digest the harness took right
    // after a timed call (in stream order, before the next call ran) or, for a witness call,
    // inside the GPM window. Work deferred to another call, or past the window, changes it.
    std::string file = check.files.at(k).at("file");
    std::string committed = k < check.digests.size() && check.digests[k].is_string()
                                ? check.digests[k].get<std::string>()
                                : "";
    std::string now = WitnessOutputDigest(file, timed_.folder, check.key);
    RevalidatedOutput output{spec.name, RevalidatedOutput::Digests{committed, now}, "", 0, 0};
    if (now != committed && !v_->decided) {
      if (check.witness)
        v_->Set(Status::kRuleViolation, "witness_disagrees",
                committed.empty()
                    ? "the witness phase ended without the digest of " + check.what + "'s " +
                          spec.name + " that the harness sends inside the GPM window"
                    : "the output of " + check.what + " (" + spec.name +
                          ") handed over after the GPM window differs from what the calls in "
                          "the window wrote (digest " +
                          committed.substr(0, 12) + " then, " + now.substr(0, 12) +
                          " after): work was done outside the witnessed window");
      else
        v_->Set(Status::kRuleViolation, "call_history",
                committed.empty()
                    ? "no digest of " + check.what + "'s " + spec.name +
                          " was taken when the call ended"
                    : "the output of " + check.what + " (" + spec.name +
                          ") handed over after the loop differs from what it held when the "
                          "call ended (digest " +
                          committed.substr(0, 12) + " then, " + now.substr(0, 12) +
                          " after): its work was done in another call");
    }
    OutputComparison cmp =
        CompareOutputFile(spec, expected_files.at(k), file, timed_.folder, c_.tol);
    long long cols = spec.shape.size() >= 2 ? spec.shape.back() : 0;
    output.verdict = ToString(cmp.verdict);
    output.max_abs_error = cmp.max_abs_error;
    output.mismatched = cmp.mismatched;
    checked.outputs.push_back(std::move(output));
    if (cmp.verdict != CompareVerdict::kMatch && !v_->decided)
      v_->Set(Status::kRuleViolation, "call_history",
              "correct on the trials, but wrong on " + check.what + ": " + Describe(cmp, cols));
    ++k;
  }
  return checked;
}

bool TimingLayer::Revalidate() {
  const std::vector<DrawnCheck> checks = DrawnChecks();
  std::vector<uint64_t> check_seeds, check_set_seeds;
  for (const auto& ch : checks) {
    check_seeds.push_back(ch.seed);
    check_set_seeds.push_back(ch.set_seed);
  }
  if (!c_.family.DerivesTimedInputs()) check_set_seeds.clear();
  std::map<uint64_t, ReferenceEntry> refs;
  if (!check_seeds.empty()) {
    auto t = Clock::now();
    std::optional<ChildOutcome> gated = RunGatedChild(
        c_,
        ReferenceChild(c_.req, c_.family, c_.axes, check_seeds, ReferenceFolder(scratch_), scratch_,
                       "timing-reference", check_set_seeds),
        v_);
    if (!gated) {
      Revalidation& none = perf_.revalidation.emplace();
      none.state = "not_reached";
      none.reason = c_.gpu->Failure();
      return false;
    }
    const ChildOutcome& ro = *gated;
    for (const json* m : ro.All("reference")) {
      ReferenceEntry e;
      e.seed = m->at("seed");
      e.input_checksums = m->at("input_checksums").get<std::vector<uint64_t>>();
      for (const auto& o : m->at("outputs")) e.output_files.push_back(o.at("file"));
      refs[e.seed] = e;
    }
    rec_->stage_seconds[stage_key::kTimingReference] = SecondsSince(t);
    if (refs.size() != std::set<uint64_t>(check_seeds.begin(), check_seeds.end()).size() &&
        !v_->decided) {
      v_->Set(Status::kInfraError, "",
              "the reference for the timed calls failed: " + ReferenceFailure(ro));
      Revalidation& none = perf_.revalidation.emplace();
      none.state = "not_reached";
      none.reason = "the reference for the timed calls failed";
      return false;
    }
  }
  auto t = Clock::now();
  std::vector<RevalidatedCall> checked;
  try {
    for (const auto& ch : checks) {
      auto it = refs.find(ch.seed);
      if (it == refs.end()) continue;
      checked.push_back(CompareCheck(ch, it->second.output_files));
    }
  } catch (const CandidateFileError& e) {
    if (!v_->decided) v_->Set(Status::kRuleViolation, "channel_tampered", e.what());
  }
  Revalidation& revalidation = perf_.revalidation.emplace();
  revalidation.state = checked.empty() ? "not_reached" : "ran";
  revalidation.drawn_after_the_loop = true;
  revalidation.kept_outputs = talk_.numbers.kept_outputs;
  revalidation.calls = std::move(checked);
  const bool timing_ran = perf_.state == "ran";
  if (!v_->decided && timing_ran && timed_got_ != timed_expected_)
    v_->Set(Status::kRuleViolation, "channel_tampered",
            "the timing child returned " + std::to_string(timed_got_) + " of the " +
                std::to_string(timed_expected_) + " timed outputs the parent asked for");
  rec_->stage_seconds[stage_key::kTimingRevalidate] = SecondsSince(t);
  return true;
}

// The witness: what the GPU itself was seen doing, against what the child reported.
void TimingLayer::Witness() {
  TimingWitness witness;
  const bool timing_ran = perf_.state == "ran";
  const bool witness_planned = gpm_ && talk_.numbers.witness_calls > 0;
  if (!gpm_) {
    // The parent's own finding, before any candidate ran: allowed to be unavailable.
    witness.state = "unavailable";
    witness.reason = gpm_why_;
    witness.established_by = "parent";
  } else if (!talk_.window) {
    WitnessMissing(witness_planned && timing_ran, &witness);
  } else {
    JudgeWitnessWindow(timing_ran, &witness);
  }
  perf_.witness = std::move(witness);
  // No speed is credited without a witness that ran and agreed, where there is one.
  if (witness_planned && v_->decided && v_->status == Status::kRuleViolation) perf_.speedup.reset();
}

// The parent opened GPM, and no window came back.
void TimingLayer::WitnessMissing(bool judge, TimingWitness* witness) {
  std::string why = !talk_.gpm_error.empty() ? "GPM failed in the parent: " + talk_.gpm_error
                                             : "the witness phase did not run";
  witness->state = "missing";
  witness->reason = why;
  if (!judge || v_->decided) return;
  // Fail closed: GPM worked when the parent opened it. If it works again now, whatever
  // stopped the window happened while the candidate ran: its verdict. Else the GPU's.
  std::string again;
  std::unique_ptr<GpmWitness> probe = GpmWitness::Open(gpu_.value("pci_bus_id", ""), &again);
  bool gpm_works = probe && probe->Begin(&again);
  if (probe && gpm_works) probe->End();
  if (!talk_.gpm_error.empty() && !gpm_works)
    v_->Set(Status::kInfraError, "",
            "the GPM witness failed in the parent and fails again (" + again +
                "): no speed can be credited");
  else
    v_->Set(
        Status::kRuleViolation, "witness_missing",
        "the out-of-process witness did not run (" + why + "): without it no timing is believed");
}

// The window the parent read, against the timed median and the task's work.
void TimingLayer::JudgeWitnessWindow(bool timing_ran, TimingWitness* witness) {
  WitnessExpectation x;
  x.calls = talk_.numbers.witness_calls;
  x.timed_median_seconds = perf_.candidate ? perf_.candidate->span.median : 0.0;
  x.flops_per_call = c_.def.Flops(c_.wl);
  x.tensor_peak_flops_per_second = peak_.value_or(0);
  x.tensor_task = !TaskDetailOf(*rec_).required_families.empty();
  const WitnessWindow& window = *talk_.window;
  WitnessJudgement wj = JudgeWitness(window, x, kWitnessMinWindowSeconds);
  witness->state = wj.state;
  TimingWitness::Judged& w = witness->judged.emplace();
  w.timing_ok = wj.timing_ok;
  w.tensor_ok = wj.tensor_ok;
  w.per_call_busy_seconds = Finite(wj.per_call_busy_seconds);
  w.tensor_work_fraction_seen = Finite(wj.tensor_work_fraction_seen);
  w.message = wj.message;
  w.window = window.ToJson();
  w.calls = talk_.numbers.witness_calls;
  w.calls_reported = talk_.witness_calls_reported;
  w.rounds = 1;
  w.timing_factor = x.timing_factor;
  w.tensor_factor = x.tensor_factor;
  // The HMMA pipe (fp16/bf16 MMAs) where GPM reads it: an int8 or one-bit MMA on junk keeps
  // the tensor pipes busy without doing any of a bf16 task's work.
  const double tensor_pct = std::isfinite(window.hmma_tensor_util_pct) ? window.hmma_tensor_util_pct
                                                                       : window.any_tensor_util_pct;
  double share = tensor_pct / window.sm_util_pct;
  w.tensor_share_of_sm = Finite(share);
  if (std::isfinite(wj.per_call_busy_seconds) && x.timed_median_seconds > 0)
    w.busy_over_timed = wj.per_call_busy_seconds / x.timed_median_seconds;
  if (wj.tensor_ok && !(share >= kMinTensorShareOfSm)) {
    w.tensor_ok = false;
    w.message = wj.message + "; but the tensor pipes were busy only " + FormatPercent(share) +
                " of the SM-busy time (under " + FormatPercent(kMinTensorShareOfSm) + ")";
  }
  if (v_->decided || !timing_ran) return;
  if (talk_.witness_calls_reported != talk_.numbers.witness_calls)
    v_->Set(Status::kRuleViolation, "witness_missing",
            "the timing child ran " + std::to_string(talk_.witness_calls_reported) +
                " witness calls where the parent asked for " +
                std::to_string(talk_.numbers.witness_calls));
  else if (witness_got_ != witness_expected_)
    v_->Set(Status::kRuleViolation, "witness_missing",
            "the timing child returned " + std::to_string(witness_got_) + " of the " +
                std::to_string(witness_expected_) + " witness outputs the parent asked for");
  else if (wj.state == "window_too_short" || wj.state == "unavailable")
    // The parent's own evidence (its GPM read, its window): ours, but no speed either.
    v_->Set(Status::kInfraError, "",
            "the GPM witness could not judge its window (" + wj.message +
                "): no speed can be credited");
  else if (wj.state == "timing_disagrees")
    v_->Set(Status::kRuleViolation, "witness_disagrees",
            "the timing the candidate's process reported disagrees with what the GPU was seen "
            "doing: " +
                wj.message);
}

}  // namespace ptxbench::evaluation
