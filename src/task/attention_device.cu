// The attention families' device side: trusted references and launch adapters.
//
// Forward: one warp per query row, 8 rows per block; keys stream through shared memory 32 at a
// time (fp32), lane l scores key t0+l, and the row keeps an online softmax (running max m,
// running sum l, fp32 accumulator) so the S×S score matrix never exists: memory is O(S·D).
// Backward: rowsum(dO∘O) per row, then one kernel for dK, dV (a warp per key row, queries
// streamed) and one for dQ (a warp per query row, keys streamed), each recomputing
// P = exp(Q·Kᵀ/√D − LSE): no atomics, deterministic. CUDA cores only, fp32 throughout.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/cuda_check.h"
#include "task/attention.h"
#include "task/device_ops.h"
#include "task/random_normal.h"

namespace ptxbench {
namespace {

constexpr int kWarps = 8, kThreads = kWarps * 32, kTile = 32, kMaxChunks = 8;  // D ≤ 256

__device__ inline float WarpMax(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ inline float WarpSum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Rows r0.. of a [S,D] bf16 matrix into smem [kTile][D+1] (zeros past S).
__device__ inline void LoadTile(float* dst, const __nv_bfloat16* src, int r0, int S, int D) {
  for (int idx = threadIdx.x; idx < kTile * D; idx += kThreads) {
    int r = idx / D, d = idx % D;
    dst[r * (D + 1) + d] = r0 + r < S ? __bfloat162float(src[size_t(r0 + r) * D + d]) : 0.f;
  }
}

__global__ void __launch_bounds__(kThreads)
    ptxbench_attention_forward(const __nv_bfloat16* __restrict__ Q,
                               const __nv_bfloat16* __restrict__ K,
                               const __nv_bfloat16* __restrict__ V, float* __restrict__ O,
                               float* __restrict__ LSE, int S, int D, int causal, float scale) {
  extern __shared__ float smem[];
  float* ks = smem;                  // [kTile][D+1]
  float* vs = ks + kTile * (D + 1);  // [kTile][D+1]
  float* qs = vs + kTile * (D + 1);  // [kWarps][D]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const size_t base = size_t(blockIdx.y) * S * D;
  const int row0 = blockIdx.x * kWarps, i = row0 + warp;
  const bool row_ok = i < S;
  for (int d = lane; d < D; d += 32)
    qs[warp * D + d] = row_ok ? __bfloat162float(Q[base + size_t(i) * D + d]) : 0.f;
  float m = -INFINITY, l = 0.f, acc[kMaxChunks] = {};
  const int last_key = causal ? min(S - 1, row0 + kWarps - 1) : S - 1;
  for (int t0 = 0; t0 <= last_key; t0 += kTile) {
    __syncthreads();
    LoadTile(ks, K + base, t0, S, D);
    LoadTile(vs, V + base, t0, S, D);
    __syncthreads();
    const int j = t0 + lane;
    const bool valid = row_ok && j < S && (!causal || j <= i);
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
        int d = lane + 32 * c;
        if (d < D) acc[c] = fmaf(pj, vs[jj * (D + 1) + d], acc[c]);
      }
    }
    m = m_new;
  }
  if (!row_ok) return;
#pragma unroll
  for (int c = 0; c < kMaxChunks; ++c) {
    int d = lane + 32 * c;
    if (d < D) O[base + size_t(i) * D + d] = acc[c] / l;
  }
  if (lane == 0) LSE[size_t(blockIdx.y) * S + i] = m + logf(l);  // natural log
}

// delta[row] = Σ_d dO·O, one warp per row.
__global__ void __launch_bounds__(kThreads)
    ptxbench_attention_delta(const __nv_bfloat16* __restrict__ O,
                             const __nv_bfloat16* __restrict__ dO, float* __restrict__ delta,
                             size_t rows, int D) {
  const size_t row = size_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float s = 0.f;
  for (int d = lane; d < D; d += 32)
    s += __bfloat162float(O[row * D + d]) * __bfloat162float(dO[row * D + d]);
  s = WarpSum(s);
  if (lane == 0) delta[row] = s;
}

// dK, dV: a warp per key row j; queries stream through shared memory.
__global__ void __launch_bounds__(kThreads)
    ptxbench_attention_dkdv(const __nv_bfloat16* __restrict__ Q,
                            const __nv_bfloat16* __restrict__ K,
                            const __nv_bfloat16* __restrict__ V,
                            const __nv_bfloat16* __restrict__ dO, const float* __restrict__ LSE,
                            const float* __restrict__ delta, float* __restrict__ dK,
                            float* __restrict__ dV, int S, int D, int causal, float scale) {
  extern __shared__ float smem[];
  float* qs = smem;                     // [kTile][D+1]
  float* dos = qs + kTile * (D + 1);    // [kTile][D+1]
  float* krow = dos + kTile * (D + 1);  // [kWarps][D]
  float* vrow = krow + kWarps * D;      // [kWarps][D]
  float* lse_s = vrow + kWarps * D;     // [kTile]
  float* delta_s = lse_s + kTile;       // [kTile]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const size_t base = size_t(blockIdx.y) * S * D, rbase = size_t(blockIdx.y) * S;
  const int row0 = blockIdx.x * kWarps, j = row0 + warp;
  const bool key_ok = j < S;
  for (int d = lane; d < D; d += 32) {
    krow[warp * D + d] = key_ok ? __bfloat162float(K[base + size_t(j) * D + d]) : 0.f;
    vrow[warp * D + d] = key_ok ? __bfloat162float(V[base + size_t(j) * D + d]) : 0.f;
  }
  float dk[kMaxChunks] = {}, dv[kMaxChunks] = {};
  const int first =
      causal ? (row0 / kTile) * kTile : 0;  // queries before row0 see none of these keys
  for (int t0 = first; t0 < S; t0 += kTile) {
    __syncthreads();
    LoadTile(qs, Q + base, t0, S, D);
    LoadTile(dos, dO + base, t0, S, D);
    if (threadIdx.x < kTile) {
      int q = t0 + threadIdx.x;
      lse_s[threadIdx.x] = q < S ? LSE[rbase + q] : 0.f;
      delta_s[threadIdx.x] = q < S ? delta[rbase + q] : 0.f;
    }
    __syncthreads();
    const int i = t0 + lane;
    const bool valid = key_ok && i < S && (!causal || j <= i);
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
    if (!__any_sync(0xffffffffu, valid)) continue;
    for (int ii = 0; ii < kTile; ++ii) {
      const float pi = __shfl_sync(0xffffffffu, p, ii);
      const float dsi = __shfl_sync(0xffffffffu, ds, ii);
#pragma unroll
      for (int c = 0; c < kMaxChunks; ++c) {
        int d = lane + 32 * c;
        if (d < D) {
          dv[c] = fmaf(pi, dos[ii * (D + 1) + d], dv[c]);
          dk[c] = fmaf(dsi, qs[ii * (D + 1) + d], dk[c]);
        }
      }
    }
  }
  if (!key_ok) return;
#pragma unroll
  for (int c = 0; c < kMaxChunks; ++c) {
    int d = lane + 32 * c;
    if (d < D) {
      dK[base + size_t(j) * D + d] = dk[c] * scale;
      dV[base + size_t(j) * D + d] = dv[c];
    }
  }
}

// dQ: a warp per query row i; keys stream through shared memory.
__global__ void __launch_bounds__(kThreads)
    ptxbench_attention_dq(const __nv_bfloat16* __restrict__ Q, const __nv_bfloat16* __restrict__ K,
                          const __nv_bfloat16* __restrict__ V, const __nv_bfloat16* __restrict__ dO,
                          const float* __restrict__ LSE, const float* __restrict__ delta,
                          float* __restrict__ dQ, int S, int D, int causal, float scale) {
  extern __shared__ float smem[];
  float* ks = smem;                    // [kTile][D+1]
  float* vs = ks + kTile * (D + 1);    // [kTile][D+1]
  float* qrow = vs + kTile * (D + 1);  // [kWarps][D]
  float* dorow = qrow + kWarps * D;    // [kWarps][D]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const size_t base = size_t(blockIdx.y) * S * D, rbase = size_t(blockIdx.y) * S;
  const int row0 = blockIdx.x * kWarps, i = row0 + warp;
  const bool row_ok = i < S;
  for (int d = lane; d < D; d += 32) {
    qrow[warp * D + d] = row_ok ? __bfloat162float(Q[base + size_t(i) * D + d]) : 0.f;
    dorow[warp * D + d] = row_ok ? __bfloat162float(dO[base + size_t(i) * D + d]) : 0.f;
  }
  const float lse = row_ok ? LSE[rbase + i] : 0.f, dlt = row_ok ? delta[rbase + i] : 0.f;
  float dq[kMaxChunks] = {};
  const int last_key = causal ? min(S - 1, row0 + kWarps - 1) : S - 1;
  for (int t0 = 0; t0 <= last_key; t0 += kTile) {
    __syncthreads();
    LoadTile(ks, K + base, t0, S, D);
    LoadTile(vs, V + base, t0, S, D);
    __syncthreads();
    const int j = t0 + lane;
    const bool valid = row_ok && j < S && (!causal || j <= i);
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
    if (!__any_sync(0xffffffffu, valid)) continue;
    for (int jj = 0; jj < kTile; ++jj) {
      const float dsj = __shfl_sync(0xffffffffu, ds, jj);
#pragma unroll
      for (int c = 0; c < kMaxChunks; ++c) {
        int d = lane + 32 * c;
        if (d < D) dq[c] = fmaf(dsj, ks[jj * (D + 1) + d], dq[c]);
      }
    }
  }
  if (!row_ok) return;
#pragma unroll
  for (int c = 0; c < kMaxChunks; ++c) {
    int d = lane + 32 * c;
    if (d < D) dQ[base + size_t(i) * D + d] = dq[c] * scale;
  }
}

__global__ void ptxbench_f32_to_bf16(const float* __restrict__ in, __nv_bfloat16* __restrict__ out,
                                     size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16_rn(in[i]);
}

// dst head h = sign · src head (a·h + c) mod heads, for `heads` blocks of `per_head` 16- or
// 32-bit elements; `negate` flips the sign bit (exact negation in bf16 and fp32).
template <typename Word>
__global__ void ptxbench_permute_heads(const Word* __restrict__ src, Word* __restrict__ dst,
                                       size_t per_head, unsigned heads, unsigned a, unsigned c,
                                       bool negate) {
  const Word sign = negate ? Word(Word(1) << (8 * sizeof(Word) - 1)) : Word(0);
  size_t n = per_head * heads;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    size_t h = i / per_head, r = i % per_head;
    size_t from = (uint64_t(a) * h + c) % heads;
    dst[i] = src[from * per_head + r] ^ sign;
  }
}

