#include "common/sandbox.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdlib>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "common/error.h"
#include "common/strings.h"

extern char** environ;

namespace ptxbench {
namespace {

// Landlock's user-space interface (linux/landlock.h). Spelled out here because the system
// headers of our build machines predate the parts we use (ABI 5 device ioctls, ABI 6 scopes);
// the values are the kernel's stable ABI.
struct LandlockRulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};
struct __attribute__((packed)) LandlockPathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};
constexpr int kLandlockRulePathBeneath = 1;
constexpr uint32_t kLandlockCreateRulesetVersion = 1u << 0;
constexpr uint64_t kFsExecute = 1ull << 0, kFsWriteFile = 1ull << 1, kFsReadFile = 1ull << 2,
                   kFsReadDir = 1ull << 3, kFsRemoveDir = 1ull << 4, kFsRemoveFile = 1ull << 5,
                   kFsMakeChar = 1ull << 6, kFsMakeDir = 1ull << 7, kFsMakeReg = 1ull << 8,
                   kFsMakeSock = 1ull << 9, kFsMakeFifo = 1ull << 10, kFsMakeBlock = 1ull << 11,
                   kFsMakeSym = 1ull << 12, kFsRefer = 1ull << 13, kFsTruncate = 1ull << 14,
                   kFsIoctlDev = 1ull << 15;
constexpr uint64_t kScopeAbstractUnixSocket = 1ull << 0, kScopeSignal = 1ull << 1;
// The rights that apply to a file (as opposed to a folder) in a rule.
constexpr uint64_t kFileRights =
    kFsExecute | kFsWriteFile | kFsReadFile | kFsTruncate | kFsIoctlDev;

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

int LandlockAbi() {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kLandlockCreateRulesetVersion);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

// Every file-system right the kernel's Landlock ABI knows: all are handled (denied unless a
// rule allows them).
uint64_t HandledFs(int abi) {
  uint64_t fs = kFsExecute | kFsWriteFile | kFsReadFile | kFsReadDir | kFsRemoveDir |
                kFsRemoveFile | kFsMakeChar | kFsMakeDir | kFsMakeReg | kFsMakeSock | kFsMakeFifo |
                kFsMakeBlock | kFsMakeSym;
  if (abi >= 2) fs |= kFsRefer;
  if (abi >= 3) fs |= kFsTruncate;
  if (abi >= 5) fs |= kFsIoctlDev;
  return fs;
}

// Async-signal-safe failure in the forked child.
[[noreturn]] void Die(const char* what) {
  const char prefix[] = "ptxbench sandbox: ";
  ssize_t ignored = ::write(2, prefix, sizeof prefix - 1);
  ignored = ::write(2, what, ::strlen(what));
  const char* err = ::strerror(errno);  // not strictly safe; only on the way out
  ignored = ::write(2, ": ", 2);
  ignored = ::write(2, err, ::strlen(err));
  ignored = ::write(2, "\n", 1);
  (void)ignored;
  ::_exit(126);
}

// The loopback interface of a fresh network namespace starts down; a profiler talks to its
// host over it.
void LoopbackUp() {
  int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return;
  struct ifreq ifr;
  ::memset(&ifr, 0, sizeof ifr);
  ::memcpy(ifr.ifr_name, "lo", 3);
  if (::ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    ::ioctl(s, SIOCSIFFLAGS, &ifr);
  }
  ::close(s);
}

constexpr int kNamespaceFlags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC;

