#include "compile/ptxas_report.h"

#include <regex>

#include "common/strings.h"

namespace ptxbench {

std::vector<PtxasFunction> ParsePtxasReport(std::string_view log) {
  // ptxas prints, per entry (format of CUDA 12 and 13):
  //   ptxas info    : Compiling entry function '_Z4gemm...' for 'sm_90a'
  //   ptxas info    : Function properties for _Z4gemm...
  //       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  //   ptxas info    : Used 31 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]
  static const std::regex compiling(R"(Compiling entry function '([^']+)' for '([^']+)')");
  static const std::regex frame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex barriers(R"(used (\d+) barriers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  static const std::regex cmem(R"((\d+) bytes cmem\[0\])");
  std::vector<PtxasFunction> out;
  std::smatch m;
  for (const std::string& line : SplitLines(log)) {
    if (std::regex_search(line, m, compiling)) {
      PtxasFunction f;
      f.name = m[1];
      f.arch = m[2];
      out.push_back(f);
      continue;
    }
    if (out.empty()) continue;
    PtxasFunction& f = out.back();
    if (std::regex_search(line, m, frame)) {
      f.stack_frame_bytes = std::stol(m[1]);
      f.spill_store_bytes = std::stol(m[2]);
      f.spill_load_bytes = std::stol(m[3]);
    }
    if (std::regex_search(line, m, used)) {
      f.registers = std::stoi(m[1]);
      if (std::regex_search(line, m, barriers)) f.barriers = std::stoi(m[1]);
      if (std::regex_search(line, m, smem)) f.shared_bytes = std::stol(m[1]);
      if (std::regex_search(line, m, cmem)) f.constant_bytes = std::stol(m[1]);
    }
  }
  return out;
}

nlohmann::json ToJson(const std::vector<PtxasFunction>& functions) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& f : functions)
    arr.push_back({{"name", f.name},
                   {"arch", f.arch},
                   {"registers", f.registers},
                   {"barriers", f.barriers},
                   {"stack_frame_bytes", f.stack_frame_bytes},
                   {"spill_store_bytes", f.spill_store_bytes},
                   {"spill_load_bytes", f.spill_load_bytes},
                   {"shared_bytes", f.shared_bytes},
                   {"constant_bytes", f.constant_bytes}});
  return arr;
}

std::string TrimCompilerErrors(std::string_view log, size_t max_lines) {
  static const std::regex error_line(
      R"((: error|: fatal error|^ptxas (error|fatal)|ptxas fatal|error   :|undefined reference|^nvcc (error|fatal)|^nvlink error|catastrophic error))");
  std::vector<std::string> lines = SplitLines(log);
  std::vector<std::string> kept;
  size_t errors = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!std::regex_search(lines[i], error_line)) continue;
    ++errors;
    if (kept.size() >= max_lines) continue;
    kept.push_back(lines[i]);
    // nvcc's front end prints the offending source line and a caret line under an error.
    for (size_t j = i + 1; j < lines.size() && j <= i + 2 && kept.size() < max_lines; ++j) {
      if (lines[j].empty() || std::regex_search(lines[j], error_line) ||
          StartsWith(lines[j], "ptxas info"))
        break;
      kept.push_back(lines[j]);
    }
  }
  if (kept.empty()) {
    std::string tail;
    for (const auto& l : lines)
      if (!StartsWith(l, "ptxas info") && !StartsWith(l, "    ")) tail += l + "\n";
    return TailLines(tail, max_lines);
  }
  std::string out;
  for (const auto& l : kept) out += l + "\n";
  if (kept.size() >= max_lines)
    out += "[" + std::to_string(errors) + " errors in all; the rest cut]\n";
  return out;
}

}  // namespace ptxbench
