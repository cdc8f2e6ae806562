// Probe for the timing layer (issue 4): do CUPTI activity records for kernels, copies and
// sets work on our H200, and do they time kernels of known duration right? Not part of the
// build; run by hand on a GPU:
//   nvcc -O2 -gencode arch=compute_90a,code=sm_90a tools/probes/cupti_activity_probe.cu -lcupti -o /tmp/probe && /tmp/probe
#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUPTI(x)                                                              \
  do {                                                                              \
    CUptiResult r_ = (x);                                                           \
    if (r_ != CUPTI_SUCCESS) {                                                      \
      const char* s_;                                                               \
      cuptiGetResultString(r_, &s_);                                                \
      std::printf("CUPTI error %s at %s:%d\n", s_, __FILE__, __LINE__);             \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

struct Span {
  int kind;
  unsigned long long start, end;
  unsigned stream, correlation;
  const char* name;
};
static std::vector<Span> g_spans;

static void CUPTIAPI Requested(uint8_t** buf, size_t* size, size_t* max_records) {
  *size = 8 << 20;
  *buf = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}

static void CUPTIAPI Completed(CUcontext, uint32_t, uint8_t* buf, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      auto* k = reinterpret_cast<CUpti_ActivityKernel9*>(rec);
      g_spans.push_back({int(rec->kind), k->start, k->end, k->streamId, k->correlationId, k->name});
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      auto* m = reinterpret_cast<CUpti_ActivityMemcpy5*>(rec);
      g_spans.push_back({int(rec->kind), m->start, m->end, m->streamId, m->correlationId, "memcpy"});
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(rec);
      g_spans.push_back({int(rec->kind), m->start, m->end, m->streamId, m->correlationId, "memset"});
    }
  }
  free(buf);
}

__global__ void spin(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

int main() {
  CHECK_CUPTI(cuptiActivityRegisterCallbacks(Requested, Completed));
  CHECK_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  CHECK_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
  CHECK_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
  cudaStream_t s1, s2;
  cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
  void *a, *b;
  size_t bytes = 256u << 20;
  cudaMalloc(&a, bytes);
  cudaMalloc(&b, bytes);
  spin<<<1, 1, 0, s1>>>(1000);  // warm-up
  cudaDeviceSynchronize();
  CHECK_CUPTI(cuptiActivityFlushAll(1));
  g_spans.clear();

  for (unsigned long long us : {10ull, 100ull, 1000ull}) {
    for (int i = 0; i < 50; ++i) spin<<<132, 128, 0, s1>>>(us * 1000);
    cudaDeviceSynchronize();
    CHECK_CUPTI(cuptiActivityFlushAll(1));
    std::vector<double> d;
    for (auto& s : g_spans) d.push_back((s.end - s.start) / 1e3);
    std::sort(d.begin(), d.end());
    std::printf("spin %llu us x50: records %zu, median %.2f us, p10 %.2f, p90 %.2f\n", us,
                d.size(), d[d.size() / 2], d[d.size() / 10], d[d.size() * 9 / 10]);
    g_spans.clear();
  }
  // Work on two streams, a memset and a device-to-device copy: all must appear.
  spin<<<1, 32, 0, s1>>>(500000);
  spin<<<1, 32, 0, s2>>>(200000);
  cudaMemsetAsync(a, 0, bytes, s1);
  cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s2);
  cudaDeviceSynchronize();
  CHECK_CUPTI(cuptiActivityFlushAll(1));
  for (auto& s : g_spans)
    std::printf("kind %d %-8s stream %u corr %u  %.1f us\n", s.kind, s.kind == 10 ? "kernel" : s.name,
                s.stream, s.correlation, (s.end - s.start) / 1e3);
  int l2 = 0;
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
  std::printf("L2 %d bytes\n", l2);
  return 0;
}
