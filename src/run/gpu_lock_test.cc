// The GPU lock's two modes: shared holders run together, the GPU alone excludes everyone, a
// waiting exclusive taker is not starved by new shared ones, and a stop ends a wait. Each
// GpuLock opens its own file description, so holders in one process conflict as holders in
// separate processes do.
#include "run/gpu_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <thread>

#include "common/files.h"

namespace ptxbench {
namespace {

using namespace std::chrono_literals;
using Mode = GpuLock::Mode;
using Outcome = GpuLock::Outcome;

const std::atomic<bool> kNever{false};

TEST(GpuLock, SharedHoldersRunTogether) {
  ScratchDir dir("gpu-lock");
  const std::string path = dir.File("gpu.lock");
  GpuLock a(path, 0ms, kNever, Mode::kShared);
  GpuLock b(path, 0ms, kNever, Mode::kShared);
  EXPECT_EQ(a.outcome(), Outcome::kHeld);
  EXPECT_EQ(b.outcome(), Outcome::kHeld);
  EXPECT_TRUE(b.immediate());
}

TEST(GpuLock, TheGpuAloneExcludesSharedAndAloneHolders) {
  ScratchDir dir("gpu-lock");
  const std::string path = dir.File("gpu.lock");
  {
    GpuLock shared(path, 0ms, kNever, Mode::kShared);
    ASSERT_EQ(shared.outcome(), Outcome::kHeld);
    EXPECT_EQ(GpuLock(path, 100ms, kNever, Mode::kAlone).outcome(), Outcome::kTimedOut);
  }
  {
    GpuLock alone(path, 0ms, kNever, Mode::kAlone);
    ASSERT_EQ(alone.outcome(), Outcome::kHeld);
    EXPECT_EQ(GpuLock(path, 100ms, kNever, Mode::kShared).outcome(), Outcome::kTimedOut);
    EXPECT_EQ(GpuLock(path, 100ms, kNever, Mode::kAlone).outcome(), Outcome::kTimedOut);
  }
  // Released: free again for either mode, at the first try.
  GpuLock again(path, 0ms, kNever, Mode::kAlone);
  EXPECT_EQ(again.outcome(), Outcome::kHeld);
  EXPECT_TRUE(again.immediate());
}

// Without the gate a GPU with overlapping shared holders would never be free for timing.
TEST(GpuLock, AWaitingExclusiveTakerIsNotStarvedByNewSharedHolders) {
  ScratchDir dir("gpu-lock");
  const std::string path = dir.File("gpu.lock");
  std::optional<GpuLock> first_shared;
  first_shared.emplace(path, 0ms, kNever, Mode::kShared);
  ASSERT_EQ(first_shared->outcome(), Outcome::kHeld);
  auto alone = std::async(std::launch::async,
                          [&] { return GpuLock(path, 10s, kNever, Mode::kAlone).outcome(); });
  std::this_thread::sleep_for(300ms);  // the exclusive taker is waiting at the gate's far side
  // A shared taker that arrives now waits behind it, though only shared holders hold the GPU.
  EXPECT_EQ(GpuLock(path, 200ms, kNever, Mode::kShared).outcome(), Outcome::kTimedOut);
  first_shared.reset();
  EXPECT_EQ(alone.get(), Outcome::kHeld);
  // Once it is done, shared holders come in again.
  EXPECT_EQ(GpuLock(path, 1s, kNever, Mode::kShared).outcome(), Outcome::kHeld);
}

TEST(GpuLock, AStopEndsTheWait) {
  ScratchDir dir("gpu-lock");
  const std::string path = dir.File("gpu.lock");
  GpuLock alone(path, 0ms, kNever, Mode::kAlone);
  std::atomic<bool> stop{false};
  auto waiting = std::async(std::launch::async,
                            [&] { return GpuLock(path, 60s, stop, Mode::kShared).outcome(); });
  std::this_thread::sleep_for(100ms);
  auto t = std::chrono::steady_clock::now();
  stop = true;
  EXPECT_EQ(waiting.get(), Outcome::kStopped);
  EXPECT_LT(std::chrono::steady_clock::now() - t, 2s);
}

// A holder that dies leaves nothing locked: the kernel drops its locks with its files.
TEST(GpuLock, AKilledHolderLeavesTheGpuFree) {
  ScratchDir dir("gpu-lock");
  const std::string path = dir.File("gpu.lock");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    GpuLock held(path, 0ms, kNever, Mode::kAlone);
    char c = held.outcome() == Outcome::kHeld ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  EXPECT_EQ(GpuLock(path, 100ms, kNever, Mode::kShared).outcome(), Outcome::kTimedOut);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  EXPECT_EQ(GpuLock(path, 1s, kNever, Mode::kShared).outcome(), Outcome::kHeld);
  ::close(ready[0]);
  ::close(ready[1]);
}

}  // namespace
}  // namespace ptxbench
