// Knowledge packs: the manifest and its errors, rendering, inlining the helper header, and,
// for the packs we ship, what CI can prove without the chip: every variant renders, the full
// Hopper pack is 20k-30k tokens, every "cuda compile" block and every helper header compiles
// for its architecture, and every example, inlined, builds as a candidate whose SASS holds
// the architecture's instruction families.
#include "agent/pack.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "agent/prompt.h"
#include "common/error.h"
#include "common/files.h"
#include "common/subprocess.h"
#include "compile/nvcc.h"

namespace ptxbench {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class PackFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    MakeDirs(dir_.File("sm_90a/parts"));
    MakeDirs(dir_.File("sm_90a/include"));
    WriteFileAtomic(dir_.File("sm_90a/parts/a.md"), "## Part A\nalpha\n");
    WriteFileAtomic(dir_.File("sm_90a/parts/b.md"),
                    "## Part B\n```cuda compile\n__global__ void k() {}\n```\n"
                    "```cuda\nfragment();\n```\n");
    WriteFileAtomic(dir_.File("sm_90a/include/h.cuh"), "#pragma once\nint helper();\n");
  }
  void Manifest(const json& j) { WriteFileAtomic(dir_.File("sm_90a/manifest.json"), j.dump()); }
  json Good() const {
    return {{"arch", "sm_90a"},
            {"title", "Test pack"},
            {"hardware_verified", false},
            {"note", "A note."},
            {"parts",
             {{"a", "parts/a.md"},
              {"b", "parts/b.md"},
              {"helpers", {{"header", "include/h.cuh"}, {"intro", "Copy what you need."}}}}},
            {"variants", {{"base", {"a", "helpers"}}, {"full", {"a", "b", "helpers"}}}}};
  }
  ScratchDir dir_{"pack-test"};
};

TEST_F(PackFiles, RendersVariantsDeterministicallyWithTheHeaderFenced) {
  Manifest(Good());
  Pack p = LoadPackManifest(dir_.path(), "sm_90a");
  EXPECT_EQ(p.VariantNames(), (std::vector<std::string>{"none", "base", "full"}));
  EXPECT_EQ(p.Render("none"), "");
  std::string base = p.Render("base"), full = p.Render("full");
  EXPECT_EQ(base, p.Render("base"));
  EXPECT_NE(base.find("alpha"), std::string::npos);
  EXPECT_EQ(base.find("Part B"), std::string::npos);
  EXPECT_NE(full.find("Part B"), std::string::npos);
  EXPECT_NE(full.find("A note."), std::string::npos);
  EXPECT_NE(full.find("## Helper header `h.cuh`\n\nCopy what you need.\n\n```cuda\n#pragma once"),
            std::string::npos)
      << full;
  EXPECT_THROW(p.Render("base+gemm"), Error);
  EXPECT_EQ(LoadPack(dir_.path(), "sm_90a", "full"), full);
  EXPECT_EQ(LoadPack(dir_.path(), "sm_100a", "none"), "");
  EXPECT_THROW(LoadPack(dir_.path(), "sm_100a", "full"), Error);  // no pack: said, not skipped
}

TEST_F(PackFiles, ManifestErrorsNameTheProblem) {
  struct Case {
    std::function<void(json&)> edit;
    std::string expect;
  };
  std::vector<Case> cases = {
      {[](json& j) { j["parts"]["a"] = "parts/missing.md"; }, "no file parts/missing.md"},
      {[](json& j) {
         j["variants"]["base"] = {"a", "zzz"};
       },
       "unknown part 'zzz'"},
      {[](json& j) { j["variants"].erase("full"); }, "no 'full' variant"},
      {[](json& j) { j["variants"]["none"] = {"a"}; }, "implicit"},
      {[](json& j) { j["arch"] = "sm_100a"; }, "the folder says sm_90a"},
      {[](json& j) { j.erase("hardware_verified"); }, "malformed"},
  };
  for (const auto& c : cases) {
    json j = Good();
    c.edit(j);
    Manifest(j);
    try {
      LoadPackManifest(dir_.path(), "sm_90a");
      ADD_FAILURE() << "accepted: " << j.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << e.what();
    }
  }
}

TEST_F(PackFiles, InlinesOnlyThePacksHeadersAndFindsCompilableBlocks) {
  Manifest(Good());
  Pack p = LoadPackManifest(dir_.path(), "sm_90a");
  std::string src =
      "#include <cuda.h>\n#include \"h.cuh\"  // helpers\nint x;\n#include \"other.h\"\n";
  std::string out = InlinePackHeaders(src, p);
  EXPECT_NE(out.find("#include <cuda.h>\n"), std::string::npos);
  EXPECT_NE(out.find("int helper();"), std::string::npos);
  EXPECT_EQ(out.find("#include \"h.cuh\""), std::string::npos);
  EXPECT_NE(out.find("#include \"other.h\""), std::string::npos);
  EXPECT_NE(out.find("int x;"), std::string::npos);
  auto blocks = CompilableBlocks(ReadFile(dir_.File("sm_90a/parts/b.md")));
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0], "__global__ void k() {}\n");
}

// --- the packs we ship ---

std::string CodeName(const std::string& arch) { return "compute_" + arch.substr(3); }

CommandResult Nvcc(const std::string& arch, const std::string& include_dir,
                   const std::string& source, const std::string& object) {
  return RunCommand(
      {FindNvcc(""), "-std=c++17", "-gencode", "arch=" + CodeName(arch) + ",code=" + arch, "-I",
       include_dir, "-c", "-o", object, source},
      300s);
}

