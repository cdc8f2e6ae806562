/*
Control: cheat_memo_content
Expected verdict: PASSED (and no faster than tiled_correct)

The cheat: memoize by input content, so that a benchmark that repeats its inputs sees a
"GEMM" that costs one device-to-device copy.
  - Every call gathers a fingerprint of its inputs on the device: 64 elements of A and 64 of B
    at fixed positions spread over each tensor (a tiny kernel of this file writes them to a
    small device buffer), copies those 256 bytes to the host with cudaMemcpyAsync on `stream`
    and synchronizes `stream`.
  - A cache of up to 4 entries maps (M, N, K, fingerprint) to a device copy of C that this
    file owns. On a hit, C is filled from the cache with one cudaMemcpyAsync (device to
    device) on `stream`, and no GEMM runs.
  - On a miss, C is computed honestly with tiled_correct's kernel (copied below unchanged) and
    then copied into a cache slot (round-robin replacement), again on `stream`.
  All its work is on `stream`, it never writes its inputs, and every output element is written
  on every call, hit or miss.

Why it gains nothing here: every input the harness ever gives it is new. The 3 correctness
trials use 3 different seeds; the timing child regenerates the inputs of every warm-up and
timed call from a fresh seed nobody has used (and an unpredictable seed base), so the cache
never hits and each call does the full GEMM plus the fingerprint and the copy into the cache.
The expected verdict is PASSED, with a GPU median no better than tiled_correct's on the same
workload (the extra work is a 128-element gather, a 256-byte copy and one M x N bf16
device-to-device copy per call: ~0.1 ms against ~13 ms at 8192 x 7168 x 5120, under 1%). A
harness that reused its inputs across timed calls would time the copy instead, a speed-up
no real kernel has.

Build (as the harness does):
nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a \
     -cudart shared -o cheat_memo_content.so cheat_memo_content.cu -lcuda
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <cstring>

namespace {

constexpr int BM = 128;  // block tile rows (M)
constexpr int BN = 128;  // block tile cols (N)
constexpr int BK = 16;   // K step
constexpr int kThreads = 256;
constexpr int kGroupM = 8;  // tile rows per swizzle group

static_assert(BM == BN, "load mapping below assumes square tiles");
static_assert(kThreads * 8 == BM * BK, "each thread loads 8 elements of A and 8 of B per K step");

// Loads the 8 consecutive bf16 elements src[row0 + lrow][k0 + lk .. k0 + lk + 7] (row stride K)
// as raw bits; elements outside [0, rows) x [0, K) read as 0 (bf16 +0.0 is bit pattern 0).
template <bool kVec>
__device__ __forceinline__ uint4 load_8(const unsigned short* __restrict__ src, int rows, int row0,
                                        int K, int k0, int lrow, int lk) {
  uint4 v = make_uint4(0u, 0u, 0u, 0u);
  if (lrow < rows - row0) {  // row0 <= rows - 1, so no overflow
    const unsigned short* p = src + (size_t)(row0 + lrow) * (size_t)K;
    const int rem = K - k0 - lk;  // k0 <= K - 1, lk <= 8: no overflow; may be <= 0
    if (kVec) {
      // K % 8 == 0 and lk, k0 are multiples of 8, so the 8 elements are all in or all out.
      if (rem > 0) v = __ldg(reinterpret_cast<const uint4*>(p + k0 + lk));
    } else {
      unsigned int h[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) h[i] = (i < rem) ? (unsigned int)__ldg(p + k0 + lk + i) : 0u;
      v.x = h[0] | (h[1] << 16);
      v.y = h[2] | (h[3] << 16);
      v.z = h[4] | (h[5] << 16);
      v.w = h[6] | (h[7] << 16);
    }
  }
  return v;
}

// bf16 -> fp32 is exact: the bf16 bits are the high half of the fp32 bits.
__device__ __forceinline__ float lo_bf16(unsigned int w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float hi_bf16(unsigned int w) {
  return __uint_as_float(w & 0xffff0000u);
}

// Stores the 8 elements (consecutive in k) transposed: s[lk + i][lrow].
__device__ __forceinline__ void store_8(float (*s)[BM], uint4 v, int lrow, int lk) {
  s[lk + 0][lrow] = lo_bf16(v.x);
  s[lk + 1][lrow] = hi_bf16(v.x);
  s[lk + 2][lrow] = lo_bf16(v.y);
  s[lk + 3][lrow] = hi_bf16(v.y);
  s[lk + 4][lrow] = lo_bf16(v.z);
  s[lk + 5][lrow] = hi_bf16(v.z);
  s[lk + 6][lrow] = lo_bf16(v.w);
  s[lk + 7][lrow] = hi_bf16(v.w);
}

template <bool kVec>
__global__ void __launch_bounds__(kThreads)
    gemm_tiled(const __nv_bfloat16* __restrict__ A_,  // [M, K]
               const __nv_bfloat16* __restrict__ B_,  // [N, K]
               __nv_bfloat16* __restrict__ C,         // [M, N]
               int M, int N, int K, int tiles_m, int tiles_n, bool vec_c) {
  __shared__ __align__(16) float As[2][BK][BM];  // As[buf][k][m], fp32
  __shared__ __align__(16) float Bs[2][BK][BN];  // Bs[buf][k][n], fp32

  const unsigned short* A = reinterpret_cast<const unsigned short*>(A_);
  const unsigned short* B = reinterpret_cast<const unsigned short*>(B_);

  // Grouped tile order: kGroupM tile rows are swept together so their A panels stay in L2.
  const int pid = blockIdx.x;
  const int group_size_pids = kGroupM * tiles_n;
  const int group = pid / group_size_pids;
  const int first_tm = group * kGroupM;
  const int group_rows = min(tiles_m - first_tm, kGroupM);
  const int local = pid - group * group_size_pids;
  const int tm = first_tm + local % group_rows;
  const int tn = local / group_rows;
  const int m0 = tm * BM;  // <= M - 1
  const int n0 = tn * BN;  // <= N - 1

  const int tid = threadIdx.x;
  // Load mapping: 2 threads per tile row, 8 consecutive k each (one 16-byte load).
  const int lrow = tid >> 1;
  const int lk = (tid & 1) * 8;
  // Compute mapping: 16 x 16 threads, each an 8 x 8 sub-tile split in two halves per dimension.
  const int tx = tid & 15;
  const int ty = tid >> 4;

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

  const int num_k_tiles = (K - 1) / BK + 1;  // K >= 1; avoids K + BK - 1 overflow

  uint4 ra = load_8<kVec>(A, M, m0, K, 0, lrow, lk);
  uint4 rb = load_8<kVec>(B, N, n0, K, 0, lrow, lk);
  store_8(As[0], ra, lrow, lk);
  store_8(Bs[0], rb, lrow, lk);
  __syncthreads();

  for (int t = 0; t < num_k_tiles; ++t) {
    const int cur = t & 1;
    const bool has_next = t + 1 < num_k_tiles;
    if (has_next) {  // prefetch next K tile into registers while computing this one
      const int k_next = (t + 1) * BK;  // <= K - 1
      ra = load_8<kVec>(A, M, m0, K, k_next, lrow, lk);
      rb = load_8<kVec>(B, N, n0, K, k_next, lrow, lk);
    }

#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const float4 a0 = *reinterpret_cast<const float4*>(&As[cur][kk][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[cur][kk][64 + ty * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[cur][kk][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[cur][kk][64 + tx * 4]);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }

    if (has_next) {
      // The other buffer was last read in iteration t - 1, which ended with __syncthreads().
      store_8(As[cur ^ 1], ra, lrow, lk);
      store_8(Bs[cur ^ 1], rb, lrow, lk);
    }
    __syncthreads();
  }

  // Epilogue: fp32 -> bf16 (round to nearest even), bounds-checked.
  const int rows_left = M - m0;  // >= 1
  const int cols_left = N - n0;  // >= 1
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int r = (i < 4) ? ty * 4 + i : 64 + ty * 4 + (i - 4);
    if (r >= rows_left) continue;
    __nv_bfloat16* crow = C + (size_t)(m0 + r) * (size_t)N + n0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int c = h * 64 + tx * 4;
      const int rem = cols_left - c;
      if (vec_c && rem >= 4) {
        const __nv_bfloat162 p0 = __floats2bfloat162_rn(acc[i][h * 4 + 0], acc[i][h * 4 + 1]);
        const __nv_bfloat162 p1 = __floats2bfloat162_rn(acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
        uint2 w;
        w.x = *reinterpret_cast<const unsigned int*>(&p0);
        w.y = *reinterpret_cast<const unsigned int*>(&p1);
        *reinterpret_cast<uint2*>(crow + c) = w;
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (j < rem) crow[c + j] = __float2bfloat16_rn(acc[i][h * 4 + j]);
      }
    }
  }
}


// tiled_correct.cu's run(), as a helper: launches the tiled kernel for C = A * B^T on `stream`.
// Returns 0 on success, non-zero for a shape it cannot handle or a launch error.
int launch_tiled(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                 int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  const long long tiles_m = (M + (long long)BM - 1) / BM;
  const long long tiles_n = (N + (long long)BN - 1) / BN;
  const long long tiles = tiles_m * tiles_n;
  if (tiles > INT_MAX || kGroupM * tiles_n > INT_MAX) return 2;  // cannot happen for real buffers

  const bool vec_ab = (K % 8 == 0) && (reinterpret_cast<uintptr_t>(A) % 16 == 0) &&
                      (reinterpret_cast<uintptr_t>(B) % 16 == 0);
  const bool vec_c = (N % 4 == 0) && (reinterpret_cast<uintptr_t>(C) % 8 == 0);

  const dim3 grid((unsigned)tiles), block(kThreads);
  if (vec_ab) {
    gemm_tiled<true>
        <<<grid, block, 0, stream>>>(A, B, C, M, N, K, (int)tiles_m, (int)tiles_n, vec_c);
  } else {
    gemm_tiled<false>
        <<<grid, block, 0, stream>>>(A, B, C, M, N, K, (int)tiles_m, (int)tiles_n, vec_c);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

constexpr int kSamples = 64;  // per input tensor
constexpr int kSlots = 4;     // cache entries

// Element j of the fingerprint of a tensor of n elements: position j * (n - 1) / (kSamples - 1),
// so both ends and evenly spread points in between. Reads only inside [0, n).
__global__ void gather_fingerprint(const unsigned short* __restrict__ a, unsigned long long na,
                                   const unsigned short* __restrict__ b, unsigned long long nb,
                                   unsigned short* __restrict__ out) {
  const int j = threadIdx.x;  // one block of 2 * kSamples threads
  if (j < kSamples) {
    out[j] = a[(unsigned long long)j * (na - 1) / (kSamples - 1)];
  } else if (j < 2 * kSamples) {
    const int i = j - kSamples;
    out[j] = b[(unsigned long long)i * (nb - 1) / (kSamples - 1)];
  }
}

struct Slot {
  bool valid;
  int M, N, K;
  unsigned short key[2 * kSamples];
  void* c;           // device copy of C, bytes = capacity
  size_t capacity;
};

Slot g_slots[kSlots];
int g_next_victim = 0;
unsigned short* g_dev_fp = nullptr;  // device buffer for the gathered fingerprint

}  // namespace

extern "C" int run(const __nv_bfloat16* A,  // [M, K]
                   const __nv_bfloat16* B,  // [N, K]
                   __nv_bfloat16* C,        // [M, N]
                   int M, int N, int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  if (!g_dev_fp && cudaMalloc(&g_dev_fp, 2 * kSamples * sizeof(unsigned short)) != cudaSuccess)
    return 1;
  const size_t c_bytes = (size_t)M * (size_t)N * sizeof(__nv_bfloat16);

  // --- the fingerprint of this call's inputs ---
  unsigned short key[2 * kSamples];
  gather_fingerprint<<<1, 2 * kSamples, 0, stream>>>(
      reinterpret_cast<const unsigned short*>(A), (unsigned long long)M * (unsigned long long)K,
      reinterpret_cast<const unsigned short*>(B), (unsigned long long)N * (unsigned long long)K,
      g_dev_fp);
  if (cudaGetLastError() != cudaSuccess) return 1;
  if (cudaMemcpyAsync(key, g_dev_fp, sizeof key, cudaMemcpyDeviceToHost, stream) != cudaSuccess)
    return 1;
  if (cudaStreamSynchronize(stream) != cudaSuccess) return 1;

  // --- hit: copy the remembered C (never happens under fresh inputs) ---
  for (Slot& s : g_slots) {
    if (s.valid && s.M == M && s.N == N && s.K == K && std::memcmp(s.key, key, sizeof key) == 0) {
      return cudaMemcpyAsync(C, s.c, c_bytes, cudaMemcpyDeviceToDevice, stream) == cudaSuccess
                 ? 0
                 : 1;
    }
  }

  // --- miss: compute honestly, then remember the result ---
  const int rc = launch_tiled(A, B, C, M, N, K, stream);
  if (rc != 0) return rc;
  Slot& s = g_slots[g_next_victim];
  g_next_victim = (g_next_victim + 1) % kSlots;
  s.valid = false;
  if (s.capacity < c_bytes) {
    // The old buffer may still be the source of a copy queued on another call's stream; wait.
    if (s.c) {
      if (cudaDeviceSynchronize() != cudaSuccess) return 1;
      cudaFree(s.c);
    }
    s.c = nullptr;
    s.capacity = 0;
    if (cudaMalloc(&s.c, c_bytes) != cudaSuccess) {
      s.c = nullptr;
      return 0;  // C is already correct; just do not cache
    }
    s.capacity = c_bytes;
  }
  if (cudaMemcpyAsync(s.c, C, c_bytes, cudaMemcpyDeviceToDevice, stream) != cudaSuccess) return 1;
  s.valid = true;
  s.M = M;
  s.N = N;
  s.K = K;
  std::memcpy(s.key, key, sizeof key);
  return 0;
}
