/*
Control: cheat_memo_pointer
Expected verdict: RULE_VIOLATION (reason call_history)

The cheat: remember where the output went, and assume it is still there.
  - run() counts its calls. The first 3 calls compute C = A * B^T honestly with tiled_correct's
    kernel (copied below unchanged: 128x128x16 tiles, fp32 accumulation, bf16 out).
  - From the 4th call on, if the C pointer is one it has written before, it returns 0 at once
    and launches nothing: it assumes that the caller is re-running the same product on the same
    buffers and that the result from last time is still in C. A new C pointer is computed
    honestly (and remembered).

Why it passes correctness: the correctness child makes 3 trials on one set of buffers, and the
first 3 calls are honest. The memory-check child and the profiled call make 1 call each.

Why the harness catches it: the timing child is a fresh process that makes 10 warm-up + 50
timed calls rotating over 3 buffer sets. Calls 0..2 touch each set once (honest); every later
call finds its C pointer already seen and does nothing. Before every call the harness poisons
C (and regenerates the inputs from a fresh seed), so the outputs of the last call on each
buffer set, re-validated against the reference, are the poison pattern: wrong on timed calls
while right on the trials = RULE_VIOLATION call_history. No timing defense fires first: an
empty call has no activity (GPU span 0) and its host time (microseconds) is under the
host-vs-GPU threshold (1.5 x span + 1 ms).

Build (as the harness does):
nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a \
     -cudart shared -o cheat_memo_pointer.so cheat_memo_pointer.cu -lcuda
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

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

// Output pointers already written (a small fixed table: the harness uses at most a few).
constexpr int kMaxSeen = 64;
const void* g_seen[kMaxSeen];
int g_seen_count = 0;
long long g_calls = 0;

bool seen_before(const void* p) {
  for (int i = 0; i < g_seen_count; ++i)
    if (g_seen[i] == p) return true;
  return false;
}

void remember(const void* p) {
  if (!seen_before(p) && g_seen_count < kMaxSeen) g_seen[g_seen_count++] = p;
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A,  // [M, K]
                   const __nv_bfloat16* B,  // [N, K]
                   __nv_bfloat16* C,        // [M, N]
                   int M, int N, int K, cudaStream_t stream) {
  const long long call = g_calls++;
  // The cheat: after the first 3 calls, a known output pointer is assumed to hold the result.
  if (call >= 3 && seen_before(C)) return 0;
  const int rc = launch_tiled(A, B, C, M, N, K, stream);
  if (rc == 0) remember(C);
  return rc;
}
