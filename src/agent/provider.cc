#include "agent/provider.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <optional>
#include <random>
#include <string_view>
#include <thread>

#include "common/error.h"
#include "common/strings.h"

namespace ptxbench {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxReplyBytes = size_t{256} << 20;  // a reply beyond this is not a chat reply
constexpr size_t kErrorChars = 300;                   // of the provider's message, in errors
constexpr long kConnectTimeoutMs = 30000;
constexpr int64_t kDefaultAnthropicMaxTokens = 16384;

// ---------------------------------------------------------------------------------------------
// Small helpers

double SecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// One line: newlines and tabs become spaces, at most `max_chars` characters.
std::string OneLine(std::string_view s, size_t max_chars = kErrorChars) {
  std::string out;
  out.reserve(std::min(s.size(), max_chars + 8));
  for (char c : s) {
    if (out.size() > max_chars * 2) break;
    out.push_back(c == '\n' || c == '\r' || c == '\t' ? ' ' : c);
  }
  return Truncate(Trim(out), max_chars);
}

int64_t IntAt(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object()) return 0;
    auto it = p->find(k);
    if (it == p->end()) return 0;
    p = &*it;
  }
  return p->is_number() ? p->get<int64_t>() : 0;
}

std::string StringAt(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// The human part of an error reply: error.message in all three formats ({"error": {"message":
// ...}}), else a string "error" or "message", else the body's start.
std::string ErrorMessageOf(const std::string& body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_array() && !j.empty()) j = j[0];  // Gemini has answered with [{"error": ...}]
  if (j.is_object()) {
    if (j.contains("error")) {
      const json& e = j["error"];
      if (e.is_string()) return OneLine(e.get<std::string>());
      std::string m = StringAt(e, "message");
      std::string type = StringAt(e, "type");
      if (type.empty()) type = StringAt(e, "status");
      if (!m.empty()) return OneLine(type.empty() ? m : type + ": " + m);
    }
    std::string m = StringAt(j, "message");
    if (!m.empty()) return OneLine(m);
  }
  return OneLine(body);
}

// Retry-After: delta-seconds or an HTTP date (RFC 9110 section 10.2.3).
std::optional<double> ParseRetryAfter(const std::string& value) {
  std::string v = Trim(value);
  if (v.empty()) return std::nullopt;
  char* end = nullptr;
  double s = std::strtod(v.c_str(), &end);
  if (end && *end == '\0' && std::isfinite(s)) return std::max(0.0, s);
  time_t when = curl_getdate(v.c_str(), nullptr);
  if (when == -1) return std::nullopt;
  return std::max(0.0, std::difftime(when, std::time(nullptr)));
}

long EnvLong(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  return end && *end == '\0' && x >= 0 ? x : fallback;
}

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      throw EnvironmentError("libcurl could not be initialised");
  });
}

// ---------------------------------------------------------------------------------------------
// Server-sent events (https://html.spec.whatwg.org/multipage/server-sent-events.html), parsed
// as the bytes arrive: an event is its "event:" name and its "data:" lines joined by newlines,
// dispatched at the blank line that ends it.

class SseParser {
 public:
  template <typename F>
  void Feed(const char* p, size_t n, F&& on_event) {
    buf_.append(p, n);
    size_t start = 0;
    for (;;) {
      size_t nl = buf_.find('\n', start);
      if (nl == std::string::npos) break;
      size_t end = nl > start && buf_[nl - 1] == '\r' ? nl - 1 : nl;
      Line(std::string_view(buf_).substr(start, end - start), on_event);
      start = nl + 1;
    }
    buf_.erase(0, start);
  }
  // At the end of the body: a last line without its newline, an event without its blank line.
  template <typename F>
  void Finish(F&& on_event) {
    if (!buf_.empty()) {
      std::string rest;
      rest.swap(buf_);
      if (!rest.empty() && rest.back() == '\r') rest.pop_back();
      Line(rest, on_event);
    }
    Line("", on_event);
  }
  int events() const { return events_; }

