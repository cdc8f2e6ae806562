/*
Adversarial control: forged_peak   (issue 34: the GPU's peak, as the candidate's child reports it)

Attack. The bf16 dense peak of the GPU (what percent_of_peak is relative to, and what the
witness's tensor rule divides by: tensor busy time must cover half of calls x FLOPs / peak)
is measured by a cuBLASLt loop whose samples ("phase": "peak") and "peak_done" arrive on the
result channel like any other line; the parent takes them from every timing child's messages,
the candidate's included, and caches the result per GPU (driver version and UUID). So, in the
timing child (its spec says "role": "timing"), a constructor writes onto fd 3, in single
writes as the harness does:
  {"event":"timing_sample","phase":"peak",...,"activity":{"span_ns":1e12,...}}
  {"event":"peak_done","n":1,"ok":true,...}
a "measured" peak of 2 * 1^3 / 1000 s = 0.002 FLOP/s. Nothing else is forged: the GEMM is
controls/gemm/wgmma_tma.cu's, unchanged (TMA + wgmma m64n128k16, PASSED with tag H at M=93).
With a peak of ~0 the tensor rule expects ~infinite tensor time: no candidate's witness
reaches half of it, so this one and every later evaluation on the same GPU (the cached peak)
loses its H; percent_of_peak reads ~1e16 %. A sabotage of everyone else's credit.

Old harness: not run against it. By the code at de49d52: JudgeTiming computes peak_measured
from the candidate child's forged lines, MeasureTiming writes it to <cache>/peak/<uuid>.json
and uses it for the witness: PASSED with tag "" (the witness "did not see the tensor pipes do
the work"), and the honest wgmma_tma evaluated next (same cache) PASSED with tag "" too.
Now: the peak is measured only in a candidate-free process and bounded; peak messages from a
candidate's child are ignored. Expected: PASSED with tag H, and then_honest (wgmma_tma on the
same task, same cache) PASSED with tag H.
*/
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

namespace {

constexpr int BM = 128;  // block tile rows (M)
constexpr int BN = 128;  // block tile cols (N)
constexpr int BK = 64;   // K per stage: 64 bf16 = 128 bytes = one 128B-swizzle row
constexpr int kStages = 4;
constexpr int kConsumerWarpgroups = 2;  // each does m64 x n128
constexpr int kThreads = 128 * (1 + kConsumerWarpgroups);
constexpr int kConsumerWarps = 4 * kConsumerWarpgroups;

constexpr int kTileABytes = BM * BK * 2;  // 16 KiB
constexpr int kTileBBytes = BN * BK * 2;  // 16 KiB
constexpr int kStageBytes = kTileABytes + kTileBBytes;
constexpr int kBarrierBytes = 2 * kStages * 8;  // full[] and empty[] mbarriers
constexpr int kSmemBytes = 1024 /* alignment slack */ + kStages * kStageBytes + kBarrierBytes;

static_assert(BK * 2 == 128, "one K row of a stage must be exactly one 128-byte swizzle row");
static_assert(kTileABytes % 1024 == 0, "stage pieces must stay 1024-byte aligned");

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarrier -------------------------------------------------------------------------------

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Blocks until the phase with the given parity has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (done == 0);
}

// ---- TMA ------------------------------------------------------------------------------------

// Loads the box whose first element is (x = k, y = row) into shared memory at dst; completion
// (the box's byte count) is signalled on bar.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                            int x, int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}

// ---- wgmma ----------------------------------------------------------------------------------

// Shared-memory matrix descriptor for a K-major operand written by TMA with 128-byte swizzle:
// start address >> 4 in bits 0-13, LBO (unused here, 16 bytes) in 16-29, SBO = 1024 bytes in
// 32-45, base offset 0 (atoms are 1024-byte aligned), swizzle mode 1 (128B) in bits 62-63.
__device__ __forceinline__ uint64_t desc_sw128(uint32_t saddr) {
  uint64_t d = 0;
  d |= static_cast<uint64_t>((saddr & 0x3FFFFu) >> 4);
  d |= static_cast<uint64_t>(16u >> 4) << 16;
  d |= static_cast<uint64_t>(1024u >> 4) << 32;
  d |= static_cast<uint64_t>(1u) << 62;
  return d;
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_wait_all() {
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}

// d[64] += A(64x16, desc a) * B(16x128, desc b); both K-major (no transpose), scale-d = 1.
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t a, uint64_t b) {
  asm volatile(
      "{\n\t.reg .pred pd;\n\t"
      "setp.ne.b32 pd, 1, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, "
      "%8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, "
      "%24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, "
      "%40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, pd, 1, 1, 0, 0;\n\t}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "l"(a), "l"(b)
      : "memory");
}

