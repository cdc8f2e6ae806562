// The HTTP providers against the scripted model server (real HTTP on loopback): the three wire
// formats, streamed and not, every fault the server can inject, the deadline, the retries, the
// key's whereabouts; and the models file.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "agent/chat.h"
#include "agent/model_config.h"
#include "agent/provider.h"
#include "agent/scripted_model_server.h"
#include "common/error.h"
#include "common/test_threads.h"

namespace ptxbench {
namespace {

using testing::RecordedRequest;
using testing::ScriptedModelServer;
using testing::ScriptedWire;
using testing::ScriptStep;

const std::vector<ChatMessage> kMessages = {
    {"system", "You write CUDA kernels."},
    {"user", "Write a GEMM."},
};

// Small backoffs, so that retries cost milliseconds; no proxy for loopback.
void TestEnvironment() {
  setenv("PTXBENCH_RETRY_BASE_MS", "10", 1);
  setenv("PTXBENCH_RETRY_CAP_MS", "40", 1);
  setenv("NO_PROXY", "127.0.0.1,localhost", 1);
  setenv("no_proxy", "127.0.0.1,localhost", 1);
}

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A port that nothing listens on: bound, then released.
int ClosedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return 1;
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  close(fd);
  return port;
}

struct WireCase {
  ScriptedWire wire;
  bool stream;
};

std::string CaseName(const ::testing::TestParamInfo<WireCase>& info) {
  return testing::ProviderName(info.param.wire) + (info.param.stream ? "_stream" : "_whole");
}

class ProviderTest : public ::testing::TestWithParam<WireCase> {
 protected:
  void SetUp() override {
    TestEnvironment();
    config_ = server_.Config(GetParam().wire, GetParam().stream);
  }
  ChatReply Complete() { return MakeHttpProvider(config_)->Complete(kMessages); }
  ScriptedWire wire() const { return GetParam().wire; }
  bool stream() const { return GetParam().stream; }

