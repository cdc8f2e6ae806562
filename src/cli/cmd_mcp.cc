// `ptxbench mcp --evaluator URL --task NAME [...]`: a coding agent's evaluator tool, an MCP
// server on standard input and output (serve/mcp.h). A coding CLI (Codex CLI, Claude Code)
// starts it as a stdio MCP server from its configuration; its one tool judges the workspace's
// kernel file on the run's task through the evaluation service. With --bridge it is the tool of
// an agent that `ptxbench run --agent-command` launched (agent/coding_agent.h).
#include <cstdlib>
#include <iostream>
#include <memory>

#include "agent/prompt.h"
#include "cli/commands.h"
#include "cli/option_checks.h"
#include "cli/shared_options.h"
#include "common/error.h"
#include "common/files.h"
#include "serve/mcp.h"
#include "task/definition.h"

namespace ptxbench {

CommandRunner AddMcpCommand(CLI::App& app) {
  struct Options {
    std::string evaluator, task, workload, arch = "sm_90a", kernel = "kernel.cu", pack = "full";
    std::string tasks_dir, bridge;
    int max_evaluations = 8;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "mcp", "An MCP server (stdio) whose tool evaluate_kernel judges the workspace's kernel");
  cmd->add_option("--evaluator", o->evaluator, "The evaluation service, http://host:port")
      ->envname("PTXBENCH_EVALUATOR")
      ->check(ServiceUrl());
  cmd->add_option("--task", o->task, "The run's task (fixed: the agent cannot pick another)");
  cmd->add_option("--bridge", o->bridge,
                  "Inside `ptxbench run --agent-command`: the run's socket (its token in "
                  "$PTXBENCH_MCP_TOKEN); task, kernel file and budget come from the run");
  cmd->add_option("--workload", o->workload, "The run's workload (default: the headline)");
  AddArchOption(cmd, &o->arch);
  cmd->add_option("--kernel", o->kernel, "The workspace's kernel file that the tool reads")
      ->capture_default_str();
  cmd->add_option("--pack", o->pack,
                  "Knowledge pack variant offered as a resource (none, base, ..., full)")
      ->capture_default_str();
  AddRangeOption(cmd, "--max-evaluations", &o->max_evaluations,
                 "Evaluations the agent may make (the paper's 8 turns)", 1, 1000);
  AddTasksDirOption(cmd, &o->tasks_dir);
  return [o]() {
    if (!o->bridge.empty()) {
      const char* token = std::getenv("PTXBENCH_MCP_TOKEN");
      const int made = ServeMcpBridge(o->bridge, token ? token : "", std::cin, std::cout);
      std::cerr << "ptxbench mcp: " << made << " evaluation" << (made == 1 ? "" : "s") << "\n";
      return 0;
    }
    if (o->evaluator.empty() || o->task.empty())
      throw UsageError("mcp: --evaluator and --task are required (or --bridge in an agent run)");
    Catalog catalog = Catalog::Load(o->tasks_dir.empty() ? Catalog::DefaultDir() : o->tasks_dir);
    const Definition& def = catalog.Find(o->task);
    const Workload& wl =
        o->workload.empty() ? def.DefaultWorkload() : def.FindWorkload(o->workload);
    McpServerOptions m;
    m.service.url = o->evaluator;
    m.service.arch = o->arch;
    m.task = def.name;
    m.workload = wl.id;
    m.kernel_path = o->kernel;
    m.max_evaluations = o->max_evaluations;
    // The statement a model gets in the agent loop, without the pack (a resource of its own).
    m.task_statement = RenderPrompts(DefaultPromptsDir(), def, wl, o->arch, "").task;
    m.pack = LoadPack(DefaultPacksDir(), o->arch, o->pack);
    const int made = ServeMcp(m, std::cin, std::cout);
    std::cerr << "ptxbench mcp: " << made << " evaluation" << (made == 1 ? "" : "s") << "\n";
    return 0;
  };
}

}  // namespace ptxbench
