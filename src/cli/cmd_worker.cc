// `ptxbench worker --db STORE|postgresql://… [--gpu N]`: one worker of the evaluation
// service (serve/worker.h), for the GPU it is given. `ptxbench serve` starts these itself;
// on other hosts they are started by hand (or by systemd), one per GPU, on a PostgreSQL queue.
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <memory>

#include "cli/commands.h"
#include "cli/shared_options.h"
#include "common/error.h"
#include "serve/job_queue.h"
#include "serve/worker.h"

namespace ptxbench {
namespace {

std::atomic<bool> g_stop{false};
void OnStopSignal(int) { g_stop = true; }

}  // namespace

CommandRunner AddWorkerCommand(CLI::App& app) {
  struct Options {
    std::string db, db_file, gpu = "none", tasks_dir, cache_dir, lock_dir;
    int lease = 30, lock_timeout = 600;
    bool quiet = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "worker", "A worker of the evaluation service: claims jobs from a queue, evaluates them");
  AddStoreOption(cmd, &o->db,
                 "The queue: a store file (one host) or postgresql://… (many); better given "
                 "through $PTXBENCH_DB or --db-file, which keep a password off the command line",
                 StoreSource::kEnvironment);
  AddQueueFileOption(cmd, &o->db_file);
  cmd->add_option("--gpu", o->gpu,
                  "The device this worker uses (an index or a GPU UUID; it sees only that one), "
                  "or none")
      ->capture_default_str();
  AddRangeOption(cmd, "--lease", &o->lease, "Seconds of a job's lease (renewed while working)", 2,
                 3600);
  AddTasksDirOption(cmd, &o->tasks_dir);
  AddCacheDirOption(cmd, &o->cache_dir, "Build and reference cache");
  cmd->add_option("--lock-dir", o->lock_dir,
                  "The worker's private folder (0700, this user's): the per-GPU lock files and "
                  "scratch (default " +
                      DefaultWorkerDir() +
                      ", created if missing; another user's or a symlink is passed over for "
                      "$HOME/.cache/ptxbench/worker-HOST)")
      ->check(CLI::ExistingDirectory);
  AddRangeOption(cmd, "--lock-timeout", &o->lock_timeout,
                 "Seconds to wait for the GPU's lock before the job ends INFRA_ERROR "
                 "(gpu_lock_timeout)",
                 1, 86400);
  cmd->add_flag("--quiet", o->quiet, "No log lines");
  return [o]() {
    std::string db = QueueLocation(o->db, o->db_file);
    if (db.empty())
      throw UsageError("worker: the queue is needed: --db, $PTXBENCH_DB or --db-file");
    for (char c : o->gpu)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_')
        throw UsageError("--gpu '" + o->gpu + "': an index, a GPU UUID or none");
    // The worker and every child it starts see only this device (none: no device at all, so
    // that the GPU layers say they were skipped instead of using a GPU nobody assigned).
    ::setenv("CUDA_VISIBLE_DEVICES", o->gpu == "none" ? "" : o->gpu.c_str(), 1);
    struct sigaction sa = {};
    sa.sa_handler = OnStopSignal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    WorkerOptions w;
    w.db = db;
    w.gpu = o->gpu;
    w.lease = std::chrono::seconds(o->lease);
    w.tasks_dir = o->tasks_dir;
    w.cache_root = o->cache_dir;
    w.lock_dir = o->lock_dir;
    w.lock_timeout = std::chrono::seconds(o->lock_timeout);
    w.quiet = o->quiet;
    return RunWorker(w, g_stop);
  };
}

}  // namespace ptxbench
