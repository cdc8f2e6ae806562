// The exclusive right to the GPU for the stages of an evaluation that must have it alone
// (timing, the witness, the baselines, the profiler), held across processes. Every evaluation
// takes it, whoever started it (`ptxbench eval`, a service worker, a test), so that
// concurrent evaluations on one GPU wait for each other instead of framing each other.
// flock: the kernel releases it when the holder dies, so a killed process never leaves the
// GPU locked.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

namespace ptxbench {

class GpuLock {
 public:
  enum class Outcome { kHeld, kTimedOut, kStopped };

  // Waits (polling, so that the wait ends at the deadline or when `stop` turns true).
  GpuLock(const std::string& path, std::chrono::milliseconds timeout,
          const std::atomic<bool>& stop);
  ~GpuLock();
  GpuLock(const GpuLock&) = delete;
  GpuLock& operator=(const GpuLock&) = delete;
  Outcome outcome() const { return outcome_; }
  // True when the lock was free at the first try (nobody had to be waited for).
  bool immediate() const { return immediate_; }

 private:
  int fd_ = -1;
  Outcome outcome_ = Outcome::kTimedOut;
  bool immediate_ = false;
};

// The host-wide lock file of one GPU, named by its UUID (or PCI bus id): the same path for
// every user and every way of starting an evaluation. Creates the folder (sticky, world-
// writable like /tmp, so that evaluations of several users share it) when missing;
// PTXBENCH_GPU_LOCK_DIR overrides it (tests).
std::string GpuLockPath(const std::string& gpu_id);

}  // namespace ptxbench
