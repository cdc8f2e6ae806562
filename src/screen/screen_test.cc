#include "screen/screen.h"

#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/files.h"

namespace ptxbench {
namespace {

// Every finding as "line:library:what", so that a failure shows them all.
std::vector<std::string> Describe(const ScreenResult& r) {
  std::vector<std::string> out;
  for (const ScreenFinding& f : r.findings) {
    out.push_back(std::to_string(f.line) + ":" + f.library + ":" + f.what);
  }
  return out;
}

::testing::AssertionResult FindsOne(std::string_view source, int line, std::string_view library,
                                    std::string_view what = "") {
  const ScreenResult r = ScreenSource(source);
  if (r.findings.size() != 1) {
    auto e = ::testing::AssertionFailure() << r.findings.size() << " findings in:\n"
                                           << source << "\n";
    for (const std::string& d : Describe(r)) e << "  " << d << "\n";
    return e;
  }
  const ScreenFinding& f = r.findings[0];
  if (f.line != line || f.library != library || (!what.empty() && f.what != what)) {
    return ::testing::AssertionFailure() << "got " << Describe(r)[0] << ", want " << line << ":"
                                         << library << ":" << what << " in:\n"
                                         << source;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult Passes(std::string_view source) {
  const ScreenResult r = ScreenSource(source);
  if (r.passed()) return ::testing::AssertionSuccess();
  auto e = ::testing::AssertionFailure() << "unexpected findings in:\n" << source << "\n";
  for (const std::string& d : Describe(r)) e << "  " << d << "\n";
  return e;
}

// ---------------------------------------------------------------------------
// Forbidden includes.

struct Case {
  std::string source;
  std::string library;
  std::string what;  // empty: not checked
};

// Each case, as line `line` of a source after `before`, is one finding of its library.
void ExpectEachFindsOne(const std::vector<Case>& cases, const std::string& before = "",
                        int line = 1) {
  for (const Case& c : cases) {
    EXPECT_TRUE(FindsOne(before + c.source + "\n", line, c.library, c.what));
  }
}

TEST(ScreenIncludeTest, EachForbiddenIncludeForm) {
  const std::vector<Case> cases = {
      {"#include <cublas_v2.h>", "cuBLAS", "#include <cublas_v2.h>"},
      {"#include \"cublasLt.h\"", "cuBLASLt", "#include \"cublasLt.h\""},
      {"#  include<cublas_v2.h>", "cuBLAS", "#include <cublas_v2.h>"},
      {"\t#\tinclude\t<cudnn.h>", "cuDNN", "#include <cudnn.h>"},
      {"#include <cutlass/gemm/device/gemm.h>", "CUTLASS", ""},
      {"#include <cute/tensor.hpp>", "CuTe", ""},
      {"#include <flashinfer/attention/decode.cuh>", "FlashInfer", ""},
      {"#include \"flash_attn/flash_api.h\"", "FlashAttention", ""},
      {"#include \"flash.h\"", "FlashAttention", ""},
      {"#include <cufft.h>", "cuFFT", ""},
      {"#include <cufftXt.h>", "cuFFT", ""},
      {"#include <cusparse.h>", "cuSPARSE", ""},
      {"#include <cusparseLt.h>", "cuSPARSELt", ""},
      {"#include <cusolverDn.h>", "cuSOLVER", ""},
      {"#include <curand.h>", "cuRAND", ""},
      {"#include <curand_kernel.h>", "cuRAND", ""},
      {"#include <nccl.h>", "NCCL", ""},
      {"#include <nvshmem.h>", "NVSHMEM", ""},
      {"#include <nvshmemx.h>", "NVSHMEM", ""},
      {"#include <cutensor.h>", "cuTENSOR", ""},
      {"#include <nvblas.h>", "cuBLAS", ""},
      {"#include <npps.h>", "NPP", ""},
      {"#include <torch/extension.h>", "PyTorch", ""},
      {"#include <ATen/ATen.h>", "PyTorch", ""},
      {"#include <c10/cuda/CUDAStream.h>", "PyTorch", ""},
      {"#include <dlfcn.h>", "run-time loading", ""},
      // Other spellings of the directive.
      {"#include_next <cublas_v2.h>", "cuBLAS", "#include_next <cublas_v2.h>"},
      {"#import <cublas_v2.h>", "cuBLAS", "#import <cublas_v2.h>"},
      {"%:include <cublas_v2.h>", "cuBLAS", "#include <cublas_v2.h>"},
      {"# /* x */ include /* y */ <cublas_v2.h>", "cuBLAS", "#include <cublas_v2.h>"},
      {"  /* lead */ #include <cudnn.h> // tail", "cuDNN", "#include <cudnn.h>"},
      // Paths: any component counts, "//" in a header name is no comment.
      {"#include </usr/local/cuda/include/cublas_v2.h>", "cuBLAS", ""},
      {"#include </usr/local/cuda/include//cublas_v2.h>", "cuBLAS", ""},
      {"#include \"../third_party/cutlass/include/cutlass/cutlass.h\"", "CUTLASS", ""},
      {"#include <CUBLAS_V2.H>", "cuBLAS", ""},
  };
  ExpectEachFindsOne(cases);
}

TEST(ScreenIncludeTest, SplicedDirective) {
  EXPECT_TRUE(FindsOne("#inc\\\nlude <cublas_v2.h>\n", 1, "cuBLAS", "#include <cublas_v2.h>"));
  EXPECT_TRUE(FindsOne("#include <cublas\\\n_v2.h>\n", 1, "cuBLAS", "#include <cublas_v2.h>"));
}

TEST(ScreenIncludeTest, ComputedIncludeIsRejected) {
  // The macro's value is a string literal, which the screen cannot see into.
  EXPECT_TRUE(FindsOne("#define HDR \"cublas_v2.h\"\n#include HDR\n", 2, "computed #include",
                       "#include HDR"));
}

TEST(ScreenIncludeTest, ComputedIncludeMessageSaysWhy) {
  const ScreenResult r = ScreenSource("#define HDR <cuda.h>\n#include HDR\n");
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.message(),
            "line 2: #include HDR: the file a macro names cannot be judged before preprocessing");
  EXPECT_TRUE(
      FindsOne("#define X \"a.h\"\n#include_next X\n", 2, "computed #include", "#include_next X"));
  EXPECT_TRUE(FindsOne("#embed DATA\n", 1, "computed #include", "#embed DATA"));
}

// ---------------------------------------------------------------------------
// Includes that name a path: the compiler would read (and quote) any file.

TEST(ScreenPathTest, EachPathIncludeForm) {
  const std::vector<Case> cases = {
      {"#include \"/etc/passwd\"", "file path", "#include \"/etc/passwd\""},
      {"#include </etc/passwd>", "file path", "#include </etc/passwd>"},
      {"#include \"/dev/zero\"", "file path", "#include \"/dev/zero\""},
      {"#include </proc/self/environ>", "file path", ""},
      {"#include \"/var/lib/postgresql/16/main/base/1/1259\"", "file path", ""},
      {"#include \"//etc/passwd\"", "file path", ""},
      {"#include \"~/.pgpass\"", "file path", "#include \"~/.pgpass\""},
      {"#include \"~root/.bash_history\"", "file path", ""},
      {"#include \"../../../etc/passwd\"", "file path", ""},
      {"#include <cuda/../../../../etc/shadow>", "file path", ""},
      {"#include \"a/..\"", "file path", ""},
      {"#include \"..\\secret.h\"", "file path", ""},
      {"#include \"dev/zero\"", "file path", ""},
      {"#include < /etc/passwd >", "file path", ""},
      // Other spellings of the directive.
      {"#include_next \"/etc/passwd\"", "file path", "#include_next \"/etc/passwd\""},
      {"#import </etc/passwd>", "file path", "#import </etc/passwd>"},
      {"%:include \"/etc/passwd\"", "file path", "#include \"/etc/passwd\""},
      {"#embed \"/etc/passwd\"", "file path", "#embed \"/etc/passwd\""},
      {"  # /* c */ include \"/etc/passwd\" // tail", "file path", "#include \"/etc/passwd\""},
      // "//" in a header name is no comment.
      {"#include </tmp//fifo>", "file path", "#include </tmp//fifo>"},
  };
  ExpectEachFindsOne(cases, "int a;\n", 2);
}

TEST(ScreenPathTest, MessageNamesLineDirectiveAndReason) {
  const ScreenResult r = ScreenSource("#include <cuda.h>\n\n#include \"/etc/passwd\"\n");
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].reason, "includes must name a toolkit or system header, not a path");
  EXPECT_EQ(r.message(),
            "line 3: #include \"/etc/passwd\": includes must name a toolkit or system header, "
            "not a path");
  const nlohmann::json j = ToJson(r);
  EXPECT_EQ(j["findings"][0]["reason"], r.findings[0].reason);
  EXPECT_FALSE(j["passed"].get<bool>());
  // Library findings carry no reason and keep their message.
  EXPECT_FALSE(ToJson(ScreenSource("#include <cublas_v2.h>\n"))["findings"][0].contains("reason"));
}

TEST(ScreenPathTest, SplicedAndMultiplePathIncludes) {
  // After line splicing the directive names /etc/passwd; the finding is on its first line.
  EXPECT_TRUE(FindsOne("int a;\n#inc\\\nlude \"/etc/\\\npasswd\"\n", 2, "file path",
                       "#include \"/etc/passwd\""));
  const ScreenResult r =
      ScreenSource("#include \"/etc/passwd\"\n#include <cuda.h>\n#include \"/dev/zero\"\n");
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[1].line, 3);
  EXPECT_TRUE(r.message().ends_with("not a path (and 1 more)")) << r.message();
}

