#include "serve/server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
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

// Who a client is for fair sharing: its IPv4 address, or the /64 of its IPv6 address (one
// host is handed a whole /64).
std::string ClientKey(const sockaddr* a) {
  if (!a) return "";
  if (a->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(a);
    return std::string(reinterpret_cast<const char*>(&v4->sin_addr), 4);
  }
  if (a->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(a);
    const auto* b = reinterpret_cast<const unsigned char*>(&v6->sin6_addr);
    static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::equal(b, b + 12, kMapped))
      return std::string(reinterpret_cast<const char*>(b + 12), 4);
    return std::string(reinterpret_cast<const char*>(b), 8);
  }
  return "";
}

// What libmicrohttpd 0.9.75 lacks against clients that hold connections without finishing a
// request (slowloris): its timeout is reset by every byte, and its caps close newcomers while
// the old connections stay. Here each open connection is tracked from the accept:
//   reading ──(its request is in: the handler runs)──► handling ──(reply sent)──► reading
// A connection reading one request (line, headers, body; or idle before its next) for longer
// than the request deadline is shut down. At the cap a newcomer is admitted by shutting down
// a reading connection of the address that holds the most (its own, or one holding more than
// its own): a few addresses cannot keep the others out, and a connection that is working
// (a handler running, a long poll waiting) is never the one ended; when every connection is
// working, a newcomer from an address holding under a quarter of the cap comes in over it (up
// to libmicrohttpd's own limit), one from a heavier address is refused. shutdown(2) wakes the
// connection's thread, which closes it as if the client had; the descriptor is used only
// while the connection is registered (libmicrohttpd notifies the close before it closes the
// descriptor), under the lock.
class ConnectionTable {
 public:
  ConnectionTable(int cap, int deadline_s) : cap_(cap), deadline_(deadline_s) {}

  // libmicrohttpd's accept policy: on the listening thread, before the connection exists.
  static MHD_Result OnAccept(void* cls, const sockaddr* addr, socklen_t) {
    return static_cast<ConnectionTable*>(cls)->Admit(ClientKey(addr)) ? MHD_YES : MHD_NO;
  }
  void Started(MHD_Connection* c) {
    const MHD_ConnectionInfo* fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    const MHD_ConnectionInfo* who = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    Entry e;
    e.fd = fd ? fd->connect_fd : -1;
    e.client = ClientKey(who ? who->client_addr : nullptr);
    e.since = SteadyClock::now();
    std::lock_guard<std::mutex> lock(mu_);
    ++per_client_[e.client];
    ++live_;
    open_[c] = std::move(e);
  }
  void Closed(MHD_Connection* c) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = open_.find(c);
    if (it == open_.end()) return;
    if (!it->second.ended) Forget(it->second);
    open_.erase(it);
  }
  // Its request is in (or refused from its headers): the handler has it, no deadline.
  void Handling(MHD_Connection* c) { Set(c, true); }
  // Its reply went out: the next request's clock starts now.
  void Reading(MHD_Connection* c) { Set(c, false); }

  // Shuts down the connections whose request has not come in within the deadline; returns
  // how many.
  int EndOverdue() {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (auto& [c, e] : open_)
      if (!e.handling && !e.ended && SecondsSince(e.since) > deadline_) {
        End(e);
        ++n;
      }
    overdue_ += n;
    return n;
  }
  // For health: open connections, and what was done at the deadline and the cap so far.
  nlohmann::json Counts() {
    std::lock_guard<std::mutex> lock(mu_);
    return {{"open", live_},
            {"closed_over_deadline", overdue_},
            {"closed_for_newcomers", evicted_},
            {"admitted_over_cap", over_cap_},
            {"refused_at_cap", refused_}};
  }

 private:
  struct Entry {
    int fd = -1;
    std::string client;
    SteadyClock::time_point since;
    bool handling = false;
    bool ended = false;  // shut down by us, not yet closed by libmicrohttpd
  };

  bool Admit(const std::string& client) {
    std::lock_guard<std::mutex> lock(mu_);
    if (live_ < cap_) return true;
    auto mine = per_client_.find(client);
    const int own = mine == per_client_.end() ? 0 : mine->second;
    // The victim: a reading connection of the client holding the most, its oldest; taken if
    // it is the newcomer's own client, or one holding more than the newcomer's.
    Entry* victim = nullptr;
    int victim_count = 0;
    for (auto& [c, e] : open_) {
      if (e.handling || e.ended || e.fd < 0) continue;
      const int count = per_client_[e.client];
      if (!victim || count > victim_count || (count == victim_count && e.since < victim->since)) {
        victim = &e;
        victim_count = count;
      }
    }
    if (victim && (victim->client == client || victim_count > own)) {
      End(*victim);
      ++evicted_;
      return true;
    }
    // Every connection is working (answers under way; long polls hold at most half): a client
    // holding under a quarter of the cap comes in over it (libmicrohttpd's own limit, a quarter
    // above, bounds that), so that the clients keeping the cap busy cannot keep it out; theirs
    // are refused.
    if (own * 4 < cap_) {
      ++over_cap_;
      return true;
    }
    ++refused_;
    return false;
  }
  void End(Entry& e) {
    ::shutdown(e.fd, SHUT_RDWR);
    e.ended = true;
    Forget(e);
  }
  void Forget(const Entry& e) {
    --live_;
    auto it = per_client_.find(e.client);
    if (it != per_client_.end() && --it->second <= 0) per_client_.erase(it);
  }
  void Set(MHD_Connection* c, bool handling) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = open_.find(c);
    if (it == open_.end()) return;
    it->second.handling = handling;
    if (!handling) it->second.since = SteadyClock::now();
  }

  const int cap_;
  const double deadline_;
  std::mutex mu_;
  std::unordered_map<MHD_Connection*, Entry> open_;
  std::map<std::string, int> per_client_;  // live (not ended) connections per client
  int live_ = 0;
  long overdue_ = 0, evicted_ = 0, over_cap_ = 0, refused_ = 0;
};

