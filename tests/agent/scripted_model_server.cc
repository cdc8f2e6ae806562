#include "agent/scripted_model_server.h"

#include <httplib.h>

#include <sys/socket.h>

#include <chrono>
#include <stdexcept>

#include "agent/content_text.h"

namespace ptxbench::testing {

namespace {

using json = nlohmann::json;

std::string Lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// The "messages" array of OpenAI's and Anthropic's requests: {"role", "content"} objects.
void AddRoleContentMessages(const json& j, std::vector<ChatMessage>* out) {
  if (j.contains("messages") && j["messages"].is_array())
    for (const auto& m : j["messages"])
      if (m.is_object())
        out->push_back(
            {m.value("role", ""), m.contains("content") ? ContentText(m["content"]) : ""});
}

std::vector<ChatMessage> NormalizedMessages(ScriptedWire wire, const json& j) {
  std::vector<ChatMessage> out;
  if (!j.is_object()) return out;
  switch (wire) {
    case ScriptedWire::kOpenAi:
      AddRoleContentMessages(j, &out);
      break;
    case ScriptedWire::kAnthropic:
      if (j.contains("system")) out.push_back({"system", ContentText(j["system"])});
      AddRoleContentMessages(j, &out);
      break;
    case ScriptedWire::kGemini:
      if (j.contains("systemInstruction") && j["systemInstruction"].contains("parts"))
        out.push_back({"system", ContentText(j["systemInstruction"]["parts"])});
      if (j.contains("contents") && j["contents"].is_array())
        for (const auto& c : j["contents"]) {
          if (!c.is_object()) continue;
          std::string role = c.value("role", "user") == "model" ? "assistant" : "user";
          out.push_back({role, c.contains("parts") ? ContentText(c["parts"]) : ""});
        }
      break;
  }
  return out;
}

std::vector<std::string> Pieces(const std::string& text, size_t n) {
  std::vector<std::string> out;
  if (n == 0) n = 1;
  for (size_t i = 0; i < text.size(); i += n) out.push_back(text.substr(i, n));
  return out;
}

std::string Frame(const json& data, const std::string& event = "") {
  std::string s;
  if (!event.empty()) s += "event: " + event + "\n";
  return s + "data: " + data.dump() + "\n\n";
}

// The words each wire has for itself and for a reply that ended normally.
struct WireWords {
  ScriptedWire wire;
  const char* provider;  // its ModelConfig provider
  const char* finish;    // its finish reason of a reply that ended normally
};
constexpr WireWords kWireWords[] = {
    {ScriptedWire::kOpenAi, "openai", "stop"},
    {ScriptedWire::kAnthropic, "anthropic", "end_turn"},
    {ScriptedWire::kGemini, "gemini", "STOP"},
};

const WireWords* WordsOf(ScriptedWire w) {
  for (const WireWords& words : kWireWords)
    if (words.wire == w) return &words;
  return nullptr;
}

std::string DefaultFinish(ScriptedWire w) {
  const WireWords* words = WordsOf(w);
  return words ? words->finish : "stop";
}

json ErrorBody(ScriptedWire w, int status, const std::string& message) {
  switch (w) {
    case ScriptedWire::kOpenAi:
      return {{"error", {{"message", message}, {"type", "scripted_error"}, {"code", status}}}};
    case ScriptedWire::kAnthropic:
      return {{"type", "error"}, {"error", {{"type", "api_error"}, {"message", message}}}};
    case ScriptedWire::kGemini:
      return {{"error", {{"code", status}, {"message", message}, {"status", "SCRIPTED"}}}};
  }
  return json::object();
}

json GeminiUsage(const ScriptStep& s) {
  return {{"promptTokenCount", s.prompt_tokens},
          {"candidatesTokenCount", s.completion_tokens - s.reasoning_tokens},
          {"thoughtsTokenCount", s.reasoning_tokens},
          {"totalTokenCount", s.prompt_tokens + s.completion_tokens}};
}

json WholeReply(ScriptedWire w, const ScriptStep& s, const std::string& model) {
  std::string finish = s.finish_reason.empty() ? DefaultFinish(w) : s.finish_reason;
  switch (w) {
    case ScriptedWire::kOpenAi: {
      json msg = {{"role", "assistant"}, {"content", s.text}};
      if (!s.reasoning.empty()) msg["reasoning_content"] = s.reasoning;
      return {
          {"id", "chatcmpl-scripted"},
          {"object", "chat.completion"},
          {"created", 0},
          {"model", model},
          {"choices", json::array({{{"index", 0}, {"message", msg}, {"finish_reason", finish}}})},
          {"usage",
           {{"prompt_tokens", s.prompt_tokens},
            {"completion_tokens", s.completion_tokens},
            {"total_tokens", s.prompt_tokens + s.completion_tokens},
            {"completion_tokens_details", {{"reasoning_tokens", s.reasoning_tokens}}}}}};
    }
    case ScriptedWire::kAnthropic: {
      json content = json::array();
      if (!s.reasoning.empty())
        content.push_back({{"type", "thinking"}, {"thinking", s.reasoning}, {"signature", "sig"}});
      content.push_back({{"type", "text"}, {"text", s.text}});
      return {
          {"id", "msg_scripted"},
          {"type", "message"},
          {"role", "assistant"},
          {"model", model},
          {"content", content},
          {"stop_reason", finish},
          {"stop_sequence", nullptr},
          {"usage", {{"input_tokens", s.prompt_tokens}, {"output_tokens", s.completion_tokens}}}};
    }
    case ScriptedWire::kGemini: {
      json parts = json::array();
      if (!s.reasoning.empty()) parts.push_back({{"text", s.reasoning}, {"thought", true}});
      parts.push_back({{"text", s.text}});
      return {{"candidates", json::array({{{"content", {{"role", "model"}, {"parts", parts}}},
                                           {"finishReason", finish},
                                           {"index", 0}}})},
              {"usageMetadata", GeminiUsage(s)},
              {"modelVersion", model}};
    }
  }
  return json::object();
}

std::vector<std::string> StreamFrames(ScriptedWire w, const ScriptStep& s, const std::string& model,
                                      bool include_usage) {
  std::string finish = s.finish_reason.empty() ? DefaultFinish(w) : s.finish_reason;
  std::vector<std::string> text = Pieces(s.text, s.chunk_chars);
  std::vector<std::string> thought = Pieces(s.reasoning, s.chunk_chars);
  std::vector<std::string> f;
  switch (w) {
    case ScriptedWire::kOpenAi: {
      auto chunk = [&](json delta, json finish_reason) {
        return Frame({{"id", "chatcmpl-scripted"},
                      {"object", "chat.completion.chunk"},
                      {"model", model},
                      {"choices", json::array({{{"index", 0},
                                                {"delta", std::move(delta)},
                                                {"finish_reason", std::move(finish_reason)}}})}});
      };
      f.push_back(chunk({{"role", "assistant"}, {"content", ""}}, nullptr));
      for (const auto& p : thought) f.push_back(chunk({{"reasoning_content", p}}, nullptr));
      for (const auto& p : text) f.push_back(chunk({{"content", p}}, nullptr));
      f.push_back(chunk(json::object(), finish));
      if (include_usage)
        f.push_back(
            Frame({{"id", "chatcmpl-scripted"},
                   {"object", "chat.completion.chunk"},
                   {"choices", json::array()},
                   {"usage",
                    {{"prompt_tokens", s.prompt_tokens},
                     {"completion_tokens", s.completion_tokens},
                     {"total_tokens", s.prompt_tokens + s.completion_tokens},
                     {"completion_tokens_details", {{"reasoning_tokens", s.reasoning_tokens}}}}}}));
      f.push_back("data: [DONE]\n\n");
      break;
    }
    case ScriptedWire::kAnthropic: {
      f.push_back(Frame({{"type", "message_start"},
                         {"message",
                          {{"id", "msg_scripted"},
                           {"type", "message"},
                           {"role", "assistant"},
                           {"model", model},
                           {"content", json::array()},
                           {"stop_reason", nullptr},
                           {"usage", {{"input_tokens", s.prompt_tokens}, {"output_tokens", 1}}}}}},
                        "message_start"));
      int index = 0;
      if (!thought.empty()) {
        f.push_back(Frame({{"type", "content_block_start"},
                           {"index", index},
                           {"content_block", {{"type", "thinking"}, {"thinking", ""}}}},
                          "content_block_start"));
        for (const auto& p : thought)
          f.push_back(Frame({{"type", "content_block_delta"},
                             {"index", index},
                             {"delta", {{"type", "thinking_delta"}, {"thinking", p}}}},
                            "content_block_delta"));
        f.push_back(
            Frame({{"type", "content_block_stop"}, {"index", index}}, "content_block_stop"));
        ++index;
      }
      f.push_back(Frame({{"type", "content_block_start"},
                         {"index", index},
                         {"content_block", {{"type", "text"}, {"text", ""}}}},
                        "content_block_start"));
      f.push_back(Frame({{"type", "ping"}}, "ping"));
      for (const auto& p : text)
        f.push_back(Frame({{"type", "content_block_delta"},
                           {"index", index},
                           {"delta", {{"type", "text_delta"}, {"text", p}}}},
                          "content_block_delta"));
      f.push_back(Frame({{"type", "content_block_stop"}, {"index", index}}, "content_block_stop"));
      f.push_back(Frame({{"type", "message_delta"},
                         {"delta", {{"stop_reason", finish}, {"stop_sequence", nullptr}}},
                         {"usage", {{"output_tokens", s.completion_tokens}}}},
                        "message_delta"));
      f.push_back(Frame({{"type", "message_stop"}}, "message_stop"));
      break;
    }
    case ScriptedWire::kGemini: {
      auto chunk = [&](json part, bool last) {
        json cand = {{"content", {{"role", "model"}, {"parts", json::array({std::move(part)})}}},
                     {"index", 0}};
        if (last) cand["finishReason"] = finish;
        json usage = last ? GeminiUsage(s) : json{{"promptTokenCount", s.prompt_tokens}};
        return Frame({{"candidates", json::array({cand})},
                      {"usageMetadata", usage},
                      {"modelVersion", model}});
      };
      for (const auto& p : thought) f.push_back(chunk({{"text", p}, {"thought", true}}, false));
      if (text.empty()) text.push_back("");
      for (size_t i = 0; i < text.size(); ++i)
        f.push_back(chunk({{"text", text[i]}}, i + 1 == text.size()));
      break;
    }
  }
  return f;
}

}  // namespace

std::string ProviderName(ScriptedWire w) {
  const WireWords* words = WordsOf(w);
  return words ? words->provider : "";
}

// --- ScriptStep -----------------------------------------------------------------------------

ScriptStep ScriptStep::Reply(std::string text) {
  ScriptStep s;
  s.text = std::move(text);
  return s;
}

ScriptStep ScriptStep::Status(int status, std::string retry_after, std::string message) {
  ScriptStep s;
  s.status = status;
  s.retry_after = std::move(retry_after);
  s.error_message = std::move(message);
  return s;
}

ScriptStep ScriptStep::Hang(double seconds, std::string text) {
  ScriptStep s = Reply(std::move(text));
  s.hang_s = seconds;
  return s;
}

ScriptStep ScriptStep::Malformed() {
  ScriptStep s;
  s.malformed = true;
  return s;
}

ScriptStep ScriptStep::Cut(std::string text) {
  ScriptStep s = Reply(std::move(text));
  s.cut = true;
  return s;
}

ScriptStep ScriptStep::Raw(int status, std::string body) {
  ScriptStep s = Status(status);
  s.raw_body = std::move(body);
  return s;
}

ScriptStep& ScriptStep::WithUsage(int64_t prompt, int64_t completion, int64_t reasoning) {
  prompt_tokens = prompt;
  completion_tokens = completion;
  reasoning_tokens = reasoning;
  return *this;
}

// --- RecordedRequest ------------------------------------------------------------------------

std::string RecordedRequest::Header(const std::string& name) const {
  auto it = headers.find(Lower(name));
  return it == headers.end() ? "" : it->second;
}

std::string RecordedRequest::LastUserMessage() const {
  for (auto it = messages.rbegin(); it != messages.rend(); ++it)
    if (it->role == "user") return it->content;
  return "";
}

// --- ScriptedModelServer --------------------------------------------------------------------

ScriptedModelServer::ScriptedModelServer() : server_(std::make_unique<httplib::Server>()) {
  // Enough workers for many concurrent clients and for hanging handlers besides.
  server_->new_task_queue = [] { return new httplib::ThreadPool(128); };
  server_->set_keep_alive_max_count(100);
  server_->Post(R"(.*/chat/completions)", [this](const httplib::Request& q, httplib::Response& r) {
    Handle(ScriptedWire::kOpenAi, q, r);
  });
  server_->Post(R"(.*/messages)", [this](const httplib::Request& q, httplib::Response& r) {
    Handle(ScriptedWire::kAnthropic, q, r);
  });
  server_->Post(R"(.*/models/[^/]+:(generateContent|streamGenerateContent))",
                [this](const httplib::Request& q, httplib::Response& r) {
                  Handle(ScriptedWire::kGemini, q, r);
                });
  // cpp-httplib listens with a backlog of 5: many clients connecting at once overflow it, and
  // the kernel's retransmissions then cost seconds. The listening socket is widened to the
  // system's maximum once bound (listen() again on a listening socket sets its backlog).
  auto listen_fd = std::make_shared<int>(-1);
  server_->set_socket_options([listen_fd](socket_t fd) {
    httplib::default_socket_options(fd);
    *listen_fd = fd;
  });
  port_ = server_->bind_to_any_port("127.0.0.1");
  if (port_ <= 0) throw std::runtime_error("scripted model server: cannot bind 127.0.0.1");
  if (*listen_fd >= 0) ::listen(*listen_fd, SOMAXCONN);
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!server_->is_running() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

ScriptedModelServer::~ScriptedModelServer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string ScriptedModelServer::base_url() const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/v1";
}

ModelConfig ScriptedModelServer::Config(ScriptedWire wire, bool stream) const {
  ModelConfig c;
  c.name = "scripted-" + ProviderName(wire);
  c.provider = ProviderName(wire);
  c.model = "scripted-model";
  c.base_url = base_url();
  c.stream = stream;
  c.timeout_s = 10;
  c.max_retries = 3;
  return c;
}

void ScriptedModelServer::Push(ScriptStep step) {
  std::lock_guard<std::mutex> lock(mu_);
  script_.push_back(std::move(step));
}

void ScriptedModelServer::Push(std::vector<ScriptStep> steps) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : steps) script_.push_back(std::move(s));
}

