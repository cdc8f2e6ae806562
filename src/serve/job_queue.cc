#include "serve/job_queue.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>

#include "common/enum_names.h"
#include "common/error.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "record/record.h"

namespace ptxbench {

using nlohmann::json;

constexpr EnumName<JobState> kJobStateNames[] = {
    {JobState::kQueued, "queued"},
    {JobState::kRunning, "running"},
    {JobState::kDone, "done"},
    {JobState::kFailed, "failed"},
};

std::string ToString(JobState s) { return NameOf<JobState>(kJobStateNames, s, "unknown"); }

JobState ParseJobState(const std::string& s) {
  if (auto state = FindValue<JobState>(kJobStateNames, s)) return *state;
  throw InternalError("unknown job state '" + s + "' in the queue");
}

bool IsPostgresUrl(const std::string& where) {
  return where.rfind("postgresql://", 0) == 0 || where.rfind("postgres://", 0) == 0;
}

std::string ReadQueueLocationFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    throw UsageError("--db-file " + path + ": cannot open it (" + std::strerror(errno) + ")");
  struct stat st {};
  std::string text;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (ok && st.st_size <= 64 * 1024) {
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
      text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (!ok) throw UsageError("--db-file " + path + ": not a regular file");
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    char mode[16];
    std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
    throw UsageError("--db-file " + path +
                     ": it may hold the database's password, so it must be yours and private "
                     "(chmod 600); it is mode " +
                     mode + " of uid " + std::to_string(st.st_uid));
  }
  std::string first = text.substr(0, text.find('\n'));
  while (!first.empty() && std::isspace(static_cast<unsigned char>(first.back()))) first.pop_back();
  size_t start = 0;
  while (start < first.size() && std::isspace(static_cast<unsigned char>(first[start]))) ++start;
  first = first.substr(start);
  if (first.empty()) throw UsageError("--db-file " + path + ": the file is empty");
  return first;
}

std::string StoredRecordText(const json& record, const std::string& job_id) {
  std::string text = record.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > kMaxStoredRecordBytes)
    throw InputError("the result of job " + job_id + " is " + std::to_string(text.size()) +
                     " bytes, over the queue's limit of " + std::to_string(kMaxStoredRecordBytes) +
                     " bytes per record");
  return text;
}

json FitRecord(const json& record, size_t limit) {
  const size_t bytes = record.dump(-1, ' ', false, json::error_handler_t::replace).size();
  if (bytes <= limit || !record.is_object()) return record;
  json out = json::object();
  for (const auto& [key, value] : record.items()) {
    size_t n = value.dump(-1, ' ', false, json::error_handler_t::replace).size();
    if (n <= 16 * 1024)
      out[key] = value;
    else if (value.is_string())  // a message stays a string: its beginning
      out[key] = ValidUtf8(value.get<std::string>().substr(0, 16 * 1024)) + " … (cut)";
    else
      out[key] = {{"cut", true}, {"bytes", n}};
  }
  out["record_cut"] = {{"bytes", bytes}, {"limit", limit}};
  return out;
}

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string RandomId() {
  // Seeded per thread from the OS: ids from many processes and hosts must not collide.
  thread_local std::mt19937_64 gen((static_cast<uint64_t>(std::random_device{}()) << 32) ^
                                   std::random_device{}());
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(gen()),
                static_cast<unsigned long long>(gen()));
  return buf;
}

std::string RedactSecrets(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  auto lower = [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  };
  auto ends_value = [](char c) {
    return c == ' ' || c == '&' || c == '\t' || c == '\n' || c == '\'' || c == '"' || c == ')' ||
           c == ',' || c == ';';
  };
  const std::string key = "password=";
  for (size_t i = 0; i < text.size();) {
    // password=… (a keyword/value string, or a URL's query parameter)
    if (i + key.size() <= text.size()) {
      bool match = true;
      for (size_t k = 0; k < key.size() && match; ++k) match = lower(text[i + k]) == key[k];
      if (match) {
        out.append(text, i, key.size());
        out += "***";
        size_t j = i + key.size();
        if (j < text.size() && text[j] == '\'') {  // password='quoted value'
          ++j;
          while (j < text.size() && text[j] != '\'') j += text[j] == '\\' ? 2 : 1;
          ++j;
        } else {
          while (j < text.size() && !ends_value(text[j])) ++j;
        }
        i = std::min(j, text.size());
        continue;
      }
    }
    // scheme://user:password@host
    if (text.compare(i, 3, "://") == 0) {
      size_t start = i + 3, end = start;
      while (end < text.size() && text[end] != '@' && text[end] != '/' && !ends_value(text[end]))
        ++end;
      if (end < text.size() && text[end] == '@') {
        size_t colon = text.find(':', start);
        if (colon != std::string::npos && colon < end) {
          out.append(text, i, colon + 1 - i);
          out += "***";
          i = end;
          continue;
        }
      }
    }
    out += text[i++];
  }
  return out;
}

json WorkerLostRecord(const Job& job) {
  const json& r = job.request;
  // Whatever the row holds (a poison job is what loses workers): never throws.
  auto text = [&r](const char* key) -> std::string {
    if (!r.is_object()) return "";
    auto it = r.find(key);
    return it != r.end() && it->is_string() ? it->get<std::string>() : "";
  };
  std::string source = text("source");
  std::string who;
  for (const auto& h : job.history) {
    if (!who.empty()) who += ", ";
    who += h.value("worker", "?");
  }
  json rec = {{"schema", kEvaluationSchema},
              {"status", ToString(Status::kInfraError)},
              {"reason", "worker_lost"},
              {"message", "the evaluation lost its worker " + std::to_string(job.history.size()) +
                              " times (" + who +
                              ": killed, or its host lost, before a result); not retried again"},
              {"task", {{"definition", text("task")}, {"workload_id", text("workload")}}},
              {"arch", text("arch")},
              {"candidate", {{"sha256", Sha256Hex(source)}, {"bytes", source.size()}}},
              {"service", {{"job_id", job.id}, {"attempts", job.attempts}, {"lost", job.history}}},
              {"created_at", NowUtcIso8601()},
              {"ptxbench_version", PTXBENCH_VERSION}};
  return rec;
}

}  // namespace ptxbench