  ScriptedModelServer server_;
  ModelConfig config_;
};

TEST_P(ProviderTest, TextAndUsage) {
  const std::string text = "Here it is.\n```cuda\n__global__ void k() {}\n```\n";
  ScriptStep step = ScriptStep::Reply(text);
  step.reasoning = "private chain of thought";
  step.WithUsage(1234, 567, 89);
  server_.Push(step);
  config_.sampling = {{"temperature", 0.5}, {"top_p", 0.9}, {"max_tokens", 1000}};
  ChatReply r = Complete();
  ASSERT_EQ(r.outcome, ChatOutcome::kOk) << r.error;
  EXPECT_EQ(r.text, text);
  EXPECT_FALSE(Contains(r.text, "chain of thought"));
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(r.http_status, 200);
  EXPECT_TRUE(r.error.empty());
  EXPECT_EQ(r.usage.prompt_tokens, 1234);
  EXPECT_EQ(r.usage.completion_tokens, 567);
  // Anthropic does not report thinking tokens apart from the output tokens.
  EXPECT_EQ(r.usage.reasoning_tokens, wire() == ScriptedWire::kAnthropic ? 0 : 89);

  ASSERT_EQ(server_.request_count(), 1u);
  RecordedRequest q = server_.requests()[0];
  EXPECT_EQ(q.stream, stream());
  EXPECT_EQ(q.model, "scripted-model");
  ASSERT_EQ(q.messages.size(), 2u);
  EXPECT_EQ(q.messages[0].role, "system");
  EXPECT_EQ(q.messages[0].content, "You write CUDA kernels.");
  EXPECT_EQ(q.messages[1].role, "user");
  EXPECT_EQ(q.LastUserMessage(), "Write a GEMM.");
  EXPECT_TRUE(q.Header("authorization").empty());
  switch (wire()) {
    case ScriptedWire::kOpenAi:
      EXPECT_EQ(r.finish_reason, "stop");
      EXPECT_EQ(q.path, "/v1/chat/completions");
      EXPECT_EQ(q.json["temperature"], 0.5);
      EXPECT_EQ(q.json["top_p"], 0.9);
      EXPECT_EQ(q.json["max_tokens"], 1000);
      if (stream()) EXPECT_EQ(q.json["stream_options"]["include_usage"], true);
      break;
    case ScriptedWire::kAnthropic:
      EXPECT_EQ(r.finish_reason, "end_turn");
      EXPECT_EQ(q.path, "/v1/messages");
      EXPECT_EQ(q.Header("anthropic-version"), "2023-06-01");
      EXPECT_EQ(q.json["system"], "You write CUDA kernels.");
      EXPECT_EQ(q.json["messages"].size(), 1u);
      EXPECT_EQ(q.json["max_tokens"], 1000);
      EXPECT_EQ(q.json["temperature"], 0.5);
      break;
    case ScriptedWire::kGemini:
      EXPECT_EQ(r.finish_reason, "STOP");
      EXPECT_EQ(q.path, stream() ? "/v1/models/scripted-model:streamGenerateContent"
                                 : "/v1/models/scripted-model:generateContent");
      EXPECT_EQ(q.json["contents"].size(), 1u);
      EXPECT_EQ(q.json["contents"][0]["role"], "user");
      EXPECT_EQ(q.json["generationConfig"]["temperature"], 0.5);
      EXPECT_EQ(q.json["generationConfig"]["topP"], 0.9);
      EXPECT_EQ(q.json["generationConfig"]["maxOutputTokens"], 1000);
      break;
  }
}

TEST_P(ProviderTest, MultiTurnRolesAndReasoningSettings) {
  server_.Push(ScriptStep::Reply("second"));
  config_.reasoning = wire() == ScriptedWire::kOpenAi ? nlohmann::json{{"effort", "high"}}
                      : wire() == ScriptedWire::kAnthropic
                          ? nlohmann::json{{"type", "enabled"}, {"budget_tokens", 2048}}
                          : nlohmann::json{{"thinkingBudget", 2048}};
  std::vector<ChatMessage> m = kMessages;
  m.push_back({"assistant", "first try"});
  m.push_back({"user", "It did not compile."});
  ChatReply r = MakeHttpProvider(config_)->Complete(m);
  ASSERT_EQ(r.outcome, ChatOutcome::kOk) << r.error;
  EXPECT_EQ(r.text, "second");
  RecordedRequest q = server_.requests().at(0);
  ASSERT_EQ(q.messages.size(), 4u);
  EXPECT_EQ(q.messages[2].role, "assistant");
  EXPECT_EQ(q.messages[2].content, "first try");
  EXPECT_EQ(q.LastUserMessage(), "It did not compile.");
  switch (wire()) {
    case ScriptedWire::kOpenAi:
      EXPECT_EQ(q.json["reasoning_effort"], "high");
      break;
    case ScriptedWire::kAnthropic:
      EXPECT_EQ(q.json["thinking"]["budget_tokens"], 2048);
      EXPECT_EQ(q.json["max_tokens"], 16384);  // required; the default when sampling has none
      break;
    case ScriptedWire::kGemini:
      EXPECT_EQ(q.json["contents"][1]["role"], "model");
      EXPECT_EQ(q.json["generationConfig"]["thinkingConfig"]["thinkingBudget"], 2048);
      break;
  }
}

TEST_P(ProviderTest, RetryAfterIsHonoured) {
  server_.Push({ScriptStep::Status(429, "1", "slow down"), ScriptStep::Reply("fine")});
  ChatReply r = Complete();
  ASSERT_EQ(r.outcome, ChatOutcome::kOk) << r.error;
  EXPECT_EQ(r.text, "fine");
  EXPECT_EQ(r.attempts, 2);
  EXPECT_GE(r.seconds, 0.95);  // the backoff alone would be milliseconds
  // Under the completion's deadline (10 s): the wait is the behaviour, its length a figure.
  EXPECT_LT(r.seconds, 9.0);
  EXPECT_EQ(server_.request_count(), 2u);
}

TEST_P(ProviderTest, ServerErrorThenSuccess) {
  server_.Push({ScriptStep::Status(500), ScriptStep::Status(503), ScriptStep::Reply("fine")});
  ChatReply r = Complete();
  ASSERT_EQ(r.outcome, ChatOutcome::kOk) << r.error;
  EXPECT_EQ(r.text, "fine");
  EXPECT_EQ(r.attempts, 3);
  // Retries milliseconds apart here (TestEnvironment); the bound only under the completion's
  // deadline (10 s), so that load cannot fail it.
  EXPECT_LT(r.seconds, 9.0);
}

TEST_P(ProviderTest, PersistentServerErrorIsInfraAfterMaxRetries) {
  config_.max_retries = 2;
  for (int i = 0; i < 5; ++i) server_.Push(ScriptStep::Status(500, "", "upstream exploded"));
  ChatReply r = Complete();
  EXPECT_EQ(r.outcome, ChatOutcome::kInfraError);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(r.http_status, 500);
  EXPECT_EQ(server_.request_count(), 3u);
  EXPECT_TRUE(Contains(r.error, "HTTP 500")) << r.error;
  EXPECT_TRUE(Contains(r.error, "upstream exploded")) << r.error;
  EXPECT_TRUE(r.text.empty());
}

TEST_P(ProviderTest, HangPastTheDeadlineIsInfraWithinTheDeadline) {
  config_.timeout_s = 1.0;
  server_.Push(ScriptStep::Hang(30));
  auto t0 = std::chrono::steady_clock::now();
  ChatReply r = Complete();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.outcome, ChatOutcome::kInfraError);
  EXPECT_TRUE(Contains(r.error, "deadline")) << r.error;
  EXPECT_GE(wall, 0.9);
  // The behaviour: the deadline (1 s) ends the hang (30 s). The bound is far from both, so
  // that a loaded machine cannot fail it.
  EXPECT_LT(wall, 15.0);
  EXPECT_LE(r.seconds, wall);
}

