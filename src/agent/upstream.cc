#include "agent/upstream.h"

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string_view>

#include "agent/content_text.h"
#include "agent/extract.h"
#include "agent/replay.h"
#include "common/bounded_json.h"
#include "common/error.h"
#include "common/files.h"

namespace ptxbench {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::regex kTrajectoryFile(R"(exp_[0-9A-Za-z_-]+\.json)");
const std::regex kKernelFile(R"(kernel_t([0-9]+)\.cu)");

bool IsMiniSweAgent(const json& j) {
  return j.is_object() && j.contains("messages") && j["messages"].is_array() &&
         j.value("trajectory_format", "").rfind("mini-swe-agent", 0) == 0;
}

// Every string value in `j`, depth first.
void Strings(const json& j, std::vector<std::string>* out) {
  if (j.is_string()) {
    out->push_back(j.get<std::string>());
  } else if (j.is_structured()) {
    for (const auto& v : j) Strings(v, out);
  }
}

// Content as a string, or as a list of parts, as some providers return it.
std::string TextOf(const json& message) {
  return message.contains("content") ? ContentText(message["content"]) : "";
}

// The task: an exact definition name among info's strings, else the longest name in the
// task message. Empty when neither, or when info names two.
std::string FindTask(const json& trajectory, const std::string& task_message,
                     const Catalog& catalog, std::string* why) {
  std::vector<std::string> strings;
  if (trajectory.contains("info")) Strings(trajectory["info"], &strings);
  std::vector<std::string> named;
  for (const Definition& d : catalog.definitions())
    if (std::find(strings.begin(), strings.end(), d.name) != strings.end()) named.push_back(d.name);
  if (named.size() == 1) return named[0];
  if (named.size() > 1) {
    *why =
        "its info names several tasks (" + named[0] + ", " + named[1] + "); name one with --task";
    return "";
  }
  std::string best;
  for (const Definition& d : catalog.definitions()) {
    size_t at = task_message.find(d.name);
    // A whole name: gemm_n128_k2048 must not match inside gemm_n128_k20480.
    while (at != std::string::npos) {
      size_t end = at + d.name.size();
      bool whole = end >= task_message.size() ||
                   !(std::isalnum(static_cast<unsigned char>(task_message[end])) ||
                     task_message[end] == '_');
      if (whole) break;
      at = task_message.find(d.name, at + 1);
    }
    if (at != std::string::npos && d.name.size() > best.size()) best = d.name;
  }
  if (best.empty()) *why = "names no task of the catalog; name it with --task";
  return best;
}

// Upstream's extract_code_block (accrl/utils/code_utils.py), for languages ["cpp"]. Its
// pattern is "```cpp" and a line break anywhere in the text, then a body that does not start
// with "```" and ends, lazily, at the first "\n```" or at the end of the text (or before a last
// line break). Kept byte for byte so that a turn has a kernel here exactly where upstream's
// agent, analysis script and exporter saw one.
constexpr std::string_view kCppOpen = "```cpp\n";
constexpr std::string_view kFence = "```";

// Python's str.rstrip() and str.strip(), for ASCII white space (a kernel ending in a
// non-ASCII space is not worth the UTF-8 decoding).
constexpr std::string_view kPythonSpace = " \t\n\v\f\r\x1c\x1d\x1e\x1f";
std::string PythonRstrip(const std::string& s) {
  size_t end = s.find_last_not_of(kPythonSpace);
  return end == std::string::npos ? "" : s.substr(0, end + 1);
}

// Where a body starting at `from` ends: the first "\n```", else the text's end (before a
// final line break, as Python's "$" matches there too).
size_t CppBodyEnd(const std::string& s, size_t from) {
  size_t fence = s.find("\n```", from);
  if (fence != std::string::npos) return fence;
  bool final_newline = !s.empty() && s.back() == '\n' && s.size() - 1 >= from;
  return final_newline ? s.size() - 1 : s.size();
}

// The bodies of every ```cpp block, in order.
std::vector<std::string> CppBlocks(const std::string& s) {
  std::vector<std::string> bodies;
  size_t at = s.find(kCppOpen);
  while (at != std::string::npos) {
    size_t body = at + kCppOpen.size();
    if (s.compare(body, kFence.size(), kFence) == 0) {  // "```cpp\n```": no block starts here
      at = s.find(kCppOpen, at + 1);
      continue;
    }
    size_t end = CppBodyEnd(s, body);
    bodies.push_back(s.substr(body, end - body));
    at = s.find(kCppOpen, end);
  }
  return bodies;
}

bool Has(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// Upstream's _is_cuda_code: a binding (torch's or TVM-FFI's) and some sign of device code.
bool LooksLikeUpstreamCuda(const std::string& code) {
  bool binding = Has(code, "PYBIND11_MODULE") || Has(code, "torch/extension.h") ||
                 Has(code, "torch::extension.h") || Has(code, "TVM_FFI_DLL_EXPORT_TYPED_FUNC");
  bool device =
      (Has(code, "<<<") && Has(code, ">>>")) || Has(code, "__global__") || Has(code, "TensorView");
  return binding && device;
}

// One assistant message of an upstream trajectory, in order: upstream's turn N is the N-th.
struct AssistantMessage {
  std::string text;                 // as we replay it (a list of parts joined)
  std::string code;                 // what upstream extracts from it; "" for none
  std::optional<json> observation;  // the extra of the user message that answered it
};

struct UpstreamMessages {
  std::string system, task;
  std::vector<AssistantMessage> replies;
};

// Messages: system, task, then assistant/observation pairs (the exit message, if any, last).
UpstreamMessages ParseMessages(const json& messages) {
  UpstreamMessages out;
  for (const auto& m : messages) {
    if (!m.is_object()) continue;
    std::string role = m.value("role", "");
    if (role == "system" && out.system.empty() && out.replies.empty()) {
      out.system = TextOf(m);
    } else if (role == "user" && out.replies.empty() && out.task.empty()) {
      out.task = TextOf(m);
    } else if (role == "assistant") {
      // Upstream extracts from a string content only (a list of parts gives it no kernel).
      const json* content = m.contains("content") ? &m["content"] : nullptr;
      std::string raw = content && content->is_string() ? content->get<std::string>() : "";
      out.replies.push_back({TextOf(m), UpstreamKernelOf(raw), std::nullopt});
    } else if (role == "user" && !out.replies.empty() && !out.replies.back().observation) {
      out.replies.back().observation =
          m.contains("extra") && m["extra"].is_object() ? m["extra"] : json::object();
    }
  }
  return out;
}

// kernels/<id>/kernel_t<N>.cu by N; empty when there is no such folder.
std::map<int, std::string> KernelFiles(const std::string& dir) {
  std::map<int, std::string> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::smatch m;
    std::string name = e.path().filename().string();
    // A link is never followed: the kernel's text goes into the trajectory and its records,
    // so a folder from elsewhere must not be able to pull another file in (a key, a password).
    if (!e.is_symlink() && e.is_regular_file() && std::regex_match(name, m, kKernelFile))
      files[std::stoi(m[1].str())] = fs::absolute(e.path()).lexically_normal().string();
  }
  return files;
}

// Every kernel file must be the kernel of the assistant message of its number: one that is
// not was numbered otherwise (from 1, or by kernels only), and pairing it would give each
// kernel another turn's verdict.
void CheckKernelNumbering(const std::map<int, std::string>& files,
                          const std::vector<AssistantMessage>& replies) {
  for (const auto& [n, path] : files) {
    if (n >= static_cast<int>(replies.size()))
      throw InputError(path + " has no assistant message " + std::to_string(n) +
                       " (upstream numbers turns from 0, one per assistant message)");
    if (replies[n].code.empty())
      throw InputError(path + ": assistant message " + std::to_string(n) +
                       " has no ```cpp block for it to come from (upstream numbers turns from "
                       "0, one per assistant message): not numbered as upstream numbers them");
  }
}

// The turns: each answered assistant message, its kernel from its file where there is one,
// else from the message.
std::vector<UpstreamTurn> ReadTurns(const std::vector<AssistantMessage>& replies,
                                    const std::string& kernels_dir) {
  std::map<int, std::string> files = KernelFiles(kernels_dir);
  CheckKernelNumbering(files, replies);
  std::vector<UpstreamTurn> turns;
  for (size_t n = 0; n < replies.size(); ++n) {
    const AssistantMessage& a = replies[n];
    if (!a.observation) {
      // Only the last can be unanswered (the run broke off there): upstream never judged it.
      if (n + 1 < replies.size())
        throw InputError("assistant message " + std::to_string(n) +
                         " has no observation, yet more follow");
      break;
    }
    UpstreamTurn u;
    u.upstream_turn = static_cast<int>(n);
    u.turn = u.upstream_turn + 1;
    u.reply = a.text;
    u.verdict = *a.observation;
    auto file = files.find(u.upstream_turn);
    if (file != files.end()) {
      u.kernel = file->second;
      u.kernel_from = "kernels";
      u.code = ReadFile(u.kernel);
    } else if (!a.code.empty()) {
      u.kernel_from = "message";
      u.code = a.code;
    }
    turns.push_back(std::move(u));
  }
  if (turns.empty()) throw InputError("no assistant message with an observation");
  return turns;
}

UpstreamTrajectory ReadTrajectory(const std::string& folder, const std::string& id,
                                  const Catalog& catalog, const std::string& task) {
  std::string path = folder + "/trajectories/" + id + ".json";
  const json j = ParseBoundedJson(ReadFile(path), "");  // the caller names the file
  if (!IsMiniSweAgent(j)) throw InputError("not a mini-swe-agent trajectory");
  UpstreamTrajectory t;
  t.id = id;
  const json& info = j.contains("info") && j["info"].is_object() ? j["info"] : json::object();
  if (info.contains("config") && info["config"].is_object()) {
    const json& c = info["config"];
    if (c.contains("model") && c["model"].is_object()) t.model = c["model"].value("model_name", "");
  }
  t.exit_status = info.value("exit_status", "");

  UpstreamMessages m = ParseMessages(j["messages"]);
  if (!m.system.empty() && !m.task.empty()) t.seed = {{"system", m.system}, {"user", m.task}};
  std::string why;
  t.task = task.empty() ? FindTask(j, m.task, catalog, &why) : task;
  if (t.task.empty()) throw InputError(why);
  catalog.Find(t.task);  // throws InputError naming the closest
  t.turns = ReadTurns(m.replies, folder + "/kernels/" + id);
  return t;
}

// A fence longer than any run of backticks in `code`, so that the kernel cannot close it.
std::string FenceFor(const std::string& code) {
  size_t longest = 0, run = 0;
  for (char c : code) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return std::string(std::max<size_t>(3, longest + 1), '`');
}

// Every line of `text` quoted ("> "): a fenced block inside is no longer one.
std::string Quoted(const std::string& text) {
  std::string out = "> ";
  for (char c : text) {
    out += c;
    if (c == '\n') out += "> ";
  }
  return out;
}

// What the replay answers for a turn. A turn with a kernel: the reply, then the kernel in a
// fenced block (the last block, which our extractor takes). A turn without: the reply alone,
// quoted where our extractor would find a kernel in it (a ```cuda block, say) that upstream's
// did not, so that it stays the extraction error upstream judged it.
std::string ReplayText(const UpstreamTurn& u) {
  if (u.HasKernel()) {
    std::string fence = FenceFor(u.code);
    std::string code = u.code.back() == '\n' ? u.code : u.code + "\n";
    return u.reply + "\n\n" + fence + "cuda\n" + code + fence + "\n";
  }
  if (u.reply.empty())
    return "(upstream turn " + std::to_string(u.upstream_turn) + ": an empty reply)";
  return ExtractKernel(u.reply).found ? Quoted(u.reply) : u.reply;
}

}  // namespace

