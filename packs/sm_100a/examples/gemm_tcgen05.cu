/*
Example candidate: gemm (bf16) on Blackwell, sm_100a, built on ptxbench_sm100.cuh.
STATUS: compiles for sm_100a; never run on Blackwell hardware (none available to this
project). Written to be correct, but treat it as unverified until a B200-class run passes.

Computes C = A * B^T, fp32 accumulation, result rounded to bf16:
  A: [M, K] bf16, row-major contiguous
  B: [N, K] bf16, row-major contiguous   (C[m][n] = sum_k A[m][k] * B[n][k])
  C: [M, N] bf16, row-major contiguous

Structure (one 128 x 128 output tile per CTA, not persistent, not tuned):
  - 192 threads = 6 warps with fixed roles:
      warps 0-3  epilogue: read the fp32 accumulator out of tensor memory (warp w may only
                 touch TMEM lanes 32w..32w+31, which is why the epilogue is warps 0-3), convert
                 to bf16 and store with bounds checks;
      warp 4     TMA producer: lane 0 fills a 4-stage ring of (A 128x64, B 128x64) tiles;
      warp 5     allocates 128 TMEM columns (whole warp), then lane 0 alone issues every
                 tcgen05.mma and tcgen05.commit; the warp frees TMEM at the end.
  - Both operands are K-major with 128-byte swizzle, exactly as TMA writes them: each tile row
    is 64 bf16 = 128 bytes, 8-row groups are 1024 bytes apart. A is MxK K-major; B is [N, K]
    row-major, i.e. also K-major, which is the MMA's untransposed B. Each K=16 step advances
    both descriptors by 32 bytes.
  - Barriers: full[s] (TMA bytes landed), empty[s] (tcgen05.commit: the MMAs that read stage s
    are done), acc_full (tcgen05.commit after the last K block: accumulator complete).
  - Rows past M / N and columns past K come in as zeros from TMA, so no tile multiples are
    needed. Refuses (non-zero, nothing launched) when TMA cannot describe the operands:
    K % 8 != 0 (row pitch must be a multiple of 16 bytes) or A / B not 16-byte aligned.

Build (as the harness does for sm_100a):
  nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -gencode arch=compute_100a,code=sm_100a \
       -cudart shared -I packs/sm_100a/include -o g.so gemm_tcgen05.cu
Expected SASS families: UTCHMMA (tcgen05.mma kind::f16), UTCBAR (tcgen05.commit), LDTM
(tcgen05.ld), UTMALDG (TMA loads).
*/
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "ptxbench_sm100.cuh"

