// File-system helpers: whole-file reads, atomic writes, scratch and cache folders.
#pragma once

#include <string>
#include <string_view>

namespace ptxbench {

// Reads a whole file; throws InputError naming the path when it cannot.
std::string ReadFile(const std::string& path);
// Writes through a temporary file in the same folder and renames it into place, so that a
// reader (or an interrupted run) never sees a half-written file.
void WriteFileAtomic(const std::string& path, std::string_view content);
bool FileExists(const std::string& path);
void MakeDirs(const std::string& path);

// The per-user cache root: $PTXBENCH_CACHE, else $XDG_CACHE_HOME/ptxbench, else ~/.cache/ptxbench.
std::string CacheRoot();

// A private scratch folder (mode 0700) that is removed with everything in it when the object
// goes away. Placed in /dev/shm when it is writable, since outputs of large workloads pass
// through it, else in $TMPDIR or /tmp.
class ScratchDir {
 public:
  explicit ScratchDir(std::string_view prefix = "ptxbench");
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

// The absolute path of the running executable (children are started from it).
std::string SelfExecutable();

}  // namespace ptxbench
