#include "agent/run_identity.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "common/files.h"

namespace ptxbench {
namespace {

using nlohmann::json;

json ARun() {
  return {{"model", {{"name", "m1"}, {"provider", "openai"}, {"temperature", 0.2}}},
          {"tasks", {"gemm_n7168_k5120"}},
          {"workload", ""},
          {"trajectories", 2},
          {"turns", 8},
          {"target_speedup", nullptr},
          {"arch", "sm_90a"},
          {"pack", "full"},
          {"pack_info", {{"sha256", "abc"}, {"variant", "full"}}},
          {"context", "full"},
          {"sanitize", "always"},
          {"timing", true},
          {"timeout", 60},
          {"timing_budget", 8.0},
          {"baseline", "flashinfer"},
          {"ptxbench_version", "0.9.0"},
          {"ptxbench_commit", "0123456789ab"},
          {"concurrency", 4}};
}

TEST(RunIdentity, TheSameRunHasNoDifference) {
  json now = ARun();
  now["concurrency"] = 64;  // how fast, not what: not part of the identity
  now["started_at"] = "later";
  EXPECT_FALSE(RunIdentityDifference(ARun(), now));
}

TEST(RunIdentity, EachFieldChangedIsNamed) {
  const std::pair<const char*, json> changes[] = {{"/model/name", "m2"},
                                                  {"/model/temperature", 0.7},
                                                  {"/tasks", json::array()},
                                                  {"/workload", "M=93"},
                                                  {"/trajectories", 3},
                                                  {"/turns", 4},
                                                  {"/target_speedup", 1.5},
                                                  {"/arch", "sm_100a"},
                                                  {"/pack", "none"},
                                                  {"/pack_info/sha256", "x"},
                                                  {"/context", "condensed"},
                                                  {"/sanitize", "never"},
                                                  {"/timing", false},
                                                  {"/timeout", 30},
                                                  {"/timing_budget", 2.0},
                                                  {"/ptxbench_version", "1"},
                                                  {"/ptxbench_commit", "ffff"},
                                                  {"/baseline", "cudnn"}};
  for (const auto& [field, value] : changes) {
    json now = ARun();
    now[json::json_pointer(field)] = value;
    auto diff = RunIdentityDifference(ARun(), now);
    ASSERT_TRUE(diff) << field;
    std::string top = std::string(field).substr(1, std::string(field).find('/', 1) - 1);
    EXPECT_EQ(diff->rfind(top, 0), 0u) << *diff;
  }
}

TEST(RunIdentity, AMissingFieldIsADifferenceButAnOldRunMayLackTheCommit) {
  json before = ARun();
  before.erase("ptxbench_commit");
  EXPECT_FALSE(RunIdentityDifference(before, ARun()));
  before.erase("sanitize");
  auto diff = RunIdentityDifference(before, ARun());
  ASSERT_TRUE(diff);
  EXPECT_NE(diff->find("sanitize differs: the run has none"), std::string::npos) << *diff;
}

// A run from before `--baseline` was timed against cuDNN: resumable with --baseline cudnn,
// not with FlashInfer (its speedups would mix two baselines).
TEST(RunIdentity, ARunWithoutABaselineWasCudnn) {
  json before = ARun();
  before.erase("baseline");
  json now = ARun();
  now["baseline"] = "cudnn";
  EXPECT_FALSE(RunIdentityDifference(before, now));
  auto diff = RunIdentityDifference(before, ARun());
  ASSERT_TRUE(diff);
  EXPECT_NE(diff->find("baseline differs"), std::string::npos) << *diff;
}

TEST(RunFolder, ResumeNeedsARunAndANewRunNeverOverwritesSilently) {
  ScratchDir dir("ptxbench-run-folder");
  std::string run = dir.File("run");
  // --resume on a folder that does not exist.
  EXPECT_THROW(PrepareRunFolder(run, true, false), Error);
  // A new folder: fine.
  EXPECT_NO_THROW(PrepareRunFolder(run, false, false));
  MakeDirs(run + "/trajectories");
  WriteFileAtomic(run + "/run.json", "{}");
  WriteFileAtomic(run + "/trajectories/t.json", "{}");
  // An existing run without --resume or --overwrite.
  try {
    PrepareRunFolder(run, false, false);
    ADD_FAILURE() << "an existing run was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("--overwrite"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(PrepareRunFolder(run, true, false));
  EXPECT_TRUE(FileExists(run + "/trajectories/t.json"));
  // --overwrite empties it.
  EXPECT_NO_THROW(PrepareRunFolder(run, false, true));
  EXPECT_FALSE(FileExists(run + "/run.json"));
  EXPECT_FALSE(FileExists(run + "/trajectories/t.json"));
  // A folder with other files is never a run folder, even with --overwrite.
  std::string other = dir.File("other");
  MakeDirs(other);
  WriteFileAtomic(other + "/notes.txt", "mine");
  EXPECT_THROW(PrepareRunFolder(other, false, true), Error);
  EXPECT_TRUE(FileExists(other + "/notes.txt"));
}

}  // namespace
}  // namespace ptxbench