namespace {

namespace pb = ptxbench_sm100;

constexpr int BM = 128;  // tile rows = MMA M (cta_group::1, full 128-lane datapath)
constexpr int BN = 128;  // tile cols = MMA N = fp32 accumulator columns in TMEM
constexpr int BK = 64;   // K per stage: 64 bf16 = one 128-byte swizzle row
constexpr int UMMA_K = 16;
constexpr int kStages = 4;
constexpr int kThreads = 192;
constexpr int kProducerWarp = 4;
constexpr int kMmaWarp = 5;
constexpr uint32_t kTmemCols = 128;  // power of two >= 32, holds 128 x 128 fp32

constexpr int kTileABytes = BM * BK * 2;  // 16 KiB
constexpr int kTileBBytes = BN * BK * 2;  // 16 KiB
constexpr int kStageBytes = kTileABytes + kTileBBytes;
constexpr int kNumBarriers = 2 * kStages + 1;
constexpr int kSmemBytes = 1024 /* alignment slack */ + kStages * kStageBytes +
                           kNumBarriers * 8 + 16 /* TMEM address slot */;

static_assert(BK * 2 == 128, "a stage row must be exactly one 128-byte swizzle row");
static_assert(kTileABytes % 1024 == 0 && kStageBytes % 1024 == 0, "atoms stay 1024-aligned");
static_assert(BM == 128 && BN % 16 == 0 && BN <= 256, "valid cta_group::1 kind::f16 shape");
static_assert(kTmemCols >= BN, "accumulator must fit the allocation");

__global__ void __launch_bounds__(kThreads, 1)
    gemm_tcgen05(const __grid_constant__ CUtensorMap map_a,  // A [M, K], box 64 x 128
                 const __grid_constant__ CUtensorMap map_b,  // B [N, K], box 64 x 128
                 __nv_bfloat16* __restrict__ C,              // [M, N]
                 int M, int N, int K, bool c_vec_ok) {
  extern __shared__ uint8_t smem_raw[];
  // 128B-swizzle atoms must start on 1024-byte shared addresses; round the window up.
  const uint32_t raw = pb::smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  uint8_t* base_ptr = smem_raw + (base - raw);
  const uint32_t bars = base + kStages * kStageBytes;
  const uint32_t slot = bars + kNumBarriers * 8;
  const volatile uint32_t* slot_ptr =
      reinterpret_cast<const volatile uint32_t*>(base_ptr + kStages * kStageBytes + kNumBarriers * 8);
  auto full_bar = [&](int s) { return bars + 8u * s; };
  auto empty_bar = [&](int s) { return bars + 8u * (kStages + s); };
  const uint32_t acc_bar = bars + 8u * (2 * kStages);
  auto stage_a = [&](int s) { return base + static_cast<uint32_t>(s * kStageBytes); };
  auto stage_b = [&](int s) { return stage_a(s) + static_cast<uint32_t>(kTileABytes); };

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int m0 = blockIdx.y * BM;
  const int n0 = blockIdx.x * BN;
  const int num_kb = (K + BK - 1) / BK;  // >= 1: K == 0 never launches

  // ---- setup: barriers (one thread), TMEM allocation (one whole warp) ----
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      pb::mbar_init(full_bar(s), 1);   // the producer's arrive.expect_tx
      pb::mbar_init(empty_bar(s), 1);  // one tcgen05.commit per use
    }
    pb::mbar_init(acc_bar, 1);
    pb::mbar_fence_init();
  }
  if (warp == kProducerWarp && lane == 0) {
    pb::tma_prefetch_map(&map_a);
    pb::tma_prefetch_map(&map_b);
  }
  if (warp == kMmaWarp) {
    __syncwarp();
    pb::tmem_alloc(slot, kTmemCols);
    pb::tmem_relinquish();
  }
  // The allocator wrote the address through the tensor-core side; the fence pair around the
  // block barrier orders that write before every other warp reads it.
  pb::tc_fence_before();
  __syncthreads();
  pb::tc_fence_after();
  const uint32_t tmem_d = *slot_ptr;  // lane 0, first allocated column

  if (warp == kProducerWarp) {
    // ---- TMA producer ----
    if (lane == 0) {
      for (int kb = 0; kb < num_kb; ++kb) {
        const int s = kb % kStages;
        const int round = kb / kStages;
        // Wait until the MMAs of the previous use of this stage have finished reading it.
        if (round > 0) pb::mbar_wait(empty_bar(s), static_cast<uint32_t>((round - 1) & 1));
        pb::mbar_arrive_expect_tx(full_bar(s), kStageBytes);
        pb::tma_load_2d(stage_a(s), &map_a, full_bar(s), kb * BK, m0);
        pb::tma_load_2d(stage_b(s), &map_b, full_bar(s), kb * BK, n0);
      }
    }
    __syncwarp();
  } else if (warp == kMmaWarp) {
    // ---- MMA issuer: a single thread drives the tensor core ----
    if (lane == 0) {
      constexpr uint32_t idesc = pb::make_idesc_bf16_f32(BM, BN);
      for (int kb = 0; kb < num_kb; ++kb) {
        const int s = kb % kStages;
        pb::mbar_wait(full_bar(s), static_cast<uint32_t>((kb / kStages) & 1));
        pb::tc_fence_after();
        const uint64_t a0 = pb::make_sdesc_sw128_kmajor(stage_a(s));
        const uint64_t b0 = pb::make_sdesc_sw128_kmajor(stage_b(s));
#pragma unroll
        for (int k = 0; k < BK / UMMA_K; ++k) {
          const uint32_t off = static_cast<uint32_t>(k * UMMA_K * 2);  // 32 bytes per step
          pb::mma_bf16_ss(tmem_d, pb::sdesc_add_bytes(a0, off), pb::sdesc_add_bytes(b0, off),
                          idesc, (kb | k) != 0);
        }
        // Frees stage s for the producer once the MMAs above have consumed it.
        pb::mma_commit(empty_bar(s));
      }
      // All MMAs of this tile are tracked by this last commit as well.
      pb::mma_commit(acc_bar);
    }
    __syncwarp();
  } else {
    // ---- epilogue: warps 0-3, warp w owns accumulator rows 32w..32w+31 ----
    pb::mbar_wait(acc_bar, 0);
    pb::tc_fence_after();
    const int row = m0 + warp * 32 + lane;
    __nv_bfloat16* crow = C + static_cast<size_t>(row) * static_cast<size_t>(N);
#pragma unroll 1
    for (int c = 0; c < BN; c += 32) {
      uint32_t v[32];
      // Collective over the warp: executed by all 32 lanes even when the row is out of range.
      pb::tmem_ld_32x32b_x32(pb::tmem_addr(tmem_d, static_cast<uint32_t>(warp * 32),
                                           static_cast<uint32_t>(c)),
                             v);
      if (row >= M) continue;
      const int col0 = n0 + c;
      if (c_vec_ok && col0 + 32 <= N) {
        uint32_t packed[16];
#pragma unroll
        for (int j = 0; j < 16; ++j) {
          __nv_bfloat162 h = __floats2bfloat162_rn(__uint_as_float(v[2 * j]),
                                                   __uint_as_float(v[2 * j + 1]));
          packed[j] = *reinterpret_cast<uint32_t*>(&h);
        }
        uint4* dst = reinterpret_cast<uint4*>(crow + col0);  // 16-byte aligned (checked)
#pragma unroll
        for (int q = 0; q < 4; ++q)
          dst[q] = make_uint4(packed[4 * q], packed[4 * q + 1], packed[4 * q + 2],
                              packed[4 * q + 3]);
      } else {
#pragma unroll
        for (int j = 0; j < 32; ++j)
          if (col0 + j < N) crow[col0 + j] = __float2bfloat16_rn(__uint_as_float(v[j]));
      }
    }
  }

  // ---- teardown: every tensor-memory read is done before the owning warp frees it ----
  pb::tc_fence_before();
  __syncthreads();
  if (warp == kMmaWarp) {
    pb::tc_fence_after();
    pb::tmem_dealloc(tmem_d, kTmemCols);
  }
}

