/*
Control: bwd_correct
Expected verdict: PASSED on mha_bwd_d64, S=1024; no architecture tag (instruction check
sass_absent: CUDA cores only, no GMMA in the SASS)

mha_bwd, non-causal (kCausal = false below): given Q, K, V, O, dO [B,H,S,D] bf16 and LSE [B,H,S]
fp32 (natural log, from the reference forward), writes dQ, dK, dV [B,H,S,D] bf16:
  P  = exp(Q·Kᵀ/√D − LSE)          (recomputed, never stored)
  Δ_i = rowsum(dO ∘ O)_i
  dV = Pᵀ·dO,  dP = dO·Vᵀ,  dS = P ∘ (dP − Δ),  dQ = dS·K/√D,  dK = dSᵀ·Q/√D

Nothing is wrong with it on purpose. A simple, correct CUDA-core backward, two kernels on
`stream`, no workspace, no atomics, deterministic:
  - attn_bwd_dkdv: one warp per key row j (8 per 256-thread block; grid.y walks the B*H heads).
    Queries stream through shared memory 32 at a time (Q and dO tiles in fp32, [32][D+1]); Δ of
    the tile's 32 queries is computed in the block from the dO tile and O (one warp per query),
    with LSE staged beside it; lane l handles query t0+l (P and dS), then the warp accumulates
    dV[j] += P·dO_i and dK[j] += dS·Q_i for each of the 32 queries (lane holds d = lane + 32c);
  - attn_bwd_dq: one warp per query row i; Δ_i from its own dO and O row; keys stream through
    shared memory (K and V tiles); lane l handles key t0+l; dQ[i] += dS·K_j;
  - fp32 throughout, expf (no fast math); outputs rounded with __float2bfloat16_rn (dK, dQ
    after the 1/√D scale);
  - any S >= 1, D <= 256; D > 256 or a non-positive axis is refused (run returns 1); 64-bit
    offsets; rows past S are neither read nor written. The causal branch (kCausal = true,
    j <= i) is written too but not used in this file.

Build (as the harness does):
nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a \
     -cudart shared -o bwd_correct.so bwd_correct.cu -lcuda
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace {

constexpr bool kCausal = false;  // key j visible to query i iff j <= i when true
constexpr int kWarps = 8, kThreads = kWarps * 32, kTile = 32, kMaxChunks = 8;
constexpr int kMaxD = 32 * kMaxChunks;  // 256

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

// dK, dV: a warp per key row j; queries stream through shared memory.
__global__ void __launch_bounds__(kThreads)
    attn_bwd_dkdv(const __nv_bfloat16* __restrict__ Q, const __nv_bfloat16* __restrict__ K,
                  const __nv_bfloat16* __restrict__ V, const __nv_bfloat16* __restrict__ O,
                  const __nv_bfloat16* __restrict__ dO, const float* __restrict__ LSE,
                  __nv_bfloat16* __restrict__ dK, __nv_bfloat16* __restrict__ dV, int64_t BH,
                  int64_t S, int D, float scale) {
  extern __shared__ float smem[];
  float* qs = smem;                     // [kTile][D+1]
  float* dos = qs + kTile * (D + 1);    // [kTile][D+1]
  float* krow = dos + kTile * (D + 1);  // [kWarps][D]
  float* vrow = krow + kWarps * D;      // [kWarps][D]
  float* lse_s = vrow + kWarps * D;     // [kTile]
  float* delta_s = lse_s + kTile;       // [kTile]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row0 = int64_t(blockIdx.x) * kWarps, j = row0 + warp;
  const bool key_ok = j < S;
  // Queries before row0 see none of this block's keys when causal (block-uniform start).
  const int64_t first = kCausal ? (row0 / kTile) * kTile : 0;

  for (int64_t bh = blockIdx.y; bh < BH; bh += gridDim.y) {
    const int64_t base = bh * S * D, rbase = bh * S;
    __syncthreads();  // krow/vrow/tiles of the previous head are no longer read
    for (int d = lane; d < D; d += 32) {
      krow[warp * D + d] = key_ok ? __bfloat162float(K[base + j * D + d]) : 0.f;
      vrow[warp * D + d] = key_ok ? __bfloat162float(V[base + j * D + d]) : 0.f;
    }
    float dk[kMaxChunks], dv[kMaxChunks];
#pragma unroll
    for (int c = 0; c < kMaxChunks; ++c) dk[c] = dv[c] = 0.f;

    for (int64_t t0 = first; t0 < S; t0 += kTile) {
      __syncthreads();
      LoadTile(qs, Q + base, t0, S, D);
      LoadTile(dos, dO + base, t0, S, D);
      if (threadIdx.x < kTile) {
        const int64_t q = t0 + threadIdx.x;
        lse_s[threadIdx.x] = q < S ? LSE[rbase + q] : 0.f;
      }
      __syncthreads();
      // Δ of the tile's queries: warp w takes queries w, w+8, w+16, w+24.
      for (int r = warp; r < kTile; r += kWarps) {
        const int64_t q = t0 + r;
        float s = 0.f;
        if (q < S)
          for (int d = lane; d < D; d += 32)
            s = fmaf(dos[r * (D + 1) + d], __bfloat162float(O[base + q * D + d]), s);
        s = WarpSum(s);
        if (lane == 0) delta_s[r] = s;
      }
      __syncthreads();
      const int64_t i = t0 + lane;
      const bool valid = key_ok && i < S && Visible(i, j);
      float p = 0.f, ds = 0.f;
      if (valid) {
        float dot = 0.f, dp = 0.f;
        for (int d = 0; d < D; ++d) {
          dot = fmaf(krow[warp * D + d], qs[lane * (D + 1) + d], dot);
          dp = fmaf(vrow[warp * D + d], dos[lane * (D + 1) + d], dp);
        }
        p = expf(dot * scale - lse_s[lane]);
        ds = p * (dp - delta_s[lane]);
      }
      if (!__any_sync(0xffffffffu, valid)) continue;  // warp-uniform
      for (int ii = 0; ii < kTile; ++ii) {
        const float pi = __shfl_sync(0xffffffffu, p, ii);
        const float dsi = __shfl_sync(0xffffffffu, ds, ii);
#pragma unroll
        for (int c = 0; c < kMaxChunks; ++c) {
          const int d = lane + 32 * c;
          if (d < D) {
            dv[c] = fmaf(pi, dos[ii * (D + 1) + d], dv[c]);
            dk[c] = fmaf(dsi, qs[ii * (D + 1) + d], dk[c]);
          }
        }
      }
    }

    if (key_ok) {
#pragma unroll
      for (int c = 0; c < kMaxChunks; ++c) {
        const int d = lane + 32 * c;
        if (d < D) {
          dK[base + j * D + d] = __float2bfloat16_rn(dk[c] * scale);
          dV[base + j * D + d] = __float2bfloat16_rn(dv[c]);
        }
      }
    }
  }
}

// dQ: a warp per query row i; keys stream through shared memory.
__global__ void __launch_bounds__(kThreads)
    attn_bwd_dq(const __nv_bfloat16* __restrict__ Q, const __nv_bfloat16* __restrict__ K,
                const __nv_bfloat16* __restrict__ V, const __nv_bfloat16* __restrict__ O,
                const __nv_bfloat16* __restrict__ dO, const float* __restrict__ LSE,
                __nv_bfloat16* __restrict__ dQ, int64_t BH, int64_t S, int D, float scale) {
  extern __shared__ float smem[];
  float* ks = smem;                    // [kTile][D+1]
  float* vs = ks + kTile * (D + 1);    // [kTile][D+1]
  float* qrow = vs + kTile * (D + 1);  // [kWarps][D]
  float* dorow = qrow + kWarps * D;    // [kWarps][D]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row0 = int64_t(blockIdx.x) * kWarps, i = row0 + warp;
  const bool row_ok = i < S;
  const int64_t last_row = row0 + kWarps - 1 < S - 1 ? row0 + kWarps - 1 : S - 1;
  const int64_t last_key = kCausal ? last_row : S - 1;

  for (int64_t bh = blockIdx.y; bh < BH; bh += gridDim.y) {
    const int64_t base = bh * S * D, rbase = bh * S;
    __syncwarp();
    float dlt = 0.f;  // Δ_i = rowsum(dO ∘ O)
    for (int d = lane; d < D; d += 32) {
      const float q = row_ok ? __bfloat162float(Q[base + i * D + d]) : 0.f;
      const float g = row_ok ? __bfloat162float(dO[base + i * D + d]) : 0.f;
      const float o = row_ok ? __bfloat162float(O[base + i * D + d]) : 0.f;
      qrow[warp * D + d] = q;
      dorow[warp * D + d] = g;
      dlt = fmaf(g, o, dlt);
    }
    dlt = WarpSum(dlt);
    __syncwarp();
    const float lse = row_ok ? LSE[rbase + i] : 0.f;
    float dq[kMaxChunks];
#pragma unroll
    for (int c = 0; c < kMaxChunks; ++c) dq[c] = 0.f;

    for (int64_t t0 = 0; t0 <= last_key; t0 += kTile) {
      __syncthreads();
      LoadTile(ks, K + base, t0, S, D);
      LoadTile(vs, V + base, t0, S, D);
      __syncthreads();
      const int64_t j = t0 + lane;
      const bool valid = row_ok && j < S && Visible(i, j);
      float ds = 0.f;
      if (valid) {
        float dot = 0.f, dp = 0.f;
        for (int d = 0; d < D; ++d) {
          dot = fmaf(qrow[warp * D + d], ks[lane * (D + 1) + d], dot);
          dp = fmaf(dorow[warp * D + d], vs[lane * (D + 1) + d], dp);
        }
        const float p = expf(dot * scale - lse);
        ds = p * (dp - dlt);
      }
      if (!__any_sync(0xffffffffu, valid)) continue;  // warp-uniform
      for (int jj = 0; jj < kTile; ++jj) {
        const float dsj = __shfl_sync(0xffffffffu, ds, jj);
#pragma unroll
        for (int c = 0; c < kMaxChunks; ++c) {
          const int d = lane + 32 * c;
          if (d < D) dq[c] = fmaf(dsj, ks[jj * (D + 1) + d], dq[c]);
        }
      }
    }

    if (row_ok) {
#pragma unroll
      for (int c = 0; c < kMaxChunks; ++c) {
        const int d = lane + 32 * c;
        if (d < D) dQ[base + i * D + d] = __float2bfloat16_rn(dq[c] * scale);
      }
    }
  }
}

}  // namespace

extern "C" int run(const __nv_bfloat16* Q, const __nv_bfloat16* K, const __nv_bfloat16* V,
                   const __nv_bfloat16* O, const __nv_bfloat16* dO, const float* LSE,
                   __nv_bfloat16* dQ, __nv_bfloat16* dK, __nv_bfloat16* dV, int B, int H, int S,
                   int D, cudaStream_t stream) {
  if (B < 1 || H < 1 || S < 1 || D < 1 || D > kMaxD) return 1;
  const int64_t BH = int64_t(B) * H;
  const float scale = 1.0f / sqrtf(float(D));
  const int64_t row_blocks = (int64_t(S) + kWarps - 1) / kWarps;
  const dim3 grid(unsigned(row_blocks), unsigned(BH < 65535 ? BH : 65535));

  const size_t smem_kv =
      (2 * size_t(kTile) * (D + 1) + 2 * size_t(kWarps) * D + 2 * size_t(kTile)) * sizeof(float);
  if (smem_kv > 48 * 1024 &&
      cudaFuncSetAttribute(attn_bwd_dkdv, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           int(smem_kv)) != cudaSuccess)
    return 1;
  attn_bwd_dkdv<<<grid, kThreads, smem_kv, stream>>>(Q, K, V, O, dO, LSE, dK, dV, BH, S, D,
                                                     scale);
  if (cudaGetLastError() != cudaSuccess) return 1;

  const size_t smem_q = (2 * size_t(kTile) * (D + 1) + 2 * size_t(kWarps) * D) * sizeof(float);
  if (smem_q > 48 * 1024 &&
      cudaFuncSetAttribute(attn_bwd_dq, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           int(smem_q)) != cudaSuccess)
    return 1;
  attn_bwd_dq<<<grid, kThreads, smem_q, stream>>>(Q, K, V, O, dO, LSE, dQ, BH, S, D, scale);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
