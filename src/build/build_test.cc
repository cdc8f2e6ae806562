// Build tests with the real nvcc: ptxas parsing, compile errors, the cache, both archs.
#include <gtest/gtest.h>

#include <filesystem>

#include "build/elf.h"
#include "build/nvcc.h"
#include "build/ptxas_report.h"
#include "common/files.h"
#include "common/subprocess.h"

namespace ptxbench {
namespace {

const char* kKernel = R"(
#include <cuda_bf16.h>
__global__ void scale(const __nv_bfloat16* a, __nv_bfloat16* c, int n) {
  __shared__ float s[128];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? __bfloat162float(a[i]) : 0.f;
  __syncthreads();
  if (i < n) c[i] = __float2bfloat16(2.f * s[threadIdx.x]);
}
extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C,
                   int M, int N, int K, cudaStream_t stream) {
  scale<<<(M * N + 127) / 128, 128, 0, stream>>>(A, C, M * N);
  return 0;
}
)";

class BuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!FindProgram("nvcc")) GTEST_SKIP() << "nvcc not found";
    options_.cache_dir = dir_.File("cache");
  }
  ScratchDir dir_{"build-test"};
  BuildOptions options_;
};

TEST(PtxasReport, ParsesEveryEntry) {
  const char* log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z1av' for 'sm_90a'\n"
      "ptxas info    : Function properties for _Z1av\n"
      "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers, 4096 bytes smem, 400 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function '_Z1bv' for 'sm_90a'\n"
      "ptxas info    : Function properties for _Z1bv\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 2 registers, 356 bytes cmem[0]\n";
  auto f = ParsePtxasReport(log);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].name, "_Z1av");
  EXPECT_EQ(f[0].arch, "sm_90a");
  EXPECT_EQ(f[0].registers, 168);
  EXPECT_EQ(f[0].barriers, 1);
  EXPECT_EQ(f[0].stack_frame_bytes, 8);
  EXPECT_EQ(f[0].spill_store_bytes, 4);
  EXPECT_EQ(f[0].spill_load_bytes, 12);
  EXPECT_EQ(f[0].shared_bytes, 4096);
  EXPECT_EQ(f[0].constant_bytes, 400);
  EXPECT_EQ(f[1].registers, 2);
  EXPECT_EQ(f[1].shared_bytes, 0);
}

TEST(TrimErrors, KeepsErrorsWithTheirSourceLines) {
  const char* log =
      "candidate.cu(3): error: identifier \"foo\" is undefined\n"
      "    foo();\n"
      "    ^\n"
      "\n"
      "candidate.cu(9): warning #177-D: variable \"x\" was declared but never referenced\n"
      "1 error detected in the compilation of \"candidate.cu\".\n";
  std::string t = TrimCompilerErrors(log);
  EXPECT_NE(t.find("candidate.cu(3): error: identifier \"foo\" is undefined\n    foo();\n    ^"),
            std::string::npos);
  EXPECT_EQ(t.find("warning"), std::string::npos);
}

TEST_F(BuildTest, BuildsForHopperAndParsesTheReport) {
  BuildResult r = BuildCandidate(kKernel, options_);
  ASSERT_EQ(r.outcome, BuildOutcome::kBuilt) << r.log;
  EXPECT_FALSE(r.cache_hit);
  EXPECT_TRUE(FileExists(r.shared_object));
  ASSERT_EQ(r.functions.size(), 1u) << r.log;
  EXPECT_NE(r.functions[0].name.find("scale"), std::string::npos);
  EXPECT_EQ(r.functions[0].arch, "sm_90a");
  EXPECT_GT(r.functions[0].registers, 0);
  EXPECT_EQ(r.functions[0].shared_bytes, 512);
  ElfInfo elf = ReadElfInfo(r.shared_object);
  EXPECT_TRUE(ExportsFunction(elf, "run"));
  EXPECT_TRUE(ForbiddenDependencies(elf).empty());
  // The command is the one documented: gencode for sm_90a, shared cudart, line info.
  std::string cmd;
  for (const auto& a : r.command) cmd += a + " ";
  EXPECT_NE(cmd.find("-gencode arch=compute_90a,code=sm_90a"), std::string::npos);
  EXPECT_NE(cmd.find("-cudart shared"), std::string::npos);
  EXPECT_NE(cmd.find("-lineinfo"), std::string::npos);

  // The second build of the same source is a cache hit with the same report and object.
  BuildResult again = BuildCandidate(kKernel, options_);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.shared_object, r.shared_object);
  EXPECT_EQ(again.functions.size(), 1u);
  EXPECT_EQ(again.seconds, 0);
  // Another arch is another key.
  options_.arch = "sm_100a";
  BuildResult b = BuildCandidate(kKernel, options_);
  ASSERT_EQ(b.outcome, BuildOutcome::kBuilt) << b.log;
  EXPECT_NE(b.key, r.key);
  EXPECT_EQ(b.functions.at(0).arch, "sm_100a");
}

TEST_F(BuildTest, CompileErrorKeepsTheCompilersMessage) {
  BuildResult r = BuildCandidate("__global__ void k() { undefined_thing(); }\n", options_);
  EXPECT_EQ(r.outcome, BuildOutcome::kCompileError);
  EXPECT_NE(r.errors.find("candidate.cu(1): error"), std::string::npos) << r.errors;
  EXPECT_NE(r.errors.find("undefined_thing"), std::string::npos);
  // No temporary folders are left in the cache.
  for (const auto& e : std::filesystem::directory_iterator(options_.cache_dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos);
  BuildResult again = BuildCandidate("__global__ void k() { undefined_thing(); }\n", options_);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.outcome, BuildOutcome::kCompileError);
}

TEST_F(BuildTest, NoCacheRebuilds) {
  options_.use_cache = false;
  BuildResult r = BuildCandidate(kKernel, options_);
  ASSERT_EQ(r.outcome, BuildOutcome::kBuilt);
  BuildResult again = BuildCandidate(kKernel, options_);
  EXPECT_FALSE(again.cache_hit);
  EXPECT_GT(again.seconds, 0);
}

TEST_F(BuildTest, UnknownArchIsAUsageError) {
  options_.arch = "sm_80";
  EXPECT_THROW(BuildCandidate(kKernel, options_), std::exception);
}

}  // namespace
}  // namespace ptxbench