TEST_P(ProviderTest, MalformedJsonIsInfra) {
  server_.Push({ScriptStep::Malformed(), ScriptStep::Reply("never asked for")});
  ChatReply r = Complete();
  EXPECT_EQ(r.outcome, ChatOutcome::kInfraError);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(r.http_status, 200);
  EXPECT_TRUE(Contains(r.error, "malformed")) << r.error;
}

TEST_P(ProviderTest, CutReplyIsRetried) {
  server_.Push({ScriptStep::Cut("the first reply, which never arrives whole, at some length"),
                ScriptStep::Reply("the whole second reply")});
  ChatReply r = Complete();
  ASSERT_EQ(r.outcome, ChatOutcome::kOk) << r.error;
  EXPECT_EQ(r.text, "the whole second reply");  // nothing of the cut attempt
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(server_.request_count(), 2u);
}

TEST_P(ProviderTest, CutReplyEveryTimeIsInfra) {
  config_.max_retries = 1;
  server_.Push({ScriptStep::Cut("a reply cut in the middle, again and again"),
                ScriptStep::Cut("a reply cut in the middle, again and again")});
  ChatReply r = Complete();
  EXPECT_EQ(r.outcome, ChatOutcome::kInfraError);
  EXPECT_EQ(r.attempts, 2);
  EXPECT_TRUE(Contains(r.error, "cut") || Contains(r.error, "ended before")) << r.error;
}

TEST_P(ProviderTest, BadRequestIsTheModelsWithTheMessage) {
  server_.Push(ScriptStep::Status(400, "", "prompt is too long: 250000 tokens > 200000"));
  ChatReply r = Complete();
  EXPECT_EQ(r.outcome, ChatOutcome::kModelError);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(r.http_status, 400);
  EXPECT_TRUE(Contains(r.error, "HTTP 400")) << r.error;
  EXPECT_TRUE(Contains(r.error, "prompt is too long: 250000 tokens")) << r.error;
}

TEST_P(ProviderTest, LongErrorMessagesAreTruncated) {
  server_.Push(ScriptStep::Status(422, "", std::string(5000, 'x')));
  ChatReply r = Complete();
  EXPECT_EQ(r.outcome, ChatOutcome::kModelError);
  EXPECT_LT(r.error.size(), 600u);
}