// After unshare(CLONE_NEWPID) the caller stays where it was; its next child is PID 1 of the
// new namespace. The caller waits for that child and ends the same way (exit code or signal),
// so that the supervising parent sees the child's own end. When PID 1 ends, the kernel kills
// every process left in the namespace.
void EnterPidNamespaceAsChild() {
  // PID 1 of a namespace ignores the signals it sends itself (abort, raise), so the program
  // is not PID 1: a small init is, which waits for it and passes its raw wait status back
  // through a pipe; when the init ends, the kernel ends the whole namespace.
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) Die("pipe");
  pid_t pid = ::fork();
  if (pid < 0) Die("fork into the PID namespace");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::close(status_pipe[0]);
    pid_t program = ::fork();
    if (program < 0) Die("fork inside the PID namespace");
    if (program == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::close(status_pipe[1]);
      return;
    }
    for (int fd = 0; fd < 1024; ++fd)
      if (fd != status_pipe[1]) ::close(fd);
    int st = 0;
    while (::waitpid(program, &st, 0) < 0 && errno == EINTR) {
    }
    ssize_t ignored = ::write(status_pipe[1], &st, sizeof st);
    (void)ignored;
    ::_exit(0);
  }
  // The waiter keeps no descriptor of the child's: the parent sees the pipes close with it.
  for (int fd = 0; fd < 1024; ++fd)
    if (fd != status_pipe[0]) ::close(fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int program_status = 0;
  if (::read(status_pipe[0], &program_status, sizeof program_status) ==
      static_cast<ssize_t>(sizeof program_status))
    status = program_status;
  if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
  int sig = WTERMSIG(status);
  ::signal(sig, SIG_DFL);
  struct rlimit no_core = {0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  ::kill(::getpid(), sig);
  ::_exit(128 + sig);
}

// The MS_ flags of the mount that holds `path` (0 when it cannot be read).
unsigned long MountFlags(const std::string& path) {
  struct statvfs st;
  if (::statvfs(path.c_str(), &st) != 0) return 0;
  unsigned long flags = 0;
  if (st.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (st.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (st.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (st.f_flag & ST_RDONLY) flags |= MS_RDONLY;
  return flags;
}

// "/proc/self/fd/<fd>" into `out` (32 bytes), without the heap: for the forked child.
void FdPath(int fd, char* out) {
  const char prefix[] = "/proc/self/fd/";
  ::memcpy(out, prefix, sizeof prefix - 1);
  char digits[12];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + fd % 10);
    fd /= 10;
  } while (fd > 0 && n < 11);
  char* p = out + sizeof prefix - 1;
  while (n > 0) *p++ = digits[--n];
  *p = '\0';
}

void SetLimit(int resource, uint64_t value) {
  if (value == 0) return;
  struct rlimit r = {static_cast<rlim_t>(value), static_cast<rlim_t>(value)};
  if (::setrlimit(resource, &r) != 0) Die("setrlimit");
}

}  // namespace

nlohmann::json SandboxSupport::ToJson() const {
  nlohmann::json j = {{"namespaces", namespaces},           {"proc_remount", proc_remount},
                      {"private_dev_shm", private_dev_shm}, {"user_drop", user_drop},
                      {"landlock_abi", landlock_abi},       {"seccomp", seccomp}};
  if (!namespaces_why.empty()) j["namespaces_why"] = namespaces_why;
  if (!landlock_why.empty()) j["landlock_why"] = landlock_why;
  if (!seccomp_why.empty()) j["seccomp_why"] = seccomp_why;
  if (user_drop) j["user_policy"] = SandboxUserPolicy();
  return j;
}

const SandboxSupport& ProbeSandbox() {
  static const SandboxSupport support = [] {
    SandboxSupport s;
    s.user_drop = ::geteuid() == 0;
    s.landlock_abi = LandlockAbi();
    if (s.landlock_abi == 0) s.landlock_why = std::string("landlock: ") + ::strerror(errno);
    // Namespaces and seccomp: tried for real in a throwaway child, which reports a bit each.
    auto program = BuildSeccomp({});
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      s.namespaces_why = s.seccomp_why = "pipe failed";
      return s;
    }
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      unsigned char bits = 0;
      // Before the namespaces: once their first process has ended, no more can be forked there.
      // The uid drop, tried for real: a container's root may lack CAP_SETUID.
      if (::geteuid() == 0) {
        pid_t u = ::fork();
        if (u == 0)
          ::_exit(::syscall(SYS_setresgid, 65534, 65534, 65534) == 0 &&
                          ::syscall(SYS_setresuid, 65534, 65534, 65534) == 0
                      ? 0
                      : 1);
        int st = 0;
        if (u > 0 && ::waitpid(u, &st, 0) == u && WIFEXITED(st) && WEXITSTATUS(st) == 0) bits |= 8;
      }
      if (::unshare(kNamespaceFlags) == 0) {
        bits |= 1;
        pid_t inner = ::fork();
        if (inner == 0) {
          unsigned char b = 0;
          if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0) {
            if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0 &&
                ::getpid() == 1)
              b |= 2;
            if (::mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") == 0)
              b |= 16;
          }
          ::_exit(b);
        }
        int st = 0;
        if (inner > 0 && ::waitpid(inner, &st, 0) == inner && WIFEXITED(st))
          bits |= WEXITSTATUS(st);
      }
      if (program && InstallSeccomp(*program) == 0) bits |= 4;
      ssize_t ignored = ::write(fds[1], &bits, 1);
      (void)ignored;
      ::_exit(0);
    }
    ::close(fds[1]);
    unsigned char bits = 0;
    if (pid < 0 || ::read(fds[0], &bits, 1) != 1) bits = 0;
    ::close(fds[0]);
    if (pid > 0) ::waitpid(pid, nullptr, 0);
    s.namespaces = bits & 1;
    s.proc_remount = bits & 2;
    s.private_dev_shm = bits & 16;
    s.seccomp = bits & 4;
    s.user_drop = bits & 8;
    if (!s.namespaces)
      s.namespaces_why = ::geteuid() == 0 ? "unshare(PID|mount|net|IPC) refused"
                                          : "not root: new namespaces need CAP_SYS_ADMIN";
    if (!s.seccomp) s.seccomp_why = "the kernel refused a seccomp filter";
    return s;
  }();
  return support;
}

