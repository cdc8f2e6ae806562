#include "measure/gpm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

namespace ptxbench {
namespace {

using gpm_abi::Return;

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Opening the witness over `api` fails (expected); returns why.
std::string WhyOpenFails(const GpmApi& api, const std::string& pci_bus_id = "") {
  std::string why;
  EXPECT_EQ(GpmWitness::OpenWith(api, pci_bus_id, &why), nullptr);
  return why;
}

// A stand-in for libnvidia-ml: counts the calls, hands out made-up handles,
// and answers nvmlGpmMetricsGet from `metrics`.
struct FakeNvml {
  Return init_return = gpm_abi::kSuccess;
  Return device_return = gpm_abi::kSuccess;
  Return support_return = gpm_abi::kSuccess;
  unsigned supported = 1;
  Return alloc_return = gpm_abi::kSuccess;
  std::vector<Return> sample_get_returns;  // in call order; kSuccess past the end
  Return metrics_get_return = gpm_abi::kSuccess;
  std::map<unsigned, std::pair<Return, double>> metrics;  // id -> (status, value)
  std::vector<double> clock;  // seconds that successive now() calls return

  int init_calls = 0, shutdown_calls = 0, allocated = 0, freed = 0;
  std::string pci_asked;
  int index_asked = -1;
  std::vector<gpm_abi::Sample> sampled;  // the samples passed to nvmlGpmSampleGet
  unsigned support_version_seen = 0;
  gpm_abi::MetricsGet request_seen{};  // the header of the last metrics request
  std::vector<unsigned> ids_seen;

  static gpm_abi::Device TheDevice() { return reinterpret_cast<gpm_abi::Device>(0xd0d0); }

