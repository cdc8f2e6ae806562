// `ptxbench serve --port P [--gpus all|none|0,1,…]`: the evaluation service on one host: the
// HTTP API (serve/server.h) over a queue (the SQLite store by default, or PostgreSQL), and
// one worker process per GPU (`ptxbench worker`), supervised: a worker that dies is started
// again, and its jobs come back through their leases.
#include <cuda_runtime.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/commands.h"
#include "cli/shared_options.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/files.h"
#include "common/source_policy.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "serve/job_queue.h"
#include "serve/leftovers.h"
#include "serve/server.h"

extern char** environ;

namespace ptxbench {
namespace {

using nlohmann::json;

std::atomic<bool> g_stop{false};
void OnStopSignal(int) { g_stop = true; }

struct Gpu {
  std::string label;  // what the worker gets as --gpu (a UUID where known: stable over reorders)
  std::string name;
  int index = -1;
};

std::string UuidText(const cudaUUID_t& u) {
  // CUDA_VISIBLE_DEVICES's form: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
  char buf[64];
  const unsigned char* b = reinterpret_cast<const unsigned char*>(u.bytes);
  std::snprintf(buf, sizeof buf,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return buf;
}

// The GPUs this host shows (querying them creates no context).
std::vector<Gpu> DetectGpus() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return {};
  std::vector<Gpu> gpus;
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    gpus.push_back({UuidText(p.uuid), p.name, i});
  }
  return gpus;
}

std::vector<Gpu> SelectGpus(const std::string& spec) {
  if (spec == "none") return {};
  std::vector<Gpu> all = DetectGpus();
  if (spec == "all") return all;
  std::vector<Gpu> chosen;
  for (const std::string& part : Split(spec, ',')) {
    long long i;
    if (!ParseInt64(Trim(part), &i) || i < 0)
      throw UsageError("--gpus '" + spec + "': all, none, or device indices such as 0,1");
    if (i >= static_cast<long long>(all.size()))
      throw UsageError("--gpus: no device " + std::to_string(i) + " (this host shows " +
                       std::to_string(all.size()) + ")");
    chosen.push_back(all[static_cast<size_t>(i)]);
  }
  return chosen;
}

// Worker processes: started, watched, started again when they die, stopped with the server.
//
//   not running ──(its start time came)──► running ──(exited or killed)──► not running
//
// A worker that ran for a while and died is started again at once (its jobs come back
// through their leases); one that exits soon after every start (it cannot open the queue, its
// private folder is refused) is started again after a pause that doubles with each such exit
// (1 s, 2 s, … 60 s), and health says so until one of its starts lasts.
class WorkerSupervisor {
 public:
  // `db` reaches the workers through their environment ($PTXBENCH_DB), never their command
  // lines, which every user of the host can read (ps, /proc/PID/cmdline).
  WorkerSupervisor(std::vector<std::vector<std::string>> argvs, const std::string& db,
                   std::string cache_root)
      : argvs_(std::move(argvs)), cache_root_(std::move(cache_root)) {
    slots_.resize(argvs_.size());
    // A worker killed in the middle of a build leaves its compiler's helpers (cicc, ptxas)
    // running where the sandbox had no PID namespace to end them: as a subreaper, this
    // process inherits them and ends them (Check, Stop).
    subreaper_ = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
    for (char** e = environ; e && *e; ++e)
      if (std::string(*e).rfind("PTXBENCH_DB=", 0) != 0) env_.push_back(*e);
    env_.push_back("PTXBENCH_DB=" + db);
  }
  ~WorkerSupervisor() { Stop(); }

