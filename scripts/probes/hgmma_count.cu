// How Nsight Compute counts one wgmma of each width (the pack GEMM's work fraction of 2.0 at
// the headline, HGMMA.64x256x16, against 1.0 for wgmma_tma's HGMMA.64x128x16, 2026-12-07).
// One warpgroup (128 threads) issues exactly kIters wgmma of width N (64, 128, 192, 256),
// chained into one accumulator, on zeroed shared memory. inspect/ncu.cc credits
// inst_executed / 4 per warpgroup instruction: expect inst_executed = 4 * kIters summed over
// the HGMMA offsets of each kernel, whatever N is. scripts/probes/hgmma_count.sh builds it and
// reads the counts. The kernels differ only in N (the asm operand lists are spelled out).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

constexpr int kIters = 1000;

__device__ __forceinline__ uint64_t Desc(uint32_t addr) {
  // K-major, 128-byte swizzle, SBO 1024, LBO 16 (the values are zeros: only the count matters).
  return static_cast<uint64_t>((addr & 0x3FFFFu) >> 4) | (uint64_t{16 >> 4} << 16) |
         (uint64_t{1024 >> 4} << 32) | (uint64_t{1} << 62);
}

#define F4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define F16(i) F4(i), F4(i + 4), F4(i + 8), F4(i + 12)

__global__ void __launch_bounds__(128) probe_n64(float* out) {
  __shared__ alignas(1024) uint16_t a[64 * 64], b[256 * 64];
  for (int i = threadIdx.x; i < 64 * 64; i += 128) a[i] = 0;
  for (int i = threadIdx.x; i < 256 * 64; i += 128) b[i] = 0;
  __syncthreads();
  float d[32] = {};
  const uint64_t da = Desc(static_cast<uint32_t>(__cvta_generic_to_shared(a)));
  const uint64_t db = Desc(static_cast<uint32_t>(__cvta_generic_to_shared(b)));
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  for (int it = 0; it < kIters; ++it)
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
        "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
        "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"
        "}, %32, %33, 1, 1, 1, 0, 0;"
        : F16(0), F16(16)
        : "l"(da), "l"(db)
        : "memory");
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  float s = 0;
  for (float v : d) s += v;
  out[threadIdx.x] = s;
}

__global__ void __launch_bounds__(128) probe_n128(float* out) {
  __shared__ alignas(1024) uint16_t a[64 * 64], b[256 * 64];
  for (int i = threadIdx.x; i < 64 * 64; i += 128) a[i] = 0;
  for (int i = threadIdx.x; i < 256 * 64; i += 128) b[i] = 0;
  __syncthreads();
  float d[64] = {};
  const uint64_t da = Desc(static_cast<uint32_t>(__cvta_generic_to_shared(a)));
  const uint64_t db = Desc(static_cast<uint32_t>(__cvta_generic_to_shared(b)));
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  for (int it = 0; it < kIters; ++it)
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
        "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
        "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
        "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
        "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
        "}, %64, %65, 1, 1, 1, 0, 0;"
        : F16(0), F16(16), F16(32), F16(48)
        : "l"(da), "l"(db)
        : "memory");
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  float s = 0;
  for (float v : d) s += v;
  out[threadIdx.x] = s;
}

__global__ void __launch_bounds__(128) probe_n192(float* out) {
  __shared__ alignas(1024) uint16_t a[64 * 64], b[256 * 64];
  for (int i = threadIdx.x; i < 64 * 64; i += 128) a[i] = 0;
  for (int i = threadIdx.x; i < 256 * 64; i += 128) b[i] = 0;
  __syncthreads();
  float d[96] = {};
  const uint64_t da = Desc(static_cast<uint32_t>(__cvta_generic_to_shared(a)));
  const uint64_t db = Desc(static_cast<uint32_t>(__cvta_generic_to_shared(b)));
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  for (int it = 0; it < kIters; ++it)
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {"
        "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
        "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
        "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
        "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"
        "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,"
        "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95"
        "}, %96, %97, 1, 1, 1, 0, 0;"
        : F16(0), F16(16), F16(32), F16(48), F16(64), F16(80)
        : "l"(da), "l"(db)
        : "memory");
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  float s = 0;
  for (float v : d) s += v;
  out[threadIdx.x] = s;
}

__global__ void __launch_bounds__(128) probe_n256(float* out) {
  __shared__ alignas(1024) uint16_t a[64 * 64], b[256 * 64];
  for (int i = threadIdx.x; i < 64 * 64; i += 128) a[i] = 0;
  for (int i = threadIdx.x; i < 256 * 64; i += 128) b[i] = 0;
  __syncthreads();
  float d[128] = {};
  const uint64_t da = Desc(static_cast<uint32_t>(__cvta_generic_to_shared(a)));
  const uint64_t db = Desc(static_cast<uint32_t>(__cvta_generic_to_shared(b)));
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  for (int it = 0; it < kIters; ++it)
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
        "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
        "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
        "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
        "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"
        "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,"
        "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,"
        "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,"
        "%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127"
        "}, %128, %129, 1, 1, 1, 0, 0;"
        : F16(0), F16(16), F16(32), F16(48), F16(64), F16(80), F16(96), F16(112)
        : "l"(da), "l"(db)
        : "memory");
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  float s = 0;
  for (float v : d) s += v;
  out[threadIdx.x] = s;
}

int main() {
  float* out = nullptr;
  cudaMalloc(&out, 128 * sizeof(float));
  probe_n64<<<1, 128>>>(out);
  probe_n128<<<1, 128>>>(out);
  probe_n192<<<1, 128>>>(out);
  probe_n256<<<1, 128>>>(out);
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("probes ran: %s (%d wgmma per warpgroup each)\n", cudaGetErrorString(e), kIters);
  return e == cudaSuccess ? 0 : 1;
}
