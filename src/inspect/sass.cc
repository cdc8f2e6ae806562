#include "inspect/sass.h"

#include <cxxabi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <regex>

#include "common/files.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "compile/elf.h"

namespace ptxbench {

namespace fs = std::filesystem;

std::string SassInstruction::Text() const {
  std::string t = predicate.empty() ? opcode : predicate + " " + opcode;
  if (!operands.empty()) t += " " + operands;
  return t;
}

std::string Demangle(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : mangled;
}

std::vector<SassFunction> ParseCuobjdumpSass(std::string_view text) {
  static const std::regex code_for(R"(^\s*code for (sm_\w+))");
  static const std::regex function(R"(^\s*Function : (\S+))");
  // "/*0a40*/   @!P0 HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24 ;   /* 0x… */"
  static const std::regex instruction(
      R"(^\s*/\*([0-9a-fA-F]+)\*/\s+(@!?U?P[0-9T]\s+)?([A-Z][A-Z0-9_]*(\.[A-Za-z0-9_]+)*)\s*([^;]*);)");
  std::vector<SassFunction> out;
  std::string arch;
  std::smatch m;
  for (const std::string& line : SplitLines(text)) {
    if (std::regex_search(line, m, code_for)) {
      arch = m[1];
      continue;
    }
    if (std::regex_search(line, m, function)) {
      SassFunction f;
      f.mangled = m[1];
      f.demangled = Demangle(f.mangled);
      f.arch = arch;
      out.push_back(std::move(f));
      continue;
    }
    if (out.empty() || !std::regex_search(line, m, instruction)) continue;
    SassInstruction i;
    i.offset = std::stoull(m[1].str(), nullptr, 16);
    i.predicate = Trim(m[2].str());
    i.opcode = m[3];
    i.operands = Trim(m[5].str());
    out.back().instructions.push_back(std::move(i));
  }
  return out;
}

std::optional<std::string> FamilyOf(std::string_view opcode) {
  std::string_view base = opcode.substr(0, opcode.find('.'));
  if (base == "HGMMA" || base == "IGMMA" || base == "QGMMA" || base == "BGMMA") return "gmma";
  if (base == "UTMALDG" || base == "UTMASTG" || base == "UTMAREDG") return "tma";
  if (StartsWith(base, "UTC")) return "tcgen05";
  if (base == "LDTM" || base == "STTM") return "tmem";
  if (base == "HMMA" || base == "IMMA") return "mma_sync";
  return std::nullopt;
}

std::vector<std::string> InstructionFamilies() {
  return {"gmma", "tma", "tcgen05", "tmem", "mma_sync"};
}

bool IsBf16Gmma(std::string_view opcode) {
  if (opcode.rfind("HGMMA.", 0) != 0) return false;
  for (size_t at = opcode.find(".BF16"); at != std::string_view::npos;
       at = opcode.find(".BF16", at + 1)) {
    size_t end = at + 5;
    if (end == opcode.size() || opcode[end] == '.') return true;
  }
  return false;
}

std::optional<double> GmmaFlops(std::string_view opcode) {
  static const std::regex shape(R"(\.(\d+)x(\d+)x(\d+))");
  std::string s(opcode);
  std::smatch m;
  if (!std::regex_search(s, m, shape)) return std::nullopt;
  return 2.0 * std::stod(m[1]) * std::stod(m[2]) * std::stod(m[3]);
}

std::map<std::string, long long> StaticInspection::Totals() const {
  std::map<std::string, long long> t;
  for (const auto& f : InstructionFamilies()) t[f] = 0;
  for (const auto& fn : functions)
    for (const auto& i : fn.instructions)
      if (auto fam = FamilyOf(i.opcode)) ++t[*fam];
  return t;
}

nlohmann::json StaticInspection::ToJson() const {
  nlohmann::json fns = nlohmann::json::array();
  for (const auto& fn : functions) {
    std::map<std::string, long long> counts;
    nlohmann::json evidence = nlohmann::json::array();
    for (const auto& i : fn.instructions) {
      auto fam = FamilyOf(i.opcode);
      if (!fam) continue;
      ++counts[*fam];
      // Matched lines as evidence, a bounded number per function.
      if (evidence.size() < 32) {
        char off[24];
        std::snprintf(off, sizeof off, "/*%04llx*/", static_cast<unsigned long long>(i.offset));
        evidence.push_back(std::string(off) + " " + i.Text());
      }
    }
    fns.push_back({{"mangled", fn.mangled},
                   {"demangled", fn.demangled},
                   {"arch", fn.arch},
                   {"instructions", fn.instructions.size()},
                   {"families", counts},
                   {"evidence", evidence}});
  }
  return {{"state", state},
          {"message", message},
          {"tool", tool},
          {"fatbin_sha256", fatbin_sha256},
          {"cubin_sha256", cubin_sha256},
          {"functions", fns},
          {"totals", Totals()},
          {"seconds", seconds}};
}

std::optional<std::string> FindCuobjdump() {
  if (auto p = FindProgram("cuobjdump")) return p;
  // The pinned wheel that scripts/setup.sh installs where the toolkit lacks the tool.
  std::string pinned = std::string(PTXBENCH_SOURCE_DIR) + "/.tools/nvidia/cu13/bin/cuobjdump";
  if (auto p = FindProgram(pinned)) return p;
  return std::nullopt;
}

StaticInspection InspectSharedObject(const std::string& so, const std::string& work_dir) {
  auto t0 = std::chrono::steady_clock::now();
  StaticInspection s;
  auto finish = [&]() {
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return s;
  };
  auto tool = FindCuobjdump();
  if (!tool) {
    s.state = "skipped";
    s.message = "cuobjdump not found (install the CUDA toolkit, or run scripts/setup.sh)";
    return finish();
  }
  s.tool = *tool;
  try {
    s.fatbin_sha256 = Sha256Hex(ReadElfSection(so, ".nv_fatbin"));
  } catch (const std::exception& e) {
    s.state = "failed";
    s.message = std::string("cannot read the embedded device code: ") + e.what();
    return finish();
  }
  // The cubins themselves, hashed as extracted (names can repeat; each is hashed as it lands).
  std::string dir = work_dir + "/cubins";
  MakeDirs(dir);
  // Extract the cubins (milliseconds), then disassemble them: about twice as fast as
  // disassembling the shared object itself, which cuobjdump first unpacks.
  RunCommand({"/bin/sh", "-c", "cd '" + dir + "' && exec '" + *tool + "' -xelf all '" + so + "'"},
             std::chrono::seconds(60));
  std::vector<std::string> cubins;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".cubin") cubins.push_back(e.path().string());
  std::sort(cubins.begin(), cubins.end());
  for (const auto& c : cubins) s.cubin_sha256.push_back(Sha256FileHex(c));
  std::vector<std::string> argv = {*tool, "-sass"};
  argv.insert(argv.end(), cubins.begin(), cubins.end());
  CommandResult r;
  if (!cubins.empty()) {
    r = RunCommand(argv, std::chrono::seconds(60));
    s.functions = ParseCuobjdumpSass(r.output);
  }
  // Extracted files can share a name (and overwrite each other); when that leaves nothing to
  // read, the shared object itself is disassembled, which always sees every cubin.
  if (s.functions.empty()) {
    r = RunCommand({*tool, "-sass", so}, std::chrono::seconds(60));
    s.functions = ParseCuobjdumpSass(r.output);
  }
  if (r.exit.kind != ExitKind::kExited || r.exit.code != 0) {
    s.state = "failed";
    s.message = "cuobjdump -sass " + r.exit.Describe() + ": " + Truncate(Trim(r.output), 300);
    return finish();
  }
  s.state = "ran";
  return finish();
}

}  // namespace ptxbench
