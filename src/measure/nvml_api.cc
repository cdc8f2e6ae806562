#include "measure/nvml_api.h"

#include <cstddef>
#include <initializer_list>
#include <span>

#include "common/dynamic_library.h"

// Where a build machine has nvml.h, the hand-written ABI in nvml_api.h must agree
// with it; a mismatch fails the build there instead of misreading counters.
#if __has_include(<nvml.h>)
#include <nvml.h>
#endif

namespace ptxbench {

#ifdef NVML_GPM_METRICS_GET_VERSION
static_assert(NVML_SUCCESS == nvml_abi::kSuccess);
static_assert(NVML_ERROR_NOT_SUPPORTED == nvml_abi::kNotSupported);
static_assert(NVML_CLOCK_SM == nvml_abi::kClockSm && NVML_CLOCK_MEM == nvml_abi::kClockMem);
static_assert(NVML_TEMPERATURE_GPU == nvml_abi::kTemperatureGpu);
static_assert(static_cast<unsigned>(NVML_GPM_METRIC_GRAPHICS_UTIL) == nvml_abi::kGraphicsUtil);
static_assert(static_cast<unsigned>(NVML_GPM_METRIC_SM_UTIL) == nvml_abi::kSmUtil);
static_assert(static_cast<unsigned>(NVML_GPM_METRIC_SM_OCCUPANCY) == nvml_abi::kSmOccupancy);
static_assert(static_cast<unsigned>(NVML_GPM_METRIC_ANY_TENSOR_UTIL) == nvml_abi::kAnyTensorUtil);
static_assert(static_cast<unsigned>(NVML_GPM_METRIC_HMMA_TENSOR_UTIL) == nvml_abi::kHmmaTensorUtil);
static_assert(static_cast<unsigned>(NVML_GPM_METRIC_DRAM_BW_UTIL) == nvml_abi::kDramBwUtil);
static_assert(static_cast<unsigned>(NVML_GPM_METRIC_FP32_UTIL) == nvml_abi::kFp32Util);
static_assert(static_cast<unsigned>(NVML_GPM_METRIC_MAX) <= nvml_abi::kMetricSlots);
static_assert(NVML_GPM_SUPPORT_VERSION == nvml_abi::kSupportVersion);
static_assert(NVML_GPM_METRICS_GET_VERSION == nvml_abi::kMetricsGetVersion);
static_assert(sizeof(nvmlGpmSupport_t) == sizeof(nvml_abi::Support));
static_assert(sizeof(nvmlGpmMetric_t) == sizeof(nvml_abi::Metric));
static_assert(offsetof(nvmlGpmMetric_t, nvmlReturn) == offsetof(nvml_abi::Metric, nvml_return));
static_assert(offsetof(nvmlGpmMetric_t, value) == offsetof(nvml_abi::Metric, value));
static_assert(offsetof(nvmlGpmMetricsGet_t, sample1) == offsetof(nvml_abi::MetricsGet, sample1));
static_assert(offsetof(nvmlGpmMetricsGet_t, sample2) == offsetof(nvml_abi::MetricsGet, sample2));
static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == offsetof(nvml_abi::MetricsGet, metrics));
#endif

namespace {

// `symbol` from `library` into `fn`, as the plain C function pointer it wraps; left empty
// when the library lacks it.
template <typename R, typename... A>
void BindFunction(std::function<R(A...)>& fn, const DynamicLibrary& library, const char* symbol) {
  if (auto* function = library.Find<R(A...)>(symbol)) fn = function;
}

// A function of the table and its symbol: for binding and for naming a missing one.
struct Symbol {
  const char* name;
  bool (*present)(const NvmlApi&);
  void (*bind)(NvmlApi&, const DynamicLibrary&);
};
#define PTXBENCH_NVML_SYMBOL(field, symbol)                                                       \
  Symbol {                                                                                        \
    symbol, [](const NvmlApi& a) { return static_cast<bool>(a.field); },                          \
        [](NvmlApi& a, const DynamicLibrary& library) { BindFunction(a.field, library, symbol); } \
  }
// What every user needs: the library's life and a device.
const Symbol kShared[] = {
    PTXBENCH_NVML_SYMBOL(init, "nvmlInit_v2"),
    PTXBENCH_NVML_SYMBOL(shutdown, "nvmlShutdown"),
    PTXBENCH_NVML_SYMBOL(error_string, "nvmlErrorString"),
    PTXBENCH_NVML_SYMBOL(handle_by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2"),
};
// The clocks' readings (the reasons' call, renamed across releases, is bound apart).
const Symbol kClockCalls[] = {
    PTXBENCH_NVML_SYMBOL(clock_info, "nvmlDeviceGetClockInfo"),
    PTXBENCH_NVML_SYMBOL(temperature, "nvmlDeviceGetTemperature"),
    PTXBENCH_NVML_SYMBOL(power_usage, "nvmlDeviceGetPowerUsage"),
};
// GPM's samples and metrics; it may also open device 0 by index.
const Symbol kGpmCalls[] = {
    PTXBENCH_NVML_SYMBOL(handle_by_index, "nvmlDeviceGetHandleByIndex_v2"),
    PTXBENCH_NVML_SYMBOL(query_device_support, "nvmlGpmQueryDeviceSupport"),
    PTXBENCH_NVML_SYMBOL(sample_alloc, "nvmlGpmSampleAlloc"),
    PTXBENCH_NVML_SYMBOL(sample_free, "nvmlGpmSampleFree"),
    PTXBENCH_NVML_SYMBOL(sample_get, "nvmlGpmSampleGet"),
    PTXBENCH_NVML_SYMBOL(metrics_get, "nvmlGpmMetricsGet"),
};
#undef PTXBENCH_NVML_SYMBOL
using Symbols = std::span<const Symbol>;

// The clock reasons' call, under its name since R535 or its former one.
constexpr const char* kClockReasonNames[] = {"nvmlDeviceGetCurrentClocksEventReasons",
                                             "nvmlDeviceGetCurrentClocksThrottleReasons"};

}  // namespace

std::optional<NvmlApi> LoadNvmlApi(const std::string& library, std::string* why) {
  std::string ignored;
  if (!why) why = &ignored;
  std::string load_error;
  std::optional<DynamicLibrary> lib = DynamicLibrary::Open(library, &load_error);
  if (!lib) {
    *why = "cannot load " + library + ": " + load_error;
    return std::nullopt;
  }
  NvmlApi api;
  for (Symbols group : {Symbols(kShared), Symbols(kClockCalls), Symbols(kGpmCalls)})
    for (const Symbol& symbol : group) symbol.bind(api, *lib);
  for (const char* name : kClockReasonNames) {
    BindFunction(api.clock_reasons, *lib, name);
    if (api.clock_reasons) {
      api.clock_reasons_name = name;
      break;
    }
  }
  why->clear();
  return api;
}

std::string MissingNvmlSymbols(const NvmlApi& api, NvmlUse use) {
  std::string missing;
  auto add = [&missing](const std::string& name) {
    missing += (missing.empty() ? "" : ", ") + name;
  };
  const Symbols own = use == NvmlUse::kClocks ? Symbols(kClockCalls) : Symbols(kGpmCalls);
  for (Symbols group : {Symbols(kShared), own})
    for (const Symbol& s : group)
      if (!s.present(api)) add(s.name);
  if (use == NvmlUse::kClocks && !api.clock_reasons) add(kClockReasonNames[0]);
  return missing;
}

}  // namespace ptxbench
