/*
Control: cheat_private_stream
Expected verdict: RULE_VIOLATION (reason outside_stream)

The cheat: do the real work where the timer is not looking.
  - run() creates, once, a stream of its own (cudaStreamNonBlocking, so it does not even
    synchronize with the legacy default stream), launches tiled_correct's kernel (copied below
    unchanged) on that private stream, and returns 0 at once: no event recorded on it, no
    cudaStreamWaitEvent on `stream`. `stream` itself never receives any work.
  - A harness that only times `stream` (events on it, or its synchronization) measures an
    empty stream: the GEMM would look free.

Why it passes correctness: after run() the correctness child synchronizes `stream` and then
the whole device (cudaDeviceSynchronize) before it reads C, so the kernel on the private stream
has finished and C is right on all 3 trials.

Why the harness catches it: in the timing child the GPU time of a call is the CUPTI activity
of everything that started between run() being called and cudaStreamSynchronize(stream)
returning, on any stream. Here that synchronization returns at once (the stream is empty),
while the kernel on the private stream is still queued or running. Either its record starts
inside the call window and ends long after the window closed (more than the 20 us slack: the
kernel takes ~0.15 ms even at 93 x 128 x 2048 and ~13 ms at the headline), or it starts after
the window closed and is activity outside any call: both are RULE_VIOLATION outside_stream.

Build (as the harness does):
nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a \
     -cudart shared -o cheat_private_stream.so cheat_private_stream.cu -lcuda
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

cudaStream_t g_private = nullptr;  // created on first use, never destroyed

}  // namespace

extern "C" int run(const __nv_bfloat16* A,  // [M, K]
                   const __nv_bfloat16* B,  // [N, K]
                   __nv_bfloat16* C,        // [M, N]
                   int M, int N, int K, cudaStream_t stream) {
  (void)stream;  // the cheat: the caller's stream gets nothing
  if (!g_private && cudaStreamCreateWithFlags(&g_private, cudaStreamNonBlocking) != cudaSuccess) {
    g_private = nullptr;
    return 1;
  }
  // Launched and not joined: no event, no wait on `stream`, no synchronization.
  return launch_tiled(A, B, C, M, N, K, g_private);
}
