// The service's HTTP API (JSON over HTTP or HTTPS, GNU libmicrohttpd behind this one interface):
//
//   POST /v1/evaluations             submit (job_request.h) ─► 202 {"id", "state", "result"}
//   GET  /v1/evaluations/ID?wait=S   the evaluation record (200) once done; until then, after
//                                    waiting up to S seconds (long poll), 202 {"id", "state"}
//   GET  /v1/evaluations/ID/job      the job: state, attempts, worker, GPU, lease history
//   GET  /v1/tasks                   every definition, without workloads
//   GET  /v1/tasks/NAME              one definition, with its workloads
//   GET  /v1/health                  version, GPUs, queue depth, running per GPU, workers
//
// Request bodies are parsed with limits on size, nesting and value count (common/bounded_json.h)
// before anything walks them; only a submission has a body (any other request with one is
// 400), and each endpoint takes only the query parameters it names (400 otherwise).
//
// Errors: 400 malformed or invalid input (numbers out of range included), 401 a missing or
// wrong bearer token (when the server has one), 403 a server without a token asked through a
// Host that is not a loopback name (DNS rebinding) or from another Origin (a browser on another
// site), 404 an unknown id, task or path, 411 a body without a Content-Length (chunked bodies
// are refused before they are read), 413 a Content-Length over the limit (refused before the
// body is read), 415 a POST whose Content-Type is not application/json, 503 the queue's
// database failing (health: not ok, with the reasons); each with {"error": one line naming
// the problem}. libmicrohttpd itself answers 414 (request line) and 431 (headers) when they do
// not fit a connection's memory, with its own short HTML body, and closes that connection.
//
// Limits against hostile clients: one thread per connection (a long poll or a slow client
// holds only its own), at most max_connections open at once and max_connections_per_ip from
// one address, an idle timeout per connection, a deadline for the whole of each request
// (request_timeout_s, however slowly it trickles), connection_memory_bytes for a request's
// line and headers. At the cap a newcomer is let in by closing a connection that is still
// reading its request, of the address holding the most (its own, or one holding more): a few
// addresses cannot keep the others out. A long poll whose client hung up ends at once. With
// tls_cert and tls_key the service speaks only HTTPS (GnuTLS through libmicrohttpd).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/source_policy.h"

namespace ptxbench {

class JobQueue;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8737;
  std::string token;                          // empty: no authentication
  size_t max_source_bytes = kMaxSourceBytes;  // a larger source gets 413
  // Open connections at once, each served by its own thread (long polls hold one each); a
  // connection over the cap is closed as it is accepted. From one client address at most
  // max_connections_per_ip (0: no limit; behind a reverse proxy every client is the proxy):
  // by default half the cap, so one address never holds all of it, and a client host with
  // `run --concurrency 64` (a long poll per trajectory) fits.
  int max_connections = 256;
  int max_connections_per_ip = 128;
  // A request's line and headers must fit this much memory per connection (libmicrohttpd's
  // pool): more headers, or a line without an end, are refused with 431 or 414.
  size_t connection_memory_bytes = 64 * 1024;
  // PEM files: both set, the service speaks HTTPS only.
  std::string tls_cert, tls_key;
  double max_wait_s = 60;                 // the longest long poll
  std::chrono::seconds alive_within{30};  // a worker without a heartbeat this long is not alive
  std::string tasks_dir;                  // empty: Catalog::DefaultDir()
  nlohmann::json gpus = nlohmann::json::array();  // for health: what the workers were given
  // Per connection: one that makes no progress (reading a request, or taking a reply) for
  // io_timeout_s is closed; between requests a keep-alive connection may idle keep_alive_s,
  // and it is closed after keep_alive_max requests. A client trickling a byte at a time is
  // not idle: request_timeout_s below ends it.
  int io_timeout_s = 10;
  int keep_alive_s = 5;
  int keep_alive_max = 100;
  // The whole of a request (line, headers and body; counted from the connection's accept, or
  // from the previous reply of a keep-alive connection) must arrive within request_timeout_s,
  // however it trickles; the connection is closed otherwise. At the max_connections cap a new
  // connection is let in by closing a connection still reading its request, from the client
  // address that holds the most (never one whose request is being answered): a few addresses
  // cannot keep the others out.
  int request_timeout_s = 30;
  // Long polls (GET …?wait=S) may hold at most this share of max_connections; beyond it a
  // poll is answered at once with the job's state (202, Retry-After: 1, "waited": false), so
  // that health and submissions always find a connection.
  double long_poll_share = 0.5;
  // Health is not ok (503) when the queue's local folder has less free space than this.
  double min_free_disk_mb = 64;
  // Health is not ok (503) with fewer live workers (a heartbeat within alive_within) than this:
  // the workers `serve` starts itself, or --min-workers.
  int min_workers_alive = 0;
  // More reasons for health to be not ok, in public words (the supervisor of the local
  // workers: one that cannot start, and when it is tried again); may be empty.
  std::function<std::vector<std::string>()> worker_problems;
};

// Longest task, workload or other name a request may carry: longer ones are refused before
// any lookup (the did-you-mean search costs time in the name's length).
constexpr size_t kMaxNameBytes = 256;  // = job_request.h kMaxRequestNameBytes

// Throws EnvironmentError, saying how to get one, when this binary has no HTTP server.
void RequireHttpServer();

// Serves until `stop` becomes true; expires leases in the background (so a job whose worker
// died is retried, or failed, even while no worker claims). Throws EnvironmentError when the
// port cannot be bound or the binary has no HTTP server. Prints "listening on HOST:PORT" on
// stdout once the port is bound.
void ServeHttp(const ServerOptions& options, JobQueue& queue, const std::atomic<bool>& stop);

}  // namespace ptxbench
