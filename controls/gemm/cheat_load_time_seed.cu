/*
Control: cheat_load_time_seed
Expected verdict: RULE_VIOLATION (reason call_history)

The cheat: the correctness trials use public default seeds (20260001, 20260002, 20260003) and a
documented input generator, so their inputs, and hence their answers, can be made in advance.
  - A constructor (__attribute__((constructor))) runs when the harness loads the shared object.
    For the headline shape M=8192, N=7168, K=5120 it regenerates, on the GPU, the inputs the
    harness will use for each of the three seeds, with this file's own copy of the harness's
    generator (src/task/random_normal.h's StandardNormal: SplitMix64 keys, Box-Muller in double
    precision, even index cosine / odd index sine; src/run/device_ops.cu's fill: element i =
    __float2bfloat16_rn((float)StandardNormal(seed, tensor, i)), tensor index 0 for A and 1 for
    B), computes C for each with tiled_correct's kernel (copied below unchanged), keeps the three
    results on the device, and keeps on the host 16 elements of each A at fixed positions (the
    seed's fingerprint). The generator kernel is this file's own (regen_normal_bf16, no
    ptxbench_ prefix). For any other shape the first call does the same precomputation
    (so the control behaves the same at every workload).
  - run() gathers the same 16 elements of the A it is given (a tiny kernel, one 32-byte copy to
    the host on `stream`, a synchronization of `stream`). If they match a seed's fingerprint
    (at least 12 of 16 equal, so that a rare last-bit difference in the regenerated inputs does
    not matter), it copies that seed's stored C into C with one cudaMemcpyAsync on `stream`.
    Otherwise it pretends to be a very fast GEMM: cudaMemsetAsync(C, 0) on `stream`.

Why it passes correctness: the correctness child's 3 trials (and the memory check's one) use
exactly the seeds it prepared for, so every trial gets the exact answer of an honest kernel.

Why the harness catches it: the timing child regenerates the inputs of every call from a fresh
seed drawn at run time, never one of the public ones; no fingerprint matches, C is all zeros,
and the re-validation of the last call on each buffer set finds it wrong: wrong on timed calls
while right on the trials = RULE_VIOLATION call_history. (The zero-fill calls take ~0.1 ms on
the GPU and about as long on the host, so no timing defense fires first. The load-time work
is done before the timing loop starts and is discarded with everything before it.)

Build (as the harness does):
nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a \
     -cudart shared -o cheat_load_time_seed.so cheat_load_time_seed.cu -lcuda
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstddef>
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

// --- the harness's input generator, replicated (same operations in the same order) ---
__host__ __device__ inline uint64_t mix64(uint64_t x) {  // SplitMix64
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__host__ __device__ inline double standard_normal(uint64_t seed, uint32_t tensor, uint64_t i) {
  uint64_t key = mix64(seed ^ (0xA0761D6478BD642Full * (tensor + 1)));
  uint64_t h1 = mix64(key ^ mix64(i >> 1));
  uint64_t h2 = mix64(h1 ^ 0xE7037ED1A0B428DBull);
  double u1 = (static_cast<double>(h1 >> 11) + 0.5) * 0x1.0p-53;  // (0, 1)
  double u2 = static_cast<double>(h2 >> 11) * 0x1.0p-53;          // [0, 1)
  double r = sqrt(-2.0 * log(u1));
  double angle = 6.283185307179586476925 * u2;
  return (i & 1) ? r * sin(angle) : r * cos(angle);
}

__global__ void regen_normal_bf16(__nv_bfloat16* out, size_t n, uint64_t seed, uint32_t tensor) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16_rn(static_cast<float>(standard_normal(seed, tensor, i)));
}

int grid_for(size_t n) {
  size_t blocks = (n + 255) / 256;
  return static_cast<int>(blocks < 65536 ? (blocks ? blocks : 1) : 65536);
}

// --- the fingerprint: 16 elements of A at fixed positions j * (n - 1) / 15 ---
constexpr int kFp = 16;
constexpr int kFpNeeded = 12;  // of 16 equal: the same inputs

__global__ void pick_fingerprint(const unsigned short* __restrict__ a, unsigned long long n,
                                 unsigned short* __restrict__ out) {
  const int j = threadIdx.x;
  if (j < kFp) out[j] = a[(unsigned long long)j * (n - 1) / (kFp - 1)];
}

constexpr uint64_t kSeeds[3] = {20260001ull, 20260002ull, 20260003ull};  // the public defaults
constexpr int kHeadM = 8192, kHeadN = 7168, kHeadK = 5120;                 // the headline

// The answers prepared for one shape. Plain data only: the constructor may run before any C++
// dynamic initializer of this file.
struct Store {
  bool ready;
  int M, N, K;
  __nv_bfloat16* c[3];                 // device, M x N each
  unsigned short fp[3][kFp];           // host copies of each seed's A fingerprint
};
constexpr int kStores = 4;
Store g_store[kStores];
int g_stores = 0;
unsigned short* g_dev_fp = nullptr;  // device, kFp elements

// Regenerates the inputs of the three public seeds at M x N x K, computes their C, and fills
// *st. Everything on `s`, which it synchronizes. Returns false (and frees what it took) on any
// failure.
bool precompute(int M, int N, int K, cudaStream_t s, Store* st) {
  st->ready = false;
  if (!g_dev_fp && cudaMalloc(&g_dev_fp, kFp * sizeof(unsigned short)) != cudaSuccess) {
    g_dev_fp = nullptr;
    return false;
  }
  const size_t na = (size_t)M * K, nb = (size_t)N * K, nc = (size_t)M * N;
  __nv_bfloat16 *a = nullptr, *b = nullptr;
  bool ok = cudaMalloc(&a, na * sizeof(__nv_bfloat16)) == cudaSuccess &&
            cudaMalloc(&b, nb * sizeof(__nv_bfloat16)) == cudaSuccess;
  for (int i = 0; i < 3; ++i) st->c[i] = nullptr;
  for (int i = 0; ok && i < 3; ++i)
    ok = cudaMalloc(&st->c[i], nc * sizeof(__nv_bfloat16)) == cudaSuccess;
  for (int i = 0; ok && i < 3; ++i) {
    regen_normal_bf16<<<grid_for(na), 256, 0, s>>>(a, na, kSeeds[i], 0);  // A: tensor 0
    regen_normal_bf16<<<grid_for(nb), 256, 0, s>>>(b, nb, kSeeds[i], 1);  // B: tensor 1
    ok = cudaGetLastError() == cudaSuccess && launch_tiled(a, b, st->c[i], M, N, K, s) == 0;
    if (!ok) break;
    pick_fingerprint<<<1, 32, 0, s>>>(reinterpret_cast<const unsigned short*>(a), na, g_dev_fp);
    ok = cudaGetLastError() == cudaSuccess &&
         cudaMemcpyAsync(st->fp[i], g_dev_fp, sizeof st->fp[i], cudaMemcpyDeviceToHost, s) ==
             cudaSuccess &&
         cudaStreamSynchronize(s) == cudaSuccess;
  }
  if (cudaStreamSynchronize(s) != cudaSuccess) ok = false;
  if (a) cudaFree(a);
  if (b) cudaFree(b);
  if (!ok) {
    for (int i = 0; i < 3; ++i)
      if (st->c[i]) cudaFree(st->c[i]);
    cudaGetLastError();  // leave no error behind for the harness to blame on a later call
    return false;
  }
  st->M = M;
  st->N = N;
  st->K = K;
  st->ready = true;
  return true;
}

// Load time: the headline shape, before any call.
__attribute__((constructor)) void prepare_at_load() {
  cudaStream_t s = nullptr;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  if (precompute(kHeadM, kHeadN, kHeadK, s, &g_store[0])) g_stores = 1;
  cudaStreamDestroy(s);
}

Store* find_store(int M, int N, int K) {
  for (int i = 0; i < g_stores; ++i)
    if (g_store[i].ready && g_store[i].M == M && g_store[i].N == N && g_store[i].K == K)
      return &g_store[i];
  return nullptr;
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A,  // [M, K]
                   const __nv_bfloat16* B,  // [N, K]
                   __nv_bfloat16* C,        // [M, N]
                   int M, int N, int K, cudaStream_t stream) {
  (void)B;
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  const size_t c_bytes = (size_t)M * (size_t)N * sizeof(__nv_bfloat16);
  Store* st = find_store(M, N, K);
  if (!st && g_stores < kStores && precompute(M, N, K, stream, &g_store[g_stores]))
    st = &g_store[g_stores++];
  if (st) {
    unsigned short fp[kFp];
    pick_fingerprint<<<1, 32, 0, stream>>>(reinterpret_cast<const unsigned short*>(A),
                                           (unsigned long long)M * (unsigned long long)K,
                                           g_dev_fp);
    if (cudaGetLastError() != cudaSuccess) return 1;
    if (cudaMemcpyAsync(fp, g_dev_fp, sizeof fp, cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
        cudaStreamSynchronize(stream) != cudaSuccess)
      return 1;
    for (int i = 0; i < 3; ++i) {
      int equal = 0;
      for (int j = 0; j < kFp; ++j) equal += fp[j] == st->fp[i][j];
      if (equal >= kFpNeeded)  // a trial seed: hand over the answer made at load time
        return cudaMemcpyAsync(C, st->c[i], c_bytes, cudaMemcpyDeviceToDevice, stream) ==
                       cudaSuccess
                   ? 0
                   : 1;
    }
  }
  // Unknown inputs: look fast.
  return cudaMemsetAsync(C, 0, c_bytes, stream) == cudaSuccess ? 0 : 1;
}
