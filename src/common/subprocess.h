// Supervised child processes: start, read, deadline, kill, record the exit.
//
// Lifecycle of a Child (one evaluation never outlives it):
//
//   Start() ──► running ──(channel EOF / process exit)──► Wait() ─► exited | signaled
//                  │
//                  └──(deadline passes)──► SIGKILL to the whole process group ─► timed_out
//
// Every child gets its own process group (so a tool that forks, like compute-sanitizer, is
// killed with all it started) and dies with the parent (PR_SET_PDEATHSIG). Results travel on a
// dedicated channel descriptor, never on stdout, which a candidate can write to.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ptxbench {

class PreparedSandbox;

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  std::vector<std::pair<std::string, std::string>> set_env;
  std::vector<std::string> unset_env;
  // Where the child's stdout and stderr go (both to one file); empty: captured in memory.
  std::string log_path;
  // When >= 0, a pipe is made whose write end the child sees as this descriptor number.
  int channel_fd = -1;
  // The most the parent reads from the channel; past it the child is killed and the exit
  // says so (a flood costs the parent nothing). 0: 64 MiB.
  size_t channel_limit_bytes = 0;
  // When >= 0, a pipe the parent writes to (Child::SendControl) and the child reads as this
  // descriptor number: instructions that must not be known in advance.
  int control_fd = -1;
  // Confinement applied between fork and exec (common/sandbox.h); its environment allow-list
  // replaces ours. Null: the child inherits our environment and runs unconfined.
  const PreparedSandbox* sandbox = nullptr;
};

// How a child ended.
enum class ExitKind { kExited, kSignaled, kTimedOut };

struct ExitInfo {
  ExitKind kind = ExitKind::kExited;
  int code = 0;    // exit code when kExited
  int signal = 0;  // signal number when kSignaled
  double seconds = 0;
  // The child wrote more than the channel's limit and was killed for it.
  bool channel_overflow = false;
  // "exit code 3", "killed by signal 11 (Segmentation fault)", "timed out after 10 s".
  std::string Describe() const;
};

class Child {
 public:
  // Throws EnvironmentError when the program cannot be started (not found, not executable).
  static Child Start(const ProcessSpec& spec);
  Child(Child&& other) noexcept;
  Child& operator=(Child&&) = delete;
  ~Child();

  // Reads the channel until EOF, the process exits, or `deadline`; returns what arrived, split
  // into lines. Then reaps the child, killing its group when the deadline passed.
  // `on_line`, when given, sees each channel line as it arrives (before Wait returns), so the
  // parent can answer on the control pipe. With `handler_time_is_not_the_childs`, the time
  // `on_line` itself takes moves the deadline (a parent that waits there for a lock on the
  // child's behalf does not spend the child's time).
  ExitInfo Wait(std::chrono::steady_clock::time_point deadline,
                const std::function<void(const std::string&)>& on_line = {},
                bool handler_time_is_not_the_childs = false);
  // Writes a line to the child's control pipe; false when the child is gone.
  bool SendControl(const std::string& line);
  const std::vector<std::string>& channel_lines() const { return lines_; }
  // Output captured in memory when the spec had no log_path.
  const std::string& captured_output() const { return captured_; }
  pid_t pid() const { return pid_; }

 private:
  Child() = default;
  void KillGroup();
  // Stops reading a flooding channel: the group killed, the pipe closed, the partial line dropped.
  void AbandonChannel();
  pid_t pid_ = -1;
  int channel_read_ = -1;
  int capture_read_ = -1;
  int control_write_ = -1;
  size_t channel_limit_ = 0, channel_bytes_ = 0;
  std::chrono::steady_clock::time_point started_;
  std::vector<std::string> lines_;
  std::string partial_line_;
  std::string captured_;
  bool reaped_ = false;
};

// Runs a command to completion with a time limit, capturing stdout and stderr together.
struct CommandResult {
  ExitInfo exit;
  std::string output;
};
// Output beyond 8 MiB is dropped; `sandbox` (when given)
// confines the command (common/sandbox.h).
CommandResult RunCommand(const std::vector<std::string>& argv, std::chrono::seconds timeout,
                         const std::vector<std::pair<std::string, std::string>>& set_env = {},
                         const PreparedSandbox* sandbox = nullptr);

// This process's children (from /proc), each with its command line (NUL-separated, as
// /proc/PID/cmdline has it).
std::vector<std::pair<pid_t, std::string>> ChildProcesses();

// For a supervisor that made itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER): the
// descendants of a child that died are reparented to it. Kills (SIGKILL) every child that is
// not in `keep`, with its process group where it leads one of its own (a compiler started by
// a dead worker leads the group of its cicc and ptxas), and reaps it. Returns how many.
int KillOrphans(const std::vector<pid_t>& keep);

// Looks a program up in PATH (and, for CUDA tools, in $CUDA_HOME/bin and /usr/local/cuda/bin).
std::optional<std::string> FindProgram(const std::string& name);

}  // namespace ptxbench