// True when the client of a connection has gone (closed or reset its end): a long poll for it
// need not wait on. Data waiting to be read (a pipelined request) is not a hang-up.
bool ClientHungUp(MHD_Connection* c) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!info || info->connect_fd < 0) return false;
  pollfd p{info->connect_fd, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLERR | POLLRDHUP)) return true;
  char b;
  return ::recv(info->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}
// Per request (MHD's con_cls): the body as it arrives.
struct RequestState {
  std::string body;
};

std::optional<std::string> Header(MHD_Connection* c, const char* name) {
  const char* v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
  if (!v) return std::nullopt;
  return std::string(v);
}

// How many times a header (or a query parameter) occurs: the lookup above sees the first only.
int Occurrences(MHD_Connection* c, MHD_ValueKind kind, const char* name) {
  struct Count {
    const char* name;
    int n = 0;
  } count{name};
  MHD_get_connection_values(
      c, kind,
      [](void* cls, MHD_ValueKind, const char* key, const char*) -> MHD_Result {
        auto* k = static_cast<Count*>(cls);
        if (key && ::strcasecmp(key, k->name) == 0) ++k->n;
        return MHD_YES;
      },
      &count);
  return count.n;
}

// The query parameters of a request, by name, in order.
std::vector<std::string> QueryNames(MHD_Connection* c) {
  std::vector<std::string> names;
  MHD_get_connection_values(
      c, MHD_GET_ARGUMENT_KIND,
      [](void* cls, MHD_ValueKind, const char* key, const char*) -> MHD_Result {
        static_cast<std::vector<std::string>*>(cls)->push_back(key ? key : "");
        return MHD_YES;
      },
      &names);
  return names;
}

