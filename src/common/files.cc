#include "common/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/error.h"
#include "common/sandbox.h"
#include "common/strings.h"

namespace ptxbench {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw InputError(path + ": is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot read (" + std::strerror(errno) + ")");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError(path + ": read failed");
  return ss.str();
}

std::string ReadFileTail(const std::string& path, size_t max_bytes, size_t* total_bytes) {
  if (total_bytes) *total_bytes = 0;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st {};
  std::string out;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    size_t size = static_cast<size_t>(st.st_size);
    size_t from = size > max_bytes ? size - max_bytes : 0;
    out.resize(size - from);
    size_t got = 0;
    while (got < out.size()) {
      ssize_t n = ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(from + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    out.resize(got);
    if (total_bytes) *total_bytes = from + got;
  }
  ::close(fd);
  return out;
}

void WriteFileAtomic(const std::string& path, std::string_view content) {
  fs::path p(path);
  if (p.has_parent_path()) MakeDirs(p.parent_path().string());
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(tmp + ": cannot write (" + std::strerror(errno) + ")");
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw InputError(tmp + ": write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw InputError(path + ": cannot rename into place (" + std::strerror(errno) + ")");
  }
}

namespace {

// The descriptor that a path names by itself: "-", /dev/stdout, /dev/stderr, /dev/fd/N and
// /proc/self/fd/N; -1 for any other path. Writing to the descriptor keeps the position (and
// the O_APPEND) that the shell gave it, where opening the path again would start at 0.
int OwnDescriptor(const std::string& path) {
  if (path == "-" || path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (!StartsWith(path, prefix)) continue;
    long long fd = -1;
    if (ParseInt64(std::string_view(path).substr(prefix.size()), &fd) && fd >= 0 && fd < 1 << 20)
      return static_cast<int>(fd);
  }
  return -1;
}

void WriteAll(int fd, std::string_view content, const std::string& path) {
  while (!content.empty()) {
    ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw InputError(path + ": write failed (" + std::strerror(errno) + ")");
    content.remove_prefix(static_cast<size_t>(n));
  }
}

// The folder that holds `path` ("." for a bare name).
std::string ParentOf(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

// Kernel filesystems (/proc, /sys and their kin) take no output files, and root's access()
// says yes to them anyway: name them before any work is done.
const char* KernelFilesystem(const std::string& folder) {
  struct statfs fs {};
  if (::statfs(folder.c_str(), &fs) != 0) return nullptr;
  switch (static_cast<unsigned long>(fs.f_type)) {
    case 0x9fa0:  // PROC_SUPER_MAGIC
      return "/proc";
    case 0x62656572:  // SYSFS_MAGIC
      return "/sys";
    case 0x27e0eb:    // CGROUP_SUPER_MAGIC
    case 0x63677270:  // CGROUP2_SUPER_MAGIC
      return "a cgroup filesystem";
    case 0x64626720:  // DEBUGFS_MAGIC
      return "debugfs";
    case 0x73636673:  // SECURITYFS_MAGIC
      return "securityfs";
    default:
      return nullptr;
  }
}

// Whether a file can really be made in `folder` (a read-only mount, a full disk, an ACL that
// access() does not see): one is made and removed at once. Empty when it can.
std::string FolderRefusesFiles(const std::string& folder) {
  std::string probe = folder + "/.ptxbench-write-probe-XXXXXX";
  int fd = ::mkstemp(probe.data());
  if (fd < 0) return std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

}  // namespace

void CheckOutputPath(const std::string& path, const std::string& option) {
  if (path.empty()) return;
  auto bad = [&](const std::string& reason) {
    return UsageError(option + " " + path + ": " + reason);
  };
  // The output is written through a new file in `folder` (a temporary beside the target): the
  // folder must take one, which access() alone does not tell for root or on kernel filesystems.
  auto require_files_in = [&](const std::string& folder) {
    if (const char* kernel_fs = KernelFilesystem(folder))
      throw bad("is on " + std::string(kernel_fs) + ", where no output file can be written");
    if (::access(folder.c_str(), W_OK | X_OK) != 0)
      throw bad("the folder " + folder + " is not writable (" + std::strerror(errno) + ")");
    if (std::string why = FolderRefusesFiles(folder); !why.empty())
      throw bad("the folder " + folder + " is not writable (" + why + ")");
  };
  if (int fd = OwnDescriptor(path); fd >= 0) {
    if (::fcntl(fd, F_GETFL) == -1) throw bad("no such open descriptor");
    return;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw bad("is a folder, not a file");
    if (!S_ISREG(st.st_mode)) {
      // A device, FIFO or terminal: written in place, so it must be writable itself.
      if (::access(path.c_str(), W_OK) != 0)
        throw bad(std::string("cannot be written (") + std::strerror(errno) + ")");
      return;
    }
    // A regular file is replaced through a temporary file beside it (through a link, beside
    // the link's target), so its folder must be writable.
    std::error_code ec;
    std::string target = fs::canonical(path, ec).string();
    if (ec) throw bad("cannot be resolved (" + ec.message() + ")");
    return require_files_in(ParentOf(target));
  }
  int stat_errno = errno;
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode))
    throw bad("is a link to a file that does not exist");
  std::string folder = ParentOf(path);
  struct stat pst {};
  if (::stat(folder.c_str(), &pst) != 0) {
    if (errno == ENOENT) throw bad("the folder " + folder + " does not exist");
    throw bad("the folder " + folder + " cannot be reached (" + std::strerror(errno) + ")");
  }
  if (!S_ISDIR(pst.st_mode)) throw bad(folder + " is not a folder");
  if (stat_errno != ENOENT)
    throw bad(std::string("cannot be reached (") + std::strerror(stat_errno) + ")");
  require_files_in(folder);
}

void CheckOutputPaths(const std::vector<std::pair<std::string, std::string>>& options) {
  for (size_t i = 0; i < options.size(); ++i) {
    const auto& [option, path] = options[i];
    if (path.empty()) continue;
    CheckOutputPath(path, option);
    for (size_t j = 0; j < i; ++j) {
      const auto& [other, earlier] = options[j];
      if (earlier.empty()) continue;
      // Standard output twice would mix two outputs; so would one file twice (special files
      // such as /dev/null may be named by several).
      bool same = IsStandardOutput(earlier) && IsStandardOutput(path);
      if (!same && OwnDescriptor(earlier) < 0 && OwnDescriptor(path) < 0) {
        std::error_code ea, eb;
        bool a = fs::exists(earlier, ea), b = fs::exists(path, eb);
        if (!a && !b)
          same = fs::weakly_canonical(earlier, ea) == fs::weakly_canonical(path, eb);
        else if (a && b && fs::is_regular_file(path, eb))
          same = fs::equivalent(earlier, path, ea) && !ea;
      }
      if (same)
        throw UsageError(option + " " + path + ": " + other + " writes there too; give each " +
                         "output its own path");
    }
  }
}

bool IsStandardOutput(const std::string& path) { return OwnDescriptor(path) == 1; }

namespace {

// Writes `content` to a descriptor this function then owns, and closes it; a failed write or
// close throws InputError naming `path`.
void WriteAllAndClose(int fd, std::string_view content, const std::string& path) {
  try {
    WriteAll(fd, content, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0 && errno != EINTR)
    throw InputError(path + ": write failed (" + std::strerror(errno) + ")");
}

// WriteOutput and AppendOutput: the same paths, the same descriptors and special files; only
// a regular file differs (replaced atomically, or added to).
void WriteOrAppendOutput(const std::string& path, std::string_view content, bool append) {
  if (int fd = OwnDescriptor(path); fd >= 0) {
    // What the command already printed there goes first.
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    WriteAll(fd, content, path);
    return;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A special file (/dev/null, a FIFO, a terminal): opened and written in place. No O_TRUNC
    // and no O_CREAT: nothing about the file itself changes.
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw InputError(path + ": cannot write (" + std::strerror(errno) + ")");
    WriteAllAndClose(fd, content, path);
    return;
  }
  // A regular file, or none yet. Through a link, the target is replaced and the link stays.
  std::string target = path;
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    std::error_code ec;
    fs::path resolved = fs::canonical(path, ec);
    if (!ec) target = resolved.string();
  }
  if (!append) {
    WriteFileAtomic(target, content);
    return;
  }
  // One write(2) on an O_APPEND descriptor: each line lands whole, after what is there, even
  // with other writers of the same file.
  int fd = ::open(target.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd < 0) throw InputError(path + ": cannot write (" + std::strerror(errno) + ")");
  WriteAllAndClose(fd, content, path);
}

}  // namespace

void WriteOutput(const std::string& path, std::string_view content) {
  WriteOrAppendOutput(path, content, false);
}

void AppendOutput(const std::string& path, std::string_view content) {
  WriteOrAppendOutput(path, content, true);
}

bool FileExists(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

void MakeDirs(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) throw InputError(path + ": cannot create folder (" + ec.message() + ")");
}

std::string CacheRoot() {
  if (const char* c = std::getenv("PTXBENCH_CACHE"); c && *c) return c;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/ptxbench";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/ptxbench";
  return "/tmp/ptxbench-cache";
}

ScratchDir::ScratchDir(std::string_view prefix) {
  std::string base;
  if (::access("/dev/shm", W_OK) == 0) {
    base = "/dev/shm";
  } else if (const char* t = std::getenv("TMPDIR"); t && *t) {
    base = t;
  } else {
    base = "/tmp";
  }
  // The pid in the name: what a killed process left is found and removed by whoever notices
  // (serve/leftovers.h).
  std::string tmpl =
      base + "/" + std::string(prefix) + "." + std::to_string(::getpid()) + ".XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr)
    throw EnvironmentError("cannot create a scratch folder in " + base + ": " +
                           std::strerror(errno));
  path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
  // Only once nothing of its children is left: the next evaluation may get their uid.
  ReleaseSandboxUsers(path_);
}

std::string SelfExecutable() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw InternalError("cannot resolve /proc/self/exe: " + ec.message());
  return p.string();
}

}  // namespace ptxbench
