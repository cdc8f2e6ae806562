// For tests that watch processes they started: header only, nothing to link.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <exception>
#include <string>

#include "common/files.h"

namespace ptxbench::testing {

// True once the process has ended: gone from /proc, or a zombie (state Z) not yet reaped.
inline bool ProcessEnded(pid_t pid) {
  std::string stat;
  try {
    stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  } catch (const std::exception&) {
    return true;
  }
  size_t close = stat.rfind(')');  // the state follows the name, which may hold anything
  return close != std::string::npos && stat.compare(close + 1, 3, " Z ") == 0;
}

// Reaps a forked child that reports through its exit code, and fails the test unless that
// code is 0; `legend` says what the others mean.
inline void ExpectChildExitedZero(pid_t pid, const char* legend) {
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << legend;
}

}  // namespace ptxbench::testing
