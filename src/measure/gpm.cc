#include "measure/gpm.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <utility>

#include "common/dynamic_library.h"
#include "measure/nvml_status.h"

namespace ptxbench {

namespace {

// The metrics End() asks for, with where each lands in the window.
struct MetricSlot {
  unsigned id;
  double WitnessWindow::*field;
  const char* name;  // the window's JSON key
};
constexpr MetricSlot kMetrics[] = {
    {gpm_abi::kSmUtil, &WitnessWindow::sm_util_pct, "sm_util_pct"},
    {gpm_abi::kSmOccupancy, &WitnessWindow::sm_occupancy_pct, "sm_occupancy_pct"},
    {gpm_abi::kAnyTensorUtil, &WitnessWindow::any_tensor_util_pct, "any_tensor_util_pct"},
    {gpm_abi::kHmmaTensorUtil, &WitnessWindow::hmma_tensor_util_pct, "hmma_tensor_util_pct"},
    {gpm_abi::kGraphicsUtil, &WitnessWindow::graphics_util_pct, "graphics_util_pct"},
    {gpm_abi::kDramBwUtil, &WitnessWindow::dram_bw_util_pct, "dram_bw_util_pct"},
    {gpm_abi::kFp32Util, &WitnessWindow::fp32_util_pct, "fp32_util_pct"},
};

nlohmann::json OrNull(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

std::string DeviceName(const std::string& pci_bus_id) {
  return pci_bus_id.empty() ? "device 0" : "device " + pci_bus_id;
}

// "1.23 ms", "456 us", "2.5 s": three significant digits in a fitting unit.
std::string FormatSeconds(double s) {
  if (!std::isfinite(s)) return "?";
  char buf[48];
  double a = std::fabs(s);
  if (a != 0 && a < 1e-3)
    std::snprintf(buf, sizeof buf, "%.3g us", s * 1e6);
  else if (a < 1)
    std::snprintf(buf, sizeof buf, "%.3g ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

std::string Format(const char* fmt, double v) {
  if (!std::isfinite(v)) return "?";
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace

std::optional<GpmApi> LoadGpmApi(const std::string& library, std::string* why) {
  std::string ignored;
  if (!why) why = &ignored;
  std::optional<NvmlApi> api = LoadNvmlApi(library, why);
  if (!api) {
    *why = "NVML GPM unavailable: " + *why;
    return std::nullopt;
  }
  if (std::string missing = MissingNvmlSymbols(*api, NvmlUse::kGpm); !missing.empty()) {
    // Drivers older than GPM (before R520) have NVML without the nvmlGpm* calls.
    *why = "NVML GPM unavailable: " + library + " lacks " + missing;
    return std::nullopt;
  }
  why->clear();
  return api;
}

// ---------------------------------------------------------------------------
// GpmWitness

std::unique_ptr<GpmWitness> GpmWitness::Open(const std::string& pci_bus_id, std::string* why) {
  std::optional<GpmApi> api = LoadGpmApi(nvml_abi::kLibrary, why);
  if (!api) return nullptr;
  return OpenWith(std::move(*api), pci_bus_id, why);
}

std::unique_ptr<GpmWitness> GpmWitness::OpenWith(GpmApi api, const std::string& pci_bus_id,
                                                 std::string* why) {
  std::string ignored;
  if (!why) why = &ignored;
  if (std::string missing = MissingNvmlSymbols(api, NvmlUse::kGpm); !missing.empty()) {
    *why = "NVML GPM unavailable: no " + missing;
    return nullptr;
  }
  if (gpm_abi::Return r = api.init(); r != gpm_abi::kSuccess) {
    *why = "NVML GPM unavailable: " + FailureText(NvmlStatus{api.error_string}, r, "nvmlInit_v2");
    return nullptr;
  }
  // From here on the witness owns the initialized library: its destructor
  // frees what was allocated and shuts NVML down on every early return.
  std::unique_ptr<GpmWitness> w(new GpmWitness(std::move(api), nullptr));
  gpm_abi::Device device = nullptr;
  if (pci_bus_id.empty()) {
    if (gpm_abi::Return r = w->api_.handle_by_index(0, &device); r != gpm_abi::kSuccess) {
      *why = "NVML GPM unavailable: no device 0: nvmlDeviceGetHandleByIndex_v2: " + w->Error(r);
      return nullptr;
    }
  } else if (gpm_abi::Return r = w->api_.handle_by_pci_bus_id(pci_bus_id.c_str(), &device);
             r != gpm_abi::kSuccess) {
    *why = "NVML GPM unavailable: no device with PCI bus id \"" + pci_bus_id +
           "\": nvmlDeviceGetHandleByPciBusId_v2: " + w->Error(r);
    return nullptr;
  }
  w->device_ = device;
  gpm_abi::Support support{};
  support.version = gpm_abi::kSupportVersion;
  if (gpm_abi::Return r = w->api_.query_device_support(device, &support); r != gpm_abi::kSuccess) {
    *why = "NVML GPM unavailable on " + DeviceName(pci_bus_id) +
           ": nvmlGpmQueryDeviceSupport: " + w->Error(r);
    return nullptr;
  }
  if (!support.is_supported_device) {
    *why = "NVML GPM unavailable: " + DeviceName(pci_bus_id) +
           " does not support GPM (it needs a Hopper or newer GPU, and on a vGPU a profile "
           "that allows it)";
    return nullptr;
  }
  for (gpm_abi::Sample& s : w->samples_) {
    if (gpm_abi::Return r = w->api_.sample_alloc(&s); r != gpm_abi::kSuccess) {
      s = nullptr;
      *why = "NVML GPM unavailable: nvmlGpmSampleAlloc: " + w->Error(r);
      return nullptr;
    }
  }
  w->request_ = std::make_unique<gpm_abi::MetricsGet>();
  why->clear();
  return w;
}

GpmWitness::GpmWitness(GpmApi api, gpm_abi::Device device)
    : api_(std::move(api)), device_(device) {}

GpmWitness::~GpmWitness() {
  for (gpm_abi::Sample s : samples_)
    if (s) api_.sample_free(s);
  api_.shutdown();
}

std::chrono::steady_clock::time_point GpmWitness::Now() const {
  return api_.now ? api_.now() : std::chrono::steady_clock::now();
}

std::string GpmWitness::Error(gpm_abi::Return r) const {
  return NvmlStatus{api_.error_string}.Describe(r);
}

bool GpmWitness::Begin(std::string* why) {
  std::string ignored;
  if (!why) why = &ignored;
  begun_ = false;
  // The sample's moment is taken as the middle of the call that reads it.
  auto before = Now();
  gpm_abi::Return r = api_.sample_get(device_, samples_[0]);
  auto after = Now();
  if (r != gpm_abi::kSuccess) {
    *why = "nvmlGpmSampleGet (begin): " + Error(r);
    return false;
  }
  begin_time_ = before + (after - before) / 2;
  begun_ = true;
  why->clear();
  return true;
}

double RefreshPhaseDelaySeconds(uint64_t draw) {
  return static_cast<double>(draw >> 11) * 0x1.0p-53 * kGpmRefreshSeconds;
}

double GpmWitness::SecondsToAlignedEnd(double at_least_seconds) const {
  if (!begun_) return 0;
  const double open = std::chrono::duration<double>(Now() - begin_time_).count();
  const double want = std::max({at_least_seconds, open, kGpmRefreshSeconds});
  const double end =
      std::ceil(want / kGpmRefreshSeconds) * kGpmRefreshSeconds + kGpmRefreshGuardSeconds;
  return std::max(0.0, end - open);
}

WitnessWindow GpmWitness::End() {
  WitnessWindow w;
  if (!begun_) {
    w.error = "GPM window ended without a successful Begin()";
    return w;
  }
  begun_ = false;  // one End() per Begin()
  auto before = Now();
  gpm_abi::Return r = api_.sample_get(device_, samples_[1]);
  auto after = Now();
  if (r != gpm_abi::kSuccess) {
    w.error = "nvmlGpmSampleGet (end): " + Error(r);
    return w;
  }
  w.seconds = std::chrono::duration<double>(before + (after - before) / 2 - begin_time_).count();
  const double steps = std::floor((w.seconds - kGpmRefreshGuardSeconds / 2) / kGpmRefreshSeconds);
  if (steps >= 1) w.counter_seconds = steps * kGpmRefreshSeconds;

  gpm_abi::MetricsGet& req = *request_;
  std::memset(&req, 0, sizeof req);
  req.version = gpm_abi::kMetricsGetVersion;
  req.num_metrics = static_cast<unsigned>(std::size(kMetrics));
  req.sample1 = samples_[0];
  req.sample2 = samples_[1];
  for (size_t i = 0; i < std::size(kMetrics); ++i) req.metrics[i].metric_id = kMetrics[i].id;
  if (gpm_abi::Return r = api_.metrics_get(&req); r != gpm_abi::kSuccess) {
    w.error = "nvmlGpmMetricsGet: " + Error(r);
    return w;
  }
  for (size_t i = 0; i < std::size(kMetrics); ++i) {
    const gpm_abi::Metric& m = req.metrics[i];
    if (m.nvml_return == gpm_abi::kSuccess)
      w.*kMetrics[i].field = m.value;
    else
      w.metric_errors.push_back(std::string(kMetrics[i].name) + ": " + Error(m.nvml_return));
  }
  return w;
}

nlohmann::json WitnessWindow::ToJson() const {
  nlohmann::json j = {{"seconds", OrNull(seconds)}, {"counter_seconds", OrNull(counter_seconds)}};
  for (const MetricSlot& m : kMetrics) j[m.name] = OrNull(this->*m.field);
  j["sm_busy_seconds"] = OrNull(sm_busy_seconds());
  j["tensor_busy_seconds"] = OrNull(tensor_busy_seconds());
  if (!metric_errors.empty()) j["metric_errors"] = metric_errors;
  if (!error.empty()) j["error"] = error;
  return j;
}

// ---------------------------------------------------------------------------
// JudgeWitness
//
// The rules, and why:
//
// 1. A window that could not be read (window.error set, no SM utilization, or
//    for a tensor task no tensor utilization) is "unavailable"; so is an
//    expectation that cannot be judged against (no calls, no timed median, a
//    factor that is not a positive number, a tensor task without FLOPs or a
//    peak). The witness then says nothing either way.
// 2. A window shorter than min_window_seconds is "window_too_short": GPM
//    samples hold counters 150-200 ms old and are refreshed coarsely (NVML
//    asks for samples > 100 ms apart; windows of 2-6 ms, and unpadded ones up
//    to ~140 ms, were measured to read all zeros), so a short window's zeros
//    are not evidence of anything. (That the window was padded with idle time
//    as GpmWitness::End describes cannot be seen from here.)
//    Under 1 and 2 timing_ok and tensor_ok stay false.
// 3. Timing. per_call_busy = sm_busy_seconds / calls. SM utilization is the
//    share of SMs that were busy, so a kernel on few SMs reads low: the
//    figure is a LOWER bound of the GPU time per call, never an upper one.
//    timing_ok iff timed_median * timing_factor >= per_call_busy: a timed
//    median far below what the GPU was seen busy per call means the in-process
//    timing was forged or work ran outside it. timing_factor (default 1.2)
//    absorbs the harness's own work in the window and counter noise. The
//    converse (median far above busy) is not flagged: a kernel on few SMs or
//    a latency-bound one looks exactly like that.
// 4. Tensor. Were the tensor cores to do all of the task's FLOPs at their
//    peak, the tensor pipes would be busy expected = calls * flops_per_call /
//    tensor_peak seconds. The pipe runs at its peak rate whenever it is busy,
//    so a real tensor-core kernel keeps it busy about that long whatever its
//    efficiency (one at 80 % of peak is busy ~80 % of its time, over a time
//    1/0.8 of the ideal): tensor_work_fraction_seen = tensor_busy_seconds /
//    expected comes out near 1, and near 0 for a kernel on CUDA cores. It is
//    reported uncapped. tensor_ok iff the task is not a tensor task, or
//    fraction * tensor_factor >= 0.5 (tensor_factor, default 1, is to be
//    measured: e.g. a dtype whose real peak differs from the one given).
// 5. State: "timing_disagrees" when timing fails (the graver finding, and it
//    is reported even when the tensor check fails too), else
//    "no_tensor_activity" when the tensor check fails, else "agrees".

WitnessJudgement JudgeWitness(const WitnessWindow& window, const WitnessExpectation& expect,
                              double min_window_seconds) {
  WitnessJudgement j;
  const double calls = expect.calls;
  const bool calls_ok = std::isfinite(calls) && calls > 0;
  if (calls_ok) j.per_call_busy_seconds = window.sm_busy_seconds() / calls;
  double expected_tensor_seconds = WitnessWindow::kNone;
  if (calls_ok && expect.flops_per_call > 0 && expect.tensor_peak_flops_per_second > 0) {
    expected_tensor_seconds = calls * expect.flops_per_call / expect.tensor_peak_flops_per_second;
    if (std::isfinite(expected_tensor_seconds) && expected_tensor_seconds > 0)
      j.tensor_work_fraction_seen = window.tensor_busy_seconds() / expected_tensor_seconds;
  }

  auto refuse = [&](const char* state, std::string why) {
    j.state = state;
    j.timing_ok = j.tensor_ok = false;
    j.message = std::move(why);
    return j;
  };
  if (!window.error.empty())
    return refuse("unavailable", "GPM witness unavailable: " + window.error);
  if (!std::isfinite(window.seconds))
    return refuse("unavailable", "GPM witness unavailable: the window has no duration");
  if (window.seconds < min_window_seconds)
    return refuse("window_too_short",
                  "GPM window of " + FormatSeconds(window.seconds) + " is shorter than the " +
                      FormatSeconds(min_window_seconds) +
                      " needed: GPM counters are too coarse to read a shorter one");
  if (!std::isfinite(window.counter_seconds) || !(window.counter_seconds > 0))
    return refuse("unavailable", "GPM witness unavailable: the window of " +
                                     FormatSeconds(window.seconds) +
                                     " spans no whole refresh of the counters");
  auto metric_error = [&](const char* name) {
    for (const std::string& e : window.metric_errors)
      if (e.rfind(name, 0) == 0) return " (" + e + ")";
    return std::string();
  };
  if (!std::isfinite(window.sm_util_pct))
    return refuse("unavailable",
                  "GPM witness unavailable: SM utilization not read" + metric_error("sm_util_pct"));
  if (!calls_ok) return refuse("unavailable", "GPM witness unavailable: no calls in the window");
  if (!std::isfinite(expect.timed_median_seconds))
    return refuse("unavailable", "GPM witness unavailable: no timed median to compare with");
  if (!(expect.timing_factor > 0) || !(expect.tensor_factor > 0) ||
      !std::isfinite(expect.timing_factor) || !std::isfinite(expect.tensor_factor))
    return refuse("unavailable",
                  "GPM witness unavailable: timing and tensor factors must be positive numbers");
  if (expect.tensor_task) {
    if (!std::isfinite(expected_tensor_seconds) || !(expected_tensor_seconds > 0))
      return refuse("unavailable",
                    "GPM witness unavailable: a tensor task needs its FLOPs per call and the "
                    "tensor peak");
    if (!std::isfinite(window.any_tensor_util_pct))
      return refuse("unavailable", "GPM witness unavailable: tensor utilization not read" +
                                       metric_error("any_tensor_util_pct"));
  }

  j.timing_ok = expect.timed_median_seconds * expect.timing_factor >= j.per_call_busy_seconds;
  j.tensor_ok = !expect.tensor_task || j.tensor_work_fraction_seen * expect.tensor_factor >= 0.5;

  std::string verdict;
  if (!j.timing_ok) {
    j.state = "timing_disagrees";
    double ratio = j.per_call_busy_seconds / expect.timed_median_seconds;
    verdict = expect.timed_median_seconds > 0 ? "timed median is " + Format("%.3g", ratio) +
                                                    "x below the GPU's busy time per call"
                                              : "timed median is not positive yet the GPU was busy";
    if (!j.tensor_ok) verdict += ", and the tensor pipes did too little of the task's FLOPs";
  } else if (!j.tensor_ok) {
    j.state = "no_tensor_activity";
    verdict = "the tensor pipes did too little of the task's FLOPs for a tensor-core kernel";
  } else {
    j.state = "agrees";
    verdict = "agrees";
  }

  std::string m = verdict + ": GPU busy " + FormatSeconds(j.per_call_busy_seconds) +
                  " per call (SM " + Format("%.0f%%", window.sm_util_pct) + " over " +
                  FormatSeconds(window.counter_seconds) + " of counter refreshes in a " +
                  FormatSeconds(window.seconds) + " window, " + Format("%.0f", calls) +
                  " calls), timed median " + FormatSeconds(expect.timed_median_seconds);
  if (window.sm_util_pct < 1)
    m += " (the GPU was all but idle in the window; busy time is only a lower bound)";
  if (expect.tensor_task) {
    m += "; tensor pipe " + Format("%.0f%%", window.any_tensor_util_pct) +
         " of the window = " + Format("%.2f", j.tensor_work_fraction_seen) +
         " of the task's FLOPs at peak";
  } else if (std::isfinite(window.any_tensor_util_pct)) {
    m += "; not a tensor task (tensor pipe " + Format("%.0f%%", window.any_tensor_util_pct) +
         " of the window)";
  }
  j.message = std::move(m);
  return j;
}

nlohmann::json WitnessJudgement::ToJson() const {
  return {
      {"state", state},
      {"timing_ok", timing_ok},
      {"tensor_ok", tensor_ok},
      {"per_call_busy_seconds", OrNull(per_call_busy_seconds)},
      {"tensor_work_fraction_seen", OrNull(tensor_work_fraction_seen)},
      {"message", message},
  };
}

// ---------------------------------------------------------------------------
// Probe

namespace {
nlohmann::json ProbeResult(const std::unique_ptr<GpmWitness>& w, const std::string& why,
                           const std::string& pci_bus_id) {
  if (!w) return {{"state", "unavailable"}, {"reason", why}};
  return {{"state", "available"}, {"reason", "NVML GPM supported on " + DeviceName(pci_bus_id)}};
}
}  // namespace

nlohmann::json ProbeGpm(const std::string& pci_bus_id) {
  std::string why;
  std::unique_ptr<GpmWitness> w = GpmWitness::Open(pci_bus_id, &why);
  return ProbeResult(w, why, pci_bus_id);
}

nlohmann::json ProbeGpmWith(GpmApi api, const std::string& pci_bus_id) {
  std::string why;
  std::unique_ptr<GpmWitness> w = GpmWitness::OpenWith(std::move(api), pci_bus_id, &why);
  return ProbeResult(w, why, pci_bus_id);
}

}  // namespace ptxbench
