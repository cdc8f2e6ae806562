// `ptxbench run [--model NAME] --task T [...]`: the agent loop (agent/loop.h). With no model
// named it replays the bundled trajectory (agent/replay/default.json) on its task.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "agent/coding_agent.h"
#include "agent/loop.h"
#include "agent/model_config.h"
#include "agent/pack.h"
#include "agent/prompt.h"
#include "agent/provider.h"
#include "agent/replay.h"
#include "agent/run_identity.h"
#include "agent/upstream.h"
#include "cli/commands.h"
#include "cli/option_checks.h"
#include "cli/shared_options.h"
#include "common/bounded_json.h"
#include "common/error.h"
#include "common/files.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "common/version.h"
#include "compile/nvcc.h"
#include "serve/evaluator_choice.h"
#include "store/store_follower.h"

namespace ptxbench {
namespace {

// Ctrl-C on a run: the first stops it starting turns (those in flight finish and are saved:
// the evaluation children have process groups of their own, so the terminal's SIGINT does not
// reach them), the second stops it at once. Either way the run folder is resumable, and the
// terminal says how.
std::atomic<bool> g_stop_requested{false};
std::atomic<int> g_interrupts{0};
char g_first_notice[1024], g_second_notice[1024];

void OnInterrupt(int) {
  // Only async-signal-safe calls here: write(2) and _exit(2).
  g_stop_requested.store(true);
  if (g_interrupts.fetch_add(1) == 0) {
    ssize_t ignored = ::write(2, g_first_notice, std::strlen(g_first_notice));
    (void)ignored;
    return;
  }
  ssize_t ignored = ::write(2, g_second_notice, std::strlen(g_second_notice));
  (void)ignored;
  ::_exit(130);
}

void StopOnInterrupt(const std::string& run_dir) {
  std::snprintf(g_first_notice, sizeof g_first_notice,
                "\nrun: stopping: no new turns; the turns in flight finish and are saved (Ctrl-C "
                "again stops now). Continue later with: ptxbench run --resume --out %s\n",
                run_dir.c_str());
  std::snprintf(g_second_notice, sizeof g_second_notice,
                "\nrun: stopped now; finished turns are kept in %s. Continue with: ptxbench run "
                "--resume --out %s\n",
                run_dir.c_str(), run_dir.c_str());
  struct sigaction sa = {};
  sa.sa_handler = OnInterrupt;
  // Restarted, not failed: a read or wait in flight (an evaluation's) carries on as if nothing
  // had happened.
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
}

using nlohmann::json;

std::string Stamp() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::gmtime(&now));
  return buf;
}

// A replay file named relatively: as given when it exists (the caller's folder), else in the
// source tree (models.json names agent/replay/default.json that way).
std::string ResolveReplayFile(const std::string& file) {
  if (file.empty() || file[0] == '/' || FileExists(file)) return file;
  std::string in_tree = std::string(PTXBENCH_SOURCE_DIR) + "/" + file;
  return FileExists(in_tree) ? in_tree : file;
}

// What run.json records of the pack: the variant, the exact text's hash and size, and
// whether the pack was proven on the chip (a report marks runs with unproven packs).
json PackInfo(const std::string& arch, const std::string& variant, const std::string& text) {
  json j = {{"variant", variant}, {"characters", text.size()}, {"sha256", Sha256Hex(text)}};
  if (variant != "none")
    j["hardware_verified"] = LoadPackManifest(DefaultPacksDir(), arch).hardware_verified;
  return j;
}

// The evaluation options of `run` that go into run.json and to an evaluation service.
const std::vector<std::string> kRunEvaluationKeys = {"sanitize", "timeout", "timing",
                                                     "timing_budget", "baseline"};

// The options a command line gave: a --resume takes the others from run.json.
struct GivenOptions {
  std::set<std::string> names;               // "--turns", "--task", ...
  std::vector<std::string> evaluation_keys;  // the evaluation options', by JSON key ("timeout")
};

// The options of `run` that a --resume may take back from run.json (the evaluation options
// come back by their JSON keys, kRunEvaluationKeys). Not --db, --quiet, --evaluator: they say
// where the results also go, what the terminal shows and which machine judges now, not what the
// run is; and a service gone since could not be left out again (no option says "local GPU").
const char* const kRecordedOptions[] = {"--model",          "--models",       "--replay",
                                        "--upstream",       "--task",         "--agent-command",
                                        "--agent-name",     "--agent-wall",   "--agent-tokens",
                                        "--agent-read",     "--agent-write",  "--agent-unconfined",
                                        "--workload",       "--trajectories", "--turns",
                                        "--target-speedup", "--arch",         "--pack",
                                        "--context",        "--concurrency",  "--tasks-dir"};

