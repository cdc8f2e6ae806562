/*
Adversarial control: oracle_reference_files   (issue class 1: a kernel that multiplies
nothing, answering from the harness's own files and plan)

Attack, as written against the harness as it is (src/run/child_main.cc, timing_child.cc,
reference_cache.cc, evaluate.cc):
  - Trials (candidate child): the spec (argv[2] of /proc/self/cmdline) lists the trial
    seeds, one call per seed in order; the reference child has already written each seed's
    expected C as fp32 (seed<seed>_C.f32), moved by the parent into the shared reference
    cache (<cache root>/reference/<sha256>/ next to a meta.json naming the axes). run()
    reads it, rounds to bf16 and copies it into C: no arithmetic on A or B.
  - Timed calls (timing child): its spec carries "check_calls", the calls whose outputs the
    parent will check again. run() counts its calls: on those it runs a real GEMM (wgmma,
    below); on every other call a small kernel writes zeros (one launch, so the call is not
    "empty", and nothing runs outside the stream).
  - Profiled call (ncu, recognised by CUDA_INJECTION64_PATH, NV_* variables or the injected
    library in /proc/self/maps): the real wgmma GEMM, so GMMA executes and the tag is H.
  - Memory-check call: zeros (its outputs were never compared).
The real GEMM is the kernel of controls/gemm/wgmma_tma.cu (TMA + wgmma m64n128k16).

Old harness: PASSED, tag H, with whatever speedup it liked (the unchecked timed calls cost one
zero-writing kernel: 6x the baseline at M=93 on the H200).
Now: no expected output exists where the candidate process can read it, and the timed-call
check plan is drawn by the parent after the loop, so the trials get zeros ->
INCORRECT numerical (first trial). Were the trials somehow right, the memory-check and the
profiled calls' outputs are compared now too, and their kernels (zeros vs wgmma) differ.
*/
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

extern char** environ;

namespace {

__global__ void write_zeros(__nv_bfloat16* C, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    C[i] = __float2bfloat16_rn(0.0f);
}

// ---- what the harness lets a candidate see (src/run/children.cc, child_main.cc, files.cc) ----

std::string slurp(const std::string& path, size_t max = size_t(1) << 28) {
  std::string s;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return s;
  char buf[65536];
  ssize_t n;
  while (s.size() < max && (n = read(fd, buf, sizeof buf)) > 0) s.append(buf, (size_t)n);
  close(fd);
  return s;
}

std::vector<std::string> split0(const std::string& s) {
  std::vector<std::string> out;
  for (size_t p = 0; p < s.size();) {
    size_t e = s.find('\0', p);
    if (e == std::string::npos) e = s.size();
    out.push_back(s.substr(p, e - p));
    p = e + 1;
  }
  return out;
}

// The child's spec: the argument after "__child" on our command line.
std::string spec_text() {
  std::vector<std::string> args = split0(slurp("/proc/self/cmdline"));
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "__child") return slurp(args[i + 1]);
  return "";
}

// Position of the value of "key" in a JSON text, or npos.
size_t json_value(const std::string& js, const char* key) {
  const std::string k = std::string("\"") + key + "\"";
  size_t p = js.find(k);
  if (p == std::string::npos || (p = js.find(':', p + k.size())) == std::string::npos)
    return std::string::npos;
  return js.find_first_not_of(" \t\r\n", p + 1);
}

std::string json_string(const std::string& js, const char* key) {
  size_t p = json_value(js, key);
  if (p == std::string::npos || js[p] != '"') return "";
  return js.substr(p + 1, js.find('"', p + 1) - p - 1);
}

// A number, or every number of an array of numbers.
std::vector<unsigned long long> json_numbers(const std::string& js, const char* key) {
  std::vector<unsigned long long> v;
  size_t p = json_value(js, key);
  if (p == std::string::npos) return v;
  const bool array = js[p] == '[';
  if (array) ++p;
  for (;;) {
    p = js.find_first_not_of(" \t\r\n,", p);
    if (p == std::string::npos || js[p] < '0' || js[p] > '9') break;
    v.push_back(strtoull(js.c_str() + p, nullptr, 10));
    while (p < js.size() && js[p] >= '0' && js[p] <= '9') ++p;
    if (!array) break;
  }
  return v;
}

