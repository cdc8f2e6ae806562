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

// ---- ptxbench_sm90.cuh (inlined from the knowledge pack) ----
// ptxbench_sm90.cuh: Hopper (sm_90a) building blocks for TMA + wgmma kernels.
//
// Copy what you need into your single .cu file (this header is not on the build's include
// path). Everything was factored out of a GEMM that passes on an H200 (TMA loads with 128-byte
// swizzle, mbarrier ring, wgmma m64nNk16 bf16 -> fp32 with both operands in shared memory);
// pieces not used by that kernel are marked "(not exercised on hardware here)".
//
// Build: nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a ...  (wgmma and setmaxnreg
// exist only for the "a" target; plain sm_90 rejects them).
//
// Conventions: shared-memory addresses are 32-bit values in the shared window (smem_u32()),
// which is what every PTX instruction below takes. A "K-major" tile is one whose contiguous
// dimension is K, e.g. a row-major A[M,K] tile or a row-major B[N,K] tile (C = A * B^T).
#ifndef PTXBENCH_SM90_CUH
#define PTXBENCH_SM90_CUH

#include <cuda.h>  // CUtensorMap and its enums (types only; no libcuda symbol is linked)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace ptxbench_sm90 {

// =============================================================================================
// Host: 2-D bf16 tensor maps (TMA descriptors)
// =============================================================================================

// Our own typedef of cuTensorMapEncodeTiled's signature, so that neither cudaTypedefs.h nor
// -lcuda is needed: the function is fetched from the driver at run time.
typedef CUresult (*EncodeTiledFn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                  const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                  const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                  CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

enum MapStatus : int {
  kMapOk = 0,
  kMapNoDriverEntry = 1,  // the driver does not export cuTensorMapEncodeTiled (driver < 12.0)
  kMapBadArgs = 2,        // violates a TMA rule checked below; the shape must be refused
  kMapEncodeFailed = 3,   // the driver rejected the map
};

// Driver entry point, looked up once. cudaGetDriverEntryPointByVersion (CUDA >= 12.5) asks for
// the ABI of version 12.0, the one our typedef matches; the older cudaGetDriverEntryPoint is
// deprecated in CUDA 13. Returns nullptr when unavailable.
inline EncodeTiledFn encode_tiled_fn() {
  static EncodeTiledFn fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      p = nullptr;
    return reinterpret_cast<EncodeTiledFn>(p);
  }();
  return fn;
}

// Encodes a map over a row-major bf16 matrix [rows, cols] with row pitch `ld` elements. TMA
// copies boxes of box_rows x box_cols elements; dimension 0 (innermost) is the column.
//  - rules checked: base 16-byte aligned, pitch (ld * 2 bytes) a multiple of 16, 1 <= box dims
//    <= 256, box_cols * 2 bytes a multiple of 16 and, when swizzled, <= the swizzle span
//    (128B swizzle: box_cols <= 64 bf16). Use box_cols * 2 == span for the wgmma layouts below.
//  - out-of-bounds elements of a box read as zero (OOB_FILL_NONE means "fill zeros, not NaN"),
//    and the full box's bytes still count towards complete_tx: tails need no special case.
//  - the map holds the pointer and the shape: re-encode (or look up with all of them as the
//    key, see TensorMap2dCache) whenever any of them changes.
inline int make_tensor_map_2d_bf16(CUtensorMap* map, const void* base, uint64_t rows,
                                   uint64_t cols, uint64_t ld, uint32_t box_rows,
                                   uint32_t box_cols,
                                   CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B) {
  EncodeTiledFn encode = encode_tiled_fn();
  if (encode == nullptr) return kMapNoDriverEntry;
  const uint32_t span = swizzle == CU_TENSOR_MAP_SWIZZLE_128B  ? 128u
                        : swizzle == CU_TENSOR_MAP_SWIZZLE_64B ? 64u
                        : swizzle == CU_TENSOR_MAP_SWIZZLE_32B ? 32u
                                                               : 0u;
  if (base == nullptr || reinterpret_cast<uintptr_t>(base) % 16 != 0 || rows == 0 || cols == 0 ||
      ld < cols || (ld * 2) % 16 != 0 || box_rows == 0 || box_rows > 256 || box_cols == 0 ||
      box_cols > 256 || (box_cols * 2) % 16 != 0 || (span != 0 && box_cols * 2 > span))
    return kMapBadArgs;
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {ld * 2};  // bytes between rows; dimension 0 is implicit
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base),
                            dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? kMapOk : kMapEncodeFailed;
}