bool IsUpstreamExperiment(const std::string& path) {
  if (!fs::is_directory(path + "/trajectories") || FileExists(path + "/run.json")) return false;
  for (const auto& e : fs::directory_iterator(path + "/trajectories")) {
    std::string name = e.path().filename().string();
    if (!e.is_regular_file() || !std::regex_match(name, kTrajectoryFile)) continue;
    try {
      if (IsMiniSweAgent(ParseBoundedJsonOrDiscarded(ReadFile(e.path().string())))) return true;
    } catch (const std::exception&) {
    }
  }
  return false;
}

UpstreamExperiment ReadUpstreamExperiment(const std::string& folder, const Catalog& catalog,
                                          const std::string& task) {
  UpstreamExperiment e;
  e.folder = folder;
  if (!fs::is_directory(folder + "/trajectories"))
    throw InputError(folder + ": not an upstream experiment folder (no trajectories/)");
  std::vector<std::string> ids;
  for (const auto& f : fs::directory_iterator(folder + "/trajectories")) {
    std::string name = f.path().filename().string();
    if (f.is_symlink() || !f.is_regular_file() || !std::regex_match(name, kTrajectoryFile))
      continue;
    ids.push_back(name.substr(0, name.size() - 5));
  }
  std::sort(ids.begin(), ids.end());
  for (const std::string& id : ids) {
    try {
      e.trajectories.push_back(ReadTrajectory(folder, id, catalog, task));
    } catch (const std::exception& ex) {
      e.problems.push_back({folder + "/trajectories/" + id + ".json", ex.what()});
    }
  }
  if (e.trajectories.empty()) {
    std::string why = e.problems.empty() ? "no trajectories/exp_*.json"
                                         : e.problems[0].path + ": " + e.problems[0].message;
    throw InputError(folder + ": no usable upstream trajectory (" + why + ")");
  }
  return e;
}

