// `ptxbench eval KERNEL.cu --task NAME [...]`: one candidate, one verdict, one record.
#include <iostream>
#include <memory>
#include <optional>
#include <random>

#include "compile/nvcc.h"
#include "cli/commands.h"
#include "cli/option_checks.h"
#include "common/error.h"
#include "common/files.h"
#include "common/source_policy.h"
#include "common/strings.h"
#include "evaluate/evaluate.h"
#include "report/flashinfer_bench.h"
#include "task/definition.h"
#include "task/family.h"

namespace ptxbench {

using nlohmann::json;

CommandRunner AddEvalCommand(CLI::App& app) {
  struct Options {
    std::string kernel, task, workload, arch = "sm_90a", seed, tolerance, sanitize = "always";
    std::string baseline = "flashinfer";
    std::string json_path, trace_path, tasks_dir, cache_dir;
    int trials = 3, timeout = 60, memcheck_timeout = 600, profile_timeout = 120;
    int warmup = 10, iterations = 50, buffer_sets = 3, timing_timeout = 180;
    double drift_threshold = 0.05, timing_budget = 8;
    bool no_timing = false;
    bool no_verify = false, no_build_cache = false, no_reference_cache = false, quiet = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("eval", "Evaluate one candidate kernel on one task");
  cmd->add_option("kernel", o->kernel,
                  "The candidate .cu file, or a FlashInfer-Bench solution (.json) holding one")
      ->required();
  cmd->add_option("--task", o->task, "Task definition (see `ptxbench tasks`)")->required();
  cmd->add_option("--workload", o->workload,
                  "Workload id, or axis values such as M=8192 (default: the headline or largest)");
  cmd->add_option("--arch", o->arch, "Target architecture: sm_90a or sm_100a")
      ->check(CLI::IsMember(SupportedArchs()))
      ->capture_default_str();
  cmd->add_option("--trials", o->trials, "Correctness trials, each on fresh inputs")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--seed", o->seed,
                  "First seed (trial i uses seed+i), or `random` for a fresh one (default " +
                      std::to_string(kDefaultSeed) + ")")
      ->check(CLI::Validator(
          [](std::string& in) -> std::string {
            long long s;
            if (in == "random" || (ParseInt64(in, &s) && s >= 0)) return "";
            return "Value " + in + " is not a non-negative integer or `random`";
          },
          "SEED|random"));
  cmd->add_option("--tolerance", o->tolerance,
                  "Tolerance rule: published (the upstream rule) or allclose (default: the task's)")
      ->check(CLI::IsMember({"published", "allclose"}));
  cmd->add_option("--sanitize", o->sanitize, "Memory check: always, on-failure or never")
      ->check(CLI::IsMember({"always", "on-failure", "never"}))
      ->capture_default_str();
  cmd->add_option("--timeout", o->timeout, "Seconds for the candidate's run (all trials)")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  cmd->add_option("--memcheck-timeout", o->memcheck_timeout, "Seconds for the memory check")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  cmd->add_option("--profile-timeout", o->profile_timeout,
                  "Seconds for the profiled call that checks which instructions ran")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  cmd->add_flag("--no-verify", o->no_verify, "Skip the instruction layer (static and dynamic)");
  cmd->add_option("--json", o->json_path, "Write the full evaluation record here");
  cmd->add_option("--trace", o->trace_path,
                  "Also write the verdict as a FlashInfer-Bench trace (one JSON line)");
  cmd->add_option("--tasks-dir", o->tasks_dir, "Folder of definitions and workloads")
      ->envname("PTXBENCH_TASKS")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--cache-dir", o->cache_dir,
                  "Build and reference cache (default ~/.cache/ptxbench)")
      ->envname("PTXBENCH_CACHE");
  cmd->add_flag("--no-build-cache", o->no_build_cache, "Rebuild even when a cached build exists");
  cmd->add_flag("--no-reference-cache", o->no_reference_cache,
                "Recompute the expected outputs even when cached");
  cmd->add_flag("--quiet", o->quiet, "No progress lines (stderr) and no terminal summary");
  cmd->add_option("--warmup", o->warmup, "Timing: untimed calls before the timed ones")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
  cmd->add_option("--iterations", o->iterations, "Timing: timed calls (median, p10, p90)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--buffer-sets", o->buffer_sets,
                  "Timing: input/output buffer sets the calls rotate over")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--timing-timeout", o->timing_timeout,
                  "Seconds for the timing child (baselines and the candidate's calls)")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  cmd->add_option("--drift-threshold", o->drift_threshold,
                  "Flag a baseline whose median moved by more than this fraction during the run")
      ->check(GreaterThanZero())
      ->capture_default_str();
  cmd->add_option("--timing-budget", o->timing_budget,
                  "Timing: seconds of candidate calls; a slow kernel gets fewer calls (at least "
                  "2 + 10), 0 for no limit")
      ->check(ZeroOrMore())
      ->capture_default_str();
  cmd->add_flag("--no-timing", o->no_timing, "Skip the timing layer");
  AddAttentionBaselineOption(cmd, &o->baseline);

  return [o]() {
    // Every problem of the request is found before any work starts.
    // The source policy (empty, over 1 MiB, NUL bytes, invalid UTF-8) and the output path.
    std::string text = ReadSourceFile(o->kernel);
    CheckOutputPath(o->json_path, "--json");
    CheckOutputPath(o->trace_path, "--trace");
    Catalog catalog = Catalog::Load(o->tasks_dir.empty() ? Catalog::DefaultDir() : o->tasks_dir);
    EvalRequest req;
    req.kernel_path = o->kernel;
    req.definition = &catalog.Find(o->task);
    // A FlashInfer-Bench solution: its one CUDA file is the candidate, under the same policy.
    std::optional<FlashInferSolution> solution;
    std::unique_ptr<ScratchDir> unpacked;
    if (EndsWith(o->kernel, ".json")) {
      json parsed = json::parse(text, nullptr, false);
      if (parsed.is_discarded())
        throw InputError(o->kernel +
                         ": not JSON (a .json candidate is a FlashInfer-Bench solution)");
      solution = ReadFlashInferSolution(parsed);
      if (!solution->definition.empty() && solution->definition != o->task)
        throw InputError(o->kernel + ": the solution is for " + solution->definition +
                         ", not --task " + o->task);
      if (auto problem = SourceFileProblem(solution->source))
        throw InputError(o->kernel + ": its " + solution->entry_file + ": " + *problem);
      unpacked = std::make_unique<ScratchDir>("ptxbench-solution");
      req.kernel_path = unpacked->File("candidate.cu");
      WriteFileAtomic(req.kernel_path, solution->source);
    }
    req.workload = o->workload.empty() ? &req.definition->DefaultWorkload()
                                       : &req.definition->FindWorkload(o->workload);
    req.arch = o->arch;
    req.trials = o->trials;
    if (o->seed == "random") {
      req.seed = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
    } else if (!o->seed.empty()) {
      long long s = 0;
      ParseInt64(o->seed, &s);  // checked at parse time
      req.seed = static_cast<uint64_t>(s);
    }
    if (!o->tolerance.empty()) req.tolerance_rule = ParseToleranceRule(o->tolerance);
    req.sanitize = ParseSanitizeMode(o->sanitize);
    req.timeout = std::chrono::seconds(o->timeout);
    req.memcheck_timeout = std::chrono::seconds(o->memcheck_timeout);
    req.profile_timeout = std::chrono::seconds(o->profile_timeout);
    req.verify = !o->no_verify;
    req.timing = !o->no_timing;
    req.warmup = o->warmup;
    req.iterations = o->iterations;
    req.buffer_sets = o->buffer_sets;
    req.timing_timeout = std::chrono::seconds(o->timing_timeout);
    req.drift_threshold = o->drift_threshold;
    req.timing_budget_s = o->timing_budget;
    req.attention_baseline = *ParseAttentionBaseline(o->baseline);
    req.use_build_cache = !o->no_build_cache;
    req.use_reference_cache = !o->no_reference_cache;
    req.cache_root = o->cache_dir;
    FindNvcc("");  // no nvcc: a one-line error, before anything is written
    if (!o->quiet) req.on_stage = StageLinePrinter(std::cerr);

    EvaluationRecord rec = Evaluate(req);
    if (solution)
      rec.candidate["solution"] = {{"file", o->kernel},
                                   {"name", solution->name},
                                   {"binding", solution->binding},
                                   {"entry_file", solution->entry_file}};
    if (!o->json_path.empty()) WriteOutput(o->json_path, rec.ToJson().dump(2) + "\n");
    if (!o->trace_path.empty()) {
      std::vector<std::string> inputs;
      for (const TensorSpec& t :
           FindFamily(req.definition->family)->Tensors(req.definition->FullAxes(*req.workload)))
        if (t.role == TensorRole::kInput) inputs.push_back(t.name);
      if (FlashInferStatus(rec.ToJson()).empty())
        std::cerr << "no trace written: " << ToString(rec.status)
                  << " is no verdict on the candidate\n";
      else
        WriteOutput(
            o->trace_path,
            FlashInferTrace(rec.ToJson(), req.definition->variable_axes, inputs,
                            solution && !solution->name.empty() ? solution->name : o->kernel)
                    .dump() +
                "\n");
    }
    // With the record on standard output, the summary goes to standard error.
    if (!o->quiet) (IsStandardOutput(o->json_path) ? std::cerr : std::cout) << HumanSummary(rec);
    return ExitCodeFor(rec.status);
  };
}

}  // namespace ptxbench