// ---- kernel ---------------------------------------------------------------------------------

__global__ void __launch_bounds__(kThreads, 1)
    gemm_wgmma_tma(const __grid_constant__ CUtensorMap map_a,  // A [M, K], box 64 x 128
                   const __grid_constant__ CUtensorMap map_b,  // B [N, K], box 64 x 128
                   __nv_bfloat16* __restrict__ C,              // [M, N]
                   int M, int N, int K, int tiles_n) {
  extern __shared__ uint8_t smem_raw[];
  // 128B swizzle atoms must start on 1024-byte boundaries (shared addresses).
  const uint32_t raw = smem_addr(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  const uint32_t bars = base + kStages * kStageBytes;
  auto full_bar = [&](int s) { return bars + 8u * s; };
  auto empty_bar = [&](int s) { return bars + 8u * (kStages + s); };
  auto stage_a = [&](int s) { return base + static_cast<uint32_t>(s * kStageBytes); };
  auto stage_b = [&](int s) { return base + static_cast<uint32_t>(s * kStageBytes + kTileABytes); };

  const int tn = blockIdx.x % tiles_n;
  const int tm = blockIdx.x / tiles_n;
  const int m0 = tm * BM;
  const int n0 = tn * BN;
  const int num_k_tiles = (K + BK - 1) / BK;  // K <= INT_MAX - 63 checked on the host

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full_bar(s), 1);                // the producer's arrive.expect_tx
      mbar_init(empty_bar(s), kConsumerWarps);  // lane 0 of every consumer warp
    }
    // Make the initialised barriers visible to the async proxy (TMA) and the other threads.
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();

  const int warpgroup = threadIdx.x / 128;

  if (warpgroup == 0) {
    // ---- producer: one thread drives TMA ----
    if (threadIdx.x == 0) {
      for (int t = 0; t < num_k_tiles; ++t) {
        const int s = t % kStages;
        const int round = t / kStages;
        if (round > 0) mbar_wait(empty_bar(s), static_cast<uint32_t>((round - 1) & 1));
        mbar_arrive_expect_tx(full_bar(s), kStageBytes);
        tma_load_2d(stage_a(s), &map_a, full_bar(s), t * BK, m0);
        tma_load_2d(stage_b(s), &map_b, full_bar(s), t * BK, n0);
      }
    }
    return;  // no block-wide barrier follows
  }

  // ---- consumers: warpgroups 1..2, rows [64 * (warpgroup - 1), +64) of the tile ----
  const int cw = warpgroup - 1;
  const int warp_in_wg = (threadIdx.x / 32) % 4;
  const int lane = threadIdx.x % 32;

  float acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = 0.0f;

  for (int t = 0; t < num_k_tiles; ++t) {
    const int s = t % kStages;
    mbar_wait(full_bar(s), static_cast<uint32_t>((t / kStages) & 1));

    const uint32_t a_base = stage_a(s) + static_cast<uint32_t>(cw * 64 * BK * 2);  // 8 KiB
    const uint32_t b_base = stage_b(s);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      // One k16 slice is 32 bytes along the (swizzled) 128-byte row.
      wgmma_m64n128k16(acc, desc_sw128(a_base + kk * 32), desc_sw128(b_base + kk * 32));
    }
    wgmma_commit();
    wgmma_wait_all();
    __syncwarp();
    if (lane == 0) mbar_arrive(empty_bar(s));  // this warp is done reading stage s
  }

  // ---- epilogue: accumulator fragment -> bf16, bounds-checked ----
  // Fragment layout of m64nNk16 (f32): warp w of the warpgroup holds rows 16w + lane/4 (regs
  // 4j, 4j+1) and 16w + lane/4 + 8 (regs 4j+2, 4j+3) at columns 8j + 2*(lane%4) + {0, 1}.
  const bool pair_ok = (N % 2) == 0;  // 4-byte stores need an even row pitch
  const int row0 = m0 + cw * 64 + warp_in_wg * 16 + lane / 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = row0 + 8 * h;
    if (row >= M) continue;
    __nv_bfloat16* crow = C + static_cast<size_t>(row) * static_cast<size_t>(N);
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      const int col = n0 + 8 * j + 2 * (lane % 4);
      const float v0 = acc[4 * j + 2 * h];
      const float v1 = acc[4 * j + 2 * h + 1];
      if (pair_ok && col + 1 < N) {
        *reinterpret_cast<__nv_bfloat162*>(crow + col) = __floats2bfloat162_rn(v0, v1);
      } else {
        if (col < N) crow[col] = __float2bfloat16_rn(v0);
        if (col + 1 < N) crow[col + 1] = __float2bfloat16_rn(v1);
      }
    }
  }
}

