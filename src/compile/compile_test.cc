// Build tests with the real nvcc: ptxas parsing, compile errors, the cache (verified on a
// hit), both archs, and the confinement of the compiler.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/files.h"
#include "common/sandbox.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "compile/elf.h"
#include "compile/nvcc.h"
#include "compile/ptxas_report.h"
#include "compile/tvm_ffi.h"

namespace ptxbench {
namespace {

const char* kKernel = R"(
#include <cuda_bf16.h>
__global__ void scale(const __nv_bfloat16* a, __nv_bfloat16* c, int n) {
  __shared__ float s[128];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? __bfloat162float(a[i]) : 0.f;
  __syncthreads();
  if (i < n) c[i] = __float2bfloat16(2.f * s[threadIdx.x]);
}
extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C,
                   int M, int N, int K, cudaStream_t stream) {
  scale<<<(M * N + 127) / 128, 128, 0, stream>>>(A, C, M * N);
  return 0;
}
)";

class BuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!FindProgram("nvcc")) GTEST_SKIP() << "nvcc not found";
    options_.cache_dir = dir_.File("cache");
  }
  ScratchDir dir_{"build-test"};
  BuildOptions options_;
};

TEST(PtxasReport, ParsesEveryEntry) {
  const char* log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z1av' for 'sm_90a'\n"
      "ptxas info    : Function properties for _Z1av\n"
      "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers, 4096 bytes smem, 400 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function '_Z1bv' for 'sm_90a'\n"
      "ptxas info    : Function properties for _Z1bv\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 2 registers, 356 bytes cmem[0]\n";
  auto f = ParsePtxasReport(log);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].name, "_Z1av");
  EXPECT_EQ(f[0].arch, "sm_90a");
  EXPECT_EQ(f[0].registers, 168);
  EXPECT_EQ(f[0].barriers, 1);
  EXPECT_EQ(f[0].stack_frame_bytes, 8);
  EXPECT_EQ(f[0].spill_store_bytes, 4);
  EXPECT_EQ(f[0].spill_load_bytes, 12);
  EXPECT_EQ(f[0].shared_bytes, 4096);
  EXPECT_EQ(f[0].constant_bytes, 400);
  EXPECT_EQ(f[1].registers, 2);
  EXPECT_EQ(f[1].shared_bytes, 0);
}

TEST(TrimErrors, KeepsErrorsWithTheirSourceLines) {
  const char* log =
      "candidate.cu(3): error: identifier \"foo\" is undefined\n"
      "    foo();\n"
      "    ^\n"
      "\n"
      "candidate.cu(9): warning #177-D: variable \"x\" was declared but never referenced\n"
      "1 error detected in the compilation of \"candidate.cu\".\n";
  std::string t = TrimCompilerErrors(log);
  EXPECT_NE(t.find("candidate.cu(3): error: identifier \"foo\" is undefined\n    foo();\n    ^"),
            std::string::npos);
  EXPECT_EQ(t.find("warning"), std::string::npos);
}

TEST_F(BuildTest, BuildsForHopperAndParsesTheReport) {
  BuildResult r = BuildCandidate(kKernel, options_);
  ASSERT_EQ(r.outcome, BuildOutcome::kBuilt) << r.log;
  EXPECT_FALSE(r.cache_hit);
  EXPECT_TRUE(FileExists(r.shared_object));
  ASSERT_EQ(r.functions.size(), 1u) << r.log;
  EXPECT_NE(r.functions[0].name.find("scale"), std::string::npos);
  EXPECT_EQ(r.functions[0].arch, "sm_90a");
  EXPECT_GT(r.functions[0].registers, 0);
  EXPECT_EQ(r.functions[0].shared_bytes, 512);
  ElfInfo elf = ReadElfInfo(r.shared_object);
  EXPECT_TRUE(ExportsFunction(elf, "run"));
  EXPECT_TRUE(ForbiddenDependencies(elf).empty());
  // The command is the one documented: gencode for sm_90a, shared cudart, line info.
  std::string cmd;
  for (const auto& a : r.command) cmd += a + " ";
  EXPECT_NE(cmd.find("-gencode arch=compute_90a,code=sm_90a"), std::string::npos);
  EXPECT_NE(cmd.find("-cudart shared"), std::string::npos);
  EXPECT_NE(cmd.find("-lineinfo"), std::string::npos);
  // Its device code is nvcc's own, and nvcc's intermediate files are not kept in the entry.
  EXPECT_EQ(r.foreign_device_code, "");
  EXPECT_FALSE(
      std::filesystem::exists(std::filesystem::path(r.shared_object).parent_path() / "keep"));

  // The second build of the same source is a cache hit with the same report and object.
  BuildResult again = BuildCandidate(kKernel, options_);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.shared_object, r.shared_object);
  EXPECT_EQ(again.functions.size(), 1u);
  EXPECT_EQ(again.seconds, 0);
  // Another arch is another key.
  options_.arch = "sm_100a";
  BuildResult b = BuildCandidate(kKernel, options_);
  ASSERT_EQ(b.outcome, BuildOutcome::kBuilt) << b.log;
  EXPECT_NE(b.key, r.key);
  EXPECT_EQ(b.functions.at(0).arch, "sm_100a");
}

