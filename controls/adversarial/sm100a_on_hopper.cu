/*
Adversarial control: sm100a_on_hopper   (honest, but wrongly judged: a Blackwell candidate
evaluated on a Hopper GPU)

Not an attack. The knowledge pack's Blackwell GEMM (packs/sm_100a/examples/gemm_tcgen05.cu,
tcgen05.mma from TMA-loaded shared memory into tensor memory) with its helper header inlined,
so that the file is a self-contained candidate. Built with --arch sm_100a it holds only
sm_100a code, which an H200 (sm_90) cannot load.

Old harness: RUNTIME_ERROR (no kernel image for the device: the candidate was blamed).
Now: the evaluator checks the target architecture against the GPU before running anything ->
INFRA_ERROR arch_unavailable (the harness was asked for something this machine cannot do).
This file compiles for sm_100a only (nvcc -gencode arch=compute_100a,code=sm_100a); it is
not meant for sm_90a. The pack's own header comment follows.
*/
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

// ---- ptxbench_sm100.cuh (inlined from packs/sm_100a/include, as `ptxbench pack inline` does) ----
// ptxbench_sm100.cuh: small inline-PTX wrappers for Blackwell (sm_100a) tcgen05 kernels.
//
// Status: every wrapper compiles for -gencode arch=compute_100a,code=sm_100a and the
// instruction forms were taken from the PTX ISA (tcgen05 chapter, PTX 8.6 and later). None of
// it has been executed on Blackwell hardware by this project. Bit layouts below are written
// from the ISA tables; where a field is easy to get wrong the comment says which table it is.
//
// Scope: one CTA (cta_group::1), bf16 x bf16 -> fp32 kind::f16 MMA with both operands in
// shared memory, K-major tiles written by TMA with 128-byte swizzle. Everything lives in
// namespace ptxbench_sm100; nothing here allocates, launches or needs -lcuda.

#include <cuda.h>  // CUtensorMap (type only)
#include <cstdint>

namespace ptxbench_sm100 {

// ---- addresses ---------------------------------------------------------------------------

// 32-bit shared-window address of a generic pointer into __shared__ memory. Every PTX
// operand below that names shared memory takes this form, not a generic pointer.
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Tensor-memory address: lane in bits 31..16, column in bits 15..0 (PTX ISA, "Tensor Memory
// Addressing"). The base returned by tcgen05.alloc has lane 0 and some column offset, so
// adding (lane << 16) and a column count is how a warp names its slice.
__host__ __device__ constexpr uint32_t tmem_addr(uint32_t base, uint32_t lane, uint32_t col) {
  return base + (lane << 16) + col;
}

// ---- mbarrier ----------------------------------------------------------------------------

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t expected_arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(expected_arrivals)
               : "memory");
}

// After initialising barriers (one thread) and before the block-wide sync: makes the init
// visible to other threads and to the async proxy (TMA engine, tensor core) that will arrive
// on them. Without it the first complete_tx can race the init.
__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// One arrival plus "expect this many bytes": the phase completes when the arrival count is
// reached and the TMA loads that name this barrier have delivered all the bytes.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Spins until the phase with parity `parity` has completed. A barrier starts in phase 0, so
// the first wait of a consumer uses parity 0 and flips it each time it wraps the ring.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
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

// ---- TMA (same cp.async.bulk.tensor family as Hopper) -------------------------------------

__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// Copies the box whose first element is (x = innermost coordinate, y) into shared memory at
// `dst` and signals `bar` with the byte count. Out-of-bounds elements arrive as zeros and
// still count toward the bytes, so expect_tx is always the full box size.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                            int x, int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}

// ---- fences ------------------------------------------------------------------------------

// tcgen05 operations are asynchronous and are not ordered by bar.sync or mbarrier on their
// own. Put before_thread_sync on the side that finished using tensor memory (before the
// arrive / __syncthreads) and after_thread_sync on the side that is about to use it (after
// the wait / __syncthreads). tcgen05.commit already implies the "before" half.
__device__ __forceinline__ void tc_fence_before() {
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
}
__device__ __forceinline__ void tc_fence_after() {
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
}

