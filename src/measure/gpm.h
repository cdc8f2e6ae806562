// A witness from outside the candidate's process: NVML GPM (GPU Performance
// Monitoring, Hopper and newer) counters read by the evaluator before and
// after a phase in which a child process runs W back-to-back calls of the
// candidate kernel. The two samples give the fraction of SMs that were busy
// and the fraction of time the tensor pipes were busy over the window, from
// which follow the GPU's busy seconds. The candidate runs in another process
// and cannot touch these counters, so they can confirm (or contradict) the
// times the harness measured inside it.
//
// NVML is loaded at run time (measure/nvml_api.h, the binding nvml_clocks.h uses
// too), so nothing here needs the driver to build. Every NVML call goes through
// the NvmlApi table, which tests fill with fakes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/nvml_api.h"

namespace ptxbench {

// The GPM part of the one NVML binding (measure/nvml_api.h): its ABI and its table of
// functions, which tests fill with fakes.
namespace gpm_abi = nvml_abi;
using GpmApi = NvmlApi;

// The functions of `library` (normally "libnvidia-ml.so.1"), or nullopt with
// *why set when it cannot be loaded or lacks one of GPM's. The library is never
// unloaded (NVML may leave threads behind after nvmlShutdown).
std::optional<GpmApi> LoadGpmApi(const std::string& library, std::string* why);

// What a sample reads is refreshed in steps: on an H100 (driver 580) successive samples
// change every 100 +- 1 ms (scripts/probes/gpm_window.py, 2026-12-07), and the rates between
// two samples are over the interval between the refreshes they read, a whole number of steps,
// not over the time between the two calls. A window whose ends are H apart spans floor(H/step)
// or ceil(H/step) steps: 24 windows of 0.36-0.47 s around the same 52 ms of matmuls read
// utilizations of 8.3 %, 10.4 % or 14.0 % (5, 4 or 3 steps), and utilization x H read
// 0.67-1.03 of the work. So the parent ends a window a guard after a whole number k of steps
// (GpmWitness::SecondsToAlignedEnd): it then spans k steps, or k + 1 when a refresh fell
// inside the guard, and the rates are taken over k steps, which is exact or reads the busy
// time low by at most 1/(k+1), never high.
inline constexpr double kGpmRefreshSeconds = 0.1;
inline constexpr double kGpmRefreshGuardSeconds = 0.02;

// Whether a refresh falls inside the guard depends on where the window starts in the refresh
// cycle. The child chooses when it is ready for the window, so a child that can see the cycle
// (its own NVML samples) could time its readiness to land in the guard every time and be read
// low in every window. The parent therefore waits a part of one refresh of its own drawing
// before the window: `draw` (any 64-bit draw) to a delay in [0, kGpmRefreshSeconds).
double RefreshPhaseDelaySeconds(uint64_t draw);

// What GPM saw between Begin() and End(). Utilizations are in percent
// (0-100) averaged over the window; NaN when not read.
struct WitnessWindow {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  double seconds = kNone;  // steady_clock time between the two samples
  // The whole refresh steps the window is sure to span, floor((seconds - guard/2) / step) *
  // step: what the rates are over (above). NaN when the window spans no whole step.
  double counter_seconds = kNone;
  double sm_util_pct = kNone;           // share of SMs busy
  double sm_occupancy_pct = kNone;      // active warps vs the SMs' maximum
  double any_tensor_util_pct = kNone;   // time the SMs' tensor pipes did any work
  double hmma_tensor_util_pct = kNone;  // ... of it, HMMA (fp16/bf16/tf32/fp8) MMAs
  double graphics_util_pct = kNone;     // time any graphics/compute context was active
  double dram_bw_util_pct = kNone;      // DRAM bandwidth vs its peak
  double fp32_util_pct = kNone;         // time the SMs did non-tensor fp32 math
  // "sm_util_pct: Not Supported (3)" for each metric NVML returned no value for.
  std::vector<std::string> metric_errors;
  // Non-empty: the window could not be read at all (a sample or the metrics
  // call failed, or End() came without Begin()); then every value is NaN.
  std::string error;

  // SM-seconds of work over the window, in seconds of the whole GPU:
  // sm_util_pct/100 * counter_seconds.
  double sm_busy_seconds() const { return sm_util_pct / 100.0 * counter_seconds; }
  // any_tensor_util_pct/100 * counter_seconds.
  double tensor_busy_seconds() const { return any_tensor_util_pct / 100.0 * counter_seconds; }

