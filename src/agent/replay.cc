#include "agent/replay.h"

#include <memory>

#include "common/bounded_json.h"
#include "common/error.h"
#include "common/files.h"

namespace ptxbench {

using nlohmann::json;

std::string DefaultReplayFile() {
  return std::string(PTXBENCH_SOURCE_DIR) + "/agent/replay/default.json";
}

std::unique_ptr<ReplayProvider> ReplayProvider::Load(const std::string& path,
                                                     const std::string& source_dir) {
  auto p = std::make_unique<ReplayProvider>();
  p->path_ = path;
  const json j = ParseBoundedJson(ReadFile(path), path);
  if (!j.is_object()) throw InputError(path + ": not a replay (a JSON object with \"turns\")");
  if (j.contains("task") && !j["task"].is_string())
    throw InputError(path + ": \"task\" must be a string");
  p->task_ = j.value("task", "");
  if (!j.contains("turns") || !j["turns"].is_array() || j["turns"].empty())
    throw InputError(path + ": needs a non-empty \"turns\" array");
  size_t n = 0;
  for (const auto& t : j["turns"]) {
    ++n;
    const std::string where = path + ": turn " + std::to_string(n);
    if (!t.is_object()) throw InputError(where + " is not an object");
    for (const char* key : {"text", "kernel"})
      if (t.contains(key) && !t[key].is_string())
        throw InputError(where + ": \"" + key + "\" must be a string");
    std::string reply = t.value("text", "");
    if (t.contains("kernel")) {
      std::string k = source_dir + "/" + t["kernel"].get<std::string>();
      if (!FileExists(k)) throw InputError(path + ": no kernel file " + k);
      reply += "\n\n```cuda\n" + ReadFile(k) + "```\n";
    }
    p->replies_.push_back(reply);
  }
  return p;
}

ChatReply ReplayProvider::Complete(const std::vector<ChatMessage>& messages) {
  size_t turn = 0;
  for (const auto& m : messages) turn += m.role == "assistant";
  ChatReply r;
  r.attempts = 1;
  r.finish_reason = "stop";
  r.text = turn < replies_.size()
               ? replies_[turn]
               : "The replay has no reply for turn " + std::to_string(turn + 1) + ".";
  r.usage = EstimatedReplayUsage(messages, r.text);
  return r;
}

Usage EstimatedReplayUsage(const std::vector<ChatMessage>& messages, const std::string& reply) {
  Usage u;
  u.completion_tokens = static_cast<int64_t>(reply.size() / 4);
  for (const auto& m : messages) u.prompt_tokens += static_cast<int64_t>(m.content.size() / 4);
  return u;
}

std::string ReplayProvider::Describe() const { return "replay of " + path_; }

}  // namespace ptxbench
