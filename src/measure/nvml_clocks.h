// The GPU's clocks while it is being timed, through NVML: SM and memory clock,
// the reasons NVML gives for holding the clocks down (power cap, thermal
// slowdown, ...), temperature and power. A timing taken while the clocks were
// throttled is not comparable with one taken at full clock; these samples let
// a record say which it was.
//
// NVML is loaded at run time (measure/nvml_api.h, the one binding), the library the
// driver installs, so ptxbench builds and runs on machines without it. Where it
// is missing or fails, everything here says so with a reason; it never
// reports a number it did not read.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace ptxbench {

struct NvmlApi;  // measure/nvml_api.h

// NVML's clock event ("throttle") reason bits, as documented in the NVML API
// reference (group nvmlClocksEventReasons).
namespace clock_reason {
inline constexpr uint64_t kGpuIdle = 0x1;
inline constexpr uint64_t kApplicationsClocksSetting = 0x2;
inline constexpr uint64_t kSwPowerCap = 0x4;
inline constexpr uint64_t kHwSlowdown = 0x8;
inline constexpr uint64_t kSyncBoost = 0x10;
inline constexpr uint64_t kSwThermalSlowdown = 0x20;
inline constexpr uint64_t kHwThermalSlowdown = 0x40;
inline constexpr uint64_t kHwPowerBrakeSlowdown = 0x80;
inline constexpr uint64_t kDisplayClockSetting = 0x100;
inline constexpr uint64_t kBoardLimit = 0x200;   // newer drivers only
inline constexpr uint64_t kReliability = 0x400;  // newer drivers only
// The reasons that mean the clocks were lowered under load (power or heat),
// as opposed to idling or a configured clock.
inline constexpr uint64_t kThrottling =
    kSwPowerCap | kHwSlowdown | kSwThermalSlowdown | kHwThermalSlowdown | kHwPowerBrakeSlowdown;
}  // namespace clock_reason

// "gpu_idle", "sw_power_cap", ... for each set bit, lowest bit first; a bit
// without a name (one a newer driver added) comes out as "bit_N".
std::vector<std::string> DecodeClockReasons(uint64_t bits);

// One reading. A value NVML did not give is NaN (or reasons_known false), and
// `error` names the first query that failed.
struct ClockSample {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  double sm_mhz = kNone, mem_mhz = kNone;  // current clocks
  double temperature_c = kNone;            // GPU die
  double power_w = kNone;                  // board power (NVML may average it over ~1 s)
  uint64_t reasons = 0;                    // clock_reason bits active now
  bool reasons_known = false;
  std::string error;
};

// An open NVML device. Its queries are safe from any one thread at a time.
class NvmlClocks {
 public:
  // The device with this PCI bus id ("0000:41:00.0", as cudaDeviceGetPCIBusId
  // gives it). Null, with *why_not set, when NVML cannot be loaded or
  // initialized or has no such device.
  static std::unique_ptr<NvmlClocks> Open(const std::string& pci_bus_id, std::string* why_not);
  ~NvmlClocks();  // nvmlShutdown(); the library stays loaded
  NvmlClocks(const NvmlClocks&) = delete;
  NvmlClocks& operator=(const NvmlClocks&) = delete;

  ClockSample Sample();

 private:
  NvmlClocks(std::unique_ptr<NvmlApi> api, void* device);
  std::unique_ptr<NvmlApi> api_;
  void* device_;  // nvmlDevice_t
};

// What a run of samples says. Extremes are over the samples that have the
// value (NaN when none has); `reasons` is the union over the samples.
struct ClockSummary {
  size_t samples = 0;
  size_t failed_samples = 0;  // samples with at least one failed query
  double sm_mhz_min = ClockSample::kNone, sm_mhz_max = ClockSample::kNone;
  double mem_mhz_min = ClockSample::kNone, mem_mhz_max = ClockSample::kNone;
  double temperature_c_max = ClockSample::kNone, power_w_max = ClockSample::kNone;
  uint64_t reasons = 0;
  bool reasons_known = false;  // some sample read the reasons
  std::string first_error;     // of the failed samples
  std::string unavailable;     // non-empty: NVML could not be used at all, and why
};

// The aggregation, kept apart from the thread so that it can be tested.
ClockSummary SummarizeClocks(const std::vector<ClockSample>& samples);

// Polls NvmlClocks::Sample() on its own thread between Start() and Stop():
// once at Start(), then every `period`. The thread costs CPU time only, not
// GPU time. Constructed without a device (null `clocks`), it samples nothing
// and Stop() reports `why_not`.
class ClockSampler {
 public:
  ClockSampler(NvmlClocks* clocks, std::string why_not,
               std::chrono::milliseconds period = std::chrono::milliseconds(20));
  // Polls `sample` instead of a device (tests); an empty function is no device.
  ClockSampler(std::function<ClockSample()> sample, std::string why_not,
               std::chrono::milliseconds period);
  ~ClockSampler();  // stops a running sampler
  ClockSampler(const ClockSampler&) = delete;
  ClockSampler& operator=(const ClockSampler&) = delete;

  void Start();  // forgets earlier samples; a sampler already running keeps running
  ClockSummary Stop();

 private:
  void Loop();
  std::function<ClockSample()> sample_;
  std::string why_not_;
  std::chrono::milliseconds period_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::vector<ClockSample> samples_;
  std::thread thread_;
};

// ClockSample: {"sm_mhz", "mem_mhz", "temperature_c", "power_w", "reasons": [names]}, a value
// that was not read as null, plus "error" when a query failed.
nlohmann::json ToJson(const ClockSample& s);
// ClockSummary: {"samples", "sm_mhz": {"min", "max"}, "mem_mhz": {...}, "temperature_c_max",
// "power_w_max", "reasons": [names], "throttled": bool, "failed_samples", "first_error"}
// (reasons and throttled null when no sample read the reasons), or
// {"available": false, "reason": ...} when NVML could not be used.
nlohmann::json ToJson(const ClockSummary& s);

}  // namespace ptxbench