PreparedSandbox::PreparedSandbox(const SandboxPolicy& policy) : policy_(policy) {
  active_ = policy.enabled;
  if (!active_) return;
  support_ = ProbeSandbox();
  if (policy_.landlock && support_.landlock_abi > 0) {
    handled_fs_ = HandledFs(support_.landlock_abi);
    const char* audit = std::getenv("PTXBENCH_SANDBOX_AUDIT");
    audit_denials_ = audit && std::string(audit) == "1";
    auto add = [&](const std::vector<std::string>& paths, uint64_t access) {
      for (const auto& p : paths)
        if (!p.empty()) rules_.push_back({p, access & handled_fs_});
    };
    add(policy_.read_paths, kFsExecute | kFsReadFile | kFsReadDir);
    add(policy_.write_paths, handled_fs_);
    // Truncate too: opening for writing with O_TRUNC is how a program writes a device or a
    // /proc file (`> /dev/null`; the CUDA driver names its threads through
    // /proc/self/task/<tid>/comm that way, and cuInit fails if it is denied: measured on the
    // H200 with Landlock's audit log, docs/gpu-runs/2026-12-04-h200-issue19.md).
    add(policy_.device_paths, kFsReadFile | kFsWriteFile | kFsTruncate | kFsIoctlDev);
  }
  if (policy_.namespaces && support_.namespaces && policy_.private_dev_shm &&
      support_.private_dev_shm)
    PlanPrivateDevShm();
}