template <typename Word>
void PermuteHeads(const void* src, void* dst, size_t per_head, unsigned heads, unsigned a,
                  unsigned c, bool negate, Stream stream) {
  size_t n = per_head * heads;
  unsigned blocks = unsigned(std::min<size_t>((n + 255) / 256, 65536));
  ptxbench_permute_heads<Word><<<blocks, 256, 0, stream>>>(
      static_cast<const Word*>(src), static_cast<Word*>(dst), per_head, heads, a, c, negate);
  PTXBENCH_CUDA_CHECK(cudaGetLastError());
}

void CheckShape(int B, int H, int S, int D) {
  if (B < 1 || H < 1 || S < 1 || D < 1 || D > 32 * kMaxChunks || size_t(B) * H > 65535)
    throw std::runtime_error("attention reference: unsupported shape B=" + std::to_string(B) +
                             " H=" + std::to_string(H) + " S=" + std::to_string(S) +
                             " D=" + std::to_string(D) + " (needs D <= 256, B*H <= 65535)");
}

template <typename Kernel>
void AllowSmem(Kernel k, size_t bytes) {
  PTXBENCH_CUDA_CHECK(
      cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

using FwdRun = int (*)(const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*,
                       __nv_bfloat16*, float*, int, int, int, int, cudaStream_t);
using BwdRun = int (*)(const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*,
                       const __nv_bfloat16*, const __nv_bfloat16*, const float*, __nv_bfloat16*,
                       __nv_bfloat16*, __nv_bfloat16*, int, int, int, int, cudaStream_t);

int Ax(const Axes& a, const char* k) { return int(a.at(k)); }

}  // namespace

void LaunchAttentionForward(const void* Q, const void* K, const void* V, float* O, float* LSE,
                            int B, int H, int S, int D, bool causal, Stream stream) {
  CheckShape(B, H, S, D);
  size_t smem = (2 * kTile * (D + 1) + kWarps * D) * sizeof(float);
  AllowSmem(ptxbench_attention_forward, smem);
  dim3 grid((S + kWarps - 1) / kWarps, B * H);
  ptxbench_attention_forward<<<grid, kThreads, smem, stream>>>(
      static_cast<const __nv_bfloat16*>(Q), static_cast<const __nv_bfloat16*>(K),
      static_cast<const __nv_bfloat16*>(V), O, LSE, S, D, causal ? 1 : 0,
      1.0f / std::sqrt(float(D)));
  PTXBENCH_CUDA_CHECK(cudaGetLastError());
}

void LaunchAttentionBackward(const void* Q, const void* K, const void* V, const void* O,
                             const void* dO, const float* LSE, float* dQ, float* dK, float* dV,
                             int B, int H, int S, int D, bool causal, Stream stream) {
  CheckShape(B, H, S, D);
  const auto* q = static_cast<const __nv_bfloat16*>(Q);
  const auto* k = static_cast<const __nv_bfloat16*>(K);
  const auto* v = static_cast<const __nv_bfloat16*>(V);
  const auto* o = static_cast<const __nv_bfloat16*>(O);
  const auto* dout = static_cast<const __nv_bfloat16*>(dO);
  size_t rows = size_t(B) * H * S;
  float* delta = nullptr;
  PTXBENCH_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&delta), rows * 4, stream));
  ptxbench_attention_delta<<<unsigned((rows + kWarps - 1) / kWarps), kThreads, 0, stream>>>(
      o, dout, delta, rows, D);
  PTXBENCH_CUDA_CHECK(cudaGetLastError());
  const float scale = 1.0f / std::sqrt(float(D));
  dim3 grid((S + kWarps - 1) / kWarps, B * H);
  size_t smem_kv = (2 * kTile * (D + 1) + 2 * kWarps * D + 2 * kTile) * sizeof(float);
  AllowSmem(ptxbench_attention_dkdv, smem_kv);
  ptxbench_attention_dkdv<<<grid, kThreads, smem_kv, stream>>>(q, k, v, dout, LSE, delta, dK, dV, S,
                                                               D, causal ? 1 : 0, scale);
  PTXBENCH_CUDA_CHECK(cudaGetLastError());
  size_t smem_q = (2 * kTile * (D + 1) + 2 * kWarps * D) * sizeof(float);
  AllowSmem(ptxbench_attention_dq, smem_q);
  ptxbench_attention_dq<<<grid, kThreads, smem_q, stream>>>(q, k, v, dout, LSE, delta, dQ, S, D,
                                                            causal ? 1 : 0, scale);
  PTXBENCH_CUDA_CHECK(cudaGetLastError());
  PTXBENCH_CUDA_CHECK(cudaFreeAsync(delta, stream));
}