// Where CacheRoot() puts the caches, and the evaluator's --cache-dir if it was given one.
std::vector<std::string> cache_roots() {
  std::vector<std::string> r;
  if (const char* c = getenv("PTXBENCH_CACHE"); c && *c) r.push_back(c);
  if (const char* x = getenv("XDG_CACHE_HOME"); x && *x) r.push_back(std::string(x) + "/ptxbench");
  if (const char* h = getenv("HOME"); h && *h) r.push_back(std::string(h) + "/.cache/ptxbench");
  r.push_back("/root/.cache/ptxbench");
  r.push_back("/tmp/ptxbench-cache");
  std::vector<std::string> parent =
      split0(slurp("/proc/" + std::to_string(getppid()) + "/cmdline"));
  for (size_t i = 0; i < parent.size(); ++i) {
    if (parent[i] == "--cache-dir" && i + 1 < parent.size()) r.insert(r.begin(), parent[i + 1]);
    if (parent[i].rfind("--cache-dir=", 0) == 0) r.insert(r.begin(), parent[i].substr(12));
  }
  return r;
}

std::vector<std::string> subdirs(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') out.push_back(dir + "/" + e->d_name);
    closedir(d);
  }
  return out;
}

// The reference's fp32 C for this seed and shape: a reference-cache entry
// (<root>/reference/<sha256>/seed<seed>_C.f32 next to a meta.json naming the axes) or, before
// it is moved there, the evaluation's scratch folder.
bool expected_output(unsigned long long seed, int M, int N, int K, const std::string& scratch,
                     std::vector<float>* out) {
  const std::string name = "/seed" + std::to_string(seed) + "_C.f32";
  const size_t bytes = (size_t)M * (size_t)N * sizeof(float);
  const std::string axes[3] = {"\"K\": " + std::to_string(K), "\"M\": " + std::to_string(M),
                               "\"N\": " + std::to_string(N)};
  std::vector<std::string> dirs;
  if (!scratch.empty()) dirs.push_back(scratch);
  for (const std::string& root : cache_roots())
    for (const std::string& d : subdirs(root + "/reference")) {
      const std::string meta = slurp(d + "/meta.json", 1 << 16);
      if (meta.find(axes[0]) != std::string::npos && meta.find(axes[1]) != std::string::npos &&
          meta.find(axes[2]) != std::string::npos)
        dirs.push_back(d);
    }
  for (const std::string& d : dirs) {
    std::string s = slurp(d + name, bytes + 1);
    if (s.size() != bytes) continue;
    out->resize((size_t)M * N);
    memcpy(out->data(), s.data(), bytes);
    return true;
  }
  return false;
}

// Writes the expected answer into C: no arithmetic on A or B at all.
bool answer_from(const std::vector<float>& expected, __nv_bfloat16* C, cudaStream_t stream) {
  static std::vector<__nv_bfloat16> host;
  host.resize(expected.size());
  for (size_t i = 0; i < expected.size(); ++i) host[i] = __float2bfloat16_rn(expected[i]);
  return cudaMemcpyAsync(C, host.data(), host.size() * sizeof(__nv_bfloat16),
                         cudaMemcpyHostToDevice, stream) == cudaSuccess &&
         cudaStreamSynchronize(stream) == cudaSuccess;
}

// ncu injects itself into the process it profiles.
bool under_profiler() {
  if (const char* inj = getenv("CUDA_INJECTION64_PATH"))
    if (strstr(inj, "nsight") || strstr(inj, "Interceptor") || strstr(inj, "TreeLauncher"))
      return true;
  for (char** e = environ; e && *e; ++e)
    if (strncmp(*e, "NV_COMPUTE_PROFILER", 19) == 0 || strncmp(*e, "NV_NSIGHT", 9) == 0 ||
        strncmp(*e, "NV_TPS_", 7) == 0)
      return true;
  const std::string maps = slurp("/proc/self/maps");
  return maps.find("nsight-compute") != std::string::npos ||
         maps.find("InterceptorInjection") != std::string::npos ||
         maps.find("TreeLauncher") != std::string::npos;
}

