// The command line, end to end: bad input gets one line naming the problem and a non-zero
// exit; nothing is written when the request is bad.
#include <gtest/gtest.h>

#include <cstdlib>

#include "common/files.h"
#include "common/subprocess.h"

#include <nlohmann/json.hpp>

namespace ptxbench {
namespace {

using namespace std::chrono_literals;

std::string Bin() { return std::getenv("PTXBENCH_BIN"); }
std::string Src() { return std::getenv("PTXBENCH_SOURCE_DIR"); }

CommandResult Ptxbench(std::vector<std::string> args) {
  args.insert(args.begin(), Bin());
  return RunCommand(args, 120s);
}

TEST(Cli, TasksListsEveryDefinitionAndShowsOne) {
  CommandResult r = Ptxbench({"tasks"});
  EXPECT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("gemm_n7168_k5120"), std::string::npos);
  EXPECT_NE(r.output.find("headline"), std::string::npos);
  r = Ptxbench({"tasks", "gemm_n7168_k5120"});
  EXPECT_EQ(r.exit.code, 0);
  EXPECT_NE(r.output.find("M=8192"), std::string::npos);
  EXPECT_NE(r.output.find("94920358-01a8-4c5b-9209-3103fd490e94"), std::string::npos);
  EXPECT_NE(r.output.find("extern \"C\" int run("), std::string::npos);
  r = Ptxbench({"tasks", "--family", "gemm", "--json"});
  EXPECT_EQ(r.exit.code, 0);
  auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.size(), 17u);
  r = Ptxbench({"tasks", "--family", "nope"});
  EXPECT_EQ(r.exit.code, 2);
}

struct BadInput {
  std::vector<std::string> args;
  std::string expect;
};

TEST(Cli, BadInputIsOneLineAndExitTwo) {
  ScratchDir dir("cli-test");
  std::string kernel = Src() + "/controls/gemm/naive_correct.cu";
  std::string json = dir.File("out.json");
  std::vector<BadInput> cases = {
      {{"eval", dir.File("missing.cu"), "--task", "gemm_n7168_k5120", "--json", json},
       "missing.cu: no such readable file"},
      {{"eval", dir.path(), "--task", "gemm_n7168_k5120", "--json", json}, "no such readable file"},
      {{"eval", kernel, "--task", "gemm_n7168_k512", "--json", json},
       "did you mean gemm_n7168_k5120"},
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--workload", "M=abc", "--json", json},
       "malformed value for axis M"},
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--workload", "M=100", "--json", json},
       "defines no workload M=100"},
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--workload", "X=1", "--json", json},
       "no axis 'X'"},
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--arch", "sm_80", "--json", json},
       "unknown arch 'sm_80'"},
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--seed", "-3", "--json", json},
       "malformed --seed"},
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--sanitize", "maybe", "--json", json},
       "unknown --sanitize value"},
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--trials", "0", "--json", json},
       "--trials must be"},
      {{"evl"}, "did you mean eval"},
      {{"baseline", "--task", "nope*", "--json", json}, "no task matches 'nope*'"},
      {{"baseline", "--task", "mha_*", "--workload", "S=512", "--all-workloads", "--json", json},
       "exclude each other"},
      {{"baseline", "--task", "mha_with_lse_d128", "--workload", "S=100", "--json", json},
       "defines no workload S=100"},
  };
  for (const auto& c : cases) {
    CommandResult r = Ptxbench(c.args);
    EXPECT_EQ(r.exit.kind, ExitKind::kExited);
    EXPECT_EQ(r.exit.code, 2) << c.expect << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << r.output;
    size_t lines = 0;
    for (char ch : r.output) lines += ch == '\n';
    EXPECT_EQ(lines, 1u) << r.output;
    EXPECT_FALSE(FileExists(json)) << "a bad request wrote " << json;
  }
}

TEST(Cli, NoNvccIsAOneLineError) {
  ScratchDir dir("cli-nvcc");
  std::string kernel = Src() + "/controls/gemm/naive_correct.cu";
  std::string json = dir.File("out.json");
  std::vector<std::string> args = {Bin(),    "eval", kernel, "--task", "gemm_n7168_k5120",
                                   "--json", json};
  CommandResult r = RunCommand(args, 60s, {{"PTXBENCH_NVCC", "/nonexistent/nvcc"}});
  EXPECT_EQ(r.exit.code, 3) << r.output;
  EXPECT_EQ(r.output, "ptxbench: nvcc not found at /nonexistent/nvcc ($PTXBENCH_NVCC)\n");
  EXPECT_FALSE(FileExists(json));
}

}  // namespace
}  // namespace ptxbench