TEST_F(BuildTest, CompileErrorKeepsTheCompilersMessage) {
  BuildResult r = BuildCandidate("__global__ void k() { undefined_thing(); }\n", options_);
  EXPECT_EQ(r.outcome, BuildOutcome::kCompileError);
  EXPECT_NE(r.errors.find("candidate.cu(1): error"), std::string::npos) << r.errors;
  EXPECT_NE(r.errors.find("undefined_thing"), std::string::npos);
  // No temporary folders are left in the cache.
  for (const auto& e : std::filesystem::directory_iterator(options_.cache_dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos);
  BuildResult again = BuildCandidate("__global__ void k() { undefined_thing(); }\n", options_);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.outcome, BuildOutcome::kCompileError);
}

TEST_F(BuildTest, NoCacheRebuilds) {
  options_.use_cache = false;
  BuildResult r = BuildCandidate(kKernel, options_);
  ASSERT_EQ(r.outcome, BuildOutcome::kBuilt);
  BuildResult again = BuildCandidate(kKernel, options_);
  EXPECT_FALSE(again.cache_hit);
  EXPECT_GT(again.seconds, 0);
}

// ---------------------------------------------------------------------------
// The compile stage confined: files outside the toolkit and the system headers are not read.

// The first line of a file the evaluator can read but nvcc must not; empty when unreadable.
std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

class ConfinedBuildTest : public BuildTest {
 protected:
  void SetUp() override {
    BuildTest::SetUp();
    if (IsSkipped()) return;
    if (ProbeSandbox().landlock_abi == 0)
      GTEST_SKIP() << "no Landlock here: " << ProbeSandbox().landlock_why;
  }
  // Fails the test when `needle` is anywhere in what the record would hold.
  static void ExpectAbsent(const BuildResult& r, const std::string& needle) {
    EXPECT_EQ(r.log.find(needle), std::string::npos) << r.log;
    EXPECT_EQ(r.errors.find(needle), std::string::npos) << r.errors;
    EXPECT_EQ(ToJson(r).dump().find(needle), std::string::npos);
  }
};

TEST(NvccSandbox, PolicyReadsToolkitAndSystemOnly) {
  auto nvcc = FindProgram("nvcc");
  if (!nvcc) GTEST_SKIP() << "nvcc not found";
  SandboxPolicy p = NvccSandboxPolicy(*nvcc, "/work/x");
  const std::string bin = std::filesystem::canonical(*nvcc).parent_path().string();
  const std::string root = std::filesystem::path(bin).parent_path().string();
  EXPECT_NE(std::find(p.read_paths.begin(), p.read_paths.end(), bin), p.read_paths.end()) << bin;
  // The toolkit's folders, never its root: a root of /usr/local opened every planted file.
  EXPECT_EQ(std::find(p.read_paths.begin(), p.read_paths.end(), root), p.read_paths.end()) << root;
  // /etc whole would let an #include, #line or .incbin read /etc/passwd and /etc/shadow.
  for (const auto& path : p.read_paths) {
    EXPECT_NE(path, "/etc");
    EXPECT_NE(path, "/");
    EXPECT_FALSE(path.starts_with("/dev") || path.starts_with("/proc") ||
                 path.starts_with("/root") || path.starts_with("/home") || path.starts_with("/tmp"))
        << path;
  }
  EXPECT_EQ(p.device_paths, std::vector<std::string>{"/dev/null"});
  EXPECT_EQ(p.write_paths, std::vector<std::string>{"/work/x"});
  EXPECT_FALSE(p.drop_user);
  EXPECT_TRUE(p.namespaces && p.landlock && p.enabled);
  EXPECT_EQ(p.limits.address_space_bytes, 2ull << 30);
  EXPECT_EQ(p.limits.cpu_seconds, 300u);
  EXPECT_EQ(p.limits.file_size_bytes, 256ull << 20);
  // Issue 35: not /usr, /opt or /usr/local whole (files planted there came back line by line);
  // under /usr/local only the toolkit.
  for (const auto& path : p.read_paths) {
    EXPECT_NE(path, "/usr");
    EXPECT_FALSE(path == "/opt" || path.starts_with("/opt/")) << path;
    EXPECT_NE(path, "/usr/local");
    if (path.starts_with("/usr/local/") && !path.starts_with("/usr/local/bin") &&
        !path.starts_with("/usr/local/lib") && !path.starts_with("/usr/local/include"))
      EXPECT_TRUE(path.starts_with(root + "/")) << path << " is outside the toolkit " << root;
    EXPECT_NE(path, "/lib");
  }
  EXPECT_EQ(p.limits.open_files, 1024u);
  EXPECT_EQ(p.limits.processes, 0u);
  for (const auto& name : p.env_allow) EXPECT_FALSE(LooksSecret(name)) << name;
}

