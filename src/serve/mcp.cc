#include "serve/mcp.h"

#include <chrono>
#include <istream>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <thread>
#include <utility>

#include "agent/feedback.h"
#include "agent/mcp_bridge.h"
#include "common/error.h"
#include "common/source_policy.h"
#include "common/strings.h"
#include "common/version.h"
#include "record/outcome.h"
#include "record/record.h"

namespace ptxbench {

using nlohmann::json;

namespace {

// The MCP revision this server speaks; a client asking for another gets this one back and
// decides (the protocol's negotiation).
constexpr char kProtocolVersion[] = "2025-06-18";
constexpr char kTool[] = "evaluate_kernel";
constexpr char kTaskUri[] = "ptxbench://task";
constexpr char kPackUri[] = "ptxbench://pack";

// JSON-RPC's error codes.
constexpr int kParseError = -32700, kInvalidRequest = -32600, kMethodNotFound = -32601,
              kInvalidParams = -32602;

// A request that gets JSON-RPC's error answer instead of a result.
struct RpcFailure {
  int code;
  std::string message;
};

json RpcError(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

json RpcResult(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

// A tool's answer: text for the agent, the summary for programs, and whether it is an error.
json ToolAnswer(const std::string& text, const json& summary, bool error) {
  json r = {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", error}};
  if (!summary.is_null()) r["structuredContent"] = summary;
  return r;
}

class McpSession {
 public:
  McpSession(const McpServerOptions& o, McpJudge judge, std::ostream& out)
      : o_(o), judge_(std::move(judge)), out_(out) {}
  ~McpSession() { Finish(); }

  // One line of input: a request (answered), a notification or a client's answer (not).
  void Handle(const std::string& line) {
    if (Trim(line).empty()) return;
    const json m = json::parse(line, nullptr, false);
    if (m.is_discarded()) return Send(RpcError(nullptr, kParseError, "not JSON"));
    if (!m.is_object() || m.value("jsonrpc", "") != "2.0")
      return Send(RpcError(IdOf(m), kInvalidRequest, "not a JSON-RPC 2.0 message object"));
    if (!m.contains("method")) return;  // an answer to something we never asked
    const bool notification = !m.contains("id");
    if (!m["method"].is_string())
      return notification ? void() : Send(RpcError(m["id"], kInvalidRequest, "no method"));
    if (notification) return;  // notifications/initialized, cancelled: nothing to answer
    const json& id = m["id"];
    try {
      json result = Dispatch(m["method"], m.value("params", json::object()), id);
      if (!result.is_null()) Send(RpcResult(id, std::move(result)));
    } catch (const RpcFailure& f) {
      Send(RpcError(id, f.code, f.message));
    }
  }

  // Waits for an evaluation in flight, whose answer is then written.
  void Finish() {
    if (worker_.joinable()) worker_.join();
  }
  int evaluations() {
    std::lock_guard<std::mutex> l(state_mu_);
    return used_;
  }

 private:
  static json IdOf(const json& m) {
    return m.is_object() && m.contains("id") && !m["id"].is_object() ? m["id"] : json(nullptr);
  }

  void Send(const json& message) {
    std::lock_guard<std::mutex> l(out_mu_);
    out_ << message.dump(-1, ' ', false, json::error_handler_t::replace) << "\n" << std::flush;
  }

  // The result, or null when the answer comes later (an evaluation started).
  json Dispatch(const std::string& method, const json& params, const json& id) {
    if (method == "initialize") return Initialize();
    if (method == "ping") return json::object();
    if (method == "tools/list") return {{"tools", json::array({ToolDescription()})}};
    if (method == "tools/call") return CallTool(params, id);
    if (method == "resources/list") return {{"resources", Resources()}};
    if (method == "resources/read") return ReadResource(params);
    throw RpcFailure{kMethodNotFound, "no method " + method};
  }

  // The client's protocolVersion is not checked: this server speaks one revision and says so.
  json Initialize() const {
    return {
        {"protocolVersion", kProtocolVersion},
        {"capabilities", {{"tools", {{"listChanged", false}}}, {"resources", json::object()}}},
        {"serverInfo", {{"name", "ptxbench"}, {"version", PTXBENCH_VERSION}}},
        {"instructions", "Write your kernel to " + o_.kernel_path + ", then call " + kTool +
                             " (no arguments) to have it judged on " + o_.task + ". You have " +
                             std::to_string(o_.max_evaluations) +
                             " evaluations. The task statement is the resource " + kTaskUri + "."}};
  }

  json ToolDescription() const {
    return {
        {"name", kTool},
        {"description", "Evaluates " + o_.kernel_path + " on the run's task (" + o_.task +
                            "): correctness against a trusted reference, whether the "
                            "architecture's own instructions executed, and its speed "
                            "against the vendor library. Takes no arguments."},
        {"inputSchema",
         {{"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}}}};
  }

  json Resources() const {
    json list = json::array({{{"uri", kTaskUri},
                              {"name", "task"},
                              {"description", "The task: " + o_.task},
                              {"mimeType", "text/plain"}}});
    if (!o_.pack.empty())
      list.push_back({{"uri", kPackUri},
                      {"name", "pack"},
                      {"description", "The architecture's knowledge pack"},
                      {"mimeType", "text/markdown"}});
    return list;
  }

  json ReadResource(const json& params) const {
    const std::string uri = params.is_object() ? params.value("uri", "") : "";
    const std::string* text = uri == kTaskUri                       ? &o_.task_statement
                              : uri == kPackUri && !o_.pack.empty() ? &o_.pack
                                                                    : nullptr;
    if (!text) throw RpcFailure{kInvalidParams, "no resource " + uri};
    return {
        {"contents", json::array({{{"uri", uri}, {"mimeType", "text/plain"}, {"text", *text}}})}};
  }

  json CallTool(const json& params, const json& id);
  void Evaluate(json id, int turn, std::string source);

  const McpServerOptions& o_;
  McpJudge judge_;
  std::ostream& out_;
  std::mutex out_mu_, state_mu_;
  std::thread worker_;
  bool busy_ = false;
  int used_ = 0;  // evaluations made or in flight (one that was not judged is given back)
};

json McpSession::CallTool(const json& params, const json& id) {
  const std::string name = params.is_object() ? params.value("name", "") : "";
  if (name != kTool)
    throw RpcFailure{kInvalidParams, "no tool " + name + " (the one is " + kTool + ")"};
  const json args = params.value("arguments", json::object());
  if (!args.is_object() || !args.empty())
    return ToolAnswer(std::string(kTool) + " takes no arguments: it always evaluates " +
                          o_.kernel_path + " on " + o_.task,
                      nullptr, true);
  std::string source;
  int turn = 0;
  {
    std::lock_guard<std::mutex> l(state_mu_);
    if (busy_)
      return ToolAnswer("an evaluation is in flight: wait for its answer before calling " +
                            std::string(kTool) + " again",
                        nullptr, true);
    if (used_ >= o_.max_evaluations)
      return ToolAnswer(
          "the run's budget of " + std::to_string(o_.max_evaluations) + " evaluations is spent",
          {{"turn", used_}, {"evaluations_left", 0}}, true);
    try {
      source = ReadSourceFile(o_.kernel_path);
    } catch (const Error& e) {
      return ToolAnswer(std::string(e.what()) + " (nothing was evaluated; the turn is not counted)",
                        nullptr, true);
    }
    busy_ = true;
    turn = ++used_;
  }
  Finish();  // the last evaluation's thread, long done
  worker_ = std::thread(&McpSession::Evaluate, this, id, turn, std::move(source));
  return nullptr;
}

// On the worker thread: the judge's answer; a turn it does not count is given back.
void McpSession::Evaluate(json id, int turn, std::string source) {
  McpToolAnswer a = judge_(source, turn);
  std::lock_guard<std::mutex> l(state_mu_);
  busy_ = false;
  if (!a.counted) --used_;
  if (!a.summary.is_object()) a.summary = json::object();
  if (!a.summary.contains("turn")) a.summary["turn"] = turn;
  a.summary["evaluations_left"] = o_.max_evaluations - used_;
  Send(RpcResult(id, ToolAnswer(a.text, a.summary, a.error)));
}

// The service's verdict on a source, fed back as the agent loop feeds it back: the feedback,
// and the best correct kernel so far among this server's evaluations.
class ServiceJudge {
 public:
  ServiceJudge(McpEvaluate evaluate, std::string arch)
      : evaluate_(std::move(evaluate)), arch_(std::move(arch)) {}

  McpToolAnswer operator()(const std::string& source, int turn) {
    json record;
    try {
      record = evaluate_(source);
    } catch (const std::exception& e) {
      // The service's failure is not the agent's turn.
      return {"the evaluation service could not judge the kernel (" + std::string(e.what()) +
                  "); the turn is not counted: call again",
              json::object(), true, false};
    }
    const EvaluationRecord r = FromJson(record);
    const TurnVerdict v = JudgeTurn(r, arch_);
    const PerformanceView p = r.Performance();
    std::lock_guard<std::mutex> l(mu_);
    if (v.Correct()) {
      const double s = p.speedup.value_or(0);
      if (!best_ || s > best_->speedup || (s == best_->speedup && v.Verified() && !best_->verified))
        best_ = BestSoFar{turn, s, p.tflops.value_or(0), v.Verified()};
    }
    // A verdict on the machine (no GPU, a tool missing) is not the agent's turn either.
    const bool infra = v.outcome == TurnOutcome::kInfra;
    return {RenderFeedback(r, best_), ToolSummary(turn, r, arch_), infra, !infra};
  }

 private:
  McpEvaluate evaluate_;
  std::string arch_;
  std::mutex mu_;
  std::optional<BestSoFar> best_;
};

}  // namespace

int ServeMcpJudged(const McpServerOptions& options, const McpJudge& judge, std::istream& in,
                   std::ostream& out) {
  McpSession session(options, judge, out);
  for (std::string line; std::getline(in, line);) session.Handle(line);
  session.Finish();
  return session.evaluations();
}

int ServeMcpWith(const McpServerOptions& options, const McpEvaluate& evaluate, std::istream& in,
                 std::ostream& out) {
  auto judge = std::make_shared<ServiceJudge>(evaluate, options.service.arch);
  return ServeMcpJudged(
      options, [judge](const std::string& source, int turn) { return (*judge)(source, turn); }, in,
      out);
}

int ServeMcp(const McpServerOptions& options, std::istream& in, std::ostream& out) {
  EvaluationClient client(options.service);
  return ServeMcpWith(
      options,
      [&](const std::string& source) {
        return client.Wait(client.Submit(options.task, options.workload, source));
      },
      in, out);
}

int ServeMcpBridge(const std::string& socket_path, const std::string& token, std::istream& in,
                   std::ostream& out) {
  const json info = BridgeCall(socket_path, token, {{"op", "info"}}, std::chrono::seconds(30));
  if (info.value("error", false) == true)
    throw EnvironmentError("the run refused the MCP server: " + info.value("text", ""));
  McpServerOptions o;
  o.task = info.value("task", "");
  o.kernel_path = info.value("kernel", "");
  o.task_statement = info.value("statement", "");
  o.pack = info.value("pack", "");
  o.max_evaluations = info.value("evaluations", 0);
  const McpJudge judge = [&](const std::string& source, int) -> McpToolAnswer {
    try {
      // An evaluation takes what the run's evaluator takes; the run ends it, not this wait.
      const json a = BridgeCall(socket_path, token, {{"op", "evaluate"}, {"source", source}},
                                std::chrono::hours(24));
      return {a.value("text", ""), a.value("summary", json::object()), a.value("error", false),
              a.value("counted", true)};
    } catch (const Error& e) {
      return {e.what(), json::object(), true, false};
    }
  };
  return ServeMcpJudged(o, judge, in, out);
}

}  // namespace ptxbench
