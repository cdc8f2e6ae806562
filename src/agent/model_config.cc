#include "agent/model_config.h"

#include <map>
#include <set>

#include "common/error.h"
#include "common/files.h"
#include "common/json_fields.h"
#include "common/strings.h"

namespace ptxbench {

namespace {

using json = nlohmann::json;

const std::set<std::string> kProviders = {"openai", "anthropic", "gemini", "replay"};
const std::set<std::string> kFields = {"name",        "provider",   "model",       "base_url",
                                       "api_key_env", "sampling",   "reasoning",   "context_window",
                                       "stream",      "timeout_s",  "max_retries", "file",
                                       "comment",     "description"};

std::string DefaultBaseUrl(const std::string& provider) {
  if (provider == "openai") return "https://api.openai.com/v1";
  if (provider == "anthropic") return "https://api.anthropic.com/v1";
  if (provider == "gemini") return "https://generativelanguage.googleapis.com/v1beta";
  return "";
}

bool IsEnvName(const std::string& s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}

bool IsModelName(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  for (unsigned char c : s)
    if (c <= ' ' || c == '/' || c == '\\' || c == 0x7f) return false;
  return true;
}

bool IsInteger(const json& v) { return v.is_number_integer() || v.is_number_unsigned(); }

}  // namespace

ModelConfig ParseModelConfig(const json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + ": a model must be a JSON object");
  std::string label = where;
  auto fail = [&](const std::string& field, const std::string& why) {
    throw InputError(label + ": field \"" + field + "\": " + why);
  };

  ModelConfig c;
  if (!j.contains("name")) fail("name", "missing");
  if (!j["name"].is_string()) fail("name", "must be a string");
  c.name = j["name"].get<std::string>();
  if (!IsModelName(c.name))
    fail("name", "must be 1 to 128 characters without spaces, control characters or slashes");
  label = where + " (model \"" + c.name + "\")";

  // Unknown fields are errors, so that a typo ("max_retry") does not silently do nothing. The
  // value is never echoed: a misplaced key must not end up in a log.
  for (const auto& [key, value] : j.items()) {
    if (!kFields.count(key)) {
      std::string hint = key.find("key") != std::string::npos
                             ? " (keys never go in the file: name the environment variable "
                               "that holds it in \"api_key_env\")"
                             : "";
      fail(key, "unknown field" + hint);
    }
  }

  if (!j.contains("provider")) fail("provider", "missing");
  if (!j["provider"].is_string()) fail("provider", "must be a string");
  c.provider = j["provider"].get<std::string>();
  if (!kProviders.count(c.provider))
    fail("provider", "unknown provider \"" + Truncate(c.provider, 40) +
                         "\" (openai, anthropic, gemini or replay)");
  bool http = c.provider != "replay";

  auto get_string = [&](const char* field, std::string* out) {
    if (!j.contains(field)) return false;
    if (!j[field].is_string()) fail(field, "must be a string");
    *out = j[field].get<std::string>();
    return true;
  };

  get_string("model", &c.model);
  if (http && c.model.empty()) fail("model", "missing (the provider's model id)");

  if (get_string("base_url", &c.base_url)) {
    if (!StartsWith(c.base_url, "http://") && !StartsWith(c.base_url, "https://"))
      fail("base_url", "must start with http:// or https://");
    while (EndsWith(c.base_url, "/")) c.base_url.pop_back();
  } else {
    c.base_url = DefaultBaseUrl(c.provider);
  }

  if (get_string("api_key_env", &c.api_key_env) && !c.api_key_env.empty() &&
      !IsEnvName(c.api_key_env))
    fail("api_key_env",
         "must be the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*), not the key");

  if (j.contains("sampling")) {
    if (!j["sampling"].is_object()) fail("sampling", "must be an object");
    c.sampling = j["sampling"];
    if (c.sampling.contains("max_tokens")) {
      const json& m = c.sampling["max_tokens"];
      if (!IsInteger(m) || m.get<long long>() <= 0)
        fail("sampling.max_tokens", "must be a positive integer");
    }
  }
  if (j.contains("reasoning")) {
    if (!j["reasoning"].is_object()) fail("reasoning", "must be an object");
    c.reasoning = j["reasoning"];
  }
  if (j.contains("context_window")) {
    const json& v = j["context_window"];
    if (!IsInteger(v) || v.get<long long>() < 0 || v.get<long long>() > (1LL << 31) - 1)
      fail("context_window", "must be a non-negative integer (tokens; 0: unknown)");
    c.context_window = v.get<int>();
  }
  if (j.contains("stream")) {
    if (!j["stream"].is_boolean()) fail("stream", "must be true or false");
    c.stream = j["stream"].get<bool>();
  }
  if (j.contains("timeout_s")) {
    const json& v = j["timeout_s"];
    if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 7 * 24 * 3600.0)
      fail("timeout_s", "must be a positive number of seconds");
    c.timeout_s = v.get<double>();
  }
  if (j.contains("max_retries")) {
    const json& v = j["max_retries"];
    if (!IsInteger(v) || v.get<long long>() < 0 || v.get<long long>() > 100)
      fail("max_retries", "must be an integer from 0 to 100");
    c.max_retries = v.get<int>();
  }
  get_string("file", &c.file);
  if (c.provider == "replay" && c.file.empty())
    fail("file", "missing (the trajectory a replay model plays)");
  for (const char* field : {"comment", "description"})
    if (j.contains(field) && !j[field].is_string()) fail(field, "must be a string");
  return c;
}

std::vector<ModelConfig> LoadModelConfigs(const std::string& path) {
  std::string text = ReadFile(path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(path + ": not valid JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("models"))
    throw InputError(path + ": expected an object {\"models\": [...]}");
  for (const auto& [key, value] : j.items())
    if (key != "models" && key != "comment" && key != "description")
      throw InputError(path + ": unknown top-level field \"" + key + "\"");
  if (!j["models"].is_array()) throw InputError(path + ": field \"models\": must be an array");

  std::vector<ModelConfig> out;
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < j["models"].size(); ++i) {
    std::string where = path + ": models[" + std::to_string(i) + "]";
    ModelConfig c = ParseModelConfig(j["models"][i], where);
    auto [it, inserted] = seen.emplace(c.name, i);
    if (!inserted)
      throw InputError(where + " (model \"" + c.name +
                       "\"): field \"name\": already used by models[" + std::to_string(it->second) +
                       "]; names must be unique");
    out.push_back(std::move(c));
  }
  return out;
}

nlohmann::json PublicModelJson(const ModelConfig& m) {
  nlohmann::json j;
  PTXBENCH_JSON_SET_FIELDS(j, m, name, provider, model, base_url, api_key_env, sampling, reasoning,
                           context_window, stream, timeout_s, max_retries, file);
  return j;
}

}  // namespace ptxbench
