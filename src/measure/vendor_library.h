// The vendor libraries behind the baselines that ptxbench loads at run time rather than links
// (cuBLASLt, cuDNN): so they are mapped only into the child process that times the baseline,
// and the correctness child, which never loads them, can take any mapping of theirs it sees
// (loaded_objects.h) as the candidate's doing.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/dynamic_library.h"

namespace ptxbench {

// Where a vendor library was loaded from, and which candidates were passed over on the way.
struct VendorLibrary {
  std::string path;                  // as loaded: a path, or the name when the loader gives none
  std::vector<std::string> skipped;  // earlier candidates that did not load, and why

  // {"library": path, "library_file": path with symlinks resolved (when it differs),
  //  "version", "header_version", "skipped" (when any)}.
  nlohmann::json Describe(const std::string& version, const std::string& header_version) const;
};

// Which library a baseline loads, and how its errors name it.
struct VendorLibrarySpec {
  std::string label;               // "cuBLASLt": the start of every error
  const char* env_var;             // names a library to try first, when set
  std::vector<std::string> names;  // then these, in order
};

// Loads the first candidate of `spec` that loads and that `bind` finds complete (it resolves
// the symbols and returns the missing ones, "" when none). Throws BaselineError "<label>:
// cannot load the library: <each candidate tried and why>".
VendorLibrary LoadVendorLibrary(const VendorLibrarySpec& spec,
                                const std::function<std::string(const DynamicLibrary&)>& bind);

// A baseline's state with its library loaded: Impl has `Api api` (whose Bind(library) resolves
// the functions and returns the missing ones) and `VendorLibrary library`.
template <typename Impl>
std::unique_ptr<Impl> LoadVendorImpl(const VendorLibrarySpec& spec) {
  auto impl = std::make_unique<Impl>();
  impl->library = LoadVendorLibrary(
      spec, [&](const DynamicLibrary& library) { return impl->api.Bind(library); });
  return impl;
}

// "13.1.0" from the major·10000 + minor·100 + patch that cuBLASLt and cuDNN 9 report.
std::string VendorVersionString(size_t version);

}  // namespace ptxbench
