// Parsing JSON that someone else wrote (a request body, a file a user imports, a record or a
// child's line) with limits on its size and nesting, checked while the parser reads, before
// anything walks the document: a document 100,000 arrays deep is refused after 65 of them,
// never handed to code that recurses (nlohmann's dump(), our own walks) on a thread's stack.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ptxbench {

struct JsonLimits {
  // Deep enough for every document the project writes (records nest about 8 deep), far below
  // where a recursive walk would exhaust a thread's stack.
  int max_depth = 64;
  size_t max_bytes = size_t{64} << 20;
  // Values (scalars, objects, arrays; an object's keys not counted) at most; 0: no limit. A
  // document of known shape can say how many it needs: a request body of 2 MB holding 300,000
  // keys would cost ~40 MB of memory once parsed, and is refused after the first max_values.
  size_t max_values = 0;
};

// Throws ptxbench::Error (kInput) naming the limit when the text is larger, nested deeper or
// holds more values than `limits`, or not JSON at all; `what` names the document at the start
// of the message ("runs/x/run.json: not valid JSON: ..."; empty: no name, for callers that add
// their own).
nlohmann::json ParseBoundedJson(std::string_view text, const std::string& what,
                                const JsonLimits& limits = {});

// The same, returning a discarded value (is_discarded()) instead of throwing: for lines a
// child or a peer may have garbled, where the caller decides what a bad line means.
nlohmann::json ParseBoundedJsonOrDiscarded(std::string_view text, const JsonLimits& limits = {});

}  // namespace ptxbench
