// Parse-time checks of option values that CLI11 has no readable validator for. A failed check
// is a CLI11 ValidationError: main() prints it as one line naming the option, exit 2.
// Integer ranges, sets and existing paths use CLI11's own (CLI::Range, CLI::IsMember,
// CLI::ExistingFile, CLI::ExistingDirectory, CLI::ExistingPath); its PositiveNumber and
// NonNegativeNumber are not used because their message prints the limits of a double
// ("not in range 0.000000 to 179769313486231570814527…").
#pragma once

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace ptxbench {
namespace option_checks_detail {

// The whole text as a finite number, or false.
inline bool ParseFinite(const std::string& text, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace option_checks_detail

namespace option_checks_detail {

// A finite number for which `accept` holds; otherwise "Value IN is not a number `what`".
template <typename Accept>
CLI::Validator FiniteNumber(Accept accept, const std::string& what, const std::string& description,
                            const std::string& name) {
  return CLI::Validator(
      [accept, what](std::string& in) -> std::string {
        double v = 0;
        if (ParseFinite(in, &v) && accept(v)) return "";
        return "Value " + in + " is not a number " + what;
      },
      description, name);
}

}  // namespace option_checks_detail

// A number greater than 0 (a speedup, a threshold, a time budget that may not be zero).
inline CLI::Validator GreaterThanZero() {
  return option_checks_detail::FiniteNumber([](double v) { return v > 0; }, "greater than 0",
                                            "POSITIVE", "POSITIVE");
}

// A number from lo to hi, both allowed (a time budget where 0 means "no limit").
inline CLI::Validator NumberInRange(double lo, double hi) {
  auto text = [](double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  };
  const std::string range = "from " + text(lo) + " to " + text(hi);
  return option_checks_detail::FiniteNumber([lo, hi](double v) { return v >= lo && v <= hi; },
                                            range, "NUMBER", "NUMBER");
}

// A number of 0 or more (0 meaning "off" or "no limit").
inline CLI::Validator ZeroOrMore() {
  return option_checks_detail::FiniteNumber([](double v) { return v >= 0; }, "of 0 or more",
                                            "NONNEGATIVE", "NONNEGATIVE");
}

// A fraction in [0, 1).
inline CLI::Validator FractionBelowOne() {
  return option_checks_detail::FiniteNumber([](double v) { return v >= 0 && v < 1; }, "in [0, 1)",
                                            "FRACTION in [0, 1)", "FRACTION");
}

// The URL of an evaluation service: http://host:port (https:// too).
inline CLI::Validator ServiceUrl() {
  return CLI::Validator(
      [](std::string& in) -> std::string {
        for (const char* scheme : {"http://", "https://"}) {
          std::string s = scheme;
          if (in.size() > s.size() && in.compare(0, s.size(), s) == 0) return "";
        }
        return "Value " + in + " is not a service URL (http://host:port)";
      },
      "URL", "URL");
}

}  // namespace ptxbench