  GpmApi Api() {
    GpmApi a;
    a.init = [this] {
      ++init_calls;
      return init_return;
    };
    a.shutdown = [this] {
      ++shutdown_calls;
      return gpm_abi::kSuccess;
    };
    a.error_string = [](Return r) -> const char* {
      return r == gpm_abi::kNotSupported ? "Not Supported" : r == 15 ? "GPU is lost" : nullptr;
    };
    a.handle_by_pci_bus_id = [this](const char* id, gpm_abi::Device* d) {
      pci_asked = id;
      if (device_return == gpm_abi::kSuccess) *d = TheDevice();
      return device_return;
    };
    a.handle_by_index = [this](unsigned i, gpm_abi::Device* d) {
      index_asked = static_cast<int>(i);
      if (device_return == gpm_abi::kSuccess) *d = TheDevice();
      return device_return;
    };
    a.query_device_support = [this](gpm_abi::Device d, gpm_abi::Support* s) {
      EXPECT_EQ(d, TheDevice());
      support_version_seen = s->version;
      s->is_supported_device = supported;
      return support_return;
    };
    a.sample_alloc = [this](gpm_abi::Sample* s) {
      if (alloc_return != gpm_abi::kSuccess) return alloc_return;
      *s = reinterpret_cast<gpm_abi::Sample>(uintptr_t{0x1000} + ++allocated);
      return gpm_abi::kSuccess;
    };
    a.sample_free = [this](gpm_abi::Sample) {
      ++freed;
      return gpm_abi::kSuccess;
    };
    a.sample_get = [this](gpm_abi::Device d, gpm_abi::Sample s) {
      EXPECT_EQ(d, TheDevice());
      size_t n = sampled.size();
      sampled.push_back(s);
      return n < sample_get_returns.size() ? sample_get_returns[n] : gpm_abi::kSuccess;
    };
    a.metrics_get = [this](gpm_abi::MetricsGet* m) {
      request_seen.version = m->version;
      request_seen.num_metrics = m->num_metrics;
      request_seen.sample1 = m->sample1;
      request_seen.sample2 = m->sample2;
      ids_seen.clear();
      for (unsigned i = 0; i < m->num_metrics; ++i) {
        gpm_abi::Metric& metric = m->metrics[i];
        ids_seen.push_back(metric.metric_id);
        auto it = metrics.find(metric.metric_id);
        metric.nvml_return = it == metrics.end() ? gpm_abi::kNotSupported : it->second.first;
        metric.value = it == metrics.end() ? -1 : it->second.second;
      }
      return metrics_get_return;
    };
    a.now = [this] {
      double s = clock.empty() ? 0 : clock.front();
      if (!clock.empty()) clock.erase(clock.begin());
      return std::chrono::steady_clock::time_point(
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
              std::chrono::duration<double>(s)));
    };
    return a;
  }
};

// ---------------------------------------------------------------------------
// Opening

TEST(GpmWitness, NoLibraryGivesAReason) {
  std::string why;
  EXPECT_FALSE(LoadGpmApi("libptxbench-no-such-nvml.so.1", &why).has_value());
  EXPECT_TRUE(Contains(why, "cannot load libptxbench-no-such-nvml.so.1")) << why;
  EXPECT_FALSE(LoadGpmApi("libptxbench-no-such-nvml.so.1", nullptr).has_value());
}

TEST(GpmWitness, LibraryWithoutNvmlNamesTheMissingFunctions) {
  // libm loads everywhere and has none of NVML.
  std::string why;
  EXPECT_FALSE(LoadGpmApi("libm.so.6", &why).has_value());
  EXPECT_TRUE(Contains(why, "libm.so.6 lacks nvmlInit_v2")) << why;
  EXPECT_TRUE(Contains(why, "nvmlGpmMetricsGet")) << why;
}

TEST(GpmWitness, RealOpenOfAMissingDeviceGivesAReason) {
  // No machine has a GPU at this bus id, and CI has no NVML at all: either way
  // no witness, and a reason.
  std::string why;
  EXPECT_EQ(GpmWitness::Open("ffff:ff:1f.7", &why), nullptr);
  EXPECT_TRUE(Contains(why, "NVML GPM unavailable")) << why;
  EXPECT_EQ(GpmWitness::Open("ffff:ff:1f.7", nullptr), nullptr);
}

TEST(GpmWitness, DeviceWithoutGpmSupportGivesNullAndShutsDown) {
  FakeNvml fake;
  fake.supported = 0;
  const std::string why = WhyOpenFails(fake.Api(), "0000:41:00.0");
  EXPECT_TRUE(Contains(why, "device 0000:41:00.0 does not support GPM")) << why;
  EXPECT_EQ(fake.pci_asked, "0000:41:00.0");
  EXPECT_EQ(fake.support_version_seen, gpm_abi::kSupportVersion);
  EXPECT_EQ(fake.init_calls, 1);
  EXPECT_EQ(fake.shutdown_calls, 1);
  EXPECT_EQ(fake.allocated, 0);
}

TEST(GpmWitness, SupportQueryFailingGivesItsError) {
  FakeNvml fake;
  fake.support_return = gpm_abi::kNotSupported;
  const std::string why = WhyOpenFails(fake.Api());
  EXPECT_TRUE(Contains(why, "nvmlGpmQueryDeviceSupport: Not Supported (3)")) << why;
  EXPECT_EQ(fake.index_asked, 0);  // no bus id: device 0
  EXPECT_EQ(fake.shutdown_calls, 1);
}

TEST(GpmWitness, MissingFunctionInitFailureAndNoDevice) {
  {
    FakeNvml fake;
    GpmApi api = fake.Api();
    api.sample_get = nullptr;
    const std::string why = WhyOpenFails(api);
    EXPECT_TRUE(Contains(why, "nvmlGpmSampleGet")) << why;
    EXPECT_EQ(fake.init_calls, 0);
  }
  {
    FakeNvml fake;
    fake.init_return = 15;
    const std::string why = WhyOpenFails(fake.Api());
    EXPECT_TRUE(Contains(why, "nvmlInit_v2: GPU is lost (15)")) << why;
    EXPECT_EQ(fake.shutdown_calls, 0);  // nothing to shut down
  }
  {
    FakeNvml fake;
    fake.device_return = 6;  // NVML_ERROR_NOT_FOUND; the fake has no text for it
    const std::string why = WhyOpenFails(fake.Api(), "0000:99:00.0");
    EXPECT_TRUE(Contains(why, "no device with PCI bus id \"0000:99:00.0\"")) << why;
    EXPECT_TRUE(Contains(why, "NVML error (6)")) << why;
    EXPECT_EQ(fake.shutdown_calls, 1);
  }
  {
    FakeNvml fake;
    fake.alloc_return = 2;
    const std::string why = WhyOpenFails(fake.Api());
    EXPECT_TRUE(Contains(why, "nvmlGpmSampleAlloc")) << why;
    EXPECT_EQ(fake.freed, 0);
    EXPECT_EQ(fake.shutdown_calls, 1);
  }
}

// ---------------------------------------------------------------------------
// A window

TEST(GpmWitness, MetricsBecomeTheWindowAndItsBusySeconds) {
  FakeNvml fake;
  // Begin's call spans 1.000-1.002 s, End's 1.250-1.252 s: 0.25 s between middles.
  fake.clock = {1.000, 1.002, 1.250, 1.252};
  fake.metrics = {
      {gpm_abi::kSmUtil, {gpm_abi::kSuccess, 80}},
      {gpm_abi::kSmOccupancy, {gpm_abi::kSuccess, 40}},
      {gpm_abi::kAnyTensorUtil, {gpm_abi::kSuccess, 60}},
      {gpm_abi::kHmmaTensorUtil, {gpm_abi::kSuccess, 58}},
      {gpm_abi::kGraphicsUtil, {gpm_abi::kSuccess, 99}},
      {gpm_abi::kDramBwUtil, {gpm_abi::kSuccess, 12.5}},
      // kFp32Util absent: the fake answers Not Supported for it.
  };
  std::string why = "stale";
  std::unique_ptr<GpmWitness> w = GpmWitness::OpenWith(fake.Api(), "0000:41:00.0", &why);
  ASSERT_NE(w, nullptr) << why;
  EXPECT_EQ(why, "");
  EXPECT_EQ(fake.allocated, 2);

  ASSERT_TRUE(w->Begin(&why)) << why;
  WitnessWindow win = w->End();
  EXPECT_EQ(win.error, "");
  EXPECT_NEAR(win.seconds, 0.25, 1e-9);
  EXPECT_DOUBLE_EQ(win.sm_util_pct, 80);
  EXPECT_DOUBLE_EQ(win.sm_occupancy_pct, 40);
  EXPECT_DOUBLE_EQ(win.any_tensor_util_pct, 60);
  EXPECT_DOUBLE_EQ(win.hmma_tensor_util_pct, 58);
  EXPECT_DOUBLE_EQ(win.graphics_util_pct, 99);
  EXPECT_DOUBLE_EQ(win.dram_bw_util_pct, 12.5);
  EXPECT_TRUE(std::isnan(win.fp32_util_pct));
  EXPECT_EQ(win.metric_errors, std::vector<std::string>{"fp32_util_pct: Not Supported (3)"});
  // 0.25 s between the calls spans two whole refreshes of the counters for sure (a third
  // only maybe): the rates are over 0.2 s.
  EXPECT_NEAR(win.counter_seconds, 0.2, 1e-9);
  EXPECT_NEAR(win.sm_busy_seconds(), 0.16, 1e-9);
  EXPECT_NEAR(win.tensor_busy_seconds(), 0.12, 1e-9);

  // The request: version, count, the metric ids, and the samples in order.
  ASSERT_EQ(fake.sampled.size(), 2u);
  EXPECT_NE(fake.sampled[0], fake.sampled[1]);
  EXPECT_EQ(fake.request_seen.version, gpm_abi::kMetricsGetVersion);
  EXPECT_EQ(fake.request_seen.num_metrics, 7u);
  EXPECT_EQ(fake.request_seen.sample1, fake.sampled[0]);
  EXPECT_EQ(fake.request_seen.sample2, fake.sampled[1]);
  EXPECT_EQ(fake.ids_seen, (std::vector<unsigned>{2, 3, 5, 7, 1, 10, 12}));

  nlohmann::json j = win.ToJson();
  EXPECT_NEAR(j["seconds"].get<double>(), 0.25, 1e-9);
  EXPECT_EQ(j["sm_util_pct"], 80.0);
  EXPECT_EQ(j["dram_bw_util_pct"], 12.5);
  EXPECT_TRUE(j["fp32_util_pct"].is_null());
  EXPECT_NEAR(j["counter_seconds"].get<double>(), 0.2, 1e-9);
  EXPECT_NEAR(j["sm_busy_seconds"].get<double>(), 0.16, 1e-9);
  EXPECT_NEAR(j["tensor_busy_seconds"].get<double>(), 0.12, 1e-9);
  EXPECT_EQ(j["metric_errors"].size(), 1u);
  EXPECT_FALSE(j.contains("error"));

  w.reset();
  EXPECT_EQ(fake.freed, 2);
  EXPECT_EQ(fake.shutdown_calls, 1);
}

TEST(GpmWitness, FailedSamplesAndMetricsMakeAnUnavailableWindow) {
  FakeNvml fake;
  fake.sample_get_returns = {15};  // the first sample fails, later ones succeed
  fake.metrics_get_return = gpm_abi::kNotSupported;
  fake.metrics = {{gpm_abi::kSmUtil, {gpm_abi::kSuccess, 50}}};
  std::unique_ptr<GpmWitness> w = GpmWitness::OpenWith(fake.Api(), "", nullptr);
  ASSERT_NE(w, nullptr);

  WitnessWindow never = w->End();
  EXPECT_TRUE(Contains(never.error, "without a successful Begin()")) << never.error;

  std::string why;
  EXPECT_FALSE(w->Begin(&why));
  EXPECT_EQ(why, "nvmlGpmSampleGet (begin): GPU is lost (15)");
  EXPECT_TRUE(Contains(w->End().error, "without a successful Begin()"));

  ASSERT_TRUE(w->Begin(&why)) << why;
  WitnessWindow no_metrics = w->End();  // both samples taken; the metrics call fails
  EXPECT_EQ(no_metrics.error, "nvmlGpmMetricsGet: Not Supported (3)");
  EXPECT_TRUE(std::isnan(no_metrics.sm_util_pct));
  EXPECT_TRUE(std::isnan(no_metrics.sm_busy_seconds()));
  EXPECT_TRUE(no_metrics.ToJson()["sm_util_pct"].is_null());
  EXPECT_EQ(no_metrics.ToJson()["error"], "nvmlGpmMetricsGet: Not Supported (3)");
}

// The parent waits for a window that ends a guard after a whole number of the counters'
// refreshes, and the rates are read over those whole refreshes.
TEST(GpmWitness, WindowsEndJustAfterWholeRefreshes) {
  FakeNvml fake;
  // Begin's call 1.000-1.002 (its moment 1.001); asked at 1.311 and 1.734; End 1.520-1.522.
  fake.clock = {1.000, 1.002, 1.311, 1.734, 1.520, 1.522};
  fake.metrics = {{gpm_abi::kSmUtil, {gpm_abi::kSuccess, 10}}};
  std::unique_ptr<GpmWitness> w = GpmWitness::OpenWith(fake.Api(), "", nullptr);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->SecondsToAlignedEnd(0.45), 0.0);  // no window open
  ASSERT_TRUE(w->Begin(nullptr));
  // 0.31 s open, at least 0.45 wanted: 5 refreshes (0.5 s) and the guard, 0.21 s from now.
  EXPECT_NEAR(w->SecondsToAlignedEnd(0.45), 0.5 + kGpmRefreshGuardSeconds - 0.31, 1e-9);
  // Already 0.733 s open: the next whole refresh after that, 0.8 s, and the guard.
  EXPECT_NEAR(w->SecondsToAlignedEnd(0.45), 0.8 + kGpmRefreshGuardSeconds - 0.733, 1e-9);
  WitnessWindow win = w->End();
  EXPECT_NEAR(win.seconds, 0.52, 1e-9);
  EXPECT_NEAR(win.counter_seconds, 0.5, 1e-9);
  EXPECT_NEAR(win.sm_busy_seconds(), 0.05, 1e-9);
}

