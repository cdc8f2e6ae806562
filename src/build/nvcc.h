// Building a candidate: one nvcc call per (source, arch) makes the shared object that is
// then run, checked and (later) inspected, timed and profiled; there is never a second build.
// Builds are cached by content: the source, the arch, the flags and the nvcc version.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "build/ptxas_report.h"

namespace ptxbench {

// The architectures a candidate can be built for, and their nvcc target flags.
bool IsSupportedArch(const std::string& arch);
std::vector<std::string> SupportedArchs();
// Throws UsageError "unknown arch 'X' (supported: sm_90a, sm_100a)" for anything else.
void RequireSupportedArch(const std::string& arch);

struct BuildOptions {
  std::string arch = "sm_90a";
  std::string nvcc;       // empty: found on PATH / CUDA_HOME
  std::string cache_dir;  // empty: CacheRoot()/build
  bool use_cache = true;
  std::chrono::seconds timeout{300};
};

enum class BuildOutcome { kBuilt, kCompileError };

struct BuildResult {
  BuildOutcome outcome = BuildOutcome::kCompileError;
  std::string shared_object;         // path inside the cache entry, when built
  std::vector<std::string> command;  // the nvcc invocation, as run
  std::string nvcc_version;          // "13.0.88"
  std::string key;                   // sha256 of everything that determines the output
  bool cache_hit = false;
  double seconds = 0;  // of the nvcc call (0 on a cache hit)
  std::string log;     // everything nvcc printed
  std::string errors;  // trimmed for people, on a compile error
  std::vector<PtxasFunction> functions;
};

// Throws EnvironmentError when nvcc cannot be found, UsageError for an unknown arch.
BuildResult BuildCandidate(const std::string& source, const BuildOptions& options);

// "13.0.88" from `nvcc --version`; throws EnvironmentError when nvcc is missing.
std::string NvccVersion(const std::string& nvcc_path);
std::string FindNvcc(const std::string& configured);

nlohmann::json ToJson(const BuildResult& b);

}  // namespace ptxbench
