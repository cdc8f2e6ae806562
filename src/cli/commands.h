// The subcommands of `ptxbench`, each registered on the CLI11 app in one file of its own.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace ptxbench {

// Each Add* declares the subcommand's options and returns the function that runs it; the
// function returns the process exit code.
using CommandRunner = std::function<int()>;
CommandRunner AddEvalCommand(CLI::App& app);
CommandRunner AddMcpCommand(CLI::App& app);
CommandRunner AddTasksCommand(CLI::App& app);
CommandRunner AddDoctorCommand(CLI::App& app);
CommandRunner AddInspectCommand(CLI::App& app);
CommandRunner AddBaselineCommand(CLI::App& app);
CommandRunner AddRunCommand(CLI::App& app);
CommandRunner AddPackCommand(CLI::App& app);
CommandRunner AddReportCommand(CLI::App& app);
CommandRunner AddImportCommand(CLI::App& app);
CommandRunner AddFixitCommand(CLI::App& app);
CommandRunner AddKernelgenCommand(CLI::App& app);
CommandRunner AddServeCommand(CLI::App& app);
CommandRunner AddWorkerCommand(CLI::App& app);
CommandRunner AddSubmitCommand(CLI::App& app);
// Judges an upstream PTXBench experiment folder again (`run --upstream`) into the run folder
// `out` (kept and resumed when it exists), writing the store `db` when not empty. Returns run's
// exit code.
struct UpstreamRejudge {
  std::string folder, out, db, tasks_dir;
  bool quiet = true;
};
int RejudgeUpstream(const UpstreamRejudge& r);
// The store's default file: results/ptxbench.db under the current folder ($PTXBENCH_DB).
std::string DefaultStorePath();

}  // namespace ptxbench
