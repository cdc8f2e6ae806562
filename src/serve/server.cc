#include "serve/server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "common/bounded_json.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/files.h"
#include "common/json_fields.h"
#include "common/source_policy.h"
#include "common/strings.h"
#include "serve/job_queue.h"
#include "serve/job_request.h"
#include "task/definition.h"

namespace ptxbench {

using nlohmann::json;

void RequireHttpServer() {}

namespace {

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

// A job as the service shows it: never its lease token, its source or its record.
json JobJson(const Job& j) {
  json out;
  PTXBENCH_JSON_SET_FIELDS(out, j, id, attempts, worker, gpu, submitted_at, claimed_at, finished_at,
                           gpu_started_at, gpu_ended_at, lease_until, history);
  out["state"] = ToString(j.state);
  out["task"] = TextField(j.request, "task");
  out["workload"] = TextField(j.request, "workload");
  return out;
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
    // Health's words are public: the kind of failure only; the details go to the log, once
    // per change.
    std::string detail;
    if (auto p = queue_.ProbeWrite(std::chrono::milliseconds(1000))) {
      problems_.push_back("the queue database cannot be written: " + p->PublicMessage());
      detail = p->what();
    }
    std::string folder = queue_.LocalFolder();
    struct statvfs v {};
    if (!folder.empty() && ::statvfs(folder.c_str(), &v) == 0) {
      double free_mb =
          static_cast<double>(v.f_bavail) * static_cast<double>(v.f_frsize) / 1048576.0;
      if (free_mb < min_free_mb_) {
        problems_.push_back("the disk of the queue's folder has " + FormatNumber("%.0f", free_mb) +
                            " MiB free, under the " + FormatNumber("%.0f", min_free_mb_) +
                            " MiB this service needs (--min-free-disk-mb)");
        detail += (detail.empty() ? "" : "; ") + folder + ": " + FormatNumber("%.0f", free_mb) +
                  " MiB free";
      }
    }
    if (detail != logged_)
      LogLine(detail.empty() ? "health: the queue is ok again" : "health: " + detail);
    logged_ = detail;
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
  std::string write_failure_, logged_;
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

// What a handler answers: a status, a JSON body and extra headers.
struct Answer {
  int status = 200;
  json body;
  std::vector<std::pair<std::string, std::string>> headers;
  bool close = false;  // end the connection after this reply
};
Answer Reply(int status, json body) { return {status, std::move(body), {}, false}; }
Answer Fail(int status, const std::string& message) {
  return {status, {{"error", message}}, {}, false};
}
// A failure of the queue's database: 503 with Retry-After when it may pass (down, restarting,
// locked), so that clients wait and ask again; the body says only what kind of failure it is,
// the log has the rest.
Answer StorageFailed(const StorageError& e, const std::string& during) {
  // One line a second at most: through an outage every polling client fails every 2 s.
  static std::mutex mu;
  static SteadyClock::time_point logged_at;
  static int unlogged = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (logged_at.time_since_epoch().count() != 0 && SecondsSince(logged_at) < 1) {
      ++unlogged;
    } else {
      LogLine("database failure on " + during + ": " + e.what() +
              (unlogged ? " (and " + std::to_string(unlogged) + " more since the last line)" : ""));
      logged_at = SteadyClock::now();
      unlogged = 0;
    }
  }
  Answer a = Fail(503, e.PublicMessage());
  if (e.retryable()) a.headers.emplace_back("Retry-After", "2");
  return a;
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}
std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
bool IsJobId(const std::string& s) {
  return s.size() == 32 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// The name part of a Host header ("127.0.0.1:8737" -> "127.0.0.1", "[::1]:80" -> "::1").
std::string HostName(const std::string& host) {
  if (StartsWith(host, "[")) {
    auto close = host.find(']');
    return close == std::string::npos ? host : host.substr(1, close - 1);
  }
  auto colon = host.find(':');
  if (colon != std::string::npos && host.find(':', colon + 1) == std::string::npos)
    return host.substr(0, colon);
  return host;
}
bool IsLoopbackName(std::string name) {
  name = Lower(name);
  if (!name.empty() && name.back() == '.') name.pop_back();
  if (name == "localhost" || name == "::1") return true;
  unsigned char v4[4];
  return ::inet_pton(AF_INET, name.c_str(), v4) == 1 && v4[0] == 127;
}

// Per connection (MHD's socket context): requests served on it, for the keep-alive limit.
struct ConnectionState {
  int requests = 0;
};
// Per request (MHD's con_cls): the body as it arrives.
struct RequestState {
  std::string body;
};

std::optional<std::string> Header(MHD_Connection* c, const char* name) {
  const char* v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
  if (!v) return std::nullopt;
  return std::string(v);
}

// libmicrohttpd's own messages: kept for the start-up error; while serving, one line per 10 s
// at most (a flood of refused connections would otherwise flood the log).
class MhdLog {
 public:
  static void Callback(void* cls, const char* format, va_list ap) {
    char buf[512];
    std::vsnprintf(buf, sizeof buf, format, ap);
    std::string line = Trim(buf);
    static_cast<MhdLog*>(cls)->Add(line);
  }
  void Add(const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    last_ = line;
    if (!serving_) return;
    if (SecondsSince(logged_at_) < 10) {
      ++unlogged_;
      return;
    }
    LogLine("libmicrohttpd: " + line +
            (unlogged_ ? " (and " + std::to_string(unlogged_) + " more in the last 10 s)" : ""));
    logged_at_ = SteadyClock::now();
    unlogged_ = 0;
  }
  std::string Last() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }
  void Serving() {
    std::lock_guard<std::mutex> lock(mu_);
    serving_ = true;
  }

 private:
  std::mutex mu_;
  std::string last_;
  bool serving_ = false;
  int unlogged_ = 0;
  SteadyClock::time_point logged_at_ = SteadyClock::now() - std::chrono::hours(1);
};

class Api {
 public:
  Api(const ServerOptions& o, JobQueue& queue, const std::atomic<bool>& stop)
      : o_(o),
        queue_(queue),
        stop_(stop),
        catalog_(Catalog::Load(o.tasks_dir.empty() ? Catalog::DefaultDir() : o.tasks_dir)),
        // A body this much over the source limit is refused before it is read (413); JSON
        // escaping can make the body larger than the source, hence the margin; the source's
        // own size is checked exactly below.
        max_body_(o.max_source_bytes * 2 + 65536),
        long_poll_cap_(std::max(
            1, static_cast<int>(static_cast<double>(o.max_connections) * o.long_poll_share))),
        probe_(queue, o.min_free_disk_mb),
        loopback_only_(IsLoopbackName(o.host)) {}

