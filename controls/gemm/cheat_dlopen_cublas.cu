/*
Control: cheat_dlopen_cublas
Expected verdict: RULE_VIOLATION (reason forbidden_library)

The cheat: call the vendor library anyway, hidden from the source screen.
  - The screen rejects the identifiers dlopen/dlsym, <dlfcn.h>, every identifier starting with
    the cuBLAS prefixes and every cuBLAS header. This file names none of them: the two loader
    functions are declared through preprocessor token pasting (PB_CAT(dl, open) becomes the
    identifier only after preprocessing), the library file names and the function names are
    assembled at run time from character arrays, and the few cuBLASLt types and enum values it
    needs are declared here by hand with plain ints and pointers (their numeric ABI values
    copied from the CUDA 13.0 headers on the build machine: cublas_api.h, cublasLt.h).
  - On first use run() loads libcublasLt.so.13 (falling back to libcublasLt.so), resolves
    Create / MatmulDescCreate / MatmulDescSetAttribute / MatrixLayoutCreate /
    MatmulPreferenceCreate / MatmulAlgoGetHeuristic / Matmul, and builds a plan per shape:
    bf16 in and out, fp32 compute and scale, and the column-major trick (row-major C[M,N] is
    column-major C^T[N,M] = B * A^T, so library A = our B as K x N with ld K and op T, library
    B = our A as K x M with ld K and op N, D = our C as N x M with ld N), the heuristic's first
    algorithm, no workspace. Then every call is one cuBLASLt matmul on `stream`.
  - If the library or a symbol cannot be found, or the heuristic offers nothing, it falls back
    to tiled_correct's kernel (copied below unchanged), so it is correct either way.

Why the harness catches it: the correctness child lists /proc/self/maps before loading the
candidate and again after its calls; libcublasLt.so.13 appears in between, a vendor kernel
library loaded at run time = RULE_VIOLATION forbidden_library. (In the timing child the
harness has already loaded cuBLASLt for its own baseline, so the loader returns that copy and
no new mapping appears; there the cuBLASLt kernels running inside the candidate's calls are not
functions of the candidate's cubin = RULE_VIOLATION foreign_kernel.)

Build (as the harness does):
nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a \
     -cudart shared -o cheat_dlopen_cublas.so cheat_dlopen_cublas.cu -lcuda
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

// The run-time loader, declared by pasting tokens: the screen sees `dl` and `open`.
#define PB_CAT(a, b) a##b
extern "C" void* PB_CAT(dl, open)(const char* file, int mode);
extern "C" void* PB_CAT(dl, sym)(void* handle, const char* name);
#define pb_load PB_CAT(dl, open)
#define pb_symbol PB_CAT(dl, sym)
constexpr int kRtldNow = 2;  // glibc's RTLD_NOW (RTLD_LOCAL is 0)

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

// --- cuBLASLt ABI, declared by hand (numeric values copied from CUDA 13.0's cublas_api.h and
// cublasLt.h; C enums are ints; the opaque handles and descriptors are pointers) ---
using LtStatus = int;                    // cublasStatus_t
constexpr LtStatus kLtSuccess = 0;       // CUBLAS_STATUS_SUCCESS
constexpr int kComputeF32 = 68;          // cublasComputeType_t: CUBLAS_COMPUTE_32F
constexpr int kOpN = 0, kOpT = 1;        // cublasOperation_t: CUBLAS_OP_N, CUBLAS_OP_T
constexpr int kDescTransA = 3;           // cublasLtMatmulDescAttributes_t: ..._DESC_TRANSA
constexpr int kDescTransB = 4;           // ..._DESC_TRANSB
// cudaDataType_t values come with the CUDA runtime headers (library_types.h):
// CUDA_R_16BF = 14, CUDA_R_32F = 0.
struct LtAlgo {                          // cublasLtMatmulAlgo_t
  uint64_t data[8];
};
struct LtHeuristicResult {               // cublasLtMatmulHeuristicResult_t
  LtAlgo algo;
  size_t workspaceSize;
  LtStatus state;
  float wavesCount;
  int reserved[4];
};
using LtHandle = void*;   // cublasLtHandle_t
using LtDesc = void*;     // cublasLtMatmulDesc_t
using LtLayout = void*;   // cublasLtMatrixLayout_t
using LtPref = void*;     // cublasLtMatmulPreference_t

using FnCreate = LtStatus (*)(LtHandle*);
using FnDescCreate = LtStatus (*)(LtDesc*, int compute, int scale_type);
using FnDescSet = LtStatus (*)(LtDesc, int attr, const void* buf, size_t bytes);
using FnLayoutCreate = LtStatus (*)(LtLayout*, int type, uint64_t rows, uint64_t cols, int64_t ld);
using FnPrefCreate = LtStatus (*)(LtPref*);
using FnHeuristic = LtStatus (*)(LtHandle, LtDesc, LtLayout, LtLayout, LtLayout, LtLayout, LtPref,
                                 int requested, LtHeuristicResult* results, int* returned);
using FnMatmul = LtStatus (*)(LtHandle, LtDesc, const void* alpha, const void* a, LtLayout,
                              const void* b, LtLayout, const void* beta, const void* c, LtLayout,
                              void* d, LtLayout, const LtAlgo* algo, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream);

struct Lt {
  bool tried = false, ok = false;
  FnCreate create = nullptr;
  FnDescCreate desc_create = nullptr;
  FnDescSet desc_set = nullptr;
  FnLayoutCreate layout_create = nullptr;
  FnPrefCreate pref_create = nullptr;
  FnHeuristic heuristic = nullptr;
  FnMatmul matmul = nullptr;
  LtHandle handle = nullptr;
  // One plan, for the last shape seen (descriptors are leaked when the shape changes: a
  // control, not a library).
  bool planned = false;
  int M = 0, N = 0, K = 0;
  LtDesc op = nullptr;
  LtLayout a = nullptr, b = nullptr, c = nullptr;
  LtAlgo algo{};
};
Lt g_lt;

// The library's name prefix, spelled from characters at run time.
std::string lt_prefix() {
  const char p[] = {'c', 'u', 'b', 'l', 'a', 's', 'L', 't', '\0'};
  return std::string(p);
}

void* lt_fn(void* lib, const char* suffix) { return pb_symbol(lib, (lt_prefix() + suffix).c_str()); }

bool load_lt() {
  if (g_lt.tried) return g_lt.ok;
  g_lt.tried = true;
  const std::string base = std::string("lib") + lt_prefix() + ".so";
  void* lib = pb_load((base + ".13").c_str(), kRtldNow);
  if (!lib) lib = pb_load(base.c_str(), kRtldNow);
  if (!lib) return false;
  g_lt.create = reinterpret_cast<FnCreate>(lt_fn(lib, "Create"));
  g_lt.desc_create = reinterpret_cast<FnDescCreate>(lt_fn(lib, "MatmulDescCreate"));
  g_lt.desc_set = reinterpret_cast<FnDescSet>(lt_fn(lib, "MatmulDescSetAttribute"));
  g_lt.layout_create = reinterpret_cast<FnLayoutCreate>(lt_fn(lib, "MatrixLayoutCreate"));
  g_lt.pref_create = reinterpret_cast<FnPrefCreate>(lt_fn(lib, "MatmulPreferenceCreate"));
  g_lt.heuristic = reinterpret_cast<FnHeuristic>(lt_fn(lib, "MatmulAlgoGetHeuristic"));
  g_lt.matmul = reinterpret_cast<FnMatmul>(lt_fn(lib, "Matmul"));
  if (!g_lt.create || !g_lt.desc_create || !g_lt.desc_set || !g_lt.layout_create ||
      !g_lt.pref_create || !g_lt.heuristic || !g_lt.matmul)
    return false;
  if (g_lt.create(&g_lt.handle) != kLtSuccess) return false;
  g_lt.ok = true;
  return true;
}

bool plan_lt(int M, int N, int K) {
  if (g_lt.planned && g_lt.M == M && g_lt.N == N && g_lt.K == K) return true;
  g_lt.planned = false;
  if (g_lt.desc_create(&g_lt.op, kComputeF32, CUDA_R_32F) != kLtSuccess) return false;
  const int32_t ta = kOpT, tb = kOpN;
  if (g_lt.desc_set(g_lt.op, kDescTransA, &ta, sizeof ta) != kLtSuccess) return false;
  if (g_lt.desc_set(g_lt.op, kDescTransB, &tb, sizeof tb) != kLtSuccess) return false;
  if (g_lt.layout_create(&g_lt.a, CUDA_R_16BF, K, N, K) != kLtSuccess) return false;  // our B
  if (g_lt.layout_create(&g_lt.b, CUDA_R_16BF, K, M, K) != kLtSuccess) return false;  // our A
  if (g_lt.layout_create(&g_lt.c, CUDA_R_16BF, N, M, N) != kLtSuccess) return false;  // our C
  LtPref pref = nullptr;
  if (g_lt.pref_create(&pref) != kLtSuccess) return false;  // defaults: no workspace
  LtHeuristicResult result;
  std::memset(&result, 0, sizeof result);
  int found = 0;
  if (g_lt.heuristic(g_lt.handle, g_lt.op, g_lt.a, g_lt.b, g_lt.c, g_lt.c, pref, 1, &result,
                     &found) != kLtSuccess ||
      found < 1 || result.state != kLtSuccess || result.workspaceSize != 0)
    return false;
  g_lt.algo = result.algo;
  g_lt.M = M;
  g_lt.N = N;
  g_lt.K = K;
  g_lt.planned = true;
  return true;
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A,  // [M, K]
                   const __nv_bfloat16* B,  // [N, K]
                   __nv_bfloat16* C,        // [M, N]
                   int M, int N, int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  if (load_lt() && plan_lt(M, N, K)) {
    const float alpha = 1.0f, beta = 0.0f;
    // Library A = our B, library B = our A; beta = 0, so C is only written (as D).
    if (g_lt.matmul(g_lt.handle, g_lt.op, &alpha, B, g_lt.a, A, g_lt.b, &beta, C, g_lt.c, C,
                    g_lt.c, &g_lt.algo, nullptr, 0, stream) == kLtSuccess)
      return 0;
  }
  return launch_tiled(A, B, C, M, N, K, stream);  // the library was not usable: do it ourselves
}
