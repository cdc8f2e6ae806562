// The text of a chat message's content, in the two shapes providers and agents write it: a
// string, or a list of parts ({"type": "text", "text": ...}) whose texts are joined. Header
// only: read by upstream.cc (upstream's trajectories) and by the tests' scripted model server.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ptxbench {

// "" for anything else (null, a number, an object).
inline std::string ContentText(const nlohmann::json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (content.is_array())
    for (const auto& part : content)
      if (part.is_object() && part.contains("text") && part["text"].is_string())
        text += part["text"].get<std::string>();
  return text;
}

}  // namespace ptxbench
