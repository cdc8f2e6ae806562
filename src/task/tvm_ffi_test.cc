// The tvm-ffi ABI (upstream PTXBench's candidates): detection from the source, the DLTensors
// handed over, and the whole call path without a GPU: a host-only module written the way
// upstream kernels are (TensorView arguments, TVM_FFI_DLL_EXPORT_TYPED_FUNC, the stream from
// TVMFFIEnvGetStream), loaded by the child's loader and called through Family::Call.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "child/child_support.h"
#include "common/files.h"
#include "common/subprocess.h"
#include "compile/tvm_ffi.h"
#include "run/channel.h"
#include "task/abi.h"
#include "task/family.h"
#include "task/tvm_ffi_call.h"

namespace ptxbench {
namespace {

std::string Control(const std::string& path) {
  return ReadFile(std::string(PTXBENCH_SOURCE_DIR) + "/controls/" + path);
}

TEST(CandidateAbi, NamesAndSymbols) {
  EXPECT_EQ(ToString(CandidateAbi::kNative), "native");
  EXPECT_EQ(ToString(CandidateAbi::kTvmFfi), "tvm-ffi");
  EXPECT_EQ(ParseCandidateAbi("tvm-ffi"), CandidateAbi::kTvmFfi);
  EXPECT_EQ(ParseCandidateAbi("native"), CandidateAbi::kNative);
  EXPECT_FALSE(ParseCandidateAbi("tvm_ffi").has_value());
  EXPECT_EQ(EntrySymbol(CandidateAbi::kNative), "run");
  EXPECT_EQ(EntrySymbol(CandidateAbi::kTvmFfi), "__tvm_ffi_run");
}

// The exported run's parameters, read from the source: upstream's controls take the task's
// tensors; upstream's own prompt example takes two scalars; a lambda, a qualified name and a
// declaration before the definition are read; two definitions (or none) say nothing.
TEST(CandidateAbi, TheExportedRunsParametersComeFromTheSource) {
  auto gemm = TvmFfiRunParameters(Control("upstream/gemm_tvm_ffi.cu"));
  ASSERT_TRUE(gemm.has_value());
  EXPECT_EQ(*gemm, (std::vector<std::string>{"tvm::ffi::TensorView A", "tvm::ffi::TensorView B",
                                             "tvm::ffi::TensorView C"}));
  auto mha = TvmFfiRunParameters(Control("upstream/mha_with_lse_tvm_ffi.cu"));
  ASSERT_TRUE(mha.has_value());
  EXPECT_EQ(mha->size(), 5u);

  const std::string prompt_example = R"(
#include <tvm/ffi/function.h>
using tvm::ffi::TensorView;
void add_scaled(TensorView x, float scale, int32_t shift, TensorView y) { /* ... */ }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, add_scaled);
)";
  auto p = TvmFfiRunParameters(prompt_example);
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->size(), 4u);
  EXPECT_TRUE(IsTensorParameter((*p)[0]));
  EXPECT_FALSE(IsTensorParameter((*p)[1]));
  EXPECT_FALSE(IsTensorParameter((*p)[2]));
  EXPECT_EQ((*p)[2], "int32_t shift");

  auto lambda = TvmFfiRunParameters(
      "TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, [](tvm::ffi::TensorView a, DLTensor* b) { f(a, b); });");
  ASSERT_TRUE(lambda.has_value());
  EXPECT_EQ(lambda->size(), 2u);
  EXPECT_TRUE(IsTensorParameter((*lambda)[1]));

  auto qualified = TvmFfiRunParameters(R"(namespace k { void go(TensorView a);
void go(TensorView a) noexcept { launch(a); } }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, k::go);)");
  ASSERT_TRUE(qualified.has_value());
  EXPECT_EQ(*qualified, std::vector<std::string>{"TensorView a"});

  EXPECT_FALSE(TvmFfiRunParameters(R"(void go(TensorView a) {}
void go(TensorView a, TensorView b) {}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, go);)")
                   .has_value());
  EXPECT_FALSE(
      TvmFfiRunParameters("void go(TensorView a);\nTVM_FFI_DLL_EXPORT_TYPED_FUNC(run, go);")
          .has_value());
  // In a comment it is not an export.
  EXPECT_FALSE(
      TvmFfiRunParameters("// TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, go);\nvoid go(TensorView a) {}")
          .has_value());
}