// nvcc on PATH may be a wrapper script in a prefix of its own (/usr/local/bin/nvcc on one CI
// machine): the build reads the toolkit its dry run names, and the wrapper's prefix is not
// opened whole.
TEST_F(BuildTest, AWrapperNvccReadsTheToolkitItNamesAndNotItsPrefix) {
  auto on_path = FindProgram("nvcc");
  ASSERT_TRUE(on_path);
  // nvcc on PATH may itself be a wrapper (it is on the CI machine): wrap the toolkit's own.
  const auto toolkit = NvccReportedToolkit(*on_path);
  ASSERT_TRUE(toolkit) << *on_path << " --dryrun names no toolkit";
  const std::string real = (*toolkit / "bin" / "nvcc").string();
  ASSERT_TRUE(std::filesystem::exists(real)) << real;
  const std::string prefix = dir_.File("prefix");
  std::filesystem::create_directories(prefix + "/bin");
  const std::string wrapper = prefix + "/bin/nvcc";
  WriteFileAtomic(wrapper, "#!/bin/sh\nexec \"" + real + "\" \"$@\"\n");
  ASSERT_EQ(chmod(wrapper.c_str(), 0755), 0);
  WriteFileAtomic(prefix + "/planted.txt", "ptxbench_wrapper_prefix_secret\n");

  const std::vector<std::string> folders = ToolkitReadPaths(wrapper);
  const std::string real_bin = std::filesystem::canonical(real).parent_path().string();
  EXPECT_NE(std::find(folders.begin(), folders.end(), real_bin), folders.end()) << Join(folders);
  EXPECT_EQ(std::find(folders.begin(), folders.end(), prefix), folders.end()) << Join(folders);

  options_.nvcc = wrapper;
  BuildResult ok = BuildCandidate(kKernel, options_);
  EXPECT_EQ(ok.outcome, BuildOutcome::kBuilt) << ok.log;
  BuildResult planted =
      BuildCandidate(std::string(kKernel) + "#include \"" + prefix + "/planted.txt\"\n", options_);
  EXPECT_EQ(planted.outcome, BuildOutcome::kCompileError);
  EXPECT_EQ(planted.log.find("ptxbench_wrapper_prefix_secret"), std::string::npos) << planted.log;
}

// Bytes the source places in .nv_fatbin itself, however spelled (here a section attribute built
// by token pasting, which no source screen sees), are found by comparing the object's section
// with the fatbins nvcc kept: a broken header and a well-formed container of foreign bytes
// alike. The finding is kept in the cache entry.
TEST_F(BuildTest, DeviceCodeTheSourcePlacedItselfIsForeign) {
  const std::string placed = R"(
#define PASTE(a, b) a##b
#define PLACE __attribute__((used, PASTE(sec, tion)(".nv_fatbin")))
)";
  struct Case {
    const char* name;
    std::string data;
  };
  const std::vector<Case> cases = {
      {"broken header",
       "PLACE static const unsigned long long forged[4] = {0xdeadbeefdeadbeefull, 1, 2, 3};\n"},
      // magic 0xBA55ED50, version 1, header 16 bytes, then a 16-byte body of the source's own.
      {"well-formed container",
       "PLACE static const unsigned int forged[8] = {0xBA55ED50u, 0x00100001u, 16u, 0u, 1u, 2u, "
       "3u, 4u};\n"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string source = placed + c.data + kKernel;
    BuildResult r = BuildCandidate(source, options_);
    ASSERT_EQ(r.outcome, BuildOutcome::kBuilt) << r.log;
    EXPECT_NE(r.foreign_device_code.find(".nv_fatbin"), std::string::npos)
        << "'" << r.foreign_device_code << "'";
    BuildResult again = BuildCandidate(source, options_);
    EXPECT_TRUE(again.cache_hit);
    EXPECT_EQ(again.foreign_device_code, r.foreign_device_code);
    EXPECT_EQ(ToJson(again).value("foreign_device_code", ""), r.foreign_device_code);
  }
  // A wrapper of its own in nvcc's wrapper table is foreign too.
  BuildResult wrapper = BuildCandidate(
      placed +
          "__attribute__((used, PASTE(sec, tion)(\".nvFatBinSegment\"))) static const unsigned "
          "long long w[3] = {0x466243b1ull, 0, 0};\n" +
          kKernel,
      options_);
  ASSERT_EQ(wrapper.outcome, BuildOutcome::kBuilt) << wrapper.log;
  EXPECT_NE(wrapper.foreign_device_code.find(".nvFatBinSegment"), std::string::npos)
      << wrapper.foreign_device_code;
  // A section named like a fatbin that nvcc does not make is foreign too.
  BuildResult other = BuildCandidate(
      placed + "__attribute__((used, section(\".fatbin_more\"))) static const int x = 1;\n" +
          kKernel,
      options_);
  ASSERT_EQ(other.outcome, BuildOutcome::kBuilt) << other.log;
  EXPECT_NE(other.foreign_device_code.find(".fatbin_more"), std::string::npos)
      << other.foreign_device_code;
}

