#include <elf.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <vector>

#include "common/files.h"
#include "common/sandbox.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "compile/nvcc.h"
#include "compile/tvm_ffi.h"
#include "run/channel.h"
#include "run/children.h"
#include "run/confine.h"
#include "run/memcheck.h"
#include "run/reference_cache.h"
#include "task/device_ops.h"
#include "task/family.h"

namespace ptxbench {
namespace {

// Shaped like compute-sanitizer 2025's report of a read one element past an allocation.
const char* kMemcheckLog = R"(========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 2 bytes
=========     at gemm_reads_past_end(const __nv_bfloat16 *, const __nv_bfloat16 *, __nv_bfloat16 *, int, int, int)+0x2f0 in candidate.cu:41
=========     by thread (127,0,0) in block (55,0,0)
=========     Address 0x7f3a2c800000 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f3a2c000000 of size 8388608 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2e9a3f] in libcuda.so.1
=========
========= Invalid __global__ read of size 2 bytes
=========     at gemm_reads_past_end(...)+0x2f0 in candidate.cu:41
=========     by thread (126,0,0) in block (55,0,0)
=========     Address 0x7f3a2c800002 is out of bounds
=========
========= Warning: something harmless the driver said
========= ERROR SUMMARY: 2 errors
)";

// The witness digest: a commitment to an output, so any change to the bytes, the length or
// the key must change it (its device twin is checked against it on the GPU).
TEST(WitnessDigest, ChangesWithEveryByteTheLengthAndTheKey) {
  std::vector<uint8_t> data(3 * 8 * kDigestLanes + 13);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + 7);
  const std::string base = HostDigest(data.data(), data.size(), 42);
  EXPECT_EQ(base.size(), 32u);
  EXPECT_EQ(base, HostDigest(data.data(), data.size(), 42));
  EXPECT_NE(base, HostDigest(data.data(), data.size(), 43));
  EXPECT_NE(base, HostDigest(data.data(), data.size() - 1, 42));
  // First byte, a byte in the second pass over the lanes, the last (zero-padded) tail byte.
  for (size_t at : {size_t{0}, size_t{8} * kDigestLanes + 5, data.size() - 1}) {
    auto changed = data;
    changed[at] ^= 1;
    EXPECT_NE(base, HostDigest(changed.data(), changed.size(), 42)) << "byte " << at;
  }
  // Two words swapped between lanes: not a sum of parts.
  auto swapped = data;
  std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 8);
  EXPECT_NE(base, HostDigest(swapped.data(), swapped.size(), 42));
  // Appending a zero byte is not the same buffer (the tail is zero-padded).
  auto longer = data;
  longer.push_back(0);
  EXPECT_NE(base, HostDigest(longer.data(), longer.size(), 42));
}

TEST(Memcheck, ParsesTheFirstErrorIntoParts) {
  MemcheckReport r = ParseMemcheckLog(kMemcheckLog);
  EXPECT_TRUE(r.summary_seen);
  EXPECT_EQ(r.error_count, 2);
  ASSERT_EQ(r.errors.size(), 2u);
  const MemcheckError& e = r.errors[0];
  EXPECT_EQ(e.kind, "Invalid __global__ read of size 2 bytes");
  EXPECT_NE(e.location.find("candidate.cu:41"), std::string::npos);
  EXPECT_EQ(e.thread, "by thread (127,0,0) in block (55,0,0)");
  EXPECT_NE(e.address.find("1 bytes after the nearest allocation"), std::string::npos);
  EXPECT_EQ(e.address.find("Host Frame"), std::string::npos);
  EXPECT_NE(e.Summary().find("Invalid __global__ read of size 2 bytes at gemm_reads_past_end"),
            std::string::npos);
}

TEST(Memcheck, CleanReportHasNoErrors) {
  MemcheckReport r =
      ParseMemcheckLog("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n");
  EXPECT_TRUE(r.summary_seen);
  EXPECT_EQ(r.error_count, 0);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_FALSE(ParseMemcheckLog("").summary_seen);
}

