#include "common/subprocess.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

extern char** environ;

#include "common/error.h"
#include "common/files.h"
#include "common/sandbox.h"
#include "common/strings.h"

namespace ptxbench {

using Clock = std::chrono::steady_clock;

// More messages than any honest child sends (an evaluation sends a few hundred).
constexpr size_t kMaxChannelLines = 100000;

std::string ExitInfo::Describe() const {
  if (channel_overflow)
    return "killed for flooding the result channel (over its limit of bytes or messages)";
  switch (kind) {
    case ExitKind::kExited:
      return "exit code " + std::to_string(code);
    case ExitKind::kSignaled:
      return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
    case ExitKind::kTimedOut:
      return "timed out after " + std::to_string(static_cast<int>(seconds + 0.5)) + " s";
  }
  return "?";
}

std::optional<std::string> FindProgram(const std::string& name) {
  auto executable = [](const std::string& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos)
    return executable(name) ? std::optional<std::string>(name) : std::nullopt;
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH"))
    for (auto& d : Split(path, ':'))
      if (!d.empty()) dirs.push_back(d);
  if (const char* ch = std::getenv("CUDA_HOME"); ch && *ch)
    dirs.push_back(std::string(ch) + "/bin");
  dirs.push_back("/usr/local/cuda/bin");
  for (const auto& d : dirs)
    if (executable(d + "/" + name)) return d + "/" + name;
  return std::nullopt;
}

namespace {

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// In the forked child: arrange descriptors and exec. Only async-signal-safe calls until exec.
[[noreturn]] void ExecChild(const std::vector<char*>& argv, const std::vector<char*>& envp,
                            int log_fd, int capture_write, int channel_write, int channel_fd,
                            int control_read, int control_fd, int parent_pid,
                            const PreparedSandbox* sandbox) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent_pid) ::_exit(127);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, 0);
  int out = log_fd >= 0 ? log_fd : capture_write;
  if (out >= 0) {
    ::dup2(out, 1);
    ::dup2(out, 2);
  }
  if (channel_write >= 0 && channel_fd >= 0) {
    if (channel_write == channel_fd) {
      ::fcntl(channel_fd, F_SETFD, 0);  // keep it across exec
    } else {
      ::dup2(channel_write, channel_fd);
    }
  }
  if (control_read >= 0 && control_fd >= 0) {
    if (control_read == control_fd) {
      ::fcntl(control_fd, F_SETFD, 0);
    } else {
      ::dup2(control_read, control_fd);
    }
  }
  if (sandbox) sandbox->ApplyInChild();
  ::execve(argv[0], argv.data(), envp.data());
  const char msg[] = "ptxbench: exec failed\n";
  ssize_t ignored = ::write(2, msg, sizeof msg - 1);
  (void)ignored;
  ::_exit(127);
}

}  // namespace