  static MHD_Result OnRequest(void* cls, MHD_Connection* c, const char* url, const char* method,
                              const char*, const char* upload_data, size_t* upload_data_size,
                              void** con_cls) {
    auto* api = static_cast<Api*>(cls);
    auto* req = static_cast<RequestState*>(*con_cls);
    if (!req) {  // the headers are in, the body (if any) is not
      *con_cls = req = new RequestState;
      MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
                                static_cast<unsigned>(api->o_.io_timeout_s));
      if (std::optional<Answer> refused = api->Screen(c, method)) return api->Send(c, *refused);
      return MHD_YES;
    }
    if (*upload_data_size > 0) {
      // The Content-Length was checked against the limit; this only guards the sum.
      if (req->body.size() + *upload_data_size > api->max_body_) return MHD_NO;
      req->body.append(upload_data, *upload_data_size);
      *upload_data_size = 0;
      return MHD_YES;
    }
    Answer a;
    try {
      a = api->Route(c, method, url ? url : "", req->body);
    } catch (const StorageError& e) {
      a = StorageFailed(e, std::string(method) + " " + (url ? url : ""));
    } catch (const std::exception& e) {
      // The details (a path, a statement) are the log's, not the client's.
      LogLine(std::string("internal error on ") + method + " " + (url ? url : "") + ": " +
              e.what());
      a = Fail(500, "internal error (the server's log has the details)");
    }
    return api->Send(c, a);
  }
  static void OnCompleted(void* cls, MHD_Connection* c, void** con_cls,
                          MHD_RequestTerminationCode) {
    delete static_cast<RequestState*>(*con_cls);
    *con_cls = nullptr;
    // Between requests a keep-alive connection may idle for keep_alive_s only.
    if (c)
      MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
                                static_cast<unsigned>(static_cast<Api*>(cls)->o_.keep_alive_s));
  }
  static void OnConnection(void*, MHD_Connection*, void** socket_context,
                           MHD_ConnectionNotificationCode code) {
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      *socket_context = new ConnectionState;
    } else {
      delete static_cast<ConnectionState*>(*socket_context);
      *socket_context = nullptr;
    }
  }

 private:
  MHD_Result Send(MHD_Connection* c, const Answer& a) {
    std::string text = a.body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    MHD_Response* r =
        MHD_create_response_from_buffer(text.size(), text.data(), MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    for (const auto& [k, v] : a.headers) MHD_add_response_header(r, k.c_str(), v.c_str());
    bool close = a.close;
    if (const MHD_ConnectionInfo* info =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT)) {
      auto* conn = static_cast<ConnectionState*>(info->socket_context);
      if (conn && ++conn->requests >= o_.keep_alive_max) close = true;
    }
    if (close) MHD_add_response_header(r, "Connection", "close");
    MHD_Result ok = MHD_queue_response(c, static_cast<unsigned>(a.status), r);
    MHD_destroy_response(r);
    return ok;
  }

  // What is decided from the request line and headers alone, before a byte of the body is
  // read: the framing, the Host and Origin of a server without a token, the token, the size,
  // the media type. A refusal here is sent at once; libmicrohttpd then discards the body and
  // closes the connection.
  std::optional<Answer> Screen(MHD_Connection* c, const std::string& method) {
    const bool posts = method == "POST" || method == "PUT" || method == "PATCH";
    std::optional<std::string> length = Header(c, "Content-Length");
    // libmicrohttpd hands a chunked body to the handler piece by piece and cannot answer
    // until it has read all of it: a chunked body over the limit could only be cut off
    // without a reply, or read to its end. Every client of this API sends a Content-Length,
    // so a body without one is refused here, before it is read (411).
    if (Header(c, "Transfer-Encoding") || (posts && !length)) {
      Answer a =
          Fail(411, "a request body needs a Content-Length (chunked bodies are not accepted)");
      a.close = true;
      return a;
    }
    if (o_.token.empty()) {
      // No token: a browser must not be able to reach this API from another site, through a
      // name that resolves to loopback (DNS rebinding) or a cross-origin request.
      std::optional<std::string> host = Header(c, "Host");
      std::string name = host ? Lower(HostName(*host)) : "";
      if (loopback_only_ && host && !IsLoopbackName(name) && name != Lower(o_.host))
        return Fail(403, "the Host header (" + Trim(host->substr(0, 100)) +
                             ") is not a name of this server (it serves on " + o_.host +
                             " without a token: only loopback names are accepted)");
      if (std::optional<std::string> origin = Header(c, "Origin")) {
        std::string own =
            std::string(o_.tls_cert.empty() ? "http://" : "https://") + (host ? *host : "");
        if (!host || Lower(*origin) != Lower(own))
          return Fail(403, "cross-origin request refused (Origin " + origin->substr(0, 100) +
                               "): this server has no token and accepts no browser "
                               "requests from other sites");
      }
    } else {
      std::string auth = Header(c, "Authorization").value_or("");
      const std::string prefix = "Bearer ";
      if (!StartsWith(auth, prefix)) {
        Answer a = Fail(401, "this server requires a bearer token (Authorization: Bearer …)");
        a.headers.emplace_back("WWW-Authenticate", "Bearer");
        return a;
      }
      if (!TokenMatches(auth.substr(prefix.size()), o_.token))
        return Fail(401, "the bearer token is not this server's");
    }
    if (length) {
      long long n = 0;
      if (!ParseInt64(Trim(*length), &n) || n < 0)
        return Fail(400, "the Content-Length is not a number");
      if (static_cast<unsigned long long>(n) > max_body_) {
        Answer a = Fail(413, "the request body is over this server's limit (sources up to " +
                                 std::to_string(o_.max_source_bytes) + " bytes)");
        a.close = true;
        return a;
      }
    }
    if (method == "POST") {
      std::string type = Lower(Header(c, "Content-Type").value_or(""));
      type = Trim(type.substr(0, type.find(';')));
      if (type != "application/json")
        return Fail(415, "POST bodies must be sent with Content-Type: application/json (got " +
                             (type.empty() ? std::string("none") : type.substr(0, 100)) + ")");
    }
    return std::nullopt;
  }

  Answer Route(MHD_Connection* c, const std::string& method, const std::string& path,
               const std::string& body) {
    const std::string evals = "/v1/evaluations/", tasks = "/v1/tasks/";
    if (method == "POST" && path == "/v1/evaluations") return Submit(body);
    if (method == "GET") {
      if (path == "/v1/health") return Health();
      if (path == "/v1/tasks") return Tasks();
      if (StartsWith(path, tasks) && path.size() > tasks.size() &&
          path.find('/', tasks.size()) == std::string::npos)
        return Task(path.substr(tasks.size()));
      if (StartsWith(path, evals)) {
        std::string rest = path.substr(evals.size());
        if (IsJobId(rest)) return Poll(c, rest);
        if (rest.size() == 36 && IsJobId(rest.substr(0, 32)) && rest.substr(32) == "/job")
          return JobOf(rest.substr(0, 32));
        return Fail(404, "no evaluation " + rest + " (ids are 32 hex digits)");
      }
    }
    return Fail(404, "no such endpoint: " + method + " " + path);
  }

  Answer Submit(const std::string& text) {
    json body;
    // Nesting is bounded while the parser reads (a body 100,000 arrays deep once took the
    // server down through a recursive walk on a connection thread's stack).
    JsonLimits limits;
    limits.max_depth = kMaxRequestDepth;
    try {
      body = ParseBoundedJson(text, "the body", limits);
    } catch (const Error& e) {
      const std::string why = e.what();
      // 1e400 and the like
      if (why.find("number overflow") != std::string::npos)
        return Fail(400, "a number in the body is out of range: " + why);
      return Fail(400, why);
    }
    // The source policy of eval, inspect and submit, in the same words: 413 for the size,
    // 400 for the rest (empty, NUL bytes, invalid UTF-8).
    if (body.is_object() && body.contains("source") && body["source"].is_string()) {
      const std::string& source = body["source"].get_ref<const std::string&>();
      if (auto problem = SourceFileProblem(source, o_.max_source_bytes))
        return Fail(SourceIsTooLarge(source, o_.max_source_bytes) ? 413 : 400, *problem);
    }
    json request;
    try {
      request = NormalizeJobRequest(body, catalog_);
    } catch (const Error& e) {
      return Fail(400, e.what());
    } catch (const json::exception& e) {
      return Fail(400, std::string("a field of the body has the wrong type or range: ") + e.what());
    }
    std::string id;
    try {
      id = queue_.Submit(request);
    } catch (const std::exception& e) {
      const auto* storage = dynamic_cast<const StorageError*>(&e);
      StorageError failure = storage ? *storage : StorageError(StorageFailure::kOther, e.what());
      probe_.WriteFailed(failure.PublicMessage());
      Answer a = StorageFailed(failure, "a submission");
      a.body["error"] =
          "the queue could not store the job (database write failed): " + failure.PublicMessage();
      return a;
    }
    return Reply(202, {{"id", id}, {"state", "queued"}, {"result", "/v1/evaluations/" + id}});
  }

  Answer Poll(MHD_Connection* c, const std::string& id) {
    double wait = 0;
    const char* value = nullptr;
    size_t value_size = 0;
    if (MHD_lookup_connection_value_n(c, MHD_GET_ARGUMENT_KIND, "wait", 4, &value, &value_size) ==
        MHD_YES) {
      std::string w = value ? std::string(value, value_size) : "";
      try {
        size_t used = 0;
        wait = std::stod(w, &used);
        if (used != w.size() || !(wait >= 0)) throw std::invalid_argument(w);
      } catch (const std::exception&) {
        return Fail(400, "wait must be a number of seconds >= 0");
      }
    }
    wait = std::min(wait, o_.max_wait_s);
    // At most long_poll_cap_ requests wait at once; the others are answered now.
    std::vector<std::pair<std::string, std::string>> headers;
    std::optional<LongPollSlot> slot;
    if (wait > 0) {
      slot.emplace(long_polls_, long_poll_cap_);
      if (!slot->held()) {
        wait = 0;
        headers.emplace_back("Retry-After", "1");
      }
    }
    const bool waits = slot && slot->held();
    auto deadline = SteadyClock::now() + std::chrono::duration<double>(wait);
    // Poll the job's state (one indexed lookup) every few ms, and read the whole job only once
    // it is finished or the wait is over. The workers are other processes, so there is nothing
    // to be notified by; at 20 ms the poll adds ~10 ms to an evaluation of seconds.
    auto pause = std::chrono::milliseconds(2);
    for (;;) {
      std::optional<JobState> state = queue_.State(id);
      if (!state) return Fail(404, "no evaluation " + id);
      bool finished = *state == JobState::kDone || *state == JobState::kFailed;
      if (finished || SteadyClock::now() >= deadline || stop_) {
        std::optional<Job> job = queue_.Get(id);
        if (!job) return Fail(404, "no evaluation " + id);
        if (Finished(*job) && job->result) return Reply(200, *job->result);
        if (SteadyClock::now() >= deadline || stop_) {
          Answer a = Reply(202, {{"id", id},
                                 {"state", ToString(job->state)},
                                 {"attempts", job->attempts},
                                 {"waited", waits}});
          a.headers = headers;
          return a;
        }
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(20));
    }
  }

  Answer JobOf(const std::string& id) {
    std::optional<Job> job = queue_.Get(id);
    if (!job) return Fail(404, "no evaluation " + id);
    return Reply(200, JobJson(*job));
  }

  Answer Tasks() {
    json all = json::array();
    for (const auto& d : catalog_.definitions()) all.push_back(ToJson(d, false));
    return Reply(200, all);
  }
  Answer Task(const std::string& name) {
    if (name.size() > kMaxNameBytes)
      return Fail(
          404, "no such task (task names are at most " + std::to_string(kMaxNameBytes) + " bytes)");
    try {
      return Reply(200, ToJson(catalog_.Find(name), true));
    } catch (const Error& e) {
      return Fail(404, e.what());
    }
  }

  Answer Health() {
    std::vector<std::string> problems;
    QueueHealth h;
    bool read = false;
    try {
      h = queue_.Health(o_.alive_within);
      read = true;
    } catch (const StorageError& e) {
      problems.push_back("the queue database cannot be read: " + e.PublicMessage());
    } catch (const std::exception& e) {
      LogLine(std::string("health: reading the queue failed: ") + e.what());
      problems.push_back("the queue database cannot be read (the server's log has the details)");
    }
    for (std::string& p : probe_.Problems()) problems.push_back(p);
    json workers = json::array();
    int alive = 0;
    for (const auto& w : h.workers) alive += w.alive;
    // Jobs are evaluated only by live workers: with fewer than expected, health is not ok.
    if (read && alive < o_.min_workers_alive)
      problems.push_back(std::to_string(alive) + " live worker(s), " +
                         std::to_string(o_.min_workers_alive) +
                         " expected: queued jobs wait (a worker sends a heartbeat every " +
                         "few seconds once it runs)");
    if (o_.worker_problems)
      for (std::string& p : o_.worker_problems()) problems.push_back(p);
    for (const auto& w : h.workers) {
      workers.push_back({{"id", w.identity.id},
                         {"host", w.identity.host},
                         {"pid", w.identity.pid},
                         {"gpu", w.identity.gpu},
                         {"heartbeat_age_s", w.heartbeat_age_s},
                         {"alive", w.alive}});
    }
    // Where the database is stays in the log (the start-up line): only its kind here.
    const std::string backend = queue_.Describe().substr(0, queue_.Describe().find(':'));
    json body = {{"status", problems.empty() ? "ok" : "not ok"},
                 {"version", PTXBENCH_VERSION},
                 {"queue_backend", backend},
                 {"gpus", o_.gpus},
                 {"queue",
                  {{"queued", h.queued},
                   {"running", h.running},
                   {"done", h.done},
                   {"failed", h.failed},
                   {"running_by_gpu", h.running_by_gpu}}},
                 {"workers_alive", alive},
                 {"workers_expected", o_.min_workers_alive},
                 {"workers", workers},
                 {"long_polls", long_polls_.load()}};
    if (!problems.empty()) {
      body["problems"] = problems;
      body["error"] = Join(problems, "; ");
      // An error body names no host or process: the workers' ids and pids stay in the log.
      body.erase("workers");
    }
    return Reply(problems.empty() ? 200 : 503, body);
  }

  const ServerOptions& o_;
  JobQueue& queue_;
  const std::atomic<bool>& stop_;
  Catalog catalog_;
  const size_t max_body_;
  const int long_poll_cap_;
  std::atomic<int> long_polls_{0};
  HealthProbe probe_;
  const bool loopback_only_;
};

