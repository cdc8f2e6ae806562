// What a client submits to the service, checked once at the door (the server) and turned into
// the pipeline's EvalRequest at the worker. The body of POST /v1/evaluations:
//
//   {"task": "gemm_n7168_k5120",          required: a definition of `ptxbench tasks`
//    "workload": "M=2379",                optional: an id or axis values (default: headline)
//    "arch": "sm_90a",                    optional
//    "source": "…the .cu file…",          required, at most the server's limit
//    "options": {"trials": 3, "sanitize": "always", …}}   optional: the JSON form of
//                                         evaluate/evaluation_options.h, each as in `eval`
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "evaluate/evaluate.h"
#include "task/definition.h"

namespace ptxbench {

// The longest task or workload name a request may carry (server.h kMaxNameBytes: the same).
constexpr size_t kMaxRequestNameBytes = 256;
// How deep a request body may nest: a job request is 3 levels deep (options hold scalars, a
// tag strings and integers); 16 leaves room and refuses any bomb long before a walk recurses.
constexpr int kMaxRequestDepth = 16;

// A message for a client with every absolute path cut to its file name: a 4xx body (an unknown
// or left-out task, say) shows nothing of where the service keeps its files.
std::string WithoutHostPaths(const std::string& message);
// How many values (bounded_json.h) a request body may hold: about 30 fields and options, and a
// tag of at most 4096 bytes; a body of 2 MB with 300,000 keys is refused as it is read rather
// than built (~40 MB of memory on a connection's thread).
constexpr size_t kMaxRequestValues = 4096;

// The request as queued: every field checked, the workload resolved to its id, defaults
// filled in. Throws InputError with one line that names the problem (field and why).
nlohmann::json NormalizeJobRequest(const nlohmann::json& body, const Catalog& catalog);

// The pipeline's request for a queued job whose source was written to `kernel_path`. The
// returned request points into `catalog`. Throws InputError as above (a worker whose catalog
// differs from the server's).
EvalRequest EvalRequestForJob(const nlohmann::json& request, const Catalog& catalog,
                              const std::string& kernel_path);

}  // namespace ptxbench
