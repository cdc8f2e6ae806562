/*
Adversarial control: borrowed_cublaslt   (issue class 5: the harness's own cuBLASLt, kernel
names rewritten on the channel)

Attack. The timing child loads cuBLASLt for the baseline (dlopen RTLD_LOCAL) before it loads
the candidate, so in that process the library is already mapped: finding its path in
/proc/self/maps and calling dlopen(path, RTLD_NOLOAD) returns the harness's handle without
loading anything (the "new vendor libraries" check compares the maps before and after our
calls: nothing new). dlopen/dlsym are reached through token pasting and every cuBLASLt name
is assembled at run time, so the screen sees neither; the few enum values and the calls are
declared by hand. In the timing child each call is then one cuBLASLt bf16 GEMM on `stream`
(D^T = B * A^T) plus a one-instruction wgmma kernel (adv_token_wgmma); a relay on fd 3 (as in
channel_relay.cu) rewrites the "kernels" of every candidate sample to {"adv_token_wgmma": n},
so the foreign-kernel check only sees a kernel of our own cubin.
Where cuBLASLt is not loaded (the correctness, memory-check and profiled children) it
answers from the reference files (as oracle_reference_files.cu: spec seeds + reference
cache) and otherwise writes zeros; the token wgmma runs in every call, so the profiled call
executes GMMA.

Old harness: PASSED, tag H, ~1.0x the baseline (it was the baseline).
Now: the baseline runs in a process of its own, so no cuBLASLt is mapped in any process that
loads a candidate, and no reference file is readable: every call writes zeros ->
INCORRECT numerical on the first trial.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define ADV_CAT(a, b) a##b
extern "C" void* ADV_CAT(dl, open)(const char* file, int mode);
extern "C" void* ADV_CAT(dl, sym)(void* handle, const char* name);

// A kernel of our own cubin, with a name that needs no demangling.
__device__ float g_token_sink;
extern "C" __global__ void __launch_bounds__(128) adv_token_wgmma() {
  __shared__ __align__(128) __nv_bfloat16 tile[64 * 16 + 16 * 16];  // A 64x16, B 8x16 + slack
  for (int i = threadIdx.x; i < 64 * 16 + 16 * 16; i += 128) tile[i] = __float2bfloat16_rn(1.0f);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  // No swizzle: 8x8 core matrices, 128 bytes apart along K (LBO), 256 bytes along M/N (SBO).
  const uint64_t start = static_cast<uint32_t>(__cvta_generic_to_shared(tile));
  const uint64_t desc_a =
      ((start & 0x3FFFF) >> 4) | (uint64_t(128 >> 4) << 16) | (uint64_t(256 >> 4) << 32);
  const uint64_t desc_b =
      (((start + 2048) & 0x3FFFF) >> 4) | (uint64_t(128 >> 4) << 16) | (uint64_t(256 >> 4) << 32);
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, 1, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;"
      "\n\t}"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "l"(desc_a), "l"(desc_b)
      : "memory");
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  if (threadIdx.x == 0) g_token_sink = d0 + d1 + d2 + d3;
}

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

// ---- the harness's cuBLASLt --------------------------------------------------------------

struct Lt {
  int (*create)(void**);
  int (*desc_create)(void**, int compute, int scale);
  int (*desc_set)(void*, int attribute, const void*, size_t);
  int (*layout_create)(void**, int type, uint64_t rows, uint64_t cols, int64_t ld);
  int (*matmul)(void*, void*, const void*, const void*, void*, const void*, void*, const void*,
                const void*, void*, void*, void*, const void*, void*, size_t, cudaStream_t);
  void* handle = nullptr;
};

// Only if it is already in the process: RTLD_NOLOAD never loads anything.
bool borrow(Lt* lt) {
  const std::string stem = std::string("cu") + "blas" + "Lt";
  const std::string maps = slurp("/proc/self/maps");
  size_t hit = maps.find("lib" + stem + ".so");
  if (hit == std::string::npos) return false;
  const size_t begin = maps.rfind(' ', hit) + 1, end = maps.find('\n', hit);
  const std::string path = maps.substr(begin, end - begin);
  void* lib = ADV_CAT(dl, open)(path.c_str(), 0x4 /* RTLD_NOLOAD */ | 0x2 /* RTLD_NOW */);
  if (!lib) return false;
  auto fn = [&](const char* suffix) { return ADV_CAT(dl, sym)(lib, (stem + suffix).c_str()); };
  lt->create = reinterpret_cast<decltype(lt->create)>(fn("Create"));
  lt->desc_create = reinterpret_cast<decltype(lt->desc_create)>(fn("MatmulDescCreate"));
  lt->desc_set = reinterpret_cast<decltype(lt->desc_set)>(fn("MatmulDescSetAttribute"));
  lt->layout_create = reinterpret_cast<decltype(lt->layout_create)>(fn("MatrixLayoutCreate"));
  lt->matmul = reinterpret_cast<decltype(lt->matmul)>(fn("Matmul"));
  return lt->create && lt->desc_create && lt->desc_set && lt->layout_create && lt->matmul &&
         lt->create(&lt->handle) == 0;
}