// The parent's delay before a window covers one refresh cycle evenly, from its own draws: a
// child timing its readiness cannot place the window's start in the cycle.
TEST(GpmWitness, TheWindowsPhaseIsTheParentsDraw) {
  EXPECT_EQ(RefreshPhaseDelaySeconds(0), 0.0);
  EXPECT_LT(RefreshPhaseDelaySeconds(~uint64_t{0}), kGpmRefreshSeconds);
  EXPECT_NEAR(RefreshPhaseDelaySeconds(uint64_t{1} << 63), kGpmRefreshSeconds / 2, 1e-12);
  std::mt19937_64 rng(7);
  int tenths[10] = {};
  for (int i = 0; i < 10000; ++i)
    ++tenths[static_cast<int>(RefreshPhaseDelaySeconds(rng()) / kGpmRefreshSeconds * 10)];
  for (int t : tenths) EXPECT_NEAR(t, 1000, 150);  // every tenth of the cycle, about as often
}

TEST(GpmWitness, FailedEndSampleIsAnError) {
  FakeNvml fake;
  fake.sample_get_returns = {gpm_abi::kSuccess, 15};
  std::unique_ptr<GpmWitness> w = GpmWitness::OpenWith(fake.Api(), "", nullptr);
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->Begin(nullptr));
  WitnessWindow win = w->End();
  EXPECT_EQ(win.error, "nvmlGpmSampleGet (end): GPU is lost (15)");
  EXPECT_TRUE(std::isnan(win.seconds));
}

