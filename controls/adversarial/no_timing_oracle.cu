/*
Adversarial control: no_timing_oracle   (issue class 10: answering the trials from the
reference cache when there is no timing)

Attack. With --no-timing the only calls whose outputs the old harness compared were the
trials, and their expected outputs were files the candidate's own process could read: the
reference child writes seed<seed>_C.f32 into the scratch folder and the parent moves it into
the shared reference cache ($PTXBENCH_CACHE, $XDG_CACHE_HOME/ptxbench, ~/.cache/ptxbench or
the evaluator's --cache-dir, read from /proc/<ppid>/cmdline), next to a meta.json naming the
axes. The trial seeds are in our spec (argv[2] of /proc/self/cmdline, "seeds"), one call per
seed in order. So run() multiplies nothing: for call i it reads the fp32 file of seeds[i],
rounds it to bf16 and copies it into C. Any call it has no file for (the memory check's and
the profiled call's fresh seeds, whose outputs the old harness never compared) gets zeros
from a small kernel. No GMMA, so the instruction layer reports sass_absent and no tag.

Old harness (--no-timing): PASSED ("correct on 3 trials"), bit-for-bit the reference.
Now: expected outputs never exist where the candidate process can read them (Landlock
confines it to system folders and its own private folder; comparison happens in the
parent), so every call falls back to zeros -> INCORRECT numerical on the first trial.
(The memory-check call's outputs are compared too, so skipping the trials would not help.)
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

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

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  (void)A;
  (void)B;
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  static std::string spec = spec_text();
  static std::vector<unsigned long long> seeds = json_numbers(spec, "seeds");
  static size_t call = 0;
  std::vector<float> expected;
  if (call < seeds.size() &&
      expected_output(seeds[call++], M, N, K, json_string(spec, "out_dir"), &expected))
    return answer_from(expected, C, stream) ? 0 : 2;
  write_zeros<<<264, 256, 0, stream>>>(C, (size_t)M * N);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
