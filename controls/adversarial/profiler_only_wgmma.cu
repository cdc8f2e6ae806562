/*
Adversarial control: profiler_only_wgmma   (issue class 4: a tag earned only under ncu)

Attack. The architecture tag comes from one profiled call under Nsight Compute (ncu), and
ncu cannot hide from the process it profiles: it injects its library through
CUDA_INJECTION64_PATH (and NV_* variables) and that library shows in /proc/self/maps
(".../nsight-compute/.../libInterceptorInjectionTarget.so", "libTreeLauncher..."). run()
looks for those signs (only CUDA headers are included; the few libc calls are declared by
hand). Under the profiler it runs a real Hopper GEMM (wgmma m64n128k16 from TMA-loaded,
128B-swizzled shared memory: the kernel of controls/gemm/wgmma_tma.cu); everywhere else it
runs a plain CUDA-core GEMM (64x64 tiles, 4x4 outputs per thread, FFMA only). Both are
correct, so every output the harness compares is right.

Old harness: PASSED with tag H (GMMA in the SASS, executed in the profiled call), although
the timed calls never touched a tensor core.
Now: the kernels launched in the profiled call (gemm_wgmma_tma, 384 threads, 132160 bytes of
dynamic shared memory) differ from those of the correctness, memcheck and timed calls
(cc_gemm, 256 threads) -> RULE_VIOLATION kernels_differ. (Had it not been caught there, the
witness would still find no tensor-pipe activity in the timed phase: no tag.)
*/
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

// libc, declared by hand: the CUDA headers bring getenv and strstr, not the file calls.
extern "C" int open(const char* path, int flags, ...);
extern "C" long read(int fd, void* buf, unsigned long count);
extern "C" int close(int fd);
extern "C" char** environ;

namespace {

// ---- is ncu watching? -------------------------------------------------------------------

bool contains(const char* hay, const char* needle) { return hay && strstr(hay, needle); }

bool under_profiler() {
  if (const char* inj = getenv("CUDA_INJECTION64_PATH"))
    if (contains(inj, "nsight") || contains(inj, "Interceptor") || contains(inj, "TreeLauncher") ||
        contains(inj, "ncu"))
      return true;
  for (char** e = environ; e && *e; ++e)
    if (strncmp(*e, "NV_COMPUTE_PROFILER", 19) == 0 || strncmp(*e, "NV_NSIGHT", 9) == 0 ||
        strncmp(*e, "NSIGHT_", 7) == 0 || strncmp(*e, "NV_TPS_", 7) == 0)
      return true;
  static char maps[1 << 20];
  int fd = open("/proc/self/maps", 0 /* O_RDONLY */);
  if (fd < 0) return false;
  long n = 0, got;
  while (n < (long)sizeof maps - 1 && (got = read(fd, maps + n, sizeof maps - 1 - n)) > 0) n += got;
  close(fd);
  maps[n] = 0;
  return contains(maps, "nsight-compute") || contains(maps, "InterceptorInjection") ||
         contains(maps, "TreeLauncher") || contains(maps, "/ncu/");
}

// ---- what runs when nobody is profiling: CUDA cores -----------------------------------------

__global__ void __launch_bounds__(256)
    cc_gemm(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
            __nv_bfloat16* __restrict__ C, int M, int N, int K) {
  __shared__ float As[16][65], Bs[16][65];  // [k][row], padded
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  const int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int i = threadIdx.x; i < 64 * 16; i += 256) {
      const int r = i >> 4, k = i & 15, gk = k0 + k;
      As[k][r] = (m0 + r < M && gk < K) ? __bfloat162float(A[(size_t)(m0 + r) * K + gk]) : 0.f;
      Bs[k][r] = (n0 + r < N && gk < K) ? __bfloat162float(B[(size_t)(n0 + r) * K + gk]) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 16; ++k)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          acc[i][j] = fmaf(As[k][ty + 16 * i], Bs[k][tx + 16 * j], acc[i][j]);
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const int m = m0 + ty + 16 * i;
    if (m >= M) continue;
    for (int j = 0; j < 4; ++j) {
      const int n = n0 + tx + 16 * j;
      if (n < N) C[(size_t)m * N + n] = __float2bfloat16_rn(acc[i][j]);
    }
  }
}

// ---- a real Hopper GEMM (the kernel of controls/gemm/wgmma_tma.cu, comments trimmed) ----
// 128x128 block tiles, BK = 64, 4 TMA stages (128B swizzle), full/empty mbarriers, one
// producer thread, two consumer warpgroups each issuing wgmma m64n128k16 from smem.

