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
#pragma once

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