void PreparedSandbox::PlanPrivateDevShm() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path root = fs::canonical("/dev/shm", ec);
  if (ec || !fs::is_directory(root, ec)) return;
  shm_root_ = root.string();
  shm_flags_ = MS_NOSUID | MS_NODEV | (MountFlags(shm_root_) & MS_NOEXEC);
  // Each path of the policy inside /dev/shm, resolved; read-only unless some rule writes it.
  std::map<std::string, bool> read_only;
  auto collect = [&](const std::vector<std::string>& paths, bool only_read) {
    for (const auto& p : paths) {
      fs::path resolved = fs::canonical(p, ec);
      if (ec) continue;  // a path this machine does not have: no rule opens it either
      std::string r = resolved.string();
      if (!StartsWith(r, shm_root_ + "/")) continue;
      auto [it, fresh] = read_only.emplace(r, only_read);
      if (!fresh) it->second = it->second && only_read;
    }
  };
  collect(policy_.read_paths, true);
  collect(policy_.write_paths, false);
  collect(policy_.device_paths, false);
  // Outermost first; a path inside one already bound comes with it.
  std::vector<std::string> paths;
  for (const auto& [p, ro] : read_only) paths.push_back(p);
  std::sort(paths.begin(), paths.end(),
            [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
  for (const auto& p : paths) {
    bool inside = std::any_of(shm_binds_.begin(), shm_binds_.end(),
                              [&](const ShmBind& b) { return StartsWith(p, b.path + "/"); });
    if (inside) continue;
    ShmBind b;
    b.path = p;
    b.folder = fs::is_directory(p, ec);
    b.read_only = read_only[p];
    b.source_flags = MountFlags(p) & (MS_NOSUID | MS_NODEV | MS_NOEXEC);
    for (size_t at = p.find('/', shm_root_.size() + 1); at != std::string::npos;
         at = p.find('/', at + 1))
      b.folders.push_back(p.substr(0, at));
    shm_binds_.push_back(std::move(b));
  }
  shm_fds_.assign(shm_binds_.size(), -1);
}

bool LooksSecret(const std::string& name) {
  static const char* const kMarks[] = {"KEY",  "TOKEN", "SECRET", "PASSWORD",     "PASSWD",
                                       "AUTH", "CRED",  "PGPASS", "DATABASE_URL", "_URL"};
  std::string upper = name;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* m : kMarks)
    if (upper.find(m) != std::string::npos) return true;
  return false;
}

std::string RedactSecrets(std::string text) {
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    std::string value(entry.substr(eq + 1));
    if (value.size() < 8 || !LooksSecret(std::string(entry.substr(0, eq)))) continue;
    for (size_t at = text.find(value); at != std::string::npos; at = text.find(value, at))
      text.replace(at, value.size(), "[redacted]");
  }
  return text;
}

std::vector<std::string> PreparedSandbox::Environment() const {
  std::vector<std::string> out;
  auto allowed = [&](std::string_view name) {
    for (const auto& a : policy_.env_allow) {
      if (!a.empty() && a.back() == '*') {
        if (name.substr(0, a.size() - 1) == std::string_view(a).substr(0, a.size() - 1))
          return true;
      } else if (name == a) {
        return true;
      }
    }
    return false;
  };
  auto set_here = [&](std::string_view name) {
    for (const auto& kv : policy_.env_set)
      if (name == kv.first) return true;
    return false;
  };
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    std::string_view name = entry.substr(0, entry.find('='));
    if (allowed(name) && !set_here(name)) out.emplace_back(entry);
  }
  for (const auto& [k, v] : policy_.env_set) out.push_back(k + "=" + v);
  return out;
}