TEST_F(ConfinedBuildTest, IncludedHostFileNeverReachesTheRecord) {
  const std::string secret_line = FirstLine("/etc/passwd");
  if (secret_line.size() < 8) GTEST_SKIP() << "no /etc/passwd to try";
  const std::string source = "#include <cuda_runtime.h>\n#include \"/etc/passwd\"\n";
  BuildResult r = BuildCandidate(source, options_);
  EXPECT_EQ(r.outcome, BuildOutcome::kCompileError);
  ExpectAbsent(r, secret_line);
  // The compiler says it could not open the file, naming the candidate's line.
  EXPECT_NE(r.errors.find("candidate.cu:2"), std::string::npos) << r.errors;
  EXPECT_NE(r.errors.find(std::string("/etc/passwd: ") + kUnreadableFileWords), std::string::npos)
      << r.errors;
  EXPECT_EQ(r.sandbox.value("state", ""), "on");
  EXPECT_EQ(r.sandbox.value("landlock", ""), "abi " + std::to_string(ProbeSandbox().landlock_abi));
  // Unconfined, the same build quotes the file: the checks above can fail.
  options_.confine = false;
  options_.use_cache = false;
  BuildResult open = BuildCandidate(source, options_);
  EXPECT_NE(open.log.find(secret_line), std::string::npos) << open.log;
  EXPECT_EQ(open.sandbox.value("state", ""), "off");
}

TEST_F(ConfinedBuildTest, LineDirectiveAndIncbinCannotReadHostFiles) {
  const std::string secret_line = FirstLine("/etc/passwd");
  if (secret_line.size() < 8) GTEST_SKIP() << "no /etc/passwd to try";
  // GCC quotes "source" lines from the file a #line names, even in a warning of a good build.
  BuildResult line = BuildCandidate(
      "__global__ void k() {}\n#line 1 \"/etc/passwd\"\n#warning quoted\n", options_);
  EXPECT_EQ(line.outcome, BuildOutcome::kBuilt) << line.log;
  EXPECT_NE(line.log.find("#warning quoted"), std::string::npos) << line.log;
  ExpectAbsent(line, secret_line);
  // The assembler's .incbin copies a file into the object: it must not open one.
  BuildResult incbin = BuildCandidate(
      "asm(\".section .rodata\\n.incbin \\\"/etc/passwd\\\"\\n.text\\n\");\n"
      "__global__ void k() {}\n",
      options_);
  EXPECT_EQ(incbin.outcome, BuildOutcome::kCompileError);
  EXPECT_NE(incbin.log.find("file not found: /etc/passwd"), std::string::npos) << incbin.log;
  EXPECT_TRUE(incbin.shared_object.empty());
}

// Issue 35: files planted outside the readable folders (/opt, /usr/local) by every route to
// the assembler and the preprocessor that the screen had let through; none of their contents
// reaches the record, and an existing path reads exactly as a missing one.
class PlantedFileTest : public ConfinedBuildTest {
 protected:
  void SetUp() override {
    ConfinedBuildTest::SetUp();
    if (IsSkipped()) return;
    const std::string tag = "ptxbench-canary-" + std::to_string(::getpid());
    for (const std::string base : {"/opt", "/usr/local"}) {
      const std::string dir = base + "/" + tag;
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (ec) GTEST_SKIP() << "cannot plant a file in " << base << " (tests run as root)";
      dirs_.push_back(dir);
      WriteFileAtomic(dir + "/secret.s", secret_ + "_" + std::to_string(dirs_.size()) +
                                             " first line\n" + secret_ + " second line\n");
    }
  }
  void TearDown() override {
    std::error_code ec;
    for (const std::string& d : dirs_) std::filesystem::remove_all(d, ec);
  }
  // Without the lines that time the build ("Compile time = 2.1 ms").
  static std::string Untimed(const std::string& log) {
    std::string out;
    for (const std::string& line : SplitLines(log))
      if (line.find("Compile time") == std::string::npos) out += line + "\n";
    return out;
  }
  const std::string secret_ = "ptxbench_canary_" + std::to_string(::getpid()) + "_x";
  std::vector<std::string> dirs_;
};