TEST(Memcheck, CommandExcludesHarnessKernelsAndSetsTheExitCode) {
  // A stand-in sanitizer whose help lists both optional options.
  ScratchDir dir("memcheck-cmd");
  std::string fake = dir.File("compute-sanitizer");
  WriteFileAtomic(fake, "#!/bin/sh\necho '--padding --kernel-name-exclude'\n");
  chmod(fake.c_str(), 0755);
  auto cmd = MemcheckCommand(fake, "/tmp/log");
  std::string s;
  for (const auto& a : cmd) s += a + " ";
  EXPECT_NE(s.find("--tool memcheck"), std::string::npos);
  EXPECT_NE(s.find("--error-exitcode 86"), std::string::npos);
  EXPECT_NE(s.find("--padding 256"), std::string::npos);
  EXPECT_NE(s.find("kns=ptxbench_"), std::string::npos);
  EXPECT_NE(s.find("--log-file /tmp/log"), std::string::npos);
  EXPECT_EQ(ParseSanitizeMode("on-failure"), SanitizeMode::kOnFailure);
  EXPECT_THROW(ParseSanitizeMode("sometimes"), std::exception);
}

TEST(Channel, UntrustedLinesAreSetApart) {
  std::vector<std::string> garbage;
  auto m = ParseChannel({"{\"event\":\"done\"}", "hello", "[1,2]", "{\"no_event\":1}"}, &garbage);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0]["event"], "done");
  EXPECT_EQ(garbage.size(), 3u);
  // A candidate's process writing a line 500,000 levels deep: set apart while parsed, never
  // handed to a record's recursive dump (issue 35).
  const std::string deep =
      "{\"event\":\"trial\",\"x\":" + std::string(500000, '[') + std::string(500000, ']') + "}";
  garbage.clear();
  m = ParseChannel({deep, "{\"event\":\"done\"}"}, &garbage);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0]["event"], "done");
  EXPECT_EQ(garbage.size(), 1u);
}

TEST(ReferenceCache, StoresAndFindsEntriesBySeed) {
  ScratchDir dir("refcache-test");
  ReferenceCache cache(dir.File("cache"));
  const Family& gemm = *FindFamily("gemm");
  Axes axes = {{"M", 2}, {"N", 3}, {"K", 4}};
  EXPECT_FALSE(cache.Lookup(gemm, axes, 1).has_value());
  WriteFileAtomic(dir.File("seed1_C.f32"), std::string(24, 'x'));
  ReferenceEntry e = cache.Store(gemm, axes, 1, {11, 22}, {dir.File("seed1_C.f32")});
  EXPECT_EQ(e.input_checksums, (std::vector<uint64_t>{11, 22}));
  auto hit = cache.Lookup(gemm, axes, 1);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(ReadFile(hit->output_files.at(0)), std::string(24, 'x'));
  EXPECT_FALSE(cache.Lookup(gemm, axes, 2).has_value());
  EXPECT_FALSE(cache.Lookup(gemm, {{"M", 2}, {"N", 3}, {"K", 5}}, 1).has_value());
  EXPECT_NE(cache.Key(gemm, axes, 1), cache.Key(gemm, axes, 2));
}

// An upstream-style (tvm-ffi) candidate loads in a confined child (dropped user, Landlock,
// seccomp), with the copy of libtvm_ffi.so placed beside it found through its run path's
// $ORIGIN, and its entry point and the runtime's functions resolved. No GPU needed.
TEST(ConfinedLoad, AnUpstreamCandidateLoadsWithItsRuntime) {
  const char* bin = std::getenv("PTXBENCH_BIN");
  if (!bin || !FileExists(bin)) GTEST_SKIP() << "the ptxbench binary is not built";
  if (!FindProgram("nvcc")) GTEST_SKIP() << "nvcc not found";
  std::string why;
  auto tvm_ffi = FindTvmFfi(&why);
  if (!tvm_ffi) GTEST_SKIP() << "no TVM-FFI runtime: " << why;
  ScratchDir dir("confined-load-test");
  BuildOptions bo;
  bo.cache_dir = dir.File("cache");
  BuildResult b = BuildCandidate(
      ReadFile(std::string(PTXBENCH_SOURCE_DIR) + "/controls/upstream/gemm_tvm_ffi.cu"), bo);
  ASSERT_EQ(b.outcome, BuildOutcome::kBuilt) << b.log;
  ChildRequest r;
  r.spec = {{"role", "load_check"}, {"shared_object", b.shared_object}, {"abi", "tvm-ffi"}};
  r.work_dir = dir.path();
  r.name = "candidate";
  r.confine = true;
  r.executable = bin;
  r.timeout = std::chrono::seconds(120);
  ChildOutcome o = RunChild(r);
  const nlohmann::json* loaded = o.First("loaded");
  ASSERT_NE(loaded, nullptr) << o.exit.Describe() << "\n"
                             << (o.First("error") ? o.First("error")->dump() : "") << "\n"
                             << o.log_tail;
  EXPECT_EQ((*loaded)["abi"], "tvm-ffi");
  EXPECT_TRUE(FileExists(o.folder + "/libtvm_ffi.so"));
  EXPECT_EQ(o.sandbox.value("state", ""), "on");
  // Loaded as a native candidate it does not load: that child is given no TVM-FFI runtime
  // (no copy, no readable folder), and the object has no `run` anyway.
  r.spec["abi"] = "native";
  r.name = "native";
  ChildOutcome n = RunChild(r);
  EXPECT_EQ(n.First("loaded"), nullptr);
  ASSERT_NE(n.First("error"), nullptr) << n.log_tail;
  EXPECT_EQ(n.First("error")->value("stage", ""), "load") << n.First("error")->dump();
  EXPECT_FALSE(FileExists(n.folder + "/libtvm_ffi.so"));
}