void ScriptedModelServer::SetResponder(Responder responder) {
  std::lock_guard<std::mutex> lock(mu_);
  responder_ = std::move(responder);
}

size_t ScriptedModelServer::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return script_.size();
}

std::vector<RecordedRequest> ScriptedModelServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

size_t ScriptedModelServer::request_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_.size();
}

ScriptStep ScriptedModelServer::NextStep(const RecordedRequest& r) {
  Responder responder;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(r);
    if (!script_.empty()) {
      ScriptStep s = std::move(script_.front());
      script_.pop_front();
      return s;
    }
    responder = responder_;
  }
  if (responder) return responder(r);  // outside the lock: it may call back into the server
  return ScriptStep::Status(500, "", "scripted server: script exhausted");
}

bool ScriptedModelServer::SleepUnlessStopping(double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  stop_cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return stopping_; });
  return !stopping_;
}

void ScriptedModelServer::Handle(ScriptedWire wire, const httplib::Request& req,
                                 httplib::Response& res) {
  RecordedRequest r;
  r.wire = wire;
  r.path = req.path;
  for (const auto& [name, value] : req.headers) r.headers[Lower(name)] = value;
  r.body = req.body;
  r.json = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (r.json.is_discarded()) r.json = nullptr;
  if (wire == ScriptedWire::kGemini) {
    size_t slash = req.path.rfind("/models/");
    size_t colon = req.path.rfind(':');
    if (slash != std::string::npos && colon != std::string::npos && colon > slash + 8)
      r.model = req.path.substr(slash + 8, colon - slash - 8);
    r.stream = req.path.find(":streamGenerateContent") != std::string::npos;
  } else if (r.json.is_object()) {
    r.model = r.json.value("model", "");
    r.stream =
        r.json.contains("stream") && r.json["stream"].is_boolean() && r.json["stream"].get<bool>();
  }
  r.messages = NormalizedMessages(wire, r.json);
  bool include_usage = r.json.is_object() && r.json.contains("stream_options") &&
                       r.json["stream_options"].value("include_usage", false);

  ScriptStep step = NextStep(r);
  if (step.hang_s > 0 && !SleepUnlessStopping(step.hang_s)) {
    res.status = 503;
    res.set_content("stopping", "text/plain");
    return;
  }
  if (!step.raw_body.empty()) {
    res.status = step.status;
    if (!step.retry_after.empty()) res.set_header("Retry-After", step.retry_after);
    res.set_content(step.raw_body,
                    r.stream && step.status == 200 ? "text/event-stream" : "application/json");
    return;
  }
  if (step.status != 200) {
    res.status = step.status;
    if (!step.retry_after.empty()) res.set_header("Retry-After", step.retry_after);
    res.set_content(ErrorBody(wire, step.status, step.error_message).dump(), "application/json");
    return;
  }
  res.status = 200;

  if (!r.stream) {
    std::string body = step.malformed
                           ? std::string(R"({"choices": [{"message": {"content": "unterm)")
                           : WholeReply(wire, step, r.model).dump();
    if (!step.cut) {
      res.set_content(body, "application/json");
      return;
    }
    // Announce the whole length, send half of it, drop the connection.
    auto shared = std::make_shared<std::string>(std::move(body));
    res.set_content_provider(shared->size(), "application/json",
                             [shared](size_t offset, size_t, httplib::DataSink& sink) {
                               if (offset == 0) sink.write(shared->data(), shared->size() / 2);
                               return false;
                             });
    return;
  }

  auto frames =
      std::make_shared<std::vector<std::string>>(StreamFrames(wire, step, r.model, include_usage));
  if (step.malformed) {
    frames->insert(frames->begin() + 1, "data: {\"choices\": [{\"delta\": {\"content\": \"x\n\n");
  }
  size_t send = frames->size();
  if (step.cut) send = std::max<size_t>(1, frames->size() / 2);
  bool cut = step.cut;
  res.set_chunked_content_provider(
      "text/event-stream", [frames, send, cut](size_t, httplib::DataSink& sink) {
        for (size_t i = 0; i < send; ++i)
          if (!sink.write((*frames)[i].data(), (*frames)[i].size())) return false;
        if (cut) return false;  // no terminating chunk: the client sees the stream cut
        sink.done();
        return true;
      });
}

}  // namespace ptxbench::testing