// One remembered map, keyed on EVERY input of the encoding (pointer, shape, pitch, box,
// swizzle): the harness hands new buffers and shapes between calls, and a map found by pointer
// alone would read the wrong data. Encoding costs only microseconds of host time; caching is an
// optimisation, never a requirement. Not thread-safe: make it thread_local or guard it.
struct TensorMap2dCache {
  CUtensorMap map;
  const void* base = nullptr;
  uint64_t rows = 0, cols = 0, ld = 0;
  uint32_t box_rows = 0, box_cols = 0;
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  bool valid = false;
  // Returns kMapOk with *out pointing at the map, or the encoder's error (cache left invalid).
  int get(const CUtensorMap** out, const void* b, uint64_t r, uint64_t c, uint64_t l,
          uint32_t br, uint32_t bc, CUtensorMapSwizzle sw = CU_TENSOR_MAP_SWIZZLE_128B) {
    if (!(valid && b == base && r == rows && c == cols && l == ld && br == box_rows &&
          bc == box_cols && sw == swizzle)) {
      valid = false;
      const int st = make_tensor_map_2d_bf16(&map, b, r, c, l, br, bc, sw);
      if (st != kMapOk) return st;
      base = b, rows = r, cols = c, ld = l, box_rows = br, box_cols = bc, swizzle = sw;
      valid = true;
    }
    *out = &map;
    return kMapOk;
  }
};

// Maps reach the kernel as `const __grid_constant__ CUtensorMap` parameters (passed by value,
// 64-byte aligned in parameter space); TMA instructions take the parameter's generic address.

// =============================================================================================
// Device: addresses, fences, warpgroup roles
// =============================================================================================

// Shared-window address of a generic pointer into shared memory.
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Warpgroup = 4 consecutive warps starting at a warp index divisible by 4 (wgmma's unit).
__device__ __forceinline__ int warpgroup_index() { return static_cast<int>(threadIdx.x) / 128; }
__device__ __forceinline__ int thread_in_warpgroup() { return static_cast<int>(threadIdx.x) % 128; }

// True in exactly one lane of the calling warp. All 32 lanes must call it (elect.sync with a
// full mask); cheaper and warp-uniform-friendlier than lane == 0 tests.
__device__ __forceinline__ bool elect_one() {
  uint32_t pred;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "elect.sync _|p, 0xffffffff;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(pred));
  return pred != 0;
}

// setmaxnreg: moves registers between warpgroups at run time. Every thread of the warpgroup
// executes it (.sync.aligned). N is a multiple of 8 in [24, 256]. It only works when the kernel
// has a register cap at entry (__launch_bounds__(threads, 1) or -maxrregcount) and each role is
// one branch of an if/else; otherwise ptxas ignores it (warning C7508). Budget: the sum over
// warpgroups of N * 128 must fit the 64K registers of the SM for the blocks resident on it,
// e.g. 1 producer at 40 + 2 consumers at 232 = 64512 for one block of 384 threads.
template <uint32_t N>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg: multiple of 8 in [24, 256]");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}
template <uint32_t N>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg: multiple of 8 in [24, 256]");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}

// Orders this thread's earlier ordinary (generic-proxy) shared-memory writes before later
// async-proxy accesses (TMA store reading them, wgmma reading an operand you wrote with st.shared
// or stmatrix). Each writing thread fences, THEN the threads synchronise, THEN one issues.
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// =============================================================================================
// Device: mbarrier (64-bit barrier objects in shared memory, 8-byte aligned)
// =============================================================================================
// A phase completes when `count` arrivals have happened AND the transaction count (bytes
// announced by expect_tx, retired by TMA's complete_tx) is back to zero. Phases alternate
// parity 0, 1, 0, ...; waiters name the parity of the phase they wait for. A ring slot used for
// the r-th time (r = 0, 1, ...) completes its phase of parity r & 1.

// Initialise with the number of arrivals per phase. One thread, before any use.
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

// After the initialising thread's mbar_init calls and before the block barrier that publishes
// them: makes the barriers visible to the async proxy (TMA's complete_tx) and, with .cluster,
// to other CTAs of a cluster. The proven kernel issues both fences.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// Plain arrival (count 1) with release semantics: earlier reads/writes of this thread happen
// before any waiter's acquire. Used to hand a ring slot back ("empty" barrier).
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Arrival that also announces `bytes` of incoming TMA data for the current phase. Issue it in
// the same thread, before (or together with) the TMA loads that complete on this barrier; the
// phase cannot complete until those bytes have landed.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

// Spins until the phase of the given parity has completed (acquire: the data it guards, e.g.
// TMA-written tiles, is then visible). try_wait may time out and return false; hence the loop.
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

// Arrive on the barrier at the same shared offset in CTA `cta_rank` of the cluster (e.g. to
// release a slot that a multicast load fills in several CTAs). (not exercised on hardware here)
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t cta_rank) {
  asm volatile(
      "{\n\t.reg .b32 remote;\n\t"
      "mapa.shared::cluster.u32 remote, %0, %1;\n\t"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n\t}" ::"r"(bar),
      "r"(cta_rank)
      : "memory");
}

