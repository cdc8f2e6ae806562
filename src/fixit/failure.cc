#include "fixit/failure.h"

#include "common/bounded_json.h"
#include "common/error.h"
#include "common/files.h"
#include "common/json_fields.h"
#include "common/sha256.h"

namespace ptxbench {

using nlohmann::json;

namespace {

json MessagesJson(const std::vector<ChatMessage>& messages) {
  json out = json::array();
  for (const ChatMessage& m : messages) out.push_back({{"role", m.role}, {"content", m.content}});
  return out;
}

}  // namespace

json ToJson(const Failure& f) {
  json j;
  PTXBENCH_JSON_SET_FIELDS(j, f, id, key, run_id, run_dir, trajectory_id, model, task, workload,
                           arch, pack, turn, outcome, status, reason, kernel_sha256,
                           context_sha256);
  j["context"] = MessagesJson(f.context);
  return j;
}

Failure FailureFromJson(const json& j) {
  Failure f;
  try {
    f.id = j.at("id");
    f.key = j.at("key");
    f.run_id = j.at("run_id");
    f.run_dir = j.value("run_dir", "");
    f.trajectory_id = j.at("trajectory_id");
    f.model = j.value("model", "");
    f.task = j.at("task");
    f.workload = j.at("workload");
    f.arch = j.at("arch");
    f.pack = j.value("pack", "");
    f.turn = j.at("turn");
    f.outcome = j.at("outcome");
    f.status = j.value("status", "");
    f.reason = j.value("reason", "");
    f.kernel_sha256 = j.value("kernel_sha256", "");
    for (const json& m : j.at("context")) f.context.push_back({m.at("role"), m.at("content")});
    f.context_sha256 = j.at("context_sha256");
  } catch (const json::exception& e) {
    throw InputError("malformed failure " + j.value("id", std::string("?")) + ": " + e.what());
  }
  if (f.context.size() != 4)
    throw InputError("failure " + f.id + ": its context must be 4 messages, not " +
                     std::to_string(f.context.size()));
  if (ContextSha256(f.context) != f.context_sha256)
    throw InputError("failure " + f.id + ": its context does not match its context_sha256");
  return f;
}

json ToJson(const Manifest& m) {
  json failures = json::array();
  for (const Failure& f : m.failures) failures.push_back(ToJson(f));
  return {
      {"schema", "ptxbench.fixit.manifest/1"}, {"settings", m.settings}, {"failures", failures}};
}

Manifest ReadManifest(const std::string& path) {
  json j = ParseBoundedJsonOrDiscarded(ReadFile(path));
  if (j.is_discarded() || !j.is_object() || j.value("schema", "") != "ptxbench.fixit.manifest/1")
    throw InputError(path + ": not a fixit manifest (ptxbench.fixit.manifest/1)");
  Manifest m;
  m.settings = j.value("settings", json::object());
  for (const json& f : j.value("failures", json::array())) m.failures.push_back(FailureFromJson(f));
  return m;
}

std::string NormalizeSource(std::string_view s) {
  std::string out;
  bool pending_space = false;
  auto put = [&](char c) {
    if (pending_space && !out.empty()) out += ' ';
    pending_space = false;
    out += c;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {  // line comment
      while (i < s.size() && s[i] != '\n') ++i;
      pending_space = true;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {  // block comment
      size_t end = s.find("*/", i + 2);
      i = end == std::string_view::npos ? s.size() : end + 1;
      pending_space = true;
    } else if (c == '"' || c == '\'') {  // literals are kept as they are
      size_t j = i + 1;
      while (j < s.size() && s[j] != c && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
      put(c);
      out.append(s.substr(i + 1, std::min(j, s.size()) - i));
      i = std::min(j, s.size());
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      pending_space = true;
    } else {
      put(c);
    }
  }
  return out;
}

std::string ContextSha256(const std::vector<ChatMessage>& messages) {
  Sha256 h;
  for (const ChatMessage& m : messages) {
    std::string head = m.role + ":" + std::to_string(m.content.size()) + ":";
    h.Update(head);
    h.Update(m.content);
  }
  return h.FinishHex();
}

std::string FencedKernel(const std::string& source) {
  std::string s = "```cuda\n" + source;
  if (s.back() != '\n') s += '\n';
  return s + "```";
}

}  // namespace ptxbench
