#include "serve/worker.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "common/clock.h"
#include "common/error.h"
#include "common/files.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "evaluate/evaluate.h"
#include "record/record.h"
#include "run/gpu_lock.h"
#include "serve/job_queue.h"
#include "serve/job_request.h"
#include "serve/leftovers.h"

namespace ptxbench {

namespace {
std::string HostName() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}
// $XDG_RUNTIME_DIR/ptxbench (a folder only this user has), ${TMPDIR:-/tmp}/ptxbench-<uid>,
// then a folder under $HOME, named after the host (a home shared between hosts keeps each
// host's locks and scratch apart).
std::vector<std::string> WorkerDirCandidates() {
  std::vector<std::string> out;
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && x[0] == '/')
    out.push_back(std::string(x) + "/ptxbench");
  const char* t = std::getenv("TMPDIR");
  out.push_back(std::string(t && t[0] == '/' ? t : "/tmp") + "/ptxbench-" +
                std::to_string(::geteuid()));
  if (const char* h = std::getenv("HOME"); h && h[0] == '/' && h[1] != '\0')
    out.push_back(std::string(h) + "/.cache/ptxbench/worker-" + HostName());
  return out;
}
}  // namespace

std::string DefaultWorkerDir() { return WorkerDirCandidates().front(); }

