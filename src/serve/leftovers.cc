#include "serve/leftovers.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <functional>

namespace ptxbench {
namespace {

namespace fs = std::filesystem;

// A pid written in `base` (10, or 16 for nvcc's names); false unless all of `text` is one.
bool ParsePid(const std::string& text, int base, pid_t* pid) {
  if (text.empty() || text.size() > 10) return false;
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, base);
  if (!end || *end != '\0' || v <= 0 || v > 0x7fffffff) return false;
  *pid = static_cast<pid_t>(v);
  return true;
}

class Sweep {
 public:
  Sweep(const std::vector<pid_t>& pids, bool remove) : pids_(pids), remove_(remove) {}

  // Calls `each` with the name and path of every entry of `dir` (none when it cannot be read).
  static void List(const std::string& dir,
                   const std::function<void(const std::string&, const std::string&)>& each) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) return;
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(d);
    for (const std::string& n : names) each(n, dir + "/" + n);
  }

  // Counts, and removes when asked, `path` when it is this user's (never following a symlink)
  // and `pid` is one whose leftovers go.
  bool Take(const std::string& path, pid_t pid, bool folder) {
    if (pid == ::getpid() || ProcessAlive(pid)) return false;
    if (!pids_.empty() && std::find(pids_.begin(), pids_.end(), pid) == pids_.end()) return false;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || st.st_uid != ::geteuid()) return false;
    if (folder ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) return false;
    if (remove_) {
      std::error_code ec;
      fs::remove_all(path, ec);  // never follows symbolic links
      if (ec) return false;
    }
    return true;
  }

 private:
  const std::vector<pid_t>& pids_;
  bool remove_;
};

Leftovers Search(const std::string& cache_root, const std::vector<pid_t>& pids, bool remove) {
  Leftovers found;
  Sweep sweep(pids, remove);
  const char* t = std::getenv("TMPDIR");
  const std::string tmp = t && t[0] == '/' ? t : "/tmp";
  std::vector<std::string> scratch_bases = {"/dev/shm"};
  if (tmp != "/dev/shm") scratch_bases.push_back(tmp);
  // ScratchDir: ptxbench-<what>.<pid>.XXXXXX
  for (const std::string& base : scratch_bases)
    Sweep::List(base, [&](const std::string& name, const std::string& path) {
      if (name.rfind("ptxbench", 0) != 0) return;
      size_t last = name.rfind('.');
      if (last == std::string::npos || last == 0 || name.size() - last != 7) return;
      size_t before = name.rfind('.', last - 1);
      pid_t pid = 0;
      if (before == std::string::npos ||
          !ParsePid(name.substr(before + 1, last - before - 1), 10, &pid))
        return;
      found.scratch_folders += sweep.Take(path, pid, true);
    });
  // nvcc outside the sandbox: tmpxft_<8 hex digits of its pid>_…
  Sweep::List(tmp, [&](const std::string& name, const std::string& path) {
    pid_t pid = 0;
    if (name.rfind("tmpxft_", 0) != 0 || name.size() < 16 || name[15] != '_' ||
        !ParsePid(name.substr(7, 8), 16, &pid))
      return;
    found.tmpxft_files += sweep.Take(path, pid, false);
  });
  // Unfinished cache entries: <cache root>/<kind>/<entry>.tmp.<pid>[.<more>]
  if (!cache_root.empty())
    Sweep::List(cache_root, [&](const std::string&, const std::string& kind) {
      struct stat st {};
      if (::lstat(kind.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
      Sweep::List(kind, [&](const std::string& name, const std::string& path) {
        size_t at = name.find(".tmp.");
        if (at == std::string::npos) return;
        std::string rest = name.substr(at + 5);
        pid_t pid = 0;
        if (!ParsePid(rest.substr(0, rest.find('.')), 10, &pid)) return;
        struct stat e {};
        if (::lstat(path.c_str(), &e) != 0) return;
        found.cache_tmp += sweep.Take(path, pid, S_ISDIR(e.st_mode));
      });
    });
  return found;
}

}  // namespace

bool ProcessAlive(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

Leftovers RemoveLeftovers(const std::string& cache_root, const std::vector<pid_t>& pids) {
  try {
    return Search(cache_root, pids, true);
  } catch (...) {
    return {};
  }
}

Leftovers CountLeftovers(const std::string& cache_root, const std::vector<pid_t>& pids) {
  try {
    return Search(cache_root, pids, false);
  } catch (...) {
    return {};
  }
}

}  // namespace ptxbench