TEST(TvmFfiExports, NamesAndPlacesEachExportInTheCode) {
  const std::string code =
      "TVM_FFI_DLL_EXPORT_TYPED_FUNC( gemm_fp16 , go);\n"
      "MY_TVM_FFI_DLL_EXPORT_TYPED_FUNC(other, go);\n"      // another macro
      "TVM_FFI_DLL_EXPORT_TYPED_FUNC(run [](int a) {});\n"  // no comma after the name
      "TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, [](int a) {});\n";
  const std::vector<TvmFfiExport> e = TvmFfiExports(code);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].name, "gemm_fp16");
  EXPECT_EQ(code.substr(e[0].name_begin, 9), "gemm_fp16");
  EXPECT_EQ(code.substr(e[0].after_comma, 4), " go)");
  EXPECT_EQ(e[1].name, "run");
  EXPECT_EQ(code.substr(e[1].after_comma, 3), " []");
}

TEST(CandidateAbi, DetectedFromTheSource) {
  // The controls: ours native, upstream's tvm-ffi.
  EXPECT_EQ(DetectCandidateAbi(Control("gemm/tiled_correct.cu")), CandidateAbi::kNative);
  EXPECT_EQ(DetectCandidateAbi(Control("attention/fwd_correct.cu")), CandidateAbi::kNative);
  EXPECT_EQ(DetectCandidateAbi(Control("upstream/gemm_tvm_ffi.cu")), CandidateAbi::kTvmFfi);
  EXPECT_EQ(DetectCandidateAbi(Control("upstream/mha_with_lse_tvm_ffi.cu")), CandidateAbi::kTvmFfi);

  const std::string upstream =
      "#include <tvm/ffi/tvm_ffi.h>\n"
      "void run(tvm::ffi::TensorView A, tvm::ffi::TensorView B, tvm::ffi::TensorView C) {}\n";
  for (const char* exports : {"TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run);\n",
                              "TVM_FFI_DLL_EXPORT_TYPED_FUNC (\n  run ,\n  run);\n",
                              "TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, [](int x) {});\n"}) {
    EXPECT_EQ(DetectCandidateAbi(upstream + exports), CandidateAbi::kTvmFfi) << exports;
  }
  // Not an export of `run`, or only in a comment or a string: native.
  for (const char* not_exporting : {"", "TVM_FFI_DLL_EXPORT_TYPED_FUNC(runner, run);\n",
                                    "// TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run);\n",
                                    "/* TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run); */\n",
                                    "const char* s = \"TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run)\";",
                                    "MY_TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run);\n"}) {
    EXPECT_EQ(DetectCandidateAbi(upstream + not_exporting), CandidateAbi::kNative) << not_exporting;
  }
  // A native entry point besides: the native ABI wins, in every spelling of extern "C".
  const std::string exported = upstream + "TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run);\n";
  for (const char* native :
       {"extern \"C\" int run(const void* A, const void* B, void* C, int M, int N, int K, "
        "cudaStream_t s) { return 0; }\n",
        "extern \"C\" {\nint run(const void*, const void*, void*, int, int, int, "
        "cudaStream_t);\n}\n",
        "extern \"C\" __attribute__((visibility(\"default\"))) int run(void*);\n",
        "extern\"C\" __host__ int\nrun (void*);\n"}) {
    EXPECT_EQ(DetectCandidateAbi(exported + native), CandidateAbi::kNative) << native;
  }
  // extern "C" for something else is no native entry point.
  EXPECT_EQ(DetectCandidateAbi(exported + "extern \"C\" int helper(int);\n"
                                          "extern \"C\" void run_helper();\n"),
            CandidateAbi::kTvmFfi);
}

