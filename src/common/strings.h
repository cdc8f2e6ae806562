// Small string helpers shared by the modules.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ptxbench {

std::string Trim(std::string_view s);
std::vector<std::string> Split(std::string_view s, char sep);
std::vector<std::string> SplitLines(std::string_view s);
// "a, b, c": the parts with `sep` between them.
std::string Join(const std::vector<std::string>& parts, std::string_view sep = ", ");
bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);
// The last `max_lines` lines of `s`, with a marker line saying how many were cut.
std::string TailLines(std::string_view s, size_t max_lines);
// At most `max_chars` characters, with "…" when cut.
std::string Truncate(std::string_view s, size_t max_chars);

// One number through a printf format ("%.3g", "%.1f%%"): the formatters of reports and
// feedback, in one place.
std::string FormatNumber(const char* printf_format, double v);
// A count for people, three significant digits: 1234567 → "1.23M", 573412 → "573k", 42 → "42".
std::string HumanCount(double v);
// Parses a whole decimal integer; false on anything else (sign allowed, no spaces).
bool ParseInt64(std::string_view s, long long* out);

}  // namespace ptxbench
