// The memory check: the candidate child run once under `compute-sanitizer --tool memcheck`,
// and its report reduced to what a person (or a model, in the agent's feedback) needs.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ptxbench {

enum class SanitizeMode { kAlways, kOnFailure, kNever };
SanitizeMode ParseSanitizeMode(const std::string& text);  // throws UsageError
std::string ToString(SanitizeMode m);

// The first error of a memcheck report, in parts.
struct MemcheckError {
  std::string kind;      // "Invalid __global__ read of size 2 bytes"
  std::string location;  // "gemm_kernel(...)+0x1b0 in candidate.cu:42"
  std::string thread;    // "by thread (31,0,0) in block (10,0,0)"
  std::string address;   // "Address 0x7f… is out of bounds" + the "and is … after …" line
  // One line: kind, where, who, what.
  std::string Summary() const;
};

struct MemcheckReport {
  int error_count = 0;  // from "ERROR SUMMARY: N errors"
  bool summary_seen = false;
  std::vector<MemcheckError> errors;  // the first few, in report order
};

// Parses compute-sanitizer's log. Lines that are not error blocks (the banner, warnings,
// the driver's own probing) are ignored.
MemcheckReport ParseMemcheckLog(std::string_view log);

// The wrapper command: compute-sanitizer and its options, writing its report to `log_path`.
std::vector<std::string> MemcheckCommand(const std::string& sanitizer, const std::string& log_path);
// The exit code compute-sanitizer is told to use when it found errors.
constexpr int kMemcheckErrorExitCode = 86;

std::optional<std::string> FindComputeSanitizer();

}  // namespace ptxbench
