// Reports from the service's database alone (`ptxbench report --db postgresql://…`): the
// clients tag every job with its run, trajectory and turn (agent/loop.h EvaluationTag), so the
// finished jobs regroup into trajectories without the clients' run folders.
//
// What the database cannot know: turns that never reached the evaluator (a reply without a
// kernel, a model error) and whether a trajectory finished. A trajectory's turns are the
// evaluated ones, with their own turn numbers, so "first correct turn" and correct@T are
// exact; counts of spent turns are not.
#pragma once

#include <vector>

#include "record/report_rows.h"
#include "serve/job_queue.h"

namespace ptxbench {

struct ServiceDatasetLoad {
  Dataset dataset;
  int evaluations = 0;  // finished jobs read
  int untagged = 0;     // jobs without a trajectory tag (ptxbench submit, other clients)
  int repeated = 0;     // a turn evaluated again (a resumed client): the later one counts
};

ServiceDatasetLoad DatasetFromServiceJobs(const std::vector<FinishedJob>& jobs);

}  // namespace ptxbench