 private:
  template <typename F>
  void Line(std::string_view line, F&& on_event) {
    if (line.empty()) {
      if (has_data_) {
        ++events_;
        on_event(event_, data_);
      }
      event_.clear();
      data_.clear();
      has_data_ = false;
      return;
    }
    if (line[0] == ':') return;  // a comment (keep-alive)
    size_t colon = line.find(':');
    std::string_view field = line.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
    if (field == "event") {
      event_.assign(value);
    } else if (field == "data") {
      if (has_data_) data_.push_back('\n');
      data_.append(value);
      has_data_ = true;
    }
  }

  std::string buf_, event_, data_;
  bool has_data_ = false;
  int events_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Wire formats

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"; the key's header among them
  std::string body;
};

// What one reply amounted to.
struct Parsed {
  enum Kind { kOk, kMalformed, kModelError, kRetryable } kind = kOk;
  std::string text, finish_reason, error;
  Usage usage;
};

// The state of one streamed reply, built up event by event.
struct StreamState {
  std::string text, finish_reason;
  Usage usage;
  bool done = false;              // the format's end marker arrived: the reply is complete
  std::optional<Parsed> failure;  // the first event that made the reply unusable
};

class WireFormat {
 public:
  virtual ~WireFormat() = default;
  virtual HttpRequest Build(const ModelConfig& c, const std::string& key,
                            const std::vector<ChatMessage>& messages, bool stream) const = 0;
  virtual Parsed ParseReply(const json& j) const = 0;
  // One event of a stream: `data` is its JSON (not an error object: the caller handles those).
  virtual void OnEvent(StreamState& s, const std::string& event, const json& data) const = 0;
  // A complete stream's result (s.done is set); the default takes it as it is.
  virtual Parsed FinishStream(const StreamState& s) const {
    Parsed p;
    p.text = s.text;
    p.finish_reason = s.finish_reason;
    p.usage = s.usage;
    return p;
  }
};

Parsed Malformed(const std::string& why) {
  Parsed p;
  p.kind = Parsed::kMalformed;
  p.error = "malformed reply: " + why;
  return p;
}

Parsed ModelRefused(const std::string& why) {
  Parsed p;
  p.kind = Parsed::kModelError;
  p.error = why;
  return p;
}

// Joins the system messages (all providers but OpenAI take the system prompt apart).
std::string SystemText(const std::vector<ChatMessage>& messages) {
  std::string s;
  for (const auto& m : messages) {
    if (m.role != "system") continue;
    if (!s.empty()) s += "\n\n";
    s += m.content;
  }
  return s;
}

// --- OpenAI chat completions (https://platform.openai.com/docs/api-reference/chat) ----------

class OpenAiFormat : public WireFormat {
 public:
  HttpRequest Build(const ModelConfig& c, const std::string& key,
                    const std::vector<ChatMessage>& messages, bool stream) const override {
    json body = json::object();
    body["model"] = c.model;
    json msgs = json::array();
    for (const auto& m : messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
    body["messages"] = std::move(msgs);
    body["stream"] = stream;
    for (const auto& [k, v] : c.sampling.items())
      if (k != "model" && k != "messages" && k != "stream") body[k] = v;
    // reasoning.effort is the API's reasoning_effort; anything else goes through as it is
    // (e.g. vLLM's {"chat_template_kwargs": {"enable_thinking": true}}).
    for (const auto& [k, v] : c.reasoning.items()) body[k == "effort" ? "reasoning_effort" : k] = v;
    if (stream && !body.contains("stream_options"))
      body["stream_options"] = {{"include_usage", true}};
    HttpRequest r;
    r.url = c.base_url + "/chat/completions";
    r.headers = {"Content-Type: application/json",
                 stream ? "Accept: text/event-stream" : "Accept: application/json"};
    if (!key.empty()) r.headers.push_back("Authorization: Bearer " + key);
    r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    return r;
  }

  static void ReadUsage(const json& u, Usage& usage) {
    if (!u.is_object()) return;
    usage.prompt_tokens = IntAt(u, {"prompt_tokens"});
    usage.completion_tokens = IntAt(u, {"completion_tokens"});
    usage.reasoning_tokens = IntAt(u, {"completion_tokens_details", "reasoning_tokens"});
  }

  // content is a string, or (some compatible servers) a list of {"type": "text", "text"} parts.
  static std::optional<std::string> ContentText(const json& content) {
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) return std::nullopt;
    std::string s;
    for (const auto& part : content)
      if (StringAt(part, "type") == "text") s += StringAt(part, "text");
    return s;
  }