TEST_P(ProviderTest, KeyGoesOnlyIntoTheRequestHeader) {
  const std::string key = "sk-test-SECRET-0123456789abcdef";
  setenv("PTXBENCH_TEST_API_KEY", key.c_str(), 1);
  config_.api_key_env = "PTXBENCH_TEST_API_KEY";
  server_.Push(ScriptStep::Reply("hello"));
  // An endpoint that echoes the key in its error message must not get it into ours.
  server_.Push(ScriptStep::Status(401, "", "invalid key " + key + " (check it)"));
  auto provider = MakeHttpProvider(config_);
  ChatReply ok = provider->Complete(kMessages);
  ChatReply bad = provider->Complete(kMessages);
  unsetenv("PTXBENCH_TEST_API_KEY");

  ASSERT_EQ(ok.outcome, ChatOutcome::kOk) << ok.error;
  EXPECT_EQ(bad.outcome, ChatOutcome::kInfraError);  // a bad key is ours to fix
  EXPECT_EQ(bad.attempts, 1);                        // and not retried: it would fail the same
  EXPECT_TRUE(Contains(bad.error, "[redacted]")) << bad.error;
  for (const ChatReply* r : {&ok, &bad}) {
    EXPECT_FALSE(Contains(r->text, key));
    EXPECT_FALSE(Contains(r->error, key));
    EXPECT_FALSE(Contains(r->finish_reason, key));
  }
  EXPECT_FALSE(Contains(provider->Describe(), key));
  EXPECT_TRUE(Contains(provider->Describe(), testing::ProviderName(wire())));
  EXPECT_TRUE(Contains(provider->Describe(), "scripted-model"));

  RecordedRequest q = server_.requests().at(0);
  switch (wire()) {
    case ScriptedWire::kOpenAi:
      EXPECT_EQ(q.Header("Authorization"), "Bearer " + key);
      break;
    case ScriptedWire::kAnthropic:
      EXPECT_EQ(q.Header("x-api-key"), key);
      EXPECT_TRUE(q.Header("authorization").empty());
      break;
    case ScriptedWire::kGemini:
      EXPECT_EQ(q.Header("x-goog-api-key"), key);
      EXPECT_TRUE(q.Header("authorization").empty());
      break;
  }
  EXPECT_FALSE(Contains(q.body, key));
  EXPECT_FALSE(Contains(q.path, key));
}

TEST_P(ProviderTest, UnreachablePortIsInfraQuickly) {
  config_.base_url = "http://127.0.0.1:" + std::to_string(ClosedPort()) + "/v1";
  config_.max_retries = 2;
  config_.timeout_s = 60;
  auto t0 = std::chrono::steady_clock::now();
  ChatReply r = Complete();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.outcome, ChatOutcome::kInfraError);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(r.http_status, 0);
  EXPECT_TRUE(Contains(r.error, "cannot reach")) << r.error;
  // The behaviour: a refused connection ends its attempt at once (three attempts, backoffs of
  // milliseconds) instead of waiting out the deadline (60 s). A bound far from both.
  EXPECT_LT(wall, 20.0);
}

TEST_P(ProviderTest, RetryAfterPastTheDeadlineGivesUpAtOnce) {
  config_.timeout_s = 20;
  server_.Push({ScriptStep::Status(429, "30"), ScriptStep::Reply("too late")});
  ChatReply r = Complete();
  EXPECT_EQ(r.outcome, ChatOutcome::kInfraError);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(r.http_status, 429);
  EXPECT_TRUE(Contains(r.error, "deadline")) << r.error;
  // The behaviour: given up at once, where waiting would take the deadline (20 s) or the
  // Retry-After (30 s). A bound far from both, so that load cannot fail it.
  EXPECT_LT(r.seconds, 10.0);
}

