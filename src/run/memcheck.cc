#include "run/memcheck.h"

#include <regex>

#include "common/enum_names.h"
#include "common/error.h"
#include "common/strings.h"
#include "common/subprocess.h"

namespace ptxbench {

constexpr EnumName<SanitizeMode> kSanitizeModeNames[] = {
    {SanitizeMode::kAlways, "always"},
    {SanitizeMode::kOnFailure, "on-failure"},
    {SanitizeMode::kNever, "never"},
};

SanitizeMode ParseSanitizeMode(const std::string& t) {
  if (auto mode = FindValue<SanitizeMode>(kSanitizeModeNames, t)) return *mode;
  throw UsageError("unknown --sanitize value '" + t + "' (expected " +
                   ChoicesOf<SanitizeMode>(kSanitizeModeNames) + ")");
}

std::string ToString(SanitizeMode m) { return NameOf<SanitizeMode>(kSanitizeModeNames, m, "?"); }

std::string MemcheckError::Summary() const {
  std::string s = kind;
  if (!location.empty()) s += " " + location;
  if (!thread.empty()) s += " " + thread;
  if (!address.empty()) s += ": " + address;
  return s;
}

MemcheckReport ParseMemcheckLog(std::string_view log) {
  static const std::regex summary(R"(ERROR SUMMARY: (\d+) error)");
  static const std::regex header(
      R"(^(Invalid |Misaligned |Out-of-range |Malloc/Free |Cuda |Uninitialized |Illegal |Hardware exception|Unspecified|Barrier error|Device-side assert|Stack overflow|Warp ))");
  MemcheckReport r;
  MemcheckError* current = nullptr;
  for (const std::string& raw : SplitLines(log)) {
    if (!StartsWith(raw, "=========")) continue;
    std::string body = raw.substr(9);
    std::smatch m;
    if (std::regex_search(body, m, summary)) {
      r.error_count = std::stoi(m[1]);
      r.summary_seen = true;
      current = nullptr;
      continue;
    }
    bool indented = !body.empty() && body[0] == ' ' && body.size() > 1 && body[1] == ' ';
    std::string text = Trim(body);
    if (text.empty()) {
      current = nullptr;
      continue;
    }
    if (!indented && std::regex_search(text, header)) {
      if (r.errors.size() < 8) {
        r.errors.push_back({text, "", "", ""});
        current = &r.errors.back();
      } else {
        current = nullptr;
      }
      continue;
    }
    if (!current) continue;
    if (StartsWith(text, "at ") && current->location.empty()) {
      current->location = text;
    } else if (StartsWith(text, "by thread")) {
      current->thread = text;
    } else if (StartsWith(text, "Address ") || StartsWith(text, "and is ")) {
      current->address += (current->address.empty() ? "" : " ") + text;
    } else if (StartsWith(text, "Saved host backtrace") || StartsWith(text, "Host Frame")) {
      current = nullptr;  // the rest is the host stack: not needed
    }
  }
  return r;
}

namespace {

// Whether this compute-sanitizer knows an option (older ones lack some), read from its help.
bool Supports(const std::string& sanitizer, const std::string& option) {
  static std::string help_of;
  static std::string help;
  if (help_of != sanitizer) {
    help = RunCommand({sanitizer, "--help"}, std::chrono::seconds(30)).output;
    help_of = sanitizer;
  }
  return help.find(option) != std::string::npos;
}

}  // namespace

std::vector<std::string> MemcheckCommand(const std::string& sanitizer,
                                         const std::string& log_path) {
  std::vector<std::string> cmd = {sanitizer, "--tool", "memcheck", "--leak-check", "no",
                                  // API errors are the candidate's to handle; and the runtime's own
                                  // probing would otherwise show up as noise.
                                  "--report-api-errors", "no", "--print-limit", "16",
                                  "--error-exitcode", std::to_string(kMemcheckErrorExitCode),
                                  "--log-file", log_path};
  // Pads every allocation, so that a read just past the end of one buffer lands in padding
  // the checker watches rather than in a neighbouring allocation.
  if (Supports(sanitizer, "--padding")) {
    cmd.push_back("--padding");
    cmd.push_back("256");
  }
  // The harness's own kernels (inputs, poison, checksums) need no checking.
  if (Supports(sanitizer, "--kernel-name-exclude")) {
    cmd.push_back("--kernel-name-exclude");
    cmd.push_back("kns=ptxbench_");
  }
  return cmd;
}

std::optional<std::string> FindComputeSanitizer() { return FindProgram("compute-sanitizer"); }

}  // namespace ptxbench
