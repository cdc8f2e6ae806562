#include "compile/tvm_ffi.h"

#include <cstdlib>
#include <filesystem>
#include <regex>

#include "common/files.h"

namespace ptxbench {

namespace fs = std::filesystem;

namespace {

// "0.1.12" from the TVM_FFI_VERSION_{MAJOR,MINOR,PATCH} macros of c_api.h.
std::string HeaderVersion(const std::string& c_api) {
  std::string text;
  try {
    text = ReadFile(c_api);
  } catch (const std::exception&) {
    return "unknown";
  }
  std::string parts[3];
  const char* names[3] = {"MAJOR", "MINOR", "PATCH"};
  for (int i = 0; i < 3; ++i) {
    std::regex re(std::string(R"(#define\s+TVM_FFI_VERSION_)") + names[i] + R"(\s+(\d+))");
    std::smatch m;
    if (!std::regex_search(text, m, re)) return "unknown";
    parts[i] = m[1];
  }
  return parts[0] + "." + parts[1] + "." + parts[2];
}

}  // namespace

std::optional<TvmFfiInstall> FindTvmFfi(std::string* why) {
  std::string where;
  const char* env = std::getenv("PTXBENCH_TVM_FFI");
  if (env && *env)
    where = env;
  else
    where = std::string(PTXBENCH_SOURCE_DIR) + "/.tools/tvm-ffi/tvm_ffi";
  const std::string source = env && *env ? " ($PTXBENCH_TVM_FFI)" : "";
  auto fail = [&](const std::string& message) -> std::optional<TvmFfiInstall> {
    if (why)
      *why = message + "; scripts/setup.sh installs apache-tvm-ffi==" + kTvmFfiPinnedVersion +
             " into .tools/tvm-ffi (or set PTXBENCH_TVM_FFI to its tvm_ffi folder)";
    return std::nullopt;
  };
  std::error_code ec;
  if (!fs::is_directory(where, ec)) return fail("no folder " + where + source);
  fs::path root = fs::canonical(where, ec);
  if (ec) return fail("cannot resolve " + where + source);
  TvmFfiInstall t;
  t.root = root.string();
  t.include = t.root + "/include";
  t.lib_dir = t.root + "/lib";
  t.library = t.lib_dir + "/libtvm_ffi.so";
  const std::string c_api = t.include + "/tvm/ffi/c_api.h";
  if (!fs::is_regular_file(c_api, ec)) return fail(t.root + " has no include/tvm/ffi/c_api.h");
  if (!fs::is_regular_file(t.include + "/dlpack/dlpack.h", ec))
    return fail(t.root + " has no include/dlpack/dlpack.h");
  if (!fs::is_regular_file(t.library, ec)) return fail(t.root + " has no lib/libtvm_ffi.so");
  t.version = HeaderVersion(c_api);
  return t;
}

}  // namespace ptxbench
