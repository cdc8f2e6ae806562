#include "common/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>

#include "common/error.h"
#include "common/strings.h"

namespace ptxbench {

namespace {

// The state the transfer's callbacks share.
struct Exchange {
  const HttpRequest& request;
  const HttpObserver& observer;
  CURL* curl;
  HttpResponse& response;
};

std::string Lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* x = static_cast<Exchange*>(user);
  const size_t bytes = size * count;
  if (x->response.status == 0)
    curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &x->response.status);
  const size_t cap = x->request.max_response_bytes;
  if (cap > 0 && x->response.body.size() + bytes > cap) {
    x->response.too_large = true;
    return 0;  // aborts the transfer
  }
  x->response.body.append(data, bytes);
  if (x->observer.on_body) x->observer.on_body(x->response.status, std::string_view(data, bytes));
  return bytes;
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* x = static_cast<Exchange*>(user);
  const size_t bytes = size * count;
  std::string_view line(data, bytes);
  if (StartsWith(line, "HTTP/")) {
    x->response.status = 0;  // read again at the new response's body
    if (x->observer.on_response_start) x->observer.on_response_start();
    return bytes;
  }
  const size_t colon = line.find(':');
  if (colon != std::string_view::npos && x->observer.on_header)
    x->observer.on_header(Lower(Trim(line.substr(0, colon))), Trim(line.substr(colon + 1)));
  return bytes;
}

HttpResponse::Transfer TransferOf(CURLcode rc) {
  switch (rc) {
    case CURLE_OK:
      return HttpResponse::Transfer::kComplete;
    case CURLE_OPERATION_TIMEDOUT:
      return HttpResponse::Transfer::kTimedOut;
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
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING:
      return HttpResponse::Transfer::kInterrupted;
    default:
      return HttpResponse::Transfer::kFailed;
  }
}

void SetOptions(CURL* c, const HttpRequest& request, curl_slist* headers, Exchange* exchange,
                char* error_buffer) {
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  if (request.method == HttpMethod::kPost) {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, exchange);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, exchange);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
  if (request.timeout_ms > 0) curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, request.timeout_ms);
  if (request.connect_timeout_ms > 0)
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, request.connect_timeout_ms);
  if (request.stall_s > 0) {
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, request.stall_s);
  }
  if (request.decode_any_encoding) curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  if (request.tcp_keepalive) curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "ptxbench/" PTXBENCH_VERSION);
}

}  // namespace

void InitHttpClient() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      throw EnvironmentError("libcurl could not be initialised");
  });
}

HttpResponse SendHttpRequest(const HttpRequest& request, const HttpObserver& observer) {
  InitHttpClient();
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw EnvironmentError("libcurl could not make a handle");
  curl_slist* headers = nullptr;
  for (const std::string& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_guard(headers,
                                                                           curl_slist_free_all);
  HttpResponse response;
  Exchange exchange{request, observer, curl.get(), response};
  char error_buffer[CURL_ERROR_SIZE] = {0};
  SetOptions(curl.get(), request, headers, &exchange, error_buffer);

  const CURLcode rc = curl_easy_perform(curl.get());
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &response.status);
  response.transfer = TransferOf(rc);
  long sent = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_REQUEST_SIZE, &sent);
  response.request_sent = sent > 0 || rc == CURLE_OK;
  if (rc != CURLE_OK) response.error = error_buffer[0] ? error_buffer : curl_easy_strerror(rc);
  return response;
}

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

}  // namespace ptxbench