  Parsed ParseReply(const json& j) const override {
    if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() ||
        j["choices"].empty())
      return Malformed("no choices");
    const json& choice = j["choices"][0];
    if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object())
      return Malformed("no choices[0].message");
    const json& msg = choice["message"];
    Parsed p;
    p.finish_reason = StringAt(choice, "finish_reason");
    std::optional<std::string> text =
        msg.contains("content") ? ContentText(msg["content"]) : std::nullopt;
    if (!text) {
      std::string refusal = StringAt(msg, "refusal");
      if (!refusal.empty()) return ModelRefused("the model refused: " + OneLine(refusal));
      if (p.finish_reason == "content_filter")
        return ModelRefused("the reply was withheld by the content filter");
      return Malformed("no choices[0].message.content");
    }
    p.text = std::move(*text);
    if (j.contains("usage")) ReadUsage(j["usage"], p.usage);
    return p;
  }

  void OnEvent(StreamState& s, const std::string&, const json& j) const override {
    if (!j.is_object()) return;
    if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()) {
      const json& c = j["choices"][0];
      if (c.is_object() && c.contains("delta") && c["delta"].is_object()) {
        const json& d = c["delta"];
        if (d.contains("content")) {
          if (auto t = ContentText(d["content"])) s.text += *t;
        }
      }
      std::string finish = StringAt(c, "finish_reason");
      if (!finish.empty()) {
        s.finish_reason = finish;
        s.done = true;
      }
    }
    if (j.contains("usage")) ReadUsage(j["usage"], s.usage);
  }

  Parsed FinishStream(const StreamState& s) const override {
    if (s.finish_reason == "content_filter" && s.text.empty())
      return ModelRefused("the reply was withheld by the content filter");
    return WireFormat::FinishStream(s);
  }
};

// --- Anthropic Messages (https://docs.anthropic.com/en/api/messages) ------------------------

class AnthropicFormat : public WireFormat {
 public:
  HttpRequest Build(const ModelConfig& c, const std::string& key,
                    const std::vector<ChatMessage>& messages, bool stream) const override {
    json body = json::object();
    body["model"] = c.model;
    int64_t max_tokens = kDefaultAnthropicMaxTokens;
    if (c.sampling.contains("max_tokens") && c.sampling["max_tokens"].is_number_integer())
      max_tokens = c.sampling["max_tokens"].get<int64_t>();
    body["max_tokens"] = max_tokens;
    std::string system = SystemText(messages);
    if (!system.empty()) body["system"] = system;
    json msgs = json::array();
    for (const auto& m : messages)
      if (m.role != "system") msgs.push_back({{"role", m.role}, {"content", m.content}});
    body["messages"] = std::move(msgs);
    if (stream) body["stream"] = true;
    for (const auto& [k, v] : c.sampling.items())
      if (k != "max_tokens" && k != "model" && k != "messages" && k != "stream" && k != "system")
        body[k] = v;
    // reasoning is the "thinking" object: {"type": "enabled", "budget_tokens": N}.
    if (!c.reasoning.empty()) body["thinking"] = c.reasoning;
    HttpRequest r;
    r.url = c.base_url + "/messages";
    r.headers = {"Content-Type: application/json", "anthropic-version: 2023-06-01",
                 stream ? "Accept: text/event-stream" : "Accept: application/json"};
    if (!key.empty()) r.headers.push_back("x-api-key: " + key);
    r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    return r;
  }

  // input_tokens leaves out what was read from or written to the prompt cache.
  static int64_t PromptTokens(const json& u) {
    return IntAt(u, {"input_tokens"}) + IntAt(u, {"cache_creation_input_tokens"}) +
           IntAt(u, {"cache_read_input_tokens"});
  }

  static Parsed CheckStop(Parsed p) {
    if (p.finish_reason == "refusal" && p.text.empty())
      return ModelRefused("the model refused (stop_reason refusal)");
    return p;
  }

  Parsed ParseReply(const json& j) const override {
    if (!j.is_object() || !j.contains("content") || !j["content"].is_array())
      return Malformed("no content");
    Parsed p;
    for (const auto& block : j["content"])
      if (StringAt(block, "type") == "text") p.text += StringAt(block, "text");
    p.finish_reason = StringAt(j, "stop_reason");
    if (j.contains("usage")) {
      p.usage.prompt_tokens = PromptTokens(j["usage"]);
      p.usage.completion_tokens = IntAt(j["usage"], {"output_tokens"});
    }
    return CheckStop(std::move(p));
  }