TEST(ScreenPathTest, LibraryHeaderByPathIsOneLibraryFinding) {
  // The library names the problem better than the path does; one finding per directive.
  EXPECT_TRUE(FindsOne("#include </usr/local/cuda/include/cublas_v2.h>\n", 1, "cuBLAS"));
}

TEST(ScreenPathTest, PathsInCommentsStringsAndDeadCode) {
  EXPECT_TRUE(Passes("// #include \"/etc/passwd\"\nconst char* p = \"#include </etc/passwd>\";\n"));
  EXPECT_TRUE(Passes("/*\n#include \"/dev/zero\"\n*/\n"));
  // The screen does not evaluate #if.
  EXPECT_TRUE(FindsOne("#if 0\n#include \"/etc/passwd\"\n#endif\n", 2, "file path"));
}

TEST(ScreenPathTest, HasIncludeWithAPathIsAProbe) {
  EXPECT_TRUE(FindsOne("#if __has_include(\"/etc/shadow\")\n#endif\n", 1, "file path",
                       "__has_include(\"/etc/shadow\")"));
  EXPECT_TRUE(FindsOne("int a;\n#if __has_include(</root//.ssh/id_rsa>)\n#endif\n", 2, "file path",
                       "__has_include(</root//.ssh/id_rsa>)"));
  EXPECT_TRUE(FindsOne("#if __has_include_next(<../x.h>)\n#endif\n", 1, "file path"));
  EXPECT_TRUE(FindsOne("#if __has_embed(\"/dev/zero\")\n#endif\n", 1, "file path"));
  EXPECT_TRUE(FindsOne("#define H <a.h>\n#if __has_include(H)\n#endif\n", 2, "computed #include",
                       "__has_include(H)"));
  // Ordinary feature tests pass.
  EXPECT_TRUE(
      Passes("#if defined(__has_include)\n#if __has_include(<cuda/barrier>)\n"
             "#include <cuda/barrier>\n#endif\n#endif\n#ifdef __has_include\n#endif\n"));
}