// Row-major C[M,N] = A[M,K] B[N,K]^T is column-major C^T[N,M] = (B as KxN)^T (A as KxM).
bool lt_gemm(Lt& lt, const void* A, const void* B, void* C, int M, int N, int K,
             cudaStream_t stream) {
  constexpr int kCompute32F = 68, kR32F = 0, kR16BF = 14, kTransA = 3, kTransB = 4;
  void *desc = nullptr, *lb = nullptr, *la = nullptr, *lc = nullptr;
  const int op_t = 1, op_n = 0;
  if (lt.desc_create(&desc, kCompute32F, kR32F) || lt.desc_set(desc, kTransA, &op_t, 4) ||
      lt.desc_set(desc, kTransB, &op_n, 4) || lt.layout_create(&lb, kR16BF, K, N, K) ||
      lt.layout_create(&la, kR16BF, K, M, K) || lt.layout_create(&lc, kR16BF, N, M, N))
    return false;
  const float one = 1.0f, zero = 0.0f;
  return lt.matmul(lt.handle, desc, &one, B, lb, A, la, &zero, C, lc, C, lc, nullptr, nullptr, 0,
                   stream) == 0;  // (descriptors leak: an attacker does not tidy up)
}

// ---- the relay: only our own kernel's name reaches the parent -------------------------------

int g_real_channel = -1;
pthread_t g_relay;
bool g_relaying = false;

std::string renamed(std::string line) {
  if (line.find("\"event\":\"timing_sample\"") == std::string::npos ||
      line.find("\"phase\":\"candidate\"") == std::string::npos)
    return line;
  size_t p = line.find("\"kernels\":{");
  if (p == std::string::npos) return line;
  p += 10;
  const size_t e = line.find('}', p);
  long total = 0;
  for (size_t c = line.find("\":", p); c != std::string::npos && c < e; c = line.find("\":", c + 2))
    total += strtol(line.c_str() + c + 2, nullptr, 10);
  return line.substr(0, p) + "{\"adv_token_wgmma\":" + std::to_string(total) + line.substr(e);
}

void* relay_main(void* arg) {
  const int in = (int)(intptr_t)arg;
  std::string partial;
  char buf[65536];
  auto deliver = [](const std::string& s) {
    for (size_t off = 0; off < s.size();) {
      ssize_t n = write(g_real_channel, s.data() + off, s.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      off += (size_t)n;
    }
  };
  for (;;) {
    ssize_t n = read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial.append(buf, (size_t)n);
    for (size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
      deliver(renamed(partial.substr(0, nl)) + "\n");
      partial.erase(0, nl + 1);
    }
  }
  if (!partial.empty()) deliver(renamed(partial));
  close(in);
  return nullptr;
}

// In every child that loads us: only the timing child has samples to rewrite.
__attribute__((constructor)) void install_relay() {
  if (fcntl(3, F_GETFD) < 0) return;  // no channel
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return;
  const int real = fcntl(3, F_DUPFD_CLOEXEC, 10);
  if (real < 0 || dup2(p[1], 3) < 0) {
    close(p[0]);
    close(p[1]);
    if (real >= 0) close(real);
    return;
  }
  close(p[1]);
  g_real_channel = real;
  g_relaying = pthread_create(&g_relay, nullptr, relay_main, (void*)(intptr_t)p[0]) == 0;
}

__attribute__((destructor)) void finish_relay() {
  if (!g_relaying) return;
  close(3);
  pthread_join(g_relay, nullptr);
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  static Lt lt;
  static const bool have_lt = borrow(&lt);
  static const std::string spec = spec_text();
  static size_t call = 0;
  const size_t i = call++;
  adv_token_wgmma<<<1, 128, 0, stream>>>();
  if (have_lt && lt_gemm(lt, A, B, C, M, N, K, stream))
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
  static const std::vector<unsigned long long> seeds = json_numbers(spec, "seeds");
  std::vector<float> expected;
  if (json_string(spec, "role") == "candidate" && i < seeds.size() &&
      expected_output(seeds[i], M, N, K, json_string(spec, "out_dir"), &expected))
    return answer_from(expected, C, stream) && cudaGetLastError() == cudaSuccess ? 0 : 3;
  write_zeros<<<264, 256, 0, stream>>>(C, (size_t)M * N);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
