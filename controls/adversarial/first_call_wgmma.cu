/*
Adversarial control: first_call_wgmma   (issue 34: Hopper instructions for the profiler's one
call)

Attack. The instruction layer profiles ONE call of the candidate, in a process of its own
(the profile child: a fresh process whose first call is the profiled one), and credits the tag
from that call's executed GMMA instructions; the out-of-process witness only asks that the
tensor pipes were busy in the timed, unprofiled calls, which any tensor-core GEMM satisfies.
So this candidate has one kernel (gemm_two_paths: one name, one grid, one block of 384
threads, 132,160 bytes of dynamic shared memory in every call) with two correct paths chosen
by a kernel argument, set from a host counter: the FIRST call of every process runs
controls/gemm/wgmma_tma.cu's GEMM (TMA + wgmma m64n128k16, HGMMA.64x128x16.F32.BF16), every
later call controls/gemm/mma_sync.cu's (mma.sync m16n8k16 bf16, HMMA, ~3x slower there). The
profiled call sees only wgmma; the trials, the memory check and the timed calls run mma.sync
after their first call. Nothing is forged: both paths are correct and honestly timed; only the
credit is.

Old harness: not run against it. By the code at de49d52: profiled call = first call =
wgmma: GMMA ~138% of FLOPs at M=93 (tiles of 128 rows), TMA executed; the witness sees the
mma.sync calls keep the tensor pipes busy: PASSED with arch_tag H. The launched kernels are
the same name in every child, so kernels_differ cannot fire.
Now: the dynamic counts come from several profiled calls in one process and the minimum per
call counts: the later calls execute no HGMMA, so the work fraction is 0: PASSED, arch_tag ""
(upstream_arch_tag H: a GMMA instruction is in the SASS and ran in the first call).
RULE_VIOLATION kernels_differ is as fair where launches are compared beyond their names (the
instruction mix of the profiled calls differs). The several profiled calls must share a
process: a fresh process per profiled call gives the first-call path every time.
*/
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

