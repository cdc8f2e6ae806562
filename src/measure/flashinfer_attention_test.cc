// FlashInfer as the attention-forward baseline, without a GPU: the generated source, the cache
// key, the option's values, the explicit error when the headers are missing, the options the
// parent hands the baseline children, and (FlashInferBuild.RealCompile, where the headers and
// nvcc are here) one real sm_90a build of a generated instantiation.
#include "measure/flashinfer_attention.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <regex>

#include "common/files.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "measure/baseline.h"
#include "task/family.h"

namespace ptxbench {
namespace {

// Sets an environment variable for the scope, restoring it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(FlashInferOption, ParsesOnlyItsTwoValues) {
  EXPECT_EQ(ParseAttentionBaseline("flashinfer"), AttentionBaseline::kFlashInfer);
  EXPECT_EQ(ParseAttentionBaseline("cudnn"), AttentionBaseline::kCudnn);
  EXPECT_EQ(ParseAttentionBaseline("FlashInfer"), std::nullopt);
  EXPECT_EQ(ParseAttentionBaseline(""), std::nullopt);
  EXPECT_EQ(ParseAttentionBaseline("both"), std::nullopt);
  EXPECT_EQ(ToString(AttentionBaseline::kFlashInfer), "flashinfer");
  EXPECT_EQ(ToString(AttentionBaseline::kCudnn), "cudnn");
  // The children read the choice from the spec; anything but "cudnn" is the default.
  EXPECT_EQ(AttentionBaselineOf(nlohmann::json::object()), AttentionBaseline::kFlashInfer);
  EXPECT_EQ(AttentionBaselineOf({{"attention", "cudnn"}}), AttentionBaseline::kCudnn);
}

TEST(FlashInferSource, InstantiatesTheFa3PrefillPerHeadDimAndMask) {
  for (int d : {64, 128, 256})
    for (bool causal : {false, true}) {
      SCOPED_TRACE("D=" + std::to_string(d) + (causal ? " causal" : ""));
      ASSERT_TRUE(FlashInferHasSm90Prefill(d));
      const std::string s = FlashInferSource(d, causal);
      EXPECT_NE(s.find("constexpr int kHeadDim = " + std::to_string(d) + ";"), std::string::npos);
      EXPECT_NE(s.find(causal ? "constexpr MaskMode kMask = MaskMode::kCausal;"
                              : "constexpr MaskMode kMask = MaskMode::kNone;"),
                std::string::npos);
      EXPECT_NE(s.find("BatchPrefillWithRaggedKVCacheDispatched<kHeadDim, kHeadDim, kMask"),
                std::string::npos);
      EXPECT_NE(s.find("PrefillSM90Plan<IdType>"), std::string::npos);
      // The natural-log LSE: FlashInfer's base-2 value times ln 2, in its epilogue.
      EXPECT_NE(s.find("0.693147180559945309417f"), std::string::npos);
      EXPECT_NE(s.find("struct NaturalLseAttention : StandardAttention"), std::string::npos);
      // Every placeholder filled; the version named; the entry points exported.
      EXPECT_EQ(s.find('@'), std::string::npos) << s;
      EXPECT_NE(s.find(std::string("FlashInfer ") + kFlashInferVersion), std::string::npos);
      for (const char* entry :
           {"int fi_attention_abi()", "const char* fi_attention_describe()",
            "int fi_attention_plan(", "int fi_attention_forward(", "void fi_attention_free("})
        EXPECT_NE(s.find(entry), std::string::npos) << entry;
      // The variant is declared before the kernel's header, as FlashInfer's own configs do.
      EXPECT_LT(s.find("struct NaturalLseAttention"),
                s.find("#include <flashinfer/attention/hopper/prefill_sm90.cuh>"));
    }
  EXPECT_NE(FlashInferSource(64, false), FlashInferSource(64, true));
  EXPECT_NE(FlashInferSource(64, false), FlashInferSource(128, false));
}

TEST(FlashInferSource, HeadDim96IsUnsupportedNotAnError) {
  EXPECT_FALSE(FlashInferHasSm90Prefill(96));
  try {
    FlashInferSource(96, false);
    FAIL() << "no exception";
  } catch (const BaselineUnsupported& e) {
    EXPECT_NE(std::string(e.what()).find("no sm90 (FA3) prefill for head dim 96"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("FA2"), std::string::npos) << e.what();
  }
}

// The header list setup.sh installs from (tools/flashinfer_headers.cu) is the generated
// source's: a header added to one and not the other would be missing on a fresh machine.
TEST(FlashInferSource, SetupProbeIncludesTheSameHeaders) {
  const std::string probe =
      ReadFile(std::string(PTXBENCH_SOURCE_DIR) + "/tools/flashinfer_headers.cu");
  std::vector<std::string> probed;
  static const std::regex include(R"(#include <([^>]+)>)");
  for (const std::string& line : SplitLines(probe)) {
    std::smatch m;
    if (std::regex_search(line, m, include)) probed.push_back(m[1]);
  }
  EXPECT_EQ(probed, FlashInferIncludes());
  const std::string source = FlashInferSource(128, false);
  for (const std::string& h : FlashInferIncludes())
    EXPECT_NE(source.find("#include <" + h + ">"), std::string::npos) << h;
}

TEST(FlashInferCacheKey, ChangesWithEverythingThatMakesTheObject) {
  const std::vector<std::string> flags = {"-O3", "-isystem", "/a/.tools/flashinfer/include"};
  const std::string src = FlashInferSource(128, false);
  const std::string k = FlashInferCacheKey("0.7.4", "13.0.88", flags, src);
  EXPECT_EQ(k.size(), 64u);
  EXPECT_EQ(k, FlashInferCacheKey("0.7.4", "13.0.88", flags, src));
  EXPECT_NE(k, FlashInferCacheKey("0.7.3", "13.0.88", flags, src));
  EXPECT_NE(k, FlashInferCacheKey("0.7.4", "13.0.48", flags, src));
  EXPECT_NE(k, FlashInferCacheKey("0.7.4", "13.0.88", {"-O2", flags[1], flags[2]}, src));
  EXPECT_NE(k, FlashInferCacheKey("0.7.4", "13.0.88", flags, FlashInferSource(128, true)));
  EXPECT_NE(k, FlashInferCacheKey("0.7.4", "13.0.88", flags, FlashInferSource(64, false)));
  // The same install elsewhere (a checkout in another folder) keeps its builds.
  EXPECT_EQ(k,
            FlashInferCacheKey("0.7.4", "13.0.88",
                               {"-O3", "-isystem", "/elsewhere/.tools/flashinfer/include"}, src));
}

TEST(FlashInferInstall, MissingHeadersGiveTheExplicitError) {
  ScratchDir empty("ptxbench-fi-test");
  {
    ScopedEnv env("PTXBENCH_FLASHINFER", empty.File("nowhere"));
    std::string why;
    EXPECT_FALSE(FindFlashInfer(&why));
    EXPECT_NE(why.find("FlashInfer 0.7.4 headers not installed: no folder"), std::string::npos)
        << why;
    EXPECT_NE(why.find("scripts/setup.sh"), std::string::npos) << why;
    // The build says the same, as a BaselineError (not an unsupported shape).
    try {
      BuildFlashInferAttention(128, false, empty.File("cache"));
      FAIL() << "no exception";
    } catch (const BaselineUnsupported& e) {
      FAIL() << "unsupported: " << e.what();
    } catch (const BaselineError& e) {
      EXPECT_NE(std::string(e.what()).find("headers not installed"), std::string::npos) << e.what();
    }
    // ...and the parent hands it to the children as the library's failure.
    nlohmann::json o = PrepareBaselineOptions(
        *FindFamily("mha_fwd"), {{"B", 1}, {"H", 1}, {"S", 128}, {"D", 128}, {"causal", 0}},
        AttentionBaseline::kFlashInfer, empty.File("cache"));
    EXPECT_EQ(o.value("attention", ""), "flashinfer");
    EXPECT_NE(o.value("flashinfer_error", "").find("headers not installed"), std::string::npos)
        << o.dump();
    EXPECT_FALSE(o.contains("flashinfer_build"));
  }
  {
    // A folder with part of the tree names the first file it lacks.
    MakeDirs(empty.File("partial/include"));
    WriteFileAtomic(empty.File("partial/VERSION"), "0.7.4\n");
    ScopedEnv env("PTXBENCH_FLASHINFER", empty.File("partial"));
    std::string why;
    EXPECT_FALSE(FindFlashInfer(&why));
    EXPECT_NE(why.find("has no include/flashinfer/attention/hopper/prefill_sm90.cuh"),
              std::string::npos)
        << why;
  }
}

TEST(FlashInferOptions, ParentPreparesOnlyWhatTheChildNeeds) {
  const Axes d96 = {{"B", 1}, {"H", 1}, {"S", 128}, {"D", 96}, {"causal", 1}};
  ScratchDir cache("ptxbench-fi-test");
  // Head dim 96: unsupported, said before any compiler or header is looked for.
  nlohmann::json o = PrepareBaselineOptions(*FindFamily("mha_fwd"), d96,
                                            AttentionBaseline::kFlashInfer, cache.path());
  EXPECT_NE(o.value("flashinfer_unsupported", "").find("head dim 96"), std::string::npos);
  // cuDNN, the backward and GEMM build nothing.
  o = PrepareBaselineOptions(*FindFamily("mha_fwd"), d96, AttentionBaseline::kCudnn, cache.path());
  EXPECT_EQ(o, nlohmann::json({{"attention", "cudnn"}}));
  o = PrepareBaselineOptions(*FindFamily("mha_bwd"), d96, AttentionBaseline::kFlashInfer,
                             cache.path());
  EXPECT_EQ(o, nlohmann::json({{"attention", "flashinfer"}}));
  // The child turns those into the library's own outcomes.
  std::string why;
  EXPECT_THROW(MakeBaseline(*FindFamily("mha_fwd"), d96,
                            {{"attention", "flashinfer"}, {"flashinfer_unsupported", "no"}}, &why),
               BaselineUnsupported);
  try {
    MakeBaseline(*FindFamily("mha_fwd"), d96, {{"attention", "flashinfer"}}, &why);
    FAIL() << "no exception";
  } catch (const BaselineUnsupported&) {
    FAIL() << "a missing build is an error, not an unsupported shape";
  } catch (const BaselineError& e) {
    EXPECT_NE(std::string(e.what()).find("the parent built no kernel"), std::string::npos);
  }
}

TEST(FlashInferBuild, JsonRoundTrip) {
  FlashInferBuild b;
  b.shared_object = "/c/flashinfer/k/flashinfer_attention.so";
  b.sha256 = std::string(64, 'a');
  b.key = std::string(64, 'b');
  b.version = "0.7.4";
  b.nvcc_version = "13.0.88";
  b.command = {"nvcc", "-O3"};
  b.seconds = 101.5;
  b.head_dim = 256;
  b.causal = true;
  FlashInferBuild c = FlashInferBuildFromJson(ToJson(b));
  EXPECT_EQ(ToJson(c), ToJson(b));
}

// One real build of a generated instantiation for sm_90a, through the harness's own path
// (confined nvcc, cache, lock), then a cache hit. It needs the headers (scripts/setup.sh) and
// nvcc; without either it is skipped, saying which. Minutes of one core: CUTLASS templates.
TEST(FlashInferBuild, RealCompileForSm90a) {
  if (std::getenv("PTXBENCH_SKIP_FLASHINFER_BUILD"))
    GTEST_SKIP() << "PTXBENCH_SKIP_FLASHINFER_BUILD is set";
  std::string why;
  if (!FindFlashInfer(&why)) GTEST_SKIP() << why;
  if (!FindProgram("nvcc") && !FileExists("/usr/local/cuda/bin/nvcc")) GTEST_SKIP() << "no nvcc";
  ScratchDir cache("ptxbench-fi-build");
  auto t0 = std::chrono::steady_clock::now();
  FlashInferBuild b = BuildFlashInferAttention(64, true, cache.path());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("FlashInfer %s, head dim 64 causal, built in %.1f s (nvcc %.1f s): %s\n",
              b.version.c_str(), s, b.seconds, b.shared_object.c_str());
  EXPECT_FALSE(b.cache_hit);
  EXPECT_TRUE(FileExists(b.shared_object));
  EXPECT_EQ(b.sha256.size(), 64u);
  // The object exports the entry points the child looks up, and nothing links it to vendor
  // math libraries.
  CommandResult nm =
      RunCommand({"nm", "-D", "--defined-only", b.shared_object}, std::chrono::seconds(60));
  for (const char* entry : {"fi_attention_abi", "fi_attention_describe", "fi_attention_plan",
                            "fi_attention_forward", "fi_attention_free"})
    EXPECT_NE(nm.output.find(entry), std::string::npos) << entry;
  FlashInferBuild again = BuildFlashInferAttention(64, true, cache.path());
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.sha256, b.sha256);
  EXPECT_EQ(again.shared_object, b.shared_object);
}

}  // namespace
}  // namespace ptxbench