TEST(ScreenPathTest, LineDirectiveNamingAPathIsRejected) {
  // GCC quotes "source" lines from the file a #line names.
  EXPECT_TRUE(
      FindsOne("int a;\n#line 1 \"/etc/passwd\"\n", 2, "file path", "#line 1 \"/etc/passwd\""));
  EXPECT_TRUE(FindsOne("# 1 \"/etc/passwd\" 1\n", 1, "file path", "# 1 \"/etc/passwd\""));
  EXPECT_TRUE(FindsOne("#line 1 \"\\057etc\\057passwd\"\n", 1, "file path"));
  EXPECT_TRUE(FindsOne("#line 1 \"../x\"\n", 1, "file path"));
  EXPECT_TRUE(FindsOne("#define F \"/etc/passwd\"\n#line 1 F\n", 2, "computed #line", "#line 1 F"));
  EXPECT_TRUE(FindsOne("#line LINE\n", 1, "computed #line"));
  EXPECT_TRUE(Passes("#line 10\n#line 20 \"kernel.cu\"\n# 30 \"candidate.cu\" 2\n"));
}

TEST(ScreenPathTest, PragmaDependencyWithAPathIsRejected) {
  // GCC opens the file to compare dates: a FIFO there blocks the compiler.
  EXPECT_TRUE(FindsOne("#pragma GCC dependency \"/tmp/fifo\"\n", 1, "file path",
                       "#pragma GCC dependency \"/tmp/fifo\""));
  EXPECT_TRUE(FindsOne("#pragma GCC dependency <../x.h> extra\n", 1, "file path",
                       "#pragma GCC dependency <../x.h>"));
  EXPECT_TRUE(FindsOne("_Pragma(\"GCC dependency \\\"/dev/zero\\\"\")\n", 1, "file path"));
  EXPECT_TRUE(FindsOne("#pragma GCC dependency FILE\n", 1, "computed #include"));
  EXPECT_TRUE(
      Passes("#pragma GCC dependency \"cuda.h\"\n#pragma GCC diagnostic push\n"
             "#pragma unroll\n"));
}

TEST(ScreenPathTest, AssemblerFileDirectivesAreRejected) {
  EXPECT_TRUE(
      FindsOne("int a;\nasm(\".section .rodata\\n\"\n    \".incbin \\\"/etc/passwd\\\"\\n\");\n", 3,
               "file path", ".incbin in asm(...)"));
  EXPECT_TRUE(
      FindsOne("__asm__(\".INCLUDE \\\"x.s\\\"\");\n", 1, "file path", ".include in __asm__(...)"));
  EXPECT_TRUE(FindsOne("asm(\"nop; .inc\" \"bin \\\"f\\\"\");\n", 1, "file path"));
  const ScreenResult r = ScreenSource("asm(\".incbin \\\"/etc/passwd\\\"\");\n");
  ASSERT_FALSE(r.passed());
  EXPECT_EQ(r.message(),
            "line 1: .incbin in asm(...): assembler directives that read files (.incbin, "
            ".include) are not allowed");
  // PTX in device asm, and words that only contain the directive's letters, pass.
  EXPECT_TRUE(
      Passes("asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(x));\n"
             "asm(\"// .includes nothing\\n x.incbin\");\n"));
}

// Bytes the candidate places in .nv_fatbin (a section attribute, or a section directive in
// host asm) break the disassembler, or forge a second fatbin whose kernels (a vendor's, loaded
// with cuModuleLoadData) would count as the candidate's own. Controls fatbin_junk and
// fatbin_attribute.
TEST(ScreenPathTest, PlacingBytesInASectionIsRejected) {
  EXPECT_TRUE(FindsOne("asm(\".section .nv_fatbin,\\\"a\\\"\\n.quad 1\\n.previous\");\n", 1,
                       "object section", ".section in asm(...)"));
  EXPECT_TRUE(
      FindsOne("asm(\"\\t.pushsection .nv_fatbin\\n.popsection\");\n", 1, "object section"));
  EXPECT_TRUE(
      FindsOne("__attribute__((used, section(\".nv_fatbin\"))) static const long j[4] = {1};\n", 1,
               "object section", "section(...) attribute"));
  EXPECT_TRUE(
      FindsOne("[[gnu::section(\".nv_fatbin\")]] const long j = 1;\n", 1, "object section"));
  EXPECT_TRUE(FindsOne("__attribute__((__section__(\".nv_fatbin\"))) const long j = 1;\n", 1,
                       "object section"));
  // A function or a member that happens to be called section, and words around the directive.
  EXPECT_TRUE(
      Passes("int section(int x) { return x; }\nint y = section(3);\n"
             "struct S { int section; } s; int z = s.section;\n"
             "asm(\"// crosssection .sections\");\n"));
}

