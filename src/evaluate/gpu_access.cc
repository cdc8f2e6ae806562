#include "evaluate/gpu_access.h"

#include <utility>

#include "common/error.h"
#include "common/gpu_trace.h"

namespace ptxbench {

namespace {
const std::atomic<bool> kNeverStopped{false};
}  // namespace

GpuAccess::GpuAccess(std::string lock_path, std::chrono::seconds timeout,
                     const std::atomic<bool>* stop, std::function<void(const std::string&)> on_wait)
    : path_(std::move(lock_path)),
      timeout_(timeout),
      stop_(stop ? stop : &kNeverStopped),
      on_wait_(std::move(on_wait)) {}

bool GpuAccess::Hold(GpuLock::Mode mode) {
  if (lock_ && lock_->mode() == mode) return true;
  Release();
  auto t = SteadyClock::now();
  try {
    // One try first: only a hold that has to wait is announced.
    lock_.emplace(path_, std::chrono::milliseconds(0), *stop_, mode);
    if (lock_->outcome() == GpuLock::Outcome::kTimedOut) {
      if (on_wait_) on_wait_("waiting for " + path_ + " (another evaluation holds this GPU)");
      lock_.reset();
      lock_.emplace(path_, std::chrono::duration_cast<std::chrono::milliseconds>(timeout_), *stop_,
                    mode);
    }
  } catch (const Error& e) {
    error_ = e.what();
    lock_.reset();
    wait_s_ += SecondsSince(t);
    return false;
  }
  wait_s_ += SecondsSince(t);
  if (lock_->outcome() != GpuLock::Outcome::kHeld) {
    stopped_ = lock_->outcome() == GpuLock::Outcome::kStopped;
    lock_.reset();
    return false;
  }
  ever_held_ = true;
  held_since_ = SteadyClock::now();
  GpuTrace("hold", {{"mode", mode == GpuLock::Mode::kAlone ? "alone" : "shared"},
                    {"waited_s", SecondsSince(t)}});
  return true;
}

void GpuAccess::Release() {
  if (!lock_) return;
  GpuTrace("release", {{"mode", lock_->mode() == GpuLock::Mode::kAlone ? "alone" : "shared"}});
  (lock_->mode() == GpuLock::Mode::kAlone ? alone_s_ : shared_s_) += SecondsSince(held_since_);
  lock_.reset();
}

std::string GpuAccess::Reason() const {
  if (stopped_) return "gpu_lock_stopped";
  return error_.empty() ? "gpu_lock_timeout" : "gpu_lock_error";
}

std::string GpuAccess::Failure() const {
  if (!error_.empty()) return "cannot take the GPU lock: " + error_;
  if (stopped_) return "the evaluation was stopped while it waited for the GPU lock " + path_;
  return "the GPU lock " + path_ + " was not free within " + std::to_string(timeout_.count()) +
         " s: another evaluation holds this GPU";
}

}  // namespace ptxbench
