// ptxbench: can a model write GPU kernels that really use a new architecture's own
// instructions, and are they fast? This is the command line; see README.md.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <string>

#include "child/child_main.h"
#include "cli/commands.h"
#include "common/error.h"
#include "measure/gpm_trace.h"
#include "task/definition.h"

int main(int argc, char** argv) {
  // Children are this same binary; they speak only through their channel descriptor.
  if (argc >= 2 && std::strcmp(argv[1], "__child") == 0) return ptxbench::ChildMain(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "__gpm_trace") == 0)
    return ptxbench::GpmTraceMain(argc, argv);

  CLI::App app{"ptxbench: verdicts on GPU kernels that use the architecture's own instructions"};
  app.set_version_flag("--version", std::string(PTXBENCH_VERSION));
  app.require_subcommand(1);
  // Subcommands as a table: name → runner.
  std::map<std::string, ptxbench::CommandRunner> runners = {
      {"eval", ptxbench::AddEvalCommand(app)},
      {"tasks", ptxbench::AddTasksCommand(app)},
      {"doctor", ptxbench::AddDoctorCommand(app)},
      {"inspect", ptxbench::AddInspectCommand(app)},
      {"baseline", ptxbench::AddBaselineCommand(app)},
      {"run", ptxbench::AddRunCommand(app)},
      {"pack", ptxbench::AddPackCommand(app)},
      {"report", ptxbench::AddReportCommand(app)},
      {"import", ptxbench::AddImportCommand(app)},
      {"fixit", ptxbench::AddFixitCommand(app)},
      {"kernelgen", ptxbench::AddKernelgenCommand(app)},
      {"serve", ptxbench::AddServeCommand(app)},
      {"worker", ptxbench::AddWorkerCommand(app)},
      {"submit", ptxbench::AddSubmitCommand(app)},
      {"mcp", ptxbench::AddMcpCommand(app)},
  };
  // An unknown subcommand gets a "did you mean" instead of CLI11's generic message.
  if (argc >= 2 && argv[1][0] != '-' && !runners.count(argv[1])) {
    std::vector<std::string> names;
    for (const auto& [n, r] : runners) names.push_back(n);
    std::string msg = std::string("ptxbench: unknown command '") + argv[1] + "'";
    if (auto s = ptxbench::DidYouMean(argv[1], names)) msg += " (did you mean " + *s + "?)";
    std::cerr << msg << "; see ptxbench --help\n";
    return 2;
  }
  // A parse error (a value outside its range or set, a missing input file, an unknown option)
  // is one line naming the option, as every other refusal, instead of CLI11's two.
  app.failure_message([](const CLI::App* root, const CLI::Error& e) {
    std::string command = "ptxbench";
    for (const CLI::App* a = root; a && !a->get_subcommands().empty();) {
      a = a->get_subcommands().front();
      command += " " + a->get_name();
    }
    std::string what = e.what();
    for (char& c : what)
      if (c == '\n') c = ' ';
    return "ptxbench: " + what + "; see " + command + " --help\n";
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    for (auto& [name, run] : runners)
      if (app.got_subcommand(name)) return run();
  } catch (const ptxbench::Error& e) {
    std::cerr << "ptxbench: " << e.what() << "\n";
    return e.kind() == ptxbench::ErrorKind::kUsage || e.kind() == ptxbench::ErrorKind::kInput ? 2
                                                                                              : 3;
  } catch (const std::exception& e) {
    std::cerr << "ptxbench: internal error: " << e.what() << "\n";
    return 3;
  }
  return 2;
}