// Issue 35: routes by which a file directive reaches the assembler without being written in
// an asm(...) literal. Each is rejected; the message says why.
TEST(ScreenPathTest, AssemblerDirectiveThroughAMacroIsRejected) {
  const std::string source =
      "#define S \".include \\\"/opt/canary.s\\\"\"\n"
      "__global__ void k() {}\n"
      "asm(S);\n";
  const ScreenResult r = ScreenSource(source);
  ASSERT_FALSE(r.passed());
  EXPECT_EQ(Describe(r), (std::vector<std::string>{"1:file path:.include in a string literal",
                                                   "3:computed asm:asm(S ...)"}));
  // A .incbin in any literal, a raw one too.
  EXPECT_TRUE(FindsOne("const char* s = \"\\t.incbin \\\"/usr/local/x\\\"\";\n", 1, "file path",
                       ".incbin in a string literal"));
  EXPECT_TRUE(FindsOne("const char* s = R\"(x:.INCLUDE \"/opt/x\")\";\n", 1, "file path"));
  // Split into two macros the literals say nothing; asm(A B) is then the finding.
  EXPECT_TRUE(FindsOne("#define A \".inc\"\n#define B \"lude \\\"f\\\"\"\nasm volatile(A B);\n", 3,
                       "computed asm", "asm(A ...)"));
  // `asm` renamed by a macro.
  EXPECT_TRUE(
      FindsOne("#define ASM __asm__ volatile\n", 1, "computed asm", "__asm__ without its text"));
}

TEST(ScreenPathTest, AssemblerDirectiveThroughStringificationIsRejected) {
  const ScreenResult r = ScreenSource(
      "#define STR(x) #x\n"
      "asm(STR(.include \"/opt/canary.s\"));\n");
  ASSERT_FALSE(r.passed());
  EXPECT_EQ(Describe(r), (std::vector<std::string>{"2:computed asm:asm(STR ...)",
                                                   "2:file path:.include outside a literal"}));
  EXPECT_NE(r.message().find("must be written out as string literals"), std::string::npos);
  // asm(#x) inside the macro itself.
  EXPECT_TRUE(FindsOne("#define A(x) asm(#x)\n", 1, "computed asm", "asm(# ...)"));
  // Member access and numbers are no directive.
  EXPECT_TRUE(Passes("int f(S s) { return s.include + t().incbin + a[0].irp + 1.e3; }\n"));
}

TEST(ScreenPathTest, AssemblerMacrosThatSpellDirectivesAreRejected) {
  EXPECT_TRUE(FindsOne("asm(\".irp d,clude\\n.in\\\\d \\\"/opt/x\\\"\\n.endr\");\n", 1, "file path",
                       ".irp in asm(...)"));
  EXPECT_TRUE(FindsOne("asm(\".irpc c,x\\n.endr\");\n", 1, "file path", ".irpc in asm(...)"));
  EXPECT_TRUE(FindsOne("asm(\".macro m a\\n.in\\\\a \\\"f\\\"\\n.endm\\nm clude\");\n", 1,
                       "file path", ".macro in asm(...)"));
  const ScreenResult r = ScreenSource("asm(\".irp d,clude\\n.endr\");\n");
  ASSERT_FALSE(r.passed());
  EXPECT_EQ(r.message(),
            "line 1: .irp in asm(...): assembler macros (.irp, .irpc, .macro) can spell a file "
            "directive and are not allowed");
  // Ordinary inline PTX, with operands and "::", still passes.
  EXPECT_TRUE(
      Passes("asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(x));\n"
             "asm volatile(\"fence.proxy.async;\" ::: \"memory\");\n"
             "asm volatile(u8\"bar.sync 0;\"\n \"\" :: \"r\"(a[i]));\n"
             "asm(\"// .irpx\");\n"));
}

TEST(ScreenPathTest, OrdinaryIncludesPass) {
  EXPECT_TRUE(
      Passes("#include <cuda.h>\n#include \"cuda_bf16.h\"\n#include <cuda/barrier>\n"
             "#include <cooperative_groups.h>\n#include <sys/types.h>\n"
             "#include <cuda/std/cstdint>\n#include \"./local.h\"\n"
             "#include <device_launch_parameters.h>\n#include <cuda/ptx>\n"));
}

TEST(ScreenIncludeTest, DeadCodeStillCounts) {
  // The screen does not evaluate #if; a candidate should carry no library code.
  EXPECT_TRUE(FindsOne("#if 0\n#include <cublas_v2.h>\n#endif\n", 2, "cuBLAS"));
}

