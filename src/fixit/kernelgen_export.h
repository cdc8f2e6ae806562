// `ptxbench kernelgen export`, the export: SFT rows from correct kernels that earned the
// architecture credit at run time (system, task, then the model's reasoning in <think>…</think>
// and the kernel), with the split and card of `fixit export` (sft.h).
#pragma once

#include <string>
#include <vector>

#include "fixit/sft.h"

namespace ptxbench {

struct KernelgenExportOptions {
  std::string db;  // the results store to read, or runs
  std::vector<std::string> runs, models, tasks, packs, archs;
  double min_speedup = 0;  // 0: any
  ExportOptions sft;       // out_dir required
};

// Every verified turn judged again from its record; `problems` gets "what: why" for turns and
// files that could not be read.
ExportSummary RunKernelgenExport(const KernelgenExportOptions& options,
                                 std::vector<std::string>* problems);

}  // namespace ptxbench
