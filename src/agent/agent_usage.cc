#include "agent/agent_usage.h"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

namespace ptxbench {

namespace {

int64_t Count(const nlohmann::json& usage, const char* key) {
  const auto it = usage.find(key);
  return it != usage.end() && it->is_number_integer() && it->get<int64_t>() > 0 ? it->get<int64_t>()
                                                                                : 0;
}

// Anthropic's usage: the inputs apart (fresh, written to the cache, read from it).
int64_t AnthropicTokens(const nlohmann::json& u) {
  return Count(u, "input_tokens") + Count(u, "cache_creation_input_tokens") +
         Count(u, "cache_read_input_tokens") + Count(u, "output_tokens");
}

}  // namespace

void AgentUsage::Feed(const std::string& line) {
  if (line.find("usage") == std::string::npos) return;  // most lines: no parse
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object()) return;
  const std::string type = j.value("type", "");
  if (type == "turn.completed" && j.contains("usage") && j["usage"].is_object()) {
    summed_ += Count(j["usage"], "input_tokens") + Count(j["usage"], "output_tokens");
    reported_ = true;
  } else if (type == "assistant" && j.contains("message") && j["message"].is_object()) {
    const nlohmann::json& m = j["message"];
    if (!m.contains("usage") || !m["usage"].is_object()) return;
    const std::string id = m.value("id", "");
    if (!id.empty() && !messages_seen_.insert(id).second) return;
    summed_ += AnthropicTokens(m["usage"]);
    reported_ = true;
  } else if (type == "result" && j.contains("usage") && j["usage"].is_object()) {
    session_total_ = std::max(session_total_, AnthropicTokens(j["usage"]));
    reported_ = true;
  }
}

int64_t AgentUsage::tokens() const { return std::max(summed_, session_total_); }

void AgentLogFollower::Update(AgentUsage* usage) {
  std::ifstream in(path_, std::ios::binary);
  if (!in) return;
  in.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(in.tellg());
  if (size <= offset_) return;
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk(size - offset_, '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  offset_ = size;
  partial_ += chunk;
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1)
    usage->Feed(partial_.substr(start, nl - start));
  partial_.erase(0, start);
  // A line that never ends (a CLI's progress bar) is not held for ever.
  if (partial_.size() > (1u << 20)) partial_.clear();
}

}  // namespace ptxbench
