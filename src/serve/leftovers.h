// What a killed worker or evaluator leaves behind, found and removed by whoever notices it: the
// supervising `serve` when it reaps a worker, and every worker as it starts (for workers
// started by hand, and for killed `ptxbench eval` runs). Each kind of scratch carries the pid
// of the process that made it, so that only a dead process's is touched:
//   - scratch folders (common/files.h ScratchDir, <prefix>.<pid>.XXXXXX) in /dev/shm and
//     $TMPDIR: an evaluation's inputs, outputs and logs (on a GPU host, reference outputs in RAM);
//   - nvcc's tmpxft_<pid in hex>_* files in $TMPDIR (a build outside the sandbox);
//   - the caches' unfinished entries, <entry>.tmp.<pid>[.…], one level under each folder of the
//     cache root (build, reference, flashinfer), with the tmpxft files of the build inside.
// Only what belongs to this user is removed; a pid that is alive (or reused) keeps its scratch.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ptxbench {

struct Leftovers {
  int scratch_folders = 0;  // /dev/shm and $TMPDIR
  int tmpxft_files = 0;     // $TMPDIR
  int cache_tmp = 0;        // unfinished cache entries
  int total() const { return scratch_folders + tmpxft_files + cache_tmp; }
};

// Whether `pid` is a live process (ours or another user's): whose scratch is kept.
bool ProcessAlive(pid_t pid);

// Removes the leftovers of the processes in `pids` (empty: of every process that is not alive)
// under /dev/shm, $TMPDIR (or /tmp) and `cache_root`; returns what it removed. Never throws.
Leftovers RemoveLeftovers(const std::string& cache_root, const std::vector<pid_t>& pids = {});

// The same search without removing anything (for tests and logs).
Leftovers CountLeftovers(const std::string& cache_root, const std::vector<pid_t>& pids = {});

}  // namespace ptxbench
