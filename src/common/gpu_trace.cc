#include "common/gpu_trace.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

namespace ptxbench {

namespace {
const char* TracePath() {
  static const char* path = [] {
    const char* p = std::getenv("PTXBENCH_GPU_TRACE");
    return p && *p ? p : nullptr;
  }();
  return path;
}
}  // namespace

bool GpuTraceOn() { return TracePath() != nullptr; }

void GpuTrace(const std::string& event, nlohmann::json fields) {
  const char* path = TracePath();
  if (!path) return;
  if (!fields.is_object()) fields = nlohmann::json::object();
  fields["t"] =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  fields["pid"] = ::getpid();
  fields["tid"] = static_cast<long>(::syscall(SYS_gettid));  // a service's workers are threads
  fields["ev"] = event;
  const std::string line = fields.dump() + "\n";
  // One write of one line with O_APPEND: lines of several processes do not interleave.
  int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  (void)!::write(fd, line.data(), line.size());
  ::close(fd);
}

}  // namespace ptxbench