// Every address `host` names (a numeric address or a name), in the resolver's order.
std::vector<std::vector<unsigned char>> Addresses(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::vector<std::vector<unsigned char>> out;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return out;
  for (addrinfo* a = found; a; a = a->ai_next)
    if (a->ai_family == AF_INET || a->ai_family == AF_INET6) {
      const auto* p = reinterpret_cast<const unsigned char*>(a->ai_addr);
      out.emplace_back(p, p + a->ai_addrlen);
    }
  ::freeaddrinfo(found);
  return out;
}

}  // namespace

void ServeHttp(const ServerOptions& o, JobQueue& queue, const std::atomic<bool>& stop) {
  const bool tls = !o.tls_cert.empty() || !o.tls_key.empty();
  std::string cert, key;
  if (tls) {
    if (o.tls_cert.empty() || o.tls_key.empty())
      throw UsageError("--tls-cert and --tls-key go together");
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
      throw EnvironmentError(
          "this libmicrohttpd was built without TLS (GnuTLS): --tls-cert cannot be served; "
          "serve on 127.0.0.1 behind a TLS reverse proxy instead");
    try {
      cert = ReadFile(o.tls_cert);
      key = ReadFile(o.tls_key);
    } catch (const std::exception& e) {
      throw EnvironmentError(std::string("cannot read the TLS certificate or key: ") + e.what());
    }
  }
  Api api(o, queue, stop);
  MhdLog log;
  const std::string where = o.host + ":" + std::to_string(o.port);
  std::vector<std::vector<unsigned char>> addresses = Addresses(o.host, o.port);
  if (addresses.empty())
    throw EnvironmentError("cannot listen on " + where + " (not an address of this machine)");

  // One thread per connection: a long poll or a slow client holds only its own. The limits
  // (see server.h): connections at all and per client address, an idle timeout, and the
  // memory of one connection's request line and headers (a longer line or more headers are
  // refused, 414 or 431, and the connection closed).
  MHD_Daemon* daemon = nullptr;
  for (auto& address : addresses) {
    const auto* sa = reinterpret_cast<const sockaddr*>(address.data());
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_AUTO | MHD_USE_ERROR_LOG;
    if (sa->sa_family == AF_INET6) flags |= MHD_USE_IPv6;
    if (tls) flags |= MHD_USE_TLS;
    std::vector<MHD_OptionItem> opts = {
        {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&MhdLog::Callback), &log},
        {MHD_OPTION_SOCK_ADDR, 0, const_cast<sockaddr*>(sa)},
        {MHD_OPTION_LISTEN_BACKLOG_SIZE, SOMAXCONN, nullptr},
        {MHD_OPTION_CONNECTION_LIMIT, o.max_connections, nullptr},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, o.max_connections_per_ip, nullptr},
        {MHD_OPTION_CONNECTION_TIMEOUT, o.io_timeout_s, nullptr},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<intptr_t>(o.connection_memory_bytes),
         nullptr},
        {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&Api::OnCompleted), &api},
        {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&Api::OnConnection), &api},
    };
    if (tls) {
      opts.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, key.data()});
      opts.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, cert.data()});
    }
    opts.push_back({MHD_OPTION_END, 0, nullptr});
    daemon = MHD_start_daemon(flags, static_cast<uint16_t>(o.port), nullptr, nullptr,
                              &Api::OnRequest, &api, MHD_OPTION_ARRAY, opts.data(), MHD_OPTION_END);
    if (daemon) break;
  }
  if (!daemon) {
    std::string why = log.Last();
    throw EnvironmentError("cannot listen on " + where + (tls ? " with TLS" : "") +
                           " (in use, or not an address of this machine" +
                           (why.empty() ? "" : "; libmicrohttpd: " + why) + ")");
  }
  log.Serving();
  std::printf("listening on %s\n", where.c_str());
  std::fflush(stdout);

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
  // Long polls see `stop` and answer; idle and trickling connections are shut down.
  MHD_stop_daemon(daemon);
}

}  // namespace ptxbench