// ---------------------------------------------------------------------------
// Judging

// A window of `seconds` with the SM and tensor utilizations given.
WitnessWindow Window(double seconds, double sm_pct, double tensor_pct) {
  WitnessWindow w;
  w.seconds = w.counter_seconds = seconds;
  w.sm_util_pct = sm_pct;
  w.any_tensor_util_pct = tensor_pct;
  w.hmma_tensor_util_pct = tensor_pct;
  return w;
}

// 200 calls of a 1 TFLOP task on tensor cores with a 1 PFLOP/s peak: 0.2 s of
// tensor-pipe time if every FLOP ran there.
WitnessExpectation TensorTask(double median) {
  WitnessExpectation e;
  e.calls = 200;
  e.timed_median_seconds = median;
  e.flops_per_call = 1e12;
  e.tensor_peak_flops_per_second = 1e15;
  e.tensor_task = true;
  return e;
}

TEST(JudgeWitness, HonestTensorKernelAgrees) {
  // 0.25 s window, SM 96 % -> 0.24 s busy = 1.2 ms per call; tensor 76 % ->
  // 0.19 s = 0.95 of the 0.2 s expected.
  WitnessJudgement j = JudgeWitness(Window(0.25, 96, 76), TensorTask(1.25e-3), 0.1);
  EXPECT_EQ(j.state, "agrees");
  EXPECT_TRUE(j.timing_ok);
  EXPECT_TRUE(j.tensor_ok);
  EXPECT_NEAR(j.per_call_busy_seconds, 1.2e-3, 1e-12);
  EXPECT_NEAR(j.tensor_work_fraction_seen, 0.95, 1e-9);
  EXPECT_EQ(j.message,
            "agrees: GPU busy 1.2 ms per call (SM 96% over 250 ms of counter refreshes in a 250 ms "
            "window, 200 calls), timed "
            "median 1.25 ms; tensor pipe 76% of the window = 0.95 of the task's FLOPs at peak");

  nlohmann::json js = j.ToJson();
  EXPECT_EQ(js["state"], "agrees");
  EXPECT_EQ(js["timing_ok"], true);
  EXPECT_EQ(js["tensor_ok"], true);
  EXPECT_NEAR(js["per_call_busy_seconds"].get<double>(), 1.2e-3, 1e-12);
  EXPECT_NEAR(js["tensor_work_fraction_seen"].get<double>(), 0.95, 1e-9);
  EXPECT_EQ(js["message"], j.message);
}