// A confined child the way an evaluation starts one (RunChild: its folder, its user, its
// policy), running a shell script in place of the harness: the script is a wrapper whose
// target (the harness) it never starts. What it prints comes back as the log's tail.
ChildOutcome RunConfinedScript(const std::string& work_dir, const std::string& name,
                               const std::string& script) {
  ChildRequest r;
  r.spec = {{"role", "probe"}};
  r.work_dir = work_dir;
  r.name = name;
  r.confine = true;
  r.executable = "/bin/true";
  r.wrapper = {"/bin/sh", "-c", script, "sh"};
  r.timeout = std::chrono::seconds(30);
  return RunChild(r);
}

// The uid a script printed with `echo uid=$(id -u)`.
std::string PrintedUid(const ChildOutcome& o) {
  size_t at = o.log_tail.find("uid=");
  if (at == std::string::npos) return "";
  return o.log_tail.substr(at + 4, o.log_tail.find('\n', at) - at - 4);
}

// Two evaluations at once: their children run as two different users, each its evaluation's
// own, and (by the file modes alone, without Landlock or namespaces to help) a child of one
// cannot open the other's folder.
TEST(ConfinedChild, ConcurrentEvaluationsRunAsUsersOfTheirOwn) {
  if (!ProbeSandbox().user_drop) GTEST_SKIP() << "not root: no uid drop";
  ScratchDir eval_a("uid-eval-a"), eval_b("uid-eval-b");
  ChildOutcome a = RunConfinedScript(eval_a.path(), "candidate",
                                     "echo uid=$(id -u); echo mine > \"$HOME/own.txt\"");
  ChildOutcome b = RunConfinedScript(eval_b.path(), "candidate", "echo uid=$(id -u)");
  ChildOutcome a2 = RunConfinedScript(eval_a.path(), "timing", "echo uid=$(id -u)");
  ASSERT_NE(PrintedUid(a), "") << a.log_tail;
  ASSERT_NE(PrintedUid(b), "") << b.log_tail;
  EXPECT_NE(PrintedUid(a), PrintedUid(b));
  EXPECT_EQ(PrintedUid(a), PrintedUid(a2)) << "one evaluation, one user";
  EXPECT_EQ(PrintedUid(a), std::to_string(ClaimSandboxUser(eval_a.path()).uid));
  EXPECT_EQ(a.sandbox.value("user", ""), PrintedUid(a) + ":" + PrintedUid(a));
  EXPECT_TRUE(a.sandbox.contains("user_policy"));
  ASSERT_TRUE(FileExists(a.folder + "/own.txt"));
  // B's user against A's folder, with nothing but the uid between them.
  SandboxPolicy p;
  p.enabled = true;
  p.env_allow = {"PATH"};
  p.namespaces = false;
  p.landlock = false;
  SandboxUser user_b = ClaimSandboxUser(eval_b.path());
  p.uid = user_b.uid;
  p.gid = user_b.gid;
  PreparedSandbox sandbox(p);
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c",
               "cat '" + a.folder + "/own.txt'; echo read=$?; echo x > '" + a.folder +
                   "/planted'; echo write=$?"};
  spec.sandbox = &sandbox;
  Child child = Child::Start(spec);
  child.Wait(std::chrono::steady_clock::now() + std::chrono::seconds(20));
  const std::string& out = child.captured_output();
  EXPECT_EQ(out.find("mine"), std::string::npos) << out;
  EXPECT_EQ(out.find("read=0"), std::string::npos) << out;
  EXPECT_EQ(out.find("write=0"), std::string::npos) << out;
  EXPECT_FALSE(FileExists(a.folder + "/planted"));
}

