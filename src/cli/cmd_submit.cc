// `ptxbench submit KERNEL.cu --task T --evaluator http://host:port`: one evaluation through the
// service, for one-off use; prints the summary, writes the record with --json.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/option_checks.h"
#include "cli/shared_options.h"
#include "common/error.h"
#include "common/files.h"
#include "common/source_policy.h"
#include "compile/nvcc.h"
#include "record/record.h"
#include "report/flashinfer_bench.h"
#include "serve/client.h"

namespace ptxbench {

CommandRunner AddSubmitCommand(CLI::App& app) {
  struct Options {
    std::string kernel, task, workload, arch = "sm_90a", evaluator, json_path;
    EvaluationOptions evaluation;
    DeclaredEvaluationOptions declared;  // only those given are sent
    bool no_wait = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd =
      app.add_subcommand("submit", "Send one kernel to an evaluation service, wait for its record");
  AddCandidateArgument(cmd, &o->kernel);
  cmd->add_option("--task", o->task, "Task definition")->required();
  cmd->add_option("--workload", o->workload, "Workload id or axis values (default: headline)");
  AddArchOption(cmd, &o->arch);
  cmd->add_option("--evaluator", o->evaluator, "The service, http://host:port")
      ->envname("PTXBENCH_EVALUATOR")
      ->required()
      ->check(ServiceUrl());
  cmd->add_option(
      "--json", o->json_path,
      "Write the evaluation record here (with --no-wait: the service's answer, the id)");
  o->declared = AddEvaluationOptions(cmd, &o->evaluation, EvaluationOptionSet::kSubmit);
  cmd->add_flag("--no-wait", o->no_wait, "Print the id and return without waiting");
  return [o]() {
    // Refused here, before any connection, with the words the service would answer.
    std::string source = ReadCandidateFile(o->kernel, o->task).source;
    CheckOutputPath(o->json_path, "--json");
    RemoteOptions r;
    r.url = o->evaluator;
    r.arch = o->arch;
    r.options = EvaluationOptionsJson(o->evaluation, o->declared.GivenKeys());
    EvaluationClient client(r);
    std::string id = client.Submit(o->task, o->workload, source);
    if (o->no_wait) {
      // No record yet: --json gets what the service answered, {"id"}; the id line goes to
      // standard error when that is standard output.
      if (!o->json_path.empty())
        WriteOutput(o->json_path, nlohmann::json{{"id", id}}.dump(2) + "\n");
      std::fprintf(IsStandardOutput(o->json_path) ? stderr : stdout, "%s\n", id.c_str());
      return 0;
    }
    nlohmann::json rec = client.Wait(id);
    if (!o->json_path.empty()) WriteOutput(o->json_path, rec.dump(2) + "\n");
    const EvaluationRecord record = FromJson(rec);
    const std::string status = ToString(record.status);
    // With the record on standard output, the summary goes to standard error.
    std::fprintf(IsStandardOutput(o->json_path) ? stderr : stdout,
                 "%s%s  %s (evaluation %s)\n  %s\n", status.c_str(),
                 record.reason.empty() ? "" : (" (" + record.reason + ")").c_str(), o->task.c_str(),
                 id.c_str(), record.message.c_str());
    return ExitCodeFor(record.status);  // a status this version cannot read: 3, not the candidate's
  };
}

}  // namespace ptxbench