std::string UpstreamKernelOf(const std::string& reply) {
  std::vector<std::string> blocks = CppBlocks(reply);
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    std::string code = PythonRstrip(*it);
    if (!code.empty() && LooksLikeUpstreamCuda(code)) return code;
  }
  // None looks like a kernel: upstream takes the last block all the same, blank or not.
  return blocks.empty() ? "" : PythonRstrip(blocks.back());
}

json UpstreamRunInfo(const UpstreamExperiment& e) {
  json trajectories = json::object();
  for (const auto& t : e.trajectories) {
    json turns = json::array();
    for (const auto& u : t.turns)
      turns.push_back({{"turn", u.turn},
                       {"upstream_turn", u.upstream_turn},
                       {"kernel", u.kernel},
                       {"kernel_from", u.kernel_from},
                       {"upstream_verdict", u.verdict}});
    trajectories[t.id] = {{"task", t.task},
                          {"model", t.model},
                          {"exit_status", t.exit_status},
                          {"seeded_with_upstream_prompt", !t.seed.empty()},
                          {"turns", turns}};
  }
  json problems = json::array();
  for (const auto& p : e.problems) problems.push_back({{"path", p.path}, {"message", p.message}});
  return {{"folder", fs::absolute(e.folder).lexically_normal().string()},
          {"trajectories", trajectories},
          {"left_out", problems}};
}

