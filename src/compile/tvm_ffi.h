// The TVM-FFI runtime that upstream PTXBench candidates are written against (their entry point
// is `void run(tvm::ffi::TensorView ...)` exported with TVM_FFI_DLL_EXPORT_TYPED_FUNC). Its
// headers and libtvm_ffi.so come from the maintained package, apache-tvm-ffi on PyPI, pinned
// to the version upstream uses; scripts/setup.sh installs the wheel into .tools/tvm-ffi.
//
// The folder is the wheel's `tvm_ffi` package folder: include/ (tvm/ffi/*.h, dlpack/dlpack.h)
// and lib/libtvm_ffi.so. Looked up, in order: $PTXBENCH_TVM_FFI, then
// <source tree>/.tools/tvm-ffi/tvm_ffi.
#pragma once

#include <optional>
#include <string>

namespace ptxbench {

// The version upstream pins, and setup.sh installs.
inline constexpr const char* kTvmFfiPinnedVersion = "0.1.12";

struct TvmFfiInstall {
  std::string root;     // the tvm_ffi folder, canonical
  std::string include;  // root/include
  std::string lib_dir;  // root/lib
  std::string library;  // lib_dir/libtvm_ffi.so
  std::string version;  // from include/tvm/ffi/c_api.h ("0.1.12"), or "unknown"
};

// The runtime, or nullopt with `why` saying what is missing and where it was looked for.
std::optional<TvmFfiInstall> FindTvmFfi(std::string* why = nullptr);

}  // namespace ptxbench
