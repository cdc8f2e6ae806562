// The service's HTTP API (JSON over HTTP, cpp-httplib behind this one interface):
//
//   POST /v1/evaluations             submit (job_request.h) ─► 202 {"id", "state", "result"}
//   GET  /v1/evaluations/ID?wait=S   the evaluation record (200) once done; until then, after
//                                    waiting up to S seconds (long poll), 202 {"id", "state"}
//   GET  /v1/evaluations/ID/job      the job: state, attempts, worker, GPU, lease history
//   GET  /v1/tasks                   every definition, without workloads
//   GET  /v1/tasks/NAME              one definition, with its workloads
//   GET  /v1/health                  version, GPUs, queue depth, running per GPU, workers
//
// Errors: 400 malformed or invalid input (numbers out of range included), 401 a missing or
// wrong bearer token (when the server has one), 404 an unknown id, task or path, 411 a body
// without a length where none is accepted, 413 a body over the limit (chunked ones too), 503
// the queue's database failing (health: not ok, with the reasons); each with {"error": one
// line naming the problem}.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "common/source_policy.h"

namespace ptxbench {

class JobQueue;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8737;
  std::string token;                          // empty: no authentication
  size_t max_source_bytes = kMaxSourceBytes;  // a larger source gets 413
  int http_threads = 64;                      // concurrent requests (long polls hold one each)
  double max_wait_s = 60;                     // the longest long poll
  std::chrono::seconds alive_within{30};      // a worker without a heartbeat this long is not alive
  std::string tasks_dir;                      // empty: Catalog::DefaultDir()
  nlohmann::json gpus = nlohmann::json::array();  // for health: what the workers were given
  // Per connection: a request (line, headers, body) must arrive, and a reply be taken, within
  // this; an idle keep-alive connection is closed after keep_alive_s, and after
  // keep_alive_max requests.
  int io_timeout_s = 10;
  int keep_alive_s = 5;
  int keep_alive_max = 100;
  // Long polls (GET …?wait=S) may hold at most this share of the HTTP threads; beyond it a
  // poll is answered at once with the job's state (202, Retry-After: 1), so that health and
  // submissions always find a thread.
  double long_poll_share = 0.5;
  // Health is not ok (503) when the queue's local folder has less free space than this.
  double min_free_disk_mb = 64;
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
