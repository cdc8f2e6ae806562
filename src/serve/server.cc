#include "serve/server.h"

#include <httplib.h>
#include <sys/socket.h>
#include <sys/statvfs.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>

#include "common/clock.h"
#include "common/error.h"
#include "common/source_policy.h"
#include "common/strings.h"
#include "serve/job_queue.h"
#include "serve/job_request.h"
#include "task/definition.h"

namespace ptxbench {

using nlohmann::json;

void RequireHttpServer() {}

namespace {

void Reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n",
                  "application/json");
}
void Fail(httplib::Response& res, int status, const std::string& message) {
  Reply(res, status, {{"error", message}});
}

// Constant time in the length of the expected token: no timing oracle for its prefix.
bool TokenMatches(const std::string& given, const std::string& expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i)
    diff |= static_cast<unsigned char>(expected[i] ^ (i < given.size() ? given[i] : 0));
  return diff == 0;
}

std::string TextField(const json& r, const char* key) {
  if (!r.is_object()) return "";
  auto it = r.find(key);
  return it != r.end() && it->is_string() ? it->get<std::string>() : "";
}

json JobJson(const Job& j) {
  return {{"id", j.id},
          {"state", ToString(j.state)},
          {"attempts", j.attempts},
          {"worker", j.worker},
          {"gpu", j.gpu},
          {"submitted_at", j.submitted_at},
          {"claimed_at", j.claimed_at},
          {"finished_at", j.finished_at},
          {"gpu_started_at", j.gpu_started_at},
          {"gpu_ended_at", j.gpu_ended_at},
          {"lease_until", j.lease_until},
          {"history", j.history},
          {"task", TextField(j.request, "task")},
          {"workload", TextField(j.request, "workload")}};
}

bool Finished(const Job& j) { return j.state == JobState::kDone || j.state == JobState::kFailed; }

void LogLine(const std::string& line) {
  std::string safe = ValidUtf8(RedactSecrets(line));
  std::fprintf(stderr, "serve: %s\n", safe.c_str());
}

// What health reports about the database and the disk, refreshed at most once a second (the
// probe is a real write).
class HealthProbe {
 public:
  HealthProbe(JobQueue& queue, double min_free_mb) : queue_(queue), min_free_mb_(min_free_mb) {}

  std::vector<std::string> Problems() {
    std::lock_guard<std::mutex> lock(mu_);
    if (checked_ && SecondsSince(at_) < 1.0) return WithWriteFailure(problems_);
    problems_.clear();
    if (auto p = queue_.ProbeWrite(std::chrono::milliseconds(1000)))
      problems_.push_back("the queue database cannot be written: " + *p);
    std::string folder = queue_.LocalFolder();
    struct statvfs v {};
    if (!folder.empty() && ::statvfs(folder.c_str(), &v) == 0) {
      double free_mb =
          static_cast<double>(v.f_bavail) * static_cast<double>(v.f_frsize) / 1048576.0;
      if (free_mb < min_free_mb_)
        problems_.push_back("the disk of " + folder + " has " + FormatNumber("%.0f", free_mb) +
                            " MiB free, under the " + FormatNumber("%.0f", min_free_mb_) +
                            " MiB this service needs (--min-free-disk-mb)");
    }
    checked_ = true;
    at_ = SteadyClock::now();
    return WithWriteFailure(problems_);
  }
  // A write of a request that failed (a submission): reported for a minute.
  void WriteFailed(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    write_failure_ = what;
    write_failed_at_ = SteadyClock::now();
  }

 private:
  std::vector<std::string> WithWriteFailure(std::vector<std::string> p) const {
    if (!write_failure_.empty() && SecondsSince(write_failed_at_) < 60)
      p.push_back("a write to the queue database failed " +
                  FormatNumber("%.0f", SecondsSince(write_failed_at_)) +
                  " s ago: " + write_failure_);
    return p;
  }

  JobQueue& queue_;
  double min_free_mb_;
  std::mutex mu_;
  bool checked_ = false;
  SteadyClock::time_point at_, write_failed_at_;
  std::vector<std::string> problems_;
  std::string write_failure_;
};

// Counts the long polls in progress; a poll over the cap does not wait.
class LongPollSlot {
 public:
  LongPollSlot(std::atomic<int>& n, int cap) : n_(n) { held_ = ++n_ <= cap; }
  ~LongPollSlot() { --n_; }
  bool held() const { return held_; }

