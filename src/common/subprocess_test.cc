#include "common/subprocess.h"

#include <gtest/gtest.h>

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <thread>
#include <utility>

#include "common/files.h"
#include "common/test_process.h"

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

// A shell command run with RunCommand, and the seconds it took.
std::pair<CommandResult, double> TimedShell(const std::string& script,
                                            std::chrono::seconds timeout) {
  auto t0 = std::chrono::steady_clock::now();
  CommandResult r = RunCommand({"/bin/sh", "-c", script}, timeout);
  return {r, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

TEST(Subprocess, DeadlineKillsTheWholeProcessGroup) {
  // The grandchild holds the pipe open too: the group kill must reach it.
  auto [r, s] = TimedShell("sleep 30 & sleep 30", 1s);
  EXPECT_EQ(r.exit.kind, ExitKind::kTimedOut);
  // The behaviour: the deadline (1 s) ends the group, not the sleeps (30 s). A bound far from
  // both, so that a loaded machine cannot fail it.
  EXPECT_LT(s, 15.0);
}

// What `serve` does when a worker dies mid-build: as a subreaper it inherits the worker's
// compiler, which leads a group with its own helper, and ends both; a worker it keeps lives.
// Played in a child process, so the subreaper setting stays out of this test binary.
TEST(Subprocess, ASubreaperEndsTheProcessGroupsADeadChildLeftBehind) {
  pid_t supervisor = ::fork();
  ASSERT_GE(supervisor, 0);
  if (supervisor == 0) {
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) ::_exit(10);
    pid_t kept = ::fork();
    if (kept == 0) {
      ::pause();
      ::_exit(0);
    }
    int pids[2];  // the "compiler" and its "helper", reported by the dying "worker"
    if (::pipe(pids) != 0) ::_exit(11);
    pid_t worker = ::fork();
    if (worker == 0) {
      pid_t compiler = ::fork();
      if (compiler == 0) {
        ::setpgid(0, 0);
        pid_t helper = ::fork();
        if (helper == 0) {
          ::pause();
          ::_exit(0);
        }
        pid_t both[2] = {::getpid(), helper};
        if (::write(pids[1], both, sizeof both) != sizeof both) ::_exit(1);
        ::pause();
        ::_exit(0);
      }
      pid_t both[2];
      if (::read(pids[0], both, sizeof both) != sizeof both) ::_exit(1);
      if (::write(pids[1], both, sizeof both) != sizeof both) ::_exit(1);
      ::_exit(0);  // dies with its build running
    }
    int st = 0;
    ::waitpid(worker, &st, 0);
    pid_t both[2];
    if (::read(pids[0], both, sizeof both) != sizeof both) ::_exit(12);
    if (::kill(both[0], 0) != 0 || ::kill(both[1], 0) != 0) ::_exit(13);  // not yet ended
    int ended = KillOrphans({kept});
    if (ended != 1) ::_exit(20 + ended);  // the compiler only: the helper is not our child
    // The helper died with its group: gone, or a zombie reparented to us (state Z).
    bool helper_ended = false;
    for (int i = 0; i < 200 && !helper_ended; ++i) {
      helper_ended = testing::ProcessEnded(both[1]);
      if (!helper_ended) std::this_thread::sleep_for(10ms);
    }
    if (!helper_ended) ::_exit(14);
    KillOrphans({kept});  // reaps the zombie
    if (::kill(kept, 0) != 0) ::_exit(15);
    ::kill(kept, SIGKILL);
    ::waitpid(kept, &st, 0);
    ::_exit(0);
  }
  testing::ExpectChildExitedZero(supervisor,
                                 "10: no subreaper; 11/12: pipe; 13: compiler or helper "
                                 "gone too early; 2x: x orphans ended, not 1; 14: helper "
                                 "still alive; 15: the kept child was ended");
}

TEST(Subprocess, ExitedParentWithLingeringGrandchildIsNotATimeout) {
  auto [r, s] = TimedShell("(sleep 30 &) ; exit 0", 20s);
  // The behaviour: the parent's exit ends the wait; waiting on the grandchild would end in the
  // timeout (kTimedOut, 20 s). The bound is far from both, so that load cannot fail it.
  EXPECT_EQ(r.exit.kind, ExitKind::kExited);
  EXPECT_LT(s, 15.0);
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