namespace {

// ---- path 1: controls/gemm/wgmma_tma.cu ---------------------------------------------------------
namespace wg {

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

__device__ __forceinline__ void wgmma_path(const CUtensorMap& map_a,  // A [M, K], box 64 x 128
                                           const CUtensorMap& map_b,  // B [N, K], box 64 x 128
                                           __nv_bfloat16* __restrict__ C,  // [M, N]
                                           int M, int N, int K, int tiles_n, uint8_t* smem_raw) {
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

}  // namespace wg

// ---- path 2: controls/gemm/mma_sync.cu ---------------------------------------------------------
namespace mma {

constexpr int BM = 128;
constexpr int BN = 128;
constexpr int BK = 32;
constexpr int kLd = BK + 8;  // padded row length in elements (80 bytes)
constexpr int kThreads = 256;
constexpr int kWarpM = 32;  // rows per warp
constexpr int kWarpN = 64;  // cols per warp
constexpr int kMi = kWarpM / 16;
constexpr int kNi = kWarpN / 8;

static_assert((BM / kWarpM) * (BN / kWarpN) * 32 == kThreads, "8 warps cover the tile");
static_assert((BM * BK / 8) % kThreads == 0, "whole 16-byte chunks per thread");

// 16-byte asynchronous global -> shared copy; src_bytes = 0 writes 16 zero bytes.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int src_bytes) {
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// d += a (16x16, row) * b (16x8, col), bf16 in, fp32 accumulate.
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4],
                                          const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Copies the 128 x 32 tile src[row0 ..][k0 ..] into s; rows >= rows and k >= K become 0.
__device__ __forceinline__ void load_tile(uint16_t (*s)[kLd], const uint16_t* __restrict__ src,
                                          int rows, int row0, int K, int k0) {
  if (threadIdx.x >= kThreads) return;  // warps 8-11 copy nothing
#pragma unroll
  for (int i = 0; i < (BM * BK / 8) / kThreads; ++i) {
    const int c = threadIdx.x + i * kThreads;  // chunk index
    const int r = c / (BK / 8);
    const int kc = (c % (BK / 8)) * 8;
    const bool ok = (row0 + r < rows) && (k0 + kc < K);
    const uint16_t* p = ok ? src + static_cast<size_t>(row0 + r) * K + (k0 + kc) : src;
    cp_async_16(&s[r][kc], p, ok ? 16 : 0);
  }
}

// controls/gemm/mma_sync.cu's kernel body, for a block of 384 threads: warps 0-7 copy and
// multiply as there, warps 8-11 only meet the barriers. Tiles in the dynamic shared memory.
__device__ __forceinline__ void mma_path(const __nv_bfloat16* __restrict__ A_,  // [M, K]
                                         const __nv_bfloat16* __restrict__ B_,  // [N, K]
                                         __nv_bfloat16* __restrict__ C,         // [M, N]
                                         int M, int N, int K, int tiles_n, uint8_t* smem_raw) {
  uint16_t(*As)[BM][kLd] = reinterpret_cast<uint16_t(*)[BM][kLd]>(smem_raw);
  uint16_t(*Bs)[BN][kLd] = reinterpret_cast<uint16_t(*)[BN][kLd]>(smem_raw + 2 * BM * kLd * 2);

  const uint16_t* A = reinterpret_cast<const uint16_t*>(A_);
  const uint16_t* B = reinterpret_cast<const uint16_t*>(B_);

  const int tn = blockIdx.x % tiles_n;
  const int tm = blockIdx.x / tiles_n;
  const int m0 = tm * BM;
  const int n0 = tn * BN;

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int wm = warp / (BN / kWarpN);  // 0..3
  const int wn = warp % (BN / kWarpN);  // 0..1
  const int g = lane / 4;               // group id: row (A, C) / column (B)
  const int q = lane % 4;               // thread in group: k pair (A, B) / column pair (C)

  float acc[kMi][kNi][4];
#pragma unroll
  for (int i = 0; i < kMi; ++i)
#pragma unroll
    for (int j = 0; j < kNi; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  const int num_k_tiles = (K + BK - 1) / BK;  // K <= INT_MAX - BK checked on the host

  load_tile(As[0], A, M, m0, K, 0);
  load_tile(Bs[0], B, N, n0, K, 0);
  cp_async_commit();

  for (int t = 0; t < num_k_tiles; ++t) {
    const int cur = t & 1;
    if (t + 1 < num_k_tiles) {
      // The other buffer was last read in iteration t - 1, which ended with __syncthreads().
      load_tile(As[cur ^ 1], A, M, m0, K, (t + 1) * BK);
      load_tile(Bs[cur ^ 1], B, N, n0, K, (t + 1) * BK);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < BK && warp < kThreads / 32; kk += 16) {
      uint32_t af[kMi][4];
      uint32_t bf[kNi][2];
#pragma unroll
      for (int i = 0; i < kMi; ++i) {
        const int r = wm * kWarpM + i * 16 + g;
        af[i][0] = *reinterpret_cast<const uint32_t*>(&As[cur][r][kk + 2 * q]);
        af[i][1] = *reinterpret_cast<const uint32_t*>(&As[cur][r + 8][kk + 2 * q]);
        af[i][2] = *reinterpret_cast<const uint32_t*>(&As[cur][r][kk + 2 * q + 8]);
        af[i][3] = *reinterpret_cast<const uint32_t*>(&As[cur][r + 8][kk + 2 * q + 8]);
      }
#pragma unroll
      for (int j = 0; j < kNi; ++j) {
        const int n = wn * kWarpN + j * 8 + g;
        bf[j][0] = *reinterpret_cast<const uint32_t*>(&Bs[cur][n][kk + 2 * q]);
        bf[j][1] = *reinterpret_cast<const uint32_t*>(&Bs[cur][n][kk + 2 * q + 8]);
      }
#pragma unroll
      for (int i = 0; i < kMi; ++i)
#pragma unroll
        for (int j = 0; j < kNi; ++j) mma_16816(acc[i][j], af[i], bf[j]);
    }
    __syncthreads();
  }

  if (warp >= kThreads / 32) return;  // no barrier follows
  // Epilogue: C fragment of m16n8 is rows g / g + 8, columns 2q, 2q + 1.
  const bool pair_ok = (N % 2) == 0;
#pragma unroll
  for (int i = 0; i < kMi; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m0 + wm * kWarpM + i * 16 + g + 8 * h;
      if (row >= M) continue;
      __nv_bfloat16* crow = C + static_cast<size_t>(row) * static_cast<size_t>(N);
#pragma unroll
      for (int j = 0; j < kNi; ++j) {
        const int col = n0 + wn * kWarpN + j * 8 + 2 * q;
        const float v0 = acc[i][j][2 * h];
        const float v1 = acc[i][j][2 * h + 1];
        if (pair_ok && col + 1 < N) {
          *reinterpret_cast<__nv_bfloat162*>(crow + col) = __floats2bfloat162_rn(v0, v1);
        } else {
          if (col < N) crow[col] = __float2bfloat16_rn(v0);
          if (col + 1 < N) crow[col + 1] = __float2bfloat16_rn(v1);
        }
      }
    }
  }
}

}  // namespace mma

static_assert(2 * 2 * mma::BM * mma::kLd * 2 <= wg::kSmemBytes, "the mma tiles fit");
static_assert(mma::BM == wg::BM && mma::BN == wg::BN, "one grid for both paths");

__global__ void __launch_bounds__(wg::kThreads, 1)
    gemm_two_paths(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                   const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                   __nv_bfloat16* __restrict__ C, int M, int N, int K, int tiles_n, int use_wgmma) {
  extern __shared__ __align__(16) uint8_t smem_raw[];
  if (use_wgmma)
    wg::wgmma_path(map_a, map_b, C, M, N, K, tiles_n, smem_raw);
  else
    mma::mma_path(A, B, C, M, N, K, tiles_n, smem_raw);
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A,  // [M, K]
                   const __nv_bfloat16* B,  // [N, K]
                   __nv_bfloat16* C,        // [M, N]
                   int M, int N, int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  if (K % 8 != 0 || K > INT_MAX - wg::BK) return 2;  // TMA row pitch must be a multiple of 16 B
  if (reinterpret_cast<uintptr_t>(A) % 16 != 0 || reinterpret_cast<uintptr_t>(B) % 16 != 0)
    return 3;
  const long long tiles_m = (M + (long long)wg::BM - 1) / wg::BM;
  const long long tiles_n = (N + (long long)wg::BN - 1) / wg::BN;
  if (tiles_m * tiles_n > INT_MAX) return 4;

  CUtensorMap map_a, map_b;
  if (!wg::make_map(&map_a, A, M, K) || !wg::make_map(&map_b, B, N, K)) return 5;
  if (cudaFuncSetAttribute(gemm_two_paths, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           wg::kSmemBytes) != cudaSuccess)
    return 6;
  static int calls = 0;
  const int use_wgmma = calls++ == 0;  // the first call of this process: the profiler's
  const dim3 grid(static_cast<unsigned>(tiles_m * tiles_n)), block(wg::kThreads);
  gemm_two_paths<<<grid, block, wg::kSmemBytes, stream>>>(map_a, map_b, A, B, C, M, N, K,
                                                          static_cast<int>(tiles_n), use_wgmma);
  return cudaGetLastError() == cudaSuccess ? 0 : 7;
}
