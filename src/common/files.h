// File-system helpers: whole-file reads, atomic writes, scratch and cache folders.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ptxbench {

// Reads a whole file; throws InputError naming the path when it cannot.
std::string ReadFile(const std::string& path);
// The last `max_bytes` of a file (all of it when smaller), without reading the rest: a log a
// child may have made as large as its limits let it. *total_bytes (when given) is the file's
// size. "" (and 0) when it cannot be read.
std::string ReadFileTail(const std::string& path, size_t max_bytes, size_t* total_bytes = nullptr);
// Writes through a temporary file in the same folder and renames it into place, so that a
// reader (or an interrupted run) never sees a half-written file.
void WriteFileAtomic(const std::string& path, std::string_view content);
bool FileExists(const std::string& path);

// Output options of the commands (--json PATH, --csv PATH, --html PATH, ...), in one place.
// PATH "-" is standard output. Checked before any work starts: the parent folder must exist
// and be writable (no folder is created), and PATH must be absent, a regular file (or a link
// to one), or a special file that can be written (/dev/stdout, /dev/null, a FIFO, a terminal).
// An empty PATH means the option was not given and passes. Throws UsageError with one line,
// "OPTION PATH: reason".
void CheckOutputPath(const std::string& path, const std::string& option);
// All the output options of one command, as {option, PATH} (empty PATHs are options not
// given): each checked as above; two of them may not name standard output or the same file.
void CheckOutputPaths(const std::vector<std::pair<std::string, std::string>>& options);
// Writes one command output to a PATH that CheckOutputPath accepted: "-", /dev/stdout,
// /dev/stderr and /dev/fd/N go to that descriptor (after what is buffered for it); any other
// special file is opened and written in place, never replaced; a regular file (through a link:
// the link's target) is written through WriteFileAtomic. Throws InputError naming the path.
void WriteOutput(const std::string& path, std::string_view content);
// The same, but a regular file is added to (created when missing), never replaced: for JSON
// Lines outputs such as FlashInfer-Bench traces, where every run adds its line.
void AppendOutput(const std::string& path, std::string_view content);
// Whether an output PATH is standard output ("-", /dev/stdout, /dev/fd/1): a command then
// prints its text for people on standard error, so that standard output holds the data alone.
bool IsStandardOutput(const std::string& path);
void MakeDirs(const std::string& path);

// The per-user cache root: $PTXBENCH_CACHE, else $XDG_CACHE_HOME/ptxbench, else ~/.cache/ptxbench.
std::string CacheRoot();

// A private scratch folder (mode 0700) that is removed with everything in it when the object
// goes away. Placed in /dev/shm when it is writable, since outputs of large workloads pass
// through it, else in $TMPDIR or /tmp. The sandbox users claimed for it (an evaluation's uid,
// common/sandbox.h) are given back after its files are gone.
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
