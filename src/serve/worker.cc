#include "serve/worker.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "common/clock.h"
#include "common/error.h"
#include "common/files.h"
#include "evaluate/evaluate.h"
#include "record/record.h"
#include "serve/job_queue.h"
#include "serve/job_request.h"

namespace ptxbench {
namespace {

using nlohmann::json;

// The exclusive right to time on one device, held across processes (flock: released by the
// kernel when the holder dies, so a killed worker never leaves the GPU locked).
class GpuLock {
 public:
  explicit GpuLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) throw EnvironmentError("cannot open the GPU lock " + path);
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) throw EnvironmentError("cannot lock " + path);
  }
  ~GpuLock() { ::close(fd_); }
  GpuLock(const GpuLock&) = delete;
  GpuLock& operator=(const GpuLock&) = delete;

 private:
  int fd_ = -1;
};

std::string HostName() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
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
        catalog_(Catalog::Load(o.tasks_dir.empty() ? Catalog::DefaultDir() : o.tasks_dir)),
        scratch_("ptxbench-worker") {
    me_.host = HostName();
    me_.pid = ::getpid();
    me_.gpu = o.gpu;
    me_.id = me_.host + ":" + std::to_string(me_.pid) + ":" + o.gpu;
  }

  int Run() {
    Log("worker " + me_.id + " on " + queue_->Describe() + " (lease " +
        std::to_string(o_.lease.count()) + " s)");
    queue_->Heartbeat(me_);
    std::thread leases([this] { LeaseLoop(); });
    std::thread preparer([this] { PrepareLoop(); });
    GpuLoop();
    preparer.join();
    {
      std::lock_guard<std::mutex> lock(mu_);
      leases_done_ = true;
    }
    cv_.notify_all();
    leases.join();
    Log("worker " + me_.id + " stopped");
    return 0;
  }

 private:
  void Log(const std::string& line) {
    if (!o_.quiet) std::fprintf(stderr, "%s\n", line.c_str());
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
      } catch (const Error& e) {
        Log("worker " + me_.id + ": claim failed: " + e.what());
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
      Log("worker " + me_.id + ": job " + job->id + " (attempt " + std::to_string(job->attempts) +
          ", " + job->request.value("task", "") + ")");
      auto t = SteadyClock::now();
      try {
        h.kernel_path = scratch_.File(job->id + ".cu");
        WriteFileAtomic(h.kernel_path, job->request.value("source", ""));
        h.request = EvalRequestForJob(job->request, catalog_, h.kernel_path);
        h.request->cache_root = o_.cache_root;
        PrepareBuild(*h.request);
      } catch (const Error& e) {
        h.request.reset();
        h.error = e.what();
      }
      h.prepare_seconds = SecondsSince(t);
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

  // Evaluates prepared jobs one at a time, under the GPU's lock.
  void GpuLoop() {
    for (;;) {
      HeldJob h;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return !ready_.empty() || preparing_done_; });
        if (ready_.empty()) return;
        h = std::move(ready_.front());
        ready_.pop_front();
      }
      cv_.notify_all();
      json record;
      GpuStageTimes gpu;
      if (h.request) {
        std::optional<GpuLock> lock;
        if (o_.gpu != "none") lock.emplace(o_.lock_dir + "/ptxbench-gpu-" + o_.gpu + ".lock");
        gpu.started_at = UnixNow();
        try {
          record = Evaluate(*h.request).ToJson();
        } catch (const std::exception& e) {
          record = ErrorRecord(h, std::string("the evaluation failed in the harness: ") + e.what());
        }
        gpu.ended_at = UnixNow();
      } else {
        record = ErrorRecord(h, "this worker cannot evaluate the job: " + h.error);
      }
      record["service"] = {
          {"job_id", h.job.id},
          {"worker", me_.id},
          {"gpu", o_.gpu},
          {"attempt", h.job.attempts},
          {"queued_seconds", h.job.claimed_at - h.job.submitted_at},
          {"prepare_seconds", h.prepare_seconds},
          {"gpu_stage", {{"started_at", gpu.started_at}, {"ended_at", gpu.ended_at}}}};
      bool accepted = false;
      try {
        accepted = queue_->Complete(h.job.id, h.job.lease_token, record, gpu);
      } catch (const Error& e) {
        Log("worker " + me_.id + ": cannot record job " + h.job.id + ": " + e.what());
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        held_.erase(h.job.id);
      }
      std::remove(h.kernel_path.c_str());
      Log("worker " + me_.id + ": job " + h.job.id + " " + record.value("status", "") +
          (accepted ? "" : " (refused: the lease was lost, the job was retried elsewhere)"));
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
        for (const auto& [id, token] : held)
          if (!queue_->Renew(id, token, o_.lease))
            Log("worker " + me_.id + ": lost the lease of job " + id);
      } catch (const Error& e) {
        Log("worker " + me_.id + ": heartbeat failed: " + e.what());
      }
      lock.lock();
    }
  }

  json ErrorRecord(const HeldJob& h, const std::string& message) {
    const json& r = h.job.request;
    return {
        {"schema", kEvaluationSchema},
        {"status", "INFRA_ERROR"},
        {"reason", "worker"},
        {"message", message},
        {"task", {{"definition", r.value("task", "")}, {"workload_id", r.value("workload", "")}}},
        {"arch", r.value("arch", "")},
        {"created_at", NowUtcIso8601()},
        {"ptxbench_version", PTXBENCH_VERSION}};
  }

  const WorkerOptions& o_;
  const std::atomic<bool>& stop_;
  std::unique_ptr<JobQueue> queue_;
  Catalog catalog_;
  ScratchDir scratch_;
  WorkerIdentity me_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<HeldJob> ready_;
  std::map<std::string, std::string> held_;  // job id → lease token
  bool preparing_done_ = false, leases_done_ = false;
};

}  // namespace

int RunWorker(const WorkerOptions& options, const std::atomic<bool>& stop) {
  Worker w(options, stop);
  return w.Run();
}

}  // namespace ptxbench
