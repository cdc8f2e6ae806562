#include "common/subprocess.h"

#include <gtest/gtest.h>

#include <csignal>

#include "common/files.h"

namespace ptxbench {
namespace {

using namespace std::chrono_literals;

TEST(Subprocess, CapturesOutputAndExitCode) {
  CommandResult r = RunCommand({"/bin/sh", "-c", "echo hello; echo oops >&2; exit 3"}, 10s);
  EXPECT_EQ(r.exit.kind, ExitKind::kExited);
  EXPECT_EQ(r.exit.code, 3);
  EXPECT_NE(r.output.find("hello"), std::string::npos);
  EXPECT_NE(r.output.find("oops"), std::string::npos);
  EXPECT_EQ(r.exit.Describe(), "exit code 3");
}

TEST(Subprocess, ReportsTheSignalThatKilledTheChild) {
  CommandResult r = RunCommand({"/bin/sh", "-c", "kill -SEGV $$"}, 10s);
  EXPECT_EQ(r.exit.kind, ExitKind::kSignaled);
  EXPECT_EQ(r.exit.signal, SIGSEGV);
  EXPECT_NE(r.exit.Describe().find("signal 11"), std::string::npos);
}

TEST(Subprocess, DeadlineKillsTheWholeProcessGroup) {
  auto t0 = std::chrono::steady_clock::now();
  // The grandchild holds the pipe open too: the group kill must reach it.
  CommandResult r = RunCommand({"/bin/sh", "-c", "sleep 30 & sleep 30"}, 1s);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit.kind, ExitKind::kTimedOut);
  EXPECT_LT(s, 5.0);
}

TEST(Subprocess, ExitedParentWithLingeringGrandchildIsNotATimeout) {
  auto t0 = std::chrono::steady_clock::now();
  CommandResult r = RunCommand({"/bin/sh", "-c", "(sleep 30 &) ; exit 0"}, 10s);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit.kind, ExitKind::kExited);
  EXPECT_LT(s, 5.0);
}

TEST(Subprocess, ChannelDescriptorCarriesLinesApartFromStdout) {
  ScratchDir dir("subprocess-test");
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo noise; echo '{\"a\":1}' >&3; printf 'tail' >&3"};
  spec.channel_fd = 3;
  spec.log_path = dir.File("log");
  Child c = Child::Start(spec);
  ExitInfo e = c.Wait(std::chrono::steady_clock::now() + 10s);
  EXPECT_EQ(e.kind, ExitKind::kExited);
  ASSERT_EQ(c.channel_lines().size(), 2u);
  EXPECT_EQ(c.channel_lines()[0], "{\"a\":1}");
  EXPECT_EQ(c.channel_lines()[1], "tail");
  EXPECT_EQ(ReadFile(dir.File("log")), "noise\n");
}

TEST(Subprocess, SetsAndUnsetsEnvironment) {
  ::setenv("PTXBENCH_TEST_DROP", "x", 1);
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo \"[$PTXBENCH_TEST_SET][$PTXBENCH_TEST_DROP]\""};
  spec.set_env = {{"PTXBENCH_TEST_SET", "yes"}};
  spec.unset_env = {"PTXBENCH_TEST_DROP"};
  Child c = Child::Start(spec);
  c.Wait(std::chrono::steady_clock::now() + 10s);
  EXPECT_EQ(c.captured_output(), "[yes][]\n");
  EXPECT_EQ(std::string(std::getenv("PTXBENCH_TEST_DROP")), "x");  // ours untouched
}

TEST(Subprocess, MissingProgramIsAnEnvironmentError) {
  EXPECT_THROW(RunCommand({"ptxbench-no-such-program"}, 1s), std::exception);
  EXPECT_FALSE(FindProgram("ptxbench-no-such-program").has_value());
  EXPECT_TRUE(FindProgram("sh").has_value());
}

}  // namespace
}  // namespace ptxbench
