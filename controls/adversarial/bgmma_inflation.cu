/*
Adversarial control: bgmma_inflation   (issue 34: credit for tensor-core FLOPs that are not
the task's)

Attack. The tag needs at least half of the task's FLOPs in GMMA instructions, counted from
each executed opcode's shape (2 x m x n x k, sass.cc GmmaFlops), whatever its input type:
one single-bit BGMMA.64x8x256 is credited 2 x 64 x 8 x 256 = 262,144 FLOPs, as much as sixteen
bf16 HGMMA.64x8x16. This candidate does all of its GEMM on the tensor cores the Ampere way,
mma.sync.m16n8k16 bf16 (controls/gemm/mma_sync.cu, unchanged: HMMA, no wgmma, no TMA), and
launches, in every call, a second kernel (bgmma_pad) whose warpgroups run
wgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc (SASS BGMMA.64x8x256.AND.POPC) on
a zeroed 4 KiB of shared memory: ceil(1.5 x 2*M*N*K / 262,144) of them per call, spread over
up to 132 blocks, the results never used. The GMMA FLOP count then reads ~150-200% of the
task's FLOPs, and the witness sees the tensor pipes busy (the mma.sync GEMM itself keeps
them busy). No bf16 wgmma anywhere.
Task gemm_n128_k2048, M=93: 279 BGMMAs a call (132 blocks x 3), microseconds.

Old harness: not run against it. By the code at de49d52: gmma in the SASS and executed (the
paper's tag H), tensor-core work fraction ~2.1 (>= 0.5), witness tensor activity from the
mma.sync GEMM: PASSED with arch_tag H.
Now: only bf16 tensor-core instructions (HGMMA with BF16 inputs) count toward the work
fraction: 0 here. PASSED, arch_tag "" (the work is correct and timed honestly),
upstream_arch_tag H (the paper's rule: a GMMA instruction is in the SASS and executed).
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

namespace {

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

__global__ void __launch_bounds__(kThreads)
    gemm_mma_sync(const __nv_bfloat16* __restrict__ A_,  // [M, K]
                  const __nv_bfloat16* __restrict__ B_,  // [N, K]
                  __nv_bfloat16* __restrict__ C,         // [M, N]
                  int M, int N, int K, int tiles_n) {
  __shared__ __align__(16) uint16_t As[2][BM][kLd];
  __shared__ __align__(16) uint16_t Bs[2][BN][kLd];

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
    for (int kk = 0; kk < BK; kk += 16) {
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


// ---- the padding: single-bit wgmma on zeros, its results never used ----------------------------

__device__ __forceinline__ uint64_t desc_no_swizzle(uint32_t saddr) {
  // start >> 4 (bits 0-13), leading byte offset 128 >> 4 (16-29), stride byte offset 256 >> 4
  // (32-45), no swizzle: an operand of 8-row x 16-byte core matrices inside 2 KiB.
  return static_cast<uint64_t>((saddr & 0x3FFFFu) >> 4) | (static_cast<uint64_t>(128u >> 4) << 16) |
         (static_cast<uint64_t>(256u >> 4) << 32);
}

__global__ void __launch_bounds__(128) bgmma_pad(int iterations, int* sink) {
  __shared__ __align__(1024) uint32_t junk[1024];  // A: bytes 0-2047, B: 2048-2303
  for (int i = threadIdx.x; i < 1024; i += 128) junk[i] = 0u;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(junk));
  const uint64_t da = desc_no_swizzle(base), db = desc_no_swizzle(base + 2048u);
  uint32_t d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  for (int it = 0; it < iterations; ++it) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "setp.ne.b32 p, 1, 0;\n\t"
        "wgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc "
        "{%0, %1, %2, %3}, %4, %5, p;\n\t}"
        : "+r"(d0), "+r"(d1), "+r"(d2), "+r"(d3)
        : "l"(da), "l"(db)
        : "memory");
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  }
  if ((d0 | d1 | d2 | d3) == 0xFFFFFFFFu) *sink = 1;  // never: zeros popcount to zero
}

__device__ int g_sink;

}  // namespace

extern "C" int run(const __nv_bfloat16* A,  // [M, K]
                   const __nv_bfloat16* B,  // [N, K]
                   __nv_bfloat16* C,        // [M, N]
                   int M, int N, int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  if (K % 8 != 0 || K > INT_MAX - BK) return 2;
  if (reinterpret_cast<uintptr_t>(A) % 16 != 0 || reinterpret_cast<uintptr_t>(B) % 16 != 0)
    return 3;
  const long long tiles_m = (M + (long long)BM - 1) / BM;
  const long long tiles_n = (N + (long long)BN - 1) / BN;
  if (tiles_m * tiles_n > INT_MAX) return 4;
  const dim3 grid(static_cast<unsigned>(tiles_m * tiles_n)), block(kThreads);
  gemm_mma_sync<<<grid, block, 0, stream>>>(A, B, C, M, N, K, static_cast<int>(tiles_n));
  // 1.5x the task's FLOPs as credited to BGMMA.64x8x256 (262,144 each).
  const double bgmmas = 1.5 * 2.0 * M * N * (double)K / (2.0 * 64 * 8 * 256);
  if (bgmmas > 132.0 * INT_MAX) return 6;
  const int blocks = bgmmas < 132 ? static_cast<int>(bgmmas) + 1 : 132;
  const int iterations = static_cast<int>(bgmmas / blocks) + 1;
  int* sink = nullptr;
  if (cudaGetSymbolAddress(reinterpret_cast<void**>(&sink), g_sink) != cudaSuccess) return 7;
  bgmma_pad<<<blocks, 128, 0, stream>>>(iterations, sink);
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
