// Extraction of the kernel from a model's reply: which fenced block counts, and what the
// model is told when none does.
#include "agent/extract.h"

#include <gtest/gtest.h>

namespace ptxbench {
namespace {

const char* kRun =
    "#include <cuda_bf16.h>\n"
    "extern \"C\" int run(const void* A, void* C, int M, cudaStream_t stream) {\n"
    "  return 0;\n"
    "}\n";

std::string Fenced(const std::string& tag, const std::string& body,
                   const std::string& fence = "```") {
  return fence + tag + "\n" + body + fence + "\n";
}

TEST(Extract, TakesTheCudaBlockWithoutItsFences) {
  Extraction ex = ExtractKernel("Here is my kernel.\n\n" + Fenced("cuda", kRun) + "\nDone.\n");
  ASSERT_TRUE(ex.found) << ex.message;
  EXPECT_EQ(ex.code, kRun);
  EXPECT_EQ(ex.tag, "cuda");
  EXPECT_FALSE(ex.unterminated);
  EXPECT_EQ(ex.blocks, 1);
  EXPECT_EQ(ex.candidates, 1);
  EXPECT_TRUE(ex.message.empty());
}

TEST(Extract, TheLastBlockDefiningRunWins) {
  std::string first = std::string(kRun) + "// first\n";
  std::string second = std::string(kRun) + "// second\n";
  Extraction ex = ExtractKernel(Fenced("cuda", first) + "Better:\n" + Fenced("cuda", second));
  ASSERT_TRUE(ex.found);
  EXPECT_NE(ex.code.find("// second"), std::string::npos);
  EXPECT_EQ(ex.code.find("// first"), std::string::npos);
  EXPECT_EQ(ex.blocks, 2);
  EXPECT_EQ(ex.candidates, 2);
}

TEST(Extract, ALaterBlockWithoutRunDoesNotDisplaceTheKernel) {
  // Two blocks, one with run: the one with run, even though it comes first.
  std::string helper = "__device__ float twice(float x) { return 2 * x; }\n";
  Extraction ex = ExtractKernel(Fenced("cuda", kRun) + "And a helper:\n" + Fenced("cuda", helper));
  ASSERT_TRUE(ex.found);
  EXPECT_EQ(ex.code, kRun);
  EXPECT_EQ(ex.blocks, 2);
  EXPECT_EQ(ex.candidates, 1);
}

// Upstream PTXBench's entry point: a TVM-FFI export of run, no extern "C" (judged as it is).
TEST(Extract, AnUpstreamTvmFfiKernelCounts) {
  const std::string tvm =
      "#include <tvm/ffi/tvm_ffi.h>\n"
      "void gemm(tvm::ffi::TensorView A, tvm::ffi::TensorView B, tvm::ffi::TensorView C) {}\n"
      "TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, gemm);\n";
  Extraction ex = ExtractKernel("Upstream style:\n" + Fenced("cuda", tvm));
  ASSERT_TRUE(ex.found) << ex.message;
  EXPECT_EQ(ex.code, tvm);
  // The export only in a comment is no entry point.
  Extraction commented = ExtractKernel(
      Fenced("cuda", "// TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, gemm);\nvoid gemm() {}\n"));
  EXPECT_FALSE(commented.found);
}

TEST(Extract, AcceptsTheCodeTagsCaseInsensitivelyAndUntagged) {
  for (const char* tag : {"cuda", "CUDA", "Cuda", "cu", "cpp", "C++", "c++", ""}) {
    Extraction ex = ExtractKernel(Fenced(tag, kRun));
    EXPECT_TRUE(ex.found) << "tag '" << tag << "'";
    std::string lower = tag;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(ex.tag, lower);
  }
  // The tag is the info string's first word.
  Extraction ex = ExtractKernel(Fenced("cuda  title=\"kernel.cu\"", kRun));
  EXPECT_TRUE(ex.found);
  EXPECT_EQ(ex.tag, "cuda");
}

TEST(Extract, OtherTagsNeverCount) {
  for (const char* tag : {"python", "text", "ptx", "bash", "c", "json", "cudax"}) {
    Extraction ex = ExtractKernel(Fenced(tag, kRun));
    EXPECT_FALSE(ex.found) << tag;
    EXPECT_EQ(ex.blocks, 1);
    EXPECT_EQ(ex.candidates, 0);
    EXPECT_NE(ex.message.find("defines run, but only blocks tagged"), std::string::npos)
        << ex.message;
  }
  // A python block after the kernel is ignored: the kernel still wins.
  Extraction ex = ExtractKernel(Fenced("cuda", kRun) + Fenced("python", "def run(x):\n  pass\n"));
  ASSERT_TRUE(ex.found);
  EXPECT_EQ(ex.tag, "cuda");
  EXPECT_EQ(ex.code, kRun);
  EXPECT_EQ(ex.blocks, 2);
}

TEST(Extract, AnUnterminatedFinalBlockCounts) {
  std::string cut = "```cuda\n" + std::string(kRun) + "// the reply was cut here";
  Extraction ex = ExtractKernel("Kernel:\n" + cut);
  ASSERT_TRUE(ex.found) << ex.message;
  EXPECT_TRUE(ex.unterminated);
  EXPECT_NE(ex.code.find("the reply was cut here"), std::string::npos);
  // Cut inside the body, even inside the parameter list: still the start of a definition.
  ex = ExtractKernel("```cuda\nextern \"C\" int run(const void* A, void* C,");
  EXPECT_TRUE(ex.found);
  EXPECT_TRUE(ex.unterminated);
  // An earlier complete block and a later unterminated one: the later wins.
  ex =
      ExtractKernel(Fenced("cuda", std::string(kRun) + "// v1\n") + "```cuda\n" + kRun + "// v2\n");
  ASSERT_TRUE(ex.found);
  EXPECT_TRUE(ex.unterminated);
  EXPECT_NE(ex.code.find("// v2"), std::string::npos);
}

TEST(Extract, HandlesCrlfLineEnds) {
  std::string reply =
      "Here:\r\n```cuda\r\n#include <cuda_bf16.h>\r\nextern \"C\" int run(int M) "
      "{\r\n  return 0;\r\n}\r\n```\r\nThanks.\r\n";
  Extraction ex = ExtractKernel(reply);
  ASSERT_TRUE(ex.found) << ex.message;
  EXPECT_FALSE(ex.unterminated);
  EXPECT_EQ(ex.code.find('\r'), std::string::npos);
  EXPECT_EQ(ex.code, "#include <cuda_bf16.h>\nextern \"C\" int run(int M) {\n  return 0;\n}\n");
}

TEST(Extract, TildeFencesAndBackticksNestedInsideThem) {
  std::string body = std::string(kRun) + "// a comment that quotes markdown:\n```\n// end\n";
  Extraction ex = ExtractKernel("~~~cuda\n" + body + "~~~\n");
  ASSERT_TRUE(ex.found) << ex.message;
  EXPECT_EQ(ex.code, body);  // the ``` inside did not close the ~~~ block
  EXPECT_EQ(ex.blocks, 1);
  // A longer backtick fence is closed only by one at least as long.
  ex = ExtractKernel("````cuda\n" + body + "````\n");
  ASSERT_TRUE(ex.found);
  EXPECT_EQ(ex.code, body);
}

TEST(Extract, FencesIndentedUpToThreeSpaces) {
  Extraction ex = ExtractKernel(
      "1. The kernel:\n   ```cuda\n   extern \"C\" int run(int M) {\n"
      "     return 0;\n   }\n   ```\n");
  ASSERT_TRUE(ex.found) << ex.message;
  // The fence's indentation is removed from the content.
  EXPECT_EQ(ex.code, "extern \"C\" int run(int M) {\n  return 0;\n}\n");
  // Four spaces: an indented code block, not a fence.
  ex = ExtractKernel("    ```cuda\n    extern \"C\" int run(int M) { return 0; }\n    ```\n");
  EXPECT_FALSE(ex.found);
  EXPECT_EQ(ex.blocks, 0);
}

TEST(Extract, TheFormsOfACLinkageRun) {
  const char* accepted[] = {
      "extern \"C\" int run(int M) { return 0; }\n",
      "extern \"C\" __host__ int run(int M) { return 0; }\n",
      "extern \"C\"\nint\nrun (int M)\n{\n  return 0;\n}\n",
      "extern \"C\" {\n#include <x.h>\nstatic int helper() { return 1; }\n"
      "int run(int M) { return helper(); }\n}\n",
      "extern \"C\" int run(int M);\nint run(int M) { return 0; }\n",
      "extern \"C\" __attribute__((visibility(\"default\"))) int run(int M) { return 0; }\n",
      "#include <cuda.h>\nextern \"C\" int run(const float* __restrict__ a, cudaStream_t s) "
      "noexcept {\n  return 0;\n}\n",
  };
  for (const char* code : accepted) EXPECT_TRUE(ExtractKernel(Fenced("cuda", code)).found) << code;
  const char* rejected[] = {
      // No C linkage.
      "int run(int M) { return 0; }\n",
      // A declaration only.
      "extern \"C\" int run(int M);\n",
      // Another name.
      "extern \"C\" int run_kernel(int M) { return 0; }\n",
      "extern \"C\" int rerun(int M) { return 0; }\n",
      // A call, a member, a kernel named run.
      "extern \"C\" int go(int M) { return run(M); }\n",
      "extern \"C\" int go(int M) { return obj.run(M); }\n",
      "extern \"C\" __global__ void run(float* x) { }\n",
      // Only in a comment or a string.
      "// extern \"C\" int run(int M) { return 0; }\nint main() { return 0; }\n",
      "/* extern \"C\" int run(int M) { } */\n",
      "const char* s = \"extern \\\"C\\\" int run(int M) { }\";\n",
  };
  for (const char* code : rejected) {
    Extraction ex = ExtractKernel(Fenced("cuda", code));
    EXPECT_FALSE(ex.found) << code;
    EXPECT_EQ(ex.candidates, 0) << code;
  }
}

TEST(Extract, NoRunAnywhereSaysWhatWasSeenAndExpected) {
  Extraction ex = ExtractKernel(Fenced("cuda", "__global__ void k() {}\n") +
                                Fenced("", "int main() { return 0; }\n"));
  EXPECT_FALSE(ex.found);
  EXPECT_EQ(ex.blocks, 2);
  EXPECT_EQ(ex.candidates, 0);
  EXPECT_NE(ex.message.find("2 code blocks, none defining extern \"C\" int run(...)"),
            std::string::npos)
      << ex.message;
  EXPECT_NE(ex.message.find("```cuda"), std::string::npos) << ex.message;
  EXPECT_NE(ex.message.find("whole .cu file"), std::string::npos) << ex.message;
}

TEST(Extract, NoFencedBlock) {
  Extraction ex = ExtractKernel("I think the best approach is tiling with shared memory.");
  EXPECT_FALSE(ex.found);
  EXPECT_EQ(ex.blocks, 0);
  EXPECT_NE(ex.message.find("no fenced code block"), std::string::npos) << ex.message;
  EXPECT_EQ(ex.message.find("looks like code"), std::string::npos) << ex.message;
  EXPECT_FALSE(ExtractKernel("").found);
}

TEST(Extract, BareCodeWithoutFencesIsNotAcceptedAndTheModelIsToldToFenceIt) {
  Extraction ex = ExtractKernel(kRun);
  EXPECT_FALSE(ex.found);
  EXPECT_EQ(ex.blocks, 0);
  EXPECT_NE(ex.message.find("looks like code without fences"), std::string::npos) << ex.message;
  EXPECT_NE(ex.message.find("```cuda"), std::string::npos);
}

TEST(Extract, OnlyOtherTagsNamesThem) {
  Extraction ex = ExtractKernel(Fenced("python", "print(1)\n") + Fenced("bash", "make\n"));
  EXPECT_FALSE(ex.found);
  EXPECT_NE(ex.message.find("2 code blocks (tagged bash, python), none tagged cuda"),
            std::string::npos)
      << ex.message;
}

TEST(Extract, InlineTriplesAreNotFences) {
  // ```x``` on one line is inline code; the real block follows.
  Extraction ex = ExtractKernel("```cuda``` is the tag to use.\n" + Fenced("cuda", kRun));
  ASSERT_TRUE(ex.found);
  EXPECT_EQ(ex.blocks, 1);
  EXPECT_EQ(ex.code, kRun);
}

}  // namespace
}  // namespace ptxbench
