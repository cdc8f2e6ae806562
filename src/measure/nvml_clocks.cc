#include "measure/nvml_clocks.h"

#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "measure/nvml_api.h"
#include "measure/nvml_status.h"

namespace ptxbench {
namespace {

namespace nvml = nvml_abi;

// The bit names of clock_reason, in bit order.
constexpr std::pair<uint64_t, const char*> kReasonNames[] = {
    {clock_reason::kGpuIdle, "gpu_idle"},
    {clock_reason::kApplicationsClocksSetting, "applications_clocks_setting"},
    {clock_reason::kSwPowerCap, "sw_power_cap"},
    {clock_reason::kHwSlowdown, "hw_slowdown"},
    {clock_reason::kSyncBoost, "sync_boost"},
    {clock_reason::kSwThermalSlowdown, "sw_thermal_slowdown"},
    {clock_reason::kHwThermalSlowdown, "hw_thermal_slowdown"},
    {clock_reason::kHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
    {clock_reason::kDisplayClockSetting, "display_clock_setting"},
    {clock_reason::kBoardLimit, "board_limit"},
    {clock_reason::kReliability, "reliability"},
};

nlohmann::json OrNull(double v) {
  return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
}

nlohmann::json ReasonNames(uint64_t bits) { return DecodeClockReasons(bits); }

std::string Failure(const NvmlApi& api, const std::string& call, nvml::Return r) {
  return FailureText(NvmlStatus{api.error_string}, r, call);
}

}  // namespace

std::vector<std::string> DecodeClockReasons(uint64_t bits) {
  std::vector<std::string> names;
  for (int bit = 0; bit < 64; ++bit) {
    uint64_t mask = uint64_t{1} << bit;
    if (!(bits & mask)) continue;
    std::string name = "bit_" + std::to_string(bit);
    for (const auto& [known, known_name] : kReasonNames)
      if (known == mask) name = known_name;
    names.push_back(std::move(name));
  }
  return names;
}

std::unique_ptr<NvmlClocks> NvmlClocks::Open(const std::string& pci_bus_id, std::string* why_not) {
  std::string ignored;
  if (!why_not) why_not = &ignored;
  std::optional<NvmlApi> loaded = LoadNvmlApi(nvml::kLibrary, why_not);
  if (!loaded) {
    *why_not = "NVML unavailable: " + *why_not;
    return nullptr;
  }
  if (std::string missing = MissingNvmlSymbols(*loaded, NvmlUse::kClocks); !missing.empty()) {
    *why_not = std::string("NVML unavailable: ") + nvml::kLibrary + " lacks " + missing;
    return nullptr;
  }
  auto api = std::make_unique<NvmlApi>(std::move(*loaded));
  if (nvml::Return r = api->init(); r != nvml::kSuccess) {
    *why_not = "NVML unavailable: " + Failure(*api, "nvmlInit_v2", r);
    return nullptr;
  }
  nvml::Device device = nullptr;
  if (nvml::Return r = api->handle_by_pci_bus_id(pci_bus_id.c_str(), &device);
      r != nvml::kSuccess) {
    *why_not = "NVML: no device with PCI bus id \"" + pci_bus_id +
               "\": " + Failure(*api, "nvmlDeviceGetHandleByPciBusId_v2", r);
    api->shutdown();
    return nullptr;
  }
  why_not->clear();
  return std::unique_ptr<NvmlClocks>(new NvmlClocks(std::move(api), device));
}

NvmlClocks::NvmlClocks(std::unique_ptr<NvmlApi> api, void* device)
    : api_(std::move(api)), device_(device) {}

NvmlClocks::~NvmlClocks() { api_->shutdown(); }

ClockSample NvmlClocks::Sample() {
  auto device = static_cast<nvml::Device>(device_);
  ClockSample s;
  auto failed = [&](const std::string& call, nvml::Return r) {
    if (s.error.empty()) s.error = Failure(*api_, call, r);
  };
  unsigned int v = 0;
  if (nvml::Return r = api_->clock_info(device, nvml::kClockSm, &v); r == nvml::kSuccess)
    s.sm_mhz = v;
  else
    failed("nvmlDeviceGetClockInfo(SM)", r);
  if (nvml::Return r = api_->clock_info(device, nvml::kClockMem, &v); r == nvml::kSuccess)
    s.mem_mhz = v;
  else
    failed("nvmlDeviceGetClockInfo(MEM)", r);
  if (nvml::Return r = api_->temperature(device, nvml::kTemperatureGpu, &v); r == nvml::kSuccess)
    s.temperature_c = v;
  else
    failed("nvmlDeviceGetTemperature", r);
  if (nvml::Return r = api_->power_usage(device, &v); r == nvml::kSuccess)
    s.power_w = v / 1000.0;  // milliwatts
  else
    failed("nvmlDeviceGetPowerUsage", r);
  unsigned long long reasons = 0;
  if (nvml::Return r = api_->clock_reasons(device, &reasons); r == nvml::kSuccess) {
    s.reasons = reasons;
    s.reasons_known = true;
  } else {
    failed(api_->clock_reasons_name, r);
  }
  return s;
}

ClockSummary SummarizeClocks(const std::vector<ClockSample>& samples) {
  // std::fmin/fmax return the other argument when one is NaN, so a value that
  // was never read neither counts nor spoils the extremes.
  ClockSummary sum;
  sum.samples = samples.size();
  for (const ClockSample& s : samples) {
    sum.sm_mhz_min = std::fmin(sum.sm_mhz_min, s.sm_mhz);
    sum.sm_mhz_max = std::fmax(sum.sm_mhz_max, s.sm_mhz);
    sum.mem_mhz_min = std::fmin(sum.mem_mhz_min, s.mem_mhz);
    sum.mem_mhz_max = std::fmax(sum.mem_mhz_max, s.mem_mhz);
    sum.temperature_c_max = std::fmax(sum.temperature_c_max, s.temperature_c);
    sum.power_w_max = std::fmax(sum.power_w_max, s.power_w);
    if (s.reasons_known) {
      sum.reasons |= s.reasons;
      sum.reasons_known = true;
    }
    if (!s.error.empty()) {
      if (sum.failed_samples == 0) sum.first_error = s.error;
      ++sum.failed_samples;
    }
  }
  return sum;
}

ClockSampler::ClockSampler(NvmlClocks* clocks, std::string why_not,
                           std::chrono::milliseconds period)
    : ClockSampler(clocks ? std::function<ClockSample()>([clocks] { return clocks->Sample(); })
                          : std::function<ClockSample()>(),
                   std::move(why_not), period) {}

ClockSampler::ClockSampler(std::function<ClockSample()> sample, std::string why_not,
                           std::chrono::milliseconds period)
    : sample_(std::move(sample)),
      why_not_(why_not.empty() && !sample_ ? "NVML was not opened" : std::move(why_not)),
      period_(period) {}

ClockSampler::~ClockSampler() { Stop(); }

void ClockSampler::Start() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    samples_.clear();
    stop_ = false;
  }
  if (sample_ && !thread_.joinable()) thread_ = std::thread(&ClockSampler::Loop, this);
}