// Ordinary st.shared writes are in the generic proxy; tcgen05.mma and TMA stores read shared
// memory through the async proxy. Call this after writing an operand tile by hand and before
// the sync that hands it to the MMA thread.
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// ---- tensor memory allocation (one full warp executes each of these) ----------------------

// Allocates `ncols` columns x 128 lanes (ncols a power of two in [32, 512]) and writes the
// base address to the shared-memory word at `slot`. Blocks while the columns are not free.
__device__ __forceinline__ void tmem_alloc(uint32_t slot, uint32_t ncols) {
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(slot),
               "r"(ncols)
               : "memory");
}

// Promises this CTA will not allocate again, so blocked allocators elsewhere on the SM may
// proceed. Call once right after the (last) allocation.
__device__ __forceinline__ void tmem_relinquish() {
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
}

// Every allocation must be released before the kernel exits, by a full warp, with the same
// column count that was allocated.
__device__ __forceinline__ void tmem_dealloc(uint32_t base, uint32_t ncols) {
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" ::"r"(base), "r"(ncols)
               : "memory");
}

// ---- descriptors -------------------------------------------------------------------------

// Instruction descriptor for kind::f16, dense, bf16 A and B, fp32 D (PTX ISA table
// "Instruction descriptor format for .kind::tf32, .kind::f16, .kind::f8f6f4 and .kind::i8"):
//   bits 4-5  dtype   : 1 = F32
//   bits 7-9  atype   : 1 = BF16        bits 10-12 btype : 1 = BF16
//   bit  15   transpose A (0 = K-major) bit  16    transpose B (0 = K-major)
//   bits 17-22 N >> 3                   bits 24-28 M >> 4   (bit 23 is reserved)
// Sparsity, saturate, negate and max-shift fields stay 0. Valid shapes for cta_group::1:
// M = 64 or 128, N a multiple of 8 in [8, 256] (multiple of 16 is the safe choice for M=128).
__host__ __device__ constexpr uint32_t make_idesc_bf16_f32(uint32_t M, uint32_t N,
                                                           bool a_mn_major = false,
                                                           bool b_mn_major = false) {
  return (1u << 4) | (1u << 7) | (1u << 10) | (static_cast<uint32_t>(a_mn_major) << 15) |
         (static_cast<uint32_t>(b_mn_major) << 16) | ((N >> 3) << 17) | ((M >> 4) << 24);
}

// Shared-memory matrix descriptor, sm_100 layout (PTX ISA "Shared memory descriptor"):
//   bits 0-13  start address >> 4      bits 16-29 leading-dim byte offset >> 4
//   bits 32-45 stride-dim byte offset >> 4
//   bits 46-48 fixed 0b001  <- new on sm_100; Hopper's wgmma descriptor has no such field
//   bits 49-51 base offset (0 when swizzle atoms are 1024-byte aligned)
//   bit  52    LBO mode (0 = relative offset)
//   bits 61-63 swizzle: 0 none, 1 128B with 32B atom, 2 128B, 4 64B, 6 32B
// For a K-major tile stored as rows of exactly 128 bytes (64 bf16) with the 128B swizzle
// that TMA's CU_TENSOR_MAP_SWIZZLE_128B produces: 8-row groups are 1024 bytes apart
// (SBO = 1024); LBO is ignored for swizzled K-major layouts (we write 16, i.e. encoded 1).
__host__ __device__ constexpr uint64_t make_sdesc_sw128_kmajor(uint32_t saddr) {
  return static_cast<uint64_t>((saddr & 0x3FFFFu) >> 4)    // start address
         | (static_cast<uint64_t>(16u >> 4) << 16)         // LBO (unused here)
         | (static_cast<uint64_t>(1024u >> 4) << 32)       // SBO
         | (static_cast<uint64_t>(1u) << 46)               // fixed 0b001 (sm_100)
         | (static_cast<uint64_t>(2u) << 61);              // 128-byte swizzle
}

