#include "agent/upstream.h"

#include <algorithm>
#include <filesystem>
#include <regex>

#include "agent/content_text.h"
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

  // Messages: system, task, then assistant/observation pairs (the exit message, if any, last).
  std::vector<std::string> replies;
  std::vector<json> verdicts;
  std::string system, task_message;
  for (const auto& m : j["messages"]) {
    if (!m.is_object()) continue;
    std::string role = m.value("role", "");
    if (role == "system" && system.empty() && replies.empty()) {
      system = TextOf(m);
    } else if (role == "user" && replies.empty() && task_message.empty()) {
      task_message = TextOf(m);
    } else if (role == "assistant") {
      replies.push_back(TextOf(m));
      verdicts.push_back(json());
    } else if (role == "user" && !replies.empty() && verdicts.back().is_null()) {
      verdicts.back() = m.contains("extra") ? m["extra"] : json::object();
    }
  }
  if (!system.empty() && !task_message.empty())
    t.seed = {{"system", system}, {"user", task_message}};
  std::string why;
  t.task = task.empty() ? FindTask(j, task_message, catalog, &why) : task;
  if (t.task.empty()) throw InputError(why);
  catalog.Find(t.task);  // throws InputError naming the closest

  std::string kernels = folder + "/kernels/" + id;
  if (!fs::is_directory(kernels)) throw InputError("no kernels folder " + kernels);
  std::vector<std::pair<int, std::string>> files;
  for (const auto& e : fs::directory_iterator(kernels)) {
    std::smatch m;
    std::string name = e.path().filename().string();
    // A link is never followed: the kernel's text goes into the trajectory and its records,
    // so a folder from elsewhere must not be able to pull another file in (a key, a password).
    if (!e.is_symlink() && e.is_regular_file() && std::regex_match(name, m, kKernelFile))
      files.emplace_back(std::stoi(m[1].str()), fs::absolute(e.path()).lexically_normal().string());
  }
  if (files.empty()) throw InputError("no kernel_t<N>.cu in " + kernels);
  std::sort(files.begin(), files.end());
  // kernel_t0.cu, where upstream counts from 0, is the first assistant message too.
  int first = files.front().first;
  for (size_t k = 0; k < files.size(); ++k) {
    UpstreamTurn u;
    u.turn = static_cast<int>(k) + 1;
    u.upstream_turn = files[k].first;
    u.kernel = files[k].second;
    size_t message = static_cast<size_t>(files[k].first - (first == 0 ? 0 : 1));
    if (message < replies.size()) {
      u.reply = replies[message];
      u.verdict = verdicts[message];
    }
    t.turns.push_back(std::move(u));
  }
  return t;
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

json UpstreamRunInfo(const UpstreamExperiment& e) {
  json trajectories = json::object();
  for (const auto& t : e.trajectories) {
    json turns = json::array();
    for (const auto& u : t.turns)
      turns.push_back({{"turn", u.turn},
                       {"upstream_turn", u.upstream_turn},
                       {"kernel", u.kernel},
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
    for (const auto& u : t.turns) {
      std::string kernel = ReadFile(u.kernel);
      if (!kernel.empty() && kernel.back() != '\n') kernel += '\n';
      std::string head = u.reply.empty() ? "(upstream turn " + std::to_string(u.upstream_turn) +
                                               ": no assistant message in the trajectory)"
                                         : u.reply;
      replies.push_back(head + "\n\n```cuda\n" + kernel + "```\n");
    }
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
  // The first assistant message after the seed is turn 1 (the seed has no assistant message).
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