TEST(TvmFfiCall, DescribesContiguousRowMajorTensors) {
  const Family* gemm = FindFamily("gemm");
  ASSERT_NE(gemm, nullptr);
  auto specs = gemm->Tensors({{"M", 5}, {"N", 7}, {"K", 3}});
  ASSERT_EQ(specs.size(), 3u);
  int dummy = 0;
  DlTensorView a = DescribeForTvmFfi({specs[0], &dummy}, 0);
  EXPECT_EQ(a.data, &dummy);
  EXPECT_EQ(a.device_type, 2);  // kDLCUDA
  EXPECT_EQ(a.device_id, 0);
  EXPECT_EQ(a.ndim, 2);
  EXPECT_EQ(a.dtype_code, 4);  // kDLBfloat
  EXPECT_EQ(a.dtype_bits, 16);
  EXPECT_EQ(a.dtype_lanes, 1);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(a.strides, (std::vector<int64_t>{3, 1}));
  const Family* fwd = FindFamily("mha_fwd");
  ASSERT_NE(fwd, nullptr);
  auto t = fwd->Tensors({{"B", 2}, {"H", 3}, {"S", 5}, {"D", 4}, {"causal", 0}});
  ASSERT_EQ(t.size(), 5u);
  DlTensorView lse = DescribeForTvmFfi({t[4], nullptr}, 1);
  EXPECT_EQ(lse.device_id, 1);
  EXPECT_EQ(lse.dtype_code, 2);  // kDLFloat
  EXPECT_EQ(lse.dtype_bits, 32);
  EXPECT_EQ(lse.shape, (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(lse.strides, (std::vector<int64_t>{15, 5, 1}));
  DlTensorView o = DescribeForTvmFfi({t[3], nullptr}, 0);
  EXPECT_EQ(o.strides, (std::vector<int64_t>{60, 20, 4, 1}));
}

// A host-only module in upstream's style: it writes what it was handed into C's buffer.
const char* kHostModule = R"(
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/tvm_ffi.h>
#include <cstdint>

void run(tvm::ffi::TensorView A, tvm::ffi::TensorView B, tvm::ffi::TensorView C) {
  if (A.size(1) == 13) TVM_FFI_THROW(ValueError) << "K = 13 is refused";
  int64_t* out = static_cast<int64_t*>(C.data_ptr());
  out[0] = A.size(0);
  out[1] = A.size(1);
  out[2] = B.size(0);
  out[3] = C.size(1);
  out[4] = A.dtype().code;
  out[5] = A.dtype().bits;
  out[6] = A.device().device_type;
  out[7] = A.device().device_id;
  out[8] = C.stride(0);
  out[9] = reinterpret_cast<int64_t>(
      TVMFFIEnvGetStream(A.device().device_type, A.device().device_id));
  out[10] = reinterpret_cast<int64_t>(A.data_ptr());
  out[11] = reinterpret_cast<int64_t>(B.data_ptr());
  out[12] = A.ndim() + B.ndim() + C.ndim();
  out[13] = C.IsContiguous();
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run);
)";

// Builds the module once for the suite; "" with `why` when it cannot be built here.
std::string HostModule(std::string* why) {
  static ScratchDir dir("tvm-ffi-test");
  static std::string module, reason;
  static bool tried = false;
  if (!tried) {
    tried = true;
    auto t = FindTvmFfi(&reason);
    auto cxx = FindProgram("g++");
    if (!cxx) cxx = FindProgram("c++");
    if (!t) {
      reason = "no TVM-FFI runtime: " + reason;
    } else if (!cxx) {
      reason = "no host C++ compiler (g++, c++) to build the test module";
    } else {
      std::string src = dir.File("module.cc");
      WriteFileAtomic(src, kHostModule);
      std::string so = dir.File("module.so");
      CommandResult r =
          RunCommand({*cxx, "-std=c++17", "-shared", "-fPIC", "-O1", "-I" + t->include, "-o", so,
                      src, "-L" + t->lib_dir, "-ltvm_ffi", "-Wl,-rpath," + t->lib_dir},
                     std::chrono::seconds(300));
      if (r.exit.kind == ExitKind::kExited && r.exit.code == 0)
        module = so;
      else
        reason = "the test module did not build: " + r.output;
    }
  }
  *why = reason;
  return module;
}

class TvmFfiModule : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    module_ = HostModule(&why);
    if (module_.empty() && why.rfind("the test module", 0) == 0) FAIL() << why;
    if (module_.empty()) GTEST_SKIP() << why;
    // The child's loader, with its messages in a file.
    int fd = ::open(dir_.File("channel").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    ChannelWriter out(fd);
    entry_ = LoadCandidateRun({{"shared_object", module_}, {"abi", "tvm-ffi"}}, out);
    ::close(fd);
    ASSERT_TRUE(entry_) << ReadFile(dir_.File("channel"));
    EXPECT_EQ(entry_.abi, CandidateAbi::kTvmFfi);
    EXPECT_NE(entry_.env_set_stream, nullptr);
    EXPECT_NE(entry_.error_move_from_raised, nullptr);
    EXPECT_NE(entry_.object_dec_ref, nullptr);
  }

  // The gemm tensors for M, N, K on host buffers (the module only looks at them), C holding
  // what the module writes back.
  std::vector<DeviceTensor> Tensors(int64_t M, int64_t N, int64_t K) {
    auto specs = FindFamily("gemm")->Tensors({{"M", M}, {"N", N}, {"K", K}});
    return {{specs[0], a_.data()}, {specs[1], b_.data()}, {specs[2], seen_.data()}};
  }

  ScratchDir dir_{"tvm-ffi-test"};
  std::string module_;
  CandidateEntry entry_;
  std::vector<int64_t> a_ = std::vector<int64_t>(4), b_ = std::vector<int64_t>(4);
  std::vector<int64_t> seen_ = std::vector<int64_t>(16, -1);
};