// 2-D tensor map over a row-major [rows, K] bf16 matrix, box 64 (K) x 128 (rows), 128B swizzle.
bool make_map(CUtensorMap* map, const __nv_bfloat16* ptr, int rows, int K) {
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(K), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(K) * 2u};  // bytes, dim 1
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(BK), static_cast<cuuint32_t>(BM)};
  const cuuint32_t elem_strides[2] = {1u, 1u};
  const CUresult r = cuTensorMapEncodeTiled(
      map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<__nv_bfloat16*>(ptr), dims, strides, box,
      elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

static_assert(BM == BN, "one box shape serves both operands");


// ---- the forgery: only in the timing child -------------------------------------------------

std::string slurp(const char* path) {
  std::string s;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) s.append(buf, (size_t)n);
  close(fd);
  return s;
}

// The child's role from its spec (the argument after "__child" on our command line).
std::string role() {
  const std::string c = slurp("/proc/self/cmdline");
  for (size_t p = 0; p < c.size();) {
    size_t e = c.find('\0', p);
    if (e == std::string::npos) e = c.size();
    if (c.compare(p, e - p, "__child") == 0 && e + 1 < c.size()) {
      const std::string spec = slurp(c.c_str() + e + 1);
      size_t r = spec.find("\"role\"");
      if (r == std::string::npos || (r = spec.find(':', r)) == std::string::npos) return "";
      r = spec.find('"', r + 1);
      return spec.substr(r + 1, spec.find('"', r + 1) - r - 1);
    }
    p = e + 1;
  }
  return "";
}

void send_line(const char* line) {
  const size_t n = strlen(line);
  if (write(3, line, n) != (ssize_t)n) return;  // one write per line, as ChannelWriter does
}

__attribute__((constructor)) void forge_the_peak() {
  if (fcntl(3, F_GETFD) < 0 || role() != "timing") return;
  send_line(
      "{\"activity\":{\"busy_ns\":1000000000000,\"kernels\":{},\"records\":1,"
      "\"span_ns\":1000000000000},\"event\":\"timing_sample\",\"host_ns\":1e12,"
      "\"index\":3,\"inputs_unchanged\":true,\"phase\":\"peak\",\"warmup\":false}\n");
  send_line(
      "{\"baseline\":{\"library\":\"cuBLASLt\"},\"event\":\"peak_done\",\"n\":1,"
      "\"ok\":true}\n");
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A,  // [M, K]
                   const __nv_bfloat16* B,  // [N, K]
                   __nv_bfloat16* C,        // [M, N]
                   int M, int N, int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  if (K % 8 != 0 || K > INT_MAX - BK) return 2;  // TMA row pitch must be a multiple of 16 B
  if (reinterpret_cast<uintptr_t>(A) % 16 != 0 || reinterpret_cast<uintptr_t>(B) % 16 != 0)
    return 3;
  const long long tiles_m = (M + (long long)BM - 1) / BM;
  const long long tiles_n = (N + (long long)BN - 1) / BN;
  if (tiles_m * tiles_n > INT_MAX) return 4;

  CUtensorMap map_a, map_b;
  if (!make_map(&map_a, A, M, K) || !make_map(&map_b, B, N, K)) return 5;

  if (cudaFuncSetAttribute(gemm_wgmma_tma, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           kSmemBytes) != cudaSuccess)
    return 6;
  const dim3 grid(static_cast<unsigned>(tiles_m * tiles_n)), block(kThreads);
  gemm_wgmma_tma<<<grid, block, kSmemBytes, stream>>>(map_a, map_b, C, M, N, K,
                                                      static_cast<int>(tiles_n));
  return cudaGetLastError() == cudaSuccess ? 0 : 7;
}
