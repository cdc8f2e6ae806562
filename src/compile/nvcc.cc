#include "compile/nvcc.h"

#include "common/json_fields.h"
#include "compile/tvm_ffi.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>

#include "common/error.h"
#include "common/files.h"
#include "common/sandbox.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "compile/fatbin_origin.h"
#include "record/vocabulary.h"

namespace ptxbench {

namespace fs = std::filesystem;

namespace {

// Bump when the recipe below changes in a way the key would not see.
constexpr const char* kRecipeVersion = "build-recipe/1";
// build.json's layout: 2 records candidate.so's sha256 and size, and the sandbox; 3 the cap a
// build met (limit, limit_message), from builds under the narrowed read paths with normalized
// file errors. An entry of any other format is rebuilt (an older one may also hold an
// unconfined build's log, or one that tells which host paths exist).
// 4: the device-code origin check (foreign_device_code) is part of the entry.
constexpr int kEntryFormat = 4;
// nvcc's intermediate files (-keep): the fatbins it made, for CheckDeviceCodeOrigin. Removed
// before the entry is stored.
constexpr const char* kKeepDir = "keep";
// The most of nvcc's output that is kept: an honest build prints a few KB (ptxas -v), a long
// template error some hundreds; past this the log is cut, and says so.
constexpr size_t kMaxLogBytes = kBuildLogCapBytes;

std::vector<std::string> Flags(const std::string& arch) {
  // `-gencode` (the architecture table's) rather than `-arch=sm_90a`: with nvcc 13.0 the
  // shorthand also runs a plain sm_90 pass that rejects wgmma and setmaxnreg.
  const std::string gencode(FindArchitecture(arch)->gencode);
  // -lineinfo: the memory checker names source lines. -cudart shared: the candidate uses the
  // same CUDA runtime as the harness that loads it. -lcuda: the driver API (tensor maps).
  return {"-O3",      "-std=c++17", "-shared", "-Xcompiler", "-fPIC",   "-lineinfo",
          "-gencode", gencode,      "-cudart", "shared",     "-Xptxas", "-v"};
}

// Removes a cache entry or work folder (its files are read-only; that does not stop removal).
void RemoveEntryTree(const std::string& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// Makes the files of a finished work folder read-only: candidate.so 0555, the rest 0444. The
// folder stays writable by its owner, so that `rm -r` of the cache keeps working for a user
// (a process of that user could chmod it back anyway; others could not write it before).
void MakeFilesReadOnly(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    ::chmod(e.path().c_str(), e.path().filename() == "candidate.so" ? 0555 : 0444);
  }
}

// Up to kMaxLogBytes of a file, with a last line saying when more was cut.
std::string ReadBounded(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string out(kMaxLogBytes + 1, '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  if (out.size() > kMaxLogBytes) {
    out.resize(kMaxLogBytes);
    out += "\nptxbench: the compiler's output was cut at " + std::to_string(kMaxLogBytes >> 10) +
           " KiB\n";
  }
  return out;
}

// What a compiler prints when an allocation failed under the address-space limit (LLVM in
// cicc, GCC's cc1plus, ptxas, the C++ runtime).
bool LooksOutOfMemory(std::string_view log) {
  for (std::string_view m :
       {"out of memory", "Out of memory", "memory exhausted", "Cannot allocate memory",
        "std::bad_alloc", "Memory allocation failure", "memory allocation failed"}) {
    if (log.find(m) != std::string_view::npos) return true;
  }
  return false;
}

std::string MiB(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return b;
}

// Why the cache entry described by `record` cannot be used, or "" when it can.
std::string EntryProblem(const nlohmann::json& record, const std::string& so_path) {
  if (!record.contains("format") || record["format"] != kEntryFormat)
    return "build.json of an older format (before the sha256 of candidate.so or the device-code "
           "check): rebuilt";
  if (!record.at("built").get<bool>()) return "";
  const auto& so = record.at("candidate_so");
  const std::string sha = so.at("sha256").get<std::string>();
  const auto size = so.at("size").get<uintmax_t>();
  std::error_code ec;
  auto status = fs::symlink_status(so_path, ec);
  if (ec || !fs::is_regular_file(status)) return "candidate.so missing: rebuilt";
  // A different size is a different hash; only a same-sized object needs hashing.
  if (fs::file_size(so_path, ec) != size || ec || Sha256FileHex(so_path) != sha)
    return "candidate.so sha256 mismatch: rebuilt";
  return "";
}

}  // namespace

SandboxPolicy NvccSandboxPolicy(const std::string& nvcc_path, const std::string& work_dir) {
  SandboxPolicy p;
  p.enabled = true;
  p.env_allow = {"PATH", "LANG", "LC_*", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH"};
  p.env_set = {{"HOME", work_dir}, {"TMPDIR", work_dir + "/tmp"}};
  p.namespaces = true;
  // The compiler writes into our cache folder; Landlock confines it all the same.
  p.drop_user = false;
  p.landlock = true;
  p.read_paths = NvccSystemReadPaths();
  for (const auto& folder : ToolkitReadPaths(nvcc_path)) p.read_paths.push_back(folder);
  p.write_paths = {work_dir};
  p.device_paths = {"/dev/null"};
  p.limits.address_space_bytes = kBuildAddressSpaceBytes;
  p.limits.cpu_seconds = 300;
  p.limits.file_size_bytes = 256ull << 20;
  p.limits.open_files = 1024;
  return p;
}

namespace {

// The folders of a toolkit root that its tools read. Never the root itself: a toolkit
// installed straight into /usr/local (nvcc at /usr/local/bin/nvcc, as on one CI machine) made
// the root /usr/local, and every file planted beside it readable.
void AddToolkitFolders(const fs::path& root, std::vector<std::string>& out) {
  if (root.empty() || root == root.root_path()) return;
  for (const char* name : {"bin", "include", "lib", "lib64", "nvvm", "targets"}) {
    std::error_code ec;
    fs::path folder = fs::canonical(root / name, ec);
    if (ec || !fs::is_directory(folder, ec) || folder == folder.root_path()) continue;
    if (std::find(out.begin(), out.end(), folder.string()) == out.end())
      out.push_back(folder.string());
  }
}

}  // namespace

// nvcc's own idea of its toolkit (`#$ TOP=` of a dry run): where nvcc on PATH is a wrapper
// script or a link farm, the real toolkit is elsewhere. Asked once per nvcc path.
std::optional<std::filesystem::path> NvccReportedToolkit(const std::string& nvcc_path) {
  static std::mutex mutex;
  static std::map<std::string, std::optional<fs::path>> asked;
  std::lock_guard lock(mutex);
  if (auto it = asked.find(nvcc_path); it != asked.end()) return it->second;
  std::optional<fs::path> top;
  try {
    CommandResult r =
        RunCommand({nvcc_path, "--dryrun", "-x", "cu", "-c", "/dev/null", "-o", "/dev/null"},
                   std::chrono::seconds(30));
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
      constexpr std::string_view kTop = "#$ TOP=";
      if (!line.starts_with(kTop)) continue;
      std::error_code ec;
      fs::path resolved = fs::canonical(line.substr(kTop.size()), ec);
      if (!ec) top = resolved;
      break;
    }
  } catch (const std::exception&) {
    // No dry run: the folders beside the binary are all we grant.
  }
  asked[nvcc_path] = top;
  return top;
}

std::vector<std::string> ToolkitReadPaths(const std::string& tool_path) {
  std::vector<std::string> folders;
  std::error_code ec;
  fs::path binary = fs::canonical(tool_path, ec);
  if (ec) return folders;
  AddToolkitFolders(binary.parent_path().parent_path(), folders);
  if (binary.filename() == "nvcc")
    if (auto top = NvccReportedToolkit(binary.string())) AddToolkitFolders(*top, folders);
  return folders;
}

std::vector<std::string> NvccSystemReadPaths() {
  // What nvcc, gcc, cc1plus, as, ld and collect2 opened in a build of controls/gemm (strace -f
  // -e trace=open,openat,execve, Debian 12, gcc 12, CUDA 13.0): the programs in /usr/bin, the
  // system headers, gcc's own folder, the multiarch libraries and start files, the dynamic
  // loader, the locale. Each folder holds only what every machine of the distribution has.
  std::vector<std::string> paths = {"/usr/bin",
                                    "/bin",
                                    "/usr/include",
                                    "/usr/lib/gcc",
                                    "/usr/libexec/gcc",
                                    "/lib64",
                                    "/usr/lib64",
                                    "/usr/lib/locale",
                                    "/usr/lib/x86_64-linux-gnu",
                                    "/lib/x86_64-linux-gnu",
                                    "/usr/lib/aarch64-linux-gnu",
                                    "/lib/aarch64-linux-gnu"};
  // Not /etc whole (passwd, shadow, keys): only what the dynamic loader and the C library read.
  for (const char* f : {"/etc/ld.so.cache", "/etc/ld.so.preload", "/etc/localtime"})
    paths.push_back(f);
  return paths;
}

std::string NormalizeFileErrors(std::string log) {
  // Outside the readable folders Landlock answers EACCES for a file that exists and the path
  // walk ENOENT for one that does not (ENOTDIR under a file, EISDIR for a folder): the same
  // words for all, so the log does not tell which host paths exist.
  static const std::regex file_error(
      "Permission denied|No such file or directory|Not a directory|Is a directory|Too many "
      "levels of symbolic links|Operation not permitted");
  log = std::regex_replace(log, file_error, std::string(kUnreadableFileWords));
  return log;
}

bool IsSupportedArch(const std::string& arch) { return FindArchitecture(arch) != nullptr; }

std::vector<std::string> SupportedArchs() {
  std::vector<std::string> v;
  for (const ArchInfo& a : Architectures()) v.emplace_back(a.name);
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

namespace {

// The TVM-FFI runtime an upstream-style candidate links, with its flags added to `flags`.
std::optional<TvmFfiInstall> AddTvmFfiFlags(BuildResult& r, std::vector<std::string>& flags) {
  if (r.abi != CandidateAbi::kTvmFfi) return std::nullopt;
  std::string why;
  std::optional<TvmFfiInstall> tvm_ffi = FindTvmFfi(&why);
  if (!tvm_ffi)
    throw EnvironmentError(
        "the source is an upstream (tvm-ffi) candidate, and the TVM-FFI runtime is missing: " +
        why);
  r.tvm_ffi_version = tvm_ffi->version;
  // As upstream's compile line, with $ORIGIN first in the run path (see nvcc.h).
  for (const std::string& f :
       {"-I" + tvm_ffi->include, "-L" + tvm_ffi->lib_dir, std::string("-ltvm_ffi"),
        std::string("-Xlinker"), "-rpath,$ORIGIN:" + tvm_ffi->lib_dir})
    flags.push_back(f);
  return tvm_ffi;
}

// The cache key: the recipe, nvcc's version, the arch, the flags and the source.
std::string BuildKey(const BuildResult& r, const std::string& arch,
                     const std::vector<std::string>& flags, const std::string& source) {
  Sha256 h;
  // The ABI is in the key only where it is not the native one: native keys stay as they were.
  std::vector<std::string> key_parts = {kRecipeVersion, r.nvcc_version, arch};
  if (r.abi != CandidateAbi::kNative) {
    key_parts.push_back("abi=" + ToString(r.abi));
    key_parts.push_back("tvm-ffi=" + r.tvm_ffi_version);
  }
  for (const std::string& part : key_parts) {
    h.Update(part);
    h.Update(std::string_view("\0", 1));
  }
  for (const auto& f : flags) {
    h.Update(f);
    h.Update(std::string_view("\0", 1));
  }
  h.Update(source);
  return h.FinishHex();
}

// A cache entry read back into `r` when it verifies (""); otherwise why not.
std::string ReadCacheEntry(const std::string& entry, const std::string& so_name, BuildResult& r) {
  std::string problem;
  try {
    auto j = nlohmann::json::parse(ReadFile(entry + "/build.json"));
    problem = EntryProblem(j, entry + "/" + so_name);
    if (problem.empty()) {
      r.command = j.at("command").get<std::vector<std::string>>();
      r.log = NormalizeFileErrors(ValidUtf8(RedactSecrets(j.at("log").get<std::string>())));
      r.outcome = j.at("built").get<bool>() ? BuildOutcome::kBuilt : BuildOutcome::kCompileError;
      r.functions = ParsePtxasReport(r.log);
      r.limit = j.value("limit", "");
      r.foreign_device_code = j.value("foreign_device_code", "");
      if (r.outcome == BuildOutcome::kCompileError) {
        r.errors = TrimCompilerErrors(r.log);
        if (!r.limit.empty()) r.errors = j.value("limit_message", "") + "\n" + r.errors;
      }
      if (r.outcome == BuildOutcome::kBuilt) {
        r.shared_object = entry + "/" + so_name;
        r.shared_object_sha256 = j.at("candidate_so").at("sha256").get<std::string>();
      }
      r.sandbox = j.value("sandbox", nlohmann::json::object());
      r.cache_hit = true;
      return "";
    }
  } catch (const std::exception&) {
    problem = "build.json unreadable: rebuilt";
  }
  return problem;
}

// nvcc in the work folder (so that messages name "candidate.cu", not a temp path), confined
// unless asked otherwise; its log, bounded and cleaned, into r.log.
ExitInfo RunNvcc(const std::string& nvcc, const std::string& work, const BuildOptions& options,
                 const std::optional<TvmFfiInstall>& tvm_ffi, BuildResult& r) {
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", ""};
  std::string cmdline = "cd '" + work + "' && exec";
  for (const auto& a : r.command) cmdline += " '" + a + "'";
  spec.argv[2] = cmdline;
  // The output goes to a file outside every folder nvcc may open, not to a pipe: an #include
  // of /proc/self/fd/1 then names a file Landlock refuses, never a pipe that only the reader
  // itself writes to (which blocks until the timeout).
  ScratchDir log_dir("ptxbench-nvcc");
  spec.log_path = log_dir.File("nvcc.log");
  PreparedSandbox sandbox;
  if (options.confine) {
    SandboxPolicy policy = NvccSandboxPolicy(nvcc, work);
    if (tvm_ffi) policy.read_paths.push_back(tvm_ffi->root);
    sandbox = PreparedSandbox(policy);
  }
  spec.sandbox = &sandbox;
  r.sandbox = sandbox.Describe();
  ExitInfo ended;
  {
    Child child = Child::Start(spec);
    ended = child.Wait(std::chrono::steady_clock::now() + options.timeout);
  }
  r.seconds = ended.seconds;
  // It quotes the source; its file errors must not tell which host paths exist.
  // The work folder's path (our cache's place, a pid) and gcc's random temporary names vary
  // from build to build and say nothing about the source: "tmp/ccXXXXXX.s" for all.
  std::string raw_log = ReadBounded(spec.log_path);
  for (size_t at = raw_log.find(work + "/"); at != std::string::npos;
       at = raw_log.find(work + "/", at))
    raw_log.erase(at, work.size() + 1);
  static const std::regex gcc_temp(R"(tmp/cc[A-Za-z0-9]{6}\.)");
  raw_log = std::regex_replace(raw_log, gcc_temp, "tmp/ccXXXXXX.");
  r.log = NormalizeFileErrors(ValidUtf8(RedactSecrets(raw_log)));
  return ended;
}

// The caps (nvcc.h): an object too big to keep, or a build that ran out of memory. Sets
// r.limit and returns the line that says so ("" when no cap applied); `ok` becomes false.
std::string ApplyBuildCaps(const std::string& object, const BuildOptions& options, bool& ok,
                           BuildResult& r) {
  std::string limit_message;
  std::error_code size_ec;
  if (const uintmax_t size = ok ? fs::file_size(object, size_ec) : 0;
      ok && !size_ec && size > kBuildObjectCapBytes) {
    ok = false;
    r.limit = "object_size";
    limit_message = "ptxbench: the built object is " + MiB(size) + ", over the cap of " +
                    MiB(kBuildObjectCapBytes) + " on one candidate's object: not kept";
  } else if (!ok && options.confine && LooksOutOfMemory(r.log)) {
    r.limit = "memory";
    limit_message = "ptxbench: the build ran out of memory: each of its processes may use " +
                    MiB(kBuildAddressSpaceBytes) + " of address space";
  }
  if (!limit_message.empty()) r.log += "\n" + limit_message + "\n";
  return limit_message;
}

// The finished work folder as the cache entry: its record written last, the files made
// read-only, moved into place (a sound entry another build put there first stands).
void StoreCacheEntry(const std::string& work, const std::string& entry, const std::string& so_name,
                     bool ok, const std::string& limit_message, const BuildOptions& options,
                     BuildResult& r) {
  nlohmann::json record = {{"format", kEntryFormat}, {"command", r.command},
                           {"log", r.log},           {"built", ok},
                           {"seconds", r.seconds},   {"nvcc_version", r.nvcc_version},
                           {"sandbox", r.sandbox}};
  if (!r.limit.empty()) {
    record["limit"] = r.limit;
    record["limit_message"] = limit_message;
  }
  if (!r.foreign_device_code.empty()) record["foreign_device_code"] = r.foreign_device_code;
  std::error_code ec;
  if (ok) {
    r.shared_object_sha256 = Sha256FileHex(work + "/" + so_name);
    record["candidate_so"] = {{"sha256", r.shared_object_sha256},
                              {"size", fs::file_size(work + "/" + so_name, ec)}};
  } else {
    fs::remove(work + "/" + so_name, ec);  // whatever a failed build left is no result
  }
  fs::remove_all(work + "/tmp", ec);
  fs::remove_all(work + "/" + kKeepDir, ec);
  WriteFileAtomic(work + "/build.json", record.dump(2));
  MakeFilesReadOnly(work);
  // --no-build-cache asks for a fresh build: it replaces the entry rather than reusing it.
  if (!options.use_cache) RemoveEntryTree(entry);
  fs::rename(work, entry, ec);
  if (ec) {
    // Another build of this source won the race: its entry stands if it is sound.
    std::string problem;
    try {
      problem = EntryProblem(nlohmann::json::parse(ReadFile(entry + "/build.json")),
                             entry + "/" + so_name);
    } catch (const std::exception&) {
      problem = "unreadable";
    }
    if (!problem.empty()) {
      RemoveEntryTree(entry);
      fs::rename(work, entry, ec);
    }
    if (ec) RemoveEntryTree(work);
  }
}

// FatbinOriginProblem of the built object against the fatbins nvcc kept; an object that cannot
// be read as ELF is the source's doing too (nvcc writes well-formed ones).
std::string CheckDeviceCodeOrigin(const std::string& work, const std::string& so_name) {
  std::vector<std::string> kept;
  std::error_code ec;
  for (const auto& file : fs::directory_iterator(work + "/" + kKeepDir, ec))
    if (file.path().extension() == ".fatbin") kept.push_back(ReadFile(file.path().string()));
  if (ec) return "nvcc's intermediate files could not be listed: " + ec.message();
  try {
    return FatbinOriginProblem(work + "/" + so_name, kept);
  } catch (const Error& e) {
    return std::string("the object cannot be read as ELF: ") + e.what();
  }
}

}  // namespace

BuildResult BuildCandidate(const std::string& source, const BuildOptions& options) {
  RequireSupportedArch(options.arch);
  BuildResult r;
  std::string nvcc = FindNvcc(options.nvcc);
  r.nvcc_version = NvccVersion(nvcc);
  std::vector<std::string> flags = Flags(options.arch);
  r.abi = DetectCandidateAbi(source);
  const std::optional<TvmFfiInstall> tvm_ffi = AddTvmFfiFlags(r, flags);
  r.key = BuildKey(r, options.arch, flags, source);

  std::string cache = options.cache_dir.empty() ? CacheRoot() + "/build" : options.cache_dir;
  std::string entry = cache + "/" + r.key;
  const std::string so_name = "candidate.so";
  // The entry's record is written last, so its presence means the entry is complete.
  if (options.use_cache && FileExists(entry + "/build.json")) {
    const std::string problem = ReadCacheEntry(entry, so_name, r);
    if (problem.empty()) return r;
    // A damaged or unverifiable entry is never used: it goes, and is built again below.
    RemoveEntryTree(entry);
    BuildResult fresh;
    fresh.nvcc_version = r.nvcc_version;
    fresh.key = r.key;
    fresh.abi = r.abi;
    fresh.tvm_ffi_version = r.tvm_ffi_version;
    fresh.cache_problem = problem;
    r = fresh;
  }

  // Build in a fresh folder, then move it into place: concurrent builds of the same source
  // never see each other's half-written files.
  MakeDirs(cache);
  std::string work = entry + ".tmp." + std::to_string(::getpid()) + "." +
                     std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  MakeDirs(work + "/tmp");
  MakeDirs(work + "/" + kKeepDir);
  WriteFileAtomic(work + "/candidate.cu", source);
  r.command = {nvcc};
  r.command.insert(r.command.end(), flags.begin(), flags.end());
  for (const std::string& s :
       {std::string("-keep"), std::string("-keep-dir"), std::string(kKeepDir), std::string("-o"),
        so_name, std::string("candidate.cu"), std::string("-lcuda")})
    r.command.push_back(s);
  const ExitInfo ended = RunNvcc(nvcc, work, options, tvm_ffi, r);
  bool ok = ended.kind == ExitKind::kExited && ended.code == 0 && FileExists(work + "/" + so_name);
  if (ok) r.foreign_device_code = CheckDeviceCodeOrigin(work, so_name);
  if (ended.kind != ExitKind::kExited) r.log += "\nptxbench: nvcc " + ended.Describe() + "\n";
  const std::string limit_message = ApplyBuildCaps(work + "/" + so_name, options, ok, r);
  r.outcome = ok ? BuildOutcome::kBuilt : BuildOutcome::kCompileError;
  r.functions = ParsePtxasReport(r.log);
  if (!ok) r.errors = TrimCompilerErrors(r.log);
  if (!limit_message.empty()) r.errors = limit_message + "\n" + r.errors;

  // A timed-out build is not cached (the machine may just have been busy) and leaves nothing;
  // nor is one killed by a signal (a worker stopping kills its children): the same source
  // built again must not find a compile error that was never the source's.
  if (ended.kind != ExitKind::kExited) {
    RemoveEntryTree(work);
    r.shared_object.clear();
    return r;
  }
  StoreCacheEntry(work, entry, so_name, ok, limit_message, options, r);
  if (ok) r.shared_object = entry + "/" + so_name;
  return r;
}

nlohmann::json ToJson(const BuildResult& b) {
  nlohmann::json j;
  PTXBENCH_JSON_SET_FIELDS(j, b, command, nvcc_version, shared_object_sha256, cache_hit, seconds,
                           log, errors, cache_problem, sandbox);
  if (!b.limit.empty()) j["limit"] = b.limit;
  if (!b.foreign_device_code.empty()) j["foreign_device_code"] = b.foreign_device_code;
  j["outcome"] = b.outcome == BuildOutcome::kBuilt ? "built" : "compile_error";
  j["abi"] = ToString(b.abi);
  j["cache_key"] = b.key;
  j["functions"] = ToJson(b.functions);
  if (b.abi == CandidateAbi::kTvmFfi) j["tvm_ffi_version"] = b.tvm_ffi_version;
  return j;
}

}  // namespace ptxbench