// The evaluations' children see a /dev/shm of their own: a file another evaluation (here the
// parent) has there is neither visible nor writable, what they write there stays there, and
// their own folder, in the host's /dev/shm, is theirs as before.
TEST(ConfinedChild, SeesAPrivateDevShm) {
  if (!ProbeSandbox().private_dev_shm) GTEST_SKIP() << "no private /dev/shm here";
  ScratchDir eval("shm-eval");
  const std::string planted = "/dev/shm/ptxbench-other-" + std::to_string(::getpid());
  const std::string left = "/dev/shm/ptxbench-left-" + std::to_string(::getpid());
  WriteFileAtomic(planted, "other-evaluation\n");
  ChildOutcome o = RunConfinedScript(
      eval.path(), "candidate",
      "cat " + planted + "; ls /dev/shm | sed s/^/listed:/; echo x > " + planted + "; echo y > " +
          left + "; echo shm=$?; echo z > \"$HOME/mine.txt\"; echo own=$?");
  EXPECT_EQ(o.sandbox.value("dev_shm", ""), "private tmpfs");
  EXPECT_EQ(o.log_tail.find("other-evaluation"), std::string::npos) << o.log_tail;
  EXPECT_NE(o.log_tail.find("listed:shm-eval"), std::string::npos) << o.log_tail;
  EXPECT_EQ(o.log_tail.find("listed:ptxbench-other-"), std::string::npos) << o.log_tail;
  EXPECT_NE(o.log_tail.find("shm=0"), std::string::npos) << o.log_tail;
  EXPECT_NE(o.log_tail.find("own=0"), std::string::npos) << o.log_tail;
  EXPECT_EQ(ReadFile(planted), "other-evaluation\n");
  EXPECT_FALSE(FileExists(left));
  EXPECT_TRUE(FileExists(o.folder + "/mine.txt"));
  ::unlink(planted.c_str());
  ::unlink(left.c_str());
}

// The test harness's variables pass only where a test asks for them: this test program never
// does, as ptxbench never does, so the fake child's mode set in our environment stays here.
TEST(ConfinedChild, TheProductionAllowListKeepsTestVariablesOut) {
  ::setenv("PTXBENCH_FAKE_MODE", "correct", 1);
  SandboxPolicy p = CandidateChildPolicy("/nonexistent", {});
  for (const auto& name : p.env_allow) EXPECT_EQ(name.find("PTXBENCH"), std::string::npos) << name;
  ScratchDir eval("env-eval");
  ChildOutcome o = RunConfinedScript(eval.path(), "candidate", "env");
  EXPECT_EQ(o.log_tail.find("PTXBENCH_FAKE_MODE"), std::string::npos) << o.log_tail;
  EXPECT_NE(o.log_tail.find("LD_BIND_NOW=1"), std::string::npos) << o.log_tail;
  EXPECT_NE(o.log_tail.find("HOME=" + o.folder), std::string::npos) << o.log_tail;
  ::unsetenv("PTXBENCH_FAKE_MODE");
}

// Before the candidate is mapped the child's own /proc entries are writable only where the
// CUDA driver names its threads: /proc/self/mem (which writes through any page protection)
// and other processes' memory are not.
TEST(ConfinedChild, ProcSelfMemIsNotWritable) {
  if (ProbeSandbox().landlock_abi < 3) GTEST_SKIP() << "no Landlock with the truncate right";
  if (!ProbeSandbox().proc_remount) GTEST_SKIP() << "no /proc of its own";
  ScratchDir eval("mem-eval");
  ChildOutcome o = RunConfinedScript(eval.path(), "candidate",
                                     "true 3<>/proc/self/mem; echo mem=$?; "
                                     "true 3<>/proc/1/mem; echo init_mem=$?; "
                                     "echo renamed > /proc/self/task/$$/comm; echo comm=$?");
  EXPECT_NE(o.log_tail.find("mem="), std::string::npos) << o.log_tail;
  EXPECT_EQ(o.log_tail.find("mem=0"), std::string::npos) << o.log_tail;
  EXPECT_EQ(o.log_tail.find("init_mem=0"), std::string::npos) << o.log_tail;
  EXPECT_NE(o.log_tail.find("comm=0"), std::string::npos) << o.log_tail;
}

