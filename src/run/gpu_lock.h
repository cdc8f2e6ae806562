// The right to the GPU, held across processes, in one of two modes:
//  - alone (exclusive): the stages whose figures another process's GPU work would change
//    (the candidate's timed child with its witness window, the vendor baseline's timed calls);
//  - shared: every other stage that runs work on the GPU (references, the candidate's trials,
//    the memory check, the profiled call, whose counts are patched into its own kernels, and
//    the probes). Shared holders run side by side; none of them runs while
//    anyone holds the GPU alone, so a timed window never shares the GPU with another
//    evaluation's kernels (a slow or hung candidate included).
// Every evaluation takes it, whoever started it (`ptxbench eval`, a service worker, a test).
// A waiting exclusive taker is not starved by a stream of shared ones: both pass a gate (a
// second lock file) that a waiting exclusive taker keeps until it holds the GPU.
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
  enum class Mode { kAlone, kShared };

  // Waits (polling, so that the wait ends at the deadline or when `stop` turns true).
  GpuLock(const std::string& path, std::chrono::milliseconds timeout, const std::atomic<bool>& stop,
          Mode mode = Mode::kAlone);
  ~GpuLock();
  GpuLock(const GpuLock&) = delete;
  GpuLock& operator=(const GpuLock&) = delete;
  Outcome outcome() const { return outcome_; }
  Mode mode() const { return mode_; }
  // True when the lock was free at the first try (nobody had to be waited for).
  bool immediate() const { return immediate_; }

 private:
  int fd_ = -1;
  Outcome outcome_ = Outcome::kTimedOut;
  Mode mode_;
  bool immediate_ = false;
};

// The gate beside a lock file (its path with ".gate" appended).
std::string GpuLockGatePath(const std::string& lock_path);

// The UUID (32 hex digits, as the children's device report spells it) of the GPU that CUDA
// shows this process as device 0, asked once per process through a query that creates no
// context; empty when there is none. Known before any child runs, so that every child of an
// evaluation, the first reference included, holds the lock of the GPU it will run on.
std::string VisibleGpuId();

// The host-wide lock file of one GPU, named by its UUID (or PCI bus id): the same path for
// every user and every way of starting an evaluation. Creates the folder (sticky, world-
// writable like /tmp, so that evaluations of several users share it) when missing;
// PTXBENCH_GPU_LOCK_DIR overrides it (tests).
std::string GpuLockPath(const std::string& gpu_id);

}  // namespace ptxbench
