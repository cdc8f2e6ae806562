#include "run/confine.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "common/error.h"
#include "common/files.h"

namespace ptxbench {

namespace fs = std::filesystem;

namespace {

bool DropsUser(const SandboxPolicy& p) {
  return p.enabled && p.drop_user && ProbeSandbox().user_drop;
}

void GiveTo(const std::string& path, const SandboxPolicy& p) {
  if (DropsUser(p) && ::chown(path.c_str(), p.uid, p.gid) != 0)
    throw EnvironmentError("cannot hand " + path + " to the sandbox user");
}

// What AllowChildEnvironmentForTests added to the allow-list (empty in production).
std::mutex g_test_env_mutex;
std::vector<std::string> g_test_env_allow;

// Every device file of the GPU driver: /dev/nvidia0, nvidiactl, nvidia-uvm, ... and the
// capability folder of MIG set-ups.
std::vector<std::string> NvidiaDevices() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev", ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("nvidia", 0) == 0) out.push_back(e.path().string());
  }
  return out;
}

}  // namespace

std::string MakeChildFolder(const std::string& parent_dir, const std::string& name,
                            const SandboxPolicy& policy) {
  // The dropped user may pass through the evaluation's folder to its own, never list it.
  if (DropsUser(policy)) ::chmod(parent_dir.c_str(), 0711);
  std::string dir = parent_dir + "/" + name;
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (::mkdir(dir.c_str(), 0700) != 0) throw EnvironmentError("cannot make " + dir);
  GiveTo(dir, policy);
  return dir;
}

SandboxPolicy CandidateChildPolicy(const std::string& folder,
                                   const std::vector<std::string>& tool_roots) {
  SandboxPolicy p;
  p.enabled = true;
  // What the CUDA runtime, the driver, CUPTI and the tools read from the environment; nothing
  // else (no API key, service token or database URL) reaches a candidate.
  p.env_allow = {"PATH",
                 "LANG",
                 "LC_*",
                 "CUDA_VISIBLE_DEVICES",
                 "CUDA_DEVICE_ORDER",
                 "CUDA_HOME",
                 "CUDA_PATH",
                 "LD_LIBRARY_PATH",
                 "NVIDIA_VISIBLE_DEVICES",
                 "NVIDIA_DRIVER_CAPABILITIES",
                 "CUDA_MODULE_LOADING"};
  {
    std::lock_guard<std::mutex> lock(g_test_env_mutex);
    for (const auto& name : g_test_env_allow) p.env_allow.push_back(name);
  }
  // LD_BIND_NOW: every library the child maps is bound when it is loaded, so that no lazy
  // binding is left for a candidate to redirect (ptxbench itself is linked with full RELRO).
  p.env_set = {{"HOME", folder},
               {"TMPDIR", folder},
               {"XDG_CACHE_HOME", folder + "/.cache"},
               {"CUDA_CACHE_PATH", folder + "/.nv"},
               {"LD_BIND_NOW", "1"}};
  p.namespaces = true;
  p.drop_user = true;
  // Landlock on: reads only below the system folders, writes only in the child's folder and
  // its own /dev/shm, devices by name. No rule names the caches, the store or another
  // evaluation's folder, so none of them can be opened.
  p.landlock = true;
  p.read_paths = {"/usr",
                  "/lib",
                  "/lib64",
                  "/lib32",
                  "/bin",
                  "/sbin",
                  "/etc",
                  "/opt",
                  "/sys",
                  "/proc",
                  "/run/nvidia-persistenced"};
  if (const char* ch = std::getenv("CUDA_HOME"); ch && *ch) p.read_paths.push_back(ch);
  for (const auto& t : tool_roots) p.read_paths.push_back(t);
  // The CUDA driver creates POSIX shared memory (cuInit fails with cudaErrorOperatingSystem
  // without it). The rule is opened after the child's namespaces are made, so it names the
  // child's own tmpfs there (SandboxPolicy::private_dev_shm), never the host's /dev/shm.
  p.write_paths = {folder, "/dev/shm"};
  p.device_paths = {"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"};
  for (const auto& d : NvidiaDevices()) p.device_paths.push_back(d);
  // The CUDA driver names its threads through /proc/self/task/<tid>/comm (cuInit fails with
  // cudaErrorOperatingSystem otherwise; measured on the H200): its threads' folders, not the
  // rest of /proc/self (/proc/self/mem). The rule is opened in the child after it entered its
  // namespaces, so /proc/self is its own. Under a tool the target is a process of the tool's,
  // so the whole of the namespace's own /proc is writable there. Before the candidate is
  // mapped, the child takes every /proc write away from itself (RestrictWritesTo).
  p.device_paths.push_back(tool_roots.empty() ? "/proc/self/task" : "/proc");
  // No memory limit (the CUDA driver reserves terabytes of address space); the rest bound
  // what a runaway candidate can do to the machine.
  p.limits.cpu_seconds = 3600;
  p.limits.file_size_bytes = 64ull << 30;
  p.limits.open_files = 4096;
  return p;
}

void AllowChildEnvironmentForTests(const std::string& pattern) {
  std::lock_guard<std::mutex> lock(g_test_env_mutex);
  g_test_env_allow.push_back(pattern);
}

std::string SandboxedExecutable(const std::string& executable) {
  static std::mutex mu;
  static std::string copy;
  static std::string from;
  std::lock_guard<std::mutex> lock(mu);
  if (!copy.empty() && from == executable) return copy;
  if (::geteuid() != 0) return executable;  // no uid drop: our own copy is readable
  // One folder per process, removed at exit. Mode 0711: the dropped user may pass through to
  // the copy it is started from, but not list the folder (a candidate listed it, and read the
  // copy, as "another evaluation's folder" on the H200: harmless, as the binary is public,
  // but no candidate needs to find it).
  static ScratchDir dir("ptxbench-exe");
  ::chmod(dir.path().c_str(), 0711);
  std::string target = dir.File("ptxbench");
  std::error_code ec;
  fs::copy_file(executable, target, fs::copy_options::overwrite_existing, ec);
  if (ec) throw EnvironmentError("cannot copy " + executable + " for the sandbox: " + ec.message());
  ::chmod(target.c_str(), 0555);
  copy = target;
  from = executable;
  return copy;
}

std::string CopyIntoChildFolder(const std::string& file, const std::string& folder,
                                const std::string& name, const SandboxPolicy& policy) {
  std::string target = folder + "/" + name;
  std::error_code ec;
  fs::copy_file(file, target, fs::copy_options::overwrite_existing, ec);
  if (ec) throw EnvironmentError("cannot copy " + file + " into " + folder + ": " + ec.message());
  GiveTo(target, policy);
  ::chmod(target.c_str(), 0500);
  return target;
}

}  // namespace ptxbench
