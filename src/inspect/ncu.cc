#include "inspect/ncu.h"

#include <algorithm>
#include <cstdlib>

#include "common/strings.h"
#include "common/subprocess.h"

namespace ptxbench {

namespace {

// Splits one CSV line with double-quoted fields ("" is a quote inside a field).
std::vector<std::string> CsvFields(std::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false, any = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    any = true;
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  if (any && (!cur.empty() || (!line.empty() && line.back() != ','))) out.push_back(cur);
  return out;
}

bool ParseNumber(const std::string& s, double* v) {
  std::string t;
  for (char c : s)
    if (c != ',' && c != ' ') t += c;  // thousands separators, if a locale adds them
  if (t.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(t.c_str(), &end);
  return end && *end == '\0';
}

// "@P0   EXIT" and "@P0 EXIT ;" compare equal.
std::string Normalize(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == ';') break;
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::string OpcodeOf(const std::string& normalized) {
  std::string t = normalized;
  if (!t.empty() && t[0] == '@')
    t = t.substr(t.find(' ') == std::string::npos ? t.size() : t.find(' ') + 1);
  return t.substr(0, t.find(' '));
}

}  // namespace

std::vector<ProfiledKernel> ParseNcuSourceCsv(std::string_view csv, size_t* bad_rows) {
  std::vector<ProfiledKernel> kernels;
  size_t bad = 0;
  ProfiledKernel* current = nullptr;
  int col_addr = -1, col_src = -1, col_warp = -1, col_thread = -1;
  uint64_t base = 0;
  bool have_base = false;
  std::map<uint64_t, size_t> index;  // offset -> instruction of current
  for (const std::string& line : SplitLines(csv)) {
    if (line.empty() || line[0] != '"') continue;  // ==PROF== lines and the like
    std::vector<std::string> f = CsvFields(line);
    if (f.size() >= 2 && f[0] == "Kernel Name") {
      auto it = std::find_if(kernels.begin(), kernels.end(),
                             [&](const ProfiledKernel& k) { return k.name == f[1]; });
      if (it == kernels.end()) {
        kernels.push_back({f[1], 0, {}});
        it = kernels.end() - 1;
      }
      current = &*it;
      ++current->launches;
      index.clear();
      for (size_t i = 0; i < current->instructions.size(); ++i)
        index[current->instructions[i].offset] = i;
      have_base = false;
      col_addr = col_src = col_warp = col_thread = -1;
      continue;
    }
    if (!current) continue;
    if (f.size() >= 2 && f[0] == "Address") {
      for (size_t i = 0; i < f.size(); ++i) {
        if (f[i] == "Address") col_addr = int(i);
        if (f[i] == "Source") col_src = int(i);
        if (f[i] == "inst_executed") col_warp = int(i);
        if (f[i] == "thread_inst_executed_true") col_thread = int(i);
      }
      continue;
    }
    int need = std::max({col_addr, col_src, col_warp, col_thread});
    if (col_addr < 0 || col_src < 0 || col_warp < 0 || col_thread < 0 || int(f.size()) <= need) {
      ++bad;
      continue;
    }
    uint64_t addr;
    try {
      addr = std::stoull(f[col_addr], nullptr, 16);
    } catch (const std::exception&) {
      ++bad;
      continue;
    }
    double warp, thread;
    if (!ParseNumber(f[col_warp], &warp) || !ParseNumber(f[col_thread], &thread)) {
      ++bad;
      continue;
    }
    if (!have_base) {
      base = addr;
      have_base = true;
    }
    uint64_t offset = addr - base;
    auto it = index.find(offset);
    if (it == index.end()) {
      index[offset] = current->instructions.size();
      current->instructions.push_back({offset, f[col_src], warp, thread});
    } else {
      current->instructions[it->second].inst_executed += warp;
      current->instructions[it->second].thread_inst_executed_true += thread;
    }
  }
  if (bad_rows) *bad_rows = bad;
  return kernels;
}

std::vector<std::string> NcuCommand(const std::string& ncu, const std::string& report_base) {
  return {ncu,
          "--clock-control",
          "none",  // measure the card as it is; never change its clocks
          "--kernel-name",
          "regex:^(?!ptxbench_)",
          "--metrics",
          "inst_executed,thread_inst_executed_true",
          "--force-overwrite",
          "-o",
          report_base};
}

std::vector<std::string> NcuImportCommand(const std::string& ncu, const std::string& report) {
  return {ncu, "--import", report, "--page", "source", "--print-source", "sass", "--csv"};
}

std::vector<std::string> NcuLaunchesCommand(const std::string& ncu, const std::string& report) {
  return {ncu, "--import", report, "--page", "raw", "--csv", "--metrics", "inst_executed"};
}

int CountNcuLaunches(std::string_view raw_csv) {
  int n = 0;
  for (const std::string& line : SplitLines(raw_csv)) {
    if (line.size() < 3 || line[0] != '"') continue;
    const std::vector<std::string> f = CsvFields(line);
    if (!f.empty() && !f[0].empty() &&
        std::all_of(f[0].begin(), f[0].end(), [](char c) { return c >= '0' && c <= '9'; }))
      ++n;
  }
  return n;
}

std::optional<std::string> DedupeNcuSections(std::string_view source_csv, int launches,
                                             std::string* why) {
  // The text before the first section (ncu's own lines), then each section as printed.
  std::string head;
  std::vector<std::string> sections;
  for (const std::string& line : SplitLines(source_csv)) {
    if (line.rfind("\"Kernel Name\"", 0) == 0) sections.emplace_back();
    (sections.empty() ? head : sections.back()) += line + "\n";
  }
  const int n = static_cast<int>(sections.size());
  auto fail = [&](const std::string& what) -> std::optional<std::string> {
    if (why) *why = what;
    return std::nullopt;
  };
  if (n == 0) return std::string(source_csv);  // no kernel at all: the caller says so
  if (launches <= 0) return fail("the profiler's report lists no launch");
  if (n % launches != 0)
    return fail("the profiler's source page has " + std::to_string(n) + " kernel sections for " +
                std::to_string(launches) + " launches");
  const int copies = n / launches;
  std::string out = head;
  for (int i = 0; i < n; i += copies) {
    for (int c = 1; c < copies; ++c)
      if (sections[i + c] != sections[i])
        return fail("the profiler's source page has " + std::to_string(n) +
                    " kernel sections for " + std::to_string(launches) +
                    " launches, and not as identical copies");
    out += sections[i];
  }
  return out;
}

std::optional<std::string> FindNcu() { return FindProgram("ncu"); }

DynamicInspection JoinProfile(const std::vector<ProfiledKernel>& profiled,
                              const std::vector<SassFunction>& functions, DType element) {
  DynamicInspection d;
  for (const auto& f : InstructionFamilies()) d.families[f] = {};
  for (const auto& fn : functions)
    for (const auto& i : fn.instructions)
      if (auto fam = FamilyOf(i.opcode)) ++d.families[*fam].static_count;

  // Each function's instructions by offset, built once for every profiled kernel.
  using OffsetIndex = std::map<uint64_t, const SassInstruction*>;
  std::vector<OffsetIndex> indexes(functions.size());
  for (size_t f = 0; f < functions.size(); ++f)
    for (const auto& i : functions[f].instructions) indexes[f][i.offset] = &i;

  for (const ProfiledKernel& k : profiled) {
    std::vector<std::string> opcodes;  // the profiled opcodes, normalized once
    for (const auto& p : k.instructions) opcodes.push_back(OpcodeOf(Normalize(p.text)));
    // The static function whose opcode at each profiled offset agrees best.
    size_t best = functions.size();
    size_t best_score = 0;
    for (size_t f = 0; f < functions.size(); ++f) {
      size_t score = 0;
      for (size_t n = 0; n < k.instructions.size(); ++n) {
        auto it = indexes[f].find(k.instructions[n].offset);
        if (it != indexes[f].end() && opcodes[n] == it->second->opcode) ++score;
      }
      if (score > best_score) {
        best_score = score;
        best = f;
      }
    }
    // Demand near-total agreement: a wrong join would credit the wrong instructions.
    if (best == functions.size() || best_score * 100 < k.instructions.size() * 95) {
      d.unmatched_kernels.push_back(k.name);
      continue;
    }
    d.matched_functions.push_back(functions[best].mangled);
    d.launches[functions[best].mangled] += k.launches;
    const OffsetIndex& by_offset = indexes[best];
    for (const auto& p : k.instructions) {
      auto it = by_offset.find(p.offset);
      if (it == by_offset.end()) continue;
      auto fam = FamilyOf(it->second->opcode);
      if (!fam) continue;
      FamilyExecution& e = d.families[*fam];
      e.warp_executions += p.inst_executed;
      e.thread_executions_true += p.thread_inst_executed_true;
      // Work counts only in the task's own type: bf16 inputs (HGMMA….BF16), or fp16 for an
      // fp16 task. A one-bit BGMMA or an int8 IGMMA on junk has a bigger shape per
      // instruction and does none of the work.
      const bool own_type =
          element == DType::kF16 ? IsF16Gmma(it->second->opcode) : IsBf16Gmma(it->second->opcode);
      if (*fam == "gmma" && own_type)
        if (auto flops = GmmaFlops(it->second->opcode))
          e.gmma_flops += *flops * p.inst_executed / 4.0;
      if (d.evidence.size() < 32)
        d.evidence.push_back({{"kernel", functions[best].mangled},
                              {"offset", p.offset},
                              {"instruction", it->second->Text()},
                              {"inst_executed", p.inst_executed},
                              {"thread_inst_executed_true", p.thread_inst_executed_true}});
    }
  }
  return d;
}

nlohmann::json DynamicInspection::ToJson() const {
  nlohmann::json fams = nlohmann::json::object();
  for (const auto& [name, e] : families) {
    fams[name] = {{"static_count", e.static_count},
                  {"warp_executions", e.warp_executions},
                  {"thread_executions_true", e.thread_executions_true}};
    if (name == "gmma") fams[name]["flops"] = e.gmma_flops;
  }
  return {{"families", fams},
          {"unmatched_kernels", unmatched_kernels},
          {"kernels", matched_functions},
          {"launches", launches},
          {"evidence", evidence}};
}

}  // namespace ptxbench
