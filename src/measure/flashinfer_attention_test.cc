// FlashInfer as the attention-forward baseline, without a GPU: the generated source, the cache
// key, the option's values and releases, where each release's headers are found and the
// explicit error when they are missing, the options the parent hands the baseline children, and
// (FlashInferBuild.RealCompile, where the headers and nvcc are here) one real sm_90a build of a
// generated instantiation against the default release.
#include "measure/flashinfer_attention.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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

TEST(FlashInferOption, ParsesTheLibrariesAndTheKnownReleases) {
  EXPECT_EQ(FlashInferVersions(), (std::vector<std::string>{"0.6.14", "0.7.4"}));
  EXPECT_EQ(std::string(kDefaultFlashInferVersion), "0.6.14");
  const AttentionBaseline fi0614 = AttentionBaseline::FlashInfer("0.6.14");
  const AttentionBaseline fi074 = AttentionBaseline::FlashInfer("0.7.4");
  // Plain "flashinfer" is the paper's release; the canonical word names it.
  EXPECT_EQ(ParseAttentionBaseline("flashinfer"), fi0614);
  EXPECT_EQ(ParseAttentionBaseline("flashinfer@0.6.14"), fi0614);
  EXPECT_EQ(ParseAttentionBaseline("flashinfer@0.7.4"), fi074);
  EXPECT_EQ(ParseAttentionBaseline("cudnn"), AttentionBaseline::Cudnn());
  EXPECT_EQ(AttentionBaseline{}, fi0614);
  EXPECT_EQ(ToString(*ParseAttentionBaseline("flashinfer")), "flashinfer@0.6.14");
  EXPECT_EQ(ToString(fi074), "flashinfer@0.7.4");
  EXPECT_EQ(ToString(AttentionBaseline::Cudnn()), "cudnn");
  EXPECT_EQ(DisplayName(fi074), "FlashInfer 0.7.4 (sm90 prefill)");
  EXPECT_EQ(DisplayName(AttentionBaseline::Cudnn()), "cuDNN SDPA");
  for (const std::string& w : AttentionBaselineWords())
    EXPECT_EQ(ToString(*ParseAttentionBaseline(w)), w == "flashinfer" ? "flashinfer@0.6.14" : w);
  EXPECT_EQ(AttentionBaselineWords(), (std::vector<std::string>{"flashinfer", "flashinfer@0.6.14",
                                                                "flashinfer@0.7.4", "cudnn"}));
  for (const char* bad : {"FlashInfer", "", "both", "all", "flashinfer@", "flashinfer@0.7",
                          "cudnn@9.10", "flashinfer 0.7.4"})
    EXPECT_EQ(ParseAttentionBaseline(bad), std::nullopt) << bad;
  // An unknown release is refused naming the known ones.
  std::string why;
  EXPECT_EQ(ParseAttentionBaseline("flashinfer@0.5.3", &why), std::nullopt);
  EXPECT_EQ(why, "FlashInfer 0.5.3 is not a version ptxbench builds (known: 0.6.14, 0.7.4)");
  // The children read the choice from the spec; anything but "cudnn" is FlashInfer, of the
  // version written there (the default when none is).
  EXPECT_EQ(AttentionBaselineOf(nlohmann::json::object()), fi0614);
  EXPECT_EQ(AttentionBaselineOf({{"attention", "cudnn"}}), AttentionBaseline::Cudnn());
  EXPECT_EQ(AttentionBaselineOf({{"attention", "flashinfer"}, {"flashinfer_version", "0.7.4"}}),
            fi074);
}

TEST(FlashInferSource, InstantiatesTheFa3PrefillPerHeadDimAndMask) {
  for (int d : {64, 128, 256})
    for (bool causal : {false, true}) {
      SCOPED_TRACE("D=" + std::to_string(d) + (causal ? " causal" : ""));
      ASSERT_TRUE(FlashInferHasSm90Prefill(d));
      const std::string s = FlashInferSource(d, causal, "0.6.14");
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
      EXPECT_NE(s.find("FlashInfer 0.6.14's FA3"), std::string::npos);
      for (const char* entry :
           {"int fi_attention_abi()", "const char* fi_attention_describe()",
            "int fi_attention_plan(", "int fi_attention_forward(", "void fi_attention_free("})
        EXPECT_NE(s.find(entry), std::string::npos) << entry;
      // The variant is declared before the kernel's header, as FlashInfer's own configs do.
      EXPECT_LT(s.find("struct NaturalLseAttention"),
                s.find("#include <flashinfer/attention/hopper/prefill_sm90.cuh>"));
    }
  EXPECT_NE(FlashInferSource(64, false, "0.6.14"), FlashInferSource(64, true, "0.6.14"));
  EXPECT_NE(FlashInferSource(64, false, "0.6.14"), FlashInferSource(128, false, "0.6.14"));
  // One template for both releases: only the version named in the header comment differs.
  std::string older = FlashInferSource(128, true, "0.6.14");
  const std::string newer = FlashInferSource(128, true, "0.7.4");
  older.replace(older.find("0.6.14"), 6, "0.7.4");
  EXPECT_EQ(older, newer);
}

