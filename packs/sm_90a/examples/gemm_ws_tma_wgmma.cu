/*
Example: gemm_ws_tma_wgmma (knowledge pack sm_90a)

Computes C = A * B^T for bf16 inputs with fp32 accumulation, C rounded to bf16 once:
  A: [M, K] bf16, row-major contiguous
  B: [N, K] bf16, row-major contiguous   (C[m][n] = sum_k A[m][k] * B[n][k])
  C: [M, N] bf16, row-major contiguous

Built only on ptxbench_sm90.cuh (inline PTX) and the CUDA runtime. Design:
  - Block tile 128 (M) x BN (N) x 64 (K); BN = 256 (4 stages of 16 KiB A + 32 KiB B = 192 KiB)
    or BN = 128 when 256-wide tiles would leave SMs idle (6 stages of 32 KiB = 192 KiB).
    64 bf16 along K = 128 bytes = one row of the 128-byte TMA swizzle, the layout that the
    wgmma descriptors read (SBO 1024, k16 slices 32 bytes apart).
  - 384 threads = 3 warpgroups, warp-specialized, 1 block per SM:
      warpgroup 0, producer: setmaxnreg.dec to 40; one elected thread waits for a free ring
        slot ("empty" mbarrier), arms the slot's "full" mbarrier with expect_tx (the bytes of
        both boxes) and issues two TMA loads completing on it. The other 127 threads exit.
      warpgroups 1 and 2, consumers: setmaxnreg.inc to 232; each owns 64 rows of the tile
        (m64 x BN accumulator in BN/2 fp32 registers per thread). Per slot: wait "full",
        wgmma.fence, 4 x wgmma m64nBNk16, commit, wait_group 1 (so the group just issued keeps
        running) and release the PREVIOUS slot: lane 0 of each of the 8 consumer warps arrives
        on its "empty" mbarrier (count 8).
  - Persistent grid: min(#tiles, #SMs) blocks walk the tiles with stride gridDim.x, in groups
    of 8 tile-rows so that concurrently running blocks share A and B panels in L2. The ring
    and its phases continue across tiles, so the producer already fetches the next tile while
    the consumers run the epilogue.
  - Epilogue: wgmma_wait<0>, release the last slot, then fp32 -> bf16 pairs stored straight
    from the accumulator fragments (acc_row/acc_col), bounds-checked against M and N.
  - Tails: TMA zero-fills rows past M or N and columns past K, and still counts the whole box
    towards complete_tx, so any M, any N and any K % 8 == 0 run the same code.
  - Refuses (non-zero, nothing launched): non-positive sizes, K % 8 != 0 (TMA row pitch must
    be a multiple of 16 bytes), A or B not 16-byte aligned, C not 4-byte aligned, or a failure
    to build the tensor maps. Every task shape (N, K multiples of 64) is accepted.
  - Tensor maps are cached per operand, keyed on pointer, shape and box (TensorMap2dCache), so
    new buffers or shapes between calls always get a fresh map.

Build (as the harness does; -I only while the header is still an #include):
nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a \
     -cudart shared -Xptxas -v -I ../include -o gemm_ws.so gemm_ws_tma_wgmma.cu
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "ptxbench_sm90.cuh"

namespace {

using namespace ptxbench_sm90;

constexpr int BM = 128;  // block tile rows = 2 consumer warpgroups x 64
constexpr int BK = 64;   // K per stage: 64 bf16 = 128 bytes = one 128B-swizzle row
constexpr int kConsumerWarpgroups = 2;
constexpr int kThreads = 128 * (1 + kConsumerWarpgroups);
constexpr int kConsumerWarps = 4 * kConsumerWarpgroups;
constexpr int kGroupRows = 8;  // tile-rows per rasterization group (L2 reuse)

template <int BN>
struct Config {
  static constexpr int kStages = BN == 256 ? 4 : 6;
  static constexpr int kTileABytes = BM * BK * 2;  // 16 KiB
  static constexpr int kTileBBytes = BN * BK * 2;  // 32 or 16 KiB
  static constexpr int kStageBytes = kTileABytes + kTileBBytes;
  static constexpr int kBarrierBytes = 2 * kStages * 8;  // full[] then empty[]
  static constexpr int kSmemBytes = 1024 /* align slack */ + kStages * kStageBytes + kBarrierBytes;
  static_assert(kTileABytes % 1024 == 0 && kTileBBytes % 1024 == 0,
                "every tile must start on a 1024-byte swizzle atom");
  static_assert(kSmemBytes <= 227 * 1024, "over the opt-in shared memory of one block");
};

