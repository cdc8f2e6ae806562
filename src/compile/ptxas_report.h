// The `ptxas -v` resource report, parsed: one entry per compiled entry function.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ptxbench {

struct PtxasFunction {
  std::string name;  // mangled, as ptxas prints it
  std::string arch;
  int registers = 0;
  int barriers = 0;
  long stack_frame_bytes = 0;
  long spill_store_bytes = 0;
  long spill_load_bytes = 0;
  long shared_bytes = 0;
  long constant_bytes = 0;  // cmem[0], the kernel parameters and constants
};

std::vector<PtxasFunction> ParsePtxasReport(std::string_view log);
nlohmann::json ToJson(const std::vector<PtxasFunction>& functions);

// The compiler's own messages trimmed to what a person needs: each error with the source
// line and caret nvcc prints under it, ptxas and linker errors, at most `max_lines` lines;
// progress chatter (`ptxas info`) dropped. Falls back to the log's tail when no error line
// is recognised.
std::string TrimCompilerErrors(std::string_view log, size_t max_lines = 40);

}  // namespace ptxbench
