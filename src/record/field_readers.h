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

// The same, empty where there is none.
inline std::vector<std::string> StringsField(const nlohmann::json& j, const char* key) {
  return OptionalStrings(j, key).value_or(std::vector<std::string>{});
}

// A count or a seed (seeds use all 64 bits): nullopt where the field is missing or not a
// non-negative integer. A JSON text reads such numbers as unsigned; a value set in code may be
// a signed integer that is not negative, and reads the same.
inline std::optional<uint64_t> OptionalUnsigned(const nlohmann::json& j, const char* key) {
  const nlohmann::json* f = FindField(j, key);
  if (!f || !(f->is_number_unsigned() || (f->is_number_integer() && f->get<int64_t>() >= 0)))
    return std::nullopt;
  return f->get<uint64_t>();
}

// The same, 0 where there is none.
inline uint64_t UnsignedField(const nlohmann::json& j, const char* key) {
  return OptionalUnsigned(j, key).value_or(0);
}

// A report another module wrote (an object), verbatim; null where the field is missing or
// not an object.
inline nlohmann::json ObjectOrNull(const nlohmann::json& j, const char* key) {
  const nlohmann::json* f = FindField(j, key);
  return f && f->is_object() ? *f : nlohmann::json();
}

}  // namespace ptxbench::record_fields
