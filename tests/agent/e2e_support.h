// What the end-to-end tests of `ptxbench run` and `ptxbench fixit` share: the binary under test
// and the source tree (both set by ctest), and a substring test for logs and files.
#pragma once

#include <cstdlib>
#include <string>

namespace ptxbench::e2e {

inline std::string Bin() { return std::getenv("PTXBENCH_BIN"); }
inline std::string Src() { return std::getenv("PTXBENCH_SOURCE_DIR"); }
inline bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace ptxbench::e2e