  // {"seconds", "counter_seconds", "<metric>_pct" for each metric, "sm_busy_seconds",
  // "tensor_busy_seconds"}, NaN as null, plus "metric_errors" and "error" when
  // there are any.
  nlohmann::json ToJson() const;
};

// An open NVML device with GPM support and two samples allocated. One window
// at a time: Begin(), the work, End(); it may be repeated. Not thread-safe.
class GpmWitness {
 public:
  // The device with this PCI bus id ("0000:41:00.0"), or index 0 when the id is
  // empty. Null, with *why set, when NVML cannot be loaded, lacks a GPM
  // function, fails to initialize, has no such device, or says the device does
  // not support GPM.
  static std::unique_ptr<GpmWitness> Open(const std::string& pci_bus_id, std::string* why);
  // The same through `api` (a test's fake, or LoadGpmApi's result).
  static std::unique_ptr<GpmWitness> OpenWith(GpmApi api, const std::string& pci_bus_id,
                                              std::string* why);
  ~GpmWitness();  // frees the samples, nvmlShutdown()
  GpmWitness(const GpmWitness&) = delete;
  GpmWitness& operator=(const GpmWitness&) = delete;

  // Takes the first sample and notes the time. False, with *why set, when
  // NVML fails; End() then reports the window unavailable.
  bool Begin(std::string* why);
  // How long to wait from now before End() so that the window is at least `at_least_seconds`
  // long and ends a guard after a whole number of refresh steps (kGpmRefreshSeconds); 0 when
  // that moment has passed or Begin() did not succeed.
  double SecondsToAlignedEnd(double at_least_seconds) const;
  // Takes the second sample and reads the metrics between the two.
  //
  // What a sample holds lags the GPU: on an H200 (driver 580) the counters a
  // sample reads are some 150-200 ms old. Unpadded windows of up to ~140 ms
  // after an idle spell read all zeros, 200-500 ms ones read a third to two
  // thirds of the true utilization, and a window opened right after other
  // work is credited with that work. Leave the GPU idle for >= 300 ms before
  // Begin() and again between the last call and End(): so padded, even 20
  // calls of a 1.3 ms GEMM read 0.9-1.0 of their busy time. The padding is
  // part of `seconds` after Begin(), which keeps sm_util * seconds right.
  WitnessWindow End();

 private:
  GpmWitness(GpmApi api, gpm_abi::Device device);
  std::chrono::steady_clock::time_point Now() const;
  std::string Error(gpm_abi::Return r) const;

  GpmApi api_;
  gpm_abi::Device device_;
  gpm_abi::Sample samples_[2] = {nullptr, nullptr};
  std::unique_ptr<gpm_abi::MetricsGet> request_;  // 40 KiB: kept, not on the stack
  bool begun_ = false;
  std::chrono::steady_clock::time_point begin_time_;
};

// What the evaluator expects of the window, from the task and the timed run.
struct WitnessExpectation {
  // Busy per call over timed median read 0.80-1.05 for honest kernels (H200 and H100,
  // docs/gpu-runs: the witness's `busy_over_timed` in every record); 1.2 leaves them room and
  // catches a forged median a fifth too short or worse (a 1.3x forgery of its own speed).
  static constexpr double kDefaultTimingFactor = 1.2;
  static constexpr double kDefaultTensorFactor = 1.0;  // to be measured on the GPU
  double calls = 0;                                    // kernel calls in the window (W)
  double timed_median_seconds = 0;                     // the harness's median per call
  double flops_per_call = 0;                           // the task's FLOPs per call
  double tensor_peak_flops_per_second = 0;  // dense tensor-core peak for the task's dtype
  bool tensor_task = false;                 // the task is meant for tensor cores
  double timing_factor = kDefaultTimingFactor;
  double tensor_factor = kDefaultTensorFactor;
};

struct WitnessJudgement {
  // "agrees", "timing_disagrees", "no_tensor_activity", "unavailable",
  // "window_too_short".
  std::string state;
  bool timing_ok = false;
  bool tensor_ok = false;
  double per_call_busy_seconds = WitnessWindow::kNone;      // sm_busy_seconds / calls
  double tensor_work_fraction_seen = WitnessWindow::kNone;  // see JudgeWitness
  std::string message;  // one line for a person, with the numbers
  // {"state", "timing_ok", "tensor_ok", "per_call_busy_seconds",
  // "tensor_work_fraction_seen", "message"}, NaN as null.
  nlohmann::json ToJson() const;
};

// Decides whether the window bears out the timed median and, for a tensor
// task, the use of tensor cores. The rules are stated in gpm.cc. Pure.
WitnessJudgement JudgeWitness(const WitnessWindow& window, const WitnessExpectation& expect,
                              double min_window_seconds);

// For `doctor`: {"state": "available"|"unavailable", "reason": ...} for the
// device with this PCI bus id (index 0 when empty). Opens and closes NVML.
nlohmann::json ProbeGpm(const std::string& pci_bus_id);
// The same through `api` (tests).
nlohmann::json ProbeGpmWith(GpmApi api, const std::string& pci_bus_id);

}  // namespace ptxbench