// cuTensorMapEncodeTiled through the runtime's driver entry point, so the shared object needs
// no -lcuda at link time.
using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                   const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                   const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiledFn encode_fn() {
  static EncodeTiledFn fn = []() -> EncodeTiledFn {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      return nullptr;
    return reinterpret_cast<EncodeTiledFn>(p);
  }();
  return fn;
}

// Row-major [rows, K] bf16 matrix, box 64 (K) x 128 (rows), 128-byte swizzle, zero fill.
bool make_map(CUtensorMap* map, const __nv_bfloat16* ptr, int rows, int K) {
  EncodeTiledFn encode = encode_fn();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(K), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(K) * 2u};  // bytes between rows
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(BK), static_cast<cuuint32_t>(BM)};
  const cuuint32_t elem_strides[2] = {1u, 1u};
  return encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<__nv_bfloat16*>(ptr), dims,
                strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

static_assert(BM == BN, "one box shape serves both operands");

}  // namespace

extern "C" int run(const __nv_bfloat16* A,  // [M, K]
                   const __nv_bfloat16* B,  // [N, K]
                   __nv_bfloat16* C,        // [M, N]
                   int M, int N, int K, cudaStream_t stream) {
  if (M < 0 || N < 0 || K < 0) return 1;
  if (M == 0 || N == 0) return 0;  // nothing to write
  if (K == 0) {                    // empty sum: C = 0 (bf16 zero is all-zero bits)
    return cudaMemsetAsync(C, 0, static_cast<size_t>(M) * static_cast<size_t>(N) * 2, stream) ==
                   cudaSuccess
               ? 0
               : 2;
  }
  if (K % 8 != 0 || K > INT_MAX - BK) return 3;  // TMA row pitch: multiple of 16 bytes
  if (reinterpret_cast<uintptr_t>(A) % 16 != 0 || reinterpret_cast<uintptr_t>(B) % 16 != 0)
    return 4;
  const long long tiles_m = (M + (long long)BM - 1) / BM;
  const long long tiles_n = (N + (long long)BN - 1) / BN;
  if (tiles_m > 65535 || tiles_n > INT_MAX) return 5;

  CUtensorMap map_a, map_b;
  if (!make_map(&map_a, A, M, K) || !make_map(&map_b, B, N, K)) return 6;

  static bool attr_done = false;
  if (!attr_done) {
    if (cudaFuncSetAttribute(gemm_tcgen05, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kSmemBytes) != cudaSuccess)
      return 7;
    attr_done = true;
  }
  // 16-byte vector stores need every row start 16-byte aligned: C aligned and N % 8 == 0.
  const bool c_vec_ok = (reinterpret_cast<uintptr_t>(C) % 16 == 0) && (N % 8 == 0);
  const dim3 grid(static_cast<unsigned>(tiles_n), static_cast<unsigned>(tiles_m));
  gemm_tcgen05<<<grid, kThreads, kSmemBytes, stream>>>(map_a, map_b, C, M, N, K, c_vec_ok);
  return cudaGetLastError() == cudaSuccess ? 0 : 8;
}
