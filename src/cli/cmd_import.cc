// `ptxbench import PATH... [--db FILE]`: run folders, trajectory files and evaluation records
// written without a store, into the store (idempotent: importing again updates in place).
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "common/error.h"
#ifdef PTXBENCH_HAVE_SQLITE
#include "store/import.h"
#include "store/store.h"
#endif

namespace ptxbench {

std::string DefaultStorePath() { return "results/ptxbench.db"; }

CommandRunner AddImportCommand(CLI::App& app) {
  struct Options {
    std::vector<std::string> paths;
    std::string db = DefaultStorePath();
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("import", "Put run folders and records into the store");
  cmd->add_option("paths", o->paths, "Run folders, folders of them, trajectory or record files")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option("--db", o->db, "The results store (SQLite)")
      ->envname("PTXBENCH_DB")
      ->capture_default_str();
#ifndef PTXBENCH_HAVE_SQLITE
  // Built without SQLite (not found, or -DPTXBENCH_WITH_SQLITE=OFF): one line, exit 3. The
  // runner still owns the options: CLI11 writes into them while parsing.
  return [o]() -> int {
    throw EnvironmentError(
        "this ptxbench was built without SQLite: no results store to import into (rebuild "
        "with SQLite's headers, libsqlite3-dev)");
  };
#else
  return [o]() {
    auto store = ResultsStore::Open(o->db);
    int problems = 0;
    for (const std::string& p : o->paths) {
      ImportSummary s = ImportPath(*store, p);
      std::printf(
          "%s: %d runs, %d trajectories, %d turns, %d evaluations; %d malformed, %d "
          "missing evaluation files\n",
          p.c_str(), s.runs, s.trajectories, s.turns, s.evaluations, s.malformed,
          s.missing_evaluations);
      for (const auto& pr : s.problems)
        std::fprintf(stderr, "  %s: %s\n", pr.path.c_str(), pr.message.c_str());
      problems += s.malformed;
    }
    std::printf("store %s\n", store->path().c_str());
    return problems ? 1 : 0;
  };
#endif
}

}  // namespace ptxbench