TEST(ScreenIncludeTest, AllowedHeadersPass) {
  EXPECT_TRUE(Passes(R"(#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_runtime_api.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cudaTypedefs.h>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda/ptx>
#include <cuda/std/cstdint>
#include <cub/cub.cuh>
#include <cub/block/block_reduce.cuh>
#include <thrust/device_vector.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <mma.h>
#include <cuda_pipeline.h>
#include <cuda_awbarrier.h>
#include <library_types.h>
#include <cuComplex.h>
#include <cstdio>
#include <vector>
#include "stdint.h"
)"));
}

// ---------------------------------------------------------------------------
// Forbidden identifiers.

TEST(ScreenIdentifierTest, EachForbiddenCall) {
  const std::vector<Case> cases = {
      {"cublasGemmEx(h, a, b);", "cuBLAS", "call of cublasGemmEx"},
      {"cublasCreate(&h);", "cuBLAS", "call of cublasCreate"},
      {"cublasHandle_t h;", "cuBLAS", "use of cublasHandle_t"},
      {"int op = CUBLAS_OP_N;", "cuBLAS", "use of CUBLAS_OP_N"},
      {"cublasLtMatmul(lt, d, a, b);", "cuBLASLt", "call of cublasLtMatmul"},
      {"auto a = CUBLASLT_MATMUL_DESC_TRANSA;", "cuBLASLt", ""},
      {"cudnnCreate(&h);", "cuDNN", "call of cudnnCreate"},
      {"cufftExecC2C(p, a, b, dir);", "cuFFT", ""},
      {"int dir = CUFFT_FORWARD;", "cuFFT", ""},
      {"cusparseSpMM(h);", "cuSPARSE", ""},
      {"cusparseLtMatmul(h);", "cuSPARSELt", ""},
      {"cusolverDnCreate(&h);", "cuSOLVER", ""},
      {"curand_init(1, 0, 0, &state);", "cuRAND", "call of curand_init"},
      {"curandCreateGenerator(&g, kind);", "cuRAND", ""},
      {"ncclAllReduce(a, b, n);", "NCCL", ""},
      {"void* p = nvshmem_malloc(64);", "NVSHMEM", ""},
      {"cutensorCreate(&h);", "cuTENSOR", ""},
      {"nppsSum_32f(a, n, s, buf);", "NPP", ""},
      {"cutlass::gemm::device::Gemm<float> g;", "CUTLASS", "use of cutlass::"},
      {"CUTLASS_DEVICE void f();", "CUTLASS", ""},
      {"auto t = cute::make_tensor(p, l);", "CuTe", "use of cute::"},
      {"::cute::Tensor x;", "CuTe", "use of cute::"},
      {"int f() { return ::cute::size(x); }", "CuTe", "use of cute::"},
      {"int f() { return::cute::size(x); }", "CuTe", "use of cute::"},
      {"using namespace cute;", "CuTe", "namespace cute"},
      {"namespace cu = cutlass;", "CUTLASS", "namespace alias of cutlass"},
      {"flashinfer::BatchDecode(p);", "FlashInfer", ""},
      {"at::Tensor t;", "PyTorch", "use of at::"},
      {"auto t = torch::empty({1});", "PyTorch", ""},
      {"c10::Half h;", "PyTorch", ""},
      {"void* h = dlopen(\"libcublas.so\", RTLD_NOW);", "run-time loading", "call of dlopen"},
      {"auto f = dlsym(h, \"cublasCreate_v2\");", "run-time loading", "call of dlsym"},
      {"auto f = dlvsym(h, \"x\", \"v\");", "run-time loading", "call of dlvsym"},
      {"auto h = dlmopen(0, \"x\", 1);", "run-time loading", "call of dlmopen"},
      {"auto h = __libc_dlopen_mode(\"x\", 1);", "run-time loading", ""},
      {"auto p = &dlopen;", "run-time loading", "use of dlopen"},
      {"auto h = :: dlopen (\"x\", 1);", "run-time loading", "call of dlopen"},
  };
  ExpectEachFindsOne(cases);
}

TEST(ScreenIdentifierTest, LinkerAndSymbolTricks) {
  const std::vector<Case> cases = {
      {"#pragma comment(lib, \"cublas\")", "linker directive", "#pragma comment"},
      {"  #  pragma   comment(linker, \"-lcublas\")", "linker directive", "#pragma comment"},
      {"_Pragma(\"comment(lib, \\\"cublas\\\")\")", "linker directive",
       "#pragma comment in _Pragma(...)"},
      // A declaration bound to dlopen under another name.
      {"extern \"C\" void* my_open(const char*, int) __asm__(\"dlopen\");", "run-time loading",
       "dlopen named in __asm__(...)"},
      {"static void* f(const char*, int) __attribute__((weakref(\"dlopen\")));", "run-time loading",
       "dlopen named in weakref(...)"},
      {"[[gnu::weakref(\"dlsym\")]] static void* g(void*, const char*);", "run-time loading", ""},
      // Adjacent literals join and escapes decode before the look.
      {"asm volatile(\"call dl\" \"open\");", "run-time loading", "dlopen named in asm(...)"},
      {"asm(\"call \\x64lopen\");", "run-time loading", "dlopen named in asm(...)"},
      {"__asm__(R\"(call cublasCreate_v2)\");", "cuBLAS", ""},
      {"#pragma redefine_extname my_open dlopen", "run-time loading", "use of dlopen"},
      {"_Pragma(\"redefine_extname my_open dlopen\")", "run-time loading",
       "use of dlopen in _Pragma(...)"},
      // An identifier spliced across lines is one identifier.
      {"cub\\\nlasCreate(&h);", "cuBLAS", "call of cublasCreate"},
  };
  ExpectEachFindsOne(cases);
}

TEST(ScreenIdentifierTest, PrefixDecisions) {
  // Only identifiers that start with a library's prefix count.
  EXPECT_TRUE(Passes("int mycublas = 0;\nint my_cublas_handle_count = 1;\n"));
  EXPECT_TRUE(Passes("int cuBLAS_like = 0; int xcudnn = 1; int a$cublasCreate = 2;\n"));
  EXPECT_TRUE(
      FindsOne("int cublas_free_variant = 0;\n", 1, "cuBLAS", "use of cublas_free_variant"));
  // Namespaces count only as top-level qualifiers.
  EXPECT_TRUE(Passes("int cute = 3; cute += 1; int at = v.at(0); auto y = w.cute;\n"));
  EXPECT_TRUE(Passes("auto x = mine::cute::f(); auto y = p->at::x;\n"));
  // Numbers are no identifiers.
  EXPECT_TRUE(Passes("float f = 1e5f; int h = 0x1cu;\n"));
}

TEST(ScreenIdentifierTest, AllowedCudaCodePasses) {
  EXPECT_TRUE(Passes(R"cu(#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__global__ void k(__nv_bfloat16* out, const CUtensorMap* map, float* d0, float* d1) {
  unsigned long long da = 0, db = 0;
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1}, %2, %3, 1, 1, 1;\n"
      : "+f"(*d0), "+f"(*d1)
      : "l"(da), "l"(db));
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];" :: "r"(0), "l"(map), "r"(0), "r"(0), "r"(0)
               : "memory");
  cg::thread_block block = cg::this_thread_block();
  block.sync();
}

