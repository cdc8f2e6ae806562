// Confinement of child processes: what a process that loads a candidate (or compiles one)
// may see and do. The candidate has read this file; nothing here relies on it not knowing.
//
// Layers, each probed once per process (ProbeSandbox) and applied only where the probe saw it
// work, so that a machine without one still evaluates and the record says what was missing:
//   environment  an allow-list of variable names (no API key, token or database URL passes);
//   namespaces   new PID, mount, network and IPC namespaces: the child is PID 1 of its own
//                namespace, so every process it starts dies with it (setsid escapes nothing),
//                /proc shows only its own processes, the network is a loopback of its own, and
//                /dev/shm is a tmpfs of its own (the paths of the policy that lie in the host's
//                /dev/shm are bound back at the same place), so no child sees another's;
//   user         when started as root, the child drops to an unprivileged uid/gid: one per
//                evaluation (ClaimSandboxUser), so no evaluation's children can open another's
//                files;
//   rlimits      memory (where the program tolerates it), CPU seconds, file size, core dumps,
//                open files;
//   landlock     the file system: read-only where allowed, writable only in the child's own
//                folder, devices opened only where listed; signals to processes outside the
//                child's domain refused (Landlock ABI 6);
//   seccomp      applied by the child itself before the candidate is loaded (ApplySeccomp):
//                no execve, no fork (threads only), no ptrace or cross-process memory access,
//                no namespace or mount calls, optionally no network sockets.
//
// ApplyInChild runs between fork and execve of a multi-threaded parent: it uses only system
// calls on data prepared before the fork (PreparedSandbox), never the heap.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ptxbench {

struct SandboxLimits {
  uint64_t address_space_bytes = 0;  // RLIMIT_AS; 0: unlimited (CUDA reserves huge ranges)
  uint64_t cpu_seconds = 0;          // RLIMIT_CPU
  uint64_t file_size_bytes = 0;      // RLIMIT_FSIZE
  uint64_t open_files = 0;           // RLIMIT_NOFILE
  uint64_t processes = 0;            // RLIMIT_NPROC (per user; meaningful after a uid drop)
};

struct SandboxPolicy {
  bool enabled = false;
  // Variables passed on by name (exact names, or prefixes ending in '*'); all others dropped.
  std::vector<std::string> env_allow;
  // Set in the child's environment after the allow-list (HOME, TMPDIR, ...).
  std::vector<std::pair<std::string, std::string>> env_set;
  bool namespaces = true;
  bool private_dev_shm = true;  // with the namespaces: a tmpfs of its own on /dev/shm
  bool drop_user = true;        // only when the parent is root
  uid_t uid = 65534;            // nobody, unless a user was claimed (ClaimSandboxUser)
  gid_t gid = 65534;            // nogroup
  bool landlock = true;
  std::vector<std::string> read_paths;    // read and execute beneath
  std::vector<std::string> write_paths;   // everything beneath (the child's own folder)
  std::vector<std::string> device_paths;  // device files: read, write, ioctl
  SandboxLimits limits;
};

// What this machine offers, probed once (in a throwaway child) and cached for the process.
struct SandboxSupport {
  bool namespaces = false;
  std::string namespaces_why;
  bool proc_remount = false;
  bool private_dev_shm = false;  // a tmpfs could be mounted on /dev/shm in the namespaces
  bool user_drop = false;        // we are root, so a uid drop is possible
  int landlock_abi = 0;          // 0: none
  std::string landlock_why;
  bool seccomp = false;
  std::string seccomp_why;
  nlohmann::json ToJson() const;
};
const SandboxSupport& ProbeSandbox();

// A policy turned into plain arrays (path descriptors are opened in the child), ready for
// ApplyInChild after fork.
class PreparedSandbox {
 public:
  PreparedSandbox() = default;
  explicit PreparedSandbox(const SandboxPolicy& policy);
  bool active() const { return active_; }
  // The environment strings for execve ("NAME=value"), built from `environ` and the policy.
  std::vector<std::string> Environment() const;
  // In the forked child, before execve. On failure writes a line to fd 2 and _exit(126):
  // a protection the probe promised must not be silently missing.
  void ApplyInChild() const;
  // What the child will run under, for the record.
  nlohmann::json Describe() const;

