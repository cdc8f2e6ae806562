// One table of names per enum, read both ways. An enum that is written to a file, a log or a
// command line keeps its words in a single constexpr table, so that writing and parsing can
// never disagree and a new value is added in one place.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace ptxbench {

template <typename E>
using EnumName = std::pair<E, std::string_view>;

// The name of `value`, or `unknown` for a value the table lacks.
template <typename E>
std::string NameOf(std::span<const EnumName<E>> table, E value, std::string_view unknown) {
  for (const auto& [v, name] : table)
    if (v == value) return std::string(name);
  return std::string(unknown);
}

// The value named `name`, or nullopt: the caller decides whether that is an error.
template <typename E>
std::optional<E> FindValue(std::span<const EnumName<E>> table, std::string_view name) {
  for (const auto& [v, n] : table)
    if (n == name) return v;
  return std::nullopt;
}

// The value named `name`, or `unknown`.
template <typename E>
E ValueOf(std::span<const EnumName<E>> table, std::string_view name, E unknown) {
  return FindValue(table, name).value_or(unknown);
}

// "a, b or c": the names of a table, for an error message that lists the choices.
template <typename E>
std::string ChoicesOf(std::span<const EnumName<E>> table) {
  std::string out;
  for (size_t i = 0; i < table.size(); ++i) {
    if (i) out += i + 1 == table.size() ? " or " : ", ";
    out += table[i].second;
  }
  return out;
}

}  // namespace ptxbench