nlohmann::json PreparedSandbox::Describe() const {
  if (!active_) return {{"state", "off"}};
  nlohmann::json j;
  j["state"] = "on";
  j["environment"] = "allow-list";
  j["namespaces"] = policy_.namespaces && support_.namespaces
                        ? nlohmann::json(support_.proc_remount ? "pid+mount+net+ipc, own /proc"
                                                               : "pid+mount+net+ipc")
                        : nlohmann::json(false);
  j["dev_shm"] = !shm_root_.empty() ? "private tmpfs" : "shared with the host";
  j["user"] = policy_.drop_user && support_.user_drop
                  ? nlohmann::json(std::to_string(policy_.uid) + ":" + std::to_string(policy_.gid))
                  : nlohmann::json(::geteuid() == 0 ? "root (not dropped)" : "unprivileged caller");
  if (policy_.drop_user && support_.user_drop) j["user_policy"] = SandboxUserPolicy();
  for (const auto& [k, v] : policy_.env_set)
    if (k == "LD_BIND_NOW" && !v.empty()) j["bind_now"] = true;
  j["landlock"] = !rules_.empty() ? nlohmann::json("abi " + std::to_string(support_.landlock_abi))
                                  : nlohmann::json(false);
  nlohmann::json lim = nlohmann::json::object();
  if (policy_.limits.address_space_bytes)
    lim["address_space_bytes"] = policy_.limits.address_space_bytes;
  if (policy_.limits.cpu_seconds) lim["cpu_seconds"] = policy_.limits.cpu_seconds;
  if (policy_.limits.file_size_bytes) lim["file_size_bytes"] = policy_.limits.file_size_bytes;
  if (policy_.limits.open_files) lim["open_files"] = policy_.limits.open_files;
  if (policy_.limits.processes) lim["processes"] = policy_.limits.processes;
  lim["core_bytes"] = 0;
  j["rlimits"] = lim;
  return j;
}

void PreparedSandbox::ApplyInChild() const {
  if (!active_) return;
  const bool root = ::geteuid() == 0;
  if (policy_.namespaces && support_.namespaces) {
    if (::unshare(kNamespaceFlags) != 0) Die("unshare");
    EnterPidNamespaceAsChild();
    // Mounts made here stay here; /proc then lists only this namespace's processes.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) Die("mount private");
    if (support_.proc_remount &&
        ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
      Die("mount /proc");
    if (!shm_root_.empty()) PrivateDevShm();
    LoopbackUp();
  }
  SetLimit(RLIMIT_AS, policy_.limits.address_space_bytes);
  SetLimit(RLIMIT_CPU, policy_.limits.cpu_seconds);
  SetLimit(RLIMIT_FSIZE, policy_.limits.file_size_bytes);
  SetLimit(RLIMIT_NOFILE, policy_.limits.open_files);
  struct rlimit no_core = {0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  if (policy_.drop_user && root && support_.user_drop) {
    // Raw system calls: glibc's wrappers would try to reach threads this child does not have.
    if (::syscall(SYS_setgroups, 0, nullptr) != 0) Die("setgroups");
    if (::syscall(SYS_setresgid, policy_.gid, policy_.gid, policy_.gid) != 0) Die("setresgid");
    if (::syscall(SYS_setresuid, policy_.uid, policy_.uid, policy_.uid) != 0) Die("setresuid");
  }
  // After the uid change: RLIMIT_NPROC counts the new user's processes.
  SetLimit(RLIMIT_NPROC, policy_.limits.processes);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) Die("no_new_privs");
  if (!rules_.empty()) {
    LandlockRulesetAttr attr;
    ::memset(&attr, 0, sizeof attr);
    attr.handled_access_fs = handled_fs_;
    size_t size = offsetof(LandlockRulesetAttr, handled_access_net);
    if (support_.landlock_abi >= 6) {
      attr.scoped = kScopeSignal | kScopeAbstractUnixSocket;
      size = sizeof attr;
    }
    int rs = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, size, 0));
    if (rs < 0) Die("landlock_create_ruleset");
    for (const auto& r : rules_) {
      int fd = ::open(r.path.c_str(), O_PATH | O_CLOEXEC);
      if (fd < 0) continue;  // a path this machine does not have
      struct stat st;
      LandlockPathBeneathAttr pb;
      pb.allowed_access = r.access;
      pb.parent_fd = fd;
      if (::fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) pb.allowed_access &= kFileRights;
      if (pb.allowed_access != 0 &&
          ::syscall(SYS_landlock_add_rule, rs, kLandlockRulePathBeneath, &pb, 0) != 0)
        Die("landlock_add_rule");
      ::close(fd);
    }
    // PTXBENCH_SANDBOX_AUDIT=1 (read in the parent, see PreparedSandbox) logs denials after the
    // exec too (ABI 7, LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON): with audit on they name the
    // refused path in the kernel log. Older kernels refuse the flag; then without it.
    if (!(audit_denials_ && ::syscall(SYS_landlock_restrict_self, rs, 2u, 0) == 0) &&
        ::syscall(SYS_landlock_restrict_self, rs, 0, 0) != 0)
      Die("landlock_restrict_self");
    ::close(rs);
  }
}