TEST(JudgeWitness, ForgedTimingDisagrees) {
  // Same GPU activity; the candidate reports a median 30x below it.
  WitnessJudgement j = JudgeWitness(Window(0.25, 96, 76), TensorTask(1.2e-3 / 30), 0.1);
  EXPECT_EQ(j.state, "timing_disagrees");
  EXPECT_FALSE(j.timing_ok);
  EXPECT_TRUE(j.tensor_ok);
  EXPECT_TRUE(Contains(j.message, "timed median is 30x below the GPU's busy time per call"))
      << j.message;
  EXPECT_TRUE(Contains(j.message, "timed median 40 us")) << j.message;
}

TEST(JudgeWitness, TimingFactorIsTheBoundary) {
  // 1 s at SM 50 % over 64 calls = 7.8125 ms per call, exactly; with factor 2
  // a median of 3.90625 ms is just enough, anything below is not.
  WitnessExpectation e;
  e.calls = 64;
  e.timing_factor = 2;
  e.timed_median_seconds = 3.90625e-3;
  WitnessWindow w = Window(1.0, 50, 0);
  EXPECT_EQ(JudgeWitness(w, e, 0.1).state, "agrees");
  e.timed_median_seconds = std::nextafter(3.90625e-3, 0.0);
  EXPECT_EQ(JudgeWitness(w, e, 0.1).state, "timing_disagrees");
  // The default factor, 1.2: a median at 0.84 of the busy time passes; one at 1/1.3 of it
  // (a kernel forging 1.3x its own speed) does not.
  e.timing_factor = WitnessExpectation::kDefaultTimingFactor;
  e.timed_median_seconds = 7.8125e-3 * 0.84;
  EXPECT_TRUE(JudgeWitness(w, e, 0.1).timing_ok);
  e.timed_median_seconds = 7.8125e-3 / 1.3;
  EXPECT_FALSE(JudgeWitness(w, e, 0.1).timing_ok);
  // A median far above the busy time (a kernel on few SMs) is not flagged.
  e.timed_median_seconds = 1.0;
  EXPECT_TRUE(JudgeWitness(w, e, 0.1).timing_ok);
}

