#include "run/gpu_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/error.h"

namespace ptxbench {

GpuLock::GpuLock(const std::string& path, std::chrono::milliseconds timeout,
                 const std::atomic<bool>& stop) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd_ < 0)
    throw EnvironmentError("cannot open the GPU lock " + path + ": " + std::strerror(errno));
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (bool first = true;; first = false) {
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) {
      outcome_ = Outcome::kHeld;
      immediate_ = first;
      return;
    }
    if (errno != EWOULDBLOCK && errno != EINTR)
      throw EnvironmentError("cannot lock " + path + ": " + std::strerror(errno));
    if (stop) {
      outcome_ = Outcome::kStopped;
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      outcome_ = Outcome::kTimedOut;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

GpuLock::~GpuLock() {
  if (fd_ >= 0) ::close(fd_);
}

std::string GpuLockPath(const std::string& gpu_id) {
  std::string dir = "/tmp/ptxbench-gpu-locks";
  if (const char* d = std::getenv("PTXBENCH_GPU_LOCK_DIR"); d && *d) dir = d;
  if (::mkdir(dir.c_str(), 01777) == 0) ::chmod(dir.c_str(), 01777);  // umask aside
  std::string name;
  for (char ch : gpu_id.empty() ? std::string("default") : gpu_id)
    name += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' ? ch : '_';
  return dir + "/gpu-" + name + ".lock";
}

}  // namespace ptxbench
