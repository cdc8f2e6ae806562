#include "build/nvcc.h"

#include <cstdlib>
#include <filesystem>
#include <regex>

#include <unistd.h>

#include "common/error.h"
#include "common/files.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "common/subprocess.h"

namespace ptxbench {

namespace fs = std::filesystem;

namespace {

// Bump when the recipe below changes in a way the key would not see.
constexpr const char* kRecipeVersion = "build-recipe/1";

struct ArchTarget {
  const char* arch;
  const char* gencode;
};
// `-gencode` rather than `-arch=sm_90a`: with nvcc 13.0 the shorthand also runs a plain
// sm_90 pass that rejects wgmma and setmaxnreg.
constexpr ArchTarget kTargets[] = {
    {"sm_90a", "arch=compute_90a,code=sm_90a"},
    {"sm_100a", "arch=compute_100a,code=sm_100a"},
};

std::vector<std::string> Flags(const std::string& arch) {
  const char* gencode = nullptr;
  for (const auto& t : kTargets)
    if (arch == t.arch) gencode = t.gencode;
  // -lineinfo: the memory checker names source lines. -cudart shared: the candidate uses the
  // same CUDA runtime as the harness that loads it. -lcuda: the driver API (tensor maps).
  return {"-O3",      "-std=c++17", "-shared", "-Xcompiler", "-fPIC",   "-lineinfo",
          "-gencode", gencode,      "-cudart", "shared",     "-Xptxas", "-v"};
}

}  // namespace

bool IsSupportedArch(const std::string& arch) {
  for (const auto& t : kTargets)
    if (arch == t.arch) return true;
  return false;
}

std::vector<std::string> SupportedArchs() {
  std::vector<std::string> v;
  for (const auto& t : kTargets) v.push_back(t.arch);
  return v;
}

void RequireSupportedArch(const std::string& arch) {
  if (!IsSupportedArch(arch))
    throw UsageError("unknown arch '" + arch + "' (supported: " + Join(SupportedArchs()) + ")");
}

std::string FindNvcc(const std::string& configured) {
  // $PTXBENCH_NVCC names a specific compiler (and lets tests simulate a machine without one).
  std::string wanted = configured;
  if (const char* env = std::getenv("PTXBENCH_NVCC"); wanted.empty() && env && *env) wanted = env;
  auto p = FindProgram(wanted.empty() ? "nvcc" : wanted);
  if (!p) {
    if (!wanted.empty())
      throw EnvironmentError("nvcc not found at " + wanted + " ($PTXBENCH_NVCC)");
    throw EnvironmentError("nvcc not found (looked on PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)");
  }
  return *p;
}

std::string NvccVersion(const std::string& nvcc_path) {
  CommandResult r = RunCommand({nvcc_path, "--version"}, std::chrono::seconds(30));
  static const std::regex version(R"(V(\d+\.\d+\.\d+))");
  std::smatch m;
  if (r.exit.kind != ExitKind::kExited || r.exit.code != 0 ||
      !std::regex_search(r.output, m, version))
    throw EnvironmentError(nvcc_path + " --version failed: " + Truncate(r.output, 200));
  return m[1];
}

BuildResult BuildCandidate(const std::string& source, const BuildOptions& options) {
  RequireSupportedArch(options.arch);
  BuildResult r;
  std::string nvcc = FindNvcc(options.nvcc);
  r.nvcc_version = NvccVersion(nvcc);
  std::vector<std::string> flags = Flags(options.arch);

  Sha256 h;
  for (const std::string& part : {std::string(kRecipeVersion), r.nvcc_version, options.arch}) {
    h.Update(part);
    h.Update(std::string_view("\0", 1));
  }
  for (const auto& f : flags) {
    h.Update(f);
    h.Update(std::string_view("\0", 1));
  }
  h.Update(source);
  r.key = h.FinishHex();

  std::string cache = options.cache_dir.empty() ? CacheRoot() + "/build" : options.cache_dir;
  std::string entry = cache + "/" + r.key;
  const std::string so_name = "candidate.so";
  // The entry's record is written last, so its presence means the entry is complete.
  if (options.use_cache && FileExists(entry + "/build.json")) {
    try {
      auto j = nlohmann::json::parse(ReadFile(entry + "/build.json"));
      r.command = j.at("command").get<std::vector<std::string>>();
      r.log = j.at("log").get<std::string>();
      r.outcome = j.at("built").get<bool>() ? BuildOutcome::kBuilt : BuildOutcome::kCompileError;
      r.functions = ParsePtxasReport(r.log);
      if (r.outcome == BuildOutcome::kCompileError) r.errors = TrimCompilerErrors(r.log);
      r.shared_object = entry + "/" + so_name;
      r.cache_hit = true;
      if (r.outcome == BuildOutcome::kCompileError || FileExists(r.shared_object)) return r;
    } catch (const std::exception&) {
      // A damaged entry is rebuilt below.
    }
    BuildResult fresh;
    fresh.nvcc_version = r.nvcc_version;
    fresh.key = r.key;
    r = fresh;
  }

  // Build in a fresh folder, then move it into place: concurrent builds of the same source
  // never see each other's half-written files.
  MakeDirs(cache);
  std::string work = entry + ".tmp." + std::to_string(::getpid()) + "." +
                     std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  MakeDirs(work);
  WriteFileAtomic(work + "/candidate.cu", source);
  r.command = {nvcc};
  r.command.insert(r.command.end(), flags.begin(), flags.end());
  for (const std::string& s :
       {std::string("-o"), so_name, std::string("candidate.cu"), std::string("-lcuda")})
    r.command.push_back(s);

  // nvcc runs in the work folder so that messages name "candidate.cu", not a temp path.
  std::vector<std::string> argv = {"/bin/sh", "-c", ""};
  std::string cmdline = "cd '" + work + "' && exec";
  for (const auto& a : r.command) cmdline += " '" + a + "'";
  argv[2] = cmdline;
  CommandResult run = RunCommand(argv, options.timeout);
  r.seconds = run.exit.seconds;
  r.log = run.output;
  bool ok =
      run.exit.kind == ExitKind::kExited && run.exit.code == 0 && FileExists(work + "/" + so_name);
  if (run.exit.kind == ExitKind::kTimedOut)
    r.log += "\nptxbench: nvcc " + run.exit.Describe() + "\n";
  r.outcome = ok ? BuildOutcome::kBuilt : BuildOutcome::kCompileError;
  r.functions = ParsePtxasReport(r.log);
  if (!ok) r.errors = TrimCompilerErrors(r.log);

  nlohmann::json record = {{"command", r.command},
                           {"log", r.log},
                           {"built", ok},
                           {"seconds", r.seconds},
                           {"nvcc_version", r.nvcc_version}};

  // A timed-out build is not cached (the machine may just have been busy) and leaves nothing.
  std::error_code ec;
  if (run.exit.kind == ExitKind::kTimedOut) {
    fs::remove_all(work, ec);
    r.shared_object.clear();
    return r;
  }
  WriteFileAtomic(work + "/build.json", record.dump(2));
  // --no-build-cache asks for a fresh build: it replaces the entry rather than reusing it.
  if (!options.use_cache) fs::remove_all(entry, ec);
  fs::rename(work, entry, ec);
  if (ec) fs::remove_all(work, ec);  // another build won the race; its entry is the same
  r.shared_object = entry + "/" + so_name;
  return r;
}

nlohmann::json ToJson(const BuildResult& b) {
  return {{"outcome", b.outcome == BuildOutcome::kBuilt ? "built" : "compile_error"},
          {"command", b.command},
          {"nvcc_version", b.nvcc_version},
          {"cache_key", b.key},
          {"cache_hit", b.cache_hit},
          {"seconds", b.seconds},
          {"log", b.log},
          {"errors", b.errors},
          {"functions", ToJson(b.functions)}};
}

}  // namespace ptxbench