TEST_P(ProviderTest, ReplyWithoutContentIsMalformed) {
  // A 200 without the format's content is not an empty answer: it is the endpoint's failure.
  config_.max_retries = 1;
  if (stream()) {
    // An event stream that never says it is complete: taken as cut, retried, then infra.
    server_.Push({ScriptStep::Raw(200, "data: {\"id\": \"x\"}\n\n"),
                  ScriptStep::Raw(200, "data: {\"id\": \"x\"}\n\n")});
  } else {
    server_.Push(ScriptStep::Raw(200, R"({"id": "x", "object": "nothing"})"));
  }
  ChatReply r = Complete();
  EXPECT_EQ(r.outcome, ChatOutcome::kInfraError);
  EXPECT_EQ(r.attempts, stream() ? 2 : 1);
  EXPECT_TRUE(Contains(r.error, stream() ? "ended before" : "malformed reply")) << r.error;
}

TEST_P(ProviderTest, ResponderAnswersWhenTheQueueIsEmpty) {
  server_.SetResponder([](const RecordedRequest& q) {
    return ScriptStep::Reply("you said: " + q.LastUserMessage());
  });
  server_.Push(ScriptStep::Reply("from the queue"));
  EXPECT_EQ(Complete().text, "from the queue");
  EXPECT_EQ(Complete().text, "you said: Write a GEMM.");
  EXPECT_EQ(server_.pending(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Wires, ProviderTest,
                         ::testing::Values(WireCase{ScriptedWire::kOpenAi, false},
                                           WireCase{ScriptedWire::kOpenAi, true},
                                           WireCase{ScriptedWire::kAnthropic, false},
                                           WireCase{ScriptedWire::kAnthropic, true},
                                           WireCase{ScriptedWire::kGemini, false},
                                           WireCase{ScriptedWire::kGemini, true}),
                         CaseName);

// --- not per wire ---------------------------------------------------------------------------

TEST(ProviderMisc, RetryAfterAsAnHttpDate) {
  TestEnvironment();
  ScriptedModelServer server;
  ModelConfig c = server.Config(ScriptedWire::kOpenAi, false);
  char date[64];
  std::time_t when = std::time(nullptr) + 2;
  std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", std::gmtime(&when));
  server.Push({ScriptStep::Status(503, date), ScriptStep::Reply("after the date")});
  ChatReply r = MakeHttpProvider(c)->Complete(kMessages);
  ASSERT_EQ(r.outcome, ChatOutcome::kOk) << r.error;
  EXPECT_EQ(r.attempts, 2);
  EXPECT_GE(r.seconds, 0.9);  // 1 to 2 s, by the clock's whole seconds
  // Under the completion's deadline (10 s): the wait is the behaviour, its length a figure.
  EXPECT_LT(r.seconds, 9.0);
}

TEST(ProviderMisc, ConcurrentClients) {
  TestEnvironment();
  ScriptedModelServer server;
  server.SetResponder([](const RecordedRequest& q) {
    ScriptStep s = ScriptStep::Reply("echo: " + q.LastUserMessage());
    s.chunk_chars = 3;
    return s;
  });
  for (ScriptedWire w : {ScriptedWire::kOpenAi, ScriptedWire::kAnthropic, ScriptedWire::kGemini}) {
    auto provider = MakeHttpProvider(server.Config(w, /*stream=*/w != ScriptedWire::kGemini));
    constexpr int kThreads = 64;
    std::vector<ChatReply> replies(kThreads);
    double wall = testing::RunOnThreads(kThreads, [&](int i) {
      std::vector<ChatMessage> m = {{"system", "s"}, {"user", "request " + std::to_string(i)}};
      replies[i] = provider->Complete(m);
    });
    for (int i = 0; i < kThreads; ++i) {
      ASSERT_EQ(replies[i].outcome, ChatOutcome::kOk) << i << ": " << replies[i].error;
      EXPECT_EQ(replies[i].text, "echo: request " + std::to_string(i));
      EXPECT_EQ(replies[i].attempts, 1) << i;
    }
    std::printf("%s: %d concurrent completions in %.3f s\n", testing::ProviderName(w).c_str(),
                kThreads, wall);
  }
  EXPECT_EQ(server.request_count(), 3u * 64u);
}

TEST(ProviderMisc, MissingKeyVariableThrowsNamingIt) {
  ModelConfig c;
  c.name = "m";
  c.provider = "openai";
  c.model = "x";
  c.base_url = "http://127.0.0.1:1/v1";
  c.api_key_env = "PTXBENCH_SURELY_UNSET_KEY_VARIABLE";
  unsetenv(c.api_key_env.c_str());
  try {
    MakeHttpProvider(c);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    EXPECT_TRUE(Contains(e.what(), "PTXBENCH_SURELY_UNSET_KEY_VARIABLE")) << e.what();
  }
}

TEST(ProviderMisc, UnknownProviderThrows) {
  ModelConfig c;
  c.name = "m";
  c.provider = "replay";
  c.base_url = "http://127.0.0.1:1/v1";
  EXPECT_THROW(MakeHttpProvider(c), Error);
  c.provider = "cohere";
  EXPECT_THROW(MakeHttpProvider(c), Error);
}

TEST(ProviderMisc, OutcomeNames) {
  EXPECT_EQ(ToString(ChatOutcome::kOk), "ok");
  EXPECT_EQ(ToString(ChatOutcome::kInfraError), "infra_error");
  EXPECT_EQ(ToString(ChatOutcome::kModelError), "model_error");
}

// --- the models file ------------------------------------------------------------------------

class ModelConfigTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    std::string path = ::testing::TempDir() + "/models_" +
                       ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json";
    std::ofstream(path) << text;
    return path;
  }
  // The InputError's message for a file holding one model `entry`.
  std::string ErrorFor(const std::string& entry) {
    std::string path = Write("{\"models\": [" + entry + "]}");
    try {
      LoadModelConfigs(path);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInput);
      EXPECT_TRUE(Contains(e.what(), path)) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "no error for " << entry;
    return "";
  }
};

