// `ptxbench fixit export`, the stage: each failure with a verified repair and accepted
// reasoning (for that very context and repair) as an SFT row; the split and the dataset card
// as sft.h writes them.
#pragma once

#include <string>

#include "fixit/sft.h"

namespace ptxbench {

struct FixitExportOptions {
  std::string dir;    // the work folder
  ExportOptions sft;  // out_dir empty: DIR/export
};

// Returns what WriteSftExport wrote, and where (the out_dir used).
ExportSummary RunFixitExportStage(const FixitExportOptions& options, std::string* out_dir);

}  // namespace ptxbench