  void OnEvent(StreamState& s, const std::string& event, const json& j) const override {
    std::string type = StringAt(j, "type");
    if (type.empty()) type = event;
    if (type == "message_start") {
      if (j.contains("message") && j["message"].contains("usage")) {
        const json& u = j["message"]["usage"];
        s.usage.prompt_tokens = PromptTokens(u);
        s.usage.completion_tokens = IntAt(u, {"output_tokens"});
      }
    } else if (type == "content_block_delta") {
      if (j.contains("delta") && StringAt(j["delta"], "type") == "text_delta")
        s.text += StringAt(j["delta"], "text");
    } else if (type == "message_delta") {
      if (j.contains("delta")) {
        std::string stop = StringAt(j["delta"], "stop_reason");
        if (!stop.empty()) s.finish_reason = stop;
      }
      if (j.contains("usage") && j["usage"].is_object()) {
        const json& u = j["usage"];
        if (u.contains("output_tokens")) s.usage.completion_tokens = IntAt(u, {"output_tokens"});
        if (u.contains("input_tokens")) s.usage.prompt_tokens = PromptTokens(u);
      }
    } else if (type == "message_stop") {
      s.done = true;
    }
  }

  Parsed FinishStream(const StreamState& s) const override {
    return CheckStop(WireFormat::FinishStream(s));
  }
};

// --- Google Gemini (https://ai.google.dev/api/generate-content) -----------------------------

class GeminiFormat : public WireFormat {
 public:
  HttpRequest Build(const ModelConfig& c, const std::string& key,
                    const std::vector<ChatMessage>& messages, bool stream) const override {
    json body = json::object();
    json contents = json::array();
    for (const auto& m : messages) {
      if (m.role == "system") continue;
      contents.push_back({{"role", m.role == "assistant" ? "model" : "user"},
                          {"parts", json::array({{{"text", m.content}}})}});
    }
    body["contents"] = std::move(contents);
    std::string system = SystemText(messages);
    if (!system.empty()) body["systemInstruction"] = {{"parts", json::array({{{"text", system}}})}};
    // Sampling in the OpenAI spelling is translated; anything else goes through as it is
    // (so the API's own names, "maxOutputTokens", work too).
    static const std::vector<std::pair<std::string, std::string>> kNames = {
        {"top_p", "topP"},
        {"top_k", "topK"},
        {"max_tokens", "maxOutputTokens"},
        {"max_output_tokens", "maxOutputTokens"},
        {"stop", "stopSequences"},
        {"presence_penalty", "presencePenalty"},
        {"frequency_penalty", "frequencyPenalty"},
        {"candidate_count", "candidateCount"}};
    json gen = json::object();
    for (const auto& [k, v] : c.sampling.items()) {
      std::string name = k;
      for (const auto& [from, to] : kNames)
        if (k == from) name = to;
      gen[name] = v;
    }
    // reasoning is the thinkingConfig: {"thinkingBudget": N} or {"thinkingLevel": "high"}.
    if (!c.reasoning.empty()) gen["thinkingConfig"] = c.reasoning;
    if (!gen.empty()) body["generationConfig"] = std::move(gen);
    std::string model = c.model;
    if (StartsWith(model, "models/")) model = model.substr(7);
    HttpRequest r;
    r.url = c.base_url + "/models/" + model +
            (stream ? ":streamGenerateContent?alt=sse" : ":generateContent");
    r.headers = {"Content-Type: application/json",
                 stream ? "Accept: text/event-stream" : "Accept: application/json"};
    if (!key.empty()) r.headers.push_back("x-goog-api-key: " + key);
    r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    return r;
  }

  static void ReadUsage(const json& u, Usage& usage) {
    if (!u.is_object()) return;
    usage.prompt_tokens = IntAt(u, {"promptTokenCount"});
    usage.reasoning_tokens = IntAt(u, {"thoughtsTokenCount"});
    // candidatesTokenCount leaves the thoughts out; completion_tokens counts them (as OpenAI's).
    usage.completion_tokens = IntAt(u, {"candidatesTokenCount"}) + usage.reasoning_tokens;
  }