TEST(JudgeWitness, CudaCoreKernelOnATensorTaskShowsNoTensorActivity) {
  // Busy as an honest kernel would be, on CUDA cores: the tensor pipe barely moves.
  WitnessJudgement j = JudgeWitness(Window(0.5, 97, 0.4), TensorTask(2.4e-3), 0.1);
  EXPECT_EQ(j.state, "no_tensor_activity");
  EXPECT_TRUE(j.timing_ok);
  EXPECT_FALSE(j.tensor_ok);
  EXPECT_NEAR(j.tensor_work_fraction_seen, 0.004 * 0.5 / 0.2, 1e-12);
  EXPECT_TRUE(Contains(j.message, "tensor pipe 0% of the window = 0.01 of the task's FLOPs"))
      << j.message;
}

TEST(JudgeWitness, TensorFactorScalesTheFractionSeen) {
  // 0.4 of the expected tensor time: short of 0.5 alone, enough with factor 1.5.
  WitnessExpectation e = TensorTask(1.25e-3);
  WitnessWindow w = Window(0.25, 96, 32);  // 0.08 s of 0.2 s
  EXPECT_NEAR(JudgeWitness(w, e, 0.1).tensor_work_fraction_seen, 0.4, 1e-12);
  EXPECT_EQ(JudgeWitness(w, e, 0.1).state, "no_tensor_activity");
  e.tensor_factor = 1.5;
  EXPECT_EQ(JudgeWitness(w, e, 0.1).state, "agrees");
}

TEST(JudgeWitness, ForgedTimingOnCudaCoresReportsTimingAndNamesBoth) {
  WitnessJudgement j = JudgeWitness(Window(0.5, 97, 0.4), TensorTask(1e-5), 0.1);
  EXPECT_EQ(j.state, "timing_disagrees");
  EXPECT_FALSE(j.timing_ok);
  EXPECT_FALSE(j.tensor_ok);
  EXPECT_TRUE(Contains(j.message, "tensor pipes did too little")) << j.message;
}