// Peak resident memory of this process since the last reset, in KiB.
long PeakRssKib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// A child printing 100 MiB to stderr: the parent reads the last 64 KiB of its log, never the
// whole of it.
TEST(ConfinedChild, OutputIsReadAsABoundedTail) {
  ScratchDir dir("bounded-log");
  std::ofstream("/proc/self/clear_refs") << "5";  // resets VmHWM
  long before = PeakRssKib();
  ChildRequest r;
  r.spec = {{"role", "probe"}};
  r.work_dir = dir.path();
  r.name = "printer";
  r.executable = "/bin/true";
  r.wrapper = {"/bin/sh", "-c",
               "echo first-line >&2; head -c 104857600 /dev/zero | tr '\\0' x >&2; "
               "echo; echo last-line >&2",
               "sh"};
  r.timeout = std::chrono::seconds(60);
  ChildOutcome o = RunChild(r);
  long after = PeakRssKib();
  EXPECT_EQ(o.exit.code, 0) << o.exit.Describe();
  EXPECT_LE(o.log_tail.size(), (64u << 10) + 200) << o.log_tail.size();
  EXPECT_NE(o.log_tail.find("last-line"), std::string::npos);
  // "first-line\n", 100 MiB of x, "\n", "last-line\n": all but the last 64 KiB counted.
  const size_t total = 11 + (100u << 20) + 1 + 10;
  EXPECT_EQ(
      o.log_tail.rfind("[" + std::to_string(total - (64u << 10)) + " earlier bytes not kept]\n", 0),
      0u)
      << o.log_tail.substr(0, 80);
  EXPECT_LT(after - before, 32 * 1024)
      << "peak RSS grew from " << before << " to " << after << " KiB";
}

// A shared object that, when its constructor runs, notes in $HOME what it could do: open
// its process's memory for writing, directly or after making itself dumpable again.
constexpr const char* kProbeObject = R"(#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>
__attribute__((constructor)) static void Probe() {
  char path[4096], task[64];
  snprintf(path, sizeof path, "%s/constructor.txt", getenv("HOME"));
  snprintf(task, sizeof task, "/proc/self/task/%d/mem", (int)gettid());
  int mem = open("/proc/self/mem", O_RDWR);
  int task_mem = open(task, O_RDWR);
  int dumpable = prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  int mem_after = open("/proc/self/mem", O_RDWR);
  FILE* f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "mem=%d task_mem=%d dumpable=%d mem_after=%d\n", mem >= 0, task_mem >= 0,
          dumpable == 0, mem_after >= 0);
  fclose(f);
}
extern "C" int run() { return 0; }
)";

class ConfinedLoadCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_ = std::getenv("PTXBENCH_BIN") ? std::getenv("PTXBENCH_BIN") : "";
    if (bin_.empty() || !FileExists(bin_)) GTEST_SKIP() << "the ptxbench binary is not built";
    auto cxx = FindProgram("c++");
    if (!cxx) GTEST_SKIP() << "no C++ compiler";
    WriteFileAtomic(dir_.File("probe.cc"), kProbeObject);
    object_ = dir_.File("probe.so");
    CommandResult c = RunCommand({*cxx, "-shared", "-fPIC", "-o", object_, dir_.File("probe.cc")},
                                 std::chrono::seconds(60));
    ASSERT_EQ(c.exit.code, 0) << c.output;
  }
  ChildOutcome Load(const std::string& name,
                    const nlohmann::json& extra = nlohmann::json::object()) {
    ChildRequest r;
    r.spec = {{"role", "load_check"}, {"shared_object", object_}};
    r.spec.update(extra);
    r.work_dir = dir_.path();
    r.name = name;
    r.confine = true;
    r.executable = bin_;
    r.timeout = std::chrono::seconds(60);
    return RunChild(r);
  }
  ScratchDir dir_{"load-check"};
  std::string bin_, object_;
};

