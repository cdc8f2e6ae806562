// `ptxbench eval KERNEL.cu --task NAME [...]`: one candidate, one verdict, one record.
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/option_checks.h"
#include "cli/shared_options.h"
#include "common/error.h"
#include "common/files.h"
#include "common/source_policy.h"
#include "common/strings.h"
#include "compile/nvcc.h"
#include "evaluate/evaluate.h"
#include "record/subject.h"
#include "report/flashinfer_bench.h"
#include "task/definition.h"
#include "task/family.h"

namespace ptxbench {

using nlohmann::json;

CommandRunner AddEvalCommand(CLI::App& app) {
  struct Options {
    std::string kernel, task, workload, arch = "sm_90a";
    std::string json_path, trace_path, tasks_dir, cache_dir;
    EvaluationOptions evaluation;
    bool quiet = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("eval", "Evaluate one candidate kernel on one task");
  AddCandidateArgument(cmd, &o->kernel);
  cmd->add_option("--task", o->task, "Task definition (see `ptxbench tasks`)")->required();
  cmd->add_option("--workload", o->workload,
                  "Workload id, or axis values such as M=8192 (default: the headline or largest)");
  AddArchOption(cmd, &o->arch);
  AddEvaluationOptions(cmd, &o->evaluation, EvaluationOptionSet::kEval);
  cmd->add_option("--json", o->json_path, "Write the full evaluation record here");
  cmd->add_option(
      "--trace", o->trace_path,
      "Also add the verdict as a FlashInfer-Bench trace: one JSON line, appended (JSONL)");
  AddTasksDirOption(cmd, &o->tasks_dir);
  AddCacheDirOption(cmd, &o->cache_dir, "Build and reference cache (default ~/.cache/ptxbench)");
  cmd->add_flag("--quiet", o->quiet, "No progress lines (stderr) and no terminal summary");

  return [o]() {
    // Every problem of the request is found before any work starts.
    // The source policy (empty, over 1 MiB, NUL bytes, invalid UTF-8) and the output path.
    CandidateFile file = ReadCandidateFile(o->kernel, o->task);
    CheckOutputPaths({{"--json", o->json_path}, {"--trace", o->trace_path}});
    // FlashInfer-Bench's Trace requires the performance of every PASSED trace: a trace of an
    // evaluation without timing would be one their own model refuses.
    if (!o->trace_path.empty() && !o->evaluation.timing)
      throw UsageError(
          "--trace needs the timing layer: a FlashInfer-Bench trace of a PASSED evaluation must "
          "carry its performance (drop --no-timing, or --trace)");
    Catalog catalog = Catalog::Load(o->tasks_dir.empty() ? Catalog::DefaultDir() : o->tasks_dir);
    EvalRequest req;
    req.kernel_path = o->kernel;
    req.definition = &catalog.Find(o->task);
    // A FlashInfer-Bench solution: its one CUDA file is the candidate, under the same policy.
    const std::optional<FlashInferSolution>& solution = file.solution;
    std::unique_ptr<ScratchDir> unpacked;
    if (solution) {
      unpacked = std::make_unique<ScratchDir>("ptxbench-solution");
      req.kernel_path = unpacked->File("candidate.cu");
      WriteFileAtomic(req.kernel_path, file.source);
    }
    req.workload = o->workload.empty() ? &req.definition->DefaultWorkload()
                                       : &req.definition->FindWorkload(o->workload);
    req.arch = o->arch;
    req.options = o->evaluation;
    req.cache_root = o->cache_dir;
    FindNvcc("");  // no nvcc: a one-line error, before anything is written
    if (!o->quiet) req.on_stage = StageLinePrinter(std::cerr);

    EvaluationRecord rec = Evaluate(req);
    if (solution) {
      CandidateDetail candidate = CandidateDetailOf(rec);
      candidate.solution = CandidateDetail::Solution{o->kernel, solution->name, solution->binding,
                                                     solution->entry_file};
      rec.candidate = ToJson(candidate);
    }
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
        AppendOutput(
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
