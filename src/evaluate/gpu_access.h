// How one evaluation holds its GPU (run/gpu_lock.h), child by child: shared while a child
// that only needs the GPU runs (references, trials, memory check, the profiled call, probes,
// a set-up of the timed children), alone while the candidate's timed child (from before its
// load) and the baselines' timed calls run, and not at all in between (builds, comparisons,
// digests, the profiler's report). Each child holds it from its start; with the gate on
// (PTXBENCH_GPU_GATE=on, evaluate/gpu_gate.h) only from its first CUDA call. So the CPU work
// of one evaluation overlaps the GPU work of others, and nothing overlaps a timed window.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "common/clock.h"
#include "run/gpu_lock.h"

namespace ptxbench {

class GpuAccess {
 public:
  // `stop` (may be null): a service worker that is stopping ends a wait with it. `on_wait`
  // (may be empty) hears, in a sentence, that a hold has to wait for another evaluation.
  GpuAccess(std::string lock_path, std::chrono::seconds timeout, const std::atomic<bool>* stop,
            std::function<void(const std::string&)> on_wait = {});

  // Holds the GPU in `mode`: keeps a hold of that mode, lets go of the other one first (a
  // shared holder that waited for the GPU alone while holding it would deadlock with a
  // second one doing the same). False when the lock was not free within the timeout or the
  // wait was stopped, or when the lock file cannot be opened or locked at all (Reason() and
  // Failure() say which, for the record).
  bool Hold(GpuLock::Mode mode);
  void Release();
  // Whether a hold in `mode` is held now.
  bool Holds(GpuLock::Mode mode) const { return lock_ && lock_->mode() == mode; }

  const std::string& path() const { return path_; }
  // "gpu_lock_stopped", "gpu_lock_error" or "gpu_lock_timeout": why the last Hold failed.
  std::string Reason() const;
  std::string Failure() const;
  double wait_seconds() const { return wait_s_; }
  double alone_seconds() const { return alone_s_; }
  double shared_seconds() const { return shared_s_; }
  // True once any hold was granted (the record names the lock's path then).
  bool ever_held() const { return ever_held_; }

 private:
  std::string path_;
  std::chrono::seconds timeout_;
  const std::atomic<bool>* stop_;
  std::function<void(const std::string&)> on_wait_;
  std::optional<GpuLock> lock_;
  std::string error_;  // the lock file could not be used (its error)
  SteadyClock::time_point held_since_{};
  double wait_s_ = 0, alone_s_ = 0, shared_s_ = 0;
  bool stopped_ = false, ever_held_ = false;
};

}  // namespace ptxbench