// Every evaluation's scratch folder lies in /dev/shm, which the CUDA driver needs writable: a
// candidate there replaced a concurrent evaluation's object. So the child gets a tmpfs of its
// own on /dev/shm, empty but for the paths of its policy (its own folder, the executable it
// starts from), bound back at the same place: the descriptors are opened before the tmpfs
// hides them, and bound from /proc/self/fd. The tmpfs ends with the child's mount namespace.
void PreparedSandbox::PrivateDevShm() const {
  for (size_t i = 0; i < shm_binds_.size(); ++i)
    shm_fds_[i] = ::open(shm_binds_[i].path.c_str(), O_PATH | O_CLOEXEC);
  if (::mount("tmpfs", shm_root_.c_str(), "tmpfs", shm_flags_, "mode=1777") != 0)
    Die("mount a tmpfs on /dev/shm");
  for (size_t i = 0; i < shm_binds_.size(); ++i) {
    const ShmBind& b = shm_binds_[i];
    if (shm_fds_[i] < 0) continue;  // gone since the policy was made: no rule opens it either
    // The folders on the way: traversable, not listable, not writable for the child.
    for (const auto& f : b.folders)
      if (::mkdir(f.c_str(), 0711) != 0 && errno != EEXIST) Die("mkdir in the private /dev/shm");
    if (b.folder) {
      if (::mkdir(b.path.c_str(), 0700) != 0 && errno != EEXIST) Die("mkdir a mount point");
    } else {
      int t = ::open(b.path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0400);
      if (t < 0) Die("make a mount point");
      ::close(t);
    }
    char source[32];
    FdPath(shm_fds_[i], source);
    if (::mount(source, b.path.c_str(), nullptr, MS_BIND, nullptr) != 0)
      Die("bind a path back into the private /dev/shm");
    if (b.read_only && ::mount(nullptr, b.path.c_str(), nullptr,
                               MS_REMOUNT | MS_BIND | MS_RDONLY | b.source_flags, nullptr) != 0)
      Die("remount a path read-only in the private /dev/shm");
    ::close(shm_fds_[i]);
  }
}

bool RestrictWritesTo(const std::vector<std::string>& paths, std::string* why) {
  int abi = LandlockAbi();
  if (abi == 0) {
    if (why) *why = std::string("landlock: ") + ::strerror(errno);
    return false;
  }
  const uint64_t handled = kFsWriteFile | (abi >= 3 ? kFsTruncate : 0);
  LandlockRulesetAttr attr;
  ::memset(&attr, 0, sizeof attr);
  attr.handled_access_fs = handled;
  int rs = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr,
                                      offsetof(LandlockRulesetAttr, handled_access_net), 0));
  if (rs < 0) {
    if (why) *why = std::string("landlock_create_ruleset: ") + ::strerror(errno);
    return false;
  }
  bool ok = true;
  for (const auto& p : paths) {
    int fd = ::open(p.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) continue;
    LandlockPathBeneathAttr pb;
    pb.allowed_access = handled;
    pb.parent_fd = fd;
    ok = ::syscall(SYS_landlock_add_rule, rs, kLandlockRulePathBeneath, &pb, 0) == 0;
    ::close(fd);
    if (!ok) break;
  }
  if (ok)
    ok = ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::syscall(SYS_landlock_restrict_self, rs, 0, 0) == 0;
  if (!ok && why) *why = std::string("landlock: ") + ::strerror(errno);
  ::close(rs);
  return ok;
}