  void StartAll() {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < argvs_.size(); ++i) Start(i);
  }
  // Reaps workers that died and starts them again when their time comes.
  void Check() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<pid_t> dead;
    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot& w = slots_[i];
      if (w.pid <= 0) {
        if (!stopping_ && SteadyClock::now() >= w.next_start) Start(i);
        continue;
      }
      const double ran = SecondsSince(w.started);
      if (ran >= kLasting && w.quick_exits > 0) w.quick_exits = 0;  // this start lasted
      int st = 0;
      if (::waitpid(w.pid, &st, WNOHANG) != w.pid) continue;
      w.last_exit = WIFSIGNALED(st) ? "killed by signal " + std::to_string(WTERMSIG(st))
                                    : "exited " + std::to_string(WEXITSTATUS(st));
      double pause = 0.2;
      if (ran < kLasting) {
        ++w.quick_exits;
        pause = std::min(kLongestPause, std::ldexp(1.0, std::min(w.quick_exits, 7) - 1));
      }
      std::fprintf(
          stderr, "serve: worker %zu (pid %d) %s after %.1f s; starting it again in %.1f s%s\n", i,
          w.pid, w.last_exit.c_str(), ran, pause,
          w.quick_exits > 1 ? (" (" + std::to_string(w.quick_exits) +
                               " exits in a row soon after starting: its lines above say why)")
                                  .c_str()
                            : "");
      dead.push_back(w.pid);
      w.pid = -1;
      w.next_start = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                              std::chrono::duration<double>(pause));
    }
    EndOrphans(dead);
    RemoveScratchOf(dead);
  }
  // For health: the workers that keep exiting soon after they start (public words: no pid).
  std::vector<std::string> Problems() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (size_t i = 0; i < slots_.size(); ++i) {
      const Slot& w = slots_[i];
      if (w.quick_exits < 2) continue;
      std::string next =
          w.pid > 0 ? "a new start is running"
                    : "next start in " +
                          FormatNumber("%.0f", std::max(0.0, -SecondsSince(w.next_start))) + " s";
      out.push_back("worker " + std::to_string(i) + " cannot stay up: it ended " +
                    std::to_string(w.quick_exits) + " times in a row within " +
                    FormatNumber("%.0f", kLasting) + " s of starting (last: " + w.last_exit + "; " +
                    next + "; the server's log has its messages)");
    }
    return out;
  }
  // Asks every worker to stop (SIGTERM: they finish what they hold), waits up to `grace`,
  // then kills the rest (their jobs come back when the leases expire).
  void Stop(std::chrono::seconds grace = std::chrono::seconds(10)) {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    std::vector<pid_t> killed;
    for (const Slot& w : slots_)
      if (w.pid > 0) ::kill(w.pid, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + grace;
    for (Slot& w : slots_) {
      while (w.pid > 0) {
        int st;
        if (::waitpid(w.pid, &st, WNOHANG) == w.pid) {
          w.pid = -1;
        } else if (std::chrono::steady_clock::now() > deadline) {
          ::kill(w.pid, SIGKILL);
          ::waitpid(w.pid, &st, 0);
          killed.push_back(w.pid);
          w.pid = -1;
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      }
    }
    EndOrphans(killed);
    RemoveScratchOf(killed);
  }

 private:
  static constexpr double kLasting = 10;       // a start that lasts this long is not a failure
  static constexpr double kLongestPause = 60;  // between starts of a worker that keeps exiting
  struct Slot {
    pid_t pid = -1;
    SteadyClock::time_point started, next_start;
    int quick_exits = 0;  // exits in a row, each within kLasting of its start
    std::string last_exit;
  };

  std::vector<pid_t> Pids() const {
    std::vector<pid_t> pids;
    for (const Slot& w : slots_) pids.push_back(w.pid);
    return pids;
  }
  // Ends the processes dead workers left (as their subreaper); their pids join `dead`.
  void EndOrphans(std::vector<pid_t>& dead) {
    if (!subreaper_) return;
    std::vector<pid_t> before;
    for (const auto& [pid, cmd] : ChildProcesses()) before.push_back(pid);
    if (int n = KillOrphans(Pids()); n > 0) {
      std::fprintf(stderr, "serve: ended %d process(es) left behind by dead workers\n", n);
      for (pid_t p : before)
        if (std::find(dead.begin(), dead.end(), p) == dead.end()) dead.push_back(p);
    }
  }
  // The scratch of workers (and of the processes they left) that this process saw die: their
  // /dev/shm folders, nvcc's temporary files, unfinished cache entries.
  void RemoveScratchOf(const std::vector<pid_t>& dead) {
    if (dead.empty()) return;
    Leftovers gone = RemoveLeftovers(cache_root_, dead);
    if (gone.total() > 0)
      std::fprintf(stderr,
                   "serve: removed what dead workers left: %d scratch folder(s), %d nvcc "
                   "temporary file(s), %d unfinished cache entr(y/ies)\n",
                   gone.scratch_folders, gone.tmpxft_files, gone.cache_tmp);
  }
  void Start(size_t i) {
    std::vector<char*> argv, envp;
    for (auto& a : argvs_[i]) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) throw EnvironmentError("cannot start a worker (fork failed)");
    if (pid == 0) {
      // A worker never outlives its server.
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(1);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    slots_[i].pid = pid;
    slots_[i].started = SteadyClock::now();
    std::fprintf(stderr, "serve: worker %zu started (pid %d): %s\n", i, pid,
                 ValidUtf8(RedactSecrets(Join(argvs_[i], " "))).c_str());
  }

  std::vector<std::vector<std::string>> argvs_;
  std::string cache_root_;
  std::vector<std::string> env_;
  std::mutex mu_;  // Check and Stop (the watch thread), Problems (health's threads)
  std::vector<Slot> slots_;
  bool subreaper_ = false, stopping_ = false;
};

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

struct ServeOptions {
  std::string host = "127.0.0.1", db, db_file, gpus = "all", tasks_dir, cache_dir, worker_dir;
  std::string token_env = "PTXBENCH_SERVE_TOKEN";
  int port = 8737, workers = 1, lease = 30, lock_timeout = 600, min_workers = -1;
  int max_connections = 256, max_connections_per_ip = 128, request_timeout = 30;
  std::string tls_cert, tls_key;
  int64_t max_source_bytes = kMaxSourceBytes;
  double min_free_disk_mb = 64;
  bool no_workers = false, allow_plain_http = false;
};

// --gpus: all, none, or device indices (whether the devices exist is checked when serving).
CLI::Validator GpuSpec() {
  return CLI::Validator(
      [](std::string& in) -> std::string {
        bool indices = !in.empty();
        for (const std::string& part : Split(in, ',')) {
          long long i;
          indices = indices && ParseInt64(Trim(part), &i) && i >= 0;
        }
        if (in == "all" || in == "none" || indices) return "";
        return "Value " + in + " is not all, none, or device indices such as 0,1";
      },
      "all|none|INDEX,…");
}

// The Declare* functions run in the order the help lists the options.

void DeclareAddressAndQueueOptions(CLI::App* cmd, ServeOptions* o) {
  AddRangeOption(cmd, "--port", &o->port, "TCP port", 1, 65535);
  cmd->add_option("--host", o->host, "Address to listen on (0.0.0.0: every interface)")
      ->capture_default_str();
  AddStoreOption(cmd, &o->db,
                 "The queue and results: a store file (default " + DefaultStorePath() +
                     ") or postgresql://… (shared with workers on other hosts)",
                 StoreSource::kEnvironment);
  AddQueueFileOption(cmd, &o->db_file);
}

void DeclareWorkerOptions(CLI::App* cmd, ServeOptions* o) {
  cmd->add_option("--gpus", o->gpus, "Devices to start workers for: all, none, or 0,1,…")
      ->check(GpuSpec())
      ->capture_default_str();
  AddRangeOption(cmd, "--workers", &o->workers,
                 "Workers per GPU (several share a GPU's lock: one timed evaluation at a time); "
                 "with no GPU, the workers in all (GPU layers skipped)",
                 1, 64);
  cmd->add_flag("--no-workers", o->no_workers,
                "Start no worker here (they run elsewhere: `ptxbench worker --db …`)");
  cmd->add_option("--min-workers", o->min_workers,
                  "Health is not ok (503) with fewer live workers (default: 1 when serve starts "
                  "workers, 0 with --no-workers)")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--worker-dir", o->worker_dir,
                  "The workers' private folder (their --lock-dir; default: each worker's own "
                  "choice, see `ptxbench worker --help`)");
  AddRangeOption(cmd, "--lease", &o->lease, "Seconds of a job's lease", 2, 3600);
}