// The hash the parent took of the object it built, held against what the child opens: an
// object changed on the way is refused before any of its code runs, and says so.
TEST_F(ConfinedLoadCheck, ATamperedObjectIsRefused) {
  const std::string honest_sha256 = Sha256FileHex(object_);
  ChildOutcome ok = Load("honest");
  ASSERT_NE(ok.First("loaded"), nullptr)
      << ok.log_tail << (ok.First("error") ? ok.First("error")->dump() : "");
  EXPECT_EQ(ok.First("object_mismatch"), nullptr);
  EXPECT_TRUE(FileExists(ok.folder + "/constructor.txt"));
  // The same object with one byte more: what a candidate of another evaluation could make of
  // the copy in a child's folder.
  std::string tampered = dir_.File("tampered.so");
  WriteFileAtomic(tampered, ReadFile(object_) + "x");
  std::string saved = object_;
  object_ = tampered;
  ChildOutcome bad = Load("tampered", {{"shared_object_sha256", honest_sha256}});
  object_ = saved;
  EXPECT_EQ(bad.First("loaded"), nullptr);
  const nlohmann::json* mismatch = bad.First("object_mismatch");
  ASSERT_NE(mismatch, nullptr) << bad.log_tail;
  EXPECT_EQ(mismatch->value("expected_sha256", ""), honest_sha256);
  EXPECT_EQ(mismatch->value("found_sha256", ""), Sha256FileHex(tampered));
  ASSERT_NE(bad.First("error"), nullptr);
  EXPECT_EQ(bad.First("error")->value("stage", ""), "harness");
  EXPECT_FALSE(FileExists(bad.folder + "/constructor.txt")) << "the tampered code ran";
}

// Once the candidate's code runs, its process's memory cannot be opened for writing: not
// through /proc/self/mem, not through its thread's, and not after it tries to make itself
// dumpable again.
TEST_F(ConfinedLoadCheck, TheCandidateCannotOpenItsMemoryForWriting) {
  if (ProbeSandbox().landlock_abi == 0 || !ProbeSandbox().seccomp)
    GTEST_SKIP() << "no Landlock or no seccomp here";
  ChildOutcome o = Load("candidate");
  ASSERT_NE(o.First("loaded"), nullptr) << o.log_tail;
  const nlohmann::json* c = o.First("confinement");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->value("proc_writes", ""), "refused");
  EXPECT_EQ(Trim(ReadFile(o.folder + "/constructor.txt")),
            "mem=0 task_mem=0 dumpable=0 mem_after=0");
}

// The program a candidate's child runs is linked with full RELRO and immediate binding: no
// writable GOT, no lazily bound slot for a candidate to point elsewhere.
TEST(Hardening, PtxbenchIsLinkedWithFullRelroAndBindNow) {
  const char* bin = std::getenv("PTXBENCH_BIN");
  if (!bin || !FileExists(bin)) GTEST_SKIP() << "the ptxbench binary is not built";
  std::ifstream elf(bin, std::ios::binary);
  // Reads a structure at a file offset (the binary is large: only its headers are read).
  auto read_at = [&](uint64_t offset, auto* out) {
    elf.seekg(static_cast<std::streamoff>(offset));
    elf.read(reinterpret_cast<char*>(out), sizeof *out);
    return static_cast<bool>(elf);
  };
  Elf64_Ehdr eh;
  ASSERT_TRUE(read_at(0, &eh));
  ASSERT_EQ(std::memcmp(eh.e_ident, ELFMAG, SELFMAG), 0);
  ASSERT_EQ(eh.e_ident[EI_CLASS], ELFCLASS64);
  bool relro = false, bind_now = false, dynamic = false;
  for (size_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    ASSERT_TRUE(read_at(eh.e_phoff + i * sizeof ph, &ph));
    if (ph.p_type == PT_GNU_RELRO) relro = true;
    if (ph.p_type != PT_DYNAMIC) continue;
    dynamic = true;
    for (uint64_t at = ph.p_offset; at + sizeof(Elf64_Dyn) <= ph.p_offset + ph.p_filesz;
         at += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      ASSERT_TRUE(read_at(at, &d));
      if (d.d_tag == DT_NULL) break;
      if (d.d_tag == DT_BIND_NOW) bind_now = true;
      if (d.d_tag == DT_FLAGS && (d.d_un.d_val & DF_BIND_NOW)) bind_now = true;
      if (d.d_tag == DT_FLAGS_1 && (d.d_un.d_val & DF_1_NOW)) bind_now = true;
    }
  }
  EXPECT_TRUE(dynamic);
  EXPECT_TRUE(relro) << "no PT_GNU_RELRO segment";
  EXPECT_TRUE(bind_now) << "no BIND_NOW in the dynamic section";
}

}  // namespace
}  // namespace ptxbench
