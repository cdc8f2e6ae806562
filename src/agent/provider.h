// The wire formats over HTTP(S), with libcurl: OpenAI-compatible chat completions, Anthropic
// Messages, Google Gemini generateContent; streaming (server-sent events) where the config
// asks for it, a total deadline, retries with exponential backoff and jitter on 429, 5xx and
// connection errors (Retry-After honoured, capped by the deadline).
//
// Requests, per provider (config.sampling and config.reasoning go through as given, except):
//   openai     POST {base_url}/chat/completions, Authorization: Bearer KEY; sampling keys at
//              top level; reasoning.effort becomes reasoning_effort, other reasoning keys go
//              at top level (e.g. vLLM's chat_template_kwargs); streams ask for usage
//              (stream_options.include_usage).
//   anthropic  POST {base_url}/messages, x-api-key, anthropic-version 2023-06-01; system
//              messages joined into "system"; max_tokens from sampling (default 16384);
//              reasoning is sent as "thinking" ({"type": "enabled", "budget_tokens": N}).
//   gemini     POST {base_url}/models/{model}:generateContent (streamed:
//              :streamGenerateContent?alt=sse), x-goog-api-key; system → systemInstruction;
//              sampling → generationConfig (temperature, top_p → topP, top_k → topK,
//              max_tokens → maxOutputTokens, stop → stopSequences; other keys as given);
//              reasoning → generationConfig.thinkingConfig.
// Reasoning text (reasoning_content, thinking blocks, thought parts) never enters the reply.
//
// Outcomes: kOk; kModelError for a 4xx other than 401/403/404/408/429 (the provider's
// message, cut to a line), a refusal or a blocked reply; kInfraError for everything else:
// 401/403/404 (a key or URL to fix: not retried, not the model's), no connection, 408,
// 429 or 5xx after config.max_retries retries, a stream cut or stalled every time, the
// deadline (config.timeout_s covers all attempts and waits), a reply that is not the format
// (malformed JSON, a 200 without content: not retried).
// Retries wait Retry-After (seconds or an HTTP date; OpenAI's retry-after-ms) when given,
// else exponential backoff with full jitter, base 1 s, doubling, capped at 60 s; an attempt
// that could not start before the deadline is not made. Environment overrides, read when the
// provider is made (tests use them): PTXBENCH_RETRY_BASE_MS, PTXBENCH_RETRY_CAP_MS, and
// PTXBENCH_STALL_S (a stream that sends nothing for this long is given up and retried;
// default 300, 0 never).
//
// The key is read from the environment once, placed only in the request's header, and
// replaced by "[redacted]" wherever it would appear in an error (an endpoint may echo it).
#pragma once

#include <memory>

#include "agent/chat.h"
#include "agent/model_config.h"

namespace ptxbench {

// The provider for `config` ("openai", "anthropic", "gemini"; "replay" is made by the
// loop, agent/replay.h). Reads the API key from config.api_key_env now; a missing variable
// throws InputError naming the variable (never a value). Throws InputError for an unknown
// provider.
std::unique_ptr<ChatProvider> MakeHttpProvider(const ModelConfig& config);

}  // namespace ptxbench