struct SeccompProgram {
  std::vector<sock_filter> filter;
};

std::shared_ptr<const SeccompProgram> BuildSeccomp(const SeccompProfile& profile) {
#if defined(__x86_64__)
  constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
  return nullptr;  // no filter for this CPU architecture
#endif
  constexpr uint32_t kDeny = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
  constexpr uint32_t kNoSys = SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA);
  std::vector<sock_filter> f;
  auto stmt = [&](uint16_t code, uint32_t k) { f.push_back(BPF_STMT(code, k)); };
  auto jump = [&](uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
    f.push_back(BPF_JUMP(code, k, jt, jf));
  };
  // Another architecture's system call table (i386 via int 0x80, x32) would slip past the
  // numbers below: such calls kill the process.
  stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch));
  jump(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0);
  stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr));
#if defined(__x86_64__)
  jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);  // x32 calls
  stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
#endif
  // Denied outright: new programs, other processes' memory, namespaces, mounts, modules,
  // keyrings, BPF, and io_uring (which would run the calls above behind the filter's back).
  const long denied[] = {
      SYS_execve,
      SYS_execveat,
      SYS_ptrace,
      SYS_process_vm_readv,
      SYS_process_vm_writev,
      SYS_mount,
      SYS_umount2,
      SYS_pivot_root,
      SYS_chroot,
      SYS_setns,
      SYS_unshare,
      SYS_init_module,
      SYS_finit_module,
      SYS_delete_module,
      SYS_kexec_load,
      SYS_bpf,
      SYS_keyctl,
      SYS_add_key,
      SYS_request_key,
      SYS_userfaultfd,
      SYS_kcmp,
#ifdef SYS_fork
      SYS_fork,
      SYS_vfork,
#endif
#ifdef SYS_io_uring_setup
      SYS_io_uring_setup,
#endif
#ifdef SYS_pidfd_getfd
      SYS_pidfd_getfd,
#endif
#ifdef SYS_process_madvise
      SYS_process_madvise,
#endif
#ifdef SYS_open_tree
      SYS_open_tree,
      SYS_move_mount,
      SYS_fsopen,
      SYS_fsmount,
#endif
  };
  for (long nr : denied) {
    jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1);
    stmt(BPF_RET | BPF_K, kDeny);
  }
  // clone3 passes its flags in memory the filter cannot read: ENOSYS sends the C library back
  // to clone, whose flags it can.
#ifdef SYS_clone3
  jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1);
  stmt(BPF_RET | BPF_K, kNoSys);
#endif
  // clone: threads only (CLONE_THREAD set); a new process is refused.
  jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4);
  stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0]));
  jump(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1);
  stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  stmt(BPF_RET | BPF_K, kDeny);
  // prctl(PR_SET_DUMPABLE): the child made itself not dumpable before the candidate, which
  // keeps its /proc entries (its memory among them) closed to its own uid; a candidate must
  // not open them again.
  jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_prctl, 0, 4);
  stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0]));
  jump(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_DUMPABLE, 0, 1);
  stmt(BPF_RET | BPF_K, kDeny);
  stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  if (!profile.allow_inet_sockets) {
    // socket and socketpair: local (AF_UNIX) only.
    jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 4);
    stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0]));
    jump(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 1);
    stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    stmt(BPF_RET | BPF_K, kDeny);
  }
  stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  auto p = std::make_shared<SeccompProgram>();
  p->filter = std::move(f);
  return p;
}

int InstallSeccomp(const SeccompProgram& program) {
  sock_fprog prog = {static_cast<unsigned short>(program.filter.size()),
                     const_cast<sock_filter*>(program.filter.data())};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  // TSYNC: every thread of the process, including any the CUDA driver already started.
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0)
    return errno;
  return 0;
}