  // Appends the candidate's non-thought text; returns false when it has no content at all.
  static bool AppendText(const json& candidate, std::string& text) {
    if (!candidate.contains("content") || !candidate["content"].is_object()) return false;
    const json& content = candidate["content"];
    if (!content.contains("parts") || !content["parts"].is_array()) return false;
    for (const auto& part : content["parts"]) {
      if (part.is_object() && part.contains("thought") && part["thought"].is_boolean() &&
          part["thought"].get<bool>())
        continue;
      text += StringAt(part, "text");
    }
    return true;
  }

  // A candidate stopped for safety, recitation and the like, with nothing said: the model's.
  static Parsed CheckFinish(Parsed p) {
    const std::string& f = p.finish_reason;
    bool normal = f.empty() || f == "STOP" || f == "MAX_TOKENS" || f == "FINISH_REASON_UNSPECIFIED";
    if (!normal && p.text.empty())
      return ModelRefused("the reply was blocked (finishReason " + f + ")");
    return p;
  }

  static std::string BlockReason(const json& j) {
    return j.contains("promptFeedback") ? StringAt(j["promptFeedback"], "blockReason") : "";
  }

  Parsed ParseReply(const json& j) const override {
    if (!j.is_object()) return Malformed("not an object");
    if (!j.contains("candidates") || !j["candidates"].is_array() || j["candidates"].empty()) {
      std::string block = BlockReason(j);
      if (!block.empty()) return ModelRefused("the prompt was blocked (" + block + ")");
      return Malformed("no candidates");
    }
    const json& cand = j["candidates"][0];
    Parsed p;
    p.finish_reason = StringAt(cand, "finishReason");
    if (!AppendText(cand, p.text) && p.finish_reason.empty())
      return Malformed("no candidates[0].content");
    if (j.contains("usageMetadata")) ReadUsage(j["usageMetadata"], p.usage);
    return CheckFinish(std::move(p));
  }

  void OnEvent(StreamState& s, const std::string&, const json& j) const override {
    if (!j.is_object()) return;
    if (j.contains("candidates") && j["candidates"].is_array() && !j["candidates"].empty()) {
      const json& cand = j["candidates"][0];
      AppendText(cand, s.text);
      std::string finish = StringAt(cand, "finishReason");
      if (!finish.empty()) {
        s.finish_reason = finish;
        s.done = true;
      }
    } else {
      std::string block = BlockReason(j);
      if (!block.empty() && !s.failure)
        s.failure = ModelRefused("the prompt was blocked (" + block + ")");
    }
    if (j.contains("usageMetadata")) ReadUsage(j["usageMetadata"], s.usage);
  }

  Parsed FinishStream(const StreamState& s) const override {
    return CheckFinish(WireFormat::FinishStream(s));
  }
};

// ---------------------------------------------------------------------------------------------
// One HTTP attempt

struct Attempt {
  enum Kind { kOk, kRetry, kDeadline, kInfra, kModel } kind = kInfra;
  Parsed reply;
  int http_status = 0;
  std::optional<double> retry_after_s;
  std::string error;
};

struct Transfer {
  CURL* curl = nullptr;
  const WireFormat* wire = nullptr;
  bool stream = false;
  long status = 0;
  std::string body;  // the raw reply (streams too: an error reply, or a server that ignored
                     // "stream" and answered with one JSON object)
  bool too_large = false;
  SseParser sse;
  StreamState state;
  std::optional<double> retry_after_s, retry_after_ms;

  void OnEvent(const std::string& event, const std::string& data) {
    if (state.failure) return;
    std::string_view d = data;
    while (!d.empty() && (d.back() == ' ' || d.back() == '\n')) d.remove_suffix(1);
    if (d == "[DONE]") {
      state.done = true;
      return;
    }
    json j = json::parse(d, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      state.failure = Malformed("a stream event is not JSON: " + OneLine(d, 80));
      return;
    }
    if (j.is_object() && j.contains("error")) {  // an error in the middle of a stream
      Parsed p;
      p.kind = Parsed::kRetryable;
      p.error = "the stream carried an error: " + ErrorMessageOf(std::string(d));
      state.failure = std::move(p);
      return;
    }
    wire->OnEvent(state, event, j);
  }
};

