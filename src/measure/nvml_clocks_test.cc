#include "measure/nvml_clocks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>
#include <tuple>

namespace ptxbench {
namespace {

using Names = std::vector<std::string>;

ClockSample Reading(double sm, double mem, double temp, double power, uint64_t reasons) {
  ClockSample s;
  s.sm_mhz = sm;
  s.mem_mhz = mem;
  s.temperature_c = temp;
  s.power_w = power;
  s.reasons = reasons;
  s.reasons_known = true;
  return s;
}

TEST(DecodeClockReasons, NamesEachBitLowestFirst) {
  EXPECT_EQ(DecodeClockReasons(0), Names{});
  EXPECT_EQ(DecodeClockReasons(0x1), Names{"gpu_idle"});
  EXPECT_EQ(DecodeClockReasons(0x1ff),
            (Names{"gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown",
                   "sync_boost", "sw_thermal_slowdown", "hw_thermal_slowdown",
                   "hw_power_brake_slowdown", "display_clock_setting"}));
  EXPECT_EQ(DecodeClockReasons(clock_reason::kSwPowerCap | clock_reason::kHwThermalSlowdown),
            (Names{"sw_power_cap", "hw_thermal_slowdown"}));
  EXPECT_EQ(DecodeClockReasons(0x600), (Names{"board_limit", "reliability"}));
}

TEST(DecodeClockReasons, UnknownBitsByNumber) {
  EXPECT_EQ(DecodeClockReasons(uint64_t{1} << 11), Names{"bit_11"});
  EXPECT_EQ(DecodeClockReasons((uint64_t{1} << 63) | 0x4), (Names{"sw_power_cap", "bit_63"}));
}

TEST(SummarizeClocks, ExtremesAndUnionOfReasons) {
  std::vector<ClockSample> samples = {
      Reading(1980, 2619, 41, 210.5, clock_reason::kGpuIdle),
      Reading(1755, 2619, 57, 690.25, clock_reason::kSwPowerCap),
      Reading(1830, 2619, 55, 650, 0),
  };
  ClockSummary s = SummarizeClocks(samples);
  EXPECT_EQ(s.samples, 3u);
  EXPECT_EQ(s.failed_samples, 0u);
  const std::tuple<const char*, double ClockSummary::*, double> extremes[] = {
      {"sm_mhz_min", &ClockSummary::sm_mhz_min, 1755},
      {"sm_mhz_max", &ClockSummary::sm_mhz_max, 1980},
      {"mem_mhz_min", &ClockSummary::mem_mhz_min, 2619},
      {"mem_mhz_max", &ClockSummary::mem_mhz_max, 2619},
      {"temperature_c_max", &ClockSummary::temperature_c_max, 57},
      {"power_w_max", &ClockSummary::power_w_max, 690.25}};
  for (const auto& [name, extreme, want] : extremes) EXPECT_DOUBLE_EQ(s.*extreme, want) << name;
  EXPECT_EQ(s.reasons, clock_reason::kGpuIdle | clock_reason::kSwPowerCap);
  EXPECT_TRUE(s.reasons_known);

  nlohmann::json j = ToJson(s);
  EXPECT_EQ(j["available"], true);
  EXPECT_EQ(j["samples"], 3);
  EXPECT_EQ(j["sm_mhz"]["min"], 1755.0);
  EXPECT_EQ(j["sm_mhz"]["max"], 1980.0);
  EXPECT_EQ(j["reasons"], (nlohmann::json{"gpu_idle", "sw_power_cap"}));
  EXPECT_EQ(j["throttled"], true);
  EXPECT_FALSE(j.contains("first_error"));
}

TEST(SummarizeClocks, IdleAndConfiguredClocksAreNotThrottling) {
  ClockSummary s = SummarizeClocks({Reading(
      1980, 2619, 40, 120, clock_reason::kGpuIdle | clock_reason::kApplicationsClocksSetting)});
  EXPECT_EQ(ToJson(s)["throttled"], false);
}

TEST(SummarizeClocks, ValuesNotReadAreLeftOutNotInvented) {
  ClockSample partial = Reading(1500, 2619, 60, ClockSample::kNone, 0);
  partial.error = "nvmlDeviceGetPowerUsage: Not Supported (3)";
  ClockSample nothing;  // every query failed
  nothing.error = "nvmlDeviceGetClockInfo(SM): GPU is lost (15)";
  ClockSummary s = SummarizeClocks({nothing, partial, Reading(1600, 2619, 58, 300, 0)});
  EXPECT_EQ(s.samples, 3u);
  EXPECT_EQ(s.failed_samples, 2u);
  EXPECT_EQ(s.first_error, "nvmlDeviceGetClockInfo(SM): GPU is lost (15)");
  EXPECT_DOUBLE_EQ(s.sm_mhz_min, 1500);
  EXPECT_DOUBLE_EQ(s.sm_mhz_max, 1600);
  EXPECT_DOUBLE_EQ(s.power_w_max, 300);
  EXPECT_EQ(s.reasons, 0u);
  EXPECT_TRUE(s.reasons_known);

  // No sample with a value: NaN in the summary, null in JSON.
  ClockSummary none = SummarizeClocks({nothing});
  EXPECT_TRUE(std::isnan(none.sm_mhz_min));
  EXPECT_TRUE(std::isnan(none.power_w_max));
  EXPECT_FALSE(none.reasons_known);
  nlohmann::json j = ToJson(none);
  EXPECT_TRUE(j["sm_mhz"]["min"].is_null());
  EXPECT_TRUE(j["power_w_max"].is_null());
  EXPECT_TRUE(j["reasons"].is_null());
  EXPECT_TRUE(j["throttled"].is_null());
  EXPECT_EQ(j["failed_samples"], 1);

  nlohmann::json sample = ToJson(partial);
  EXPECT_TRUE(sample["power_w"].is_null());
  EXPECT_EQ(sample["sm_mhz"], 1500.0);
  EXPECT_EQ(sample["error"], "nvmlDeviceGetPowerUsage: Not Supported (3)");
  EXPECT_TRUE(ToJson(nothing)["reasons"].is_null());

  ClockSummary empty = SummarizeClocks({});
  EXPECT_EQ(empty.samples, 0u);
  EXPECT_TRUE(std::isnan(empty.sm_mhz_max));
}

TEST(NvmlClocks, OpenGivesAReasonInsteadOfADevice) {
  // No machine has a GPU at this bus id; on one without the driver (CI), NVML
  // itself cannot be loaded. Either way: no device, and a reason.
  std::string why_not;
  std::unique_ptr<NvmlClocks> clocks = NvmlClocks::Open("ffff:ff:1f.7", &why_not);
  EXPECT_EQ(clocks, nullptr);
  EXPECT_NE(why_not.find("NVML"), std::string::npos) << why_not;
  EXPECT_EQ(NvmlClocks::Open("ffff:ff:1f.7", nullptr), nullptr);
}

TEST(ClockSampler, WithoutADeviceReportsWhy) {
  ClockSampler sampler(static_cast<NvmlClocks*>(nullptr), "NVML unavailable: test");
  sampler.Start();
  ClockSummary s = sampler.Stop();
  EXPECT_EQ(s.samples, 0u);
  EXPECT_EQ(s.unavailable, "NVML unavailable: test");
  EXPECT_EQ(ToJson(s),
            (nlohmann::json{{"available", false}, {"reason", "NVML unavailable: test"}}));
  ClockSampler unnamed(static_cast<NvmlClocks*>(nullptr), "");
  EXPECT_FALSE(unnamed.Stop().unavailable.empty());
}

TEST(ClockSampler, PollsUntilStopped) {
  std::atomic<int> calls{0};
  ClockSampler sampler(
      [&] {
        int n = ++calls;
        return Reading(1000 + n, 2619, 50, 100, n == 2 ? clock_reason::kHwSlowdown : 0);
      },
      "", std::chrono::milliseconds(1));
  sampler.Start();
  while (calls < 5) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ClockSummary s = sampler.Stop();
  int after_stop = calls;
  EXPECT_GE(s.samples, 5u);
  EXPECT_EQ(s.samples, static_cast<size_t>(after_stop));
  EXPECT_DOUBLE_EQ(s.sm_mhz_min, 1001);
  EXPECT_DOUBLE_EQ(s.sm_mhz_max, 1000 + after_stop);
  EXPECT_EQ(s.reasons, clock_reason::kHwSlowdown);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(calls, after_stop);  // the thread is gone

  // A second window starts afresh, and always has its first sample.
  sampler.Start();
  ClockSummary second = sampler.Stop();
  EXPECT_GE(second.samples, 1u);
  EXPECT_GT(second.sm_mhz_min, 1000 + after_stop);
  EXPECT_EQ(second.reasons, 0u);
}

}  // namespace
}  // namespace ptxbench