int main() {
  CUtensorMap map;
  PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  cudaDriverEntryPointQueryResult q;
  cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&encode),
                          cudaEnableDefault, &q);
  CUresult r = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, nullptr,
                                      nullptr, nullptr, nullptr, nullptr,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  void* fn = nullptr;
  cuGetProcAddress("cuTensorMapEncodeTiled", &fn, 12000, 0, nullptr);
  cub::BlockReduce<float, 128>* br = nullptr;
  cuda::std::size_t n = 1'000'000;
  return r == CUDA_SUCCESS && br == nullptr && n > 0 ? 0 : 1;
}
)cu"));
}

TEST(ScreenIdentifierTest, RepeatsOnALineAreOneFinding) {
  EXPECT_EQ(ScreenSource("cublasCreate(&a); cublasCreate(&b);\n").findings.size(), 1u);
  EXPECT_EQ(ScreenSource("cublasCreate(&a); cublasDestroy(a);\n").findings.size(), 2u);
  EXPECT_EQ(ScreenSource("cublasCreate(&a);\ncublasCreate(&b);\n").findings.size(), 2u);
}

// ---------------------------------------------------------------------------
// Comments and literals hide words, but not code around them.

TEST(ScreenLexTest, CommentsAndLiteralsAreNoFindings) {
  EXPECT_TRUE(Passes("// cublasGemmEx(h) and #include <cublas_v2.h>\nint x;\n"));
  EXPECT_TRUE(Passes("/* cublas\n   cudnnCreate(&h);\n#include <cudnn.h>\n */ int y;\n"));
  EXPECT_TRUE(Passes("const char* s = \"cublasGemmEx\";\n"));
  EXPECT_TRUE(Passes("const char* s = \"a \\\" cublasGemmEx \\\" b\";\n"));
  EXPECT_TRUE(Passes("auto s = R\"x(cublasCreate(&h); )\" dlopen )x\";\n"));
  EXPECT_TRUE(Passes("auto s = u8R\"(\n#include <cublas_v2.h>\ncudnnCreate\n)\";\n"));
  EXPECT_TRUE(Passes("char c = '\\''; const char* s = \"cublas\"; wchar_t w = L'x';\n"));
  EXPECT_TRUE(Passes("printf(\"%s\", u8\"cublasCreate\" L\"dlopen\");\n"));
  // A // comment goes on past a splice, even one with trailing blanks.
  EXPECT_TRUE(Passes("// comment \\\ncublasCreate(&h);\nint x;\n"));
  EXPECT_TRUE(Passes("// comment \\  \ncublasCreate(&h);\nint x;\n"));
  // #error text is a message for people.
  EXPECT_TRUE(Passes("#ifndef __CUDACC__\n#error cublas is not used here\n#endif\n"));
  // Unterminated constructs end the screen without a crash.
  EXPECT_TRUE(Passes("int x; /* cublasCreate(&h);"));
  EXPECT_TRUE(Passes("auto s = R\"x(cublasCreate(&h);"));
}

TEST(ScreenLexTest, CodeAroundTrickyLiteralsIsStillScreened) {
  const std::vector<std::string> sources = {
      "const char* s = \"// not a comment\"; cublasCreate(&h);",
      "const char* s = \"/*\"; cublasCreate(&h); const char* t = \"*/\";",
      "char a = '/', b = '*'; cublasCreate(&h); char c = '*', d = '/';",
      "char q = '\"'; cublasCreate(&h); // \"",
      "const char* s = \"a\\\"b // c\"; cublasCreate(&h);",
      "const char* s = \"a\\\\\"; cublasCreate(&h); // \"",
      "auto s = R\"abc(text )\" still )abc\"; cublasCreate(&h);",
      "auto s = R\"(/*)\"; cublasCreate(&h); auto t = R\"(*/)\";",
      "/* \" */ cublasCreate(&h); // \"",
      "int n = 1'000'000; cublasCreate(&h); int m = 2'0;",
      "int n = 1'000; cublasCreate(&h); // '",
      "float f = 0x1'0p-1'0f; cublasCreate(&h); // '",
      "auto x = fooR\"(\"; cublasCreate(&h); // )\"",
  };
  for (const std::string& s : sources) {
    EXPECT_TRUE(FindsOne(s + "\n", 1, "cuBLAS", "call of cublasCreate"));
  }
}

TEST(ScreenLexTest, UnterminatedStringEndsAtNewline) {
  EXPECT_TRUE(FindsOne("const char* s = \"abc\ncublasCreate(&h);\n", 2, "cuBLAS"));
}