size_t WriteCallback(char* p, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t bytes = size * n;
  if (t->status == 0) curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->status);
  if (t->body.size() + bytes > kMaxReplyBytes) {
    t->too_large = true;
    return 0;  // aborts the transfer
  }
  t->body.append(p, bytes);
  if (t->stream && t->status >= 200 && t->status < 300)
    t->sse.Feed(p, bytes, [t](const std::string& e, const std::string& d) { t->OnEvent(e, d); });
  return bytes;
}

size_t HeaderCallback(char* p, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t bytes = size * n;
  std::string_view line(p, bytes);
  if (StartsWith(line, "HTTP/")) {  // a new response (after a 100 Continue, say)
    t->retry_after_s.reset();
    t->retry_after_ms.reset();
    t->status = 0;
    return bytes;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return bytes;
  std::string name = Lower(Trim(line.substr(0, colon)));
  std::string value = Trim(line.substr(colon + 1));
  if (name == "retry-after") {
    t->retry_after_s = ParseRetryAfter(value);
  } else if (name == "retry-after-ms") {  // OpenAI's, finer than Retry-After
    char* end = nullptr;
    double ms = std::strtod(value.c_str(), &end);
    if (end && *end == '\0' && std::isfinite(ms) && ms >= 0) t->retry_after_ms = ms;
  }
  return bytes;
}

bool RetryableCurlError(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_PARTIAL_FILE:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING:
      return true;
    default:
      return false;
  }
}

// ---------------------------------------------------------------------------------------------
// The provider

class HttpProvider : public ChatProvider {
 public:
  HttpProvider(ModelConfig config, std::string key, std::unique_ptr<WireFormat> wire)
      : config_(std::move(config)), key_(std::move(key)), wire_(std::move(wire)) {
    backoff_base_ms_ = EnvLong("PTXBENCH_RETRY_BASE_MS", 1000);
    backoff_cap_ms_ = std::max(backoff_base_ms_, EnvLong("PTXBENCH_RETRY_CAP_MS", 60000));
    stall_s_ = EnvLong("PTXBENCH_STALL_S", 300);
  }

  ChatReply Complete(const std::vector<ChatMessage>& messages) override {
    Clock::time_point start = Clock::now();
    Clock::time_point deadline = start + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(config_.timeout_s));
    HttpRequest request = wire_->Build(config_, key_, messages, config_.stream);
    ChatReply reply;
    reply.outcome = ChatOutcome::kInfraError;
    for (int attempt = 0;; ++attempt) {
      Attempt a = Once(request, deadline);
      reply.attempts = attempt + 1;
      reply.http_status = a.http_status;
      if (a.kind == Attempt::kOk) {
        reply.outcome = ChatOutcome::kOk;
        reply.text = std::move(a.reply.text);
        reply.finish_reason = std::move(a.reply.finish_reason);
        reply.usage = a.reply.usage;
        reply.error.clear();
        break;
      }
      reply.finish_reason.clear();
      if (a.kind == Attempt::kModel) {
        reply.outcome = ChatOutcome::kModelError;
        reply.error = a.error;
        break;
      }
      if (a.kind == Attempt::kInfra) {
        reply.error = a.error;
        break;
      }
      if (a.kind == Attempt::kDeadline) {
        reply.error = "no complete reply within the deadline of " + Seconds(config_.timeout_s) +
                      " (" + Attempts(reply.attempts) + "): " + a.error;
        break;
      }
      // kRetry
      if (attempt >= config_.max_retries) {
        reply.error = "gave up after " + Attempts(reply.attempts) + ": " + a.error;
        break;
      }
      double wait = a.retry_after_s ? *a.retry_after_s : Backoff(attempt);
      double left = SecondsBetween(Clock::now(), deadline);
      if (wait >= left) {
        reply.error = a.error + "; the next attempt (in " + Seconds(wait) +
                      ") would start past the deadline of " + Seconds(config_.timeout_s) + " (" +
                      Attempts(reply.attempts) + ")";
        break;
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    }
    reply.seconds = SecondsBetween(start, Clock::now());
    reply.error = Redact(reply.error);
    return reply;
  }

  std::string Describe() const override {
    std::string url = config_.base_url;
    size_t q = url.find('?');
    if (q != std::string::npos) url.resize(q);
    return Redact(config_.provider + " " + config_.model + " at " + url);
  }

