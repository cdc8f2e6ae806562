// `ptxbench report`: the metrics of trajectories (from run folders; the store when given) as
// terminal tables, CSV, JSONL, the upstream per-turn layout and JSON, next to the published
// figures where model, arch, task and turn limit match.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/shared_options.h"
#include "common/error.h"
#include "common/files.h"
#include "common/strings.h"
#include "report/from_runs.h"
#include "report/html.h"
#include "report/metrics.h"
#include "report/tables.h"
#include "serve/job_queue.h"
#include "serve/service_dataset.h"
#ifdef PTXBENCH_HAVE_SQLITE
#include "store/store.h"
#endif

namespace ptxbench {
namespace {

std::vector<int> ParseInts(const std::string& list, const char* what) {
  std::vector<int> out;
  for (const std::string& s : Split(list, ',')) {
    try {
      size_t used = 0;
      int v = std::stoi(Trim(s), &used);
      if (used != Trim(s).size() || v < 1) throw std::invalid_argument(s);
      out.push_back(v);
    } catch (const std::exception&) {
      throw UsageError(std::string("malformed ") + what + " '" + list +
                       "' (positive integers separated by commas)");
    }
  }
  return out;
}

bool Keep(const TrajectoryRow& t, const std::vector<std::string>& models,
          const std::vector<std::string>& tasks) {
  auto in = [](const std::vector<std::string>& v, const std::string& s) {
    return v.empty() || std::find(v.begin(), v.end(), s) != v.end();
  };
  return in(models, t.model) && in(tasks, t.task);
}

struct ReportOptions {
  std::vector<std::string> runs, models, tasks;
  std::string db;
  std::string turns = "1,4,8", pass_k = "1,4", csv, jsonl, upstream_csv, json, published, html;
  int resamples = 2000;
  bool no_published = false, include_unfinished = false;
};

void DeclareReportOptions(CLI::App* cmd, ReportOptions* o) {
  cmd->add_option("--runs", o->runs, "Run folders, or folders of them (default: runs)")
      ->check(CLI::ExistingDirectory);
  AddStoreOption(cmd, &o->db, "Read the results store instead of run folders ($PTXBENCH_DB)",
                 StoreSource::kEnvironment);
  AddRunFilterOptions(cmd, {.models = &o->models, .tasks = &o->tasks});
  cmd->add_option("--turns", o->turns, "Turn limits T")->capture_default_str();
  cmd->add_option("--pass-k", o->pass_k, "k of pass@k")->capture_default_str();
  AddRangeOption(cmd, "--resamples", &o->resamples, "Bootstrap resamples (0: no intervals)", 0,
                 1000000);
  cmd->add_option("--csv", o->csv, "Write the metrics as CSV");
  cmd->add_option("--jsonl", o->jsonl, "Write every turn as JSON lines");
  cmd->add_option("--upstream-csv", o->upstream_csv, "Write the upstream per-turn layout");
  cmd->add_option("--json", o->json, "Write the metrics as JSON");
  cmd->add_option("--html", o->html, "Write a self-contained HTML report (one file, no network)");
  cmd->add_option("--published", o->published,
                  "Published results to compare with (default: ../shared/reference/"
                  "published-results.csv beside the source tree, when there)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--no-published", o->no_published, "No comparison with published figures");
  cmd->add_flag("--include-unfinished", o->include_unfinished,
                "Also report trajectories that stopped early, as they stand (marked; their "
                "group's rates become lower bounds)");
}

// Where the tables for people go: standard error when an output is on standard output.
std::ostream& TextStream(const ReportOptions& o) {
  bool data_on_stdout = false;
  for (const std::string* p : {&o.csv, &o.jsonl, &o.upstream_csv, &o.json, &o.html})
    data_on_stdout = data_on_stdout || IsStandardOutput(*p);
  return data_on_stdout ? std::cerr : std::cout;
}

// The trajectories: from the service's PostgreSQL database, the SQLite store, or run folders.
RunFolderLoad LoadTrajectories(const ReportOptions& o) {
  if (!o.db.empty() && !o.runs.empty()) throw UsageError("--db and --runs exclude each other");
  RunFolderLoad load;
  if (IsPostgresUrl(o.db)) {
    // The service's shared database: trajectories rebuilt from the clients' job tags.
    ServiceDatasetLoad s = DatasetFromServiceJobs(OpenJobQueue(o.db)->Finished());
    load.dataset = std::move(s.dataset);
    std::fprintf(stderr,
                 "report: %d evaluations from the service's database -> %zu trajectories "
                 "(%d untagged left out, %d re-evaluated turns counted once). Turns that "
                 "never reached the evaluator (no kernel in the reply) are not there.\n",
                 s.evaluations, load.dataset.trajectories.size(), s.untagged, s.repeated);
  } else if (!o.db.empty()) {
#ifndef PTXBENCH_HAVE_SQLITE
    throw EnvironmentError("this ptxbench was built without SQLite: no results store");
#else
    if (!FileExists(o.db)) throw InputError(o.db + ": no such results store");
    StoreFilter f;
    f.models = o.models;
    f.tasks = o.tasks;
    load.dataset = ResultsStore::Open(o.db)->Load(f);
#endif
  } else {
    load = LoadRunFolders(o.runs.empty() ? std::vector<std::string>{"runs"} : o.runs);
  }
  for (const std::string& s : load.skipped) std::fprintf(stderr, "report: skipped %s\n", s.c_str());
  return load;
}

// The trajectories the filters keep. An interrupted trajectory would count as a failure it has
// not had yet: left out (counted in `unfinished`), unless asked for (then marked as such).
Dataset SelectTrajectories(const ReportOptions& o, Dataset all, int* unfinished) {
  Dataset data;
  for (auto& t : all.trajectories) {
    if (!Keep(t, o.models, o.tasks)) continue;
    if (!TrajectoryFinished(t)) {
      ++*unfinished;
      if (!o.include_unfinished) continue;
    }
    data.trajectories.push_back(std::move(t));
  }
  if (*unfinished && o.include_unfinished)
    std::fprintf(stderr,
                 "report: %d unfinished trajectories included as they stand (marked; "
                 "`ptxbench run --resume` finishes them)\n",
                 *unfinished);
  else if (*unfinished)
    std::fprintf(stderr,
                 "report: %d unfinished trajectories left out (--include-unfinished reports "
                 "them as they stand; `ptxbench run --resume` finishes them)\n",
                 *unfinished);
  return data;
}

void WriteExports(const ReportOptions& o, const Dataset& data,
                  const std::vector<GroupMetrics>& groups) {
  if (!o.csv.empty()) WriteOutput(o.csv, MetricsCsv(groups));
  if (!o.jsonl.empty()) WriteOutput(o.jsonl, TurnsJsonl(data));
  if (!o.upstream_csv.empty()) WriteOutput(o.upstream_csv, UpstreamTurnsCsv(data));
  if (!o.json.empty()) WriteOutput(o.json, ToJson(groups).dump(1) + "\n");
  if (!o.html.empty()) {
    HtmlOptions ho;
    std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    ho.generated_at = stamp;
    WriteOutput(o.html, HtmlReport(data, groups, ho));
  }
}

// The published figures next to ours: --published, else the reference file beside the source
// tree when it is there.
void PrintPublishedComparison(const ReportOptions& o, const std::vector<GroupMetrics>& groups,
                              std::ostream& text) {
  std::string published = o.published.empty() ? std::string(PTXBENCH_SOURCE_DIR) +
                                                    "/../shared/reference/published-results.csv"
                                              : o.published;
  if (o.no_published || (!FileExists(published) && o.published.empty())) return;
  std::string table = ComparisonTable(groups, LoadPublishedResults(published));
  text << (table.empty() ? "no published figures for these models and tasks\n"
                         : "\npublished (" + published + "):\n" + table);
}

int RunReport(const ReportOptions& o) {
  auto start = std::chrono::steady_clock::now();
  CheckOutputPaths({{"--csv", o.csv},
                    {"--jsonl", o.jsonl},
                    {"--upstream-csv", o.upstream_csv},
                    {"--json", o.json},
                    {"--html", o.html}});
  std::ostream& text = TextStream(o);
  MetricOptions mo;
  mo.turn_limits = ParseInts(o.turns, "--turns");
  mo.pass_k = ParseInts(o.pass_k, "--pass-k");
  mo.bootstrap_resamples = o.resamples;
  int unfinished = 0;
  Dataset data = SelectTrajectories(o, LoadTrajectories(o).dataset, &unfinished);
  std::vector<GroupMetrics> groups = ComputeMetrics(data, mo);
  if (groups.empty()) {
    // Nothing to report: say why, write nothing, and do not look like success.
    text << (unfinished ? "nothing to report: every matching trajectory is unfinished "
                          "(--include-unfinished reports them as they stand)\n"
                        : "nothing to report: no trajectories matched\n");
    return 1;
  }
  text << MetricsTable(groups);
  WriteExports(o, data, groups);
  PrintPublishedComparison(o, groups, text);
  size_t turns = 0;
  for (const auto& t : data.trajectories) turns += t.turns.size();
  std::fprintf(stderr, "report: %zu trajectories, %zu turns in %.2f s\n", data.trajectories.size(),
               turns,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}

}  // namespace

CommandRunner AddReportCommand(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand("report", "Metrics of agent runs: tables and exports");
  DeclareReportOptions(cmd, o.get());
  return [o]() { return RunReport(*o); };
}

}  // namespace ptxbench
