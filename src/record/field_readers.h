// Lenient readers of the fields a typed layer keeps whether they were written (record/*_layer*):
// beside common/json_fields.h, which reads absent and wrong-typed fields as empty values.
// Internal to src/record.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/json_fields.h"

namespace ptxbench::record_fields {

// The string, or nullopt where the field is missing or not a string.
inline std::optional<std::string> OptionalString(const nlohmann::json& j, const char* key) {
  const nlohmann::json* f = FindField(j, key);
  return f && f->is_string() ? std::optional<std::string>(f->get<std::string>()) : std::nullopt;
}

// The strings of an array field (other elements left out), or nullopt where it is no array.
inline std::optional<std::vector<std::string>> OptionalStrings(const nlohmann::json& j,
                                                               const char* key) {
  const nlohmann::json* f = FindField(j, key);
  if (!f || !f->is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const nlohmann::json& s : *f)
    if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

// A count or a seed: 0 where the field is missing or not a non-negative integer.
inline uint64_t UnsignedField(const nlohmann::json& j, const char* key) {
  const nlohmann::json* f = FindField(j, key);
  return f && f->is_number_unsigned() ? f->get<uint64_t>() : 0;
}

// A report another module wrote (an object), verbatim; null where the field is missing or
// not an object.
inline nlohmann::json ObjectOrNull(const nlohmann::json& j, const char* key) {
  const nlohmann::json* f = FindField(j, key);
  return f && f->is_object() ? *f : nlohmann::json();
}

}  // namespace ptxbench::record_fields