 private:
  static std::string Seconds(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, s < 10 ? "%.2f s" : "%.0f s", s);
    return buf;
  }
  static std::string Attempts(int n) {
    return std::to_string(n) + (n == 1 ? " attempt" : " attempts");
  }

  // Exponential backoff with full jitter: uniform in [0, min(cap, base * 2^attempt)].
  double Backoff(int attempt) const {
    double ceiling = std::min<double>(static_cast<double>(backoff_cap_ms_),
                                      backoff_base_ms_ * std::pow(2.0, std::min(attempt, 30)));
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return std::uniform_real_distribution<double>(0.0, ceiling)(rng) / 1000.0;
  }

  std::string Redact(std::string s) const {
    if (key_.empty()) return s;
    for (size_t at = s.find(key_); at != std::string::npos; at = s.find(key_, at))
      s.replace(at, key_.size(), "[redacted]");
    return s;
  }

  Attempt Once(const HttpRequest& request, Clock::time_point deadline) const {
    Attempt a;
    double left_s = SecondsBetween(Clock::now(), deadline);
    if (left_s <= 0) {
      a.kind = Attempt::kDeadline;
      a.error = "no time left";
      return a;
    }
    long left_ms = std::max(1L, static_cast<long>(std::ceil(left_s * 1000)));

    std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
    if (!curl) {
      a.error = "libcurl could not make a handle";
      return a;
    }
    curl_slist* headers = nullptr;
    for (const auto& h : request.headers) headers = curl_slist_append(headers, h.c_str());
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
    std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_guard(headers,
                                                                             curl_slist_free_all);
    Transfer t;
    t.curl = curl.get();
    t.wire = wire_.get();
    t.stream = config_.stream;
    char errbuf[CURL_ERROR_SIZE] = {0};
    CURL* c = curl.get();
    curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, WriteCallback);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, HeaderCallback);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, left_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, std::min(left_ms, kConnectTimeoutMs));
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "ptxbench/" PTXBENCH_VERSION);
    if (config_.stream) {
      // A stream that goes silent is stuck: give up on this attempt (and retry) rather than
      // wait for the whole deadline.
      if (stall_s_ > 0) {
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, stall_s_);
      }
    } else {
      curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl can decode
    }

    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    a.http_status = static_cast<int>(status);
    if (t.retry_after_ms)
      a.retry_after_s = *t.retry_after_ms / 1000.0;
    else if (t.retry_after_s)
      a.retry_after_s = t.retry_after_s;
    bool ok_status = status >= 200 && status < 300;

    if (rc != CURLE_OK) {
      std::string what = errbuf[0] ? OneLine(errbuf) : curl_easy_strerror(rc);
      if (t.too_large) {
        a.kind = Attempt::kInfra;
        a.error = "the reply is larger than " + std::to_string(kMaxReplyBytes >> 20) + " MiB";
        return a;
      }
      if (ok_status && t.stream && t.state.failure && t.state.failure->kind != Parsed::kRetryable)
        return FromParsed(std::move(*t.state.failure), std::move(a));
      bool past_deadline = Clock::now() >= deadline - std::chrono::milliseconds(20);
      if (rc == CURLE_OPERATION_TIMEDOUT && past_deadline) {
        a.kind = Attempt::kDeadline;
        a.error = what;
        return a;
      }
      a.kind = RetryableCurlError(rc) ? Attempt::kRetry : Attempt::kInfra;
      if (ok_status)
        a.error = std::string(t.stream ? "the stream was cut" : "the reply was cut") + ": " + what;
      else if (status > 0)
        a.error = "HTTP " + std::to_string(status) + ", then: " + what;
      else
        a.error = "cannot reach " + request.url.substr(0, request.url.find('?')) + ": " + what;
      return a;
    }

    if (!ok_status) {
      std::string message = ErrorMessageOf(t.body);
      a.error = "HTTP " + std::to_string(status) + (message.empty() ? "" : ": " + message);
      if (status == 408 || status == 429 || (status >= 500 && status <= 599)) {
        a.kind = Attempt::kRetry;
      } else if (status == 401 || status == 403 || status == 404) {
        // A wrong key, a key without access, a wrong URL or model id: ours to fix, not the
        // model's failure; not retried now (it would fail the same), --resume retries it.
        a.kind = Attempt::kInfra;
        a.error += " (check the key, base_url and model id)";
      } else if (status >= 400 && status <= 499)
        a.kind = Attempt::kModel;
      else
        a.kind = Attempt::kInfra;  // 1xx or 3xx: not an answer
      return a;
    }

    if (!t.stream) {
      json j = json::parse(t.body, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) return FromParsed(Malformed("not JSON: " + OneLine(t.body, 80)), a);
      if (j.is_object() && j.contains("error")) {
        Parsed p;
        p.kind = Parsed::kRetryable;
        p.error = "HTTP " + std::to_string(status) + " with an error: " + ErrorMessageOf(t.body);
        return FromParsed(std::move(p), std::move(a));
      }
      return FromParsed(wire_->ParseReply(j), std::move(a));
    }

    t.sse.Finish([&t](const std::string& e, const std::string& d) { t.OnEvent(e, d); });
    if (t.sse.events() == 0) {
      // Not a stream: a server that ignored "stream" may answer with one JSON reply.
      json j = json::parse(t.body, nullptr, /*allow_exceptions=*/false);
      if (j.is_object() && !j.contains("error")) return FromParsed(wire_->ParseReply(j), a);
      if (j.is_object()) {
        Parsed p;
        p.kind = Parsed::kRetryable;
        p.error = "HTTP " + std::to_string(status) + " with an error: " + ErrorMessageOf(t.body);
        return FromParsed(std::move(p), std::move(a));
      }
      if (Trim(t.body).empty()) {
        Parsed p;
        p.kind = Parsed::kRetryable;
        p.error = "the stream ended before any event";
        return FromParsed(std::move(p), std::move(a));
      }
      return FromParsed(Malformed("not a stream of events: " + OneLine(t.body, 80)), a);
    }
    if (t.state.failure) return FromParsed(std::move(*t.state.failure), std::move(a));
    if (!t.state.done) {
      Parsed p;
      p.kind = Parsed::kRetryable;
      p.error = "the stream ended before the reply was complete";
      return FromParsed(std::move(p), std::move(a));
    }
    return FromParsed(wire_->FinishStream(t.state), std::move(a));
  }

  static Attempt FromParsed(Parsed p, Attempt a) {
    switch (p.kind) {
      case Parsed::kOk:
        a.kind = Attempt::kOk;
        break;
      case Parsed::kMalformed:
        a.kind = Attempt::kInfra;
        break;
      case Parsed::kModelError:
        a.kind = Attempt::kModel;
        break;
      case Parsed::kRetryable:
        a.kind = Attempt::kRetry;
        break;
    }
    a.error = p.error;
    a.reply = std::move(p);
    return a;
  }

  ModelConfig config_;
  std::string key_;  // only ever placed in a request header
  std::unique_ptr<WireFormat> wire_;
  long backoff_base_ms_ = 1000, backoff_cap_ms_ = 60000, stall_s_ = 300;
};

}  // namespace

