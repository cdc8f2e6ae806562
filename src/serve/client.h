// The client side of the evaluation service: submit a kernel, wait for its record. Used by
// `ptxbench run --evaluator URL`, `ptxbench submit`, and (one line) the Fixit stages.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/loop.h"

namespace ptxbench {

struct RemoteOptions {
  std::string url;    // http://host:port
  std::string token;  // bearer token; empty: none (default: $PTXBENCH_SERVE_TOKEN)
  std::string arch = "sm_90a";
  nlohmann::json options = nlohmann::json::object();  // job_request.h's "options"
  double poll_s = 30;                                 // one long poll
  double deadline_s = 7200;                           // give up on one evaluation after this long
  // How long one outage of the service is waited through (503: its database down, restarting
  // or locked; no connection: the server restarting), within deadline_s.
  double outage_s = 600;
  // A service that has not answered this client yet gets this long to take a connection: a
  // wrong URL or a service that was never started fails in seconds, not after outage_s.
  double first_contact_s = 10;
};

class EvaluationClient {
 public:
  explicit EvaluationClient(RemoteOptions o);
  // Submits one evaluation; returns its id. Throws InputError with the server's message on a
  // 4xx, EnvironmentError when the server cannot be reached or answers 5xx (a 503 or no
  // connection only after waiting through outage_s).
  // `tag` (optional): which turn of which trajectory it is (EvaluationTag::ToJson).
  std::string Submit(const std::string& task, const std::string& workload,
                     const std::string& source,
                     const nlohmann::json& tag = nlohmann::json::object()) const;
  // Waits (long polls) for the record of `id`; throws EnvironmentError past the deadline.
  nlohmann::json Wait(const std::string& id) const;
  nlohmann::json Get(const std::string& path) const;  // any GET of the API, e.g. /v1/health

 private:
  std::chrono::steady_clock::duration OutageWait() const;
  // Until when no connection at all is waited through: the outage's end once the service has
  // answered, first_contact_s from now before that.
  std::chrono::steady_clock::time_point UnreachableUntil(
      std::chrono::steady_clock::time_point outage_until) const;
  RemoteOptions o_;
  std::shared_ptr<std::atomic<bool>> answered_ = std::make_shared<std::atomic<bool>>(false);
};

// An Evaluator (agent/loop.h) that sends every evaluation to the service at options.url.
// A service or network failure throws, which the agent loop counts as infra (retried by
// --resume), never as the model's fault.
Evaluator MakeRemoteEvaluator(const RemoteOptions& options);

}  // namespace ptxbench