void DeclareRequestLimitOptions(CLI::App* cmd, ServeOptions* o) {
  AddRangeOption(cmd, "--max-source-bytes", &o->max_source_bytes, "Largest source accepted",
                 int64_t{1}, int64_t{1} << 30);
  AddRangeOption(cmd, "--max-connections", &o->max_connections,
                 "Open HTTP connections at once, each with its own thread (long polls may hold "
                 "half); more are closed as they arrive",
                 2, 4096);
  // The former name (one thread per connection now, so the same number).
  cmd->add_option("--http-threads", o->max_connections, "Former name of --max-connections")
      ->check(CLI::Range(2, 4096));
  AddRangeOption(cmd, "--max-connections-per-ip", &o->max_connections_per_ip,
                 "Open connections from one client address (0: no limit; behind a reverse "
                 "proxy every client is the proxy); at least the clients' --concurrency",
                 0, 4096);
  AddRangeOption(cmd, "--request-timeout", &o->request_timeout,
                 "Seconds a request's line, headers and body may take to arrive, however they "
                 "trickle (from the connection's start or its previous reply)",
                 1, 3600);
}

void DeclareTlsAndTokenOptions(CLI::App* cmd, ServeOptions* o) {
  CLI::Option* cert = cmd->add_option("--tls-cert", o->tls_cert,
                                      "PEM certificate (chain): serve HTTPS only (with --tls-key)")
                          ->check(CLI::ExistingFile);
  CLI::Option* key =
      cmd->add_option("--tls-key", o->tls_key, "PEM private key of --tls-cert (unencrypted)")
          ->check(CLI::ExistingFile);
  cert->needs(key);
  key->needs(cert);
  cmd->add_option("--token-env", o->token_env,
                  "Environment variable holding the bearer token clients must send (unset: none)")
      ->capture_default_str();
  cmd->add_flag("--allow-plain-http", o->allow_plain_http,
                "Accept a token on a non-loopback --host over plain HTTP (it travels in clear; "
                "prefer --tls-cert/--tls-key, or a TLS reverse proxy with serve on 127.0.0.1)");
}

