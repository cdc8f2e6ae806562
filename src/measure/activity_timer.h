// GPU time from CUPTI activity records (child processes only): every kernel, copy and set,
// on any stream, with its start and end on the GPU's clock. The time of a call is the span
// from the first start to the last end of the activity that began inside its window, so
// work a candidate hides on another stream still counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ptxbench {

struct ActivitySpan {
  enum class Kind { kKernel, kMemcpy, kMemset } kind;
  uint64_t start = 0, end = 0;  // nanoseconds, CUPTI clock
  uint32_t stream = 0;
  uint32_t correlation = 0;
  std::string name;  // kernel name (mangled); "memcpy" / "memset"
};

class ActivityTimer {
 public:
  // Enables the activity kinds. Create it before the first CUDA call of the process, so
  // that CUPTI attaches before the context exists. Throws std::runtime_error on a CUPTI error.
  ActivityTimer();
  ~ActivityTimer();
  ActivityTimer(const ActivityTimer&) = delete;
  ActivityTimer& operator=(const ActivityTimer&) = delete;

  // The CUPTI clock now, for window bounds.
  uint64_t Now() const;
  // Flushes the buffers and returns (and forgets) every record that started in
  // [begin, end]; older or newer records are dropped or kept for the next call respectively.
  std::vector<ActivitySpan> Collect(uint64_t begin, uint64_t end);
  // Flushes the buffers and returns (and forgets) every record so far, sorted by start.
  std::vector<ActivitySpan> CollectAll();
  // CUPTI's id of a stream, as activity records name it. `stream` is a cudaStream_t.
  uint32_t StreamId(void* stream) const;
};

// First start to last end, in seconds; 0 for no spans.
double SpanSeconds(const std::vector<ActivitySpan>& spans);

}  // namespace ptxbench
