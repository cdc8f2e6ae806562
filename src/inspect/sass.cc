#include "inspect/sass.h"

#include <cxxabi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <regex>

#include "common/error.h"
#include "common/files.h"
#include "common/sandbox.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "compile/elf.h"
#include "compile/nvcc.h"

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

bool IsF16Gmma(std::string_view opcode) {
  if (opcode.rfind("HGMMA.", 0) != 0) return false;
  for (std::string_view other : {".BF16", ".TF32"})
    for (size_t at = opcode.find(other); at != std::string_view::npos;
         at = opcode.find(other, at + 1))
      if (at + other.size() == opcode.size() || opcode[at + other.size()] == '.') return false;
  return true;
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

namespace {

// The tool's folder inside `work_dir`, with a copy of `so` in it, both the sandbox user's when
// it drops to one (`work_dir` then traversable, not listable, for that user); the copy's path.
std::string PrepareToolFolder(const std::string& work_dir, const std::string& dir,
                              const std::string& so, const SandboxPolicy& p) {
  const bool drop = p.drop_user && ProbeSandbox().user_drop;
  auto give = [&](const std::string& path) {
    if (drop && ::chown(path.c_str(), p.uid, p.gid) != 0)
      throw EnvironmentError("cannot hand " + path + " to the sandbox user");
  };
  if (drop) ::chmod(work_dir.c_str(), 0711);
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (::mkdir(dir.c_str(), 0700) != 0) throw EnvironmentError("cannot make " + dir);
  give(dir);
  const std::string copy = dir + "/candidate.so";
  fs::copy_file(so, copy, ec);
  if (ec) throw EnvironmentError("cannot copy " + so + ": " + ec.message());
  give(copy);
  ::chmod(copy.c_str(), 0400);
  return copy;
}

// Whether a user of no group of ours can run `tool`: every folder above it searchable by
// others, the file readable and executable by them (the pinned copy under a home folder is not).
bool OthersCanRun(const std::string& tool) {
  std::error_code ec;
  const fs::path real = fs::canonical(tool, ec);
  if (ec) return false;
  struct stat st;
  if (::stat(real.c_str(), &st) != 0 || (st.st_mode & 05) != 05) return false;
  for (fs::path p = real.parent_path(); !p.empty(); p = p.parent_path()) {
    if (::stat(p.c_str(), &st) != 0 || (st.st_mode & 01) == 0) return false;
    if (p == p.root_path()) break;
  }
  return true;
}

}  // namespace

SandboxPolicy ObjectToolPolicy(const std::string& tool, const std::string& folder) {
  // nvcc's own confinement (its environment allow-list, namespaces, Landlock over the system
  // and the tool's install folder, /dev/null, rlimits), writing only `folder`; and the user of
  // the evaluation's children rather than root, since nothing of ours needs writing.
  SandboxPolicy p = NvccSandboxPolicy(tool, folder);
  p.env_set = {{"HOME", folder}, {"TMPDIR", folder}};
  // Where the sandbox user could not run the tool at all (a pinned copy under a home folder),
  // it keeps our uid; Landlock, the namespaces and the allow-list still hold.
  p.drop_user = OthersCanRun(tool);
  p.limits.cpu_seconds = 120;
  return p;
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
  // cuobjdump parses an object built from a candidate's source: it runs confined
  // (ObjectToolPolicy) in a folder of its own that holds a copy of the object.
  const std::string dir = work_dir + "/cubins";
  SandboxPolicy policy = ObjectToolPolicy(*tool, dir);
  PreparedSandbox sandbox;
  std::string object;
  try {
    if (ProbeSandbox().user_drop) {
      const SandboxUser user = ClaimSandboxUser(work_dir);
      policy.uid = user.uid;
      policy.gid = user.gid;
    }
    object = PrepareToolFolder(work_dir, dir, so, policy);
    sandbox = PreparedSandbox(policy);
  } catch (const std::exception& e) {
    s.state = "failed";
    s.message = std::string("cannot prepare the disassembler's folder: ") + e.what();
    return finish();
  }
  auto run = [&](const std::vector<std::string>& args) {
    std::string line = "cd '" + dir + "' && exec '" + *tool + "'";
    for (const std::string& a : args) line += " '" + a + "'";
    return RunCommand({"/bin/sh", "-c", line}, std::chrono::seconds(60), {}, &sandbox);
  };
  // Extract the cubins (milliseconds), then disassemble them: about twice as fast as
  // disassembling the shared object itself, which cuobjdump first unpacks.
  // A fatbin that cuobjdump cannot walk whole (bytes the candidate placed in .nv_fatbin) is a
  // failure even where some cubins came out: what it could not read may be what runs.
  const CommandResult extracted = run({"-xelf", "all", object});
  if (extracted.exit.kind != ExitKind::kExited || extracted.exit.code != 0) {
    s.state = "failed";
    s.message = "cuobjdump -xelf all " + extracted.exit.Describe() + ": " +
                Truncate(Trim(extracted.output), 300);
    return finish();
  }
  std::vector<std::string> cubins;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".cubin") cubins.push_back(e.path().string());
  std::sort(cubins.begin(), cubins.end());
  for (const auto& c : cubins) s.cubin_sha256.push_back(Sha256FileHex(c));
  std::vector<std::string> args = {"-sass"};
  args.insert(args.end(), cubins.begin(), cubins.end());
  CommandResult r;
  if (!cubins.empty()) {
    r = run(args);
    s.functions = ParseCuobjdumpSass(r.output);
  }
  // Extracted files can share a name (and overwrite each other); when that leaves nothing to
  // read, the shared object itself is disassembled, which always sees every cubin.
  if (s.functions.empty()) {
    r = run({"-sass", object});
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
