// Errors that library code reports. Library code never calls exit(): it
// throws ptxbench::Error for bad input or environment problems, and main()
// (or a child's entry point) turns that into a one-line message and an exit
// code. Candidate failures are not exceptions: they are statuses on a record.
#pragma once

#include <stdexcept>
#include <string>

namespace ptxbench {

// What kind of problem an Error is, so that main() can choose the exit code.
enum class ErrorKind {
  kUsage,        // bad command line, unknown task or workload, malformed value
  kInput,        // missing or unreadable file, malformed data file
  kEnvironment,  // a tool or device that the request needs is missing
  kInternal,     // a bug or an unexpected failure of the harness itself
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

inline Error UsageError(const std::string& m) { return Error(ErrorKind::kUsage, m); }
inline Error InputError(const std::string& m) { return Error(ErrorKind::kInput, m); }
inline Error EnvironmentError(const std::string& m) { return Error(ErrorKind::kEnvironment, m); }
inline Error InternalError(const std::string& m) { return Error(ErrorKind::kInternal, m); }

}  // namespace ptxbench
