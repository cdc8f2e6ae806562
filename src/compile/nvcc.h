// Building a candidate: one nvcc call per (source, arch) makes the shared object that is
// then run, checked and (later) inspected, timed and profiled; there is never a second build.
// Builds are cached by content: the source, the arch, the flags and the nvcc version.
//
// The ABI (task/abi.h) is read from the source: a tvm-ffi candidate (upstream PTXBench's) is
// built against the pinned TVM-FFI runtime (compile/tvm_ffi.h) with
//   -I<tvm_ffi>/include -L<tvm_ffi>/lib -ltvm_ffi -Xlinker -rpath,$ORIGIN:<tvm_ffi>/lib
// ($ORIGIN first: a confined child finds the copy of libtvm_ffi.so placed beside its copy of
// the object), and its nvcc may read that folder. The ABI and the runtime's version are part
// of the cache key. Without the runtime such a source cannot be built: EnvironmentError.
//
// nvcc runs confined (common/sandbox.h; NvccSandboxPolicy): an allow-listed environment, its
// own namespaces, rlimits, and Landlock letting it read only what a build opens (the toolkit,
// the system headers, gcc's folder, the programs and libraries; not the rest of /usr, /opt or
// /usr/local), write only its work folder, and open no device but /dev/null. So an #include
// (or .include, .incbin, #line) that names another file fails to open rather than quoting
// that file in the errors, an endless input (/dev/zero, a FIFO) cannot be opened, and a
// runaway front end meets its limits. The screen (screen/screen.h) rejects such sources first;
// this is the second wall. What nvcc prints is bounded, passed through RedactSecrets, and its
// file errors are one phrase (NormalizeFileErrors), so it tells no host path's existence.
//
// Caps on what one build may cost (issue 35: a 1.5 KB source made a 274 MB entry and used
// 5.5-8.1 GB for a minute). Each is the candidate's failure (COMPILE_ERROR, never
// INFRA_ERROR), with a line "ptxbench: ..." first in the errors saying which cap:
//   object   a built candidate.so over kBuildObjectCapBytes is removed and never cached;
//   memory   every process of the build under RLIMIT_AS kBuildAddressSpaceBytes (measured:
//            the largest controls build in 200-250 MB resident and within 512 MiB of address
//            space; see docs/threat-model.md);
//   log      at most kBuildLogCapBytes of the compiler's output is kept;
//   files    RLIMIT_FSIZE 256 MiB per file written, 300 CPU seconds per process.
//
// The files of a cache entry (<cache>/<key>/: candidate.cu, candidate.so, build.json) are
// read-only once written (0444, the object 0555), and build.json records candidate.so's
// sha256 and size; a hit re-hashes the object, and an entry that does not match (or has no
// hash: an older format) is removed and rebuilt, with BuildResult::cache_problem saying why.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/sandbox.h"
#include "compile/ptxas_report.h"
#include "task/abi.h"