std::string ResolveWorkerDir(std::string* passed_over) {
  std::string why;
  for (const std::string& dir : WorkerDirCandidates()) {
    try {
      if (dir.find("/.cache/ptxbench/") != std::string::npos)
        MakeDirs(dir.substr(0, dir.rfind('/')));
      RequirePrivateDir(dir);
      if (passed_over) *passed_over = why;
      return dir;
    } catch (const std::exception& e) {
      why += (why.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  throw EnvironmentError("no private folder for the worker (pass --lock-dir): " + why);
}

void RequirePrivateDir(const std::string& path) {
  if (path.empty()) throw EnvironmentError("the worker's private folder has no name");
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    throw EnvironmentError("cannot create the worker's private folder " + path + ": " +
                           std::strerror(errno));
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    throw EnvironmentError("cannot inspect " + path + ": " + std::strerror(errno));
  if (S_ISLNK(st.st_mode))
    throw EnvironmentError(path +
                           " is a symbolic link: refused as the worker's private folder "
                           "(GPU locks and scratch files)");
  if (!S_ISDIR(st.st_mode)) throw EnvironmentError(path + " is not a folder");
  if (st.st_uid != ::geteuid())
    throw EnvironmentError(path + " belongs to uid " + std::to_string(st.st_uid) +
                           ", not to this user (" + std::to_string(::geteuid()) +
                           "): refused as the worker's private folder");
  if ((st.st_mode & 07777) != 0700 && ::chmod(path.c_str(), 0700) != 0)
    throw EnvironmentError("cannot make " + path + " private (0700): " + std::strerror(errno));
}

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The worker's scratch folder: <private>/scratch-<pid>-<random>, removed when it ends; a new
// worker removes those of dead pids (only there: a folder that is ours by construction).
class WorkerScratch {
 public:
  explicit WorkerScratch(const std::string& private_dir) {
    path_ = private_dir + "/scratch-" + std::to_string(::getpid()) + "-" + RandomId().substr(0, 8);
    if (::mkdir(path_.c_str(), 0700) != 0)
      throw EnvironmentError("cannot create " + path_ + ": " + std::strerror(errno));
  }
  ~WorkerScratch() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

  // Removes scratch-<pid>-* folders whose pid is dead; returns how many.
  static int RemoveOrphans(const std::string& private_dir) {
    int removed = 0;
    DIR* d = ::opendir(private_dir.c_str());
    if (!d) return 0;
    std::vector<std::string> doomed;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("scratch-", 0) != 0) continue;
      size_t dash = name.find('-', 8);
      long long pid = 0;
      if (dash == std::string::npos || !ParseInt64(name.substr(8, dash - 8), &pid)) continue;
      if (pid == ::getpid() || ProcessAlive(static_cast<pid_t>(pid))) continue;
      std::string path = private_dir + "/" + name;
      struct stat st {};
      if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
        continue;
      doomed.push_back(path);
    }
    ::closedir(d);
    for (const auto& p : doomed) {
      std::error_code ec;
      fs::remove_all(p, ec);  // never follows symbolic links
      removed += !ec;
    }
    return removed;
  }

 private:
  std::string path_;
};

// The text of a request field, whatever the queued row holds there.
std::string Field(const json& r, const char* key) {
  if (!r.is_object()) return "";
  auto it = r.find(key);
  return it != r.end() && it->is_string() ? it->get<std::string>() : "";
}

// A claimed job on its way through the worker.
struct HeldJob {
  Job job;
  std::string kernel_path;
  std::optional<EvalRequest> request;  // empty: the request could not be made (error says why)
  std::string error;
  double prepare_seconds = 0;
};

class Worker {
 public:
  Worker(const WorkerOptions& o, const std::atomic<bool>& stop)
      : o_(o),
        stop_(stop),
        queue_(OpenJobQueue(o.db)),
        catalog_(Catalog::Load(o.tasks_dir.empty() ? Catalog::DefaultDir() : o.tasks_dir)) {
    // A folder given is used or refused; the default one, when another user took it first (or
    // it is a symlink), is passed over for the next candidate, never used.
    if (!o.lock_dir.empty()) {
      dir_ = o.lock_dir;
      RequirePrivateDir(dir_);
    } else {
      dir_ = ResolveWorkerDir(&passed_over_);
    }
    orphans_ = WorkerScratch::RemoveOrphans(dir_);
    // What killed workers and evaluations left elsewhere (/dev/shm, $TMPDIR, the caches).
    leftovers_ = RemoveLeftovers(o.cache_root.empty() ? CacheRoot() : o.cache_root);
    scratch_.emplace(dir_);
    me_.host = HostName();
    me_.pid = ::getpid();
    me_.gpu = o.gpu;
    me_.id = me_.host + ":" + std::to_string(me_.pid) + ":" + o.gpu;
  }

  int Run() {
    Log("worker " + me_.id + " on " + queue_->Describe() + " (lease " +
        std::to_string(o_.lease.count()) + " s, GPU lock wait up to " +
        std::to_string(o_.lock_timeout.count()) + " s in " + dir_ + ")");
    if (!passed_over_.empty())
      Log("worker " + me_.id + ": not using " + DefaultWorkerDir() + " (" + passed_over_ +
          "): using " + dir_ + " instead");
    if (leftovers_.total() > 0)
      Log("worker " + me_.id + ": removed the leftovers of dead processes: " +
          std::to_string(leftovers_.scratch_folders) + " scratch folder(s), " +
          std::to_string(leftovers_.tmpxft_files) + " nvcc temporary file(s), " +
          std::to_string(leftovers_.cache_tmp) + " unfinished cache entr(y/ies)");
    if (orphans_ > 0)
      Log("worker " + me_.id + ": removed " + std::to_string(orphans_) +
          " scratch folder(s) of dead workers");
    try {
      queue_->Heartbeat(me_);
    } catch (const std::exception& e) {
      LogLimited("heartbeat",
                 "worker " + me_.id + ": heartbeat failed (database write): " + e.what());
    }
    std::thread leases([this] { LeaseLoop(); });
    std::thread watch([this] { StopWatch(); });
    std::thread preparer([this] { PrepareLoop(); });
    GpuLoop();
    // Stopping: the preparer may be inside a build (nvcc, bounded by its own timeout). Its job
    // goes back to the queue now; the worker does not wait for the build.
    bool prepared = WaitFor([this] { return preparing_done_; }, std::chrono::seconds(2));
    ReleaseHeld();
    {
      std::lock_guard<std::mutex> lock(mu_);
      leases_done_ = true;
    }
    cv_.notify_all();
    leases.join();
    watch.join();
    Log("worker " + me_.id + " stopped");
    if (!prepared) {
      // A thread still in the build: end the process here rather than wait for it (the
      // compiler runs in its own process group and finishes into the cache on its own).
      scratch_.reset();
      std::fflush(stderr);
      ::_exit(0);
    }
    preparer.join();
    return 0;
  }

 private:
  void Log(const std::string& line) {
    if (o_.quiet) return;
    std::string safe = ValidUtf8(RedactSecrets(line));
    std::fprintf(stderr, "%s\n", safe.c_str());
  }
  // At most one line per `key` every 10 s (a full disk fails every poll): the rest counted.
  void LogLimited(const std::string& key, const std::string& line) {
    {
      std::lock_guard<std::mutex> lock(log_mu_);
      auto& [last, suppressed] = limited_[key];
      if (last.time_since_epoch().count() != 0 && SecondsSince(last) < 10) {
        ++suppressed;
        return;
      }
      last = SteadyClock::now();
      if (suppressed > 0) {
        Log(line + " (and " + std::to_string(suppressed) + " more like it in the last 10 s)");
        suppressed = 0;
        return;
      }
    }
    Log(line);
  }

  template <typename Pred>
  bool WaitFor(Pred pred, std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, pred);
  }

  // Claims and prepares while fewer than one prepared job waits for the GPU.
  void PrepareLoop() {
    while (!stop_) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, o_.poll, [this] { return ready_.empty() || stop_; });
        if (!ready_.empty() || stop_) continue;
      }
      std::optional<Job> job;
      try {
        job = queue_->Claim(me_, o_.lease);
      } catch (const std::exception& e) {
        LogLimited("claim", "worker " + me_.id + ": claim failed (database): " + e.what());
      }
      if (!job) {
        std::this_thread::sleep_for(o_.poll);
        continue;
      }
      HeldJob h;
      h.job = *job;
      {
        std::lock_guard<std::mutex> lock(mu_);
        held_[job->id] = job->lease_token;
      }
      Prepare(h);
      {
        std::lock_guard<std::mutex> lock(mu_);
        ready_.push_back(std::move(h));
      }
      cv_.notify_all();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      preparing_done_ = true;
    }
    cv_.notify_all();
  }

  // The CPU stage of one job. Never throws: whatever goes wrong is the job's error.
  void Prepare(HeldJob& h) {
    auto t = SteadyClock::now();
    try {
      const json& r = h.job.request;
      Log("worker " + me_.id + ": job " + h.job.id + " (attempt " + std::to_string(h.job.attempts) +
          ", " + Truncate(Field(r, "task"), 80) + ")");
      if (!r.is_object()) throw InputError("the queued request is not a JSON object");
      auto source = r.find("source");
      if (source == r.end() || !source->is_string())
        throw InputError("the queued request has no source text");
      h.kernel_path = scratch_->File(h.job.id + ".cu");
      WriteFileAtomic(h.kernel_path, source->get<std::string>());
      h.request = EvalRequestForJob(r, catalog_, h.kernel_path);
      h.request->cache_root = o_.cache_root;
      PrepareBuild(*h.request);
    } catch (const std::exception& e) {
      h.request.reset();
      h.error = e.what();
    } catch (...) {
      h.request.reset();
      h.error = "an unknown exception";
    }
    h.prepare_seconds = SecondsSince(t);
  }

  // Evaluates prepared jobs one at a time, under the GPU's lock.
  void GpuLoop() {
    for (;;) {
      HeldJob h;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return !ready_.empty() || preparing_done_ || stop_; });
        if (ready_.empty()) {
          if (preparing_done_ || stop_) return;
          continue;
        }
        h = std::move(ready_.front());
        ready_.pop_front();
      }
      cv_.notify_all();
      try {
        RunJob(h);
      } catch (const std::exception& e) {  // the boundary: RunJob already catches; belt and braces
        Log("worker " + me_.id + ": job " + h.job.id + ": " + e.what());
      } catch (...) {
        Log("worker " + me_.id + ": job " + h.job.id + ": an unknown exception");
      }
      if (!h.kernel_path.empty()) std::remove(h.kernel_path.c_str());
      {
        std::lock_guard<std::mutex> lock(mu_);
        held_.erase(h.job.id);
      }
    }
  }

  // Gives a job back to the queue (the worker is stopping before it could evaluate it).
  void Release(const HeldJob& h, const std::string& why) {
    bool ok = false;
    try {
      ok = queue_->Release(h.job.id, h.job.lease_token);
    } catch (const std::exception& e) {
      Log("worker " + me_.id + ": cannot give job " + h.job.id +
          " back (database write failed): " + e.what() + "; its lease will expire instead");
      return;
    }
    Log("worker " + me_.id + ": job " + h.job.id +
        (ok ? " back to the queue (" : " not given back (") + why +
        (ok ? ")" : "; its lease was no longer this worker's)"));
  }

  // Every job still held at the end (prepared or in preparation) goes back to the queue.
  void ReleaseHeld() {
    std::map<std::string, std::string> held;
    std::deque<HeldJob> ready;
    {
      std::lock_guard<std::mutex> lock(mu_);
      held = held_;
      ready.swap(ready_);
      held_.clear();
    }
    for (const auto& [id, token] : held) {
      HeldJob h;
      h.job.id = id;
      h.job.lease_token = token;
      Release(h, "the worker is stopping");
    }
    for (auto& h : ready)
      if (!h.kernel_path.empty()) std::remove(h.kernel_path.c_str());
  }

  void RunJob(HeldJob& h) {
    if (stop_) return Release(h, "the worker is stopping");
    json record;
    GpuStageTimes gpu;
    try {
      if (h.request) {
        std::optional<GpuLock> lock;
        if (o_.gpu != "none") {
          std::string path = dir_ + "/gpu-" + o_.gpu + ".lock";
          lock.emplace(path, std::chrono::duration_cast<std::chrono::milliseconds>(o_.lock_timeout),
                       stop_, GpuLock::Mode::kShared);
          if (lock->outcome() == GpuLock::Outcome::kStopped)
            return Release(h, "the worker stopped while waiting for the GPU lock");
          if (lock->outcome() == GpuLock::Outcome::kTimedOut)
            record = ErrorRecord(h, "gpu_lock_timeout",
                                 "the GPU lock " + path + " was not free within " +
                                     std::to_string(o_.lock_timeout.count()) +
                                     " s (another process holds it); not evaluated");
        }
        if (record.is_null()) {
          killed_children_ = false;
          in_gpu_stage_ = true;
          gpu.started_at = UnixNow();
          try {
            h.request->stop = &stop_;  // a wait for the GPU inside ends when the worker stops
            record = Evaluate(*h.request).ToJson();
          } catch (const std::exception& e) {
            record = ErrorRecord(h, "worker",
                                 std::string("the evaluation failed in the harness: ") + e.what());
          }
          gpu.ended_at = UnixNow();
          in_gpu_stage_ = false;
          if (killed_children_)
            return Release(h,
                           "the worker stopped during the evaluation; its processes were killed");
          if (stop_ && record.value("reason", "") == "gpu_lock_stopped")
            return Release(h, "the worker stopped while the evaluation waited for the GPU");
        }
      } else {
        record = ErrorRecord(h, "worker", "this worker cannot evaluate the job: " + h.error);
      }
      record["service"] = {
          {"job_id", h.job.id},
          {"worker", me_.id},
          {"gpu", o_.gpu},
          {"attempt", h.job.attempts},
          {"queued_seconds", h.job.claimed_at - h.job.submitted_at},
          {"prepare_seconds", h.prepare_seconds},
          {"gpu_stage", {{"started_at", gpu.started_at}, {"ended_at", gpu.ended_at}}}};
      // Serialisable as it will be stored: a string that is not UTF-8 would throw there.
      (void)record.dump();
      // Within the queue's limit per job: the verdict kept, oversized layers cut.
      record = FitRecord(record);
    } catch (const std::exception& e) {
      in_gpu_stage_ = false;
      record = ErrorRecord(h, "worker", std::string("the worker failed on this job: ") + e.what());
    }
    Record(h, record, gpu);
  }

  void Record(const HeldJob& h, json record, const GpuStageTimes& gpu) {
    bool accepted = false;
    std::string failed;
    // Through an outage of the database (down, restarting, locked) the result is offered
    // again while its lease may still hold, rather than evaluated again after it expires.
    auto outage_until = SteadyClock::now() + o_.lease;
    auto pause = std::chrono::milliseconds(250);
    for (int attempt = 0; attempt < 2; ++attempt) {
      try {
        accepted = queue_->Complete(h.job.id, h.job.lease_token, record, gpu);
        failed.clear();
        break;
      } catch (const StorageError& e) {
        failed = e.what();
        if (!e.retryable() || stop_ || SteadyClock::now() + pause > outage_until) break;
        LogLimited("record", "worker " + me_.id + ": cannot record job " + h.job.id +
                                 " yet (database unavailable): " + e.what() + "; trying again");
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::milliseconds(2000));
        --attempt;  // an outage is not a refused record
      } catch (const Error& e) {
        failed = e.what();
        if (e.kind() != ErrorKind::kInput) break;
        // The record itself was refused: the job still gets one, saying so.
        record =
            ErrorRecord(h, "worker", std::string("the worker's record was refused: ") + e.what());
      } catch (const std::exception& e) {
        failed = e.what();
        record =
            ErrorRecord(h, "worker", std::string("the worker's record was refused: ") + e.what());
      }
    }
    std::string status = Field(record, "status");
    if (!failed.empty())
      Log("worker " + me_.id + ": cannot record job " + h.job.id + " " + status +
          " (database write failed): " + failed + "; its lease will expire and it is retried");
    else
      Log("worker " + me_.id + ": job " + h.job.id + " " + status +
          (accepted ? "" : " (refused: the lease was lost, the job was retried elsewhere)"));
  }

  // On stop: kills the process groups of the evaluation's children, again every 100 ms while
  // the GPU stage lasts. A compiler (nvcc) is spared: a killed build would be cached as a
  // compile error; it runs in its own process group under its own timeout.
  void StopWatch() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (leases_done_) return;
        cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return leases_done_; });
        if (leases_done_) return;
      }
      if (!stop_) continue;
      cv_.notify_all();
      if (!in_gpu_stage_) continue;
      for (const auto& [pid, cmd] : ChildProcesses()) {
        if (cmd.find("nvcc") != std::string::npos) continue;
        if (::getpgid(pid) == pid) ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);
        killed_children_ = true;
      }
    }
  }

  // Heartbeats, and renews every held lease a few times per lease period.
  void LeaseLoop() {
    auto period = std::max<std::chrono::milliseconds>(
        std::chrono::milliseconds(200),
        std::chrono::duration_cast<std::chrono::milliseconds>(o_.lease) / 3);
    std::unique_lock<std::mutex> lock(mu_);
    while (!leases_done_) {
      cv_.wait_for(lock, period, [this] { return leases_done_; });
      if (leases_done_) break;
      std::map<std::string, std::string> held = held_;
      lock.unlock();
      try {
        queue_->Heartbeat(me_);
      } catch (const std::exception& e) {
        LogLimited("heartbeat",
                   "worker " + me_.id + ": heartbeat failed (database write): " + e.what());
      }
      for (const auto& [id, token] : held) {
        try {
          if (!queue_->Renew(id, token, o_.lease))
            Log("worker " + me_.id + ": lost the lease of job " + id +
                " (expired and given to another worker)");
        } catch (const std::exception& e) {
          LogLimited("renew", "worker " + me_.id + ": cannot renew the lease of job " + id +
                                  " (database write failed): " + e.what());
        }
      }
      lock.lock();
    }
  }

  json ErrorRecord(const HeldJob& h, const std::string& reason, const std::string& message) {
    const json& r = h.job.request;
    std::string source = Field(r, "source");
    return {{"schema", kEvaluationSchema},
            {"status", "INFRA_ERROR"},
            {"reason", reason},
            {"message", ValidUtf8(Truncate(message, 4096))},
            {"task",
             {{"definition", ValidUtf8(Truncate(Field(r, "task"), 256))},
              {"workload_id", ValidUtf8(Truncate(Field(r, "workload"), 256))}}},
            {"arch", ValidUtf8(Truncate(Field(r, "arch"), 64))},
            {"created_at", NowUtcIso8601()},
            {"ptxbench_version", PTXBENCH_VERSION}};
  }

  const WorkerOptions& o_;
  const std::atomic<bool>& stop_;
  std::unique_ptr<JobQueue> queue_;
  std::string dir_, passed_over_;
  Catalog catalog_;
  std::optional<WorkerScratch> scratch_;
  int orphans_ = 0;
  Leftovers leftovers_;
  WorkerIdentity me_;
  std::mutex mu_, log_mu_;
  std::condition_variable cv_;
  std::deque<HeldJob> ready_;
  std::map<std::string, std::string> held_;  // job id → lease token
  std::map<std::string, std::pair<SteadyClock::time_point, int>> limited_;
  bool preparing_done_ = false, leases_done_ = false;
  std::atomic<bool> in_gpu_stage_{false}, killed_children_{false};
};

}  // namespace

int RunWorker(const WorkerOptions& options, const std::atomic<bool>& stop) {
  Worker w(options, stop);
  return w.Run();
}

}  // namespace ptxbench
