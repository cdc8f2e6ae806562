// Small string helpers shared by the modules.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ptxbench {

std::string Trim(std::string_view s);

// Two lowercase hex digits per byte ("0a1b..."): digests, device UUIDs.
std::string LowerHex(std::string_view bytes);
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
// Whether `s` is well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
// `bad_offset`, when given and the answer is false, gets the offset of the first bad byte.
// The well-formed UTF-8 sequence at s[i]: its length, or 0 when there is none, with `*taken`
// the bytes of the maximal ill-formed subpart (at least 1). The one decoder of the project.
size_t Utf8SequenceAt(std::string_view s, size_t i, size_t* taken);
bool IsValidUtf8(std::string_view s, size_t* bad_offset = nullptr);
// `s` with each ill-formed UTF-8 sequence (a stray byte, a truncated sequence, an overlong form,
// a surrogate, a code point above U+10FFFF) replaced by U+FFFD, one per maximal ill-formed
// subpart as Unicode recommends: for text from outside (compiler and child logs) that must go
// into JSON, which nlohmann::json refuses to write when it is not valid UTF-8.
std::string ValidUtf8(std::string_view s);

// One CSV field (RFC 4180): quoted, with quotes doubled, when it holds a comma, a quote, a
// carriage return or a newline; as it is otherwise. Every CSV ptxbench writes goes through it.
std::string CsvField(std::string_view s);
// Fields joined by commas, each through CsvField, ended by a newline.
std::string CsvRow(const std::vector<std::string>& fields);

}  // namespace ptxbench
