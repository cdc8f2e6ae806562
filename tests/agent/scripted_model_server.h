// A scripted model server for tests: real HTTP on 127.0.0.1 (an ephemeral port, cpp-httplib),
// speaking the three wire formats that agent/provider.h speaks, streamed and not, and
// answering from a script, so that tests drive MakeHttpProvider (and the agent loop on top)
// through every reply and fault without a model.
//
//   ScriptedModelServer server;                        // listening when constructed
//   ModelConfig config = server.Config(ScriptedWire::kAnthropic, /*stream=*/true);
//   server.Push(ScriptStep::Status(429, "1"));         // first request: 429, Retry-After: 1
//   server.Push(ScriptStep::Reply("```cuda\n...\n```"));  // second: this text
//   auto provider = MakeHttpProvider(config);
//   ChatReply r = provider->Complete(messages);        // two attempts, then kOk
//   server.requests();                                 // what arrived: path, headers, body
//
// Paths (any prefix before them, so base_url may end in /v1, /v1beta, ...):
//   POST .../chat/completions                          OpenAI ("stream": true for SSE)
//   POST .../messages                                  Anthropic ("stream": true for SSE)
//   POST .../models/{model}:generateContent            Gemini
//   POST .../models/{model}:streamGenerateContent      Gemini, SSE (?alt=sse)
//
// Each request takes the next step from the queue (Push); when the queue is empty it asks the
// responder (SetResponder), which can script replies by content (e.g. the last user message
// of req.messages); with neither, it answers 500 "script exhausted". Steps are taken in the
// order requests arrive, so with concurrent clients use a responder (or identical steps).
//
// Faults a step can carry (ScriptStep's factories):
//   Status(429, "1")   an error reply in the format's error shape, with Retry-After when given
//   Status(500)        the same for any status (400 for a model error, ...)
//   Hang(5)            waits 5 s before answering (woken early when the server stops)
//   Malformed()        200 with a body that is not JSON (streamed: an event that is not JSON)
//   Cut("text")        sends part of the reply, then drops the connection (a cut stream, or a
//                      body shorter than its Content-Length)
//   Raw(200, "{}")     exactly this body (for replies the factories above do not cover)
// and the usage numbers, finish reason and (left out of the reply text by a provider) the
// reasoning text that a reply reports.
//
// Thread-safe: any number of concurrent clients; Push, SetResponder and requests() may be
// called at any time. The destructor stops the server and wakes hanging handlers.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/chat.h"
#include "agent/model_config.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace ptxbench::testing {

enum class ScriptedWire { kOpenAi, kAnthropic, kGemini };
std::string ProviderName(ScriptedWire w);  // "openai", "anthropic", "gemini"

struct ScriptStep {
  std::string text = "ok";  // the assistant's reply
  std::string reasoning;    // thinking sent alongside (reasoning_content, thinking block, thought)
  std::string finish_reason;  // empty: the format's normal stop ("stop", "end_turn", "STOP")
  int64_t prompt_tokens = 11, completion_tokens = 7, reasoning_tokens = 0;
  int status = 200;
  std::string error_message = "scripted error";  // for status != 200
  std::string retry_after;                       // Retry-After header value, when not empty
  double hang_s = 0;                             // wait this long before answering
  bool malformed = false;
  bool cut = false;
  size_t chunk_chars = 5;  // streamed: the text goes out in pieces this long
  std::string raw_body;    // when not empty: sent as the whole body instead of a reply (with
                           // `status`; streamed: as the event stream), e.g. "{}" for a 200
                           // without the format's content

  static ScriptStep Reply(std::string text);
  static ScriptStep Status(int status, std::string retry_after = "",
                           std::string message = "scripted error");
  static ScriptStep Hang(double seconds, std::string text = "late reply");
  static ScriptStep Malformed();
  static ScriptStep Cut(std::string text = "a reply that will be cut in the middle");
  static ScriptStep Raw(int status, std::string body);
  ScriptStep& WithUsage(int64_t prompt, int64_t completion, int64_t reasoning = 0);
};

struct RecordedRequest {
  ScriptedWire wire = ScriptedWire::kOpenAi;
  bool stream = false;
  std::string path;                            // without the query
  std::string model;                           // from the body, or Gemini's path
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  nlohmann::json json;                // the parsed body (null when not JSON)
  std::vector<ChatMessage> messages;  // the conversation in one shape for all three formats:
                                      // system first, then "user" / "assistant"
  std::string Header(const std::string& name) const;  // "" when absent; any case
  std::string LastUserMessage() const;
};

class ScriptedModelServer {
 public:
  using Responder = std::function<ScriptStep(const RecordedRequest&)>;

  ScriptedModelServer();  // listens on 127.0.0.1, a free port; throws when it cannot
  ~ScriptedModelServer();
  ScriptedModelServer(const ScriptedModelServer&) = delete;
  ScriptedModelServer& operator=(const ScriptedModelServer&) = delete;

  int port() const { return port_; }
  std::string base_url() const;  // "http://127.0.0.1:PORT/v1"
  // A model config for this server: provider, model "scripted-model", base_url, stream, a
  // short deadline (timeout_s 10) and max_retries 3; no key. Adjust fields as needed.
  ModelConfig Config(ScriptedWire wire, bool stream) const;

  void Push(ScriptStep step);
  void Push(std::vector<ScriptStep> steps);
  void SetResponder(Responder responder);
  size_t pending() const;  // steps not yet taken

  std::vector<RecordedRequest> requests() const;  // every request so far, in arrival order
  size_t request_count() const;

 private:
  void Handle(ScriptedWire wire, const httplib::Request& req, httplib::Response& res);
  ScriptStep NextStep(const RecordedRequest& r);
  bool SleepUnlessStopping(double seconds);  // false when the server is stopping

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;

  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::deque<ScriptStep> script_;
  Responder responder_;
  std::vector<RecordedRequest> requests_;
};

}  // namespace ptxbench::testing
