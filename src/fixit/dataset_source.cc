#include "fixit/dataset_source.h"

#include "common/error.h"
#include "common/files.h"
#include "report/from_runs.h"
#ifdef PTXBENCH_HAVE_SQLITE
#include "store/store.h"
#endif

namespace ptxbench {

Dataset LoadDatasetFor(const std::string& db, const std::vector<std::string>& runs,
                       const std::vector<std::string>& models,
                       const std::vector<std::string>& tasks, const std::vector<std::string>& packs,
                       const std::vector<std::string>& archs, std::vector<std::string>* problems) {
  if (!db.empty() && !runs.empty()) throw UsageError("--db and --runs exclude each other");
  if (!db.empty()) {
#ifdef PTXBENCH_HAVE_SQLITE
    if (!FileExists(db)) throw InputError("no results store at " + db);
    StoreFilter f;
    f.models = models;
    f.tasks = tasks;
    f.packs = packs;
    f.archs = archs;
    return ResultsStore::Open(db)->Load(f);
#else
    throw EnvironmentError("this ptxbench was built without SQLite: no results store (--db)");
#endif
  }
  if (runs.empty()) throw UsageError("name the trajectories: --db STORE or --runs FOLDER");
  RunFolderLoad load = LoadRunFolders(runs);
  for (const std::string& s : load.skipped) problems->push_back(s);
  return load.dataset;
}

}  // namespace ptxbench
