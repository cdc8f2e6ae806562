#include "measure/nvml_api.h"

#include <cstddef>
#include <initializer_list>

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

// The functions, their symbols and who needs them: for binding and for naming a missing one.
struct Symbol {
  const char* name;
  std::initializer_list<NvmlUse> needed_by;
  bool (*present)(const NvmlApi&);
  void (*bind)(NvmlApi&, const DynamicLibrary&);
};
constexpr auto kBoth = {NvmlUse::kClocks, NvmlUse::kGpm};
constexpr auto kClocksOnly = {NvmlUse::kClocks};
constexpr auto kGpmOnly = {NvmlUse::kGpm};
#define PTXBENCH_NVML_SYMBOL(field, symbol, users)                                                \
  Symbol {                                                                                        \
    symbol, users, [](const NvmlApi& a) { return static_cast<bool>(a.field); },                   \
        [](NvmlApi& a, const DynamicLibrary& library) { BindFunction(a.field, library, symbol); } \
  }
const Symbol kSymbols[] = {
    PTXBENCH_NVML_SYMBOL(init, "nvmlInit_v2", kBoth),
    PTXBENCH_NVML_SYMBOL(shutdown, "nvmlShutdown", kBoth),
    PTXBENCH_NVML_SYMBOL(error_string, "nvmlErrorString", kBoth),
    PTXBENCH_NVML_SYMBOL(handle_by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2", kBoth),
    PTXBENCH_NVML_SYMBOL(handle_by_index, "nvmlDeviceGetHandleByIndex_v2", kGpmOnly),
    PTXBENCH_NVML_SYMBOL(clock_info, "nvmlDeviceGetClockInfo", kClocksOnly),
    PTXBENCH_NVML_SYMBOL(temperature, "nvmlDeviceGetTemperature", kClocksOnly),
    PTXBENCH_NVML_SYMBOL(power_usage, "nvmlDeviceGetPowerUsage", kClocksOnly),
    PTXBENCH_NVML_SYMBOL(query_device_support, "nvmlGpmQueryDeviceSupport", kGpmOnly),
    PTXBENCH_NVML_SYMBOL(sample_alloc, "nvmlGpmSampleAlloc", kGpmOnly),
    PTXBENCH_NVML_SYMBOL(sample_free, "nvmlGpmSampleFree", kGpmOnly),
    PTXBENCH_NVML_SYMBOL(sample_get, "nvmlGpmSampleGet", kGpmOnly),
    PTXBENCH_NVML_SYMBOL(metrics_get, "nvmlGpmMetricsGet", kGpmOnly),
};
#undef PTXBENCH_NVML_SYMBOL

// The clock reasons' call, under its name since R535 or its former one.
constexpr const char* kClockReasonNames[] = {"nvmlDeviceGetCurrentClocksEventReasons",
                                             "nvmlDeviceGetCurrentClocksThrottleReasons"};

bool Needs(const Symbol& s, NvmlUse use) {
  for (NvmlUse u : s.needed_by)
    if (u == use) return true;
  return false;
}

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
  for (const Symbol& symbol : kSymbols) symbol.bind(api, *lib);
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
  for (const Symbol& s : kSymbols)
    if (Needs(s, use) && !s.present(api)) add(s.name);
  if (use == NvmlUse::kClocks && !api.clock_reasons) add(kClockReasonNames[0]);
  return missing;
}

}  // namespace ptxbench
