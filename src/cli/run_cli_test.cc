// `ptxbench run` and its run folder: no run mixes with another, none is overwritten silently
// (refused before any model is asked or kernel judged: no GPU needed); `doctor` and `baseline`
// on a machine without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

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
  // --resume alone takes the run's model back: one the models file does not have.
  CommandResult r = PtxbenchRun({"--out", out, "--resume", "--quiet"});
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("no model 'someone-else'"), std::string::npos) << r.output;
  // Another author named on the command line: another run.
  r = PtxbenchRun({"--out", out, "--resume", "--quiet", "--replay", "agent/replay/default.json"});
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("is another run: model differs"), std::string::npos) << r.output;
  json kept = json::parse(ReadFile(out + "/run.json"));
  EXPECT_EQ(kept["model"]["name"], "someone-else") << "run.json was rewritten";
}

// A copy of the bundled tasks under `dir`, whose definitions a test may change between two
// sittings of a run.
std::string CopyOfTheTasks(const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::filesystem::copy(std::string(std::getenv("PTXBENCH_SOURCE_DIR")) + "/tasks", dir,
                        std::filesystem::copy_options::recursive);
  return std::filesystem::weakly_canonical(dir).string();
}

// A run of the bundled replay's first turn (a kernel that does not compile: judged at once,
// without a GPU) on a copy of the tasks; the test's `more` options after.
CommandResult AOneTurnRun(const std::string& out, const std::string& tasks,
                          std::vector<std::string> more) {
  std::vector<std::string> args = {"--out", out, "--quiet", "--turns", "1", "--tasks-dir", tasks};
  args.insert(args.end(), more.begin(), more.end());
  return PtxbenchRun(args);
}

void ReplaceInFile(const std::string& file, const std::string& from, const std::string& to) {
  std::string text = ReadFile(file);
  size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from << " not in " << file;
  WriteFileAtomic(file, text.replace(at, from.size(), to));
}

// Issue 38: every option had to be typed again. `--resume --out DIR` alone continues the run
// with the options run.json recorded; one given again must match, and one that differs is
// refused naming it.
TEST(RunCli, ResumeAloneContinuesWithTheRecordedOptions) {
  ScratchDir dir("ptxbench-run-cli");
  std::string out = dir.File("run"), tasks = CopyOfTheTasks(dir.File("tasks"));
  CommandResult r = AOneTurnRun(out, tasks,
                                {"--trajectories", "2", "--context", "condensed", "--timeout", "30",
                                 "--task", "gemm_n7168_k5120", "--task", "gemm_n128_k2048"});
  ASSERT_EQ(r.exit.code, 0) << r.output;
  r = PtxbenchRun({"--resume", "--out", out, "--quiet"});
  EXPECT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("4 trajectories (4 finished"), std::string::npos) << r.output;
  json run = json::parse(ReadFile(out + "/run.json"));
  EXPECT_EQ(run["resumed_at"].size(), 1u) << run.dump();
  EXPECT_EQ(run["tasks_dir"], tasks);
  EXPECT_EQ(run["context"], "condensed");
  EXPECT_EQ(run["timeout"], 30);
  EXPECT_EQ(run["turns"], 1);
  // Given again and the same: fine. Given and different: refused, nothing rewritten.
  r = PtxbenchRun({"--resume", "--out", out, "--quiet", "--context", "condensed"});
  EXPECT_EQ(r.exit.code, 0) << r.output;
  r = PtxbenchRun({"--resume", "--out", out, "--quiet", "--turns", "2"});
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("is another run: turns differs: the run has 1, this command 2"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(json::parse(ReadFile(out + "/run.json"))["resumed_at"].size(), 2u);
}

// Issue 38: a definition changed between two sittings (causal 0 -> 1) was resumed, and one
// trajectory then held turns judged under both. Refused, naming the task's definition.
TEST(RunCli, AChangedDefinitionRefusesTheResumeNamingIt) {
  ScratchDir dir("ptxbench-run-cli");
  std::string out = dir.File("run"), tasks = CopyOfTheTasks(dir.File("tasks"));
  CommandResult r = AOneTurnRun(out, tasks, {"--task", "mha_with_lse_d64"});
  ASSERT_EQ(r.exit.code, 0) << r.output;
  std::string trajectory = ReadFile(out + "/trajectories/mha_with_lse_d64-0.json");
  ReplaceInFile(tasks + "/definitions/mha_with_lse_d64.json", "\"causal\": 0", "\"causal\": 1");
  // The command of the first sitting typed again, as before --resume read the options back.
  r = PtxbenchRun({"--resume", "--out", out, "--quiet", "--turns", "1", "--tasks-dir", tasks,
                   "--task", "mha_with_lse_d64"});
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("is another run: definitions/mha_with_lse_d64/definition_sha256 differs"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(ReadFile(out + "/trajectories/mha_with_lse_d64-0.json"), trajectory);
  // Put back, the same run again.
  ReplaceInFile(tasks + "/definitions/mha_with_lse_d64.json", "\"causal\": 1", "\"causal\": 0");
  r = PtxbenchRun({"--resume", "--out", out, "--quiet"});
  EXPECT_EQ(r.exit.code, 0) << r.output;
}

// Issue 38: `--task b --task a` resuming `--task a --task b` was refused as another run.
TEST(RunCli, TheOrderOfTheTasksDoesNotMatter) {
  ScratchDir dir("ptxbench-run-cli");
  std::string out = dir.File("run"), tasks = CopyOfTheTasks(dir.File("tasks"));
  CommandResult r =
      AOneTurnRun(out, tasks, {"--task", "gemm_n7168_k5120", "--task", "gemm_n128_k2048"});
  ASSERT_EQ(r.exit.code, 0) << r.output;
  r = PtxbenchRun({"--resume", "--out", out, "--quiet", "--task", "gemm_n128_k2048", "--task",
                   "gemm_n7168_k5120"});
  EXPECT_EQ(r.exit.code, 0) << r.output;
  r = PtxbenchRun({"--resume", "--out", out, "--quiet", "--task", "gemm_n128_k2048"});
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("tasks differs"), std::string::npos) << r.output;
}

// Issue 38: the refusal cut both values at 120 characters, so two long tasks folders read the
// same. Both are in it in full.
TEST(RunCli, TheRefusalShowsBothLongValuesInFull) {
  ScratchDir dir("ptxbench-run-cli");
  std::string deep = dir.File(std::string(200, 'd'));
  std::string out = dir.File("run"), tasks = CopyOfTheTasks(deep + "/tasks-one"),
              other = CopyOfTheTasks(deep + "/tasks-two");
  CommandResult r = AOneTurnRun(out, tasks, {});
  ASSERT_EQ(r.exit.code, 0) << r.output;
  r = PtxbenchRun({"--resume", "--out", out, "--quiet", "--turns", "1", "--tasks-dir", other});
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("tasks_dir differs: the run has \"" + tasks + "\", this command \"" +
                          other + "\""),
            std::string::npos)
      << r.output;
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