void MhaForwardFamily::Reference(const std::vector<DeviceTensor>& t,
                                 const std::vector<float*>& expected, const Axes& a,
                                 Stream stream) const {
  LaunchAttentionForward(t[0].data, t[1].data, t[2].data, expected[0], expected[1], Ax(a, "B"),
                         Ax(a, "H"), Ax(a, "S"), Ax(a, "D"), a.at("causal") != 0, stream);
}

int MhaForwardFamily::CallCandidate(void* run_symbol, const std::vector<DeviceTensor>& t,
                                    const Axes& a, Stream stream) const {
  auto run = reinterpret_cast<FwdRun>(run_symbol);
  return run(
      static_cast<const __nv_bfloat16*>(t[0].data), static_cast<const __nv_bfloat16*>(t[1].data),
      static_cast<const __nv_bfloat16*>(t[2].data), static_cast<__nv_bfloat16*>(t[3].data),
      static_cast<float*>(t[4].data), Ax(a, "B"), Ax(a, "H"), Ax(a, "S"), Ax(a, "D"), stream);
}

void MhaBackwardFamily::MakeInputs(const std::vector<DeviceTensor>& t, const Axes& a, uint64_t seed,
                                   Stream stream) const {
  Family::MakeInputs(t, a, seed, stream);  // Q, K, V, dO (and placeholders for O, LSE)
  size_t n = static_cast<size_t>(t[3].spec.Elements());
  float* o32 = nullptr;
  PTXBENCH_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&o32), n * 4, stream));
  LaunchAttentionForward(t[0].data, t[1].data, t[2].data, o32, static_cast<float*>(t[5].data),
                         Ax(a, "B"), Ax(a, "H"), Ax(a, "S"), Ax(a, "D"), a.at("causal") != 0,
                         stream);
  unsigned blocks = unsigned(std::min<size_t>((n + 255) / 256, 65536));
  ptxbench_f32_to_bf16<<<blocks, 256, 0, stream>>>(o32, static_cast<__nv_bfloat16*>(t[3].data), n);
  PTXBENCH_CUDA_CHECK(cudaGetLastError());
  PTXBENCH_CUDA_CHECK(cudaFreeAsync(o32, stream));
}

