#include "measure/vendor_library.h"

#include <climits>
#include <cstdlib>

#include "common/strings.h"
#include "measure/baseline_error.h"

namespace ptxbench {

nlohmann::json VendorLibrary::Describe(const std::string& version,
                                       const std::string& header_version) const {
  nlohmann::json j = {
      {"library", path},
      {"version", version},
      {"header_version", header_version},
  };
  // A fallback that was taken is part of what was measured.
  if (!skipped.empty()) j["skipped"] = skipped;
  if (char resolved[PATH_MAX]; realpath(path.c_str(), resolved) && path != resolved)
    j["library_file"] = resolved;
  return j;
}

VendorLibrary LoadVendorLibrary(const VendorLibrarySpec& spec,
                                const std::function<std::string(const DynamicLibrary&)>& bind) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv(spec.env_var); env && *env) candidates.push_back(env);
  candidates.insert(candidates.end(), spec.names.begin(), spec.names.end());
  LibraryChoice choice = OpenFirstOf(candidates, bind);
  if (!choice.library)
    throw BaselineError(spec.label +
                        ": cannot load the library: " + Join(choice.passed_over, "; "));
  return {choice.library->Path(), std::move(choice.passed_over)};
}

std::string VendorVersionString(size_t v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

}  // namespace ptxbench