TEST(JudgeWitness, NonTensorTaskIgnoresTheTensorPipe) {
  WitnessExpectation e;
  e.calls = 100;
  e.timed_median_seconds = 2e-3;
  WitnessJudgement j = JudgeWitness(Window(0.25, 70, 0), e, 0.1);
  EXPECT_EQ(j.state, "agrees");
  EXPECT_TRUE(j.tensor_ok);
  EXPECT_TRUE(std::isnan(j.tensor_work_fraction_seen));
  EXPECT_TRUE(Contains(j.message, "not a tensor task (tensor pipe 0% of the window)")) << j.message;
  EXPECT_TRUE(j.ToJson()["tensor_work_fraction_seen"].is_null());
}

TEST(JudgeWitness, ShortWindowIsNotJudged) {
  // A 4 ms window of zeros, as GPM gives for windows that short.
  WitnessJudgement j = JudgeWitness(Window(0.004, 0, 0), TensorTask(1e-5), 0.1);
  EXPECT_EQ(j.state, "window_too_short");
  EXPECT_FALSE(j.timing_ok);
  EXPECT_FALSE(j.tensor_ok);
  EXPECT_TRUE(Contains(j.message, "4 ms is shorter than the 100 ms needed")) << j.message;
  // The same window is judged once the minimum allows it.
  EXPECT_EQ(JudgeWitness(Window(0.004, 0, 0), TensorTask(1e-5), 0.001).state, "no_tensor_activity");
}

// The headline GEMM on an H100 (docs/gpu-runs/2026-12-07-h100-issue36-37-lock.md): 50 calls
// of a 1.18 ms median in a 451 ms window read SM 12.1 % or 15.9 %, as the counters' refreshes
// fell (4 or 5 of them). Read over the host's 451 ms, the second was 1.21x the median, a false
// alarm; over the 4 refreshes the window is sure to span, both agree.
TEST(JudgeWitness, TheHeadlineAgreesWhereverTheRefreshesFell) {
  WitnessExpectation e;
  e.calls = 50;
  e.timed_median_seconds = 1.18e-3;
  for (double sm_pct : {12.09, 15.86}) {
    WitnessWindow w = Window(0.4506, sm_pct, 7);
    w.counter_seconds = 0.4;  // what End() takes for 0.4506 s
    WitnessJudgement j = JudgeWitness(w, e, 0.4);
    EXPECT_EQ(j.state, "agrees") << sm_pct << ": " << j.message;
    EXPECT_LT(j.per_call_busy_seconds / e.timed_median_seconds, 1.1) << sm_pct;
    w.counter_seconds = w.seconds;  // the old reading
    if (sm_pct > 15) EXPECT_EQ(JudgeWitness(w, e, 0.4).state, "timing_disagrees");
  }
}

TEST(JudgeWitness, UnavailableWindowIsNotJudged) {
  WitnessWindow w;
  w.error = "nvmlGpmSampleGet (end): GPU is lost (15)";
  WitnessJudgement j = JudgeWitness(w, TensorTask(1.25e-3), 0.1);
  EXPECT_EQ(j.state, "unavailable");
  EXPECT_FALSE(j.timing_ok);
  EXPECT_FALSE(j.tensor_ok);
  EXPECT_EQ(j.message, "GPM witness unavailable: nvmlGpmSampleGet (end): GPU is lost (15)");
  EXPECT_TRUE(j.ToJson()["per_call_busy_seconds"].is_null());

  // SM utilization not read: nothing to judge the timing by.
  WitnessWindow no_sm = Window(0.25, WitnessWindow::kNone, 76);
  no_sm.metric_errors = {"sm_util_pct: Not Supported (3)"};
  j = JudgeWitness(no_sm, TensorTask(1.25e-3), 0.1);
  EXPECT_EQ(j.state, "unavailable");
  EXPECT_TRUE(Contains(j.message, "(sm_util_pct: Not Supported (3))")) << j.message;

  // A window that spans no whole refresh of the counters has no interval for its rates.
  WitnessWindow no_step = Window(0.25, 96, 76);
  no_step.counter_seconds = WitnessWindow::kNone;
  j = JudgeWitness(no_step, TensorTask(1.25e-3), 0.1);
  EXPECT_EQ(j.state, "unavailable");
  EXPECT_TRUE(Contains(j.message, "spans no whole refresh")) << j.message;

  // A tensor task whose window lacks the tensor utilization.
  j = JudgeWitness(Window(0.25, 96, WitnessWindow::kNone), TensorTask(1.25e-3), 0.1);
  EXPECT_EQ(j.state, "unavailable");
  EXPECT_TRUE(Contains(j.message, "tensor utilization not read")) << j.message;

  // Expectations that cannot be judged against.
  WitnessExpectation no_calls = TensorTask(1.25e-3);
  no_calls.calls = 0;
  EXPECT_EQ(JudgeWitness(Window(0.25, 96, 76), no_calls, 0.1).state, "unavailable");
  WitnessExpectation no_peak = TensorTask(1.25e-3);
  no_peak.tensor_peak_flops_per_second = 0;
  EXPECT_EQ(JudgeWitness(Window(0.25, 96, 76), no_peak, 0.1).state, "unavailable");
}

