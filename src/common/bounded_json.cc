#include "common/bounded_json.h"

#include "common/error.h"

namespace ptxbench {
namespace {

using nlohmann::json;

// Thrown from the parser's callback: the parser stops at once, with nothing built past it.
struct TooDeep {};
struct TooMany {};

json ParseWithLimits(std::string_view text, const JsonLimits& limits) {
  // The callback sees every object and array as it opens, with its depth, before any of its
  // contents is read: the walk never gets deeper than the limit. Every value is counted as it
  // is read (objects and arrays as they open), so no more than max_values are ever built.
  size_t values = 0;
  json::parser_callback_t guard = [&limits, &values](int depth, json::parse_event_t event, json&) {
    const bool opens =
        event == json::parse_event_t::object_start || event == json::parse_event_t::array_start;
    if (opens && depth >= limits.max_depth) throw TooDeep{};
    if ((opens || event == json::parse_event_t::value) && limits.max_values > 0 &&
        ++values > limits.max_values)
      throw TooMany{};
    return true;
  };
  return json::parse(text.begin(), text.end(), guard);
}

}  // namespace

json ParseBoundedJson(std::string_view text, const std::string& what, const JsonLimits& limits) {
  const std::string prefix = what.empty() ? "" : what + ": ";
  if (text.size() > limits.max_bytes)
    throw InputError(prefix + std::to_string(text.size()) + " bytes, over the limit of " +
                     std::to_string(limits.max_bytes));
  try {
    return ParseWithLimits(text, limits);
  } catch (const TooDeep&) {
    throw InputError(prefix + "nests deeper than " + std::to_string(limits.max_depth) +
                     " levels of objects and arrays");
  } catch (const TooMany&) {
    throw InputError(prefix + "holds more than " + std::to_string(limits.max_values) +
                     " values (numbers, strings, objects, arrays)");
  } catch (const json::exception& e) {
    throw InputError(prefix + "not valid JSON: " + std::string(e.what()));
  }
}

json ParseBoundedJsonOrDiscarded(std::string_view text, const JsonLimits& limits) {
  try {
    return ParseBoundedJson(text, "", limits);
  } catch (const Error&) {
    return json(json::value_t::discarded);
  }
}

}  // namespace ptxbench
