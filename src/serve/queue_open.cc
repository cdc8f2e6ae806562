// Which backend a --db names, and whether this binary has it.
#include "common/error.h"
#include "serve/job_queue.h"

namespace ptxbench {

std::unique_ptr<JobQueue> OpenSqliteJobQueue(const std::string& path);
std::unique_ptr<JobQueue> OpenPostgresJobQueue(const std::string& url);

std::unique_ptr<JobQueue> OpenJobQueue(const std::string& where) {
  if (where.empty()) throw UsageError("the job queue needs --db (a store file or postgresql://…)");
  if (IsPostgresUrl(where)) {
#ifdef PTXBENCH_HAVE_POSTGRES
    return OpenPostgresJobQueue(where);
#else
    throw EnvironmentError(
        "this ptxbench was built without libpq: no PostgreSQL queue (install libpq-dev and "
        "rebuild)");
#endif
  }
#ifdef PTXBENCH_HAVE_SQLITE
  return OpenSqliteJobQueue(where);
#else
  throw EnvironmentError("this ptxbench was built without SQLite: no single-host queue (" + where +
                         "); use a postgresql:// queue");
#endif
}

}  // namespace ptxbench