namespace ptxbench {

// The architectures a candidate can be built for, and their nvcc target flags.
bool IsSupportedArch(const std::string& arch);
std::vector<std::string> SupportedArchs();
// Throws UsageError "unknown arch 'X' (supported: sm_90a, sm_100a)" for anything else.
void RequireSupportedArch(const std::string& arch);

inline constexpr uint64_t kBuildObjectCapBytes = 32ull << 20;
inline constexpr uint64_t kBuildAddressSpaceBytes = 2ull << 30;
inline constexpr size_t kBuildLogCapBytes = 1u << 20;
// What every failed open of a file reads as in a build log.
inline constexpr const char* kUnreadableFileWords = "no such file, or not readable in the build";

struct BuildOptions {
  std::string arch = "sm_90a";
  std::string nvcc;       // empty: found on PATH / CUDA_HOME
  std::string cache_dir;  // empty: CacheRoot()/build
  bool use_cache = true;
  std::chrono::seconds timeout{300};
  // Run nvcc under NvccSandboxPolicy. Off only to measure what confinement costs.
  bool confine = true;
};

enum class BuildOutcome { kBuilt, kCompileError };

struct BuildResult {
  BuildOutcome outcome = BuildOutcome::kCompileError;
  std::string shared_object;         // path inside the cache entry, when built
  std::string shared_object_sha256;  // of that file (verified on a cache hit): the container
                                     // whose SASS was inspected (upstream's cubin_container_sha256)
  std::vector<std::string> command;  // the nvcc invocation, as run
  std::string nvcc_version;          // "13.0.88"
  CandidateAbi abi = CandidateAbi::kNative;  // as read from the source
  std::string tvm_ffi_version;               // the runtime built against (tvm-ffi only)
  std::string key;                           // sha256 of everything that determines the output
  bool cache_hit = false;
  double seconds = 0;  // of the nvcc call (0 on a cache hit)
  std::string log;     // what nvcc printed (at most kBuildLogCapBytes), secrets redacted
  std::string errors;  // trimmed for people, on a compile error
  // The cap a failed build met ("object_size", "memory"), else empty; its line leads `errors`.
  std::string limit;
  std::vector<PtxasFunction> functions;
  // Why a cached entry was not used and was rebuilt ("candidate.so sha256 mismatch: rebuilt");
  // empty when there was none or it was sound.
  std::string cache_problem;
  // Why the object's device code is not what nvcc made for the source
  // (compile/fatbin_origin.h): bytes placed in .nv_fatbin by the source itself. Empty for an
  // honest object; checked when built and kept in the cache entry.
  std::string foreign_device_code;
  // What nvcc ran under (PreparedSandbox::Describe(); on a cache hit, as recorded then).
  nlohmann::json sandbox = nlohmann::json::object();
};

// The confinement of an nvcc call working in `work_dir`: environment PATH, LANG, LC_*,
// CUDA_HOME, CUDA_PATH, LD_LIBRARY_PATH, with HOME = work_dir and TMPDIR = work_dir/tmp;
// namespaces (network off), no uid change (the work folder is ours); Landlock reading
// NvccSystemReadPaths(), the dynamic loader's files in /etc (not /etc itself, which holds
// passwd, shadow and keys) and the toolkit (ToolkitReadPaths), writing work_dir,
// device /dev/null only; rlimits: kBuildAddressSpaceBytes of address space, 300 CPU seconds,
// 256 MiB files, 1024 open files. No seccomp: nvcc, cicc, ptxas, gcc and fatbinary exec each
// other.
// A tvm-ffi build adds the TVM-FFI folder to the readable paths.
SandboxPolicy NvccSandboxPolicy(const std::string& nvcc_path, const std::string& work_dir);
// The system part of those readable paths (without the toolkit).
std::vector<std::string> NvccSystemReadPaths();
// The toolkit part: bin, include, lib, lib64, nvvm and targets (those that exist, resolved) of
// the tool's bin/.. and, for nvcc, of the TOP its dry run names. Never a root as such, so a
// toolkit in /usr/local does not open /usr/local whole.
std::vector<std::string> ToolkitReadPaths(const std::string& tool_path);
// The toolkit root nvcc's dry run names (`#$ TOP=`, resolved), or nothing when the dry run
// fails. nvcc on PATH may be a wrapper script or a link farm; this is the real toolkit.
std::optional<std::filesystem::path> NvccReportedToolkit(const std::string& nvcc_path);
// `log` with every file-open error's words (Permission denied, No such file or directory, Not
// a directory, ...) replaced by kUnreadableFileWords.
std::string NormalizeFileErrors(std::string log);

// Throws EnvironmentError when nvcc cannot be found (or, for a tvm-ffi source, the TVM-FFI
// runtime), UsageError for an unknown arch.
BuildResult BuildCandidate(const std::string& source, const BuildOptions& options);

// "13.0.88" from `nvcc --version`; throws EnvironmentError when nvcc is missing.
std::string NvccVersion(const std::string& nvcc_path);
std::string FindNvcc(const std::string& configured);

nlohmann::json ToJson(const BuildResult& b);

}  // namespace ptxbench