// ---- a real Hopper GEMM (the kernel of controls/gemm/wgmma_tma.cu, comments trimmed) ----
// 128x128 block tiles, BK = 64, 4 TMA stages (128B swizzle), full/empty mbarriers, one
// producer thread, two consumer warpgroups each issuing wgmma m64n128k16 from smem.

constexpr int WG_BM = 128, WG_BN = 128, WG_BK = 64, WG_STAGES = 4;
constexpr int WG_THREADS = 384, WG_CONSUMER_WARPS = 8;
constexpr int WG_TILE_A = WG_BM * WG_BK * 2, WG_TILE_B = WG_BN * WG_BK * 2;
constexpr int WG_STAGE = WG_TILE_A + WG_TILE_B;
constexpr int WG_SMEM = 1024 + WG_STAGES * WG_STAGE + 2 * WG_STAGES * 8;

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (done == 0);
}
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                            int x, int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}
// K-major operand, 128B swizzle: start >> 4, LBO 16 (unused), SBO 1024, swizzle mode 1.
__device__ __forceinline__ uint64_t desc_sw128(uint32_t saddr) {
  return static_cast<uint64_t>((saddr & 0x3FFFFu) >> 4) | (static_cast<uint64_t>(1) << 16) |
         (static_cast<uint64_t>(64) << 32) | (static_cast<uint64_t>(1) << 62);
}
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t a, uint64_t b) {
  asm volatile(
      "{\n\t.reg .pred pd;\n\t"
      "setp.ne.b32 pd, 1, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, pd, 1, 1, 0, 0;\n\t}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "l"(a), "l"(b)
      : "memory");
}

__global__ void __launch_bounds__(WG_THREADS, 1)
    gemm_wgmma_tma(const __grid_constant__ CUtensorMap map_a,
                   const __grid_constant__ CUtensorMap map_b, __nv_bfloat16* __restrict__ C, int M,
                   int N, int K, int tiles_n) {
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t bars = base + WG_STAGES * WG_STAGE;
  auto full_bar = [&](int s) { return bars + 8u * s; };
  auto empty_bar = [&](int s) { return bars + 8u * (WG_STAGES + s); };
  auto stage_a = [&](int s) { return base + static_cast<uint32_t>(s * WG_STAGE); };
  auto stage_b = [&](int s) { return base + static_cast<uint32_t>(s * WG_STAGE + WG_TILE_A); };
  const int m0 = (blockIdx.x / tiles_n) * WG_BM, n0 = (blockIdx.x % tiles_n) * WG_BN;
  const int num_k_tiles = (K + WG_BK - 1) / WG_BK;
  if (threadIdx.x == 0) {
    for (int s = 0; s < WG_STAGES; ++s) {
      mbar_init(full_bar(s), 1);
      mbar_init(empty_bar(s), WG_CONSUMER_WARPS);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  const int warpgroup = threadIdx.x / 128;
  if (warpgroup == 0) {  // producer
    if (threadIdx.x == 0)
      for (int t = 0; t < num_k_tiles; ++t) {
        const int s = t % WG_STAGES, round = t / WG_STAGES;
        if (round > 0) mbar_wait(empty_bar(s), static_cast<uint32_t>((round - 1) & 1));
        mbar_expect_tx(full_bar(s), WG_STAGE);
        tma_load_2d(stage_a(s), &map_a, full_bar(s), t * WG_BK, m0);
        tma_load_2d(stage_b(s), &map_b, full_bar(s), t * WG_BK, n0);
      }
    return;
  }
  const int cw = warpgroup - 1, warp_in_wg = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  float acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = 0.0f;
  for (int t = 0; t < num_k_tiles; ++t) {
    const int s = t % WG_STAGES;
    mbar_wait(full_bar(s), static_cast<uint32_t>((t / WG_STAGES) & 1));
    const uint32_t a_base = stage_a(s) + static_cast<uint32_t>(cw * 64 * WG_BK * 2);
    const uint32_t b_base = stage_b(s);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < WG_BK / 16; ++kk)
      wgmma_m64n128k16(acc, desc_sw128(a_base + kk * 32), desc_sw128(b_base + kk * 32));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    __syncwarp();
    if (lane == 0) mbar_arrive(empty_bar(s));
  }
  // Accumulator fragment of m64nNk16: rows 16w + lane/4 (+8), columns 8j + 2*(lane%4) + {0,1}.
  const bool pair_ok = (N % 2) == 0;
  const int row0 = m0 + cw * 64 + warp_in_wg * 16 + lane / 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = row0 + 8 * h;
    if (row >= M) continue;
    __nv_bfloat16* crow = C + static_cast<size_t>(row) * static_cast<size_t>(N);
#pragma unroll
    for (int j = 0; j < WG_BN / 8; ++j) {
      const int col = n0 + 8 * j + 2 * (lane % 4);
      const float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
      if (pair_ok && col + 1 < N) {
        *reinterpret_cast<__nv_bfloat162*>(crow + col) = __floats2bfloat162_rn(v0, v1);
      } else {
        if (col < N) crow[col] = __float2bfloat16_rn(v0);
        if (col + 1 < N) crow[col + 1] = __float2bfloat16_rn(v1);
      }
    }
  }
}