TEST_F(PlantedFileTest, NoRouteReadsAPlantedFileOrTellsItExists) {
  const std::string opt = dirs_.at(0) + "/secret.s";
  const std::string local = dirs_.at(1) + "/secret.s";
  // Each route the screen now rejects, built here without the screen: the build's own wall.
  const std::string assembler =
      "#define STR(x) #x\n"
      "#define S \".include \\\"" +
      opt +
      "\\\"\"\n"
      "asm(S);\n"
      "asm(STR(.include \"" +
      local +
      "\"));\n"
      "asm(\".irp d,clude\\n.in\\\\d \\\"" +
      opt +
      "\\\"\\n.endr\");\n"
      "asm(\".section .rodata\\n.incbin \\\"" +
      local +
      "\\\"\\n.text\");\n"
      "asm(\".include \\\"" +
      dirs_.at(0) +
      "\\\"\");\n"
      "__global__ void k() {}\n";
  const std::string preprocessor = "#include \"" + local + "\"\n__global__ void k() {}\n";
  options_.use_cache = false;
  std::vector<BuildResult> present;
  for (const std::string& source : {assembler, preprocessor}) {
    present.push_back(BuildCandidate(source, options_));
    const BuildResult& r = present.back();
    EXPECT_EQ(r.outcome, BuildOutcome::kCompileError) << r.log;
    ExpectAbsent(r, secret_);
    EXPECT_EQ(r.log.find("Permission denied"), std::string::npos) << r.log;
    EXPECT_NE(r.log.find(kUnreadableFileWords), std::string::npos) << r.log;
  }
  // The same paths missing: the same words, line for line.
  std::error_code ec;
  for (const std::string& d : dirs_) std::filesystem::remove_all(d, ec);
  const std::vector<std::string> sources = {assembler, preprocessor};
  for (size_t i = 0; i < sources.size(); ++i) {
    BuildResult missing = BuildCandidate(sources[i], options_);
    EXPECT_EQ(Untimed(missing.log), Untimed(present[i].log));
    EXPECT_EQ(missing.errors, present[i].errors);
  }
}

TEST_F(PlantedFileTest, UnconfinedTheSameRoutesQuoteTheFile) {
  // What the test above guards against: without the confinement the assembler quotes the
  // planted lines (so ExpectAbsent can fail).
  options_.confine = false;
  options_.use_cache = false;
  BuildResult open = BuildCandidate(
      "#define S \".include \\\"" + dirs_.at(0) + "/secret.s\\\"\"\nasm(S);\n", options_);
  EXPECT_EQ(open.outcome, BuildOutcome::kCompileError);
  EXPECT_NE(open.log.find(secret_ + "_1 first line"), std::string::npos) << open.log;
}

TEST_F(ConfinedBuildTest, DevZeroIncludeEndsQuickly) {
  options_.timeout = std::chrono::seconds(120);
  auto t = std::chrono::steady_clock::now();
  BuildResult r = BuildCandidate("#include \"/dev/zero\"\n__global__ void k() {}\n", options_);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  EXPECT_EQ(r.outcome, BuildOutcome::kCompileError);
  EXPECT_LT(seconds, 30) << r.log;
  EXPECT_NE(r.errors.find("/dev/zero"), std::string::npos) << r.errors;
  EXPECT_EQ(r.log.find("timed out"), std::string::npos) << r.log;
}

TEST_F(ConfinedBuildTest, FifoIncludeEndsQuickly) {
  const std::string fifo = dir_.File("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  options_.timeout = std::chrono::seconds(120);
  auto t = std::chrono::steady_clock::now();
  BuildResult r = BuildCandidate("#include \"" + fifo + "\"\n__global__ void k() {}\n", options_);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  EXPECT_EQ(r.outcome, BuildOutcome::kCompileError);
  EXPECT_LT(seconds, 30) << r.log;
  EXPECT_EQ(r.log.find("timed out"), std::string::npos) << r.log;
}

// ---------------------------------------------------------------------------
// Issue 35 point 6: the caps on what one build may cost.

TEST_F(BuildTest, OverSizeObjectIsTheCandidatesFailureAndNotCached) {
  // 62 bytes of source, a 40 MiB object: an initialized host array is written out whole.
  const std::string source =
      "char blob[40 << 20] = {1};\n__global__ void k(char* o) { o[0] = 1; }\n";
  BuildResult r = BuildCandidate(source, options_);
  EXPECT_EQ(r.outcome, BuildOutcome::kCompileError) << r.log;
  EXPECT_EQ(r.limit, "object_size");
  EXPECT_TRUE(r.shared_object.empty());
  EXPECT_TRUE(
      r.errors.starts_with("ptxbench: the built object is 40.0 MiB, over the cap of "
                           "32.0 MiB on one candidate's object: not kept"))
      << r.errors;
  EXPECT_EQ(ToJson(r).value("limit", ""), "object_size");
  // Nothing over the cap is kept: the entry holds the source and its record, no object.
  uintmax_t total = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(options_.cache_dir))
    if (e.is_regular_file()) total += e.file_size();
  EXPECT_LT(total, 1u << 20);
  EXPECT_FALSE(FileExists(options_.cache_dir + "/" + r.key + "/candidate.so"));
  // A hit says the same.
  BuildResult again = BuildCandidate(source, options_);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.outcome, BuildOutcome::kCompileError);
  EXPECT_EQ(again.limit, "object_size");
  EXPECT_EQ(again.errors, r.errors);
}

