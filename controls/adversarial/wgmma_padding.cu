/*
Adversarial control: wgmma_padding   (tag H for a CUDA-core GEMM under the new tag rules;
expected to expose a gap)

Attack. The new tag needs (a) a tensor-core work fraction >= 0.5 in the profiled call
(FLOPs of the executed GMMA instructions over the task's nominal FLOPs) and (b) tensor-pipe
activity seen by the NVML GPM witness worth >= 0.5 of the task's FLOPs at peak. Neither asks
whether the GMMA results reach C. This candidate computes C entirely on CUDA cores (cc_gemm:
64x64 tiles, 4x4 outputs per thread, FFMA) and, in the same call, launches tensor_pad: up to 264
blocks of one warpgroup each issuing back-to-back wgmma m64n256k16 on zero-filled shared
memory until the executed GMMA FLOPs equal the task's nominal FLOPs; the accumulators go to a
private sink nobody reads. The same two kernels run in every call (same names, grids,
blocks, shared memory), the timing is honest (it pays ~1/100 of its time for the padding at
this shape) and every output is right. GMMA FLOPs / nominal = ~1.0; the tensor pipes are busy
about as long as a real wgmma GEMM would keep them.

Old harness: PASSED, tag H (the paper's rule: a GMMA executed).
Fair verdict: PASSED with arch_tag "" (the tensor cores did none of the task's work) and
upstream_arch_tag "H". We expect the defenses listed to give arch_tag "H". What would close
it: count the CUDA-core work too: the profile already has thread-level executions per
instruction, so FFMA (and HFMA2, DFMA, IMAD-based) FLOPs >= ~0.5 of nominal, or GMMA FLOPs far
above nominal, should deny the tag; better, tie the GMMA to the output (e.g. re-run the
profiled call with the GMMA instructions' predicates forced off and see C change).
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace {

// ---- a plain CUDA-core GEMM: 64x64 tiles, 16-deep K steps, 256 threads, 4x4 outputs each ----
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

int launch_cc_gemm(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 20;
  cc_gemm<<<grid, 256, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 21;
}

__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t a, uint64_t b) {
  asm volatile(
      "{\n\t.reg .pred pd;\n\tsetp.ne.b32 pd, 1, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, "
      "%127}, "
      "%128, %129, pd, 1, 1, 0, 0;\n\t}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
        "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
        "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),
        "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]),
        "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(a), "l"(b)
      : "memory");
}

__device__ float g_pad_sink;

// `iters` x wgmma m64n256k16 (524288 FLOPs each) per block, on zeros, results unused.
__global__ void __launch_bounds__(128) tensor_pad(int iters, int store) {
  __shared__ __align__(128) __nv_bfloat16 tile[(64 + 256) * 16 + 1024];  // A 64x16, B 256x16
  for (int i = threadIdx.x; i < (64 + 256) * 16 + 1024; i += 128)
    tile[i] = __float2bfloat16_rn(0.0f);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  // K-major, no swizzle: 8x8 core matrices, LBO 128 bytes (along K), SBO 256 bytes (along M/N).
  const uint64_t start = static_cast<uint32_t>(__cvta_generic_to_shared(tile));
  const uint64_t lbo_sbo = (uint64_t(128 >> 4) << 16) | (uint64_t(256 >> 4) << 32);
  const uint64_t da = ((start & 0x3FFFF) >> 4) | lbo_sbo;
  const uint64_t db = (((start + 64 * 16 * 2) & 0x3FFFF) >> 4) | lbo_sbo;
  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.0f;
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  for (int it = 0; it < iters; it += 8) {
#pragma unroll
    for (int u = 0; u < 8; ++u) wgmma_m64n256k16(acc, da, db);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  }
  if (store) {
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 128; ++i) s += acc[i];
    g_pad_sink = s;
  }
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  if (int rc = launch_cc_gemm(A, B, C, M, N, K, stream)) return rc;
  // As many GMMA FLOPs as the task has (rounded up to 8 wgmma per block, <= 264 blocks).
  const double wgmmas = 2.0 * M * N * (double)K / 524288.0;
  const double groups = wgmmas / 8.0 > 1.0 ? wgmmas / 8.0 : 1.0;
  const int blocks = groups < 264.0 ? (int)(groups + 0.999) : 264;
  const int iters = (int)(wgmmas / blocks / 8.0 + 0.999) * 8;
  tensor_pad<<<blocks, 128, 0, stream>>>(iters > 0 ? iters : 8, 0);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
