#include "agent/mcp_bridge.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "common/error.h"

namespace ptxbench {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// A kernel file is far smaller; a request past this is not read further.
constexpr size_t kMaxRequestBytes = 16u << 20;

sockaddr_un AddressOf(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path)
    throw EnvironmentError("the bridge socket's path is too long: " + path);
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

// One line (without its newline) from `fd`, read until `until`; nullopt on a timeout, a closed
// connection before the newline, or more than kMaxRequestBytes.
std::optional<std::string> ReadLine(int fd, Clock::time_point until) {
  std::string line;
  char buf[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) return std::nullopt;
    if (n <= 0) continue;
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got <= 0) return std::nullopt;
    line.append(buf, static_cast<size_t>(got));
    if (const size_t nl = line.find('\n'); nl != std::string::npos) return line.substr(0, nl);
    if (line.size() > kMaxRequestBytes) return std::nullopt;
  }
}

bool WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string Line(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace

std::string NewBridgeToken() {
  std::random_device rd;  // the system's entropy source (getrandom) on Linux
  char hex[33];
  for (int i = 0; i < 4; ++i) std::snprintf(hex + 8 * i, 9, "%08x", rd());
  return std::string(hex, 32);
}

BridgeServer::BridgeServer(std::string socket_path, std::string token, json info)
    : path_(std::move(socket_path)), token_(std::move(token)), info_(std::move(info)) {
  const sockaddr_un a = AddressOf(path_);
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw EnvironmentError("bridge socket: " + std::string(strerror(errno)));
  ::unlink(path_.c_str());
  if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listen_fd_, 8) != 0) {
    const std::string why = strerror(errno);
    ::close(listen_fd_);
    throw EnvironmentError("bridge socket " + path_ + ": " + why);
  }
  thread_ = std::thread(&BridgeServer::Serve, this);
}

BridgeServer::~BridgeServer() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  Answer({{"text", "the run is over: no more evaluations"}, {"error", true}, {"counted", false}});
  ::close(listen_fd_);
  ::unlink(path_.c_str());
}

void BridgeServer::Serve() {
  for (;;) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopping_) return;
    }
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) HandleConnection(fd);
  }
}

// Requests are read one at a time: a client that sends nothing holds the line for at most the
// read's 10 s, and only its own agent's MCP server can reach the socket.
void BridgeServer::HandleConnection(int fd) {
  const std::optional<std::string> line = ReadLine(fd, Clock::now() + std::chrono::seconds(10));
  const json request = line ? json::parse(*line, nullptr, false) : json();
  const auto refuse = [&](const std::string& why) {
    WriteAll(fd, Line({{"text", why}, {"error", true}, {"counted", false}}));
    ::close(fd);
  };
  if (!request.is_object()) return refuse("the bridge takes one JSON object per line");
  if (request.value("token", "") != token_) return refuse("not this run's token");
  const std::string op = request.value("op", "");
  std::unique_lock<std::mutex> l(mu_);
  if (op == "info") {
    const json info = info_;
    l.unlock();
    WriteAll(fd, Line(info));
    ::close(fd);
    return;
  }
  if (op != "evaluate" || !request.contains("source") || !request["source"].is_string()) {
    l.unlock();
    return refuse("the bridge's requests are info and evaluate (with the source)");
  }
  if (waiting_fd_ >= 0) {
    l.unlock();
    return refuse("an evaluation is in flight: wait for its answer");
  }
  waiting_fd_ = fd;
  queued_ = request["source"].get<std::string>();
  l.unlock();
  cv_.notify_all();
}

std::optional<std::string> BridgeServer::NextKernel(Clock::time_point until,
                                                    const std::function<bool()>& stop) {
  std::unique_lock<std::mutex> l(mu_);
  while (!queued_ && !stopping_ && Clock::now() < until) {
    if (stop && stop()) break;
    cv_.wait_until(l, std::min(until, Clock::now() + std::chrono::milliseconds(100)));
  }
  std::optional<std::string> kernel = std::move(queued_);
  queued_.reset();
  return kernel;
}

bool BridgeServer::Answer(const json& answer) {
  int fd;
  {
    std::lock_guard<std::mutex> l(mu_);
    fd = waiting_fd_;
    waiting_fd_ = -1;
    queued_.reset();
  }
  if (fd < 0) return false;
  const bool ok = WriteAll(fd, Line(answer));
  ::close(fd);
  return ok;
}

bool BridgeServer::HasWaitingKernel() {
  std::lock_guard<std::mutex> l(mu_);
  return waiting_fd_ >= 0;
}

void BridgeServer::SetEvaluationsLeft(int left) {
  std::lock_guard<std::mutex> l(mu_);
  info_["evaluations"] = left;
}

json BridgeCall(const std::string& socket_path, const std::string& token, json request,
                std::chrono::seconds timeout) {
  const sockaddr_un a = AddressOf(socket_path);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw EnvironmentError("bridge socket: " + std::string(strerror(errno)));
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    const std::string why = strerror(errno);
    ::close(fd);
    throw EnvironmentError("the run cannot be reached (" + why + "): it has ended");
  }
  request["token"] = token;
  const bool sent = WriteAll(fd, Line(request));
  const std::optional<std::string> line =
      sent ? ReadLine(fd, Clock::now() + timeout) : std::nullopt;
  ::close(fd);
  const json answer = line ? json::parse(*line, nullptr, false) : json();
  if (!answer.is_object())
    throw EnvironmentError(sent ? "the run gave no answer" : "the run closed the bridge");
  return answer;
}

}  // namespace ptxbench