 private:
  struct PathRule {
    std::string path;
    uint64_t access = 0;
  };
  // A path of the policy inside the host's /dev/shm, bound back into the child's own tmpfs.
  struct ShmBind {
    std::string path;
    std::vector<std::string> folders;  // to make first, outermost first
    bool folder = false;               // a folder (else a file)
    bool read_only = false;            // a read path: bound read-only
    unsigned long source_flags = 0;    // MS_NOSUID, MS_NODEV, MS_NOEXEC of its mount
  };
  void PlanPrivateDevShm();    // in the parent: what to bind back
  void PrivateDevShm() const;  // in the forked child
  bool active_ = false;
  SandboxPolicy policy_;
  SandboxSupport support_;
  std::vector<PathRule> rules_;
  std::vector<ShmBind> shm_binds_;
  std::string shm_root_;              // /dev/shm, resolved; empty: no tmpfs of its own
  unsigned long shm_flags_ = 0;       // the host's /dev/shm flags, kept on the child's tmpfs
  mutable std::vector<int> shm_fds_;  // sized here: the forked child allocates nothing
  uint64_t handled_fs_ = 0;
  bool audit_denials_ = false;  // PTXBENCH_SANDBOX_AUDIT=1: Landlock logs denials after exec
};

// Seccomp profile the child installs on itself, after its own set-up and before the
// candidate's code is mapped.
struct SeccompProfile {
  bool allow_inet_sockets = false;  // a profiler talks to its host over loopback TCP
};
// Returns false (with the reason) when the kernel refused the filter.
bool ApplySeccomp(const SeccompProfile& profile, std::string* why);
// The filter as a BPF program; installing it (InstallSeccomp) allocates nothing, so a forked
// child of a multi-threaded process can do it. Returns 0 or an errno value.
struct SeccompProgram;
std::shared_ptr<const SeccompProgram> BuildSeccomp(const SeccompProfile& profile);
int InstallSeccomp(const SeccompProgram& program);

// A further Landlock layer for a process about to map code it does not trust: from then on
// it may open files for writing (or truncate them) only beneath `paths`. Until then the CUDA
// driver may write its own /proc entries (it names its threads there); after it, nothing in
// /proc, /proc/self/mem included, can be opened for writing. False, with the reason, where
// the kernel has no Landlock.
bool RestrictWritesTo(const std::vector<std::string>& paths, std::string* why);

// The protections this process runs under, read from /proc/self/status and friends: what a
// child reports about itself before the candidate is loaded.
nlohmann::json SelfConfinement();

// The unprivileged users of confined children: one per evaluation, unique among the
// evaluations running on this host, so that no evaluation's children can open another's files
// (a candidate replaced a concurrent evaluation's object when all ran as 65534). The uid (and
// gid) is kSandboxUidBase + a slot; a slot is held through an exclusive flock on
// kSandboxUidLockDir/<slot>, which the kernel releases when its holder ends, however it ends,
// so a crashed evaluator never keeps one and two live evaluations never share one.
inline constexpr uid_t kSandboxUidBase = 1900000000;
inline constexpr unsigned kSandboxUidSlots = 65536;
inline constexpr const char* kSandboxUidLockDir = "/run/ptxbench/uids";
struct SandboxUser {
  uid_t uid = 65534;
  gid_t gid = 65534;
};
// The user of the children that work under `folder` (an evaluation's scratch folder):
// claimed when first asked for, the same one afterwards, until ReleaseSandboxUsers. Without a
// uid drop (not root) nothing is claimed: 65534. Throws EnvironmentError when no slot can be
// claimed: children never fall back to a shared user.
SandboxUser ClaimSandboxUser(const std::string& folder);
// Gives back the users claimed for `folder` and the folders beneath it (ScratchDir does, once
// its files are gone).
void ReleaseSandboxUsers(const std::string& folder);
// The rule, in words, for `ptxbench doctor` and the records.
std::string SandboxUserPolicy();

// Names of environment variables that may carry secrets (keys, tokens, passwords, URLs with
// credentials) and whose values must never reach a record or a log.
bool LooksSecret(const std::string& name);
// Replaces every occurrence of a secret-looking environment value (8 characters or more) of
// this process in `text` by "[redacted]".
std::string RedactSecrets(std::string text);

}  // namespace ptxbench