TEST_F(TvmFfiModule, CalledWithDlTensorsOnOurStream) {
  const Family* gemm = FindFamily("gemm");
  Axes axes = {{"M", 70}, {"N", 7168}, {"K", 5120}};
  Stream stream = reinterpret_cast<Stream>(uintptr_t{0x5eed0});
  std::string error = "stale";
  ASSERT_EQ(gemm->Call(entry_, Tensors(70, 7168, 5120), axes, stream, &error), 0) << error;
  EXPECT_EQ(error, "");
  EXPECT_EQ(seen_[0], 70);
  EXPECT_EQ(seen_[1], 5120);
  EXPECT_EQ(seen_[2], 7168);
  EXPECT_EQ(seen_[3], 7168);
  EXPECT_EQ(seen_[4], 4);   // kDLBfloat
  EXPECT_EQ(seen_[5], 16);  // bits
  EXPECT_EQ(seen_[6], 2);   // kDLCUDA
  EXPECT_EQ(seen_[7], 0);   // device 0 (no GPU here: the current device's number falls back to 0)
  EXPECT_EQ(seen_[8], 7168);
  EXPECT_EQ(seen_[9], 0x5eed0) << "TVMFFIEnvGetStream returns the harness's stream";
  EXPECT_EQ(seen_[10], reinterpret_cast<int64_t>(a_.data()));
  EXPECT_EQ(seen_[11], reinterpret_cast<int64_t>(b_.data()));
  EXPECT_EQ(seen_[12], 6);
  EXPECT_EQ(seen_[13], 1) << "contiguous";

  // Another stream on the next call: set before every call.
  Stream other = reinterpret_cast<Stream>(uintptr_t{0xabc00});
  ASSERT_EQ(gemm->Call(entry_, Tensors(3, 4, 5), {{"M", 3}, {"N", 4}, {"K", 5}}, other), 0);
  EXPECT_EQ(seen_[9], 0xabc00);
  EXPECT_EQ(seen_[0], 3);
}

TEST_F(TvmFfiModule, ARaisedErrorIsANonZeroReturnWithItsMessage) {
  const Family* gemm = FindFamily("gemm");
  std::string error;
  int rc = gemm->Call(entry_, Tensors(8, 8, 13), {{"M", 8}, {"N", 8}, {"K", 13}},
                      reinterpret_cast<Stream>(uintptr_t{0x10}), &error);
  EXPECT_NE(rc, 0);
  EXPECT_NE(error.find("ValueError"), std::string::npos) << error;
  EXPECT_NE(error.find("K = 13 is refused"), std::string::npos) << error;
  // The error was taken: the next call is clean.
  EXPECT_EQ(gemm->Call(entry_, Tensors(8, 8, 16), {{"M", 8}, {"N", 8}, {"K", 16}},
                       reinterpret_cast<Stream>(uintptr_t{0x10}), &error),
            0)
      << error;
  EXPECT_EQ(error, "");
}

TEST_F(TvmFfiModule, TheNativeLoaderDoesNotFindIt) {
  int fd = ::open(dir_.File("channel2").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ChannelWriter out(fd);
  CandidateEntry native = LoadCandidateRun({{"shared_object", module_}}, out);
  ::close(fd);
  EXPECT_FALSE(native);
  EXPECT_NE(ReadFile(dir_.File("channel2")).find("no symbol `run`"), std::string::npos);
}

}  // namespace
}  // namespace ptxbench
