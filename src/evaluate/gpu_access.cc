#include "evaluate/gpu_access.h"

#include <utility>

namespace ptxbench {

namespace {
const std::atomic<bool> kNeverStopped{false};
}  // namespace

GpuAccess::GpuAccess(std::string lock_path, std::chrono::seconds timeout,
                     const std::atomic<bool>* stop)
    : path_(std::move(lock_path)), timeout_(timeout), stop_(stop ? stop : &kNeverStopped) {}

bool GpuAccess::Hold(GpuLock::Mode mode) {
  if (lock_ && lock_->mode() == mode) return true;
  Release();
  auto t = SteadyClock::now();
  lock_.emplace(path_, std::chrono::duration_cast<std::chrono::milliseconds>(timeout_), *stop_,
                mode);
  wait_s_ += SecondsSince(t);
  if (lock_->outcome() != GpuLock::Outcome::kHeld) {
    stopped_ = lock_->outcome() == GpuLock::Outcome::kStopped;
    lock_.reset();
    return false;
  }
  ever_held_ = true;
  held_since_ = SteadyClock::now();
  return true;
}

void GpuAccess::Release() {
  if (!lock_) return;
  (lock_->mode() == GpuLock::Mode::kAlone ? alone_s_ : shared_s_) += SecondsSince(held_since_);
  lock_.reset();
}

std::string GpuAccess::Failure() const {
  if (stopped_) return "the evaluation was stopped while it waited for the GPU lock " + path_;
  return "the GPU lock " + path_ + " was not free within " + std::to_string(timeout_.count()) +
         " s: another evaluation holds this GPU";
}

}  // namespace ptxbench
