#include "measure/activity_timer.h"

#include <cupti.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

#include "common/status_check.h"

namespace ptxbench {
namespace {

// CUPTI's failures in the shape of common/status_check.h: "CUPTI <what>: <CUPTI's words>", as
// std::runtime_error.
struct CuptiStatus {
  using Status = CUptiResult;
  static constexpr Status kSuccess = CUPTI_SUCCESS;
  std::string Describe(Status s) const {
    const char* text = "unknown";
    cuptiGetResultString(s, &text);
    return text;
  }
  [[noreturn]] void Throw(Status s, const CheckedCall& call) const {
    throw std::runtime_error("CUPTI " + FailureText(*this, s, call.what));
  }
};
constexpr CuptiStatus kCupti{};

// CUPTI delivers completed buffers on its own thread, through C callbacks.
std::mutex g_mutex;
std::vector<ActivitySpan> g_spans;

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8u << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    ActivitySpan s{};
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      auto* k = reinterpret_cast<CUpti_ActivityKernel9*>(rec);
      s = {ActivitySpan::Kind::kKernel, k->start, k->end, k->streamId, k->correlationId,
           k->name ? k->name : "?"};
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      auto* m = reinterpret_cast<CUpti_ActivityMemcpy5*>(rec);
      s = {ActivitySpan::Kind::kMemcpy, m->start, m->end, m->streamId, m->correlationId, "memcpy"};
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(rec);
      s = {ActivitySpan::Kind::kMemset, m->start, m->end, m->streamId, m->correlationId, "memset"};
    } else {
      continue;
    }
    g_spans.push_back(std::move(s));
  }
  std::free(buffer);
}

}  // namespace

ActivityTimer::ActivityTimer() {
  PTXBENCH_CHECK_STATUS(kCupti, cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted),
                        "register callbacks");
  PTXBENCH_CHECK_STATUS(kCupti, cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                        "enable kernels");
  PTXBENCH_CHECK_STATUS(kCupti, cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "enable memcpy");
  PTXBENCH_CHECK_STATUS(kCupti, cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), "enable memset");
}

ActivityTimer::~ActivityTimer() {
  cuptiActivityFlushAll(1);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET);
}

uint64_t ActivityTimer::Now() const {
  uint64_t t = 0;
  PTXBENCH_CHECK_STATUS(kCupti, cuptiGetTimestamp(&t), "timestamp");
  return t;
}

std::vector<ActivitySpan> ActivityTimer::Collect(uint64_t begin, uint64_t end) {
  PTXBENCH_CHECK_STATUS(kCupti, cuptiActivityFlushAll(1), "flush");
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<ActivitySpan> in, later;
  for (auto& s : g_spans) {
    if (s.start >= begin && s.start <= end)
      in.push_back(std::move(s));
    else if (s.start > end)
      later.push_back(std::move(s));
  }
  g_spans = std::move(later);
  std::sort(in.begin(), in.end(),
            [](const ActivitySpan& a, const ActivitySpan& b) { return a.start < b.start; });
  return in;
}

std::vector<ActivitySpan> ActivityTimer::CollectAll() {
  PTXBENCH_CHECK_STATUS(kCupti, cuptiActivityFlushAll(1), "flush");
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<ActivitySpan> all = std::move(g_spans);
  g_spans.clear();
  std::sort(all.begin(), all.end(),
            [](const ActivitySpan& a, const ActivitySpan& b) { return a.start < b.start; });
  return all;
}

uint32_t ActivityTimer::StreamId(void* stream) const {
  uint32_t id = 0;
  // A null context: CUPTI looks the stream up in whichever context owns it.
  PTXBENCH_CHECK_STATUS(kCupti, cuptiGetStreamIdEx(nullptr, static_cast<CUstream>(stream), 0, &id),
                        "stream id");
  return id;
}

double SpanSeconds(const std::vector<ActivitySpan>& spans) {
  if (spans.empty()) return 0;
  uint64_t first = spans.front().start, last = 0;
  for (const auto& s : spans) {
    first = std::min(first, s.start);
    last = std::max(last, s.end);
  }
  return static_cast<double>(last - first) * 1e-9;
}

}  // namespace ptxbench
