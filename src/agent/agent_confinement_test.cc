// The coding agent's confinement policy: its workspace and the system, never the run folder.
#include "agent/agent_confinement.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.h"
#include "common/files.h"

namespace ptxbench {
namespace {

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

class AgentConfinementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ProbeSandbox().landlock_abi == 0) GTEST_SKIP() << "no Landlock here";
    run_ = dir_.File("run");
    workspace_ = run_ + "/workspaces/t-0";
    MakeDirs(workspace_);
  }
  SandboxPolicy Policy(const AgentConfinement& c) {
    return AgentSandboxPolicy(c, run_, workspace_, "/usr/bin/env");
  }
  ScratchDir dir_{"agent-confinement"};
  std::string run_, workspace_;
};

TEST_F(AgentConfinementTest, WritesItsWorkspaceReadsTheSystemAndNotTheRunFolder) {
  AgentConfinement c;
  c.read_paths = {dir_.File("login")};
  SandboxPolicy p = Policy(c);
  EXPECT_TRUE(p.enabled);
  EXPECT_TRUE(p.landlock);
  EXPECT_FALSE(p.namespaces);  // its model is across the network
  EXPECT_TRUE(Has(p.read_paths, "/usr"));
  EXPECT_TRUE(Has(p.read_paths, "/usr/bin/env"));
  EXPECT_TRUE(Has(p.read_paths, dir_.File("login")));
  EXPECT_FALSE(Has(p.read_paths, run_));
  EXPECT_EQ(p.write_paths, std::vector<std::string>{workspace_});
}

TEST_F(AgentConfinementTest, APathThatOpensTheRunFolderIsRefused) {
  AgentConfinement above;
  above.read_paths = {dir_.path()};  // holds the run folder
  EXPECT_THROW(Policy(above), Error);
  AgentConfinement inside;
  inside.write_paths = {run_ + "/evaluations"};
  EXPECT_THROW(Policy(inside), Error);
  AgentConfinement own;  // its own workspace, named again: allowed
  own.write_paths = {workspace_ + "/sub"};
  EXPECT_NO_THROW(Policy(own));
}

TEST_F(AgentConfinementTest, UnconfinedIsNoPolicyAndTheChoiceIsRecorded) {
  AgentConfinement c;
  c.confined = false;
  EXPECT_FALSE(Policy(c).enabled);
  EXPECT_FALSE(AgentConfinementFromJson(ToJson(c)).confined);
  EXPECT_TRUE(AgentConfinementFromJson(nlohmann::json()).confined);  // older runs: confined
}

}  // namespace
}  // namespace ptxbench
