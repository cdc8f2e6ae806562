#include "run/channel.h"

#include <poll.h>
#include <unistd.h>

#include <chrono>

#include <cerrno>

#include "common/bounded_json.h"

namespace ptxbench {

void ChannelWriter::Send(const nlohmann::json& message) {
  std::string line = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone; nothing left to tell
    p += n;
    left -= static_cast<size_t>(n);
  }
}

std::string ReadControlLine(int fd, int timeout_ms) {
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return {};
    pollfd p = {fd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return {};
    char c;
    ssize_t got = ::read(fd, &c, 1);  // byte by byte: lines are short and rare
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return {};
    if (c == '\n') return line;
    line.push_back(c);
    if (line.size() > (1u << 20)) return {};
  }
}

namespace {
// Our own events nest 4 levels at most (a timing sample's activity and its kernels).
constexpr int kMaxChannelDepth = 16;
}  // namespace

std::vector<nlohmann::json> ParseChannel(const std::vector<std::string>& lines,
                                         std::vector<std::string>* garbage) {
  std::vector<nlohmann::json> out;
  for (const auto& l : lines) {
    // A candidate's process can write anything here: nesting is bounded while the line is
    // parsed, before anything (a record's dump) walks it recursively.
    JsonLimits limits;
    limits.max_depth = kMaxChannelDepth;
    auto j = ParseBoundedJsonOrDiscarded(l, limits);
    if (j.is_discarded() || !j.is_object() || !j.contains("event")) {
      if (garbage) garbage->push_back(l);
      continue;
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace ptxbench
