// `ptxbench baseline --task PATTERN [...]`: the vendor library alone (cuBLASLt for GEMM;
// FlashInfer's sm90 prefill, of one or each known release, and cuDNN SDPA for the attention
// forward, one line each; cuDNN for the backward), timed exactly as an evaluation times it, one
// line per workload and library; next to the published H100 figures where they list the same shape.
#include <fnmatch.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include <tuple>

#include "cli/commands.h"
#include "cli/shared_options.h"
#include "common/error.h"
#include "common/files.h"
#include "common/strings.h"
#include "evaluate/baseline_run.h"
#include "run/children.h"
#include "task/definition.h"

namespace ptxbench {
namespace {

using nlohmann::json;

// The workload as the published tables write it: the one variable axis's value ("4096"), or
// "AXIS=value" pairs ("M=8192").
std::vector<std::string> PublishedKeys(const Workload& w) {
  std::vector<std::string> keys, pairs;
  for (const auto& [axis, value] : w.axes) pairs.push_back(axis + "=" + std::to_string(value));
  keys.push_back(Join(pairs, ";"));
  if (w.axes.size() == 1) keys.push_back(std::to_string(w.axes.begin()->second));
  return keys;
}

struct Published {
  double ms = 0, tflops = 0;
  std::string gpu, reference;
};

// definition → workload column → figures, from a CSV with the columns of
// published-baselines-h100.csv (definition,S,reference,gpu,reference_latency_ms,reference_tflops).
std::map<std::string, std::map<std::string, Published>> LoadPublished(const std::string& path) {
  std::map<std::string, std::map<std::string, Published>> out;
  std::vector<std::string> lines = SplitLines(ReadFile(path));
  if (lines.empty()) throw InputError(path + ": empty");
  std::vector<std::string> head = Split(lines[0], ',');
  auto col = [&](const std::string& name) {
    for (size_t i = 0; i < head.size(); ++i)
      if (Trim(head[i]) == name) return i;
    throw InputError(path + ": no column '" + name + "'");
  };
  size_t c_def = col("definition"), c_s = col("S"), c_ref = col("reference"), c_gpu = col("gpu"),
         c_ms = col("reference_latency_ms"), c_tf = col("reference_tflops");
  for (size_t n = 1; n < lines.size(); ++n) {
    std::vector<std::string> f = Split(lines[n], ',');
    if (f.size() < head.size()) continue;
    Published p;
    p.ms = std::stod(f[c_ms]);
    p.tflops = std::stod(f[c_tf]);
    p.gpu = f[c_gpu];
    p.reference = f[c_ref];
    out[f[c_def]][Trim(f[c_s])] = p;
  }
  return out;
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// A short name for the plan the library chose: cuDNN's engine, cuBLASLt's algorithm,
// FlashInfer's kernel.
std::string PlanOf(const json& library) {
  if (!library.is_object()) return "";
  if (library.contains("cta_q"))
    return library.value("kernel", "") + " CTA " + library["cta_q"].dump() + "x" +
           library.value("cta_kv", json()).dump();
  for (const char* k : {"engine", "algorithm"})
    if (library.contains(k)) return Truncate(library[k].dump(), 120);
  return "";
}

struct BaselineOptions {
  std::vector<std::string> tasks;
  std::string workload, tasks_dir, compare, csv_path, json_path, baseline = "both";
  bool all_workloads = false, published_shapes = false;
  int warmup = 10, iterations = 50, buffer_sets = 3, timeout = 600;
};

// --warmup and --iterations take the options table's ranges with words of their own (`eval`'s
// are worded for an evaluation, "Timing: …"); --buffer-sets, --timeout (per workload, not a
// candidate's run) and --baseline (which has "both" and "all": attention-forward libraries
// side by side) are this command's own.
void DeclareBaselineOptions(CLI::App* cmd, BaselineOptions* o) {
  cmd->add_option("--task", o->tasks, "Task definitions, or shell patterns such as 'mha_*'")
      ->required();
  cmd->add_option("--workload", o->workload,
                  "Workload id or axis values (default: each task's headline or largest)");
  cmd->add_flag("--all-workloads", o->all_workloads, "Every workload of each task");
  cmd->add_flag("--published-shapes", o->published_shapes,
                "Every shape the published table (--compare) lists for each task, defined "
                "workload or not");
  // The ranges an evaluation's timing takes (the options table's), worded for a library alone.
  for (auto [key, value, help] :
       {std::tuple{"warmup", &o->warmup, "Untimed calls before the timed ones"},
        std::tuple{"iterations", &o->iterations, "Timed calls (median, p10, p90)"}}) {
    const EvaluationOptionRow& row = EvaluationOptionRowOf(key);
    AddRangeOption(cmd, row.flag, value, help, static_cast<int>(row.minimum),
                   static_cast<int>(row.maximum));
  }
  AddRangeOption(cmd, "--buffer-sets", &o->buffer_sets, "Buffer sets the calls rotate over", 1, 64);
  AddRangeOption(cmd, "--timeout", &o->timeout, "Seconds per workload", 1, 86400);
  cmd->add_option("--compare", o->compare,
                  "Published figures to compare with (default: tasks/published-baselines-h100.csv)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--baseline", o->baseline,
                  std::string("Attention forward: flashinfer (FlashInfer ") +
                      kDefaultFlashInferVersion +
                      "), flashinfer@VERSION, cudnn, both (cuDNN and flashinfer) or all (cuDNN "
                      "and every FlashInfer release), one line each, side by side")
      ->check(CLI::IsMember(BaselineCommandWords()))
      ->capture_default_str();
  cmd->add_option("--csv", o->csv_path, "Write the table as CSV");
  cmd->add_option("--json", o->json_path, "Write every measurement as a JSON array");
  AddTasksDirOption(cmd, &o->tasks_dir);
}

using PublishedTable = std::map<std::string, std::map<std::string, Published>>;

// --compare, else the bundled table when it is there ("" when neither).
std::string PublishedTablePath(const BaselineOptions& o) {
  if (!o.compare.empty()) return o.compare;
  std::string dflt = Catalog::DefaultDir() + "/published-baselines-h100.csv";
  return FileExists(dflt) ? dflt : "";
}

// A shape of the published table ("4096" for the one variable axis of the defined workloads,
// or "M=8192;N=…") as a workload of `d`: the defined one with those axes, else a new one kept
// in `synthesized`.
const Workload* PublishedShapeWorkload(const Definition& d, const std::string& shape,
                                       const std::string& table_path,
                                       std::deque<Workload>* synthesized) {
  std::string spec = shape;
  if (spec.find('=') == std::string::npos && !d.workloads.empty() &&
      d.workloads[0].axes.size() == 1)
    spec = d.workloads[0].axes.begin()->first + "=" + shape;
  Workload w;
  w.id = "published:" + spec;
  for (const std::string& pair : Split(spec, ';')) {
    std::vector<std::string> kv = Split(pair, '=');
    long long v = 0;
    if (kv.size() != 2 || !ParseInt64(Trim(kv[1]), &v))
      throw InputError(table_path + ": malformed shape '" + shape + "' for " + d.name);
    w.axes[Trim(kv[0])] = v;
  }
  for (const Workload& known : d.workloads)
    if (known.axes == w.axes) return &known;
  synthesized->push_back(w);
  return &synthesized->back();
}

using BaselineJob = std::pair<const Definition*, const Workload*>;

// Every (task, workload) to time, smallest shapes first within a task, so a table fills in the
// order a reader scans it. Throws UsageError for a pattern that matches no task.
std::vector<BaselineJob> BaselineJobs(const BaselineOptions& o, const Catalog& catalog,
                                      const PublishedTable& published,
                                      const std::string& table_path,
                                      std::deque<Workload>* synthesized) {
  std::vector<BaselineJob> jobs;
  for (const std::string& pattern : o.tasks) {
    size_t before = jobs.size();
    for (const Definition& d : catalog.definitions()) {
      if (fnmatch(pattern.c_str(), d.name.c_str(), 0) != 0) continue;
      if (o.all_workloads) {
        for (const Workload& w : d.workloads) jobs.push_back({&d, &w});
      } else if (o.published_shapes) {
        auto rows = published.find(d.name);
        if (rows == published.end()) continue;
        for (const auto& [shape, figures] : rows->second)
          jobs.push_back({&d, PublishedShapeWorkload(d, shape, table_path, synthesized)});
      } else {
        jobs.push_back(
            {&d, o.workload.empty() ? &d.DefaultWorkload() : &d.FindWorkload(o.workload)});
      }
    }
    if (jobs.size() == before) throw UsageError("no task matches '" + pattern + "'");
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const auto& a, const auto& b) {
    return a.first->name == b.first->name && a.first->Flops(*a.second) < b.first->Flops(*b.second);
  });
  return jobs;
}

const Published* PublishedFigures(const PublishedTable& published, const Definition& def,
                                  const Workload& wl) {
  const Published* pub = nullptr;
  if (auto d = published.find(def.name); d != published.end())
    for (const std::string& k : PublishedKeys(wl))
      if (auto w = d->second.find(k); w != d->second.end()) pub = &w->second;
  return pub;
}

const char kTableFormat[] = "%-26s %-12s %-17s %-11s %10s %18s %8s %10s %8s %7s%s\n";
const char kCsvHeader[] =
    "task,workload,baseline,state,median_ms,p10_ms,p90_ms,tflops,published_ms,"
    "published_tflops,tflops_vs_published,cudnn_ms_over_this_ms,library_version,plan,reason\n";

// One measurement as the table line (and, when it did not run, the reason below it) and as
// a CSV row. `choice` is the attention forward's library, as ToString(AttentionBaseline) words
// it ("" for other families).
struct MeasuredLine {
  const Definition* def;
  const Workload* wl;
  std::string choice;
  const Published* pub;
  std::optional<double> vs_cudnn;  // cuDNN's median over this one's (each FlashInfer line)
};

void PrintTableLine(FILE* table, const MeasuredLine& l, const json& m, const std::string& shape) {
  const std::string state = m["state"];
  const bool ran = state == "ran";
  const double tf = m.value("tflops", 0.0);
  std::string range =
      ran ? Fixed(m["p10"].get<double>() * 1e3, 4) + ".." + Fixed(m["p90"].get<double>() * 1e3, 4)
          : "";
  const Published* pub = l.pub;
  std::fprintf(table, kTableFormat, l.def->name.c_str(), shape.c_str(),
               l.choice.empty() ? "-" : l.choice.c_str(), state.c_str(),
               ran ? Fixed(m["median"].get<double>() * 1e3, 4).c_str() : "", range.c_str(),
               ran ? Fixed(tf, 1).c_str() : "", pub ? Fixed(pub->ms, 4).c_str() : "",
               pub ? Fixed(pub->tflops, 1).c_str() : "",
               ran && pub && pub->tflops > 0 ? Fixed(tf / pub->tflops, 3).c_str() : "",
               l.vs_cudnn ? ("  (" + Fixed(*l.vs_cudnn, 3) + "x cuDNN)").c_str() : "");
  if (!ran) std::fprintf(table, "    %s\n", m.value("reason", "").c_str());
  std::fflush(table);
}

std::string CsvLine(const MeasuredLine& l, const json& m, const std::string& shape) {
  const std::string state = m["state"];
  const bool ran = state == "ran";
  const double tf = m.value("tflops", 0.0);
  const std::string library =
      m.contains("name") ? m["name"].get<std::string>() : (l.choice.empty() ? "vendor" : l.choice);
  const json lib = m.value("library", json::object());
  std::string version = lib.value("version", "");
  // A FlashInfer line that did not run (head dim 96, a failed build) still names its release.
  if (auto asked = ParseAttentionBaseline(l.choice);
      version.empty() && asked && asked->IsFlashInfer())
    version = asked->flashinfer_version;
  const Published* pub = l.pub;
  return CsvRow({l.def->name, shape, ran ? library : l.choice, state,
                 ran ? Fixed(m["median"].get<double>() * 1e3, 5) : "",
                 ran ? Fixed(m["p10"].get<double>() * 1e3, 5) : "",
                 ran ? Fixed(m["p90"].get<double>() * 1e3, 5) : "", ran ? Fixed(tf, 1) : "",
                 pub ? Fixed(pub->ms, 4) : "", pub ? Fixed(pub->tflops, 1) : "",
                 ran && pub && pub->tflops > 0 ? Fixed(tf / pub->tflops, 3) : "",
                 l.vs_cudnn ? Fixed(*l.vs_cudnn, 4) : "", version, PlanOf(lib),
                 m.value("reason", "")});
}

// What the measuring loop hands back: the CSV text, every measurement, and how many measured
// nothing (failed, or skipped: no GPU, no CUPTI).
struct BaselineResults {
  std::string csv = kCsvHeader;
  json all = json::array();
  int failed = 0;
};

// Times each job's library (every attention-forward library asked for), printing each line as
// it is measured.
BaselineResults MeasureJobs(const BaselineOptions& o, const std::vector<BaselineJob>& jobs,
                            const PublishedTable& published, FILE* table) {
  BaselineResults out;
  uint64_t seed = 0x62617365ull;
  const std::vector<AttentionBaseline> attention = AttentionBaselinesOf(o.baseline);
  for (const auto& [def, wl] : jobs) {
    const bool forward = def->family == "mha_fwd";
    std::optional<double> cudnn_median;  // this shape's, when cuDNN ran
    for (size_t k = 0; k < (forward ? attention.size() : 1); ++k) {
      BaselineRequest req;
      if (forward) req.attention = attention[k];
      MeasuredLine l{def, wl, forward ? ToString(req.attention) : "", nullptr, std::nullopt};
      req.definition = def;
      req.workload = wl;
      req.warmup = o.warmup;
      req.iterations = o.iterations;
      req.buffer_sets = o.buffer_sets;
      req.timeout = std::chrono::seconds(o.timeout);
      req.seed = seed += 1000003;
      json m = MeasureBaseline(req);
      std::vector<std::string> pairs;
      for (const auto& [axis, value] : wl->axes)
        pairs.push_back(axis + "=" + std::to_string(value));
      std::string shape = Join(pairs, ";");
      l.pub = PublishedFigures(published, *def, *wl);
      if (l.pub)
        m["published"] = {{"ms", l.pub->ms},
                          {"tflops", l.pub->tflops},
                          {"gpu", l.pub->gpu},
                          {"reference", l.pub->reference}};
      const std::string state = m["state"];
      const bool ran = state == "ran";
      out.failed += state == "failed" || state == "skipped";
      const double median = ran ? m["median"].get<double>() : 0;
      if (ran && forward && !req.attention.IsFlashInfer()) cudnn_median = median;
      if (ran && forward && req.attention.IsFlashInfer() && cudnn_median && median > 0)
        l.vs_cudnn = *cudnn_median / median;
      if (l.vs_cudnn) m["cudnn_median_over_this"] = *l.vs_cudnn;
      PrintTableLine(table, l, m, shape);
      out.csv += CsvLine(l, m, shape);
      out.all.push_back(m);
    }
  }
  return out;
}

int RunBaseline(const BaselineOptions& o) {
  CheckOutputPaths({{"--csv", o.csv_path}, {"--json", o.json_path}});
  // With an output on standard output, the table for people goes to standard error.
  FILE* table = IsStandardOutput(o.csv_path) || IsStandardOutput(o.json_path) ? stderr : stdout;
  Catalog catalog = Catalog::Load(o.tasks_dir.empty() ? Catalog::DefaultDir() : o.tasks_dir);
  if (int(o.all_workloads) + int(o.published_shapes) + int(!o.workload.empty()) > 1)
    throw UsageError("--workload, --all-workloads and --published-shapes exclude each other");
  const std::string compare = PublishedTablePath(o);
  const PublishedTable published = compare.empty() ? PublishedTable{} : LoadPublished(compare);
  if (o.published_shapes && compare.empty())
    throw UsageError("--published-shapes needs a published table (--compare FILE)");
  std::deque<Workload> synthesized;  // the published shapes no workload file defines
  const std::vector<BaselineJob> jobs = BaselineJobs(o, catalog, published, compare, &synthesized);

  // Nothing to measure without a GPU: the environment's fault (exit 3, as `eval`), said
  // once, not as a CUPTI failure per shape.
  if (auto why = WhyNoGpu()) throw EnvironmentError("baseline: no GPU (" + *why + ")");
  std::fprintf(table, kTableFormat, "task", "workload", "baseline", "state", "median ms",
               "p10..p90 ms", "TFLOP/s", "pub. ms", "pub. TF", "ratio", "");
  BaselineResults r = MeasureJobs(o, jobs, published, table);
  if (!o.csv_path.empty()) WriteOutput(o.csv_path, r.csv);
  if (!o.json_path.empty()) WriteOutput(o.json_path, r.all.dump(1) + "\n");
  return r.failed ? 1 : 0;
}

}  // namespace

CommandRunner AddBaselineCommand(CLI::App& app) {
  auto o = std::make_shared<BaselineOptions>();
  CLI::App* cmd = app.add_subcommand(
      "baseline",
      "Time the vendor baseline alone (cuBLASLt, FlashInfer, cuDNN SDPA), as evaluations do");
  DeclareBaselineOptions(cmd, o.get());
  return [o]() { return RunBaseline(*o); };
}

}  // namespace ptxbench