TEST(FlashInferSource, HeadDim96IsUnsupportedNotAnError) {
  EXPECT_FALSE(FlashInferHasSm90Prefill(96));
  try {
    FlashInferSource(96, false, "0.7.4");
    FAIL() << "no exception";
  } catch (const BaselineUnsupported& e) {
    EXPECT_NE(
        std::string(e.what()).find("FlashInfer 0.7.4 has no sm90 (FA3) prefill for head dim 96"),
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
  const std::string source = FlashInferSource(128, false, kDefaultFlashInferVersion);
  for (const std::string& h : FlashInferIncludes())
    EXPECT_NE(source.find("#include <" + h + ">"), std::string::npos) << h;
}

TEST(FlashInferCacheKey, ChangesWithEverythingThatMakesTheObject) {
  const std::string root = "/a/.tools/flashinfer-0.7.4";
  const std::vector<std::string> flags = {"-O3", "-isystem", root + "/include"};
  const std::string src = FlashInferSource(128, false, "0.7.4");
  auto key = [&](const std::string& version, const std::string& nvcc,
                 const std::vector<std::string>& f, const std::string& source) {
    return FlashInferCacheKey(root, version, nvcc, f, source);
  };
  const std::string k = key("0.7.4", "13.0.88", flags, src);
  EXPECT_EQ(k.size(), 64u);
  EXPECT_EQ(k, key("0.7.4", "13.0.88", flags, src));
  EXPECT_NE(k, key("0.7.3", "13.0.88", flags, src));
  EXPECT_NE(k, key("0.7.4", "13.0.48", flags, src));
  EXPECT_NE(k, key("0.7.4", "13.0.88", {"-O2", flags[1], flags[2]}, src));
  EXPECT_NE(k, key("0.7.4", "13.0.88", flags, FlashInferSource(128, true, "0.7.4")));
  EXPECT_NE(k, key("0.7.4", "13.0.88", flags, FlashInferSource(64, false, "0.7.4")));
  // The same install elsewhere (another checkout, $PTXBENCH_FLASHINFER) keeps its builds...
  EXPECT_EQ(k, FlashInferCacheKey("/elsewhere/fi", "0.7.4", "13.0.88",
                                  {"-O3", "-isystem", "/elsewhere/fi/include"}, src));
  // ...but a folder other than the install's include tree is another build.
  EXPECT_NE(k, FlashInferCacheKey(root, "0.7.4", "13.0.88",
                                  {"-O3", "-isystem", root + "/cutlass/include"}, src));
  // Each release, in its own .tools folder, has its own key for the same variant.
  const std::string older = "/a/.tools/flashinfer-0.6.14";
  EXPECT_NE(k,
            FlashInferCacheKey(older, "0.6.14", "13.0.88", {"-O3", "-isystem", older + "/include"},
                               FlashInferSource(128, false, "0.6.14")));
  // Even the same source and flags differ by the version alone.
  EXPECT_NE(k, FlashInferCacheKey(root, "0.6.14", "13.0.88", flags, src));
}

// A complete-looking install of `version` at `dir` (the files FindFlashInfer checks, empty).
void FakeInstall(const std::string& dir, const std::string& version) {
  for (const char* f :
       {"include/flashinfer/attention/hopper/prefill_sm90.cuh",
        "include/flashinfer/attention/scheduler.cuh", "cutlass/include/cute/tensor.hpp",
        "cutlass/include/cutlass/cutlass.h", "cccl/libcudacxx/include/cuda/std/version"}) {
    const std::string path = dir + "/" + f;
    MakeDirs(path.substr(0, path.rfind('/')));
    WriteFileAtomic(path, "");
  }
  WriteFileAtomic(dir + "/VERSION", version + "\n");
}

TEST(FlashInferInstall, EachReleaseIsFoundInItsOwnFolder) {
  ScratchDir dir("ptxbench-fi-test");
  const std::string tools = dir.File("tools");
  FakeInstall(tools + "/flashinfer-0.6.14", "0.6.14");
  FakeInstall(tools + "/flashinfer-0.7.4", "0.7.4");
  for (const std::string& version : FlashInferVersions()) {
    std::string why;
    auto f = FindFlashInferAt(version, "", tools, &why);
    ASSERT_TRUE(f) << why;
    EXPECT_EQ(f->version, version);
    EXPECT_EQ(f->root, std::filesystem::canonical(tools + "/flashinfer-" + version).string());
    ASSERT_EQ(f->include_flags.size(), 8u);
    EXPECT_EQ(f->include_flags[3], f->root + "/include");
  }
  // $PTXBENCH_FLASHINFER serves the release it holds; the other comes from .tools.
  FakeInstall(dir.File("mine"), "0.7.4");
  std::string why;
  auto mine = FindFlashInferAt("0.7.4", dir.File("mine"), tools, &why);
  ASSERT_TRUE(mine) << why;
  EXPECT_EQ(mine->root, std::filesystem::canonical(dir.File("mine")).string());
  auto other = FindFlashInferAt("0.6.14", dir.File("mine"), tools, &why);
  ASSERT_TRUE(other) << why;
  EXPECT_EQ(other->root, std::filesystem::canonical(tools + "/flashinfer-0.6.14").string());
  // A version the harness does not build is refused before any folder is looked at.
  EXPECT_FALSE(FindFlashInferAt("0.5.3", "", tools, &why));
  EXPECT_EQ(why, "FlashInfer 0.5.3 is not a version ptxbench builds (known: 0.6.14, 0.7.4)");
}

TEST(FlashInferInstall, AMissingOrMismatchedFolderNamesTheVersion) {
  ScratchDir dir("ptxbench-fi-test");
  const std::string tools = dir.File("tools");
  FakeInstall(tools + "/flashinfer-0.6.14", "0.6.14");
  std::string why;
  // 0.7.4 not installed: its folder is named, and how to install it.
  EXPECT_FALSE(FindFlashInferAt("0.7.4", "", tools, &why));
  EXPECT_NE(
      why.find("FlashInfer 0.7.4 headers not installed: no folder " + tools + "/flashinfer-0.7.4"),
      std::string::npos)
      << why;
  EXPECT_NE(why.find("scripts/setup.sh installs them into .tools/flashinfer-0.7.4"),
            std::string::npos)
      << why;
  // A folder under 0.7.4's name holding another release is refused, naming both.
  FakeInstall(tools + "/flashinfer-0.7.4", "0.6.14");
  EXPECT_FALSE(FindFlashInferAt("0.7.4", "", tools, &why));
  EXPECT_NE(why.find("FlashInfer 0.7.4 headers not installed: "), std::string::npos) << why;
  EXPECT_NE(why.find("flashinfer-0.7.4 holds version 0.6.14, not 0.7.4"), std::string::npos) << why;
  // $PTXBENCH_FLASHINFER with another release is passed over, and said so when .tools fails too.
  FakeInstall(dir.File("mine"), "0.6.14");
  EXPECT_FALSE(FindFlashInferAt("0.7.4", dir.File("mine"), tools, &why));
  EXPECT_NE(why.find("($PTXBENCH_FLASHINFER passed over: "), std::string::npos) << why;
  EXPECT_NE(why.find("mine holds version 0.6.14, not 0.7.4"), std::string::npos) << why;
  // ...but one that holds the release asked for and not all of it is an error of its own.
  FakeInstall(dir.File("broken"), "0.6.14");
  std::filesystem::remove(dir.File("broken") + "/cutlass/include/cute/tensor.hpp");
  EXPECT_FALSE(FindFlashInferAt("0.6.14", dir.File("broken"), tools, &why));
  EXPECT_NE(why.find("FlashInfer 0.6.14 headers not installed: "), std::string::npos) << why;
  EXPECT_NE(why.find("has no cutlass/include/cute/tensor.hpp ($PTXBENCH_FLASHINFER)"),
            std::string::npos)
      << why;
}

TEST(FlashInferInstall, MissingHeadersGiveTheExplicitError) {
  ScratchDir empty("ptxbench-fi-test");
  {
    // A folder that holds the release asked for but only part of it: no other copy is looked
    // for, and the first file it lacks is named.
    MakeDirs(empty.File("partial/include"));
    WriteFileAtomic(empty.File("partial/VERSION"), "0.7.4\n");
    ScopedEnv env("PTXBENCH_FLASHINFER", empty.File("partial"));
    std::string why;
    EXPECT_FALSE(FindFlashInfer("0.7.4", &why));
    EXPECT_NE(why.find("FlashInfer 0.7.4 headers not installed: "), std::string::npos) << why;
    EXPECT_NE(why.find("has no include/flashinfer/attention/hopper/prefill_sm90.cuh"),
              std::string::npos)
        << why;
    EXPECT_NE(why.find("scripts/setup.sh"), std::string::npos) << why;
    // The build says the same, as a BaselineError (not an unsupported shape).
    try {
      BuildFlashInferAttention(128, false, "0.7.4", empty.File("cache"));
      FAIL() << "no exception";
    } catch (const BaselineUnsupported& e) {
      FAIL() << "unsupported: " << e.what();
    } catch (const BaselineError& e) {
      EXPECT_NE(std::string(e.what()).find("FlashInfer 0.7.4 headers not installed"),
                std::string::npos)
          << e.what();
    }
    // ...and the parent hands it to the children as the library's failure, with the version.
    nlohmann::json o = PrepareBaselineOptions(
        *FindFamily("mha_fwd"), {{"B", 1}, {"H", 1}, {"S", 128}, {"D", 128}, {"causal", 0}},
        AttentionBaseline::FlashInfer("0.7.4"), empty.File("cache"));
    EXPECT_EQ(o.value("attention", ""), "flashinfer");
    EXPECT_EQ(o.value("flashinfer_version", ""), "0.7.4");
    EXPECT_NE(o.value("flashinfer_error", "").find("headers not installed"), std::string::npos)
        << o.dump();
    EXPECT_FALSE(o.contains("flashinfer_build"));
  }
  // An unknown release cannot be built.
  try {
    BuildFlashInferAttention(128, false, "0.5.3", empty.File("cache"));
    FAIL() << "no exception";
  } catch (const BaselineError& e) {
    EXPECT_NE(std::string(e.what()).find("not a version ptxbench builds"), std::string::npos)
        << e.what();
  }
}

TEST(FlashInferOptions, ParentPreparesOnlyWhatTheChildNeeds) {
  const Axes d96 = {{"B", 1}, {"H", 1}, {"S", 128}, {"D", 96}, {"causal", 1}};
  ScratchDir cache("ptxbench-fi-test");
  // Head dim 96: unsupported, said before any compiler or header is looked for.
  nlohmann::json o = PrepareBaselineOptions(*FindFamily("mha_fwd"), d96,
                                            AttentionBaseline::FlashInfer("0.7.4"), cache.path());
  EXPECT_NE(o.value("flashinfer_unsupported", "").find("FlashInfer 0.7.4 has no sm90"),
            std::string::npos)
      << o.dump();
  EXPECT_NE(o.value("flashinfer_unsupported", "").find("head dim 96"), std::string::npos);
  EXPECT_EQ(AttentionBaselineOf(o), AttentionBaseline::FlashInfer("0.7.4"));
  // cuDNN, the backward and GEMM build nothing.
  o = PrepareBaselineOptions(*FindFamily("mha_fwd"), d96, AttentionBaseline::Cudnn(), cache.path());
  EXPECT_EQ(o, nlohmann::json({{"attention", "cudnn"}}));
  o = PrepareBaselineOptions(*FindFamily("mha_bwd"), d96, AttentionBaseline{}, cache.path());
  EXPECT_EQ(o, nlohmann::json({{"attention", "flashinfer"}, {"flashinfer_version", "0.6.14"}}));
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
  // A build of another release than the one asked for is refused before it is loaded.
  FlashInferBuild b;
  b.sha256 = std::string(64, 'a');
  b.version = "0.7.4";
  try {
    MakeBaseline(*FindFamily("mha_fwd"), d96,
                 {{"attention", "flashinfer"},
                  {"flashinfer_version", "0.6.14"},
                  {"flashinfer_build", ToJson(b)}},
                 &why);
    FAIL() << "no exception";
  } catch (const BaselineError& e) {
    EXPECT_NE(std::string(e.what()).find("built version 0.7.4, not the 0.6.14 asked for"),
              std::string::npos)
        << e.what();
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
// (confined nvcc, cache, lock), then a cache hit. The default release only: the GPU test builds
// every release's variants, and a second one here would double the minutes. It needs the headers
// (scripts/setup.sh) and nvcc; without either it is skipped, saying which. Minutes of one core:
// CUTLASS templates.
TEST(FlashInferBuild, RealCompileForSm90a) {
  if (std::getenv("PTXBENCH_SKIP_FLASHINFER_BUILD"))
    GTEST_SKIP() << "PTXBENCH_SKIP_FLASHINFER_BUILD is set";
  std::string why;
  if (!FindFlashInfer(kDefaultFlashInferVersion, &why)) GTEST_SKIP() << why;
  if (!FindProgram("nvcc") && !FileExists("/usr/local/cuda/bin/nvcc")) GTEST_SKIP() << "no nvcc";
  ScratchDir cache("ptxbench-fi-build");
  auto t0 = std::chrono::steady_clock::now();
  FlashInferBuild b = BuildFlashInferAttention(64, true, kDefaultFlashInferVersion, cache.path());
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
  FlashInferBuild again =
      BuildFlashInferAttention(64, true, kDefaultFlashInferVersion, cache.path());
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.sha256, b.sha256);
  EXPECT_EQ(again.shared_object, b.shared_object);
}

}  // namespace
}  // namespace ptxbench