TEST_F(BuildTest, BuildThatNeedsHugeMemoryIsStopped) {
  if (ProbeSandbox().landlock_abi == 0 && !ProbeSandbox().namespaces)
    GTEST_SKIP() << "no sandbox here";
  // A 256 MiB initialized device array: unconfined, cicc takes several GB for it (the issue's
  // 5.5-8.1 GB); under the address-space cap it stops within seconds.
  options_.timeout = std::chrono::seconds(120);
  const auto t = std::chrono::steady_clock::now();
  BuildResult r = BuildCandidate(
      "__device__ char blob[1 << 28] = {1};\n"
      "__global__ void k(char* o) { o[threadIdx.x] = blob[threadIdx.x * 4096]; }\n",
      options_);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  EXPECT_EQ(r.outcome, BuildOutcome::kCompileError) << r.log;
  EXPECT_EQ(r.limit, "memory") << r.log;
  EXPECT_TRUE(
      r.errors.starts_with("ptxbench: the build ran out of memory: each of its processes "
                           "may use 2048.0 MiB of address space"))
      << r.errors;
  EXPECT_LT(seconds, 60);
}

TEST_F(BuildTest, LongLogIsCut) {
  // The compiler quotes a 3 MiB #error line: the log keeps 1 MiB of it and says so.
  BuildResult r = BuildCandidate("#error " + std::string(3u << 20, 'x') + "\n", options_);
  EXPECT_EQ(r.outcome, BuildOutcome::kCompileError);
  EXPECT_LE(r.log.size(), kBuildLogCapBytes + 200);
  EXPECT_NE(r.log.find("ptxbench: the compiler's output was cut at 1024 KiB"), std::string::npos)
      << r.log.size();
}

TEST_F(BuildTest, IncludeOfItsOwnOutputDoesNotHang) {
  // /proc/self/fd/1 is nvcc's output: were it a pipe, the preprocessor would wait on it for
  // ever. It is a file outside the folders nvcc may open (refused under Landlock; read as
  // what was printed so far without it).
  options_.timeout = std::chrono::seconds(120);
  auto t = std::chrono::steady_clock::now();
  BuildResult r =
      BuildCandidate("#include \"/proc/self/fd/1\"\n__global__ void k() {}\n", options_);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  EXPECT_LT(seconds, 60) << r.log;
  EXPECT_EQ(r.log.find("timed out"), std::string::npos) << r.log;
  if (ProbeSandbox().landlock_abi > 0) {
    EXPECT_EQ(r.outcome, BuildOutcome::kCompileError);
  }
}