bool ApplySeccomp(const SeccompProfile& profile, std::string* why) {
  auto program = BuildSeccomp(profile);
  if (!program) {
    if (why) *why = "no seccomp filter for this CPU architecture";
    return false;
  }
  if (int e = InstallSeccomp(*program); e != 0) {
    if (why) *why = std::string("seccomp: ") + ::strerror(e);
    return false;
  }
  return true;
}

namespace {

// The users claimed by this process: the scratch folder each serves, and the descriptor whose
// flock holds the slot. Never destroyed: a ScratchDir may end during static destruction.
struct UserClaims {
  std::mutex mu;
  std::map<std::string, std::pair<int, SandboxUser>> by_folder;
};
UserClaims& Claims() {
  static UserClaims* claims = new UserClaims;
  return *claims;
}

// The lock folder: made by root, for root alone. One that anybody else could write (or a link
// put there in its place) could hand out slots that are in use: refused.
void CheckLockDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw EnvironmentError("the uid lock folder " + dir + " cannot be made");
  if (st.st_uid != 0 || (st.st_mode & 022) != 0)
    throw EnvironmentError("the uid lock folder " + dir +
                           " is not root's alone (owner or mode): refusing its slots");
}

// The first free slot: its lock file held (an exclusive flock, which also excludes another
// descriptor of this same process) through the returned descriptor.
std::pair<int, unsigned> ClaimSlot() {
  const std::string dir = kSandboxUidLockDir;
  CheckLockDir(dir);
  for (unsigned slot = 0; slot < kSandboxUidSlots; ++slot) {
    std::string path = dir + "/" + std::to_string(slot);
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) throw EnvironmentError("cannot open " + path + ": " + ::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return {fd, slot};
    int e = errno;
    ::close(fd);
    if (e != EWOULDBLOCK) throw EnvironmentError("cannot lock " + path + ": " + ::strerror(e));
  }
  throw EnvironmentError("every sandbox uid slot is in use (" + std::to_string(kSandboxUidSlots) +
                         ")");
}

}  // namespace

SandboxUser ClaimSandboxUser(const std::string& folder) {
  if (!ProbeSandbox().user_drop) return {};
  UserClaims& claims = Claims();
  std::lock_guard<std::mutex> lock(claims.mu);
  auto it = claims.by_folder.find(folder);
  if (it != claims.by_folder.end()) return it->second.second;
  auto [fd, slot] = ClaimSlot();
  SandboxUser user;
  user.uid = kSandboxUidBase + slot;
  user.gid = kSandboxUidBase + slot;
  claims.by_folder[folder] = {fd, user};
  return user;
}

void ReleaseSandboxUsers(const std::string& folder) {
  UserClaims& claims = Claims();
  std::lock_guard<std::mutex> lock(claims.mu);
  for (auto it = claims.by_folder.begin(); it != claims.by_folder.end();) {
    if (it->first == folder || StartsWith(it->first, folder + "/")) {
      ::close(it->second.first);
      it = claims.by_folder.erase(it);
    } else {
      ++it;
    }
  }
}

std::string SandboxUserPolicy() {
  return "a uid and gid per evaluation: " + std::to_string(kSandboxUidBase) +
         " + a slot held by flock in " + kSandboxUidLockDir;
}

nlohmann::json SelfConfinement() {
  nlohmann::json j = nlohmann::json::object();
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    std::string value = Trim(line.substr(colon + 1));
    if (key == "Seccomp") j["seccomp_mode"] = value;
    if (key == "NoNewPrivs") j["no_new_privs"] = value == "1";
    if (key == "Uid") j["uid"] = Split(value, '\t').empty() ? value : Split(value, '\t')[0];
    if (key == "NSpid") j["nspid"] = value;
  }
  j["pid"] = ::getpid();
  j["dumpable"] = ::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
  return j;
}

}  // namespace ptxbench