TEST_F(ModelConfigTest, GoodFile) {
  std::string path = Write(R"({"models": [
    {"name": "local-qwen", "provider": "openai", "model": "Qwen/Qwen3-32B",
     "base_url": "http://127.0.0.1:8000/v1/", "api_key_env": "VLLM_KEY",
     "sampling": {"temperature": 0.6, "top_p": 0.95, "max_tokens": 16384},
     "reasoning": {"effort": "high"}, "context_window": 131072,
     "stream": false, "timeout_s": 900.5, "max_retries": 2},
    {"name": "claude", "provider": "anthropic", "model": "claude-x"},
    {"name": "gem", "provider": "gemini", "model": "gemini-x", "comment": "defaults"},
    {"name": "replay-default", "provider": "replay", "file": "agent/replay/default.json"}]})");
  std::vector<ModelConfig> m = LoadModelConfigs(path);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].name, "local-qwen");
  EXPECT_EQ(m[0].provider, "openai");
  EXPECT_EQ(m[0].model, "Qwen/Qwen3-32B");
  EXPECT_EQ(m[0].base_url, "http://127.0.0.1:8000/v1");  // the trailing slash dropped
  EXPECT_EQ(m[0].api_key_env, "VLLM_KEY");
  EXPECT_EQ(m[0].sampling["temperature"], 0.6);
  EXPECT_EQ(m[0].reasoning["effort"], "high");
  EXPECT_EQ(m[0].context_window, 131072);
  EXPECT_FALSE(m[0].stream);
  EXPECT_DOUBLE_EQ(m[0].timeout_s, 900.5);
  EXPECT_EQ(m[0].max_retries, 2);
  // Defaults.
  EXPECT_EQ(m[1].base_url, "https://api.anthropic.com/v1");
  EXPECT_TRUE(m[1].api_key_env.empty());
  EXPECT_TRUE(m[1].stream);
  EXPECT_DOUBLE_EQ(m[1].timeout_s, 900);
  EXPECT_EQ(m[1].max_retries, 6);
  EXPECT_TRUE(m[1].sampling.is_object() && m[1].sampling.empty());
  EXPECT_EQ(m[2].base_url, "https://generativelanguage.googleapis.com/v1beta");
  EXPECT_EQ(m[3].provider, "replay");
  EXPECT_EQ(m[3].file, "agent/replay/default.json");
}

TEST_F(ModelConfigTest, TheBundledFileParses) {
  std::vector<ModelConfig> m =
      LoadModelConfigs(std::string(PTXBENCH_SOURCE_DIR) + "/agent/models.json");
  EXPECT_FALSE(m.empty());
}