TEST_F(BuildTest, SecretValuesInTheOutputAreRedacted) {
  ::setenv("PTXBENCH_BUILD_TEST_API_KEY", "sk-build-test-5f5f5f5f", 1);
  BuildResult r =
      BuildCandidate("#warning sk-build-test-5f5f5f5f\n__global__ void k() {}\n", options_);
  ::unsetenv("PTXBENCH_BUILD_TEST_API_KEY");
  EXPECT_EQ(r.log.find("sk-build-test-5f5f5f5f"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("#warning [redacted]"), std::string::npos) << r.log;
}

// ---------------------------------------------------------------------------
// The cache verified: a hit re-hashes the object it hands out.

mode_t Mode(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

TEST_F(BuildTest, CacheEntryIsReadOnlyAndRecordsTheObjectsHash) {
  BuildResult r = BuildCandidate(kKernel, options_);
  ASSERT_EQ(r.outcome, BuildOutcome::kBuilt) << r.log;
  const std::string entry = std::filesystem::path(r.shared_object).parent_path().string();
  EXPECT_EQ(Mode(r.shared_object), 0555u);
  EXPECT_EQ(Mode(entry + "/build.json"), 0444u);
  EXPECT_EQ(Mode(entry + "/candidate.cu"), 0444u);
  EXPECT_FALSE(std::filesystem::exists(entry + "/tmp"));
  auto j = nlohmann::json::parse(ReadFile(entry + "/build.json"));
  EXPECT_EQ(j["candidate_so"]["sha256"], Sha256FileHex(r.shared_object));
  EXPECT_EQ(j["candidate_so"]["size"], std::filesystem::file_size(r.shared_object));
  EXPECT_EQ(ToJson(r)["cache_problem"], "");
  // --no-build-cache replaces a read-only entry.
  options_.use_cache = false;
  BuildResult again = BuildCandidate(kKernel, options_);
  EXPECT_EQ(again.outcome, BuildOutcome::kBuilt) << again.log;
  EXPECT_FALSE(again.cache_hit);
  // nvcc's output differs from build to build (its temporary names end up in the object);
  // the new entry records the new object's hash.
  auto j2 = nlohmann::json::parse(ReadFile(entry + "/build.json"));
  EXPECT_EQ(j2["candidate_so"]["sha256"], Sha256FileHex(again.shared_object));
}

TEST_F(BuildTest, FlippedByteInCachedObjectIsRebuilt) {
  BuildResult r = BuildCandidate(kKernel, options_);
  ASSERT_EQ(r.outcome, BuildOutcome::kBuilt) << r.log;
  const std::string so = r.shared_object;
  const std::string good = Sha256FileHex(so);
  const std::string entry = std::filesystem::path(so).parent_path().string();
  // An attacker with write access to the cache patches one byte of the object.
  ASSERT_EQ(::chmod(so.c_str(), 0644), 0);
  std::string bytes = ReadFile(so);
  ASSERT_GT(bytes.size(), 4096u);
  bytes[bytes.size() / 2] ^= 0x01;
  {
    std::ofstream out(so, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  const std::string flipped = Sha256FileHex(so);
  ASSERT_NE(flipped, good);

  BuildResult again = BuildCandidate(kKernel, options_);
  ASSERT_EQ(again.outcome, BuildOutcome::kBuilt) << again.log;
  EXPECT_FALSE(again.cache_hit);
  EXPECT_GT(again.seconds, 0);
  EXPECT_EQ(again.cache_problem, "candidate.so sha256 mismatch: rebuilt");
  EXPECT_EQ(ToJson(again)["cache_problem"], "candidate.so sha256 mismatch: rebuilt");
  EXPECT_NE(Sha256FileHex(again.shared_object), flipped);
  EXPECT_TRUE(ExportsFunction(ReadElfInfo(again.shared_object), "run"));
  auto j = nlohmann::json::parse(ReadFile(entry + "/build.json"));
  EXPECT_EQ(j["candidate_so"]["sha256"], Sha256FileHex(again.shared_object));
  // The rebuilt entry is sound again.
  BuildResult third = BuildCandidate(kKernel, options_);
  EXPECT_TRUE(third.cache_hit);
  EXPECT_EQ(third.cache_problem, "");
  EXPECT_EQ(Mode(third.shared_object), 0555u);
}

TEST_F(BuildTest, OldFormatEntryIsRebuilt) {
  BuildResult r = BuildCandidate(kKernel, options_);
  ASSERT_EQ(r.outcome, BuildOutcome::kBuilt) << r.log;
  const std::string entry = std::filesystem::path(r.shared_object).parent_path().string();
  // build.json as the harness wrote it before: no format, no sha256 of the object.
  nlohmann::json old = {{"command", r.command},
                        {"log", r.log},
                        {"built", true},
                        {"seconds", 1.0},
                        {"nvcc_version", r.nvcc_version}};
  std::filesystem::remove(entry + "/build.json");
  WriteFileAtomic(entry + "/build.json", old.dump(2));

  BuildResult again = BuildCandidate(kKernel, options_);
  ASSERT_EQ(again.outcome, BuildOutcome::kBuilt) << again.log;
  EXPECT_FALSE(again.cache_hit);
  EXPECT_NE(again.cache_problem.find("older format"), std::string::npos) << again.cache_problem;
  auto j = nlohmann::json::parse(ReadFile(entry + "/build.json"));
  EXPECT_EQ(j["candidate_so"]["sha256"], Sha256FileHex(again.shared_object));

  // An old compile-error entry is not replayed either (its log came from an unconfined nvcc).
  const std::string bad = "__global__ void k() { undefined_thing(); }\n";
  BuildResult err = BuildCandidate(bad, options_);
  ASSERT_EQ(err.outcome, BuildOutcome::kCompileError);
  const std::string err_entry = options_.cache_dir + "/" + err.key;
  std::filesystem::remove(err_entry + "/build.json");
  WriteFileAtomic(err_entry + "/build.json",
                  nlohmann::json{{"command", err.command},
                                 {"log", "candidate.cu(1): error: root:x:0:0 leaked\n"},
                                 {"built", false}}
                      .dump());
  BuildResult err2 = BuildCandidate(bad, options_);
  EXPECT_FALSE(err2.cache_hit);
  EXPECT_EQ(err2.log.find("leaked"), std::string::npos) << err2.log;
  EXPECT_NE(err2.errors.find("undefined_thing"), std::string::npos) << err2.errors;
}

TEST_F(BuildTest, CacheHitReportsTheSandboxOfItsBuild) {
  BuildResult r = BuildCandidate(kKernel, options_);
  ASSERT_EQ(r.outcome, BuildOutcome::kBuilt) << r.log;
  EXPECT_EQ(r.sandbox.value("state", ""), "on");
  EXPECT_TRUE(ToJson(r).contains("sandbox"));
  BuildResult again = BuildCandidate(kKernel, options_);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.sandbox, r.sandbox);
}

TEST_F(BuildTest, UnknownArchIsAUsageError) {
  options_.arch = "sm_80";
  EXPECT_THROW(BuildCandidate(kKernel, options_), std::exception);
}

// --- upstream PTXBench's candidates (the tvm-ffi ABI, task/abi.h) ---

std::string UpstreamControl(const std::string& name) {
  return std::string(PTXBENCH_SOURCE_DIR) + "/controls/upstream/" + name;
}

TEST_F(BuildTest, NativeSourcesStayNative) {
  BuildResult b = BuildCandidate(kKernel, options_);
  ASSERT_EQ(b.outcome, BuildOutcome::kBuilt) << b.log;
  EXPECT_EQ(b.abi, CandidateAbi::kNative);
  EXPECT_EQ(ToJson(b)["abi"], "native");
  EXPECT_FALSE(ToJson(b).contains("tvm_ffi_version"));
  for (const auto& a : b.command) EXPECT_EQ(a.find("tvm_ffi"), std::string::npos) << a;
}

TEST_F(BuildTest, AnUpstreamSourceWithoutTheTvmFfiRuntimeIsNotBuilt) {
  ::setenv("PTXBENCH_TVM_FFI", dir_.File("no-such-folder").c_str(), 1);
  std::string message;
  try {
    BuildCandidate(ReadFile(UpstreamControl("gemm_tvm_ffi.cu")), options_);
  } catch (const Error& e) {
    message = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kEnvironment);
  }
  ::unsetenv("PTXBENCH_TVM_FFI");
  EXPECT_NE(message.find("TVM-FFI runtime is missing"), std::string::npos) << message;
  EXPECT_NE(message.find("no-such-folder"), std::string::npos) << message;
}

class UpstreamBuildTest : public BuildTest {
 protected:
  void SetUp() override {
    BuildTest::SetUp();
    if (IsSkipped()) return;
    std::string why;
    tvm_ffi_ = FindTvmFfi(&why);
    if (!tvm_ffi_) GTEST_SKIP() << "no TVM-FFI runtime: " << why;
  }
  std::optional<TvmFfiInstall> tvm_ffi_;
};

// Both upstream controls build, confined, against the pinned runtime, and link only what the
// policy allows a tvm-ffi candidate.
TEST_F(UpstreamBuildTest, ControlsBuildAgainstThePinnedRuntime) {
  EXPECT_EQ(tvm_ffi_->version, kTvmFfiPinnedVersion);
  for (const char* file : {"gemm_tvm_ffi.cu", "mha_with_lse_tvm_ffi.cu"}) {
    SCOPED_TRACE(file);
    std::string source = ReadFile(UpstreamControl(file));
    BuildResult b = BuildCandidate(source, options_);
    ASSERT_EQ(b.outcome, BuildOutcome::kBuilt) << b.log;
    EXPECT_EQ(b.abi, CandidateAbi::kTvmFfi);
    EXPECT_EQ(b.tvm_ffi_version, kTvmFfiPinnedVersion);
    auto has = [&](const std::string& arg) {
      return std::find(b.command.begin(), b.command.end(), arg) != b.command.end();
    };
    EXPECT_TRUE(has("-I" + tvm_ffi_->include));
    EXPECT_TRUE(has("-L" + tvm_ffi_->lib_dir));
    EXPECT_TRUE(has("-ltvm_ffi"));
    EXPECT_TRUE(has("-rpath,$ORIGIN:" + tvm_ffi_->lib_dir));
    EXPECT_EQ(ToJson(b)["abi"], "tvm-ffi");
    EXPECT_EQ(b.sandbox.value("state", ""), "on");
    ElfInfo elf = ReadElfInfo(b.shared_object);
    EXPECT_NE(std::find(elf.needed.begin(), elf.needed.end(), "libtvm_ffi.so"), elf.needed.end());
    EXPECT_TRUE(ForbiddenDependencies(elf, /*tvm_ffi=*/true).empty());
    EXPECT_EQ(ForbiddenDependencies(elf), std::vector<std::string>{"libtvm_ffi.so"});
    EXPECT_TRUE(ExportsFunction(elf, "__tvm_ffi_run"));
    EXPECT_FALSE(ExportsFunction(elf, "run"));
    EXPECT_FALSE(b.functions.empty());
    // The second build is the cache's.
    BuildResult again = BuildCandidate(source, options_);
    EXPECT_TRUE(again.cache_hit);
    EXPECT_EQ(again.abi, CandidateAbi::kTvmFfi);
    EXPECT_EQ(again.key, b.key);
  }
}

// `ptxbench inspect` on them: the static view of the object that would run.
TEST_F(UpstreamBuildTest, InspectShowsTheirSass) {
  const char* bin = std::getenv("PTXBENCH_BIN");
  if (!bin || !FileExists(bin)) GTEST_SKIP() << "the ptxbench binary is not built";
  for (const char* file : {"gemm_tvm_ffi.cu", "mha_with_lse_tvm_ffi.cu"}) {
    SCOPED_TRACE(file);
    CommandResult r = RunCommand({bin, "inspect", UpstreamControl(file), "--json", "--cache-dir",
                                  dir_.File("inspect-cache")},
                                 std::chrono::seconds(600));
    if (r.exit.code == 3) GTEST_SKIP() << "static inspection unavailable here: " << r.output;
    ASSERT_EQ(r.exit.code, 0) << r.output;
    auto j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
    EXPECT_EQ(j["state"], "ran") << r.output;
    EXPECT_FALSE(j["functions"].empty()) << r.output;
  }
}

}  // namespace
}  // namespace ptxbench
