// The candidate ABIs: how a candidate's entry point is declared, found and called.
//
//   native   `extern "C" int run(<pointers>, <axes>, cudaStream_t stream)`, the family's
//            signature (Family::Signature); our default.
//   tvm-ffi  upstream PTXBench's: `void run(tvm::ffi::TensorView ...)` exported with
//            TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, ...), destination-passing (every input of the
//            family's Tensors() in order, then every output), the stream from
//            TVMFFIEnvGetStream. The shared object exports `__tvm_ffi_run`, a TVM-FFI safe
//            call, and depends on libtvm_ffi.so (compile/tvm_ffi.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptxbench {

enum class CandidateAbi { kNative, kTvmFfi };

// "native", "tvm-ffi": the record's candidate.abi.
std::string ToString(CandidateAbi abi);
std::optional<CandidateAbi> ParseCandidateAbi(std::string_view name);
// The symbol the shared object must export: "run", "__tvm_ffi_run".
std::string EntrySymbol(CandidateAbi abi);

// The ABI a source is written for. tvm-ffi when, outside comments and string literals, it
// exports `run` the TVM-FFI way (`TVM_FFI_DLL_EXPORT_TYPED_FUNC(run,`) and declares no native
// entry point (`extern "C" ... int run(`, either form of extern "C"); native otherwise, so
// that every source that was native stays native.
CandidateAbi DetectCandidateAbi(std::string_view source);

// The parameters of the function a tvm-ffi source exports as `run`, as written ("tvm::ffi::
// TensorView A", "float scale"), read from the source before any build: the function named
// in TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, f) (its one definition) or the lambda written there.
// nullopt when the source does not say unambiguously (the call itself checks then).
std::optional<std::vector<std::string>> TvmFfiRunParameters(std::string_view source);

// One TVM_FFI_DLL_EXPORT_TYPED_FUNC(NAME, ...) in code whose comments and literals are blanked
// at their offsets (StripCommentsAndStrings), so that positions hold in the original source.
struct TvmFfiExport {
  std::string name;        // NAME, an identifier
  size_t name_begin = 0;   // where NAME starts
  size_t after_comma = 0;  // where the exported function (or lambda) is written
};
// Every such export, in order (a word inside another identifier is not the macro).
std::vector<TvmFfiExport> TvmFfiExports(std::string_view code);

// Whether a parameter as written is a tensor (TensorView, Tensor, DLTensor*).
bool IsTensorParameter(std::string_view parameter);

// A loaded candidate's entry point (child processes only).
struct CandidateEntry {
  CandidateAbi abi = CandidateAbi::kNative;
  void* run = nullptr;  // native: `run`; tvm-ffi: `__tvm_ffi_run`
  // tvm-ffi: functions of the libtvm_ffi.so the candidate itself was loaded with, found
  // through its handle: TVMFFIEnvSetStream, TVMFFIErrorMoveFromRaised, TVMFFIObjectDecRef.
  void* env_set_stream = nullptr;
  void* error_move_from_raised = nullptr;
  void* object_dec_ref = nullptr;
  explicit operator bool() const { return run != nullptr; }
};

}  // namespace ptxbench