struct RunOptions {
  std::string model, models_file, workload, arch = "sm_90a", pack, out, context = "full";
  std::string tasks_dir, replay_file, db, evaluator, upstream;
  std::string agent_command, agent_name;  // a coding agent (agent/coding_agent.h)
  double agent_wall = 3600;
  int64_t agent_tokens = 0;
  AgentConfinement agent_confinement;
  bool agent_unconfined = false;
  std::vector<std::string> tasks;
  int trajectories = 1, turns = 0, concurrency = 4;
  double target_speedup = 0;
  EvaluationOptions evaluation;
  bool resume = false, overwrite = false, quiet = false;
  // Set by the command line (RejudgeUpstream sets every option itself): what it gave.
  std::optional<GivenOptions> given;
};

int RunWith(RunOptions* o);

}  // namespace

CommandRunner AddRunCommand(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run", "The agent loop: a model writes kernels, reads the evaluations, tries again");
  cmd->add_option("--model", o->model,
                  "A model of the models file (default: replay the bundled trajectory)");
  AddModelsFileOption(cmd, &o->models_file);
  cmd->add_option("--replay", o->replay_file, "Replay this trajectory file instead of a model");
  cmd->add_option("--upstream", o->upstream,
                  "Judge an upstream PTXBench experiment folder again: replay each of its "
                  "trajectories (trajectories/exp_*.json, kernels/exp_*/kernel_t<N>.cu) turn by "
                  "turn through our layers")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--agent-command", o->agent_command,
                  "A coding agent writes the kernels: this command (run by /bin/sh in each "
                  "trajectory's workspace) launches it; its MCP tool evaluate_kernel is a turn "
                  "(README: Coding agents)");
  cmd->add_option("--agent-name", o->agent_name,
                  "The coding agent's name in reports (default: the command's first word)");
  cmd->add_option("--agent-wall", o->agent_wall,
                  "Wall-time budget of one trajectory's agent, seconds")
      ->check(CLI::Range(1.0, 7 * 86400.0))
      ->capture_default_str();
  cmd->add_option("--agent-tokens", o->agent_tokens,
                  "Token budget of one trajectory's agent, as its CLI reports usage in its "
                  "output (codex exec --json, claude --output-format stream-json); 0: none")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 50))
      ->capture_default_str();
  cmd->add_option("--agent-read", o->agent_confinement.read_paths,
                  "A folder or file the coding agent may read besides the system and its "
                  "workspace (repeatable; e.g. where its CLI keeps its login)");
  cmd->add_option("--agent-write", o->agent_confinement.write_paths,
                  "A folder the coding agent may write besides its workspace (repeatable)");
  cmd->add_flag("--agent-unconfined", o->agent_unconfined,
                "Run the coding agent with the user's full access (recorded in the run's "
                "identity); by default Landlock keeps it to its workspace and the system");
  cmd->add_option("--task", o->tasks, "Task definitions (repeatable; default: the replay's)");
  cmd->add_option("--workload", o->workload, "Workload (default: each task's headline)");
  AddRangeOption(cmd, "--trajectories", &o->trajectories, "Trajectories per task", 1, 10000);
  cmd->add_option("--turns", o->turns, "Turn limit (default 8; a replay: its length)")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--target-speedup", o->target_speedup,
                  "Stop a trajectory at a correct kernel this much faster than the baseline")
      ->check(GreaterThanZero());
  AddArchOption(cmd, &o->arch);
  cmd->add_option(
      "--pack", o->pack,
      "Knowledge pack variant: none, base, base+gemm, base+attention-fwd, base+attention-bwd, full "
      "(default: full for a model, none for a replay; `ptxbench pack list`)");
  cmd->add_option("--context", o->context, "History sent to the model: full or condensed")
      ->check(CLI::IsMember({"full", "condensed"}))
      ->capture_default_str();
  AddRangeOption(cmd, "--concurrency", &o->concurrency, "Trajectories in flight", 1, 1024);
  cmd->add_option("--out", o->out, "Run folder (default runs/<time>-<model>)");
  cmd->add_flag("--resume", o->resume,
                "Continue the run in --out with the options its run.json recorded (any given "
                "again must match): finished turns are kept");
  cmd->add_flag("--overwrite", o->overwrite, "Replace the run in --out (without it, refused)")
      ->excludes(cmd->get_option("--resume"));
  DeclaredEvaluationOptions evaluation =
      AddEvaluationOptions(cmd, &o->evaluation, EvaluationOptionSet::kAgent);
  AddTasksDirOption(cmd, &o->tasks_dir);
  cmd->add_flag("--quiet", o->quiet, "No progress lines");
  AddStoreOption(cmd, &o->db, "Also write every turn to this results store ($PTXBENCH_DB)",
                 StoreSource::kEnvironment);
  cmd->add_option("--evaluator", o->evaluator,
                  "Send the evaluations to this service (http://host:port, `ptxbench serve`) "
                  "instead of the local GPU")
      ->check(ServiceUrl());

  return [o, cmd, evaluation]() {
    o->given.emplace();
    for (const char* name : kRecordedOptions)
      if (cmd->count(name) > 0) o->given->names.insert(name);
    o->given->evaluation_keys = evaluation.GivenKeys();
    return RunWith(o.get());
  };
}