// Tile index -> (tile row, tile col), grouped: kGroupRows consecutive tile-rows are visited
// column by column, so a wave of blocks reads a few A panels and a band of B panels.
__device__ __forceinline__ void tile_coords(int tile, int tiles_m, int tiles_n, int& tm,
                                            int& tn) {
  const int per_group = kGroupRows * tiles_n;
  const int group = tile / per_group;
  const int first_m = group * kGroupRows;
  const int rows_here = min(tiles_m - first_m, kGroupRows);
  const int r = tile - group * per_group;
  tm = first_m + r % rows_here;
  tn = r / rows_here;
}

template <int BN>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_ws_kernel(const __grid_constant__ CUtensorMap map_a,  // A [M, K], box 64 x 128
                   const __grid_constant__ CUtensorMap map_b,  // B [N, K], box 64 x BN
                   __nv_bfloat16* __restrict__ C,              // [M, N]
                   int M, int N, int K, int tiles_m, int tiles_n) {
  using Cfg = Config<BN>;
  constexpr int S = Cfg::kStages;
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;  // 128B swizzle: 1024-aligned
  const uint32_t bars = base + S * Cfg::kStageBytes;
  auto full_bar = [&](int s) { return bars + 8u * s; };
  auto empty_bar = [&](int s) { return bars + 8u * (S + s); };
  auto stage_a = [&](int s) { return base + static_cast<uint32_t>(s * Cfg::kStageBytes); };
  auto stage_b = [&](int s) {
    return base + static_cast<uint32_t>(s * Cfg::kStageBytes + Cfg::kTileABytes);
  };

  const int num_tiles = tiles_m * tiles_n;
  const int num_k_tiles = (K + BK - 1) / BK;

  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      mbar_init(full_bar(s), 1);                // the producer's arrive.expect_tx
      mbar_init(empty_bar(s), kConsumerWarps);  // lane 0 of each consumer warp
    }
    fence_barrier_init();
  }
  __syncthreads();  // the last block-wide barrier: roles diverge below

  if (warpgroup_index() == 0) {
    // ---------------- producer ----------------
    setmaxnreg_dec<40>();
    if (threadIdx.x / 32 == 0 && elect_one()) {
      int it = 0;  // slot uses so far, across tiles (same count as the consumers')
      for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
        int tm, tn;
        tile_coords(tile, tiles_m, tiles_n, tm, tn);
        for (int kt = 0; kt < num_k_tiles; ++kt, ++it) {
          const int s = it % S;
          const int round = it / S;
          // Round r of a slot needs round r - 1's data consumed: that release completed the
          // empty barrier's phase r - 1. Round 0 finds the buffers free.
          if (round > 0) mbar_wait(empty_bar(s), static_cast<uint32_t>((round - 1) & 1));
          mbar_arrive_expect_tx(full_bar(s), Cfg::kStageBytes);
          tma_load_2d(stage_a(s), &map_a, full_bar(s), kt * BK, tm * BM);
          tma_load_2d(stage_b(s), &map_b, full_bar(s), kt * BK, tn * BN);
        }
      }
    }
    return;  // nothing below waits for the producer's threads
  }

  // ---------------- consumers ----------------
  setmaxnreg_inc<232>();
  const int cw = warpgroup_index() - 1;  // rows [64 cw, 64 cw + 64) of the tile
  const int t = thread_in_warpgroup();
  const int lane = t % 32;
  const bool pair_ok = (N % 2) == 0;  // bf16x2 stores need 4-byte aligned rows

  float acc[BN / 2];
  int it = 0;
  for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    int tm, tn;
    tile_coords(tile, tiles_m, tiles_n, tm, tn);