// Advances a descriptor along K inside one 128-byte swizzle row: one bf16 K=16 step is 32
// bytes, i.e. +2 in the start-address field. The hardware applies the swizzle to the
// computed address, so a plain offset inside a 1024-byte-aligned atom stays correct. (No
// carry check: keep the start field below 2^14, i.e. shared addresses below 256 KiB.)
__host__ __device__ constexpr uint64_t sdesc_add_bytes(uint64_t desc, uint32_t bytes) {
  return desc + static_cast<uint64_t>(bytes >> 4);
}

// ---- MMA and commit (ONE thread issues these; not a warp or warpgroup collective) --------

// D[tmem] (=|+=) A[smem] * B[smem]^T-as-described, shape from idesc. accumulate = false
// overwrites D (first K step), true adds to it. Consecutive MMAs from the same thread into
// the same accumulator are ordered by hardware; no fence between them.
__device__ __forceinline__ void mma_bf16_ss(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc,
                                            uint32_t idesc, bool accumulate) {
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "setp.ne.b32 p, %4, 0;\n\t"
      "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n\t}" ::"r"(d_tmem),
      "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(static_cast<uint32_t>(accumulate))
      : "memory");
}

// Arrives once on `bar` when every tcgen05.mma / cp issued so far BY THIS THREAD has
// completed (their shared-memory reads and tensor-memory writes are done). Must be executed
// by the same thread that issued the MMAs. Initialise `bar` with an arrival count of 1.
__device__ __forceinline__ void mma_commit(uint32_t bar) {
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" ::"r"(
                   bar)
               : "memory");
}

// ---- tensor memory -> registers (warp collective, .sync.aligned) --------------------------

// 32x32b shape: the warp reads 32 lanes; thread t gets lane (lane field of taddr) + t and
// NCOLS consecutive 32-bit columns starting at the column field, one register per column.
// A warp may only touch lanes 32*(warp_id % 4) .. +31. The wait::ld is inside the same asm
// statement on purpose: the registers are undefined until it retires, and a separate asm
// would let the compiler schedule uses of the outputs before the wait.
__device__ __forceinline__ void tmem_ld_32x32b_x8(uint32_t taddr, uint32_t (&r)[8]) {
  asm volatile(
      "tcgen05.ld.sync.aligned.32x32b.x8.b32 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8];\n\t"
      "tcgen05.wait::ld.sync.aligned;"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]),
        "=r"(r[7])
      : "r"(taddr)
      : "memory");
}

__device__ __forceinline__ void tmem_ld_32x32b_x32(uint32_t taddr, uint32_t (&r)[32]) {
  asm volatile(
      "tcgen05.ld.sync.aligned.32x32b.x32.b32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "[%32];\n\t"
      "tcgen05.wait::ld.sync.aligned;"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]),
        "=r"(r[7]), "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]),
        "=r"(r[13]), "=r"(r[14]), "=r"(r[15]), "=r"(r[16]), "=r"(r[17]), "=r"(r[18]),
        "=r"(r[19]), "=r"(r[20]), "=r"(r[21]), "=r"(r[22]), "=r"(r[23]), "=r"(r[24]),
        "=r"(r[25]), "=r"(r[26]), "=r"(r[27]), "=r"(r[28]), "=r"(r[29]), "=r"(r[30]),
        "=r"(r[31])
      : "r"(taddr)
      : "memory");
}

// Registers -> tensor memory, 32x32b x8, followed by wait::st so the caller may immediately
// fence and hand the columns to an MMA.
__device__ __forceinline__ void tmem_st_32x32b_x8(uint32_t taddr, const uint32_t (&r)[8]) {
  asm volatile(
      "tcgen05.st.sync.aligned.32x32b.x8.b32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8};\n\t"
      "tcgen05.wait::st.sync.aligned;" ::"r"(taddr),
      "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]), "r"(r[4]), "r"(r[5]), "r"(r[6]), "r"(r[7])
      : "memory");
}

}  // namespace ptxbench_sm100
// ---- end of ptxbench_sm100.cuh ----

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