int RejudgeUpstream(const UpstreamRejudge& r) {
  RunOptions o;
  o.upstream = r.folder;
  o.out = r.out;
  o.db = r.db;
  o.tasks_dir = r.tasks_dir;
  o.quiet = r.quiet;
  // Again into the same folder: what was judged before is kept (idempotent, as import is).
  o.resume = FileExists(r.out + "/run.json");
  return RunWith(&o);
}

namespace {

// --- `--resume --out DIR` alone: the run's options back from DIR/run.json ---

bool Given(const RunOptions& o, const char* option) { return o.given->names.count(option) > 0; }

// One option back from run.json's `key`, unless the command line gave it (then the identity
// check compares the two).
template <typename T>
void Recorded(const json& run, const char* key, const RunOptions& o, const char* option, T* value) {
  if (!Given(o, option) && run.contains(key) && !run.at(key).is_null())
    *value = run.at(key).get<T>();
}

// Who wrote the run's kernels, from run.json's "model", when no --model, --replay or --upstream
// is given: upstream's folder, a replayed file, or a model of the models file.
void RecordedAuthor(const json& run, RunOptions* o) {
  if (Given(*o, "--model") || Given(*o, "--replay") || Given(*o, "--upstream") ||
      Given(*o, "--agent-command"))
    return;
  const json model = run.value("model", json());
  if (!model.is_object() || !model.contains("name")) return;
  const std::string provider = model.value("provider", "");
  if (provider == "coding-agent") {
    o->agent_command = model.at("command").get<std::string>();
    o->agent_name = model.at("name").get<std::string>();
    o->agent_wall = model.at("wall_seconds").get<double>();
    o->agent_tokens = model.value("token_budget", int64_t{0});
    // Given again, they are compared with the recorded ones (the run's identity), not replaced.
    if (!Given(*o, "--agent-read") && !Given(*o, "--agent-write") &&
        !Given(*o, "--agent-unconfined")) {
      o->agent_confinement = AgentConfinementFromJson(model.value("confinement", json()));
      o->agent_unconfined = !o->agent_confinement.confined;
    }
    return;
  }
  if (provider == "upstream-replay")
    o->upstream = model.at("folder").get<std::string>();
  else if (provider == "replay" && model.at("name") == "replay")
    o->replay_file = model.at("file").get<std::string>();
  else
    o->model = model.at("name").get<std::string>();
  Recorded(run, "models_file", *o, "--models", &o->models_file);
}

// The tasks: as recorded, except for a rejudged upstream experiment, whose trajectories name
// their own (its --task only names one for those that name none: the one recorded, if one).
void RecordedTasks(const json& run, RunOptions* o) {
  if (Given(*o, "--task") || !run.contains("tasks")) return;
  auto tasks = run.at("tasks").get<std::vector<std::string>>();
  if (o->upstream.empty() || tasks.size() == 1) o->tasks = tasks;
}

// The evaluation options not given, as run.json has them (checked as a service checks them).
void RecordedEvaluationOptions(const json& run, RunOptions* o) {
  const auto& given = o->given->evaluation_keys;
  json recorded = json::object();
  for (const std::string& key : kRunEvaluationKeys)
    if (run.contains(key) && std::find(given.begin(), given.end(), key) == given.end())
      recorded[key] = run.at(key);
  // Plain "flashinfer" now means the default release; in a run.json it meant the one of then.
  if (recorded.value("baseline", json()) == "flashinfer")
    recorded["baseline"] = kLegacyFlashInferBaseline;
  ApplyEvaluationOptionsJson(recorded, &o->evaluation);
}

// A --resume from the command line: every option it does not give comes back from run.json,
// so `ptxbench run --resume --out DIR` continues the run as it was started. Those it gives
// stay, and must match (the loop refuses another run, naming the field). Without run.json,
// nothing: PrepareRunFolder says there is nothing to resume.
void ReloadRecordedOptions(RunOptions* o) {
  if (!o->resume || !o->given || o->out.empty()) return;
  const std::string file = o->out + "/run.json";
  if (!FileExists(file)) return;
  json run = ParseBoundedJson(ReadFile(file), file);
  if (!run.is_object()) throw InputError(file + ": not a run's record (not a JSON object)");
  try {
    RecordedAuthor(run, o);
    RecordedTasks(run, o);
    Recorded(run, "workload", *o, "--workload", &o->workload);
    Recorded(run, "trajectories", *o, "--trajectories", &o->trajectories);
    Recorded(run, "turns", *o, "--turns", &o->turns);
    Recorded(run, "target_speedup", *o, "--target-speedup", &o->target_speedup);
    Recorded(run, "arch", *o, "--arch", &o->arch);
    Recorded(run, "pack", *o, "--pack", &o->pack);
    Recorded(run, "context", *o, "--context", &o->context);
    Recorded(run, "concurrency", *o, "--concurrency", &o->concurrency);
    Recorded(run, "tasks_dir", *o, "--tasks-dir", &o->tasks_dir);
    RecordedEvaluationOptions(run, o);
  } catch (const json::exception& e) {
    throw InputError(file + ": cannot take the run's options back from it: " + e.what());
  } catch (const Error& e) {
    throw InputError(file + ": cannot take the run's options back from it: " + e.what());
  }
}

// Who writes the kernels of a run: a model's endpoint, a replayed trajectory, or an upstream
// experiment replayed turn by turn; and what run.json says about it.
struct RunAuthor {
  std::unique_ptr<ChatProvider> provider;
  json model_info;
  std::string model_name;
  std::string default_task;  // a replay's own task, used when --task is not given
  std::string models_file;   // a model of a models file: the file (a --resume reads it again)
  bool replay = false;       // a replay reads no prompt: no pack by default
  std::optional<UpstreamExperiment> upstream;
};

// `--upstream FOLDER`: upstream's replies, each trajectory once, on the tasks they name.
RunAuthor UpstreamAuthor(RunOptions* o, const Catalog& catalog) {
  if (!o->model.empty() || !o->replay_file.empty())
    throw UsageError("--upstream replays upstream's replies: no --model or --replay with it");
  if (o->tasks.size() > 1 || o->trajectories != 1)
    throw UsageError(
        "--upstream runs each upstream trajectory once; --task names the task only for "
        "trajectories that name none");
  RunAuthor r;
  r.replay = true;
  r.upstream = ReadUpstreamExperiment(o->upstream, catalog, o->tasks.empty() ? "" : o->tasks[0]);
  const UpstreamExperiment& up = *r.upstream;
  for (const auto& p : up.problems)
    std::fprintf(stderr, "run: left out %s: %s\n", p.path.c_str(), p.message.c_str());
  r.provider = std::make_unique<UpstreamReplayProvider>(up);
  // Reports group runs by model: an experiment of one model is shown under that model's
  // name (marked as upstream's), one of several or none under "upstream".
  std::set<std::string> models;
  for (const auto& t : up.trajectories)
    if (!t.model.empty()) models.insert(t.model);
  r.model_name = models.size() == 1 ? "upstream:" + *models.begin() : "upstream";
  r.model_info = {{"name", r.model_name},
                  {"provider", "upstream-replay"},
                  {"upstream_models", models},
                  {"folder", std::filesystem::absolute(o->upstream).lexically_normal().string()}};
  size_t most = 0;
  for (const auto& t : up.trajectories) most = std::max(most, t.turns.size());
  // --turns caps each trajectory; without it each runs as many turns as upstream's had.
  if (o->turns == 0) o->turns = static_cast<int>(std::min<size_t>(most, 100));
  o->tasks.clear();
  for (const auto& t : up.trajectories)
    if (std::find(o->tasks.begin(), o->tasks.end(), t.task) == o->tasks.end())
      o->tasks.push_back(t.task);
  return r;
}

// No model named: `--replay FILE`, or the bundled trajectory.
RunAuthor ReplayAuthor(RunOptions* o) {
  RunAuthor r;
  r.replay = true;
  std::string file =
      o->replay_file.empty() ? DefaultReplayFile() : ResolveReplayFile(o->replay_file);
  auto replay = ReplayProvider::Load(file, PTXBENCH_SOURCE_DIR);
  r.default_task = replay->task();
  if (o->turns == 0) o->turns = static_cast<int>(replay->turns());
  r.model_info = {{"name", "replay"}, {"provider", "replay"}, {"file", file}};
  r.model_name = "replay";
  r.provider = std::move(replay);
  return r;
}

// `--model NAME` of the models file: its endpoint, or the replay the file names for it.
RunAuthor ModelAuthor(RunOptions* o) {
  std::string file = o->models_file.empty()
                         ? std::string(PTXBENCH_SOURCE_DIR) + "/agent/models.json"
                         : o->models_file;
  std::vector<ModelConfig> models = LoadModelConfigs(file);
  const ModelConfig* m = nullptr;
  for (const auto& c : models)
    if (c.name == o->model) m = &c;
  if (!m)
    throw UsageError("no model '" + o->model + "' in " + file +
                     (o->resume ? " (resuming: --models names the models file that has it)" : ""));
  RunAuthor r;
  r.models_file = std::filesystem::absolute(file).lexically_normal().string();
  if (m->provider == "replay") {
    auto replay = ReplayProvider::Load(ResolveReplayFile(m->file), PTXBENCH_SOURCE_DIR);
    r.default_task = replay->task();
    if (o->turns == 0) o->turns = static_cast<int>(replay->turns());
    r.provider = std::move(replay);
    r.replay = true;
  } else {
    ModelConfig config = *m;
    // The endpoint's 429s and 5xx on the terminal as they happen, not only in the record.
    if (!o->quiet)
      config.on_retry = [](const std::string& line) {
        std::fprintf(stderr, "model %s\n", line.c_str());
      };
    r.provider = MakeHttpProvider(config);
  }
  r.model_info = PublicModelJson(*m);
  r.model_name = m->name;
  return r;
}

// `--agent-command CMD`: a coding agent; its provider is made once the run folder is known
// (AgentFor).
RunAuthor CodingAgentAuthor(RunOptions* o) {
  if (!o->model.empty() || !o->replay_file.empty() || !o->upstream.empty())
    throw UsageError(
        "--agent-command: the coding agent writes the kernels; no --model, --replay "
        "or --upstream with it");
  if (o->agent_name.empty()) {
    const std::string first = Split(Trim(o->agent_command), ' ').front();
    o->agent_name = std::filesystem::path(first).filename().string();
  }
  AgentConfinement& c = o->agent_confinement;
  c.confined = !o->agent_unconfined;
  for (auto* paths : {&c.read_paths, &c.write_paths})
    for (std::string& p : *paths) p = std::filesystem::absolute(p).lexically_normal().string();
  RunAuthor r;
  r.model_name = o->agent_name;
  // The command, the budget and what the agent may touch decide the turns: they are the run's
  // identity.
  r.model_info = {{"name", o->agent_name},           {"provider", "coding-agent"},
                  {"command", o->agent_command},     {"wall_seconds", o->agent_wall},
                  {"token_budget", o->agent_tokens}, {"confinement", ToJson(c)}};
  return r;
}

std::unique_ptr<ChatProvider> AgentFor(const RunOptions& o, const AgentOptions& a) {
  CodingAgentOptions c;
  c.command = o.agent_command;
  c.name = o.agent_name;
  c.run_dir = std::filesystem::absolute(a.run_dir).lexically_normal().string();
  c.evaluations = a.turns;
  c.wall_seconds = o.agent_wall;
  c.token_budget = o.agent_tokens;
  c.ptxbench = SelfExecutable();
  c.arch = o.arch;
  c.confinement = o.agent_confinement;
  c.stop = a.stop_requested;  // Ctrl-C: an agent's turn does not wait for its wall time
  // A path that would open the run folder is the command line's mistake: said now, before any
  // trajectory starts, not as each one's infra failure.
  AgentSandboxPolicy(c.confinement, c.run_dir, c.run_dir + "/workspaces/any", c.ptxbench);
  return std::make_unique<CodingAgentProvider>(c);
}

RunAuthor ChooseAuthor(RunOptions* o, const Catalog& catalog) {
  if (!o->model.empty() && !o->replay_file.empty())
    throw UsageError("--model and --replay exclude each other");
  if (!o->agent_command.empty()) return CodingAgentAuthor(o);
  if (!o->upstream.empty()) return UpstreamAuthor(o, catalog);
  if (o->model.empty()) return ReplayAuthor(o);
  return ModelAuthor(o);
}

// The checks that need the author (its turn count, its task) or that a caller other than the
// command line (RejudgeUpstream) could get wrong; CLI11 checked the rest at parse time.
// Returns the pack variant to load.
std::string ValidateRunOptions(RunOptions* o, const RunAuthor& author) {
  if (o->turns == 0) o->turns = 8;
  if (o->turns < 1 || o->turns > 100) throw UsageError("--turns must be between 1 and 100");
  if (o->trajectories < 1 || o->trajectories > 10000)
    throw UsageError("--trajectories must be between 1 and 10000");
  if (o->concurrency < 1 || o->concurrency > 1024)
    throw UsageError("--concurrency must be between 1 and 1024");
  if (o->context != "full" && o->context != "condensed")
    throw UsageError("unknown --context '" + o->context + "' (full or condensed)");
  RequireSupportedArch(o->arch);
  std::string pack = o->pack.empty() ? (author.replay ? "none" : "full") : o->pack;
  if (o->tasks.empty() && !author.default_task.empty()) o->tasks.push_back(author.default_task);
  if (o->tasks.empty()) throw UsageError("--task is required");
  if (o->resume && o->out.empty()) throw UsageError("--resume needs --out (the run to continue)");
  if (o->evaluator.empty()) FindNvcc("");  // a remote evaluator needs no compiler here
  return pack;
}

// The (task, workload) pairs: upstream's trajectories one by one (each with its own id, seed
// and turn count), else every --task on the chosen workload.
std::vector<RunTask> RunTasks(const RunOptions& o, const Catalog& catalog,
                              const std::optional<UpstreamExperiment>& upstream) {
  std::vector<RunTask> tasks;
  if (upstream) {
    for (const auto& t : upstream->trajectories) {
      const Definition& d = catalog.Find(t.task);
      RunTask rt{&d, o.workload.empty() ? &d.DefaultWorkload() : &d.FindWorkload(o.workload), t.id,
                 t.seed};
      rt.turns = std::min(static_cast<int>(t.turns.size()), o.turns);
      tasks.push_back(rt);
    }
    return tasks;
  }
  for (const std::string& name : o.tasks) {
    const Definition& d = catalog.Find(name);
    tasks.push_back({&d, o.workload.empty() ? &d.DefaultWorkload() : &d.FindWorkload(o.workload)});
  }
  return tasks;
}

// The tasks folder the definitions come from, as one path however it was named (relative, or
// through a link): the same folder is the same source.
std::string TasksDir(const RunOptions& o) {
  std::error_code ec;
  std::string dir = o.tasks_dir.empty() ? Catalog::DefaultDir() : o.tasks_dir;
  std::filesystem::path canonical = std::filesystem::weakly_canonical(dir, ec);
  return ec ? std::filesystem::absolute(dir).lexically_normal().string() : canonical.string();
}

// Each definition and workload the run judges under (run_identity.h).
json RunDefinitions(const std::vector<RunTask>& tasks) {
  std::vector<std::pair<const Definition*, const Workload*>> used;
  for (const RunTask& t : tasks) used.push_back({t.definition, t.workload});
  return DefinitionsRecord(used);
}

// What run.json records: enough to compare runs, to refuse a --resume with other settings and
// to take a --resume's options back from.
json RunInfo(const RunOptions& o, const RunAuthor& author, const std::vector<RunTask>& tasks,
             const std::string& pack, const std::string& pack_text) {
  json info = {{"model", author.model_info},
               {"tasks", o.tasks},
               {"workload", o.workload},
               {"tasks_dir", TasksDir(o)},
               {"definitions", RunDefinitions(tasks)},
               {"trajectories", o.trajectories},
               {"turns", o.turns},
               {"target_speedup", o.target_speedup > 0 ? json(o.target_speedup) : json()},
               {"arch", o.arch},
               {"pack", pack},
               {"pack_info", PackInfo(o.arch, pack, pack_text)},
               {"context", o.context},
               {"concurrency", o.concurrency},
               {"ptxbench_version", PTXBENCH_VERSION},
               {"ptxbench_commit", PtxbenchCommit()}};
  info.update(EvaluationOptionsJson(o.evaluation, kRunEvaluationKeys));
  if (author.upstream) info["upstream"] = UpstreamRunInfo(*author.upstream);
  if (!author.models_file.empty()) info["models_file"] = author.models_file;
  return info;
}

// The agent loop's settings from the options; prepares (or checks, on --resume) the run folder.
AgentOptions AgentOptionsFor(const RunOptions& o, const Catalog& catalog, const RunAuthor& author,
                             const std::string& pack) {
  AgentOptions a;
  a.tasks = RunTasks(o, catalog, author.upstream);
  a.trajectories = o.trajectories;
  a.turns = o.turns;
  if (o.target_speedup > 0) a.target_speedup = o.target_speedup;
  a.arch = o.arch;
  a.pack_text = LoadPack(DefaultPacksDir(), o.arch, pack);
  a.prompts_dir = DefaultPromptsDir();
  a.context = o.context;
  a.concurrency = o.concurrency;
  a.resume = o.resume;
  a.progress = !o.quiet;
  a.run_dir = o.out.empty() ? "runs/" + Stamp() + "-" + author.model_name : o.out;
  PrepareRunFolder(a.run_dir, o.resume, o.overwrite);
  a.run_info = RunInfo(o, author, a.tasks, pack, a.pack_text);
  return a;
}

// The last line on standard output, and the exit code: 130 after Ctrl-C, 3 when trajectories
// were interrupted, else 0.
int ReportRun(const std::string& run_dir, const RunSummary& s) {
  std::printf(
      "run %s: %d trajectories (%d finished, %d interrupted), %d turns run, %d reused; "
      "correct in %d, verified in %d; agent overhead per turn max %.1f ms, mean %.1f ms\n",
      run_dir.c_str(), s.trajectories, s.finished, s.interrupted, s.turns_run, s.turns_reused,
      s.correct, s.verified, s.max_overhead_s * 1e3, s.mean_overhead_s * 1e3);
  if (g_stop_requested.load()) {
    std::printf("run %s: stopped by Ctrl-C; continue it with: ptxbench run --resume --out %s\n",
                run_dir.c_str(), run_dir.c_str());
    return 130;
  }
  return s.interrupted ? 3 : 0;
}

int RunWith(RunOptions* o) {
  ReloadRecordedOptions(o);
  Catalog catalog = Catalog::Load(o->tasks_dir.empty() ? Catalog::DefaultDir() : o->tasks_dir);
  RunAuthor author = ChooseAuthor(o, catalog);
  std::string pack = ValidateRunOptions(o, author);
  AgentOptions a = AgentOptionsFor(*o, catalog, author, pack);

  Evaluator evaluate =
      MakeEvaluator({o->arch, o->evaluation, kRunEvaluationKeys, /*service_url=*/o->evaluator});
  if (!o->evaluator.empty()) {
    a.run_info["evaluator"] = o->evaluator;
    // The service queues per GPU; one at a time from here would leave its GPUs idle.
    a.parallel_evaluations = o->concurrency;
  }
  // --db: the store follows the run folder turn by turn (store/store_follower.h).
  std::unique_ptr<StoreFollower> store;
  if (!o->db.empty()) {
    store = std::make_unique<StoreFollower>(o->db, a.run_dir, "run", o->resume, o->quiet);
    a.on_save = store->OnSave();
  }
  StopOnInterrupt(a.run_dir);
  a.stop_requested = &g_stop_requested;
  if (!o->agent_command.empty()) author.provider = AgentFor(*o, a);
  RunSummary s = RunAgent(a, *author.provider, evaluate);
  if (store) store->Converge();
  return ReportRun(a.run_dir, s);
}

}  // namespace
}  // namespace ptxbench
