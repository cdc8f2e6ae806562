// A diagnostic trace of who holds the GPU when (issue 37): with PTXBENCH_GPU_TRACE=FILE set,
// each hold and release of the GPU lock, each child's start and end, and each message a child
// sends are appended to FILE as one JSON line with the wall-clock time and the process id, so
// that several evaluations' traces can be laid side by side (scripts/gpu_trace_report.py).
// Unset, it does nothing. Never read by a verdict.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ptxbench {

bool GpuTraceOn();
// Appends {"t": seconds since the epoch, "pid": this process, "ev": event, ...fields}.
void GpuTrace(const std::string& event, nlohmann::json fields = nlohmann::json::object());

}  // namespace ptxbench