void DeclareServeOptions(CLI::App* cmd, ServeOptions* o) {
  DeclareAddressAndQueueOptions(cmd, o);
  DeclareWorkerOptions(cmd, o);
  DeclareRequestLimitOptions(cmd, o);
  DeclareTlsAndTokenOptions(cmd, o);
  AddRangeOption(cmd, "--min-free-disk-mb", &o->min_free_disk_mb,
                 "Health is not ok (503) when the queue's folder has less free space", 0.0, 1e9);
  AddRangeOption(cmd, "--lock-timeout", &o->lock_timeout,
                 "Seconds a worker waits for its GPU's lock before the job ends INFRA_ERROR", 1,
                 86400);
  AddTasksDirOption(cmd, &o->tasks_dir);
  AddCacheDirOption(cmd, &o->cache_dir, "Build and reference cache of the workers");
}

// A bearer token must not cross the network in clear unless the operator says so.
void RefuseTokenInClear(const ServeOptions& o, const char* token) {
  if (token && *token && !IsLoopback(o.host) && !o.allow_plain_http && o.tls_cert.empty())
    throw UsageError("--host " + o.host +
                     ": a bearer token would travel in clear over plain HTTP beyond this "
                     "machine; pass --tls-cert and --tls-key, serve on 127.0.0.1 behind a TLS "
                     "reverse proxy, or pass --allow-plain-http");
}

// --db, --db-file or the default store; a store file's folder is made when missing.
std::string QueueLocationFor(const ServeOptions& o) {
  std::string db = QueueLocation(o.db, o.db_file);
  if (db.empty()) db = DefaultStorePath();
  if (!IsPostgresUrl(db)) {
    std::string dir = db.find('/') == std::string::npos ? "" : db.substr(0, db.rfind('/'));
    if (!dir.empty()) MakeDirs(dir);
  }
  return db;
}

// The HTTP server's settings; the GPUs and the worker health come later (ServeWorkers).
ServerOptions ServerOptionsFor(const ServeOptions& o, const char* token) {
  ServerOptions so;
  so.host = o.host;
  so.port = o.port;
  if (token) so.token = token;
  so.min_free_disk_mb = o.min_free_disk_mb;
  so.max_source_bytes = static_cast<size_t>(o.max_source_bytes);
  so.max_connections = o.max_connections;
  so.max_connections_per_ip = o.max_connections_per_ip;
  so.request_timeout_s = o.request_timeout;
  so.tls_cert = o.tls_cert;
  so.tls_key = o.tls_key;
  so.tasks_dir = o.tasks_dir;
  // A worker renews three times per lease; three missed renewals and it is not alive.
  so.alive_within = std::chrono::seconds(std::max(3, o.lease));
  return so;
}