 private:
  std::atomic<int>& n_;
  bool held_ = false;
};

bool ChunkedOrUnframed(const httplib::Request& req) {
  return req.has_header("Transfer-Encoding") ||
         ((req.method == "POST" || req.method == "PUT" || req.method == "PATCH") &&
          !req.has_header("Content-Length"));
}

}  // namespace

void ServeHttp(const ServerOptions& o, JobQueue& queue, const std::atomic<bool>& stop) {
  Catalog catalog = Catalog::Load(o.tasks_dir.empty() ? Catalog::DefaultDir() : o.tasks_dir);
  httplib::Server svr;
  int threads = o.http_threads;
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  // A body this much over the source limit is refused before it is read (413); JSON escaping
  // can make the body larger than the source, hence the margin; the source's own size is
  // checked exactly below.
  const size_t max_body = o.max_source_bytes * 2 + 65536;
  svr.set_payload_max_length(max_body);
  // A connection must deliver its request, and take its reply, in this time (cpp-httplib 0.11
  // applies it to each read and write: a client trickling a byte at a time is not cut off by
  // it, see docs/serve-measurements.md); idle keep-alive connections are closed sooner.
  svr.set_read_timeout(o.io_timeout_s, 0);
  svr.set_write_timeout(o.io_timeout_s, 0);
  svr.set_keep_alive_timeout(o.keep_alive_s);
  svr.set_keep_alive_max_count(static_cast<size_t>(o.keep_alive_max));
  const int long_poll_cap =
      std::max(1, static_cast<int>(static_cast<double>(threads) * o.long_poll_share));
  std::atomic<int> long_polls{0};
  HealthProbe probe(queue, o.min_free_disk_mb);

  // Every request passes here first: the token, when the server has one.
  svr.set_pre_routing_handler([&o](const httplib::Request& req, httplib::Response& res) {
    // A body without a length (chunked, or read until the connection ends) is read by
    // cpp-httplib 0.11 without its size limit: only the submission endpoint accepts one, and
    // counts it itself (below); anywhere else it is refused before a byte of it is read.
    if (ChunkedOrUnframed(req) && !(req.method == "POST" && req.path == "/v1/evaluations")) {
      Fail(res, 411, "a body without Content-Length is accepted only by POST /v1/evaluations");
      res.set_header("Connection", "close");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (o.token.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (auth.rfind(prefix, 0) != 0) {
      Fail(res, 401, "this server requires a bearer token (Authorization: Bearer …)");
      res.set_header("WWW-Authenticate", "Bearer");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!TokenMatches(auth.substr(prefix.size()), o.token)) {
      Fail(res, 401, "the bearer token is not this server's");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Whatever httplib refused by itself (no route, a body over the limit) gets a JSON message.
  svr.set_error_handler(httplib::Server::HandlerWithResponse([&o](const httplib::Request& req,
                                                                  httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 404)
      Fail(res, 404, "no such endpoint: " + req.method + " " + req.path);
    else if (res.status == 411)
      Fail(res, 411, "the request needs a Content-Length");
    else if (res.status == 413)
      Fail(res, 413,
           "the request body is over this server's limit (sources up to " +
               std::to_string(o.max_source_bytes) + " bytes)");
    else
      Fail(res, res.status, "the request was refused (HTTP " + std::to_string(res.status) + ")");
    return httplib::Server::HandlerResponse::Handled;
  }));
  svr.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        Fail(res, 500, "internal error: " + what);
      });

  // The body is read here, counted as it comes: a chunked body over the limit is refused
  // after max_body bytes, not read in full (cpp-httplib 0.11 checks only Content-Length).
  svr.Post("/v1/evaluations", [&](const httplib::Request&, httplib::Response& res,
                                  const httplib::ContentReader& read_body) {
    std::string text;
    bool over = false;
    bool complete = read_body([&](const char* data, size_t n) {
      if (text.size() + n > max_body) {
        over = true;
        return false;
      }
      text.append(data, n);
      return true;
    });
    if (over || res.status == 413) {
      res.set_header("Connection", "close");
      return Fail(res, 413,
                  "the request body is over this server's limit (sources up to " +
                      std::to_string(o.max_source_bytes) + " bytes)");
    }
    if (!complete) return Fail(res, 400, "the request body could not be read");
    json body;
    try {
      body = json::parse(text);
    } catch (const json::out_of_range& e) {  // 1e400 and the like
      return Fail(res, 400, std::string("a number in the body is out of range: ") + e.what());
    } catch (const json::exception& e) {
      return Fail(res, 400, std::string("the body is not valid JSON: ") + e.what());
    }
    // The source policy of eval, inspect and submit, in the same words: 413 for the size,
    // 400 for the rest (empty, NUL bytes, invalid UTF-8).
    if (body.is_object() && body.contains("source") && body["source"].is_string()) {
      const std::string& source = body["source"].get_ref<const std::string&>();
      if (auto problem = SourceFileProblem(source, o.max_source_bytes))
        return Fail(res, SourceIsTooLarge(source, o.max_source_bytes) ? 413 : 400, *problem);
    }
    json request;
    try {
      request = NormalizeJobRequest(body, catalog);
    } catch (const Error& e) {
      return Fail(res, 400, e.what());
    } catch (const json::exception& e) {
      return Fail(res, 400,
                  std::string("a field of the body has the wrong type or range: ") + e.what());
    }
    std::string id;
    try {
      id = queue.Submit(request);
    } catch (const std::exception& e) {
      std::string what = RedactSecrets(e.what());
      probe.WriteFailed(what);
      LogLine("a submission could not be stored (database write failed): " + what);
      return Fail(res, 503, "the queue could not store the job (database write failed): " + what);
    }
    Reply(res, 202, {{"id", id}, {"state", "queued"}, {"result", "/v1/evaluations/" + id}});
  });

  svr.Get(R"(/v1/evaluations/([0-9a-f]{32}))",
          [&](const httplib::Request& req, httplib::Response& res) {
            std::string id = req.matches[1];
            double wait = 0;
            if (req.has_param("wait")) {
              try {
                size_t used = 0;
                std::string w = req.get_param_value("wait");
                wait = std::stod(w, &used);
                if (used != w.size() || !(wait >= 0)) throw std::invalid_argument(w);
              } catch (const std::exception&) {
                return Fail(res, 400, "wait must be a number of seconds >= 0");
              }
            }
            wait = std::min(wait, o.max_wait_s);
            // At most long_poll_cap requests wait at once; the others are answered now.
            std::optional<LongPollSlot> slot;
            if (wait > 0) {
              slot.emplace(long_polls, long_poll_cap);
              if (!slot->held()) {
                wait = 0;
                res.set_header("Retry-After", "1");
              }
            }
            const bool waits = slot && slot->held();
            auto deadline = SteadyClock::now() + std::chrono::duration<double>(wait);
            // Poll the job's state (one indexed lookup) every few ms, and read the whole job only
            // once it is finished or the wait is over. The workers are other processes, so there is
            // nothing to be notified by; at 20 ms the poll adds ~10 ms to an evaluation of seconds
            // (it was 200 ms, which with the workers' own poll cost 5-7 % of a 7 s evaluation).
            auto pause = std::chrono::milliseconds(2);
            for (;;) {
              std::optional<JobState> state = queue.State(id);
              if (!state) return Fail(res, 404, "no evaluation " + id);
              bool finished = *state == JobState::kDone || *state == JobState::kFailed;
              if (finished || SteadyClock::now() >= deadline || stop) {
                std::optional<Job> job = queue.Get(id);
                if (!job) return Fail(res, 404, "no evaluation " + id);
                if (Finished(*job) && job->result) return Reply(res, 200, *job->result);
                if (SteadyClock::now() >= deadline || stop)
                  return Reply(res, 202,
                               {{"id", id},
                                {"state", ToString(job->state)},
                                {"attempts", job->attempts},
                                {"waited", waits}});
              }
              std::this_thread::sleep_for(pause);
              pause = std::min(pause * 2, std::chrono::milliseconds(20));
            }
          });

  svr.Get(R"(/v1/evaluations/([0-9a-f]{32})/job)",
          [&](const httplib::Request& req, httplib::Response& res) {
            std::optional<Job> job = queue.Get(req.matches[1]);
            if (!job) return Fail(res, 404, "no evaluation " + std::string(req.matches[1]));
            Reply(res, 200, JobJson(*job));
          });
  svr.Get(R"(/v1/evaluations/(.*))", [](const httplib::Request& req, httplib::Response& res) {
    Fail(res, 404, "no evaluation " + std::string(req.matches[1]) + " (ids are 32 hex digits)");
  });

  svr.Get("/v1/tasks", [&](const httplib::Request&, httplib::Response& res) {
    json all = json::array();
    for (const auto& d : catalog.definitions()) all.push_back(ToJson(d, false));
    Reply(res, 200, all);
  });
  svr.Get(R"(/v1/tasks/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1].length() > static_cast<long>(kMaxNameBytes))
      return Fail(
          res, 404,
          "no such task (task names are at most " + std::to_string(kMaxNameBytes) + " bytes)");
    try {
      Reply(res, 200, ToJson(catalog.Find(req.matches[1]), true));
    } catch (const Error& e) {
      Fail(res, 404, e.what());
    }
  });

  svr.Get("/v1/health", [&](const httplib::Request&, httplib::Response& res) {
    std::vector<std::string> problems;
    QueueHealth h;
    try {
      h = queue.Health(o.alive_within);
    } catch (const std::exception& e) {
      problems.push_back("the queue database cannot be read: " + RedactSecrets(e.what()));
    }
    for (std::string& p : probe.Problems()) problems.push_back(RedactSecrets(p));
    json workers = json::array();
    int alive = 0;
    for (const auto& w : h.workers) {
      alive += w.alive;
      workers.push_back({{"id", w.identity.id},
                         {"host", w.identity.host},
                         {"pid", w.identity.pid},
                         {"gpu", w.identity.gpu},
                         {"heartbeat_age_s", w.heartbeat_age_s},
                         {"alive", w.alive}});
    }
    json body = {{"status", problems.empty() ? "ok" : "not ok"},
                 {"version", PTXBENCH_VERSION},
                 {"queue_backend", queue.Describe()},
                 {"gpus", o.gpus},
                 {"queue",
                  {{"queued", h.queued},
                   {"running", h.running},
                   {"done", h.done},
                   {"failed", h.failed},
                   {"running_by_gpu", h.running_by_gpu}}},
                 {"workers_alive", alive},
                 {"workers", workers},
                 {"long_polls", long_polls.load()}};
    if (!problems.empty()) {
      body["problems"] = problems;
      body["error"] = Join(problems, "; ");
    }
    Reply(res, problems.empty() ? 200 : 503, body);
  });

  // Debian's compiled httplib listens with a backlog of 5: a burst of clients (200 at once)
  // overflows it and their connections wait out SYN retransmits for minutes. The listening
  // socket is the last one created before the bind succeeds; listening on it again raises
  // the backlog (Linux allows that on a listening socket).
  int listen_fd = -1;
  svr.set_socket_options([&listen_fd](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd = sock;
  });
  if (!svr.bind_to_port(o.host, o.port))
    throw EnvironmentError("cannot listen on " + o.host + ":" + std::to_string(o.port) +
                           " (in use, or not an address of this machine)");
  if (listen_fd < 0 || ::listen(listen_fd, SOMAXCONN) != 0)
    throw EnvironmentError("cannot raise the listen backlog of " + o.host + ":" +
                           std::to_string(o.port));
  std::printf("listening on %s:%d\n", o.host.c_str(), o.port);
  std::fflush(stdout);

  std::thread listener([&svr] { svr.listen_after_bind(); });
  // Leases of dead workers end here too, not only when another worker claims.
  auto last_expiry = SteadyClock::now(), last_logged = SteadyClock::now() - std::chrono::hours(1);
  int unlogged = 0;
  while (!stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (SecondsSince(last_expiry) >= 1.0) {
      last_expiry = SteadyClock::now();
      try {
        queue.ExpireLeases();
      } catch (const std::exception& e) {
        // Once per 10 s at most: a full disk fails every second.
        if (SecondsSince(last_logged) >= 10) {
          LogLine(
              std::string("expiring leases failed (database write): ") + e.what() +
              (unlogged ? " (and " + std::to_string(unlogged) + " more in the last 10 s)" : ""));
          last_logged = SteadyClock::now();
          unlogged = 0;
        } else {
          ++unlogged;
        }
      }
    }
  }
  svr.stop();
  listener.join();
}

}  // namespace ptxbench
