// For tests that run many callers at once: header only, nothing to link.
#pragma once

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

namespace ptxbench::testing {

// Runs body(0) ... body(n - 1), each on a thread of its own, all at once; returns the wall
// time in seconds from before the first started to after the last ended.
inline double RunOnThreads(int n, const std::function<void(int)>& body) {
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back(body, i);
  for (auto& t : threads) t.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace ptxbench::testing
