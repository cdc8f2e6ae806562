// Dynamic inspection: per-SASS-instruction counts from Nsight Compute's source page
// (`ncu --page source --print-source sass --metrics inst_executed,thread_inst_executed_true
// --csv`), joined to the static listing, summed per instruction family.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "inspect/sass.h"
#include "task/family.h"

namespace ptxbench {

struct ProfiledInstruction {
  uint64_t offset = 0;                   // from the kernel's first instruction
  std::string text;                      // as ncu prints it ("@P0   EXIT")
  double inst_executed = 0;              // warp-level executions
  double thread_inst_executed_true = 0;  // threads with a true predicate, summed
};

struct ProfiledKernel {
  std::string name;  // as ncu prints it (demangled, its own spelling)
  int launches = 0;  // blocks with this name in the report, summed into one
  std::vector<ProfiledInstruction> instructions;
};

// Parses the CSV of the source page: for each profiled launch a line
// `"Kernel Name","NAME",` and a header `"Address","Source","inst_executed",…`, then one
// row per instruction. Launches of the same kernel are summed by offset. Rows that do not
// parse are skipped and counted in `bad_rows`.
std::vector<ProfiledKernel> ParseNcuSourceCsv(std::string_view csv, size_t* bad_rows = nullptr);

// The ncu wrapper: the candidate's kernels only (the harness's are named ptxbench_*), the
// clocks left as they are, the report written to REPORT_BASE.ncu-rep. The report is read
// back by a second, separate ncu (NcuImportCommand), so nothing the candidate prints on its
// stdout can pose as profiler output.
std::vector<std::string> NcuCommand(const std::string& ncu, const std::string& report_base);
std::vector<std::string> NcuImportCommand(const std::string& ncu, const std::string& report);
// The report's raw page, one row per profiled launch: how many launches there were.
std::vector<std::string> NcuLaunchesCommand(const std::string& ncu, const std::string& report);
// The launches in that page's CSV (rows whose ID is a number).
int CountNcuLaunches(std::string_view raw_csv);

// The source page as ncu 2025.3 prints it can hold each launch's section more than once (on an
// H100, 2026-12-07: every section twice, byte for byte, so the pack GEMM read six launches for
// three calls and twice its tensor-core work). With the report's own launch count: when the
// sections are k times the launches and come in runs of k identical copies, one of each run is
// kept; anything else is a report the harness cannot read (nullopt, `why` says what), and the
// profile fails rather than count work twice.
std::optional<std::string> DedupeNcuSections(std::string_view source_csv, int launches,
                                             std::string* why);
std::optional<std::string> FindNcu();

// Per family, what ran.
struct FamilyExecution {
  long long static_count = 0;
  double warp_executions = 0;
  double thread_executions_true = 0;
  double gmma_flops = 0;  // gmma only: FLOPs done by these instructions
};

struct DynamicInspection {
  std::map<std::string, FamilyExecution> families;
  std::vector<std::string> unmatched_kernels;  // profiled but not found in the static listing
  std::vector<std::string> matched_functions;  // mangled names of the profiled kernels' matches
  // Launches of each matched function that ncu profiled (its "Kernel Name" sections): with the
  // calls made, what says whether a count is per call.
  std::map<std::string, int> launches;
  nlohmann::json evidence = nlohmann::json::array();
  nlohmann::json ToJson() const;
};

// Joins each profiled kernel to the static function whose instructions match its own
// (names are spelled differently by ncu and the demangler; the instruction stream is not),
// then sums per family.
//
// Tensor-core work: a wgmma is issued by the four warps of a warpgroup, and inst_executed
// counts warps, so one warpgroup-level HGMMA.MxNxK is 4 warp executions and 2·M·N·K FLOPs:
// FLOPs = Σ over GMMA instructions of 2·M·N·K · inst_executed / 4. (Calibrated on
// controls/gemm/wgmma_tma.cu, whose wgmma count is known; see docs/gpu-runs.)
// Only GMMA on the task's own input type counts toward its FLOPs: `element` kBF16 (the
// paper's tasks) or kF16 (gemm_f16).
DynamicInspection JoinProfile(const std::vector<ProfiledKernel>& profiled,
                              const std::vector<SassFunction>& functions,
                              DType element = DType::kBF16);

}  // namespace ptxbench