TEST(ScreenLexTest, RawStringTerminatorIsNotSpliced) {
  // In a raw string, a backslash-newline is kept, so `)x\<newline>"` does not
  // end it; the string runs on to the real `)x"`.
  EXPECT_TRUE(Passes("auto s = R\"x( )x\\\n\" cublasCreate(&h); )x\";\n"));
}

// ---------------------------------------------------------------------------
// Lines.

TEST(ScreenLineTest, FindingNamesTheRightLine) {
  const std::string source =
      "#include <cuda_runtime.h>\n"        // 1
      "/* a comment\n"                     // 2
      "   over lines */\n"                 // 3
      "const char* s = R\"(raw\n"          // 4
      "string)\";\n"                       // 5
      "#define CALL(h) \\\n"               // 6
      "  cublasCreate(&h)\n"               // 7
      "int main() { return 0; }\n"         // 8
      "// cudnnCreate\n"                   // 9
      "\n"                                 // 10
      "    void* p = dlopen(\"x\", 1);\n"  // 11
      "#include <cudnn.h>";                // 12, no final newline
  const ScreenResult r = ScreenSource(source);
  ASSERT_EQ(r.findings.size(), 3u) << testing::PrintToString(Describe(r));
  EXPECT_EQ(r.findings[0].line, 7);
  EXPECT_EQ(r.findings[0].library, "cuBLAS");
  EXPECT_EQ(r.findings[0].what, "call of cublasCreate");
  EXPECT_EQ(r.findings[0].excerpt, "cublasCreate(&h)");
  EXPECT_EQ(r.findings[1].line, 11);
  EXPECT_EQ(r.findings[1].library, "run-time loading");
  EXPECT_EQ(r.findings[1].excerpt, "void* p = dlopen(\"x\", 1);");
  EXPECT_EQ(r.findings[2].line, 12);
  EXPECT_EQ(r.findings[2].what, "#include <cudnn.h>");
}

TEST(ScreenLineTest, CrlfSourcesKeepLines) {
  EXPECT_TRUE(FindsOne("int a;\r\n// x\r\n\r\ncublasCreate(&h);\r\n", 4, "cuBLAS"));
  EXPECT_TRUE(FindsOne("#define A \\\r\n  cudnnCreate(x)\r\n", 2, "cuDNN"));
}

TEST(ScreenLineTest, AsmStringFindingsNameTheirLine) {
  EXPECT_TRUE(FindsOne("int x;\nasm(R\"(\n  nop\n  call dlopen\n)\");\n", 4, "run-time loading"));
  EXPECT_TRUE(FindsOne("int x;\nasm(\"nop\"\n    \"call dlsym\");\n", 3, "run-time loading"));
}

// ---------------------------------------------------------------------------
// Results.

TEST(ScreenResultTest, MessageNamesTheFirstFinding) {
  const ScreenResult one = ScreenSource("\n\n#include <cublas_v2.h>\n");
  EXPECT_EQ(one.message(),
            "line 3: #include <cublas_v2.h> (cuBLAS is forbidden): `#include <cublas_v2.h>`");
  const ScreenResult three =
      ScreenSource("#include <cublas_v2.h>\n  cublasCreate(&h);   \ncudnnCreate(&d);\n");
  EXPECT_EQ(three.message(),
            "line 1: #include <cublas_v2.h> (cuBLAS is forbidden): `#include <cublas_v2.h>` "
            "(and 2 more)");
  EXPECT_EQ(three.findings[1].excerpt, "cublasCreate(&h);");
  EXPECT_FALSE(three.passed());
  const ScreenResult none = ScreenSource("int main() {}\n");
  EXPECT_TRUE(none.passed());
  EXPECT_EQ(none.message(), "");
}

TEST(ScreenResultTest, LongLinesAreCut) {
  const std::string line = "cublasCreate(&h); int " + std::string(300, 'x') + ";";
  const ScreenResult r = ScreenSource(line);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_LE(r.findings[0].excerpt.size(), 120u);
  EXPECT_TRUE(r.findings[0].excerpt.starts_with("cublasCreate(&h); int xxx"));
  EXPECT_TRUE(r.findings[0].excerpt.ends_with("..."));
}

TEST(ScreenResultTest, JsonIsValidEvenForBadBytes) {
  const ScreenResult r = ScreenSource("cublasCreate(&h); // \xff\xfe bad \xc3\n");
  const nlohmann::json j = ToJson(r);
  EXPECT_EQ(j["passed"], false);
  ASSERT_EQ(j["findings"].size(), 1u);
  EXPECT_EQ(j["findings"][0]["line"], 1);
  EXPECT_EQ(j["findings"][0]["library"], "cuBLAS");
  EXPECT_EQ(j["findings"][0]["what"], "call of cublasCreate");
  EXPECT_EQ(j["findings"][0]["excerpt"], "cublasCreate(&h); // ?? bad ?");
  EXPECT_NO_THROW((void)j.dump());
  EXPECT_EQ(ToJson(ScreenSource("int x;")).dump(), R"({"findings":[],"passed":true})");
}

// ---------------------------------------------------------------------------
// The rule table.

