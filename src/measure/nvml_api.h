// The one binding of NVML (libnvidia-ml), loaded at run time with dlopen so that nothing needs
// the driver to build: its C ABI as far as ptxbench uses it, and a table of its functions that
// the clocks beside a timing (nvml_clocks.h) and the GPM witness (gpm.h) call through, and that
// tests fill with fakes.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace ptxbench {

// The pieces of NVML's C ABI used here, declared by hand because nvml.h is
// not installed on every build machine. Values and layouts are those of nvml.h
// (NVML API 13, nvidia-nvml-dev 13.5.37); nvml_api.cc checks them against nvml.h
// wherever a build machine has it. They are in a header so that a fake in a test
// can fill the structs as NVML would.
namespace nvml_abi {
using Return = int;                         // nvmlReturn_t, a C enum
using Device = struct nvmlDevice_st*;       // nvmlDevice_t
using Sample = struct nvmlGpmSample_st*;    // nvmlGpmSample_t
inline constexpr Return kSuccess = 0;       // NVML_SUCCESS
inline constexpr Return kNotSupported = 3;  // NVML_ERROR_NOT_SUPPORTED
inline constexpr char kLibrary[] = "libnvidia-ml.so.1";

// nvmlClockType_t and nvmlTemperatureSensors_t values used here (enums, passed as int, which is
// how C passes an enum on the platforms ptxbench supports). Clocks are in MHz, temperatures in
// degrees C, nvmlDeviceGetPowerUsage in milliwatts.
inline constexpr int kClockSm = 1;         // NVML_CLOCK_SM
inline constexpr int kClockMem = 2;        // NVML_CLOCK_MEM
inline constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU

// nvmlGpmMetricId_t values used here (an unscoped enum: they pass as the unsigned NVML reads).
enum GpmMetricId : unsigned {
  kGraphicsUtil = 1,    // NVML_GPM_METRIC_GRAPHICS_UTIL
  kSmUtil = 2,          // NVML_GPM_METRIC_SM_UTIL
  kSmOccupancy = 3,     // NVML_GPM_METRIC_SM_OCCUPANCY
  kAnyTensorUtil = 5,   // NVML_GPM_METRIC_ANY_TENSOR_UTIL
  kHmmaTensorUtil = 7,  // NVML_GPM_METRIC_HMMA_TENSOR_UTIL
  kDramBwUtil = 10,     // NVML_GPM_METRIC_DRAM_BW_UTIL
  kFp32Util = 12,       // NVML_GPM_METRIC_FP32_UTIL
};

inline constexpr unsigned kSupportVersion = 1;     // NVML_GPM_SUPPORT_VERSION
inline constexpr unsigned kMetricsGetVersion = 1;  // NVML_GPM_METRICS_GET_VERSION

// nvmlGpmSupport_t
struct Support {
  unsigned int version;
  unsigned int is_supported_device;
};

// nvmlGpmMetric_t
struct Metric {
  unsigned int metric_id;  // in
  Return nvml_return;      // out: the value is valid only when this is kSuccess
  double value;            // out
  struct {
    char* short_name;
    char* long_name;
    char* unit;
  } metric_info;  // out, may be null
};

// nvmlGpmMetricsGet_t. nvml.h sizes `metrics` by NVML_GPM_METRIC_MAX, which
// grows from release to release (98 in early CUDA 12 headers, 477 in API 13);
// the struct's version does not change with it and NVML reads `num_metrics`
// entries. A larger array than any driver's is therefore safe with all of them.
inline constexpr unsigned kMetricSlots = 1024;
struct MetricsGet {
  unsigned int version;      // in: kMetricsGetVersion
  unsigned int num_metrics;  // in
  Sample sample1;            // in: the earlier sample
  Sample sample2;            // in: the later sample
  Metric metrics[kMetricSlots];
};
}  // namespace nvml_abi

// The NVML functions ptxbench calls: the one binding of the library, for the clocks beside a
// timing (nvml_clocks.h) and the GPM witness (gpm.h). LoadNvmlApi fills it from the library;
// a test fills it with fakes. An empty function is a symbol the library lacks.
struct NvmlApi {
  std::function<nvml_abi::Return()> init;                     // nvmlInit_v2
  std::function<nvml_abi::Return()> shutdown;                 // nvmlShutdown
  std::function<const char*(nvml_abi::Return)> error_string;  // nvmlErrorString
  std::function<nvml_abi::Return(const char*, nvml_abi::Device*)>
      handle_by_pci_bus_id;  // nvmlDeviceGetHandleByPciBusId_v2
  std::function<nvml_abi::Return(unsigned int, nvml_abi::Device*)>
      handle_by_index;  // nvmlDeviceGetHandleByIndex_v2

  // The clocks.
  std::function<nvml_abi::Return(nvml_abi::Device, int, unsigned int*)>
      clock_info;  // nvmlDeviceGetClockInfo
  // nvmlDeviceGetCurrentClocksEventReasons, or on drivers older than its introduction the same
  // call under its former name ...ClocksThrottleReasons; the name bound is in clock_reasons_name.
  std::function<nvml_abi::Return(nvml_abi::Device, unsigned long long*)> clock_reasons;
  std::string clock_reasons_name;
  std::function<nvml_abi::Return(nvml_abi::Device, int, unsigned int*)>
      temperature;  // nvmlDeviceGetTemperature
  std::function<nvml_abi::Return(nvml_abi::Device, unsigned int*)>
      power_usage;  // nvmlDeviceGetPowerUsage

  // GPM.
  std::function<nvml_abi::Return(nvml_abi::Device, nvml_abi::Support*)>
      query_device_support;                                         // nvmlGpmQueryDeviceSupport
  std::function<nvml_abi::Return(nvml_abi::Sample*)> sample_alloc;  // nvmlGpmSampleAlloc
  std::function<nvml_abi::Return(nvml_abi::Sample)> sample_free;    // nvmlGpmSampleFree
  std::function<nvml_abi::Return(nvml_abi::Device, nvml_abi::Sample)>
      sample_get;                                                      // nvmlGpmSampleGet
  std::function<nvml_abi::Return(nvml_abi::MetricsGet*)> metrics_get;  // nvmlGpmMetricsGet
  // Not NVML: the clock that times a GPM window; empty means steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> now;
};

// What a user of the binding needs of it.
enum class NvmlUse {
  kClocks,  // init, shutdown, errors, a device by bus id, clocks, reasons, temperature, power
  kGpm,     // init, shutdown, errors, a device by bus id or index, the nvmlGpm* calls
};

// The functions `library` has, bound (any may be empty), or nullopt with *why set ("cannot load
// <library>: <dlerror>") when it cannot be loaded. The library is never unloaded: NVML may
// leave threads behind after nvmlShutdown, and unloading saves nothing in a short-lived child.
std::optional<NvmlApi> LoadNvmlApi(const std::string& library, std::string* why);

// The symbols `use` needs that `api` lacks, comma-separated; "" when it has them all.
std::string MissingNvmlSymbols(const NvmlApi& api, NvmlUse use);

}  // namespace ptxbench
