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
          {"tasks_dir", "/src/ptxbench/tasks"},
          {"definitions",
           {{"gemm_n7168_k5120",
             {{"definition_sha256", "d1"}, {"workload", "w"}, {"workload_sha256", "w1"}}}}},
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
          {"baseline", "flashinfer@0.6.14"},
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
  const std::pair<const char*, json> changes[] = {
      {"/model/name", "m2"},
      {"/model/temperature", 0.7},
      {"/tasks", json::array()},
      {"/workload", "M=93"},
      {"/tasks_dir", "/elsewhere"},
      {"/definitions/gemm_n7168_k5120/definition_sha256", "d2"},
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
      {"/baseline", "cudnn"},
      {"/baseline", "flashinfer@0.7.4"}};
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

// Issue 38: a run timed against one FlashInfer release is not resumed against another. One
// recorded before the release was ("flashinfer") was timed against 0.7.4, the only one then.
TEST(RunIdentity, AFlashInferRunKeepsItsRelease) {
  json before = ARun(), now = ARun();
  now["baseline"] = "flashinfer@0.7.4";
  auto diff = RunIdentityDifference(before, now);
  ASSERT_TRUE(diff);
  EXPECT_EQ(
      *diff,
      "baseline differs: the run has \"flashinfer@0.6.14\", this command \"flashinfer@0.7.4\"");
  before["baseline"] = "flashinfer";
  EXPECT_FALSE(RunIdentityDifference(before, now));
  now["baseline"] = "flashinfer@0.6.14";
  diff = RunIdentityDifference(before, now);
  ASSERT_TRUE(diff);
  EXPECT_NE(diff->find("baseline differs: the run has \"flashinfer\""), std::string::npos) << *diff;
}

// Issue 38: `--task b --task a` is the run of `--task a --task b` (trajectory ids come from the
// task's name); another set of tasks is another run.
TEST(RunIdentity, TheOrderOfTheTasksDoesNotMatter) {
  json before = ARun(), now = ARun();
  before["tasks"] = {"gemm_n7168_k5120", "mha_with_lse_d64"};
  now["tasks"] = {"mha_with_lse_d64", "gemm_n7168_k5120"};
  EXPECT_FALSE(RunIdentityDifference(before, now));
  now["tasks"] = {"mha_with_lse_d64"};
  auto diff = RunIdentityDifference(before, now);
  ASSERT_TRUE(diff);
  EXPECT_EQ(diff->rfind("tasks differs", 0), 0u) << *diff;
}

// The refusal names the one field that differs, not the block around it.
TEST(RunIdentity, TheDeepestDifferingFieldIsNamed) {
  json now = ARun();
  now["model"]["temperature"] = 0.7;
  auto diff = RunIdentityDifference(ARun(), now);
  ASSERT_TRUE(diff);
  EXPECT_EQ(*diff, "model/temperature differs: the run has 0.2, this command 0.7");
  // Another model altogether (other keys): the whole model block, both in full.
  now = ARun();
  now["model"] = {{"name", "replay"}, {"provider", "replay"}, {"file", "default.json"}};
  diff = RunIdentityDifference(ARun(), now);
  ASSERT_TRUE(diff);
  EXPECT_NE(diff->find("model differs: the run has " + ARun()["model"].dump() + ", this command " +
                       now["model"].dump()),
            std::string::npos)
      << *diff;
}

// Issue 38: the values were cut at 120 characters, so two long ones that differ near their
// end (a path, a system prompt) read the same. Both are shown in full.
TEST(RunIdentity, BothLongValuesAreShownInFull) {
  std::string stem = "/data/" + std::string(300, 'x') + "/tasks-";
  json before = ARun(), now = ARun();
  before["tasks_dir"] = stem + "old";
  now["tasks_dir"] = stem + "new";
  auto diff = RunIdentityDifference(before, now);
  ASSERT_TRUE(diff);
  EXPECT_EQ(*diff,
            "tasks_dir differs: the run has \"" + stem + "old\", this command \"" + stem + "new\"");
}

// A huge value is bounded: the stretch around where the two differ, with a note saying which
// characters of how many are shown.
TEST(RunIdentity, AHugeValueIsShownWhereItDiffersWithANote) {
  std::string prompt(100000, 'p');
  json before = ARun(), now = ARun();
  before["model"]["system"] = prompt + "OLD" + prompt;
  now["model"]["system"] = prompt + "NEW" + prompt;
  auto diff = RunIdentityDifference(before, now);
  ASSERT_TRUE(diff);
  EXPECT_EQ(diff->rfind("model/system differs", 0), 0u);
  EXPECT_LT(diff->size(), 6000u);
  EXPECT_NE(diff->find("OLD"), std::string::npos) << diff->substr(0, 300);
  EXPECT_NE(diff->find("NEW"), std::string::npos);
  EXPECT_NE(diff->find("of 200005)"), std::string::npos) << diff->substr(diff->size() - 300);
}

Definition ATask() {
  Definition d;
  d.name = "mha_with_lse_d64";
  d.family = "attention";
  d.constant_axes = {{"causal", 0}, {"D", 64}};
  d.variable_axes = {"S"};
  d.workloads = {{"w1", {{"S", 1024}}, true}, {"w2", {{"S", 4096}}, false}};
  return d;
}

// Issue 38: a definition changed between two sittings (causal 0 -> 1) changes the identity;
// the refusal names the task and says what the hash is of. A workload added beside the one run
// changes nothing; the run's own workload changed does.
TEST(RunIdentity, EachDefinitionAndWorkloadUsedIsPartOfTheIdentity) {
  Definition d = ATask();
  auto record = [](const Definition& def, const std::string& workload) {
    return DefinitionsRecord({{&def, &def.FindWorkload(workload)}});
  };
  json before = ARun(), now = ARun();
  before["definitions"] = record(d, "w1");
  d.workloads.push_back({"w3", {{"S", 8192}}, false});
  now["definitions"] = record(d, "w1");
  EXPECT_FALSE(RunIdentityDifference(before, now));

  Definition causal = ATask();
  causal.constant_axes["causal"] = 1;
  now["definitions"] = record(causal, "w1");
  auto diff = RunIdentityDifference(before, now);
  ASSERT_TRUE(diff);
  EXPECT_EQ(
      diff->rfind(
          "definitions/mha_with_lse_d64/definition_sha256 differs: the run has \"" +
              before["definitions"]["mha_with_lse_d64"]["definition_sha256"].get<std::string>() +
              "\", this command \"" +
              now["definitions"]["mha_with_lse_d64"]["definition_sha256"].get<std::string>() + "\"",
          0),
      0u)
      << *diff;
  EXPECT_NE(diff->find("definition or workload changed"), std::string::npos) << *diff;

  Definition other_axes = ATask();
  other_axes.workloads[0].axes["S"] = 2048;
  now["definitions"] = record(other_axes, "w1");
  diff = RunIdentityDifference(before, now);
  ASSERT_TRUE(diff);
  EXPECT_EQ(diff->rfind("definitions/mha_with_lse_d64/workload_sha256 differs", 0), 0u) << *diff;
  // Where the definitions come from is part of it too.
  now = before;
  now["tasks_dir"] = "/elsewhere/tasks";
  diff = RunIdentityDifference(before, now);
  ASSERT_TRUE(diff);
  EXPECT_EQ(diff->rfind("tasks_dir differs", 0), 0u) << *diff;
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