// libmicrohttpd's own messages: kept for the start-up error; while serving, one line per 10 s
// at most (a flood of refused connections would otherwise flood the log).
class MhdLog {
 public:
  explicit MhdLog(bool tls) : tls_(tls) {}
  static void Callback(void* cls, const char* format, va_list ap) {
    char buf[512];
    std::vsnprintf(buf, sizeof buf, format, ap);
    std::string line = Trim(buf);
    auto* log = static_cast<MhdLog*>(cls);
    // "Failed to parse `Content-Length' header", "Too large value of 'Content-Length' header"
    if (line.find("Content-Length' header") != std::string::npos)
      AnswerBadLengthOnce(log->tls_, line.find("Too large") != std::string::npos);
    log->Add(line);
  }
  // libmicrohttpd's callback for each request line, on the connection's own thread.
  static void* OnRequestLine(void*, const char*, MHD_Connection* c) {
    t_connection = c;
    return nullptr;  // what the handler's first call sees: no request state yet
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
  // libmicrohttpd 0.9.75 answers a malformed Content-Length ("abc", "-1", over 2^64) itself and
  // then builds that answer's header a second time: the client reads two header blocks. No
  // handler of ours runs in between, but this log line does, on the connection's own thread
  // (one thread per connection, whose connection the request-line callback noted), before the
  // library writes anything. So the answer is given here, once, and the socket shut: the
  // library's own then goes nowhere. Over TLS the socket is only shut (no answer).
  static void AnswerBadLengthOnce(bool tls, bool too_large) {
    if (!t_connection) return;
    const MHD_ConnectionInfo* info =
        MHD_get_connection_info(t_connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!info || info->connect_fd < 0) return;
    if (!tls) {
      std::string body =
          json({{"error", too_large ? "the Content-Length is over any body this server accepts"
                                    : "the Content-Length is not a number"}})
              .dump() +
          "\n";
      std::string text = std::string("HTTP/1.1 ") +
                         (too_large ? "413 Content Too Large" : "400 Bad Request") +
                         "\r\nContent-Type: application/json\r\nConnection: close\r\n"
                         "Content-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n" + body;
      (void)::send(info->connect_fd, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    ::shutdown(info->connect_fd, SHUT_RDWR);
  }
  static thread_local MHD_Connection* t_connection;

  const bool tls_;
  std::mutex mu_;
  std::string last_;
  bool serving_ = false;
  int unlogged_ = 0;
  SteadyClock::time_point logged_at_ = SteadyClock::now() - std::chrono::hours(1);
};

thread_local MHD_Connection* MhdLog::t_connection = nullptr;

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
        loopback_only_(IsLoopbackName(o.host)),
        connections_(o.max_connections, o.request_timeout_s) {}

  ConnectionTable& connections() { return connections_; }

  static MHD_Result OnRequest(void* cls, MHD_Connection* c, const char* url, const char* method,
                              const char*, const char* upload_data, size_t* upload_data_size,
                              void** con_cls) {
    auto* api = static_cast<Api*>(cls);
    auto* req = static_cast<RequestState*>(*con_cls);
    if (!req) {  // the headers are in, the body (if any) is not
      *con_cls = req = new RequestState;
      MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
                                static_cast<unsigned>(api->o_.io_timeout_s));
      if (std::optional<Answer> refused = api->Screen(c, method)) {
        api->connections_.Handling(c);
        return api->Send(c, *refused);
      }
      return MHD_YES;
    }
    if (*upload_data_size > 0) {
      // The Content-Length was checked against the limit; this only guards the sum.
      if (req->body.size() + *upload_data_size > api->max_body_) return MHD_NO;
      req->body.append(upload_data, *upload_data_size);
      *upload_data_size = 0;
      return MHD_YES;
    }
    api->connections_.Handling(c);
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
    if (c) {
      auto* api = static_cast<Api*>(cls);
      MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
                                static_cast<unsigned>(api->o_.keep_alive_s));
      api->connections_.Reading(c);
    }
  }
  static void OnConnection(void* cls, MHD_Connection* c, void** socket_context,
                           MHD_ConnectionNotificationCode code) {
    auto* api = static_cast<Api*>(cls);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      *socket_context = new ConnectionState;
      api->connections_.Started(c);
    } else {
      api->connections_.Closed(c);
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
    // Two lengths (or two Hosts) are two readings of one request: a proxy in front may have
    // taken the other (request smuggling). Refused, and the connection closed.
    for (const char* once : {"Content-Length", "Host"})
      if (Occurrences(c, MHD_HEADER_KIND, once) > 1) {
        Answer a = Fail(400, std::string("the request has more than one ") + once + " header");
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
      // The scheme's name is case-insensitive (RFC 9110 11.1): "bearer" is "Bearer".
      std::string auth = Trim(Header(c, "Authorization").value_or(""));
      const size_t space = auth.find_first_of(" \t");
      if (space == std::string::npos || Lower(auth.substr(0, space)) != "bearer") {
        Answer a = Fail(401, "this server requires a bearer token (Authorization: Bearer …)");
        a.headers.emplace_back("WWW-Authenticate", "Bearer");
        return a;
      }
      if (!TokenMatches(Trim(auth.substr(space + 1)), o_.token))
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
      // Only a submission has a body: any other request's would be read for nothing.
      if (n > 0 && !posts) {
        Answer a = Fail(400, "a " + method.substr(0, 10) + " request carries no body");
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
    // Each endpoint takes the query parameters it names and no others (?wiat=30 would be a
    // poll that silently does not wait), each once.
    const std::vector<std::string> query = QueryNames(c);
    auto takes = [&](std::initializer_list<const char*> known) -> std::optional<Answer> {
      std::vector<std::string> seen;
      for (const std::string& q : query) {
        const bool ok =
            std::any_of(known.begin(), known.end(), [&](const char* k) { return q == k; });
        const std::string name = ValidUtf8(Truncate(q, 64));
        if (!ok)
          return Fail(400, "unknown query parameter " + name + " (this endpoint takes " +
                               (known.size() ? "wait only)" : "none)"));
        if (std::find(seen.begin(), seen.end(), q) != seen.end())
          return Fail(400, "the query parameter " + name + " is given twice");
        seen.push_back(q);
      }
      return std::nullopt;
    };
    if (method == "POST" && path == "/v1/evaluations") {
      if (auto refused = takes({})) return *refused;
      return Submit(body);
    }
    if (method == "GET") {
      if (StartsWith(path, evals) && IsJobId(path.substr(evals.size()))) {
        if (auto refused = takes({"wait"})) return *refused;
        return Poll(c, path.substr(evals.size()));
      }
      if (auto refused = takes({})) return *refused;
      if (path == "/v1/health") return Health();
      if (path == "/v1/tasks") return Tasks();
      if (StartsWith(path, tasks) && path.size() > tasks.size() &&
          path.find('/', tasks.size()) == std::string::npos)
        return Task(path.substr(tasks.size()));
      if (StartsWith(path, evals)) {
        std::string rest = path.substr(evals.size());
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
    limits.max_bytes = max_body_;
    limits.max_values = kMaxRequestValues;
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
      // A client that hung up waits no more: its slot is free for the next poll at once.
      const bool gone = waits && ClientHungUp(c);
      if (finished || SteadyClock::now() >= deadline || stop_ || gone) {
        std::optional<Job> job = queue_.Get(id);
        if (!job) return Fail(404, "no evaluation " + id);
        if (Finished(*job) && job->result) return Reply(200, *job->result);
        if (SteadyClock::now() >= deadline || stop_ || gone) {
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
                 {"long_polls", long_polls_.load()},
                 {"connections", connections_.Counts()}};
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
  ConnectionTable connections_;
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
  MhdLog log(tls);
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
        // Above our own cap (ConnectionTable: max_connections), so that a newcomer at the cap
        // still reaches the accept policy, which ends a reading connection to let it in, or
        // lets it in over the cap while every connection is working; the margin also holds the
        // ended ones until their threads have closed them.
        {MHD_OPTION_CONNECTION_LIMIT, o.max_connections + std::max(32, o.max_connections / 4),
         nullptr},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, o.max_connections_per_ip, nullptr},
        {MHD_OPTION_CONNECTION_TIMEOUT, o.io_timeout_s, nullptr},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<intptr_t>(o.connection_memory_bytes),
         nullptr},
        {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&Api::OnCompleted), &api},
        {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&Api::OnConnection), &api},
        {MHD_OPTION_URI_LOG_CALLBACK, reinterpret_cast<intptr_t>(&MhdLog::OnRequestLine), nullptr},
    };
    if (tls) {
      opts.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, key.data()});
      opts.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, cert.data()});
    }
    opts.push_back({MHD_OPTION_END, 0, nullptr});
    daemon = MHD_start_daemon(flags, static_cast<uint16_t>(o.port), &ConnectionTable::OnAccept,
                              &api.connections(), &Api::OnRequest, &api, MHD_OPTION_ARRAY,
                              opts.data(), MHD_OPTION_END);
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
    api.connections().EndOverdue();
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
