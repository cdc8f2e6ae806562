// Lenient reads of optional JSON fields, for files written by other versions or by people
// (run.json, trajectories, job tags, layers kept as raw JSON): a missing field or one of the
// wrong type reads as absent, never as an exception.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ptxbench {

// The field, or nullptr where `j` is not an object or lacks it.
inline const nlohmann::json* FindField(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

// The field, or a null JSON value.
inline const nlohmann::json& FieldOrNull(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  const nlohmann::json* f = FindField(j, key);
  return f ? *f : kNull;
}

inline std::string StrField(const nlohmann::json& j, const char* key) {
  const nlohmann::json* f = FindField(j, key);
  return f && f->is_string() ? f->get<std::string>() : std::string();
}

inline std::optional<double> NumField(const nlohmann::json& j, const char* key) {
  const nlohmann::json* f = FindField(j, key);
  return f && f->is_number() ? std::optional<double>(f->get<double>()) : std::nullopt;
}

inline std::optional<bool> BoolField(const nlohmann::json& j, const char* key) {
  const nlohmann::json* f = FindField(j, key);
  return f && f->is_boolean() ? std::optional<bool>(f->get<bool>()) : std::nullopt;
}

// A number as an integer (a fraction is cut), 0 when absent.
inline int64_t IntField(const nlohmann::json& j, const char* key) {
  const nlohmann::json* f = FindField(j, key);
  return f && f->is_number() ? f->get<int64_t>() : 0;
}

// The field when it is an object, else an empty object.
inline const nlohmann::json& ObjField(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json* f = FindField(j, key);
  return f && f->is_object() ? *f : kEmpty;
}

// The field when it is an array, else an empty array.
inline const nlohmann::json& ArrField(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const nlohmann::json* f = FindField(j, key);
  return f && f->is_array() ? *f : kEmpty;
}

}  // namespace ptxbench

// Writes `value.f` under the key "f" for each field named: a writer whose keys are the
// struct's own field names says each name once. Readers that check their fields stay
// hand-written, because each names the bad one; lenient ones use PTXBENCH_JSON_GET_FIELDS.
// (nlohmann 3.12 has this as NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_ONLY_SERIALIZE; Debian 12 and
// Ubuntu 24.04 ship 3.11, so it is spelled with the per-field macro that both define.)
#define PTXBENCH_JSON_SET_FIELDS(json_object, value, ...)                    \
  do {                                                                       \
    nlohmann::json& nlohmann_json_j = (json_object);                         \
    const auto& nlohmann_json_t = (value);                                   \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(NLOHMANN_JSON_TO, __VA_ARGS__)) \
  } while (0)

// The lenient reader's twin of PTXBENCH_JSON_SET_FIELDS: `value.f = read(json_object, "f")` for
// each field named, `read` being one of the readers above (StrField, IntField, ...) or a
// callable of the same form.
#define PTXBENCH_JSON_GET_FIELD(field) \
  ptxbench_json_value.field = ptxbench_json_read(ptxbench_json_object, #field);
#define PTXBENCH_JSON_GET_FIELDS(read, json_object, value, ...)                     \
  do {                                                                              \
    auto&& ptxbench_json_read = (read);                                             \
    const nlohmann::json& ptxbench_json_object = (json_object);                     \
    auto& ptxbench_json_value = (value);                                            \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(PTXBENCH_JSON_GET_FIELD, __VA_ARGS__)) \
  } while (0)
