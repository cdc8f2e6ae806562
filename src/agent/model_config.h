// The models a run can use, declared in a JSON file (agent/models.json by default):
//
//   {"models": [{"name": "local-qwen", "provider": "openai", "model": "Qwen/Qwen3-32B",
//                "base_url": "http://127.0.0.1:8000/v1", "api_key_env": "VLLM_KEY",
//                "sampling": {"temperature": 0.6, "top_p": 0.95, "max_tokens": 16384},
//                "reasoning": {"effort": "high"}, "context_window": 131072,
//                "stream": true, "timeout_s": 900, "max_retries": 6}]}
//
// provider: "openai" (chat completions; vLLM, SGLang, OpenRouter, ...), "anthropic"
// (Messages), "gemini" (generateContent), "replay" (plays a recorded trajectory: "file").
// The key itself is never in the file: only the name of the environment variable.
// Required: name (unique in the file), provider, model (not for replay), file (replay).
// base_url defaults to the provider's public endpoint; the other fields to the defaults below.
// Unknown fields are errors (a misspelt field would otherwise do nothing); "comment" and
// "description" strings are allowed anywhere a model is. See provider.h for how sampling and
// reasoning reach each wire format.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ptxbench {

struct ModelConfig {
  std::string name;
  std::string provider;
  std::string model;        // the provider's model id
  std::string base_url;     // without the endpoint path ("https://api.openai.com/v1")
  std::string api_key_env;  // empty: no key (local servers)
  nlohmann::json sampling = nlohmann::json::object();   // passed through: temperature, ...
  nlohmann::json reasoning = nlohmann::json::object();  // provider-specific reasoning knobs
  int context_window = 0;                               // tokens; 0 unknown
  bool stream = true;                                   // where the provider offers it
  double timeout_s = 900;                               // total deadline of one completion
  int max_retries = 6;                                  // on 429, 5xx, connection errors
  std::string file;                                     // replay: the trajectory to play
  // Not from the models file: told of every retry (one line, the key redacted) so that a
  // terminal shows a model endpoint's 429s and 5xx while they happen. Must not throw.
  std::function<void(const std::string& line)> on_retry;
};

// Parses and checks a models file; throws InputError naming the file, the model and the field.
std::vector<ModelConfig> LoadModelConfigs(const std::string& path);
ModelConfig ParseModelConfig(const nlohmann::json& j, const std::string& where);

// What run.json and dataset cards may say about a model: the file's fields, never a key (only
// the name of its environment variable).
nlohmann::json PublicModelJson(const ModelConfig& m);

}  // namespace ptxbench
