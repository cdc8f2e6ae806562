/*
Control: fwd_log2_lse
Expected verdict: INCORRECT (reason numerical) on mha_with_lse_d64, S=2048

mha_fwd, non-causal, with O right and LSE in the wrong base. The task defines
LSE[b,h,i] = ln Σ_j exp(Q_i·K_jᵀ/√D) (natural log). This kernel does what FlashAttention-style
kernels do internally, working in the exp2 domain (scores pre-multiplied by log2(e), exp2f),
and then forgets to convert back: it stores LSE2 = m2 + log2(l2) = LSE / ln 2 = 1.4427 x LSE.

O is unaffected (softmax is base-invariant) and matches the reference to bf16 rounding. With
standard-normal Q, K at D=64, S=2048 the true LSE is about ln 2048 + 0.5 ~ 8.1, so every LSE
element is off by ~3.5 (relative ~44%): all B*H*S LSE elements fail the published rule. They are
finite: the failure is numerical.

Otherwise identical to fwd_correct.cu: one warp per query row, keys/values streamed through
shared memory 32 at a time in fp32, online softmax in fp32, O rounded with __float2bfloat16_rn,
any S >= 1, D <= 256 (D > 256 refused), 64-bit offsets, nothing out of bounds.

Build (as the harness does):
nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a \
     -cudart shared -o fwd_log2_lse.so fwd_log2_lse.cu -lcuda
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace {

constexpr bool kCausal = false;  // key j visible to query i iff j <= i when true
constexpr int kWarps = 8, kThreads = kWarps * 32, kTile = 32, kMaxChunks = 8;
constexpr int kMaxD = 32 * kMaxChunks;  // 256

__device__ __forceinline__ float WarpMax(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float WarpSum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Rows r0 .. r0+kTile-1 of a [S,D] bf16 matrix into smem [kTile][D+1] as fp32 (zeros past S).
__device__ __forceinline__ void LoadTile(float* dst, const __nv_bfloat16* __restrict__ src,
                                         int64_t r0, int64_t S, int D) {
  for (int idx = threadIdx.x; idx < kTile * D; idx += kThreads) {
    const int r = idx / D, d = idx - r * D;
    const int64_t row = r0 + r;
    dst[r * (D + 1) + d] = row < S ? __bfloat162float(src[row * D + d]) : 0.f;
  }
}

__device__ __forceinline__ bool Visible(int64_t i, int64_t j) {
  return !kCausal || j <= i;
}

__global__ void __launch_bounds__(kThreads)
    attn_fwd_warp_row(const __nv_bfloat16* __restrict__ Q, const __nv_bfloat16* __restrict__ K,
                      const __nv_bfloat16* __restrict__ V, __nv_bfloat16* __restrict__ O,
                      float* __restrict__ LSE, int64_t BH, int64_t S, int D,
                      float scale_log2) {
  extern __shared__ float smem[];
  float* ks = smem;                  // [kTile][D+1]
  float* vs = ks + kTile * (D + 1);  // [kTile][D+1]
  float* qs = vs + kTile * (D + 1);  // [kWarps][D]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row0 = int64_t(blockIdx.x) * kWarps, i = row0 + warp;
  const bool row_ok = i < S;
  // Last key any row of this block can see (block-uniform).
  const int64_t last_row = row0 + kWarps - 1 < S - 1 ? row0 + kWarps - 1 : S - 1;
  const int64_t last_key = kCausal ? last_row : S - 1;

  for (int64_t bh = blockIdx.y; bh < BH; bh += gridDim.y) {
    const int64_t base = bh * S * D;
    __syncwarp();
    for (int d = lane; d < D; d += 32)
      qs[warp * D + d] = row_ok ? __bfloat162float(Q[base + i * D + d]) : 0.f;
    __syncwarp();

    float m = -INFINITY, l = 0.f, acc[kMaxChunks];  // m in log2 units
#pragma unroll
    for (int c = 0; c < kMaxChunks; ++c) acc[c] = 0.f;

    for (int64_t t0 = 0; t0 <= last_key; t0 += kTile) {
      __syncthreads();
      LoadTile(ks, K + base, t0, S, D);
      LoadTile(vs, V + base, t0, S, D);
      __syncthreads();
      const int64_t j = t0 + lane;
      const bool valid = row_ok && j < S && Visible(i, j);
      float s = -INFINITY;
      if (valid) {
        float dot = 0.f;
        for (int d = 0; d < D; ++d) dot = fmaf(qs[warp * D + d], ks[lane * (D + 1) + d], dot);
        s = dot * scale_log2;  // score in log2 units
      }
      const float tile_max = WarpMax(s);
      if (tile_max == -INFINITY) continue;  // nothing visible to this row here (warp-uniform)
      const float m_new = fmaxf(m, tile_max);
      const float corr = exp2f(m - m_new);  // 0 on the first visible tile
      const float p = valid ? exp2f(s - m_new) : 0.f;
      l = l * corr + WarpSum(p);
#pragma unroll
      for (int c = 0; c < kMaxChunks; ++c) acc[c] *= corr;
      for (int jj = 0; jj < kTile; ++jj) {
        const float pj = __shfl_sync(0xffffffffu, p, jj);
#pragma unroll
        for (int c = 0; c < kMaxChunks; ++c) {
          const int d = lane + 32 * c;
          if (d < D) acc[c] = fmaf(pj, vs[jj * (D + 1) + d], acc[c]);
        }
      }
      m = m_new;
    }

    if (row_ok) {
      const float inv_l = 1.f / l;
#pragma unroll
      for (int c = 0; c < kMaxChunks; ++c) {
        const int d = lane + 32 * c;
        if (d < D) O[base + i * D + d] = __float2bfloat16_rn(acc[c] * inv_l);
      }
      // THE BUG: log2 Σ exp(P) is stored; the task wants ln Σ exp(P) = (m + log2 l) * ln 2.
      if (lane == 0) LSE[bh * S + i] = m + log2f(l);
    }
  }
}

}  // namespace

extern "C" int run(const __nv_bfloat16* Q, const __nv_bfloat16* K, const __nv_bfloat16* V,
                   __nv_bfloat16* O, float* LSE, int B, int H, int S, int D,
                   cudaStream_t stream) {
  if (B < 1 || H < 1 || S < 1 || D < 1 || D > kMaxD) return 1;
  const int64_t BH = int64_t(B) * H;
  const size_t smem = (2 * size_t(kTile) * (D + 1) + size_t(kWarps) * D) * sizeof(float);
  if (smem > 48 * 1024 &&
      cudaFuncSetAttribute(attn_fwd_warp_row, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           int(smem)) != cudaSuccess)
    return 1;
  const int64_t row_blocks = (int64_t(S) + kWarps - 1) / kWarps;
  const dim3 grid(unsigned(row_blocks), unsigned(BH < 65535 ? BH : 65535));
  attn_fwd_warp_row<<<grid, kThreads, smem, stream>>>(Q, K, V, O, LSE, BH, S, D,
                                                      1.4426950408889634f / sqrtf(float(D)));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