TEST(ShippedPacks, EveryVariantRendersAndTheFullHopperPackIsTwentyToThirtyThousandTokens) {
  std::vector<std::string> archs = PackArchs(DefaultPacksDir());
  EXPECT_NE(std::find(archs.begin(), archs.end(), "sm_90a"), archs.end());
  EXPECT_NE(std::find(archs.begin(), archs.end(), "sm_100a"), archs.end());
  for (const std::string& arch : archs) {
    Pack p = LoadPackManifest(DefaultPacksDir(), arch);
    for (const char* v :
         {"none", "base", "base+gemm", "base+attention-fwd", "base+attention-bwd", "full"})
      EXPECT_NO_THROW(p.Render(v)) << arch << " " << v;
    size_t full = p.Render("full").size(), base = p.Render("base").size();
    EXPECT_LT(base, full) << arch;
    std::printf("%s: full %zu chars (~%ld tokens), base %zu chars\n", arch.c_str(), full,
                EstimatedTokens(full), base);
    if (arch == "sm_90a") {
      EXPECT_GE(EstimatedTokens(full), 20000);
      EXPECT_LE(EstimatedTokens(full), 30000);
    }
    if (arch == "sm_100a") {  // not run on the chip, and the pack says so
      EXPECT_FALSE(p.hardware_verified);
      EXPECT_NE(p.Render("full").find("not"), std::string::npos);
    }
  }
}

TEST(ShippedPacks, EveryCompilableBlockAndHeaderCompilesForItsArchitecture) {
  ScratchDir dir("pack-compile");
  int compiled = 0;
  for (const std::string& arch : PackArchs(DefaultPacksDir())) {
    Pack p = LoadPackManifest(DefaultPacksDir(), arch);
    std::string include = p.dir + "/include";
    for (const auto& [name, path] : p.Headers()) {
      std::string tu = dir.File(arch + "-" + name + ".cu");
      WriteFileAtomic(tu, "#include \"" + name + "\"\n");
      CommandResult r = Nvcc(arch, include, tu, dir.File("h.o"));
      EXPECT_EQ(r.exit.code, 0) << arch << " " << name << ":\n" << r.output;
      ++compiled;
    }
    for (const auto& part : p.parts) {
      if (part.header) continue;
      auto blocks = CompilableBlocks(ReadFile(p.dir + "/" + part.file));
      for (size_t k = 0; k < blocks.size(); ++k) {
        std::string tu = dir.File(arch + "-" + part.name + "-" + std::to_string(k) + ".cu");
        WriteFileAtomic(tu, blocks[k]);
        CommandResult r = Nvcc(arch, include, tu, dir.File("b.o"));
        EXPECT_EQ(r.exit.code, 0) << arch << " " << part.file << " block " << k + 1 << ":\n"
                                  << blocks[k] << "\n"
                                  << r.output;
        ++compiled;
      }
    }
  }
  std::printf("%d translation units compiled\n", compiled);
  EXPECT_GE(compiled, 6);
}

TEST(ShippedPacks, EachExampleInlinedBuildsWithTheArchitecturesInstructions) {
  ScratchDir dir("pack-examples");
  int examples = 0;
  for (const std::string& arch : PackArchs(DefaultPacksDir())) {
    Pack p = LoadPackManifest(DefaultPacksDir(), arch);
    for (const auto& ex : p.examples) {
      std::string out = dir.File(arch + "-example.cu");
      // Through the CLI, as a user inlines before `ptxbench eval`.
      CommandResult in = RunCommand({std::getenv("PTXBENCH_BIN"), "pack", "inline",
                                     p.dir + "/" + ex.file, "--arch", arch, "-o", out},
                                    60s);
      ASSERT_EQ(in.exit.code, 0) << in.output;
      EXPECT_EQ(ReadFile(out).find("#include \"ptxbench_"), std::string::npos);
      CommandResult r = RunCommand({std::getenv("PTXBENCH_BIN"), "inspect", out, "--arch", arch,
                                    "--json", "--cache-dir", dir.File("cache")},
                                   600s);
      ASSERT_EQ(r.exit.code, 0) << r.output;
      json j = json::parse(r.output);
      const json& totals = j["totals"];
      if (arch == "sm_90a") {
        EXPECT_GT(totals.value("gmma", 0), 0) << ex.file << " " << totals.dump();
        EXPECT_GT(totals.value("tma", 0), 0) << ex.file << " " << totals.dump();
      } else {
        EXPECT_GT(totals.value("tcgen05", 0), 0) << ex.file << " " << totals.dump();
      }
      ++examples;
    }
  }
  EXPECT_GE(examples, 2);
}

// The Hopper positive control of the GEMM controls is the pack's example, inlined: what the
// pack teaches is what controls_gpu_test and pack_gpu_test prove on the chip. An edit of the
// example or the header without regenerating the control
// (`ptxbench pack inline packs/sm_90a/examples/gemm_ws_tma_wgmma.cu --arch sm_90a
//  -o controls/gemm/pack_ws_tma_wgmma.cu`) fails here.
TEST(ShippedPacks, TheHopperGemmControlIsThePacksExampleInlined) {
  Pack p = LoadPackManifest(DefaultPacksDir(), "sm_90a");
  std::string example = p.dir + "/examples/gemm_ws_tma_wgmma.cu";
  std::string control =
      std::string(std::getenv("PTXBENCH_SOURCE_DIR")) + "/controls/gemm/pack_ws_tma_wgmma.cu";
  EXPECT_EQ(InlinePackHeaders(ReadFile(example), p), ReadFile(control))
      << "regenerate " << control << " from " << example;
}

}  // namespace
}  // namespace ptxbench
