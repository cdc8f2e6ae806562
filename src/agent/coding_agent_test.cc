#include "agent/coding_agent.h"

#include <unistd.h>

#include <chrono>
#include <future>
#include <string>

#include <gtest/gtest.h>

#include "agent/mcp_bridge.h"
#include "common/error.h"

namespace ptxbench {
namespace {

using nlohmann::json;
using std::chrono::seconds;

std::string SocketPath(const char* name) {
  return "/tmp/ptxbench-bridge-test-" + std::to_string(::getpid()) + "-" + name + ".sock";
}

TEST(WorkspaceFiles, TellTheAgentItsBudgetAndStartItsServer) {
  CodingAgentOptions o;
  o.ptxbench = "/opt/ptxbench";
  const auto files =
      WorkspaceFiles(o, {{"system", "RULES"}, {"user", "THE TASK"}}, 5,
                     {"mcp", "--bridge", "/tmp/s.sock"}, {{"PTXBENCH_MCP_TOKEN", "t0"}});
  for (const char* name : {"AGENTS.md", "CLAUDE.md", "TASK.md", "PROMPT.md", "kernel.cu",
                           ".mcp.json", ".codex/config.toml"})
    EXPECT_TRUE(files.count(name)) << name;
  EXPECT_EQ(files.size(), 7u);
  EXPECT_NE(files.at("AGENTS.md").find("you have 5."), std::string::npos);
  EXPECT_NE(files.at("AGENTS.md").find("RULES"), std::string::npos);
  EXPECT_EQ(files.at("TASK.md"), "THE TASK\n");
  EXPECT_NE(files.at("PROMPT.md").find("5 evaluations"), std::string::npos);
  const json server = json::parse(files.at(".mcp.json"))["mcpServers"]["ptxbench"];
  EXPECT_EQ(server["command"], "/opt/ptxbench");
  EXPECT_EQ(server["args"], json({"mcp", "--bridge", "/tmp/s.sock"}));
  EXPECT_EQ(server["env"]["PTXBENCH_MCP_TOKEN"], "t0");
  EXPECT_EQ(files.at(".codex/config.toml"),
            "[mcp_servers.ptxbench]\ncommand = \"/opt/ptxbench\"\n"
            "args = [\"mcp\", \"--bridge\", \"/tmp/s.sock\"]\n\n"
            "[mcp_servers.ptxbench.env]\nPTXBENCH_MCP_TOKEN = \"t0\"\n");
}

TEST(McpBridge, AnswersItsTokenOnlyAndOneKernelAtATime) {
  const std::string path = SocketPath("one");
  const std::string token = NewBridgeToken();
  EXPECT_EQ(token.size(), 32u);
  EXPECT_NE(token, NewBridgeToken());
  auto server =
      std::make_unique<BridgeServer>(path, token, json{{"task", "t"}, {"evaluations", 3}});
  // Another token gets nothing but the refusal.
  const json refused = BridgeCall(path, "not-it", {{"op", "info"}}, seconds(10));
  EXPECT_EQ(refused.value("error", false), true);
  EXPECT_FALSE(refused.contains("task"));
  EXPECT_EQ(BridgeCall(path, token, {{"op", "info"}}, seconds(10))["evaluations"], 3);

  // A kernel waits for the run's answer; a second one meanwhile is refused.
  auto first = std::async(std::launch::async, [&] {
    return BridgeCall(path, token, {{"op", "evaluate"}, {"source", "K1"}}, seconds(30));
  });
  const auto until = std::chrono::steady_clock::now() + seconds(10);
  EXPECT_EQ(server->NextKernel(until, {}), "K1");
  const json second = BridgeCall(path, token, {{"op", "evaluate"}, {"source", "K2"}}, seconds(10));
  EXPECT_EQ(second.value("error", false), true);
  EXPECT_NE(second.value("text", "").find("in flight"), std::string::npos);
  server->SetEvaluationsLeft(2);
  EXPECT_TRUE(server->Answer({{"text", "feedback 1"}}));
  EXPECT_EQ(first.get()["text"], "feedback 1");
  EXPECT_FALSE(server->Answer({{"text", "nobody asked"}}));
  EXPECT_EQ(BridgeCall(path, token, {{"op", "info"}}, seconds(10))["evaluations"], 2);

  // Nothing handed in: NextKernel gives up at its deadline or when told to stop.
  EXPECT_FALSE(server->NextKernel(std::chrono::steady_clock::now(), {}).has_value());
  EXPECT_FALSE(server->NextKernel(until, [] { return true; }).has_value());

  // After the trajectory the socket is gone: the token reaches nothing.
  server.reset();
  try {
    BridgeCall(path, token, {{"op", "info"}}, seconds(5));
    ADD_FAILURE() << "the run's socket answered after the run";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kEnvironment);
  }
}

}  // namespace
}  // namespace ptxbench