std::unique_ptr<ChatProvider> MakeHttpProvider(const ModelConfig& config) {
  std::unique_ptr<WireFormat> wire;
  if (config.provider == "openai") {
    wire = std::make_unique<OpenAiFormat>();
  } else if (config.provider == "anthropic") {
    wire = std::make_unique<AnthropicFormat>();
  } else if (config.provider == "gemini") {
    wire = std::make_unique<GeminiFormat>();
  } else {
    throw InputError("model \"" + config.name + "\": provider \"" + config.provider +
                     "\" is not an HTTP provider (openai, anthropic or gemini)");
  }
  if (config.base_url.empty()) throw InputError("model \"" + config.name + "\": no base_url");
  std::string key;
  if (!config.api_key_env.empty()) {
    const char* v = std::getenv(config.api_key_env.c_str());
    if (!v || !*v)
      throw InputError("model \"" + config.name + "\": the environment variable " +
                       config.api_key_env + " (its API key) is not set");
    key = v;
    if (key.find_first_of("\r\n") != std::string::npos)
      throw InputError("model \"" + config.name + "\": the environment variable " +
                       config.api_key_env + " holds a line break");
  }
  InitCurlOnce();
  return std::make_unique<HttpProvider>(config, std::move(key), std::move(wire));
}

}  // namespace ptxbench
