#include "serve/client.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <thread>

#include "common/bounded_json.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/files.h"
#include "common/http_client.h"

namespace ptxbench {

using nlohmann::json;

namespace {

// One request to the service, sent again through an outage: a 503 with Retry-After (its
// database down, restarting or locked), after that many seconds, and no connection at all
// (the server restarting); the pauses grow from 0.5 s to at most 10 s, and the outage is
// waited through until `until`. A POST is sent again only when none of it went out, or after
// a 503 (the server stored nothing): a submission is never made twice. Throws
// EnvironmentError when no HTTP answer came back in time; returns any other answer. The token
// goes only into the Authorization header.
// No connection at all is waited through only until `unreachable_until` (a service that never
// answered this client may not exist); `answered` is set once any HTTP answer came back.
HttpResponse Request(const std::string& url, const std::string& token, const std::string* post_body,
                     double timeout_s, SteadyClock::time_point until,
                     SteadyClock::time_point unreachable_until, std::atomic<bool>* answered) {
  HttpRequest request;
  request.url = url;
  request.headers = {"Content-Type: application/json"};
  if (!token.empty()) request.headers.push_back("Authorization: Bearer " + token);
  if (post_body) {
    request.method = HttpMethod::kPost;
    request.body = *post_body;
  }
  request.timeout_ms = static_cast<long>(timeout_s * 1000);
  request.connect_timeout_ms = 10000;
  double pause = 0.5;
  for (int tries = 1;; ++tries) {
    std::optional<double> retry_after;
    HttpObserver watch;
    watch.on_response_start = [&] { retry_after.reset(); };
    watch.on_header = [&](const std::string& name, const std::string& value) {
      if (name == "retry-after") retry_after = ParseRetryAfter(value);
    };
    HttpResponse r = SendHttpRequest(request, watch);
    const bool complete = r.transfer == HttpResponse::Transfer::kComplete;
    if (complete && answered) answered->store(true);
    // A 503 without Retry-After (a full disk) does not pass by waiting.
    const bool unavailable = complete && r.status == 503 && retry_after.has_value();
    const bool again = unavailable || (!complete && (!post_body || !r.request_sent));
    if (complete && !unavailable) return r;
    double wait = std::min(10.0, unavailable ? std::max(0.2, *retry_after) : pause);
    const SteadyClock::time_point limit =
        unavailable || (answered && answered->load()) ? until : std::min(until, unreachable_until);
    if (!again || SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                           std::chrono::duration<double>(wait)) >
                      limit) {
      if (unavailable) return r;  // the caller words the server's 503
      throw EnvironmentError("the evaluator at " + url + " did not answer" +
                             (tries > 1 ? " (" + std::to_string(tries) + " tries)" : "") + ": " +
                             r.error);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    pause = std::min(10.0, pause * 2);
  }
}

// The server's one-line message of an error reply.
std::string ErrorOf(const HttpResponse& r) {
  json j = ParseBoundedJsonOrDiscarded(r.body);
  if (j.is_object() && j.contains("error") && j["error"].is_string()) return j["error"];
  return "HTTP " + std::to_string(r.status);
}

// A reply is bounded like anything else from elsewhere: a record nests about 8 deep.
json ParseOrThrow(const HttpResponse& r, const std::string& what) {
  json j = ParseBoundedJsonOrDiscarded(r.body);
  if (j.is_discarded())
    throw EnvironmentError(what + ": the evaluator's reply is not JSON, or nests too deep (HTTP " +
                           std::to_string(r.status) + ")");
  return j;
}

}  // namespace

EvaluationClient::EvaluationClient(RemoteOptions o) : o_(std::move(o)) {
  while (!o_.url.empty() && o_.url.back() == '/') o_.url.pop_back();
  if (o_.url.rfind("http://", 0) != 0 && o_.url.rfind("https://", 0) != 0)
    throw UsageError("--evaluator must be an http:// URL, not '" + o_.url + "'");
  if (o_.token.empty())
    if (const char* t = std::getenv("PTXBENCH_SERVE_TOKEN")) o_.token = t;
}

std::string EvaluationClient::Submit(const std::string& task, const std::string& workload,
                                     const std::string& source, const json& tag) const {
  json body = {{"task", task}, {"arch", o_.arch}, {"source", source}, {"options", o_.options}};
  if (!workload.empty()) body["workload"] = workload;
  if (tag.is_object() && !tag.empty()) body["tag"] = tag;
  std::string text = body.dump(-1, ' ', false, json::error_handler_t::replace);
  const auto until = SteadyClock::now() + OutageWait();
  HttpResponse r = Request(o_.url + "/v1/evaluations", o_.token, &text, 60, until,
                           UnreachableUntil(until), answered_.get());
  if (r.status >= 400 && r.status < 500)
    throw InputError("the evaluator refused the submission: " + ErrorOf(r));
  if (r.status != 202) throw EnvironmentError("the evaluator failed the submission: " + ErrorOf(r));
  json j = ParseOrThrow(r, "submit");
  if (!j.contains("id") || !j["id"].is_string())
    throw EnvironmentError("the evaluator's submit reply has no id");
  return j["id"];
}

json EvaluationClient::Wait(const std::string& id) const {
  auto start = SteadyClock::now();
  auto deadline = start + std::chrono::duration_cast<SteadyClock::duration>(
                              std::chrono::duration<double>(o_.deadline_s));
  for (;;) {
    char wait[32];
    std::snprintf(wait, sizeof wait, "%.3f", o_.poll_s);
    // A poll changes nothing: through an outage (a 503, no connection: a server at its
    // connection cap closes new ones as they arrive) it is asked again until the deadline.
    const auto until = std::min(deadline, SteadyClock::now() + OutageWait());
    HttpResponse r = Request(o_.url + "/v1/evaluations/" + id + "?wait=" + wait, o_.token, nullptr,
                             o_.poll_s + 30, until, UnreachableUntil(until), answered_.get());
    if (r.status == 200) return ParseOrThrow(r, "evaluation " + id);
    if (r.status != 202)
      throw EnvironmentError("the evaluator failed on evaluation " + id + ": " + ErrorOf(r));
    // Answered at once because the server's long-poll slots were taken: ask again in a while,
    // not at once (the server sends Retry-After: 1).
    json pending = ParseBoundedJsonOrDiscarded(r.body);
    if (pending.is_object() && pending.value("waited", true) == false)
      std::this_thread::sleep_for(std::chrono::seconds(1));
    if (SteadyClock::now() > deadline)
      throw EnvironmentError("evaluation " + id + " had no result after " +
                             std::to_string(static_cast<int>(o_.deadline_s)) + " s");
  }
}

json EvaluationClient::Get(const std::string& path) const {
  const auto now = SteadyClock::now();
  HttpResponse r = Request(o_.url + path, o_.token, nullptr, 60, now, now, answered_.get());
  if (r.status != 200) throw EnvironmentError("GET " + path + ": " + ErrorOf(r));
  return ParseOrThrow(r, path);
}

SteadyClock::time_point EvaluationClient::UnreachableUntil(SteadyClock::time_point until) const {
  if (answered_->load()) return until;
  return std::min(until,
                  SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                           std::chrono::duration<double>(o_.first_contact_s)));
}

SteadyClock::duration EvaluationClient::OutageWait() const {
  return std::chrono::duration_cast<SteadyClock::duration>(
      std::chrono::duration<double>(std::min(o_.outage_s, o_.deadline_s)));
}

Evaluator MakeRemoteEvaluator(const RemoteOptions& options) {
  auto client = std::make_shared<EvaluationClient>(options);
  return [client](const std::string& kernel_path, const Definition& def, const Workload& wl,
                  const EvaluationTag& tag) {
    std::string id = client->Submit(def.name, wl.id, ReadFile(kernel_path), tag.ToJson());
    return FromJson(client->Wait(id));
  };
}

}  // namespace ptxbench