constexpr int WG_BM = 128, WG_BN = 128, WG_BK = 64, WG_STAGES = 4;
constexpr int WG_THREADS = 384, WG_CONSUMER_WARPS = 8;
constexpr int WG_TILE_A = WG_BM * WG_BK * 2, WG_TILE_B = WG_BN * WG_BK * 2;
constexpr int WG_STAGE = WG_TILE_A + WG_TILE_B;
constexpr int WG_SMEM = 1024 + WG_STAGES * WG_STAGE + 2 * WG_STAGES * 8;

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
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
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                            int x, int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}
// K-major operand, 128B swizzle: start >> 4, LBO 16 (unused), SBO 1024, swizzle mode 1.
__device__ __forceinline__ uint64_t desc_sw128(uint32_t saddr) {
  return static_cast<uint64_t>((saddr & 0x3FFFFu) >> 4) | (static_cast<uint64_t>(1) << 16) |
         (static_cast<uint64_t>(64) << 32) | (static_cast<uint64_t>(1) << 62);
}
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t a, uint64_t b) {
  asm volatile(
      "{\n\t.reg .pred pd;\n\t"
      "setp.ne.b32 pd, 1, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
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

__global__ void __launch_bounds__(WG_THREADS, 1)
    gemm_wgmma_tma(const __grid_constant__ CUtensorMap map_a,
                   const __grid_constant__ CUtensorMap map_b, __nv_bfloat16* __restrict__ C, int M,
                   int N, int K, int tiles_n) {
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t bars = base + WG_STAGES * WG_STAGE;
  auto full_bar = [&](int s) { return bars + 8u * s; };
  auto empty_bar = [&](int s) { return bars + 8u * (WG_STAGES + s); };
  auto stage_a = [&](int s) { return base + static_cast<uint32_t>(s * WG_STAGE); };
  auto stage_b = [&](int s) { return base + static_cast<uint32_t>(s * WG_STAGE + WG_TILE_A); };
  const int m0 = (blockIdx.x / tiles_n) * WG_BM, n0 = (blockIdx.x % tiles_n) * WG_BN;
  const int num_k_tiles = (K + WG_BK - 1) / WG_BK;
  if (threadIdx.x == 0) {
    for (int s = 0; s < WG_STAGES; ++s) {
      mbar_init(full_bar(s), 1);
      mbar_init(empty_bar(s), WG_CONSUMER_WARPS);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  const int warpgroup = threadIdx.x / 128;
  if (warpgroup == 0) {  // producer
    if (threadIdx.x == 0)
      for (int t = 0; t < num_k_tiles; ++t) {
        const int s = t % WG_STAGES, round = t / WG_STAGES;
        if (round > 0) mbar_wait(empty_bar(s), static_cast<uint32_t>((round - 1) & 1));
        mbar_expect_tx(full_bar(s), WG_STAGE);
        tma_load_2d(stage_a(s), &map_a, full_bar(s), t * WG_BK, m0);
        tma_load_2d(stage_b(s), &map_b, full_bar(s), t * WG_BK, n0);
      }
    return;
  }
  const int cw = warpgroup - 1, warp_in_wg = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  float acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = 0.0f;
  for (int t = 0; t < num_k_tiles; ++t) {
    const int s = t % WG_STAGES;
    mbar_wait(full_bar(s), static_cast<uint32_t>((t / WG_STAGES) & 1));
    const uint32_t a_base = stage_a(s) + static_cast<uint32_t>(cw * 64 * WG_BK * 2);
    const uint32_t b_base = stage_b(s);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < WG_BK / 16; ++kk)
      wgmma_m64n128k16(acc, desc_sw128(a_base + kk * 32), desc_sw128(b_base + kk * 32));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    __syncwarp();
    if (lane == 0) mbar_arrive(empty_bar(s));
  }
  // Accumulator fragment of m64nNk16: rows 16w + lane/4 (+8), columns 8j + 2*(lane%4) + {0,1}.
  const bool pair_ok = (N % 2) == 0;
  const int row0 = m0 + cw * 64 + warp_in_wg * 16 + lane / 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = row0 + 8 * h;
    if (row >= M) continue;
    __nv_bfloat16* crow = C + static_cast<size_t>(row) * static_cast<size_t>(N);
#pragma unroll
    for (int j = 0; j < WG_BN / 8; ++j) {
      const int col = n0 + 8 * j + 2 * (lane % 4);
      const float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
      if (pair_ok && col + 1 < N) {
        *reinterpret_cast<__nv_bfloat162*>(crow + col) = __floats2bfloat162_rn(v0, v1);
      } else {
        if (col < N) crow[col] = __float2bfloat16_rn(v0);
        if (col + 1 < N) crow[col + 1] = __float2bfloat16_rn(v1);
      }
    }
  }
}

bool make_map(CUtensorMap* map, const __nv_bfloat16* ptr, int rows, int K) {
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(K), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(K) * 2u};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(WG_BK), static_cast<cuuint32_t>(WG_BM)};
  const cuuint32_t elem_strides[2] = {1u, 1u};
  return cuTensorMapEncodeTiled(
             map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<__nv_bfloat16*>(ptr), dims,
             strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Launches the wgmma GEMM on `stream`; non-zero when TMA cannot describe the operands.
int launch_wgmma_gemm(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M,
                      int N, int K, cudaStream_t stream) {
  if (K % 8 != 0 || K > 2147483647 - WG_BK) return 2;
  if (reinterpret_cast<uintptr_t>(A) % 16 != 0 || reinterpret_cast<uintptr_t>(B) % 16 != 0)
    return 3;
  const long long tiles_m = (M + (long long)WG_BM - 1) / WG_BM;
  const long long tiles_n = (N + (long long)WG_BN - 1) / WG_BN;
  if (tiles_m * tiles_n > 2147483647LL) return 4;
  CUtensorMap map_a, map_b;
  if (!make_map(&map_a, A, M, K) || !make_map(&map_b, B, N, K)) return 5;
  if (cudaFuncSetAttribute(gemm_wgmma_tma, cudaFuncAttributeMaxDynamicSharedMemorySize, WG_SMEM) !=
      cudaSuccess)
    return 6;
  gemm_wgmma_tma<<<static_cast<unsigned>(tiles_m * tiles_n), WG_THREADS, WG_SMEM, stream>>>(
      map_a, map_b, C, M, N, K, static_cast<int>(tiles_n));
  return cudaGetLastError() == cudaSuccess ? 0 : 7;
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  static int profiled = -1;
  if (profiled < 0) profiled = under_profiler() ? 1 : 0;
  if (profiled) return launch_wgmma_gemm(A, B, C, M, N, K, stream);
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 8;
  cc_gemm<<<grid, 256, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 9;
}