ClockSummary ClockSampler::Stop() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  std::vector<ClockSample> samples;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    samples.swap(samples_);
  }
  ClockSummary sum = SummarizeClocks(samples);
  if (!sample_) sum.unavailable = why_not_;
  return sum;
}

void ClockSampler::Loop() {
  // Deadlines on a fixed grid, so the period does not stretch by the time the
  // queries take; after a slow query the next sample follows at once.
  auto next = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    lock.unlock();
    ClockSample s = sample_();  // outside the lock: it may take a millisecond
    lock.lock();
    samples_.push_back(std::move(s));
    next += period_;
    auto now = std::chrono::steady_clock::now();
    if (next < now) next = now;
    if (wake_.wait_until(lock, next, [this] { return stop_; })) return;
  }
}

nlohmann::json ToJson(const ClockSample& s) {
  nlohmann::json j = {
      {"sm_mhz", OrNull(s.sm_mhz)},
      {"mem_mhz", OrNull(s.mem_mhz)},
      {"temperature_c", OrNull(s.temperature_c)},
      {"power_w", OrNull(s.power_w)},
      {"reasons", s.reasons_known ? ReasonNames(s.reasons) : nlohmann::json(nullptr)},
  };
  if (!s.error.empty()) j["error"] = s.error;
  return j;
}

nlohmann::json ToJson(const ClockSummary& s) {
  if (!s.unavailable.empty()) return {{"available", false}, {"reason", s.unavailable}};
  nlohmann::json j = {
      {"available", true},
      {"samples", s.samples},
      {"sm_mhz", {{"min", OrNull(s.sm_mhz_min)}, {"max", OrNull(s.sm_mhz_max)}}},
      {"mem_mhz", {{"min", OrNull(s.mem_mhz_min)}, {"max", OrNull(s.mem_mhz_max)}}},
      {"temperature_c_max", OrNull(s.temperature_c_max)},
      {"power_w_max", OrNull(s.power_w_max)},
      {"reasons", s.reasons_known ? ReasonNames(s.reasons) : nlohmann::json(nullptr)},
      {"throttled", s.reasons_known ? nlohmann::json((s.reasons & clock_reason::kThrottling) != 0)
                                    : nlohmann::json(nullptr)},
      {"failed_samples", s.failed_samples},
  };
  if (!s.first_error.empty()) j["first_error"] = s.first_error;
  return j;
}

}  // namespace ptxbench