// The command line of each worker to start (none with --no-workers): --workers per selected
// GPU, or --workers without a device where there is none. The GPUs go into health (so->gpus).
std::vector<std::vector<std::string>> WorkerArgvs(const ServeOptions& o, ServerOptions* so) {
  std::vector<std::vector<std::string>> argvs;
  if (o.no_workers) return argvs;
  std::vector<Gpu> gpus = SelectGpus(o.gpus);
  for (const Gpu& g : gpus)
    so->gpus.push_back({{"index", g.index}, {"uuid", g.label}, {"name", g.name}});
  std::vector<std::string> labels;
  for (const Gpu& g : gpus)
    for (int k = 0; k < o.workers; ++k) labels.push_back(g.label);
  if (gpus.empty()) {
    std::fprintf(stderr,
                 "serve: no GPU (--gpus %s): %d worker(s) without a device; the GPU layers "
                 "of every evaluation will be skipped, with that reason\n",
                 o.gpus.c_str(), o.workers);
    labels.assign(static_cast<size_t>(o.workers), "none");
  }
  std::string self = SelfExecutable();
  for (const std::string& label : labels) {
    std::vector<std::string> argv = {self,
                                     "worker",
                                     "--gpu",
                                     label,
                                     "--lease",
                                     std::to_string(o.lease),
                                     "--lock-timeout",
                                     std::to_string(o.lock_timeout)};
    if (!o.tasks_dir.empty()) argv.insert(argv.end(), {"--tasks-dir", o.tasks_dir});
    if (!o.cache_dir.empty()) argv.insert(argv.end(), {"--cache-dir", o.cache_dir});
    if (!o.worker_dir.empty()) argv.insert(argv.end(), {"--lock-dir", o.worker_dir});
    argvs.push_back(argv);
  }
  return argvs;
}

// Starts the workers, serves HTTP until SIGTERM or SIGINT, then stops the workers.
int ServeWithWorkers(const ServeOptions& o, ServerOptions so, JobQueue& queue,
                     const std::string& db, const std::vector<std::vector<std::string>>& argvs) {
  struct sigaction sa = {};
  sa.sa_handler = OnStopSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  WorkerSupervisor workers(argvs, db, o.cache_dir.empty() ? CacheRoot() : o.cache_dir);
  so.min_workers_alive = o.min_workers >= 0 ? o.min_workers : (argvs.empty() ? 0 : 1);
  so.worker_problems = [&workers] { return workers.Problems(); };
  workers.StartAll();
  std::thread watch([&] {
    while (!g_stop) {
      workers.Check();
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  });
  std::fprintf(stderr, "serve: queue %s, %zu worker(s), token %s\n",
               ValidUtf8(RedactSecrets(queue.Describe())).c_str(), argvs.size(),
               so.token.empty() ? "off" : "required");
  try {
    ServeHttp(so, queue, g_stop);
  } catch (...) {
    g_stop = true;
    watch.join();
    throw;
  }
  watch.join();
  workers.Stop();
  return 0;
}

int Serve(const ServeOptions& o) {
  RequireHttpServer();
  const char* token = std::getenv(o.token_env.c_str());
  RefuseTokenInClear(o, token);
  const std::string db = QueueLocationFor(o);
  std::unique_ptr<JobQueue> queue = OpenJobQueue(db);
  // A request waits at most this long for another writer's lock, then gets 503 Retry-After.
  queue->SetLockWait(std::chrono::seconds(5));
  ServerOptions so = ServerOptionsFor(o, token);
  std::vector<std::vector<std::string>> argvs = WorkerArgvs(o, &so);
  return ServeWithWorkers(o, std::move(so), *queue, db, argvs);
}

}  // namespace

CommandRunner AddServeCommand(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "The evaluation service: an HTTP API, a queue, one worker per GPU");
  DeclareServeOptions(cmd, o.get());
  return [o]() { return Serve(*o); };
}

}  // namespace ptxbench
