// A worker: claims jobs from the queue and runs each through the pipeline of `ptxbench eval`,
// on the one GPU it sees. Two stages overlap (DESIGN.md section 7):
//
//   preparer thread:  Claim ─► write the source ─► PrepareBuild (CPU: screen, nvcc, cached)
//                         │ hands over at most one prepared job
//   GPU thread:       take the GPU's lock ─► Evaluate (the GPU layers; the build is a cache
//                     hit) ─► release ─► Complete (refused when the lease was lost)
//   lease thread:     heartbeat, and renew the lease of every job held
//
// The GPU lock is a file lock per device label, so that several workers sharing one GPU
// (--workers-per-gpu) never time two evaluations at once, while their builds run in parallel.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

namespace ptxbench {

struct WorkerOptions {
  std::string db;            // the queue: a store file or postgresql://…
  std::string gpu = "none";  // the device label: an index or a GPU UUID, "none" for no GPU
  std::chrono::seconds lease{30};
  // Between claims while the queue is empty: what an idle worker adds to a job's latency
  // (half of it on average); one cheap indexed query per poll.
  std::chrono::milliseconds poll{20};
  std::string tasks_dir;                // empty: Catalog::DefaultDir()
  std::string cache_root;               // empty: CacheRoot()
  std::string lock_dir = "/tmp";        // where the per-GPU lock files are
  bool quiet = false;
};

// Runs until `stop` becomes true (finishing the jobs it holds), then returns 0. Throws
// EnvironmentError when the queue cannot be opened.
int RunWorker(const WorkerOptions& options, const std::atomic<bool>& stop);

}  // namespace ptxbench
