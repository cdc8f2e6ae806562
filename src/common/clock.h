// Wall time for stage and turn timings: the steady clock, never the calendar (it can jump).
#pragma once

#include <chrono>

namespace ptxbench {

using SteadyClock = std::chrono::steady_clock;

inline double SecondsSince(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

}  // namespace ptxbench
