#include "agent/provider.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string_view>
#include <thread>

#include "common/bounded_json.h"
#include "common/error.h"
#include "common/http_client.h"
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
  json j = ParseBoundedJsonOrDiscarded(body);
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

long EnvLong(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  return end && *end == '\0' && x >= 0 ? x : fallback;
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

// A POST of `body` as JSON, with the provider's own headers, the Accept that `stream` asks
// for, and the key in `key_header` (when there is one): its only place.
HttpRequest JsonPost(std::string url, std::initializer_list<const char*> provider_headers,
                     bool stream, const std::string& key_header, const std::string& key,
                     const json& body) {
  HttpRequest r;
  r.method = HttpMethod::kPost;
  r.url = std::move(url);
  r.headers = {"Content-Type: application/json"};
  r.headers.insert(r.headers.end(), provider_headers.begin(), provider_headers.end());
  r.headers.push_back(stream ? "Accept: text/event-stream" : "Accept: application/json");
  if (!key.empty()) r.headers.push_back(key_header + key);
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
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
    json body = {{"model", c.model}};
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
    return JsonPost(c.base_url + "/chat/completions", {}, stream, "Authorization: Bearer ", key,
                    body);
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
    json body = {{"model", c.model}};
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
    return JsonPost(c.base_url + "/messages", {"anthropic-version: 2023-06-01"}, stream,
                    "x-api-key: ", key, body);
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
    const std::string action = stream ? ":streamGenerateContent?alt=sse" : ":generateContent";
    return JsonPost(c.base_url + "/models/" + model + action, {}, stream, "x-goog-api-key: ", key,
                    body);
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

// What one attempt gathers while its response arrives.
struct Transfer {
  const WireFormat* wire = nullptr;
  bool stream = false;
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
    json j = ParseBoundedJsonOrDiscarded(d);
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

// Watches the response for Retry-After and, in a successful stream, its events.
HttpObserver Watch(Transfer& t) {
  HttpObserver o;
  o.on_response_start = [&t] {  // a new response (after a 100 Continue, say)
    t.retry_after_s.reset();
    t.retry_after_ms.reset();
  };
  o.on_header = [&t](const std::string& name, const std::string& value) {
    if (name == "retry-after") {
      t.retry_after_s = ParseRetryAfter(value);
    } else if (name == "retry-after-ms") {  // OpenAI's, finer than Retry-After
      char* end = nullptr;
      double ms = std::strtod(value.c_str(), &end);
      if (end && *end == '\0' && std::isfinite(ms) && ms >= 0) t.retry_after_ms = ms;
    }
  };
  o.on_body = [&t](long status, std::string_view piece) {
    if (t.stream && status >= 200 && status < 300)
      t.sse.Feed(piece.data(), piece.size(),
                 [&t](const std::string& e, const std::string& d) { t.OnEvent(e, d); });
  };
  return o;
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
      if (config_.on_retry)
        config_.on_retry(Redact(
            config_.name + ": " + a.error + "; attempt " + std::to_string(reply.attempts) + " of " +
            std::to_string(config_.max_retries + 1) + ", retrying in " + Seconds(wait)));
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

  // One request, with what is left of the deadline.
  Attempt Once(HttpRequest& request, Clock::time_point deadline) const {
    Attempt a;
    double left_s = SecondsBetween(Clock::now(), deadline);
    if (left_s <= 0) {
      a.kind = Attempt::kDeadline;
      a.error = "no time left";
      return a;
    }
    long left_ms = std::max(1L, static_cast<long>(std::ceil(left_s * 1000)));
    request.timeout_ms = left_ms;
    request.connect_timeout_ms = std::min(left_ms, kConnectTimeoutMs);
    request.tcp_keepalive = true;
    request.max_response_bytes = kMaxReplyBytes;
    // A stream that goes silent is stuck: give up on this attempt (and retry) rather than
    // wait for the whole deadline.
    request.stall_s = config_.stream ? stall_s_ : 0;
    request.decode_any_encoding = !config_.stream;

    Transfer t;
    t.wire = wire_.get();
    t.stream = config_.stream;
    HttpResponse response;
    try {
      response = SendHttpRequest(request, Watch(t));
    } catch (const Error& e) {  // no request could be made
      a.error = e.what();
      return a;
    }
    const long status = response.status;
    a.http_status = static_cast<int>(status);
    if (t.retry_after_ms)
      a.retry_after_s = *t.retry_after_ms / 1000.0;
    else if (t.retry_after_s)
      a.retry_after_s = t.retry_after_s;
    bool ok_status = status >= 200 && status < 300;

    if (response.transfer != HttpResponse::Transfer::kComplete)
      return FromIncompleteTransfer(request, response, t, ok_status, deadline, std::move(a));
    if (!ok_status) return FromErrorStatus(response, std::move(a));
    if (!t.stream) return FromWholeReply(response, std::move(a));
    return FromStream(response, t, std::move(a));
  }

  // A transfer that did not complete: too large, cut, timed out or never connected.
  Attempt FromIncompleteTransfer(const HttpRequest& request, const HttpResponse& response,
                                 Transfer& t, bool ok_status, Clock::time_point deadline,
                                 Attempt a) const {
    const long status = response.status;
    std::string what = OneLine(response.error);
    if (response.too_large) {
      a.kind = Attempt::kInfra;
      a.error = "the reply is larger than " + std::to_string(kMaxReplyBytes >> 20) + " MiB";
      return a;
    }
    if (ok_status && t.stream && t.state.failure && t.state.failure->kind != Parsed::kRetryable)
      return FromParsed(std::move(*t.state.failure), std::move(a));
    bool past_deadline = Clock::now() >= deadline - std::chrono::milliseconds(20);
    if (response.transfer == HttpResponse::Transfer::kTimedOut && past_deadline) {
      a.kind = Attempt::kDeadline;
      a.error = what;
      return a;
    }
    a.kind =
        response.transfer == HttpResponse::Transfer::kFailed ? Attempt::kInfra : Attempt::kRetry;
    if (ok_status)
      a.error = std::string(t.stream ? "the stream was cut" : "the reply was cut") + ": " + what;
    else if (status > 0)
      a.error = "HTTP " + std::to_string(status) + ", then: " + what;
    else
      a.error = "cannot reach " + request.url.substr(0, request.url.find('?')) + ": " + what;
    return a;
  }

  // A complete reply with an HTTP error status: retried, ours to fix, or the model's.
  static Attempt FromErrorStatus(const HttpResponse& response, Attempt a) {
    const long status = response.status;
    std::string message = ErrorMessageOf(response.body);
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

  // A complete reply to a request that did not ask for a stream: one JSON document.
  Attempt FromWholeReply(const HttpResponse& response, Attempt a) const {
    const long status = response.status;
    json j = ParseBoundedJsonOrDiscarded(response.body);
    if (j.is_discarded())
      return FromParsed(Malformed("not JSON: " + OneLine(response.body, 80)), a);
    if (j.is_object() && j.contains("error")) {
      Parsed p;
      p.kind = Parsed::kRetryable;
      p.error =
          "HTTP " + std::to_string(status) + " with an error: " + ErrorMessageOf(response.body);
      return FromParsed(std::move(p), std::move(a));
    }
    return FromParsed(wire_->ParseReply(j), std::move(a));
  }

  // A complete streamed reply: its events, or one JSON reply from a server that ignored
  // "stream".
  Attempt FromStream(const HttpResponse& response, Transfer& t, Attempt a) const {
    const long status = response.status;
    t.sse.Finish([&t](const std::string& e, const std::string& d) { t.OnEvent(e, d); });
    if (t.sse.events() == 0) {
      // Not a stream: a server that ignored "stream" may answer with one JSON reply.
      json j = ParseBoundedJsonOrDiscarded(response.body);
      if (j.is_object() && !j.contains("error")) return FromParsed(wire_->ParseReply(j), a);
      if (j.is_object()) {
        Parsed p;
        p.kind = Parsed::kRetryable;
        p.error =
            "HTTP " + std::to_string(status) + " with an error: " + ErrorMessageOf(response.body);
        return FromParsed(std::move(p), std::move(a));
      }
      if (Trim(response.body).empty()) {
        Parsed p;
        p.kind = Parsed::kRetryable;
        p.error = "the stream ended before any event";
        return FromParsed(std::move(p), std::move(a));
      }
      return FromParsed(Malformed("not a stream of events: " + OneLine(response.body, 80)), a);
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

  // Whose failure a parsed reply is: a malformed one is the infrastructure's.
  static Attempt::Kind AttemptKindOf(Parsed::Kind k) {
    switch (k) {
      case Parsed::kOk:
        return Attempt::kOk;
      case Parsed::kMalformed:
        return Attempt::kInfra;
      case Parsed::kModelError:
        return Attempt::kModel;
      case Parsed::kRetryable:
        return Attempt::kRetry;
    }
    return Attempt::kInfra;
  }

  static Attempt FromParsed(Parsed p, Attempt a) {
    a.kind = AttemptKindOf(p.kind);
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
  InitHttpClient();
  return std::make_unique<HttpProvider>(config, std::move(key), std::move(wire));
}

}  // namespace ptxbench
