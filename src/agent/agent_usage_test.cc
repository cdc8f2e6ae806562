// The tokens a coding agent's CLI reports (agent_usage.h), in each CLI's format.
#include "agent/agent_usage.h"

#include <gtest/gtest.h>

#include <fstream>

#include "common/files.h"

namespace ptxbench {
namespace {

TEST(AgentUsage, CodexTurnsAddUpTheirInputAndOutput) {
  AgentUsage u;
  EXPECT_FALSE(u.reported());
  u.Feed(R"({"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":800,"output_tokens":50}})");
  u.Feed(R"({"type":"turn.completed","usage":{"input_tokens":2000,"cached_input_tokens":1900,"output_tokens":70}})");
  EXPECT_TRUE(u.reported());
  EXPECT_EQ(u.tokens(), 3120);  // cached tokens are part of the input, not added again
}

TEST(AgentUsage, ClaudeMessagesCountOnceAndTheSessionTotalWhenLarger) {
  AgentUsage u;
  const char* block =
      R"({"type":"assistant","message":{"id":"msg_1","usage":{"input_tokens":10,"cache_creation_input_tokens":500,"cache_read_input_tokens":2000,"output_tokens":40}}})";
  u.Feed(block);
  u.Feed(block);  // a second content block of the same message
  EXPECT_EQ(u.tokens(), 2550);
  // A total smaller than what was read (an agent printing a line of its own) undoes nothing.
  u.Feed(R"({"type":"result","usage":{"input_tokens":1,"output_tokens":1}})");
  EXPECT_EQ(u.tokens(), 2550);
  u.Feed(R"({"type":"result","usage":{"input_tokens":20,"cache_read_input_tokens":4000,"output_tokens":90}})");
  EXPECT_EQ(u.tokens(), 4110);
}

TEST(AgentUsage, OtherLinesAreIgnored) {
  AgentUsage u;
  u.Feed("usage: ptxbench mcp --bridge SOCKET");
  u.Feed(R"({"type":"item.completed","usage":{"input_tokens":99}})");
  u.Feed(R"({"type":"turn.completed","usage":{"input_tokens":-5,"output_tokens":"many"}})");
  EXPECT_EQ(u.tokens(), 0);
}

TEST(AgentLogFollower, ReadsOnlyWhatWasAppendedAndWholeLines) {
  ScratchDir dir("agent-usage");
  const std::string log = dir.File("agent.log");
  AgentUsage u;
  AgentLogFollower f(log);
  f.Update(&u);  // no file yet
  std::ofstream out(log);
  out << "starting\n{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":100,";
  out.flush();
  f.Update(&u);
  EXPECT_EQ(u.tokens(), 0);  // half a line
  out << "\"output_tokens\":5}}\n";
  out.flush();
  f.Update(&u);
  f.Update(&u);  // nothing new: not counted twice
  EXPECT_EQ(u.tokens(), 105);
}

}  // namespace
}  // namespace ptxbench
