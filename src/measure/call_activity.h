// Which GPU activity belongs to which call. The child records every kernel, copy and set
// with CUPTI; this module decides, from the records and the call's window alone, what the
// call cost and whether its work stayed inside the rules (docs/design.md sections 5 and 6).
// Pure functions of recorded data, so CI tests them without a GPU.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/activity_timer.h"

namespace ptxbench {

// One call: `begin` is taken just before run() is entered, `end` just after the
// synchronization of the candidate's stream returned (CUPTI clock, nanoseconds).
struct CallWindow {
  uint64_t begin = 0, end = 0;
};

// How to recognise the harness's own work between calls: by its origin, the stream the
// harness made for it, not by a name (a candidate's kernel may carry any name).
struct HarnessMarks {
  uint32_t harness_stream = 0;
  uint32_t candidate_stream = 0;
  // Work on another stream may end this long after `end` without counting as outliving the
  // call: the CUPTI clock and the host's view of "synchronize returned" differ by a few µs.
  uint64_t outlive_slack_ns = 20000;
};

// Name lists stop at this many, so that a candidate launching thousands of kernels stays
// readable in the record.
constexpr size_t kMaxActivityNames = 16;

struct CallActivity {
  uint64_t span_ns = 0;  // first start to last end of the records that started in the window
  size_t records = 0;    // records that started in the window
  // Time within the span when at least one record was running (the union of their
  // intervals). span − busy is the GPU sitting idle inside the call: work done on the host.
  uint64_t busy_ns = 0;
  std::map<std::string, int> kernels;  // in-window kernel names (mangled) and their counts
  // In-window work on other streams that was still running after the stream sync returned:
  // the call's results were not ready when it claimed they were.
  int outlived = 0;
  uint64_t outlived_by_ns = 0;  // the largest overrun
  std::vector<std::string> outlived_names;
  // Records outside the window that are not the harness's: work the candidate started
  // before it was called or after it returned (a host thread, a late launch).
  int stray = 0;
  std::vector<std::string> stray_names;

  nlohmann::json ToJson() const;
};

// Attributes `records` (everything CUPTI delivered since the previous call's collection)
// to the call in `window`.
CallActivity AttributeCall(const std::vector<ActivitySpan>& records, const CallWindow& window,
                           const HarnessMarks& marks);

// Kernel names seen in calls that are not in `allowed` (the candidate cubin's functions),
// or that are in `forbidden` (the vendor baseline's kernels, so that a stub with a copied
// name cannot pass), in first-seen order.
std::vector<std::string> ForeignKernels(const std::map<std::string, int>& seen,
                                        const std::vector<std::string>& allowed,
                                        const std::vector<std::string>& forbidden);

}  // namespace ptxbench