void MhaBackwardFamily::MakeTimedInputs(const std::vector<DeviceTensor>& base,
                                        const std::vector<DeviceTensor>& t, const Axes& a,
                                        uint64_t call_seed, Stream stream) const {
  const unsigned heads = unsigned(Ax(a, "B") * Ax(a, "H"));
  const size_t rows = size_t(Ax(a, "S")), row_elems = rows * size_t(Ax(a, "D"));
  // The permutation h → (a·h + c) mod heads, a coprime to heads; the sign of V and O.
  uint64_t state = call_seed ^ 0x7065726d75746531ull;
  auto draw = [&state] { return SplitMix64(state++); };
  unsigned mul = 1, add = unsigned(draw() % heads);
  for (int tries = 0; tries < 64; ++tries) {
    unsigned m = 1 + unsigned(draw() % heads);
    if (std::gcd(m, heads) == 1) {
      mul = m;
      break;
    }
  }
  bool negate = draw() & 1;
  PermuteHeads<uint16_t>(base[0].data, t[0].data, row_elems, heads, mul, add, false, stream);
  PermuteHeads<uint16_t>(base[1].data, t[1].data, row_elems, heads, mul, add, false, stream);
  PermuteHeads<uint16_t>(base[2].data, t[2].data, row_elems, heads, mul, add, negate, stream);
  PermuteHeads<uint16_t>(base[3].data, t[3].data, row_elems, heads, mul, add, negate, stream);
  PermuteHeads<uint32_t>(base[5].data, t[5].data, rows, heads, mul, add, false, stream);
  FillStandardNormal(t[4].data, DType::kBF16, size_t(t[4].spec.Elements()), call_seed, 4, stream);
}