Child Child::Start(const ProcessSpec& spec) {
  if (spec.argv.empty()) throw InternalError("Child::Start: empty argv");
  auto program = FindProgram(spec.argv[0]);
  if (!program) throw EnvironmentError(spec.argv[0] + ": program not found");

  // The child's environment: ours (or the sandbox's allow-list of it), less what is unset,
  // with what is set replacing its name.
  std::vector<std::string> env_strings;
  std::vector<std::string> base;
  if (spec.sandbox && spec.sandbox->active()) {
    base = spec.sandbox->Environment();
  } else {
    for (char** e = environ; *e; ++e) base.emplace_back(*e);
  }
  auto dropped = [&](std::string_view entry) {
    std::string_view name = entry.substr(0, entry.find('='));
    for (const auto& k : spec.unset_env)
      if (name == k) return true;
    for (const auto& kv : spec.set_env)
      if (name == kv.first) return true;
    return false;
  };
  for (const auto& e : base)
    if (!dropped(e)) env_strings.push_back(e);
  for (const auto& [k, v] : spec.set_env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  std::vector<std::string> args = spec.argv;
  args[0] = *program;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int log_fd = -1;
  if (!spec.log_path.empty()) {
    log_fd = ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (log_fd < 0) throw EnvironmentError(spec.log_path + ": cannot open log: " + strerror(errno));
  }
  int capture[2] = {-1, -1};
  if (log_fd < 0 && ::pipe2(capture, O_CLOEXEC) != 0)
    throw EnvironmentError(std::string("pipe: ") + strerror(errno));
  int channel[2] = {-1, -1};
  if (spec.channel_fd >= 0 && ::pipe2(channel, O_CLOEXEC) != 0)
    throw EnvironmentError(std::string("pipe: ") + strerror(errno));
  int control[2] = {-1, -1};
  if (spec.control_fd >= 0 && ::pipe2(control, O_CLOEXEC) != 0)
    throw EnvironmentError(std::string("pipe: ") + strerror(errno));
  const PreparedSandbox* sandbox = spec.sandbox && spec.sandbox->active() ? spec.sandbox : nullptr;

  Child child;
  child.started_ = Clock::now();
  int parent_pid = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw EnvironmentError(std::string("fork: ") + strerror(errno));
  if (pid == 0)
    ExecChild(argv, envp, log_fd, capture[1], channel[1], spec.channel_fd, control[0],
              spec.control_fd, parent_pid, sandbox);

  ::setpgid(pid, pid);  // also here, so that KillGroup works even before the child ran
  child.pid_ = pid;
  if (log_fd >= 0) ::close(log_fd);
  if (capture[1] >= 0) ::close(capture[1]);
  if (channel[1] >= 0) ::close(channel[1]);
  if (control[0] >= 0) ::close(control[0]);
  child.control_write_ = control[1];
  child.channel_limit_ = spec.channel_limit_bytes ? spec.channel_limit_bytes : (64u << 20);
  child.capture_read_ = capture[0];
  child.channel_read_ = channel[0];
  if (child.capture_read_ >= 0) SetNonBlocking(child.capture_read_);
  if (child.channel_read_ >= 0) SetNonBlocking(child.channel_read_);
  return child;
}

Child::Child(Child&& o) noexcept
    : pid_(o.pid_),
      channel_read_(o.channel_read_),
      capture_read_(o.capture_read_),
      control_write_(o.control_write_),
      channel_limit_(o.channel_limit_),
      channel_bytes_(o.channel_bytes_),
      started_(o.started_),
      lines_(std::move(o.lines_)),
      partial_line_(std::move(o.partial_line_)),
      captured_(std::move(o.captured_)),
      reaped_(o.reaped_) {
  o.pid_ = -1;
  o.channel_read_ = o.capture_read_ = o.control_write_ = -1;
  o.reaped_ = true;
}

Child::~Child() {
  if (pid_ > 0 && !reaped_) {
    KillGroup();
    int status;
    ::waitpid(pid_, &status, 0);
  }
  if (channel_read_ >= 0) ::close(channel_read_);
  if (capture_read_ >= 0) ::close(capture_read_);
  if (control_write_ >= 0) ::close(control_write_);
}

bool Child::SendControl(const std::string& line) {
  if (control_write_ < 0) return false;
  std::string data = line + "\n";
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(control_write_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

namespace {
// How a reaped process ended, from waitpid's status.
void SetExitFromStatus(int status, ExitInfo* info) {
  if (WIFEXITED(status)) {
    info->kind = ExitKind::kExited;
    info->code = WEXITSTATUS(status);
  } else {
    info->kind = ExitKind::kSignaled;
    info->signal = WTERMSIG(status);
  }
}
}  // namespace

void Child::AbandonChannel() {
  KillGroup();
  ::close(channel_read_);
  channel_read_ = -1;
  partial_line_.clear();
}

void Child::KillGroup() {
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
  }
}

ExitInfo Child::Wait(Clock::time_point deadline,
                     const std::function<void(const std::string&)>& on_line,
                     bool handler_time_is_not_the_childs) {
  ExitInfo info;
  bool overflow = false;
  char buf[65536];
  // Drain both pipes until they close (the child and everything it started are gone or
  // closed them) or the deadline passes.
  bool timed_out = false;
  for (;;) {
    std::vector<pollfd> fds;
    if (channel_read_ >= 0) fds.push_back({channel_read_, POLLIN, 0});
    if (capture_read_ >= 0) fds.push_back({capture_read_, POLLIN, 0});
    if (fds.empty()) break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    // Wake up now and then to notice a child that exited while a grandchild holds a pipe.
    int wait_ms = static_cast<int>(std::min<long long>(left.count(), 200));
    int n = ::poll(fds.data(), fds.size(), wait_ms);
    if (n < 0 && errno != EINTR) break;
    for (auto& p : fds) {
      if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = ::read(p.fd, buf, sizeof buf);
      if (got > 0) {
        if (p.fd == channel_read_) {
          channel_bytes_ += static_cast<size_t>(got);
          if (channel_bytes_ > channel_limit_) {
            // A flood: stop reading and end the child; nothing more it says is kept.
            overflow = true;
            AbandonChannel();
            continue;
          }
          partial_line_.append(buf, static_cast<size_t>(got));
          size_t nl;
          size_t start = 0;
          while ((nl = partial_line_.find('\n', start)) != std::string::npos) {
            if (nl > start) {  // empty lines carry nothing and are not kept
              lines_.push_back(partial_line_.substr(start, nl - start));
              if (on_line) {
                const auto before = Clock::now();
                on_line(lines_.back());
                if (handler_time_is_not_the_childs) deadline += Clock::now() - before;
              }
            }
            start = nl + 1;
          }
          partial_line_.erase(0, start);
          if (lines_.size() > kMaxChannelLines) {
            overflow = true;
            AbandonChannel();
          }
        } else {
          // Bounded: a candidate printing in a loop must not exhaust our memory.
          if (captured_.size() < (8u << 20)) captured_.append(buf, static_cast<size_t>(got));
        }
      } else if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
        int& fd = (p.fd == channel_read_) ? channel_read_ : capture_read_;
        ::close(fd);
        fd = -1;
      }
    }
    if (n == 0) {
      int status;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        SetExitFromStatus(status, &info);
        KillGroup();  // whatever it left behind holding our pipes
        break;
      }
    }
  }
  if (!partial_line_.empty()) {
    lines_.push_back(partial_line_);
    partial_line_.clear();
  }
  if (!reaped_) {
    int status = 0;
    if (timed_out) {
      KillGroup();
      ::waitpid(pid_, &status, 0);
      info.kind = ExitKind::kTimedOut;
    } else {
      // Pipes closed: the process is exiting; wait for it, but never past the deadline.
      for (;;) {
        if (::waitpid(pid_, &status, WNOHANG) == pid_) break;
        if (Clock::now() >= deadline) {
          KillGroup();
          ::waitpid(pid_, &status, 0);
          timed_out = true;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      if (timed_out)
        info.kind = ExitKind::kTimedOut;
      else
        SetExitFromStatus(status, &info);
    }
    reaped_ = true;
    KillGroup();
  }
  info.seconds = std::chrono::duration<double>(Clock::now() - started_).count();
  info.channel_overflow = overflow;
  return info;
}

CommandResult RunCommand(const std::vector<std::string>& argv, std::chrono::seconds timeout,
                         const std::vector<std::pair<std::string, std::string>>& set_env,
                         const PreparedSandbox* sandbox) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.set_env = set_env;
  spec.sandbox = sandbox;
  Child child = Child::Start(spec);
  CommandResult r;
  r.exit = child.Wait(Clock::now() + timeout);
  r.output = child.captured_output();
  return r;
}

std::vector<std::pair<pid_t, std::string>> ChildProcesses() {
  std::vector<std::pair<pid_t, std::string>> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  pid_t me = ::getpid();
  while (dirent* e = ::readdir(d)) {
    long long pid = 0;
    if (!ParseInt64(e->d_name, &pid)) continue;
    std::string stat;
    try {
      stat = ReadFile("/proc/" + std::string(e->d_name) + "/stat");
    } catch (const std::exception&) {
      continue;  // gone meanwhile
    }
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so from the last ')'.
    size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 2 > stat.size()) continue;
    std::vector<std::string> f = Split(stat.substr(close + 2), ' ');
    long long ppid = 0;
    if (f.size() < 2 || !ParseInt64(f[1], &ppid) || ppid != me) continue;
    std::string cmd;
    try {
      cmd = ReadFile("/proc/" + std::string(e->d_name) + "/cmdline");
    } catch (const std::exception&) {
    }
    out.emplace_back(static_cast<pid_t>(pid), cmd);
  }
  ::closedir(d);
  return out;
}

int KillOrphans(const std::vector<pid_t>& keep) {
  int killed = 0;
  pid_t own_group = ::getpgrp();
  for (const auto& [pid, cmd] : ChildProcesses()) {
    if (std::find(keep.begin(), keep.end(), pid) != keep.end()) continue;
    // A child reparented to us is a zombie or a process nobody waits for; in both cases ours
    // to end. Its group only where it leads one that is not ours (never signal ourselves).
    pid_t group = ::getpgid(pid);
    if (group == pid && group != own_group) ::kill(-group, SIGKILL);
    ::kill(pid, SIGKILL);
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    ++killed;
  }
  return killed;
}

}  // namespace ptxbench
