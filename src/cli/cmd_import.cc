// `ptxbench import PATH... [--db FILE]`: run folders, trajectory files and evaluation records
// written without a store, into the store (idempotent: importing again updates in place).
#include <cstdio>
#include <memory>

#include <filesystem>
#include "cli/commands.h"
#include "cli/shared_options.h"
#include "common/error.h"
#include "common/files.h"

#include "agent/upstream.h"
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
    std::string tasks_dir, upstream_out;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("import", "Put run folders and records into the store");
  cmd->add_option("paths", o->paths, "Run folders, folders of them, trajectory or record files")
      ->required()
      ->check(CLI::ExistingPath);
  AddStoreOption(cmd, &o->db, "The results store (SQLite)", StoreSource::kEnvironment)
      ->capture_default_str();
  cmd->add_option("--upstream-out", o->upstream_out,
                  "Where an upstream experiment folder is judged again, a run folder per "
                  "experiment (default: upstream/ beside the store)");
  AddTasksDirOption(cmd, &o->tasks_dir);
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
    // Importing makes the store, its folder too (results/ on a fresh checkout).
    std::string db_folder = std::filesystem::path(o->db).parent_path().string();
    if (!db_folder.empty()) MakeDirs(db_folder);
    auto store = ResultsStore::Open(o->db);
    int problems = 0, malformed = 0;
    for (const std::string& p : o->paths) {
      if (IsUpstreamExperiment(p)) {
        // Upstream's verdicts are not ours to copy: every turn's kernel is judged again by our
        // layers (the replay of `run --upstream`), and that run goes into the store.
        namespace fs = std::filesystem;
        std::string base = o->upstream_out.empty()
                               ? (fs::path(o->db).parent_path() / "upstream").string()
                               : o->upstream_out;
        if (base.empty()) base = "upstream";
        std::string out = base + "/" + fs::weakly_canonical(p).filename().string();
        MakeDirs(base);
        std::printf("%s: an upstream experiment; judging every turn again into %s\n", p.c_str(),
                    out.c_str());
        std::fflush(stdout);
        int rc = RejudgeUpstream({p, out, o->db, o->tasks_dir, true});
        std::printf("%s: judged again (run exit %d); in the store as run %s\n", p.c_str(), rc,
                    out.c_str());
        if (rc != 0) ++problems;
        continue;
      }
      ImportSummary s = ImportPath(*store, p);
      std::printf(
          "%s: %d runs, %d trajectories, %d turns, %d evaluations; %d malformed, %d "
          "missing evaluation files\n",
          p.c_str(), s.runs, s.trajectories, s.turns, s.evaluations, s.malformed,
          s.missing_evaluations);
      for (const auto& pr : s.problems)
        std::fprintf(stderr, "  %s: %s\n", pr.path.c_str(), pr.message.c_str());
      malformed += s.malformed;
    }
    std::printf("store %s\n", store->path().c_str());
    // Malformed files are bad input (exit 2, what was well-formed is in the store); a run
    // judged again that did not finish cleanly is 1.
    if (malformed) return 2;
    return problems ? 1 : 0;
  };
#endif
}

}  // namespace ptxbench