void MhaBackwardFamily::Reference(const std::vector<DeviceTensor>& t,
                                  const std::vector<float*>& expected, const Axes& a,
                                  Stream stream) const {
  LaunchAttentionBackward(t[0].data, t[1].data, t[2].data, t[3].data, t[4].data,
                          static_cast<const float*>(t[5].data), expected[0], expected[1],
                          expected[2], Ax(a, "B"), Ax(a, "H"), Ax(a, "S"), Ax(a, "D"),
                          a.at("causal") != 0, stream);
}

int MhaBackwardFamily::CallCandidate(void* run_symbol, const std::vector<DeviceTensor>& t,
                                     const Axes& a, Stream stream) const {
  auto run = reinterpret_cast<BwdRun>(run_symbol);
  return run(
      static_cast<const __nv_bfloat16*>(t[0].data), static_cast<const __nv_bfloat16*>(t[1].data),
      static_cast<const __nv_bfloat16*>(t[2].data), static_cast<const __nv_bfloat16*>(t[3].data),
      static_cast<const __nv_bfloat16*>(t[4].data), static_cast<const float*>(t[5].data),
      static_cast<__nv_bfloat16*>(t[6].data), static_cast<__nv_bfloat16*>(t[7].data),
      static_cast<__nv_bfloat16*>(t[8].data), Ax(a, "B"), Ax(a, "H"), Ax(a, "S"), Ax(a, "D"),
      stream);
}

}  // namespace ptxbench