// ---------------------------------------------------------------------------
// Probe

TEST(ProbeGpm, SaysAvailableOrWhyNot) {
  FakeNvml ok;
  nlohmann::json j = ProbeGpmWith(ok.Api(), "0000:41:00.0");
  EXPECT_EQ(j["state"], "available");
  EXPECT_EQ(j["reason"], "NVML GPM supported on device 0000:41:00.0");
  EXPECT_EQ(ok.freed, 2);  // the probe closes what it opened
  EXPECT_EQ(ok.shutdown_calls, 1);

  FakeNvml unsupported;
  unsupported.supported = 0;
  j = ProbeGpmWith(unsupported.Api(), "");
  EXPECT_EQ(j["state"], "unavailable");
  EXPECT_TRUE(Contains(j["reason"].get<std::string>(), "device 0 does not support GPM"));

  j = ProbeGpm("ffff:ff:1f.7");  // no such device anywhere, or no NVML here
  EXPECT_EQ(j["state"], "unavailable");
  EXPECT_TRUE(Contains(j["reason"].get<std::string>(), "NVML GPM unavailable"));
}

// The one NVML binding: a library that cannot be loaded says so, and each user names exactly
// the functions it needs and lacks (the clocks' and GPM's differ).
TEST(NvmlApi, EachUserNamesTheFunctionsItLacks) {
  std::string why;
  EXPECT_FALSE(LoadNvmlApi("libptxbench-no-such-nvml.so.1", &why));
  EXPECT_EQ(why.rfind("cannot load libptxbench-no-such-nvml.so.1: ", 0), 0u) << why;

  NvmlApi none;
  EXPECT_EQ(MissingNvmlSymbols(none, NvmlUse::kClocks),
            "nvmlInit_v2, nvmlShutdown, nvmlErrorString, nvmlDeviceGetHandleByPciBusId_v2, "
            "nvmlDeviceGetClockInfo, nvmlDeviceGetTemperature, nvmlDeviceGetPowerUsage, "
            "nvmlDeviceGetCurrentClocksEventReasons");
  EXPECT_EQ(MissingNvmlSymbols(none, NvmlUse::kGpm),
            "nvmlInit_v2, nvmlShutdown, nvmlErrorString, nvmlDeviceGetHandleByPciBusId_v2, "
            "nvmlDeviceGetHandleByIndex_v2, nvmlGpmQueryDeviceSupport, nvmlGpmSampleAlloc, "
            "nvmlGpmSampleFree, nvmlGpmSampleGet, nvmlGpmMetricsGet");
  // GPM's fake table has everything GPM needs and none of the clocks' calls.
  FakeNvml fake;
  EXPECT_EQ(MissingNvmlSymbols(fake.Api(), NvmlUse::kGpm), "");
  EXPECT_NE(MissingNvmlSymbols(fake.Api(), NvmlUse::kClocks).find("nvmlDeviceGetClockInfo"),
            std::string::npos);
}

}  // namespace
}  // namespace ptxbench
