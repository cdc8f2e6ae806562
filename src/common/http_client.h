// One HTTP(S) request over libcurl, for the model providers (agent/provider.cc) and the
// evaluation service's client (serve/client.cc). It neither retries nor logs: each caller
// decides what a failure means and how to word it.
//
// Secrets (API keys, the service token) travel only in request headers. Nothing here copies a
// header into a response or an error; callers that echo a server's words keep their own guards.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptxbench {

enum class HttpMethod { kGet, kPost };

struct HttpRequest {
  HttpMethod method = HttpMethod::kGet;
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;                  // sent with kPost
  long timeout_ms = 0;               // the whole transfer; 0: none
  long connect_timeout_ms = 0;       // 0: libcurl's default
  long stall_s = 0;                  // give up when nothing arrives for this long; 0: never
  size_t max_response_bytes = 0;     // a longer body aborts the transfer; 0: no cap
  bool decode_any_encoding = false;  // offer every Content-Encoding libcurl can decode
  bool tcp_keepalive = false;
};

struct HttpResponse {
  enum class Transfer {
    kComplete,     // a whole response arrived (any status)
    kTimedOut,     // timeout_ms or stall_s ran out
    kInterrupted,  // no connection, or it broke: worth another try
    kFailed,       // anything else, including a body over max_response_bytes
  };
  Transfer transfer = Transfer::kFailed;
  long status = 0;  // the HTTP status; 0 when none arrived
  std::string body;
  bool too_large = false;  // the body passed max_response_bytes (transfer is kFailed)
  // Whether any of the request went out: false when no connection was made (refused, no
  // route), so that even a request that is not idempotent may be sent again.
  bool request_sent = false;
  std::string error;  // why the transfer did not complete (libcurl's words), else ""
};

// What a caller may watch while a response arrives (streams, Retry-After).
struct HttpObserver {
  // A status line: a new response begins (after a 100 Continue, say); headers seen so far
  // belonged to an earlier one.
  std::function<void()> on_response_start;
  // One header: the name in lower case, name and value trimmed.
  std::function<void(const std::string& name, const std::string& value)> on_header;
  // A piece of the body, already appended to the response's body; `status` as known so far.
  std::function<void(long status, std::string_view piece)> on_body;
};

// libcurl's global set-up, once per process. Throws EnvironmentError when it fails.
void InitHttpClient();

// Sends `request` and collects the response. A transfer that fails is described in the
// response, never thrown; throws EnvironmentError only when no request can be made at all
// (libcurl's set-up, a handle).
HttpResponse SendHttpRequest(const HttpRequest& request, const HttpObserver& observer = {});

// A Retry-After value (RFC 9110 section 10.2.3), delta-seconds or an HTTP date, as seconds
// from now (never negative); nullopt when it is neither.
std::optional<double> ParseRetryAfter(const std::string& value);

}  // namespace ptxbench
