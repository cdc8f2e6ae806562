#include "serve/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <cstdio>
#include <thread>

#include "common/clock.h"
#include "common/error.h"
#include "common/source_policy.h"
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
          {"task", j.request.value("task", "")},
          {"workload", j.request.value("workload", "")}};
}

bool Finished(const Job& j) { return j.state == JobState::kDone || j.state == JobState::kFailed; }

}  // namespace

void ServeHttp(const ServerOptions& o, JobQueue& queue, const std::atomic<bool>& stop) {
  Catalog catalog = Catalog::Load(o.tasks_dir.empty() ? Catalog::DefaultDir() : o.tasks_dir);
  httplib::Server svr;
  int threads = o.http_threads;
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  // A body this much over the source limit is refused before it is read (413); JSON escaping
  // can make the body larger than the source, hence the margin; the source's own size is
  // checked exactly below.
  svr.set_payload_max_length(o.max_source_bytes * 2 + 65536);

  // Every request passes here first: the token, when the server has one.
  svr.set_pre_routing_handler([&o](const httplib::Request& req, httplib::Response& res) {
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

  svr.Post("/v1/evaluations", [&](const httplib::Request& req, httplib::Response& res) {
    json body;
    try {
      body = json::parse(req.body);
    } catch (const json::parse_error& e) {
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
    }
    std::string id = queue.Submit(request);
    Reply(res, 202, {{"id", id}, {"state", "queued"}, {"result", "/v1/evaluations/" + id}});
  });

  svr.Get(R"(/v1/evaluations/([0-9a-f]{32}))", [&](const httplib::Request& req,
                                                   httplib::Response& res) {
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
                       {{"id", id}, {"state", ToString(job->state)}, {"attempts", job->attempts}});
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
    try {
      Reply(res, 200, ToJson(catalog.Find(req.matches[1]), true));
    } catch (const Error& e) {
      Fail(res, 404, e.what());
    }
  });

  svr.Get("/v1/health", [&](const httplib::Request&, httplib::Response& res) {
    QueueHealth h = queue.Health(o.alive_within);
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
    Reply(res, 200,
          {{"status", "ok"},
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
           {"workers", workers}});
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
  auto last_expiry = SteadyClock::now();
  while (!stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (SecondsSince(last_expiry) >= 1.0) {
      last_expiry = SteadyClock::now();
      try {
        queue.ExpireLeases();
      } catch (const Error& e) {
        std::fprintf(stderr, "serve: expiring leases failed: %s\n", e.what());
      }
    }
  }
  svr.stop();
  listener.join();
}

}  // namespace ptxbench
