// `ptxbench run` and its run folder: no run mixes with another, none is overwritten silently
// (refused before any model is asked or kernel judged: no GPU needed); `doctor` and `baseline`
// on a machine without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/subprocess.h"
#include "inspect/sass.h"

namespace ptxbench {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

CommandResult PtxbenchRun(std::vector<std::string> args) {
  args.insert(args.begin(), {std::getenv("PTXBENCH_BIN"), "run"});
  return RunCommand(args, 120s);
}

TEST(RunCli, ResumeOfAMissingFolderIsRefused) {
  ScratchDir dir("ptxbench-run-cli");
  CommandResult r = PtxbenchRun({"--out", dir.File("nothing"), "--resume"});
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("nothing to resume"), std::string::npos) << r.output;
  EXPECT_FALSE(FileExists(dir.File("nothing")));
}

TEST(RunCli, AFinishedRunIsNotOverwrittenWithoutTheFlag) {
  ScratchDir dir("ptxbench-run-cli");
  std::string out = dir.File("run");
  MakeDirs(out + "/trajectories");
  WriteFileAtomic(out + "/run.json", R"({"model": {"name": "someone-else"}})");
  WriteFileAtomic(out + "/trajectories/t0.json", "{}");
  CommandResult r = PtxbenchRun({"--out", out});
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("--overwrite"), std::string::npos) << r.output;
  EXPECT_TRUE(FileExists(out + "/trajectories/t0.json"));
  // --overwrite and --resume exclude each other.
  r = PtxbenchRun({"--out", out, "--overwrite", "--resume"});
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_TRUE(FileExists(out + "/trajectories/t0.json"));
}

TEST(RunCli, ResumingAnotherModelsRunIsRefusedNamingTheDifference) {
  ScratchDir dir("ptxbench-run-cli");
  std::string out = dir.File("run");
  MakeDirs(out + "/trajectories");
  WriteFileAtomic(out + "/run.json", R"({"model": {"name": "someone-else"}, "pack": "full"})");
  CommandResult r = PtxbenchRun({"--out", out, "--resume", "--quiet"});
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("is another run: model differs"), std::string::npos) << r.output;
  json kept = json::parse(ReadFile(out + "/run.json"));
  EXPECT_EQ(kept["model"]["name"], "someone-else") << "run.json was rewritten";
}

TEST(RunCli, ABadNumberIsRefusedAtParseTime) {
  for (std::vector<std::string> args : {std::vector<std::string>{"--turns", "0"},
                                        {"--target-speedup", "-1"},
                                        {"--trajectories", "0"},
                                        {"--context", "some"},
                                        {"--timeout", "0"}}) {
    CommandResult r = PtxbenchRun(args);
    EXPECT_EQ(r.exit.code, 2) << args[0] << ": " << r.output;
  }
}

TEST(RunCli, AFolderOfOtherFilesIsNeverARunFolder) {
  ScratchDir dir("ptxbench-run-cli");
  WriteFileAtomic(dir.File("notes.txt"), "mine");
  CommandResult r = PtxbenchRun({"--out", dir.path(), "--overwrite"});
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_TRUE(FileExists(dir.File("notes.txt")));
}

}  // namespace
}  // namespace ptxbench

namespace ptxbench {
namespace {

nlohmann::json Doctor(int* exit_code) {
  CommandResult r = RunCommand({std::getenv("PTXBENCH_BIN"), "doctor", "--json"}, 120s);
  *exit_code = r.exit.code;
  return nlohmann::json::parse(r.output, nullptr, false);
}

// `doctor` reports the tools the pipeline will use and fails when a layer cannot run.
TEST(MachineCli, DoctorTellsTheTruth) {
  int code = -1;
  nlohmann::json d = Doctor(&code);
  ASSERT_TRUE(d.is_object()) << "doctor --json printed no JSON";
  EXPECT_EQ(d["cuobjdump"].value("found", false), FindCuobjdump().has_value());
  bool layers = d["nvcc"].value("found", false) && d["gpu"].value("found", false) &&
                d["cuobjdump"].value("found", false);
  EXPECT_EQ(code, layers ? 0 : 1);
  if (!d["gpu"].value("found", false)) {
    std::string why = d["gpu"].value("reason", "");
    EXPECT_FALSE(why.empty());
    EXPECT_EQ(why.find("insufficient"), std::string::npos)
        << "blames the driver's version: " << why;
  }
}

TEST(MachineCli, BaselineWithoutAGpuIsTheEnvironmentsFault) {
  int code = -1;
  if (Doctor(&code)["gpu"].value("found", false)) GTEST_SKIP() << "a GPU is present";
  CommandResult r =
      RunCommand({std::getenv("PTXBENCH_BIN"), "baseline", "--task", "gemm_n7168_k5120"}, 120s);
  EXPECT_EQ(r.exit.code, 3) << r.output;
  EXPECT_NE(r.output.find("no GPU"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ptxbench
