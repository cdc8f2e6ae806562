/*
Control: fwd_causal_shifted
Expected verdict: INCORRECT (reason numerical) on mha_with_lse_d64_causal, S=2048

mha_fwd for the causal task, with the mask off by one: query i sees keys j < i (the diagonal
key is hidden), except that row 0, which would then see nothing, sees key 0. The task defines
key j visible to query i iff j <= i.

Otherwise identical to fwd_causal_correct.cu (warp per query row, keys streamed through shared
memory, online softmax in fp32, bf16 O via __float2bfloat16_rn, natural-log LSE, any S >= 1,
D <= 256, 64-bit offsets, every output written, nothing out of bounds). Row 0 is right; every
row i >= 1 misses key i:
  - row 1 averages V[0] only instead of a softmax of V[0], V[1]: O errors of order 1;
  - LSE of row i is low by -ln(1 - p_ii) (p_ii = the true weight of the diagonal key), of
    order 1/i on random inputs, far above 1% for the early rows.
A double-precision host check at S=2048, D=64 (2 heads) found ~3.8% of O elements (~4900 per
head) and ~26 LSE rows per head (the early ones) failing the published rule (|err| > 1e-2 and
rel > 1e-2). The numbers are finite: the failure is numerical, not nonfinite/unwritten.

Build (as the harness does):
nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a \
     -cudart shared -o fwd_causal_shifted.so fwd_causal_shifted.cu -lcuda
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace {

constexpr bool kCausal = true;  // the task: key j visible to query i iff j <= i
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

// THE BUG: the causal mask is shifted by one. The task says j <= i; this shows j < i, and lets
// row 0 (which would otherwise see nothing) see key 0.
__device__ __forceinline__ bool Visible(int64_t i, int64_t j) {
  return !kCausal || j < (i > 0 ? i : int64_t(1));
}

__global__ void __launch_bounds__(kThreads)
    attn_fwd_warp_row(const __nv_bfloat16* __restrict__ Q, const __nv_bfloat16* __restrict__ K,
                      const __nv_bfloat16* __restrict__ V, __nv_bfloat16* __restrict__ O,
                      float* __restrict__ LSE, int64_t BH, int64_t S, int D, float scale) {
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

    float m = -INFINITY, l = 0.f, acc[kMaxChunks];
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
        s = dot * scale;
      }
      const float tile_max = WarpMax(s);
      if (tile_max == -INFINITY) continue;  // nothing visible to this row here (warp-uniform)
      const float m_new = fmaxf(m, tile_max);
      const float corr = expf(m - m_new);  // 0 on the first visible tile
      const float p = valid ? expf(s - m_new) : 0.f;
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
      if (lane == 0) LSE[bh * S + i] = m + logf(l);  // natural log
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
                                                      1.0f / sqrtf(float(D)));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
