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

#include <cuda_runtime_api.h>

#include "common/error.h"
#include "common/strings.h"

namespace ptxbench {

namespace {

int OpenLockFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0)
    throw EnvironmentError("cannot open the GPU lock " + path + ": " + std::strerror(errno));
  return fd;
}

// One non-blocking try; false when someone else holds it in a conflicting mode.
bool TryLock(int fd, int how, const std::string& path) {
  if (::flock(fd, how | LOCK_NB) == 0) return true;
  if (errno != EWOULDBLOCK && errno != EINTR)
    throw EnvironmentError("cannot lock " + path + ": " + std::strerror(errno));
  return false;
}

}  // namespace

GpuLock::GpuLock(const std::string& path, std::chrono::milliseconds timeout,
                 const std::atomic<bool>& stop, Mode mode)
    : mode_(mode) {
  fd_ = OpenLockFile(path);
  const std::string gate_path = GpuLockGatePath(path);
  int gate = -1;
  try {
    gate = OpenLockFile(gate_path);
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
  const int how = mode == Mode::kAlone ? LOCK_EX : LOCK_SH;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool gate_held = false;
  for (bool first = true;; first = false) {
    try {
      // Through the gate first: while someone waits there for the GPU alone, nobody else
      // starts a shared hold, so the holders drain and the exclusive taker gets its turn.
      if (!gate_held) gate_held = TryLock(gate, LOCK_EX, gate_path);
      if (gate_held && TryLock(fd_, how, path)) {
        ::close(gate);  // the gate is for getting in; holding the GPU needs only the lock
        outcome_ = Outcome::kHeld;
        immediate_ = first;
        return;
      }
    } catch (...) {
      ::close(gate);
      ::close(fd_);
      fd_ = -1;
      throw;
    }
    if (stop || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  outcome_ = stop ? Outcome::kStopped : Outcome::kTimedOut;
  ::close(gate);
  ::close(fd_);  // not held: nothing to keep open
  fd_ = -1;
}

GpuLock::~GpuLock() {
  if (fd_ >= 0) ::close(fd_);
}

std::string VisibleGpuId() {
  static const std::string id = [] {
    int n = 0;
    cudaDeviceProp p{};
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1 ||
        cudaGetDeviceProperties(&p, 0) != cudaSuccess)
      return std::string();
    return LowerHex(std::string_view(p.uuid.bytes, sizeof p.uuid.bytes));
  }();
  return id;
}

std::string GpuLockGatePath(const std::string& lock_path) { return lock_path + ".gate"; }

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