// Rank of this CTA in its cluster, and a full cluster barrier (all threads of all CTAs call it;
// needed after mbarrier init and before exit when CTAs touch each other's shared memory).
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;"
               ::: "memory");
}

// =============================================================================================
// Device: TMA (cp.async.bulk.tensor), issued by ONE thread
// =============================================================================================

// Hint: pull the descriptor into the TMA unit's cache before the first copy.
__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// Global -> shared copy of the box whose first element is (col x, row y) (element coordinates,
// may run past the tensor: zero fill). dst: shared address, 128-byte aligned, 1024-byte aligned
// for 128B swizzle (the swizzle pattern repeats every 8 rows of 128 bytes and wgmma assumes the
// pattern starts at an aligned atom). Completion: box bytes retired on `bar` via complete_tx.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                            int x, int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}

// Same box written to the same shared offset (and signalled on the same barrier offset) in
// every CTA of the cluster whose bit is set in cta_mask. Each receiving CTA must expect_tx the
// box bytes on its own barrier. Needs a cluster launch. (not exercised on hardware here)
__device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const CUtensorMap* map,
                                                      uint32_t bar, int x, int y,
                                                      uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar), "h"(cta_mask)
      : "memory");
}

// Shared -> global copy of a box at (col x, row y); elements past the tensor's bounds are NOT
// written (TMA clips), so tails are safe. The source must be laid out as the map's swizzle says
// and be made visible first: writers fence_proxy_async_smem(), sync, then one thread stores.
// (not exercised on hardware here)
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, uint32_t src, int x, int y) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(x), "r"(y), "r"(src)
               : "memory");
}
// Closes the group of bulk stores issued so far by this thread.
__device__ __forceinline__ void tma_store_commit() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// Waits until at most N groups still READ their shared source (then it may be overwritten).
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
// Waits until at most N groups are incomplete, their global writes included.
template <int N>
__device__ __forceinline__ void tma_store_wait_all() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

// =============================================================================================
// Device: wgmma (warpgroup MMA), issued by all 128 threads of a warpgroup, uniformly
// =============================================================================================

// Shared-memory matrix descriptor (64 bits):
//   bits  0-13  start address >> 4      bits 16-29  leading byte offset (LBO) >> 4
//   bits 32-45  stride byte offset (SBO) >> 4
//   bits 49-51  base offset (0 when the swizzle atoms are 1024-byte aligned)
//   bits 62-63  swizzle: 0 none, 1 = 128B, 2 = 64B, 3 = 32B
// The address field holds 14 bits of addr >> 4, i.e. the low 18 bits of the shared address
// (shared memory is < 256 KiB, so this is exact).
__device__ __forceinline__ uint64_t make_smem_desc(uint32_t addr, uint32_t lbo_bytes,
                                                   uint32_t sbo_bytes, uint32_t swizzle_mode) {
  uint64_t d = 0;
  d |= static_cast<uint64_t>((addr & 0x3FFFFu) >> 4);
  d |= static_cast<uint64_t>((lbo_bytes & 0x3FFFFu) >> 4) << 16;
  d |= static_cast<uint64_t>((sbo_bytes & 0x3FFFFu) >> 4) << 32;
  d |= static_cast<uint64_t>(swizzle_mode & 3u) << 62;
  return d;
}

// K-major bf16 operand as TMA writes it with CU_TENSOR_MAP_SWIZZLE_128B and a box 64 elements
// wide: each row is 64 bf16 = 128 bytes, 8 rows (1024 bytes) form one swizzle atom, atoms follow
// each other down the rows, so SBO = 1024 (row group to row group); LBO is ignored for swizzled
// K-major layouts (set to 16). `addr` = tile base (1024-aligned) + row0 * 128 + k_elem * 2:
//   - k16 slice kk of the 64-wide tile: add kk * 32 bytes (stays inside the atom; the hardware
//     applies the swizzle on the full address, which is why the base must be 1024-aligned);
//   - 64-row half h of a 128-row tile (one consumer warpgroup each): add h * 64 * 128 bytes.
// K wider than 64 per stage: load separate 64-wide boxes into separate [rows x 64] panels.
__device__ __forceinline__ uint64_t desc_kmajor_sw128(uint32_t addr) {
  return make_smem_desc(addr, 16, 1024, 1);
}

// Before the first wgmma of a batch: orders earlier register writes of the accumulator (e.g. the
// zeroing) and of A fragments before the async MMA reads them. wgmmas that chain into the same
// accumulator need no fence between each other.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
// Closes the batch of wgmmas issued since the last commit into one group.
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
// Waits until at most N committed groups are pending. N = 0 before touching the accumulator
// (epilogue); N = 1 keeps one group in flight while the slot of the previous one is released.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  static_assert(N >= 0 && N <= 7, "wgmma.wait_group takes 0..7");
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Stops the compiler from moving accumulator accesses across an async MMA window: pass each
// accumulator register through an empty asm after wgmma_wait when you read it right away.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }

// D(64 x N, fp32 registers) (+)= A(64 x 16, smem desc a) * B(16 x N, smem desc b)^T-view, with
// A and B both K-major bf16 in shared memory (imm-trans-a = imm-trans-b = 0: B given as [N, K]
// rows, as in C = A * B^T). scale_d = 0 overwrites D (D = A*B), 1 accumulates (D += A*B).
// Accumulator: N/2 floats per thread, layout in acc_row()/acc_col() below.
// The two trailing 1s are imm-scale-a/b (+1, no negation). MN-major operands: set the trans
// immediates to 1 (bf16 allows it) and build the descriptor for that layout.
// Register-sourced A (not exercised here): "wgmma...bf16.bf16 {d..}, {a0,a1,a2,a3}, desc_b,
// p, 1, 1, trans-b;" with 4 x .b32 holding 8 bf16 per thread in the per-warp layout of
// mma.m16n8k16's A fragment, warp w of the warpgroup owning rows 16w..16w+15; no trans-a.
#define PXB_F4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define PXB_F16(i) PXB_F4(i), PXB_F4(i + 4), PXB_F4(i + 8), PXB_F4(i + 12)

__device__ __forceinline__ void wgmma_m64n64k16_bf16(float (&d)[32], uint64_t a, uint64_t b,
                                                     int scale_d = 1) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %34, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31},"
      " %32, %33, p, 1, 1, 0, 0;\n\t}"
      : PXB_F16(0), PXB_F16(16)
      : "l"(a), "l"(b), "r"(scale_d)
      : "memory");
}

__device__ __forceinline__ void wgmma_m64n128k16_bf16(float (&d)[64], uint64_t a, uint64_t b,
                                                      int scale_d = 1) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %66, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
      "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
      "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63},"
      " %64, %65, p, 1, 1, 0, 0;\n\t}"
      : PXB_F16(0), PXB_F16(16), PXB_F16(32), PXB_F16(48)
      : "l"(a), "l"(b), "r"(scale_d)
      : "memory");
}

__device__ __forceinline__ void wgmma_m64n256k16_bf16(float (&d)[128], uint64_t a, uint64_t b,
                                                      int scale_d = 1) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %130, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
      "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
      "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"
      "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,"
      "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,"
      "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,"
      "%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127},"
      " %128, %129, p, 1, 1, 0, 0;\n\t}"
      : PXB_F16(0), PXB_F16(16), PXB_F16(32), PXB_F16(48), PXB_F16(64), PXB_F16(80),
        PXB_F16(96), PXB_F16(112)
      : "l"(a), "l"(b), "r"(scale_d)
      : "memory");
}

#undef PXB_F16
#undef PXB_F4

// Picks the instruction for a compile-time N (64, 128 or 256): float acc[N / 2].
template <int N>
__device__ __forceinline__ void wgmma_m64k16_bf16(float (&d)[N / 2], uint64_t a, uint64_t b,
                                                  int scale_d = 1) {
  static_assert(N == 64 || N == 128 || N == 256, "wrappers exist for N = 64, 128, 256");
  if constexpr (N == 64) wgmma_m64n64k16_bf16(d, a, b, scale_d);
  else if constexpr (N == 128) wgmma_m64n128k16_bf16(d, a, b, scale_d);
  else wgmma_m64n256k16_bf16(d, a, b, scale_d);
}

// Accumulator fragment of m64nNk16 (fp32), for thread t = thread_in_warpgroup() and register i
// in [0, N/2): warp w = t / 32 owns rows 16w..16w+15; within it, lane l holds row l/4 (+8 for
// the odd pairs) and two adjacent columns. Registers come in groups of 4 per 8 columns:
//   i = 4j + 0, 4j + 1 -> row 16w + l/4,     cols 8j + 2(l%4) + {0, 1}
//   i = 4j + 2, 4j + 3 -> row 16w + l/4 + 8, cols 8j + 2(l%4) + {0, 1}
// So d[i], d[i+1] for even i are adjacent columns: one bf16x2 (4-byte) store.
__device__ __forceinline__ int acc_row(int t, int i) {
  return 16 * (t / 32) + (t % 32) / 4 + 8 * ((i >> 1) & 1);
}
__device__ __forceinline__ int acc_col(int t, int i) {
  return 8 * (i >> 2) + 2 * (t % 4) + (i & 1);
}

}  // namespace ptxbench_sm90

#endif  // PTXBENCH_SM90_CUH
// ---- end of ptxbench_sm90.cuh ----

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
