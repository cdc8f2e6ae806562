// A worker: claims jobs from the queue and runs each through the pipeline of `ptxbench eval`,
// on the one GPU it sees. Two stages overlap (docs/design.md section 7):
//
//   preparer thread:  Claim ─► write the source ─► PrepareBuild (CPU: screen, nvcc, cached)
//                         │ hands over at most one prepared job
//   GPU thread:       hold the worker's GPU lock (shared) ─► Evaluate (the GPU layers; the
//                     build is a cache hit) ─► release ─► Complete (refused when the lease was
//                     lost)
//   lease thread:     heartbeat, and renew the lease of every job held
//
// Several workers sharing one GPU (--workers-per-gpu) evaluate at the same time: inside
// Evaluate, each child that runs on the GPU holds the GPU's host-wide lock (run/gpu_lock.h),
// shared for the references, trials, memory check and profile, alone for the timed calls
// of the candidate and the baselines, so no two timed windows and no other kernels overlap, while
// builds, comparisons and digests run in parallel. The worker's own lock, per device label, is
// held shared for the whole evaluation: whoever holds it alone (an operator, a maintenance
// job) keeps the workers of that label off the GPU. It lives in a private folder (0700, this
// user's; a symlink or another owner's folder is refused), is opened with O_NOFOLLOW, and is
// waited for at most `lock_timeout`: a job that cannot get the GPU in that time ends
// INFRA_ERROR (gpu_lock_timeout) instead of running forever under renewed leases. The
// worker's scratch folder is in the same private folder, named after its pid, so that a
// worker's start removes what dead ones left there.
//
// No job can stop the worker: whatever is thrown at the job boundary becomes that job's
// INFRA_ERROR record (reason "worker", the exception's text). On stop (SIGTERM) the worker
// ends within seconds: jobs not yet evaluated go back to the queue (Release, the attempt not
// counted), an evaluation in progress has its child processes killed and its job goes back
// too, and a wait for either GPU lock ends at once.
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
  std::string tasks_dir;   // empty: Catalog::DefaultDir()
  std::string cache_root;  // empty: CacheRoot()
  std::string lock_dir;    // the private folder of locks and scratch; empty: default
  std::chrono::seconds lock_timeout{600};  // the longest wait for the GPU's lock
  bool quiet = false;
};

// $XDG_RUNTIME_DIR/ptxbench where that is set, else ${TMPDIR:-/tmp}/ptxbench-<uid>.
std::string DefaultWorkerDir();

// The worker's private folder when none is given: the first of DefaultWorkerDir(),
// ${TMPDIR:-/tmp}/ptxbench-<uid> and $HOME/.cache/ptxbench/worker-<host> that is (or can be
// made) a real folder of this user's, mode 0700 (RequirePrivateDir). Another local user who
// creates /tmp/ptxbench-<uid> first (or a symlink there) only moves the workers to the next
// one. `passed_over` (optional) gets why earlier ones were not used. Throws EnvironmentError
// when none can be used.
std::string ResolveWorkerDir(std::string* passed_over = nullptr);

// Creates `path` (mode 0700) unless it exists, and checks that it is a real folder (not a
// symlink) owned by this user, making it 0700 if it was wider; throws EnvironmentError,
// naming the problem, otherwise.
void RequirePrivateDir(const std::string& path);

// Runs until `stop` becomes true (finishing the jobs it holds), then returns 0. Throws
// EnvironmentError when the queue cannot be opened.
int RunWorker(const WorkerOptions& options, const std::atomic<bool>& stop);

}  // namespace ptxbench