#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;

    for (int kt = 0; kt < num_k_tiles; ++kt, ++it) {
      const int s = it % S;
      mbar_wait(full_bar(s), static_cast<uint32_t>((it / S) & 1));

      const uint32_t a_base = stage_a(s) + static_cast<uint32_t>(cw * 64 * BK * 2);  // 8 KiB
      const uint32_t b_base = stage_b(s);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
        // k16 slice kk starts 32 bytes further along the (swizzled) 128-byte rows.
        wgmma_m64k16_bf16<BN>(acc, desc_kmajor_sw128(a_base + kk * 32),
                              desc_kmajor_sw128(b_base + kk * 32));
      }
      wgmma_commit();
      // The group just committed may still run; every older one (which read the previous
      // slot) is complete, so that slot goes back to the producer.
      wgmma_wait<1>();
      if (kt > 0 && lane == 0) mbar_arrive(empty_bar((it - 1) % S));
    }
    wgmma_wait<0>();
    // Last slot of this tile: its reads are done now. The ring continues into the next tile.
    if (num_k_tiles > 0 && lane == 0) mbar_arrive(empty_bar((it - 1) % S));

    // ---- epilogue: fragments -> bf16, bounds-checked ----
    const int row_base = tm * BM + cw * 64;
    const int col_base = tn * BN;
#pragma unroll
    for (int i = 0; i < BN / 2; i += 2) {
      const int row = row_base + acc_row(t, i);
      const int col = col_base + acc_col(t, i);
      if (row >= M) continue;
      __nv_bfloat16* crow = C + static_cast<size_t>(row) * static_cast<size_t>(N);
      if (pair_ok && col + 1 < N) {
        *reinterpret_cast<__nv_bfloat162*>(crow + col) = __floats2bfloat162_rn(acc[i], acc[i + 1]);
      } else {
        if (col < N) crow[col] = __float2bfloat16_rn(acc[i]);
        if (col + 1 < N) crow[col + 1] = __float2bfloat16_rn(acc[i + 1]);
      }
    }
  }
}

template <int BN>
int launch(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
           int K, int tiles_m, int tiles_n, int sms, cudaStream_t stream) {
  using Cfg = Config<BN>;
  // One cache per operand and tile shape; thread_local because run() may be called from
  // several host threads. The key is everything the map encodes (pointer, shape, box).
  static thread_local TensorMap2dCache cache_a, cache_b;
  const CUtensorMap *map_a = nullptr, *map_b = nullptr;
  if (cache_a.get(&map_a, A, M, K, K, BM, BK) != kMapOk) return 5;
  if (cache_b.get(&map_b, B, N, K, K, BN, BK) != kMapOk) return 5;

  if (cudaFuncSetAttribute(gemm_ws_kernel<BN>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           Cfg::kSmemBytes) != cudaSuccess)
    return 6;
  const int num_tiles = tiles_m * tiles_n;
  const int grid = num_tiles < sms ? num_tiles : sms;
  gemm_ws_kernel<BN><<<grid, kThreads, Cfg::kSmemBytes, stream>>>(*map_a, *map_b, C, M, N, K,
                                                                  tiles_m, tiles_n);
  return cudaGetLastError() == cudaSuccess ? 0 : 7;
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A,  // [M, K]
                   const __nv_bfloat16* B,  // [N, K]
                   __nv_bfloat16* C,        // [M, N]
                   int M, int N, int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  if (K % 8 != 0 || K > INT_MAX - BK) return 2;  // TMA row pitch: a multiple of 16 bytes
  if (reinterpret_cast<uintptr_t>(A) % 16 != 0 || reinterpret_cast<uintptr_t>(B) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(C) % 4 != 0)
    return 3;

  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0)
    return 4;

  const long long tiles_m = (M + (long long)BM - 1) / BM;
  const long long tiles_n256 = (N + 255LL) / 256;
  const long long tiles_n128 = (N + 127LL) / 128;
  if (tiles_m * tiles_n128 > INT_MAX) return 4;

  // 256-wide tiles halve the shared-memory traffic per MMA; take them unless they would leave
  // SMs idle that 128-wide tiles could feed (small M or N = 128).
  if (N > 128 && tiles_m * tiles_n256 >= sms)
    return launch<256>(A, B, C, M, N, K, (int)tiles_m, (int)tiles_n256, sms, stream);
  return launch<128>(A, B, C, M, N, K, (int)tiles_m, (int)tiles_n128, sms, stream);
}