bool make_map(CUtensorMap* map, const __nv_bfloat16* ptr, int rows, int K) {
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(K), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(K) * 2u};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(WG_BK), static_cast<cuuint32_t>(WG_BM)};
  const cuuint32_t elem_strides[2] = {1u, 1u};
  return cuTensorMapEncodeTiled(
             map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<__nv_bfloat16*>(ptr), dims,
             strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Launches the wgmma GEMM on `stream`; non-zero when TMA cannot describe the operands.
int launch_wgmma_gemm(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M,
                      int N, int K, cudaStream_t stream) {
  if (K % 8 != 0 || K > 2147483647 - WG_BK) return 2;
  if (reinterpret_cast<uintptr_t>(A) % 16 != 0 || reinterpret_cast<uintptr_t>(B) % 16 != 0)
    return 3;
  const long long tiles_m = (M + (long long)WG_BM - 1) / WG_BM;
  const long long tiles_n = (N + (long long)WG_BN - 1) / WG_BN;
  if (tiles_m * tiles_n > 2147483647LL) return 4;
  CUtensorMap map_a, map_b;
  if (!make_map(&map_a, A, M, K) || !make_map(&map_b, B, N, K)) return 5;
  if (cudaFuncSetAttribute(gemm_wgmma_tma, cudaFuncAttributeMaxDynamicSharedMemorySize, WG_SMEM) !=
      cudaSuccess)
    return 6;
  gemm_wgmma_tma<<<static_cast<unsigned>(tiles_m * tiles_n), WG_THREADS, WG_SMEM, stream>>>(
      map_a, map_b, C, M, N, K, static_cast<int>(tiles_n));
  return cudaGetLastError() == cudaSuccess ? 0 : 7;
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  static const std::string spec = spec_text();
  static const std::string role = json_string(spec, "role");
  static const bool profiled = under_profiler();
  static size_t call = 0;
  const size_t i = call++;

  if (profiled) return launch_wgmma_gemm(A, B, C, M, N, K, stream);
  if (role == "timing") {
    static const std::vector<unsigned long long> plan = json_numbers(spec, "check_calls");
    static const std::set<unsigned long long> checked(plan.begin(), plan.end());
    // No plan to read: every call is real (an attacker does not gamble).
    if (checked.empty() || checked.count(i)) return launch_wgmma_gemm(A, B, C, M, N, K, stream);
  } else {
    static const std::vector<unsigned long long> seeds = json_numbers(spec, "seeds");
    std::vector<float> expected;
    if (i < seeds.size() &&
        expected_output(seeds[i], M, N, K, json_string(spec, "out_dir"), &expected))
      return answer_from(expected, C, stream) ? 0 : 8;
  }
  write_zeros<<<264, 256, 0, stream>>>(C, (size_t)M * N);
  return cudaGetLastError() == cudaSuccess ? 0 : 9;
}