TEST(ScreenRuleTest, EveryRuleFires) {
  for (const ScreenRule& rule : ScreenRules()) {
    const std::string p(rule.pattern);
    std::string source;
    switch (rule.kind) {
      case ScreenRuleKind::kHeaderPrefix:
        source = "#include <" + p + "_x.h>\n";
        break;
      case ScreenRuleKind::kHeaderExact:
        source = "#include <" + p + ">\n";
        break;
      case ScreenRuleKind::kIdentifierPrefix:
        source = "int v = " + p + "Foo(1);\n";
        break;
      case ScreenRuleKind::kIdentifier:
        source = "auto v = " + p + "(1);\n";
        break;
      case ScreenRuleKind::kNamespace:
        source = p + "::X y;\n";
        break;
      case ScreenRuleKind::kPragma:
        source = "#pragma " + p + "(lib, \"x\")\n";
        break;
    }
    EXPECT_TRUE(FindsOne("int a;\n" + source, 2, rule.library)) << "rule " << p;
  }
}

TEST(ScreenRuleTest, HeaderPatternsAreLowerCase) {
  // Header components are lowered before the comparison.
  for (const ScreenRule& rule : ScreenRules()) {
    if (rule.kind != ScreenRuleKind::kHeaderPrefix && rule.kind != ScreenRuleKind::kHeaderExact) {
      continue;
    }
    for (char c : rule.pattern) EXPECT_FALSE(c >= 'A' && c <= 'Z') << rule.pattern;
  }
}

// ---------------------------------------------------------------------------
// StripCommentsAndStrings.

TEST(StripTest, BlanksCommentsAndLiteralContents) {
  EXPECT_EQ(StripCommentsAndStrings("int a; // hi\nint b; /* x\ny */ int c;"),
            "int a;      \nint b;     \n     int c;");
  EXPECT_EQ(StripCommentsAndStrings("s = \"abc\"; c = '\\'';"), "s = \"   \"; c = '  ';");
  EXPECT_EQ(StripCommentsAndStrings("R\"x(a\nb)x\";"), "R\"   \n   \";");
  EXPECT_EQ(StripCommentsAndStrings("u8\"cublas\" L'x'"), "u8\"      \" L' '");
}

TEST(StripTest, KeepsHeaderNamesAndSplicesInCode) {
  EXPECT_EQ(StripCommentsAndStrings("#include \"cublas_v2.h\" // c\n"),
            "#include \"cublas_v2.h\"     \n");
  EXPECT_EQ(StripCommentsAndStrings("#include <a//b.h>\n"), "#include <a//b.h>\n");
  EXPECT_EQ(StripCommentsAndStrings("#define A \\\n  1\n"), "#define A \\\n  1\n");
  EXPECT_EQ(StripCommentsAndStrings("// a \\\n b\nc"), "      \n  \nc");
}

TEST(StripTest, KeepsLengthAndNewlines) {
  const std::string source = R"src(/* a
 b */ "s\"" R"d(
)"
)d" 'c' // e \
 f
g "x\
y" /* open)src";
  const std::string out = StripCommentsAndStrings(source);
  ASSERT_EQ(out.size(), source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    EXPECT_EQ(out[i] == '\n', source[i] == '\n') << "at " << i;
  }
  EXPECT_EQ(out.find_first_of("abdefsxy"), std::string::npos) << out;
  EXPECT_NE(out.find('g'), std::string::npos) << out;
}

// ---------------------------------------------------------------------------
// Upstream PTXBench's candidates (the tvm-ffi ABI): their headers pass, the library rules
// stand, and the runtime's own ways to load a library are refused.

std::string UpstreamControl(const std::string& name) {
  return ReadFile(std::string(PTXBENCH_SOURCE_DIR) + "/controls/upstream/" + name);
}

TEST(ScreenUpstreamTest, UpstreamControlsPass) {
  EXPECT_TRUE(Passes(UpstreamControl("gemm_tvm_ffi.cu")));
  EXPECT_TRUE(Passes(UpstreamControl("mha_with_lse_tvm_ffi.cu")));
  EXPECT_TRUE(
      Passes("#include <tvm/ffi/tvm_ffi.h>\n"
             "#include <tvm/ffi/extra/c_env_api.h>\n"
             "#include <tvm/ffi/container/tensor.h>\n"
             "#include <tvm/ffi/function.h>\n"
             "#include <tvm/ffi/error.h>\n"
             "#include <dlpack/dlpack.h>\n"));
}

TEST(ScreenUpstreamTest, VendorLibrariesAreStillForbidden) {
  const std::string upstream = "#include <tvm/ffi/tvm_ffi.h>\n";  // line 1
  EXPECT_TRUE(FindsOne(upstream + "#include <cublas_v2.h>\n", 2, "cuBLAS"));
  EXPECT_TRUE(FindsOne(upstream + "void run(tvm::ffi::TensorView A) { cublasLtMatmul(h); }\n", 2,
                       "cuBLASLt"));
  EXPECT_TRUE(FindsOne(upstream + "#include <cutlass/gemm/device/gemm.h>\n", 2, "CUTLASS"));
}

TEST(ScreenUpstreamTest, TheRuntimesLibraryLoadingIsRefused) {
  const std::string upstream = "#include <tvm/ffi/extra/module.h>\n";  // line 1
  EXPECT_TRUE(FindsOne(upstream + "auto m = tvm::ffi::Module::LoadFromFile(path);\n", 2,
                       "run-time loading"));
  EXPECT_TRUE(FindsOne(upstream + "auto f = tvm::ffi::Function::GetGlobal(name);\n", 2,
                       "run-time loading"));
  EXPECT_TRUE(FindsOne(upstream + "auto f = tvm::ffi::Function::GetGlobalRequired(name);\n", 2,
                       "run-time loading"));
  EXPECT_TRUE(
      FindsOne(upstream + "TVMFFIFunctionGetGlobal(&name, &out);\n", 2, "run-time loading"));
}

}  // namespace
}  // namespace ptxbench
