#include "common/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

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
  std::string tmpl = base + "/" + std::string(prefix) + ".XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr)
    throw EnvironmentError("cannot create a scratch folder in " + base + ": " +
                           std::strerror(errno));
  path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string SelfExecutable() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw InternalError("cannot resolve /proc/self/exe: " + ec.message());
  return p.string();
}

}  // namespace ptxbench