TEST_F(ModelConfigTest, MissingFieldNamesFileModelAndField) {
  std::string e = ErrorFor(R"({"name": "nomodel", "provider": "openai"})");
  EXPECT_TRUE(Contains(e, "\"nomodel\"")) << e;
  EXPECT_TRUE(Contains(e, "field \"model\"")) << e;
  EXPECT_TRUE(Contains(e, "models[0]")) << e;
  e = ErrorFor(R"({"provider": "openai", "model": "x"})");
  EXPECT_TRUE(Contains(e, "field \"name\"")) << e;
  e = ErrorFor(R"({"name": "r", "provider": "replay"})");
  EXPECT_TRUE(Contains(e, "field \"file\"")) << e;
}

TEST_F(ModelConfigTest, UnknownProvider) {
  std::string e = ErrorFor(R"({"name": "c", "provider": "cohere", "model": "x"})");
  EXPECT_TRUE(Contains(e, "field \"provider\"")) << e;
  EXPECT_TRUE(Contains(e, "cohere")) << e;
  EXPECT_TRUE(Contains(e, "\"c\"")) << e;
}

TEST_F(ModelConfigTest, DuplicateNames) {
  std::string path = Write(R"({"models": [
    {"name": "twin", "provider": "openai", "model": "a"},
    {"name": "twin", "provider": "gemini", "model": "b"}]})");
  try {
    LoadModelConfigs(path);
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_TRUE(Contains(m, path)) << m;
    EXPECT_TRUE(Contains(m, "\"twin\"")) << m;
    EXPECT_TRUE(Contains(m, "models[1]")) << m;
    EXPECT_TRUE(Contains(m, "unique")) << m;
  }
}

TEST_F(ModelConfigTest, BadValues) {
  EXPECT_TRUE(
      Contains(ErrorFor(R"({"name": "m", "provider": "openai", "model": "x", "timeout_s": 0})"),
               "field \"timeout_s\""));
  EXPECT_TRUE(
      Contains(ErrorFor(R"({"name": "m", "provider": "openai", "model": "x", "max_retries": -1})"),
               "field \"max_retries\""));
  EXPECT_TRUE(
      Contains(ErrorFor(R"({"name": "m", "provider": "openai", "model": "x", "stream": "yes"})"),
               "field \"stream\""));
  EXPECT_TRUE(
      Contains(ErrorFor(R"({"name": "m", "provider": "openai", "model": "x", "sampling": [1]})"),
               "field \"sampling\""));
  EXPECT_TRUE(Contains(
      ErrorFor(R"({"name": "m", "provider": "openai", "model": "x", "base_url": "ftp://h"})"),
      "field \"base_url\""));
  EXPECT_TRUE(
      Contains(ErrorFor(R"({"name": "m", "provider": "openai", "model": "x", "max_retry": 3})"),
               "field \"max_retry\": unknown field"));
}

TEST_F(ModelConfigTest, AKeyInTheFileIsNeverEchoed) {
  const std::string key = "sk-live-do-not-print-me-0123456789";
  std::string e = ErrorFor(R"({"name": "m", "provider": "openai", "model": "x", "api_key_env": ")" +
                           key + "\"}");
  EXPECT_TRUE(Contains(e, "field \"api_key_env\"")) << e;
  EXPECT_FALSE(Contains(e, key)) << e;
  e = ErrorFor(R"({"name": "m", "provider": "openai", "model": "x", "api_key": ")" + key + "\"}");
  EXPECT_TRUE(Contains(e, "field \"api_key\"")) << e;
  EXPECT_FALSE(Contains(e, key)) << e;
}

TEST_F(ModelConfigTest, NotJsonOrWrongShape) {
  std::string path = Write("{\"models\": [");
  EXPECT_THROW(LoadModelConfigs(path), Error);
  path = Write("[]");
  EXPECT_THROW(LoadModelConfigs(path), Error);
  EXPECT_THROW(LoadModelConfigs(::testing::TempDir() + "/no_such_models.json"), Error);
}

}  // namespace
}  // namespace ptxbench
