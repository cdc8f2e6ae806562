#include "measure/gpm_trace.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "common/gpu_trace.h"
#include "measure/gpm.h"

namespace ptxbench {

int GpmTraceMain(int argc, char** argv) {
  const double seconds = argc >= 3 ? std::atof(argv[2]) : 60.0;
  std::string why;
  std::unique_ptr<GpmWitness> gpm = GpmWitness::Open("", &why);
  if (!gpm) {
    std::fprintf(stderr, "no GPM: %s\n", why.c_str());
    return 1;
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (!gpm->Begin(&why)) {
      std::fprintf(stderr, "GPM sample failed: %s\n", why.c_str());
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(gpm->SecondsToAlignedEnd(0.1)));
    WitnessWindow w = gpm->End();
    GpuTrace("gpm", {{"seconds", w.seconds},
                     {"sm", w.sm_util_pct},
                     {"tensor", w.any_tensor_util_pct},
                     {"dram", w.dram_bw_util_pct},
                     {"any_context", w.graphics_util_pct},
                     {"occupancy", w.sm_occupancy_pct}});
  }
  return 0;
}

}  // namespace ptxbench
