// Which part of the candidate sandbox stops cuInit when Landlock is on? Runs a small CUDA
// program (argv[1]) under combinations of the sandbox's layers (Landlock rule sets, PID/mount
// namespaces with their own /proc, the uid drop, Landlock scopes, no-dumpable) and prints one
// line per combination with what the program printed. Denials are also asked to be logged
// (Landlock ABI 7 audit), so `dmesg` can name the path after the run.
//
// Build: g++ -O1 -std=c++20 -o landlock_matrix landlock_matrix.cc
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

constexpr uint64_t kAllFs = (1ull << 16) - 1;
constexpr uint64_t kExec = 1, kWrite = 2, kRead = 4, kReadDir = 8, kTrunc = 1ull << 14,
                   kIoctl = 1ull << 15;
constexpr uint64_t kFileRights = kExec | kWrite | kRead | kTrunc | kIoctl;

struct Attr {
  uint64_t fs, net, scoped;
};
struct __attribute__((packed)) Beneath {
  uint64_t allowed;
  int32_t fd;
};

struct Variant {
  std::string name;
  bool ns = false, drop = false, scopes = false, not_dumpable = false, landlock = true;
  std::vector<std::pair<std::string, uint64_t>> extra;
  bool run_dir = false;  // read all of /run instead of /run/nvidia-persistenced
};

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "probe: %s: %s\n", what, std::strerror(errno));
  _exit(120);
}

void Restrict(const Variant& v, const std::string& work) {
  std::vector<std::pair<std::string, uint64_t>> rules;
  for (const char* p : {"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt",
                        "/sys", "/proc"})
    rules.push_back({p, kExec | kRead | kReadDir});
  rules.push_back({v.run_dir ? "/run" : "/run/nvidia-persistenced", kExec | kRead | kReadDir});
  rules.push_back({work, kAllFs});
  rules.push_back({"/dev/shm", kAllFs});
  for (const char* p : {"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"})
    rules.push_back({p, kRead | kWrite | kIoctl});
  for (const auto& e : std::filesystem::directory_iterator("/dev"))
    if (e.path().filename().string().rfind("nvidia", 0) == 0)
      rules.push_back({e.path().string(), kRead | kWrite | kIoctl});
  for (const auto& x : v.extra) rules.push_back(x);
  Attr a{kAllFs, 0, v.scopes ? 3ull : 0ull};
  int rs = static_cast<int>(syscall(444, &a, v.scopes ? sizeof a : 8, 0));
  if (rs < 0) Fail("create_ruleset");
  for (auto [path, acc] : rules) {
    int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) acc &= kFileRights;
    Beneath b{acc, fd};
    if (syscall(445, rs, 1, &b, 0) != 0) Fail(("add_rule " + path).c_str());
    close(fd);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) Fail("no_new_privs");
  // LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON: log denials after the exec too (ABI 7).
  if (syscall(446, rs, 2u, 0) != 0 && syscall(446, rs, 0u, 0) != 0) Fail("restrict_self");
}

void RunVariant(const Variant& v, const std::string& program, const std::string& work) {
  int out[2];
  if (pipe(out) != 0) Fail("pipe");
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(out[1], 2);
    if (v.ns) {
      if (unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC) != 0) Fail("unshare");
      pid_t inner = fork();
      if (inner != 0) {
        int st = 0;
        waitpid(inner, &st, 0);
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
      }
      if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) Fail("private");
      if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
        Fail("mount proc");
    }
    if (v.drop) {
      if (syscall(SYS_setgroups, 0, nullptr) != 0 || syscall(SYS_setresgid, 65534, 65534, 65534) ||
          syscall(SYS_setresuid, 65534, 65534, 65534))
        Fail("drop");
    }
    if (v.landlock) Restrict(v, work);
    if (v.not_dumpable) prctl(PR_SET_DUMPABLE, 0);
    execl(program.c_str(), program.c_str(), nullptr);
    Fail("exec");
  }
  close(out[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, n);
  close(out[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  for (auto& c : text)
    if (c == '\n') c = '|';
  std::printf("%-44s exit %3d  %s\n", v.name.c_str(), WIFEXITED(st) ? WEXITSTATUS(st) : -1,
              text.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: landlock_matrix PROGRAM WORKDIR\n");
    return 2;
  }
  std::string program = argv[1], work = argv[2];
  const uint64_t rwt = kRead | kWrite | kTrunc;
  std::vector<Variant> vs;
  auto add = [&](Variant v) { vs.push_back(std::move(v)); };
  add({.name = "no landlock, ns+drop", .ns = true, .drop = true, .landlock = false});
  add({.name = "ours"});
  add({.name = "ours+/proc/self", .extra = {{"/proc/self", rwt}}});
  add({.name = "ours+/proc/self+drop", .drop = true, .extra = {{"/proc/self", rwt}}});
  add({.name = "ours+/proc/self+ns", .ns = true, .extra = {{"/proc/self", rwt}}});
  add({.name = "ours+/proc/self+ns+drop", .ns = true, .drop = true, .extra = {{"/proc/self", rwt}}});
  add({.name = "ours+/proc write+ns+drop", .ns = true, .drop = true, .extra = {{"/proc", rwt}}});
  add({.name = "ours+/proc/self+ns+drop+/run",
       .ns = true,
       .drop = true,
       .extra = {{"/proc/self", rwt}},
       .run_dir = true});
  add({.name = "ours+/proc/self+ns+drop+scopes",
       .ns = true,
       .drop = true,
       .scopes = true,
       .extra = {{"/proc/self", rwt}}});
  add({.name = "ours+/proc/self+ns+drop+nodump",
       .ns = true,
       .drop = true,
       .not_dumpable = true,
       .extra = {{"/proc/self", rwt}}});
  add({.name = "ours+/proc/self+/run", .extra = {{"/proc/self", rwt}}, .run_dir = true});
  add({.name = "ours+/proc/self+scopes", .scopes = true, .extra = {{"/proc/self", rwt}}});
  add({.name = "everything+ns+drop", .ns = true, .drop = true, .extra = {{"/", kAllFs}}});
  for (const auto& v : vs) RunVariant(v, program, work);
  return 0;
}