UpstreamReplayProvider::UpstreamReplayProvider(const UpstreamExperiment& e) : folder_(e.folder) {
  for (const auto& t : e.trajectories) {
    auto& replies = replies_[t.id];
    for (const auto& u : t.turns) replies.push_back(ReplayText(u));
  }
}

ChatReply UpstreamReplayProvider::Complete(const std::vector<ChatMessage>& messages) {
  return CompleteFor("", messages);
}

ChatReply UpstreamReplayProvider::CompleteFor(const std::string& trajectory_id,
                                              const std::vector<ChatMessage>& messages) {
  ChatReply r;
  r.attempts = 1;
  r.finish_reason = "stop";
  // The loop's id is "<upstream id>-<k>".
  std::string id = trajectory_id.substr(0, trajectory_id.rfind('-'));
  auto it = replies_.find(id);
  // The k-th assistant message after the seed is upstream's turn k (the seed has none).
  size_t turn = 0;
  for (const auto& m : messages) turn += m.role == "assistant";
  if (it == replies_.end() || turn >= it->second.size()) {
    // Not upstream's: a configuration error of ours, never a verdict on the kernel.
    r.outcome = ChatOutcome::kInfraError;
    r.error = "the upstream replay has no reply for " + trajectory_id + " turn " +
              std::to_string(turn + 1);
    return r;
  }
  r.text = it->second[turn];
  r.usage = EstimatedReplayUsage(messages, r.text);
  return r;
}

std::string UpstreamReplayProvider::Describe() const {
  return "replay of upstream experiment " + folder_;
}

}  // namespace ptxbench
