// The command line, end to end: bad input gets one line naming the problem and a non-zero
// exit; nothing is written when the request is bad.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

#include "common/files.h"
#include "common/source_policy.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "common/test_process.h"
#include "serve/postgres_fixture.h"

#include <nlohmann/json.hpp>

namespace ptxbench {
namespace {

using namespace std::chrono_literals;

std::string Bin() { return std::getenv("PTXBENCH_BIN"); }
std::string Src() { return std::getenv("PTXBENCH_SOURCE_DIR"); }

CommandResult Ptxbench(std::vector<std::string> args) {
  args.insert(args.begin(), Bin());
  return RunCommand(args, 120s);
}

using Words = std::vector<std::string>;

// `head`, the words under test, then `tail`: the cases of one command share the words around.
Words Around(Words head, const Words& middle, const Words& tail) {
  head.insert(head.end(), middle.begin(), middle.end());
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

size_t Lines(const std::string& s) {
  size_t n = 0;
  for (char ch : s) n += ch == '\n';
  return n;
}

// A request refused the way every bad request is: exit 2 and one line that holds `expect`.
// The result comes back for the caller's own further checks.
CommandResult ExpectRefused(const std::vector<std::string>& args, const std::string& expect) {
  SCOPED_TRACE("ptxbench " + Join(args, " "));
  CommandResult r = Ptxbench(args);
  EXPECT_EQ(r.exit.kind, ExitKind::kExited) << r.output;
  EXPECT_EQ(r.exit.code, 2) << expect << "\n" << r.output;
  EXPECT_NE(r.output.find(expect), std::string::npos) << r.output;
  EXPECT_EQ(Lines(r.output), 1u) << r.output;
  return r;
}

TEST(Cli, TasksListsEveryDefinitionAndShowsOne) {
  CommandResult r = Ptxbench({"tasks"});
  EXPECT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("gemm_n7168_k5120"), std::string::npos);
  EXPECT_NE(r.output.find("headline"), std::string::npos);
  r = Ptxbench({"tasks", "gemm_n7168_k5120"});
  EXPECT_EQ(r.exit.code, 0);
  EXPECT_NE(r.output.find("M=8192"), std::string::npos);
  EXPECT_NE(r.output.find("94920358-01a8-4c5b-9209-3103fd490e94"), std::string::npos);
  EXPECT_NE(r.output.find("extern \"C\" int run("), std::string::npos);
  r = Ptxbench({"tasks", "--family", "gemm", "--json"});
  EXPECT_EQ(r.exit.code, 0);
  auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.size(), 17u);
  r = Ptxbench({"tasks", "--family", "nope"});
  EXPECT_EQ(r.exit.code, 2);
}

struct BadInput {
  std::vector<std::string> args;
  std::string expect;
};

TEST(Cli, BadInputIsOneLineAndExitTwo) {
  ScratchDir dir("cli-test");
  std::string kernel = Src() + "/controls/gemm/naive_correct.cu";
  std::string json = dir.File("out.json");
  auto eval = [&](const Words& o) {
    return Around({"eval", kernel, "--task", "gemm_n7168_k5120"}, o, {"--json", json});
  };
  std::vector<BadInput> cases = {
      {{"eval", dir.File("missing.cu"), "--task", "gemm_n7168_k5120", "--json", json},
       "missing.cu: no such readable file"},
      {{"eval", dir.path(), "--task", "gemm_n7168_k5120", "--json", json}, "no such readable file"},
      {{"eval", kernel, "--task", "gemm_n7168_k512", "--json", json},
       "did you mean gemm_n7168_k5120"},
      {eval({"--workload", "M=abc"}), "malformed value for axis M"},
      {eval({"--workload", "M=100"}), "defines no workload M=100"},
      {eval({"--workload", "X=1"}), "no axis 'X'"},
      {eval({"--arch", "sm_80"}), "--arch: sm_80 not in {sm_90a,sm_100a}"},
      {eval({"--seed", "-3"}), "--seed: Value -3 is not a non-negative integer or `random`"},
      {eval({"--sanitize", "maybe"}), "--sanitize: maybe not in {always,on-failure,never}"},
      {eval({"--trials", "0"}), "--trials: Value 0 not in range"},
      {{"evl"}, "did you mean eval"},
      {{"baseline", "--task", "nope*", "--json", json}, "no task matches 'nope*'"},
      {{"baseline", "--task", "mha_*", "--workload", "S=512", "--all-workloads", "--json", json},
       "exclude each other"},
      {{"baseline", "--task", "mha_with_lse_d128", "--workload", "S=100", "--json", json},
       "defines no workload S=100"},
  };
  for (const auto& c : cases) {
    ExpectRefused(c.args, c.expect);
    EXPECT_FALSE(FileExists(json)) << "a bad request wrote " << json;
  }
}

TEST(Cli, NoNvccIsAOneLineError) {
  ScratchDir dir("cli-nvcc");
  std::string kernel = Src() + "/controls/gemm/naive_correct.cu";
  std::string json = dir.File("out.json");
  std::vector<std::string> args = {Bin(),    "eval", kernel, "--task", "gemm_n7168_k5120",
                                   "--json", json};
  CommandResult r = RunCommand(args, 60s, {{"PTXBENCH_NVCC", "/nonexistent/nvcc"}});
  EXPECT_EQ(r.exit.code, 3) << r.output;
  EXPECT_EQ(r.output, "ptxbench: nvcc not found at /nonexistent/nvcc ($PTXBENCH_NVCC)\n");
  EXPECT_FALSE(FileExists(json));
}

// Standard output alone (standard error dropped), for commands whose data goes there.
CommandResult PtxbenchStdout(std::vector<std::string> args) {
  args.insert(args.begin(), {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>/dev/null", Bin()});
  return RunCommand(args, 120s);
}

// A source that the screen rejects: evaluated without nvcc's work or a GPU.
std::string Rejected(const ScratchDir& dir) {
  std::string path = dir.File("rejected.cu");
  WriteFileAtomic(path, "#include <cublas_v2.h>\n__global__ void k() {}\n");
  return path;
}

bool HaveNvcc() { return std::getenv("PTXBENCH_NVCC") || FindProgram("nvcc"); }

bool IsCharDevice(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

// Standard error alone (standard output dropped): where progress lines go.
CommandResult PtxbenchStderr(std::vector<std::string> args) {
  args.insert(args.begin(), {"/bin/sh", "-c", "exec \"$0\" \"$@\" >/dev/null", Bin()});
  return RunCommand(args, 120s);
}

// `tasks` names the baseline `eval` will use: for attention forward that is FlashInfer (the
// paper's, of the paper's release), not the definition's cuDNN name, which follows among the
// alternatives.
TEST(Cli, TasksShowsTheBaselineEvalUses) {
  CommandResult r = Ptxbench({"tasks", "mha_with_lse_d128"});
  EXPECT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("baseline: FlashInfer 0.6.14 (sm90 prefill), eval's default; "
                          "--baseline flashinfer@0.7.4: FlashInfer 0.7.4 (sm90 prefill); "
                          "--baseline cudnn: cudnn_sdpa_fwd\n"),
            std::string::npos)
      << r.output;
  r = PtxbenchStdout({"tasks", "mha_with_lse_d128", "--json"});
  EXPECT_EQ(nlohmann::json::parse(r.output).value("eval_baseline", ""), "flashinfer@0.6.14");
  r = PtxbenchStdout({"tasks", "gemm_n7168_k5120", "--json"});
  EXPECT_EQ(nlohmann::json::parse(r.output).value("eval_baseline", ""), "cublaslt_bf16_fp32acc");
}

TEST(Cli, EvalShowsItsStagesOnStandardErrorUnlessQuiet) {
  if (!HaveNvcc()) GTEST_SKIP() << "no nvcc: eval stops before its first stage";
  ScratchDir dir("cli-stages");
  std::string kernel = Rejected(dir);
  CommandResult shown = PtxbenchStderr({"eval", kernel, "--task", "gemm_n128_k2048"});
  EXPECT_EQ(shown.exit.code, 1) << shown.output;
  EXPECT_NE(shown.output.find("] screen: the source against the rules\n"), std::string::npos)
      << shown.output;
  EXPECT_EQ(shown.output.find("build:"), std::string::npos) << "rejected before the build";
  EXPECT_EQ(PtxbenchStdout({"eval", kernel, "--task", "gemm_n128_k2048"}).output.find("screen:"),
            std::string::npos)
      << "progress stays off standard output";
  CommandResult quiet = PtxbenchStderr({"eval", kernel, "--task", "gemm_n128_k2048", "--quiet"});
  EXPECT_EQ(quiet.exit.code, 1);
  EXPECT_EQ(quiet.output, "");
}

TEST(Cli, BadOutputPathIsOneLineAndExitTwoBeforeAnyWork) {
  ScratchDir dir("cli-out");
  std::string kernel = Src() + "/controls/gemm/naive_correct.cu";
  std::string missing = dir.File("no/such/folder/out.json");
  std::string file = dir.File("plain.txt");
  WriteFileAtomic(file, "x\n");
  std::string runs = dir.File("runs");
  MakeDirs(runs);
  std::vector<BadInput> cases = {
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--json", missing},
       "--json " + missing + ": the folder " + dir.File("no/such/folder") + " does not exist"},
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--json", dir.path()},
       "--json " + dir.path() + ": is a folder, not a file"},
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--json", file + "/out.json"},
       file + " is not a folder"},
      {{"baseline", "--task", "gemm_n7168_k5120", "--json", missing}, "does not exist"},
      {{"baseline", "--task", "gemm_n7168_k5120", "--csv", dir.path()}, "--csv"},
      {{"baseline", "--task", "gemm_n7168_k5120", "--csv", "-", "--json", "-"},
       "--json -: --csv writes there too"},
      {{"report", "--runs", runs, "--html", missing}, "--html " + missing},
      {{"report", "--runs", runs, "--csv", dir.File("m.csv"), "--json", dir.File("m.csv")},
       "writes there too"},
      {{"submit", kernel, "--task", "gemm_n7168_k5120", "--evaluator", "http://127.0.0.1:9",
        "--json", missing},
       "does not exist"},
      // Kernel filesystems, where root's access() says yes but nothing can be written: refused
      // before the work, not after it (issue 35).
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--json", "/proc/self/status"},
       "is on /proc"},
      {{"report", "--runs", runs, "--html", "/sys/ptxbench-report.html"}, "is on /sys"},
      // Two documents on standard output, or in one file, cannot both be read back (issue 38).
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--json", "-", "--trace", "-"},
       "--trace -: --json writes there too"},
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--json", dir.File("x"), "--trace",
        dir.File("x")},
       "writes there too"},
      // Their Trace model refuses a PASSED trace without performance.
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--no-timing", "--trace", dir.File("t")},
       "--trace needs the timing layer"},
  };
  for (const auto& c : cases) ExpectRefused(c.args, c.expect);
  // No folder was created, and the plain file is untouched.
  EXPECT_FALSE(std::filesystem::exists(dir.File("no")));
  EXPECT_EQ(ReadFile(file), "x\n");
}

TEST(Cli, JsonDashWritesTheRecordToStandardOutput) {
  if (!HaveNvcc()) GTEST_SKIP() << "eval needs nvcc (checked before any work)";
  ScratchDir dir("cli-dash");
  std::string kernel = Rejected(dir);
  CommandResult r =
      PtxbenchStdout({"eval", kernel, "--task", "gemm_n7168_k5120", "--json", "-", "--no-timing"});
  EXPECT_EQ(r.exit.code, 1) << r.output;
  auto j = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.output;
  EXPECT_EQ(j["status"], "REJECTED") << r.output;
  // The summary went to standard error, not into the JSON.
  CommandResult both =
      Ptxbench({"eval", kernel, "--task", "gemm_n7168_k5120", "--json", "-", "--no-timing"});
  EXPECT_NE(both.output.find("REJECTED  gemm_n7168_k5120"), std::string::npos) << both.output;
}

TEST(Cli, SpecialOutputFilesAreWrittenInPlace) {
  if (!HaveNvcc()) GTEST_SKIP() << "eval needs nvcc (checked before any work)";
  ScratchDir dir("cli-devnull");
  std::string kernel = Rejected(dir);
  std::string link = dir.File("null.json");
  ASSERT_EQ(::symlink("/dev/null", link.c_str()), 0);
  for (const std::string& out : {std::string("/dev/null"), link}) {
    CommandResult r =
        Ptxbench({"eval", kernel, "--task", "gemm_n7168_k5120", "--json", out, "--quiet"});
    EXPECT_EQ(r.exit.code, 1) << out << "\n" << r.output;
    EXPECT_EQ(r.output, "") << out;
    EXPECT_TRUE(IsCharDevice("/dev/null")) << "/dev/null was replaced";
  }
  EXPECT_TRUE(std::filesystem::is_symlink(link)) << "the link was replaced";
  EXPECT_EQ(std::filesystem::read_symlink(link), "/dev/null");
  // Nothing else was left beside the link (no temporary file).
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 2u);  // rejected.cu and the link
  // A regular file through a link: the target is replaced, the link stays.
  std::string target = dir.File("target.json"), to_target = dir.File("to_target.json");
  WriteFileAtomic(target, "old\n");
  ASSERT_EQ(::symlink(target.c_str(), to_target.c_str()), 0);
  CommandResult r =
      Ptxbench({"eval", kernel, "--task", "gemm_n7168_k5120", "--json", to_target, "--quiet"});
  EXPECT_EQ(r.exit.code, 1) << r.output;
  EXPECT_TRUE(std::filesystem::is_symlink(to_target));
  EXPECT_EQ(nlohmann::json::parse(ReadFile(target))["status"], "REJECTED");
}

// A FlashInfer-Bench trace set as --tasks-dir (tests/fixtures/flashinfer-trace-set): its
// definitions that map onto a family are tasks, the rest are listed with why, and asking for a
// left-out definition or a refused workload is one line naming the reason.
TEST(Cli, AFlashInferBenchTraceSetIsATasksFolder) {
  const std::string set = Src() + "/tests/fixtures/flashinfer-trace-set";
  CommandResult r = Ptxbench({"tasks", "--tasks-dir", set});
  EXPECT_EQ(r.exit.code, 0) << r.output;
  for (const char* part : {"gemm_n256_k512", "attn_fwd_h8_d64_causal", "attn_bwd_h4_d64",
                           "left out (4 FlashInfer-Bench definitions no family here judges):",
                           "  rmsnorm_h4096 (rmsnorm): not gemm (whose tensor counts it has)",
                           "  gemm_kn_n256_k512 (gemm): not gemm"})
    EXPECT_NE(r.output.find(part), std::string::npos) << part << "\n" << r.output;
  r = Ptxbench({"tasks", "--tasks-dir", set, "attn_fwd_h8_d64_causal"});
  EXPECT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("FlashInfer-Bench: " + set +
                          "/definitions/attention/attn_fwd_h8_d64_causal.json (op_type "
                          "attention); tensors q, k, v, output, lse; axes B=batch_size"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("refused 9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c44: scalar input sm_scale"),
            std::string::npos)
      << r.output;
  r = PtxbenchStdout({"tasks", "--tasks-dir", set, "--json"});
  EXPECT_EQ(r.exit.code, 0);
  auto j = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_TRUE(j.is_array()) << r.output;
  EXPECT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["flashinfer_bench"]["op_type"], "attention");

  ScratchDir dir("cli-fib");
  std::string kernel = Src() + "/controls/gemm/naive_correct.cu";
  std::string json = dir.File("out.json");
  std::vector<BadInput> cases = {
      {{"tasks", "--tasks-dir", set, "rmsnorm_h4096"},
       "task rmsnorm_h4096 (FlashInfer-Bench definition " + set +
           "/definitions/rmsnorm/rmsnorm_h4096.json) is not judged here: not gemm"},
      {{"eval", kernel, "--tasks-dir", set, "--task", "gqa_paged_decode_h8_kv2_d64_ps1", "--json",
        json},
       "is not judged here: 5 tensor inputs and 2 outputs"},
      {{"eval", kernel, "--tasks-dir", set, "--task", "attn_fwd_h8_d64_causal", "--workload",
        "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c44", "--json", json},
       "workload 9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c44 of task attn_fwd_h8_d64_causal is not "
       "judged here: scalar input sm_scale = 0.1;"},
      {{"eval", kernel, "--tasks-dir", set, "--task", "attn_bwd_h4_d64", "--workload", "S=256",
        "--json", json},
       "defines no workload S=256"},
  };
  for (const auto& c : cases) {
    ExpectRefused(c.args, c.expect);
    EXPECT_FALSE(FileExists(json));
  }
}

// `eval` on a task of their set goes as far as this machine allows and names their definition
// and workload in the record and the trace.
TEST(Cli, EvalOnAFlashInferBenchTaskNamesTheirDefinition) {
  if (!HaveNvcc()) GTEST_SKIP() << "eval needs nvcc (checked before any work)";
  const std::string set = Src() + "/tests/fixtures/flashinfer-trace-set";
  ScratchDir dir("cli-fib-eval");
  std::string kernel = Rejected(dir);
  CommandResult r =
      Ptxbench({"eval", kernel, "--tasks-dir", set, "--task", "gemm_n256_k512", "--workload",
                "M=64", "--json", dir.File("r.json"), "--trace", dir.File("t.jsonl"), "--quiet"});
  EXPECT_EQ(r.exit.code, 1) << r.output;
  auto rec = nlohmann::json::parse(ReadFile(dir.File("r.json")));
  EXPECT_EQ(rec["status"], "REJECTED");
  EXPECT_EQ(rec["task"]["definition"], "gemm_n256_k512");
  EXPECT_EQ(rec["task"]["workload_id"], "0b6a7f2e-5d1c-4e8a-9f3b-2c4d6e8f0a11");
  EXPECT_EQ(rec["task"]["flashinfer_bench"]["file"], set + "/definitions/gemm/gemm_n256_k512.json");
  auto trace = nlohmann::json::parse(ReadFile(dir.File("t.jsonl")));
  EXPECT_EQ(trace["definition"], "gemm_n256_k512");
  EXPECT_EQ(trace["workload"]["uuid"], "0b6a7f2e-5d1c-4e8a-9f3b-2c4d6e8f0a11");
  EXPECT_EQ(trace["workload"]["axes"], (nlohmann::json{{"M", 64}}));
  EXPECT_EQ(trace["evaluation"]["status"], "COMPILE_ERROR");
  // A second evaluation adds its line after the first: --trace appends, as JSON Lines.
  r = Ptxbench({"eval", kernel, "--tasks-dir", set, "--task", "gemm_n256_k512", "--workload",
                "M=64", "--trace", dir.File("t.jsonl"), "--quiet"});
  EXPECT_EQ(r.exit.code, 1) << r.output;
  const std::vector<std::string> lines = SplitLines(ReadFile(dir.File("t.jsonl")));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(lines[0]), trace);
  EXPECT_EQ(nlohmann::json::parse(lines[1])["evaluation"]["status"], "COMPILE_ERROR");

  // A TVM-FFI candidate for a definition with a scalar input cannot be called with it here:
  // the machine's limit (exit 3), said before any build.
  std::string tvm = dir.File("tvm.cu");
  WriteFileAtomic(tvm,
                  "#include <tvm/ffi/tvm_ffi.h>\n"
                  "void attn(tvm::ffi::TensorView q) {}\n"
                  "TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, attn);\n");
  r = Ptxbench({"eval", tvm, "--tasks-dir", set, "--task", "attn_fwd_h8_d64_causal", "--json",
                dir.File("r2.json"), "--quiet"});
  EXPECT_EQ(r.exit.code, 3) << r.output;
  rec = nlohmann::json::parse(ReadFile(dir.File("r2.json")));
  EXPECT_EQ(rec["status"], "INFRA_ERROR");
  EXPECT_EQ(rec["reason"], "abi_unsupported");
  EXPECT_NE(rec["message"].get<std::string>().find("passes the scalar input sm_scale to run"),
            std::string::npos)
      << rec["message"];
  EXPECT_EQ(rec["candidate"]["abi"], "tvm-ffi");
}

TEST(Cli, InspectJsonOnARejectedFileIsJson) {
  ScratchDir dir("cli-inspect");
  std::string kernel = Rejected(dir);
  CommandResult r = PtxbenchStdout({"inspect", kernel, "--json"});
  EXPECT_EQ(r.exit.code, 1) << r.output;
  auto j = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.output;
  EXPECT_EQ(j["state"], "rejected");
  EXPECT_NE(j["message"].get<std::string>().find("cuBLAS"), std::string::npos);
  EXPECT_FALSE(j["screen"]["passed"].get<bool>());
  // Without --json, the text line as before.
  r = Ptxbench({"inspect", kernel});
  EXPECT_EQ(r.exit.code, 1);
  EXPECT_EQ(r.output.rfind("REJECTED  line 1: #include <cublas_v2.h>", 0), 0u) << r.output;
}

TEST(Cli, OneSourcePolicyForEvalInspectAndSubmit) {
  ScratchDir dir("cli-source");
  std::string json = dir.File("out.json");
  std::string big(2 << 20, ' ');
  for (size_t i = 0; i < big.size(); i += 64) big.replace(i, 12, "// padding \n");
  struct Source {
    std::string name, bytes, sentence;
  };
  std::vector<Source> sources = {
      {"empty.cu", "", "the source is empty"},
      {"blank.cu", " \n\t\r\n  \n", "the source is empty"},
      {"nul.cu", std::string("__global__ void k() {}\n\0\n", 25), "NUL byte"},
      {"binary.cu",
       std::string("\x7f"
                   "ELF\x02\x01\x01\0\0\0\xff\xfe\x80",
                   13),
       "NUL byte"},
      {"big.cu", big, "larger than the limit of 1048576 bytes"},
      {"latin1.cu", "// caf\xe9\n__global__ void k() {}\n", "not valid UTF-8"},
      {"truncated.cu", "__global__ void k() {}\n// \xe2\x82", "not valid UTF-8"},
  };
  for (const auto& src : sources) {
    std::string path = dir.File(src.name);
    WriteFileAtomic(path, src.bytes);
    auto problem = SourceFileProblem(src.bytes);
    ASSERT_TRUE(problem) << src.name;
    EXPECT_NE(problem->find(src.sentence), std::string::npos) << *problem;
    // The same line, word for word, from each command.
    std::string line = "ptxbench: " + path + ": " + *problem + "\n";
    for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
             {"eval", path, "--task", "gemm_n7168_k5120", "--json", json},
             {"inspect", path},
             {"inspect", path, "--json"},
             {"submit", path, "--task", "gemm_n7168_k5120", "--evaluator", "http://127.0.0.1:9",
              "--json", json}}) {
      CommandResult r = Ptxbench(args);
      EXPECT_EQ(r.exit.kind, ExitKind::kExited);
      EXPECT_EQ(r.exit.code, 2) << args[0] << " " << src.name << "\n" << r.output;
      EXPECT_EQ(r.output, line) << args[0] << " " << src.name;
      EXPECT_FALSE(FileExists(json)) << args[0] << " " << src.name << " wrote " << json;
    }
  }
}

// A FlashInfer-Bench solution is read the same way by eval, inspect and submit: unpacked to its
// entry file's source (screened like a .cu file), refused with one line naming the file when it
// cannot run here, and refused for another definition where a --task is given.
TEST(Cli, SolutionsAreReadAlikeByEvalInspectAndSubmit) {
  ScratchDir dir("cli-solution");
  std::string json_out = dir.File("out.json");
  auto solution = [&](const std::string& name, const std::string& binding,
                      const std::string& definition, const std::string& source) {
    nlohmann::json spec = {{"language", "cuda"}, {"entry_point", "kernel.cu::run"}};
    if (!binding.empty()) spec["binding"] = binding;
    std::string path = dir.File(name);
    WriteFileAtomic(path,
                    nlohmann::json{{"name", name},
                                   {"definition", definition},
                                   {"spec", spec},
                                   {"sources", {{{"path", "kernel.cu"}, {"content", source}}}}}
                        .dump());
    return path;
  };
  // The entry file is what inspect screens: a cuBLAS include inside the solution is rejected.
  std::string rejected = solution("cublas.json", "tvm-ffi", "gemm_n7168_k5120",
                                  "#include <cublas_v2.h>\n__global__ void k() {}\n");
  CommandResult r = Ptxbench({"inspect", rejected});
  EXPECT_EQ(r.exit.code, 1) << r.output;
  EXPECT_EQ(r.output.rfind("REJECTED  line 1: #include <cublas_v2.h>", 0), 0u) << r.output;

  const std::string task = "gemm_n7168_k5120";
  std::string torch = solution("torch.json", "torch", task, "__global__ void k() {}\n");
  std::string other = solution("other.json", "", "gemm_n128_k2048", "__global__ void k() {}\n");
  struct Case {
    std::string path, words;
    bool needs_task;  // inspect takes no --task
  };
  for (const Case& c :
       {Case{torch, "spec.binding is \"torch\"", false},
        Case{other, "the solution is for gemm_n128_k2048, not --task " + task, true}}) {
    std::vector<std::vector<std::string>> commands = {
        {"eval", c.path, "--task", task, "--json", json_out},
        {"submit", c.path, "--task", task, "--evaluator", "http://127.0.0.1:9", "--json",
         json_out}};
    if (!c.needs_task) commands.push_back({"inspect", c.path});
    for (const auto& args : commands) {
      r = Ptxbench(args);
      EXPECT_EQ(r.exit.code, 2) << args[0] << " " << c.path << "\n" << r.output;
      EXPECT_EQ(r.output.rfind("ptxbench: " + c.path + ": ", 0), 0u) << r.output;
      EXPECT_NE(r.output.find(c.words), std::string::npos) << args[0] << ": " << r.output;
      EXPECT_FALSE(FileExists(json_out)) << args[0];
    }
  }
}

// Every option with a range, a set of values or an input that must exist is checked by CLI11
// while parsing: one line, "ptxbench: OPTION: why; see ptxbench COMMAND --help", exit 2, before
// anything is read, started or written. No GPU, nvcc or network is needed to be refused.
TEST(Cli, BadOptionValuesAreOneLineAndExitTwoAtParseTime) {
  ScratchDir dir("cli-options");
  std::string kernel = Src() + "/controls/gemm/naive_correct.cu";
  std::string out = dir.File("out");  // every output of these commands goes under here
  std::string missing = dir.File("missing");
  std::string work = dir.File("work");  // an existing folder (fixit's work folder, run folders)
  MakeDirs(work);
  const std::string task = "gemm_n7168_k5120";
  struct Case {
    Words args;
    std::string option, command, expect;  // expect: a version-independent part of CLI11's words
  };
  // One command's cases: its own words around the option under test (o[0]) and its value.
  auto command = [](const std::string& name, const Words& head, const Words& tail) {
    return [=](const Words& o, const std::string& expect) {
      return Case{Around(head, o, tail), o[0], name, expect};
    };
  };
  auto run = command("run", {"run"}, {"--out", out});
  auto eval = command("eval", {"eval", kernel, "--task", task}, {"--json", out});
  auto baseline = command("baseline", {"baseline", "--task", task}, {"--json", out});
  auto report = command("report", {"report", "--runs", work}, {"--json", out});
  auto serve = command("serve", {"serve"}, {"--db", out});
  auto worker = command("worker", {"worker", "--db", out}, {});
  auto submit =
      command("submit", {"submit", kernel, "--task", task, "--evaluator", "http://127.0.0.1:9"},
              {"--json", out});
  auto mine = command("fixit mine", {"fixit", "mine", "--runs", work, "--dir", out}, {});
  auto repair = command("fixit repair", {"fixit", "repair", "--dir", work, "--teacher", "t"}, {});
  auto reason = command("fixit reason", {"fixit", "reason", "--dir", work, "--teacher", "t"}, {});
  auto fixit_export = command("fixit export", {"fixit", "export", "--dir", work, "--out", out}, {});
  auto kernelgen_export =
      command("kernelgen export", {"kernelgen", "export", "--runs", work, "--out", out}, {});
  std::vector<Case> cases = {
      run({"--turns", "0"}, "Value 0 not in range"),
      run({"--turns", "101"}, "Value 101 not in range"),
      run({"--target-speedup", "-1"}, "Value -1 is not a number greater than 0"),
      run({"--target-speedup", "fast"}, "fast"),
      run({"--timing-budget", "-1"}, "not a number from 0 to 3600"),
      run({"--concurrency", "0"}, "not in range"),
      run({"--arch", "sm_80"}, "sm_80 not in"),
      run({"--sanitize", "sometimes"}, "sometimes not in"),
      run({"--baseline", "cublas"}, "cublas not in"),
      {{"eval", kernel, "--task", "mha_with_lse_d128", "--baseline", "flash", "--json", out},
       "--baseline",
       "eval",
       "flash not in"},
      {{"baseline", "--task", "mha_with_lse_d128", "--baseline", "cuDNN"},
       "--baseline",
       "baseline",
       "cuDNN not in"},
      // A FlashInfer release the harness does not build: the known ones are listed.
      run({"--baseline", "flashinfer@0.5.3"}, "flashinfer@0.5.3 not in"),
      {{"baseline", "--task", "mha_with_lse_d128", "--baseline", "flashinfer@0.5.3"},
       "--baseline",
       "baseline",
       "flashinfer@0.7.4"},
      run({"--models", missing, "--model", "m"}, missing),
      run({"--tasks-dir", missing}, missing),
      run({"--evaluator", "gpu-host:8737"}, "not a service URL"),
      eval({"--trials", "0"}, "Value 0 not in range"),
      eval({"--timeout", "0"}, "not in range"),
      eval({"--memcheck-timeout", "-5"}, "not in range"),
      eval({"--warmup", "-1"}, "not in range"),
      eval({"--iterations", "0"}, "not in range"),
      eval({"--buffer-sets", "65"}, "not in range"),
      eval({"--drift-threshold", "0"}, "greater than 0"),
      eval({"--timing-budget", "3601"}, "not a number from 0 to 3600"),
      eval({"--timeout", "3601"}, "not in range"),
      eval({"--tolerance", "loose"}, "loose not in {published,allclose}"),
      eval({"--tasks-dir", missing}, missing),
      baseline({"--iterations", "0"}, "Value 0 not in range"),
      baseline({"--warmup", "-1"}, "not in range"),
      baseline({"--timeout", "0"}, "not in range"),
      baseline({"--compare", missing}, missing),
      {{"inspect", kernel, "--arch", "sm_80"}, "--arch", "inspect", "sm_80 not in"},
      {{"tasks", "--family", "conv"}, "--family", "tasks", "conv not in"},
      {{"report", "--runs", missing, "--json", out}, "--runs", "report", missing},
      report({"--resamples", "-1"}, "not in range"),
      report({"--published", missing}, missing),
      {{"import", missing, "--db", out}, "paths", "import", missing},
      {{"pack", "show", "--arch", "sm_80"}, "--arch", "pack show", "sm_80 not in"},
      {{"pack", "stats", "--runs", missing}, "--runs", "pack stats", missing},
      {{"pack", "--packs-dir", missing, "list"}, "--packs-dir", "pack list", missing},
      serve({"--port", "70000"}, "Value 70000 not in range"),
      serve({"--port", "0"}, "not in range"),
      serve({"--workers", "0"}, "not in range"),
      serve({"--lease", "1"}, "not in range"),
      serve({"--http-threads", "1"}, "not in range"),
      serve({"--max-source-bytes", "0"}, "not in range"),
      serve({"--gpus", "first"}, "device indices"),
      worker({"--lease", "0"}, "not in range"),
      worker({"--lock-dir", missing}, missing),
      submit({"--trials", "0"}, "not in range"),
      submit({"--timeout", "3601"}, "not in range"),
      {{"submit", kernel, "--task", task, "--evaluator", "ftp://127.0.0.1:9", "--json", out},
       "--evaluator",
       "submit",
       "not a service URL"},
      submit({"--sanitize", "off"}, "off not in"),
      mine({"--outcome", "timeout"}, "timeout not in {compile,runtime,memory,incorrect}"),
      mine({"--min-turn", "0"}, "not in range"),
      {{"fixit", "mine", "--runs", missing, "--dir", out}, "--runs", "fixit mine", missing},
      {{"fixit", "mine", "--db", missing, "--dir", out}, "--db", "fixit mine", missing},
      {{"fixit", "repair", "--dir", missing, "--teacher", "t"}, "--dir", "fixit repair", missing},
      repair({"--turns", "0"}, "not in range"),
      repair({"--min-speedup", "-2"}, "0 or more"),
      repair({"--evaluator", "localhost"}, "not a service URL"),
      reason({"--attempts", "0"}, "not in range"),
      reason({"--models", missing}, missing),
      fixit_export({"--validation-fraction", "1"}, "Value 1 is not a number in [0, 1)"),
      fixit_export({"--max-tokens", "0"}, "not in range"),
      kernelgen_export({"--format", "csv"}, "csv not in {messages,prompt-completion}"),
      kernelgen_export({"--chars-per-token", "0"}, "greater than 0"),
      kernelgen_export({"--min-speedup", "-1"}, "0 or more"),
  };
  for (const Case& c : cases) {
    std::string line = Join(c.args, " ");
    CommandResult r = ExpectRefused(c.args, c.expect);
    EXPECT_EQ(r.output.rfind("ptxbench: " + c.option + ": ", 0), 0u) << line << "\n" << r.output;
    EXPECT_NE(r.output.find("; see ptxbench " + c.command + " --help\n"), std::string::npos)
        << line << "\n"
        << r.output;
    EXPECT_FALSE(std::filesystem::exists(out)) << line << " wrote " << out;
  }
  // Help is not an error; a good value passes the check (the run is then refused for its
  // folder, after parsing).
  CommandResult help = Ptxbench({"serve", "--help"});
  EXPECT_EQ(help.exit.code, 0) << help.output;
  EXPECT_NE(help.output.find("--port"), std::string::npos) << help.output;
  CommandResult ok = Ptxbench(
      {"run", "--turns", "100", "--target-speedup", "1.5", "--out", work, "--resume", "--quiet"});
  EXPECT_EQ(ok.exit.code, 2) << ok.output;
  EXPECT_NE(ok.output.find("nothing to resume"), std::string::npos) << ok.output;
}

// A turn range that cannot hold is refused before --overwrite clears the later stages' files.
TEST(Cli, FixitMineRefusesABadTurnRangeBeforeClearingAnything) {
  ScratchDir dir("cli-fixit-range");
  std::string work = dir.File("work"), runs = dir.File("runs");
  MakeDirs(work);
  MakeDirs(runs);
  WriteFileAtomic(work + "/manifest.json", "{}\n");
  WriteFileAtomic(work + "/repairs.json", "{}\n");
  CommandResult r = Ptxbench({"fixit", "mine", "--runs", runs, "--dir", work, "--overwrite",
                              "--min-turn", "5", "--max-turn", "2"});
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_EQ(r.output, "ptxbench: --max-turn 2 is before --min-turn 5\n");
  EXPECT_TRUE(FileExists(work + "/repairs.json")) << "--overwrite cleared before the check";
}

// The store's commands in both builds: with SQLite they import; without it they say so in
// one line and exit 3 (the options are parsed either way, so they must outlive parsing).
// Bad files and stores are the user's input: one line and exit 2, never "internal error"
// (exit 3) or a bare 1 (issue 35).
TEST(Cli, MalformedReplaysStoresAndImportsAreInputErrors) {
  ScratchDir dir("cli-bad-files");
  std::string replay = dir.File("replay.json");
  WriteFileAtomic(replay, R"({"task": "gemm_n128_k2048", "turns": [{"text": 42}]})");
  ExpectRefused({"run", "--replay", replay, "--out", dir.File("run")},
                "turn 1: \"text\" must be a string");
  WriteFileAtomic(replay, std::string(100000, '[') + std::string(100000, ']'));
  ExpectRefused({"run", "--replay", replay, "--out", dir.File("run2")}, "nests deeper than 64");
#ifdef PTXBENCH_HAVE_SQLITE
  std::string runs = dir.File("runs");
  MakeDirs(runs);
  ExpectRefused({"import", runs, "--db", dir.path()}, "is a folder");
  std::string not_db = dir.File("notes.txt");
  WriteFileAtomic(not_db, "these are notes, not a database\n");
  ExpectRefused({"report", "--db", not_db}, "not an SQLite database");
  // A malformed file among the imported: what was well-formed lands, the exit says 2.
  WriteFileAtomic(runs + "/broken.json", "{\"schema\": ");
  CommandResult r = Ptxbench({"import", runs, "--db", dir.File("store.db")});
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("1 malformed"), std::string::npos) << r.output;
#endif
}

TEST(Cli, ImportSaysWhenTheBuildHasNoStore) {
  ScratchDir dir("cli-import-lean");
  std::string runs = dir.File("runs"), db = dir.File("store.db");
  MakeDirs(runs);
  CommandResult r = Ptxbench({"import", runs, "--db", db});
#ifdef PTXBENCH_HAVE_SQLITE
  EXPECT_EQ(r.exit.code, 0) << r.output;
  EXPECT_TRUE(FileExists(db)) << r.output;
#else
  EXPECT_EQ(r.exit.code, 3) << r.output;
  EXPECT_NE(r.output.find("built without SQLite"), std::string::npos) << r.output;
  EXPECT_FALSE(FileExists(db));
#endif
}

// An upstream experiment folder (trajectories/exp_*.json, kernels/exp_*/kernel_t<N>.cu), made
// from our upstream-style GEMM control as upstream's agent and analysis write it: each reply
// holds its kernel in a ```cpp block, and kernel_t<N>.cu is the N-th reply's, from 0. Turn 0
// does not compile, turn 1 is the control.
std::string UpstreamExperimentFolder(const ScratchDir& dir) {
  std::string root = dir.File("upstream-exp");
  MakeDirs(root + "/trajectories");
  MakeDirs(root + "/kernels/exp_007");
  std::string control = ReadFile(Src() + "/controls/upstream/gemm_tvm_ffi.cu");
  std::string broken = control + "\nthis does not compile\n";
  auto reply = [](const std::string& words, const std::string& kernel) {
    return nlohmann::json{{"role", "assistant"},
                          {"content", words + "\n\n```cpp\n" + kernel + "```\n"}};
  };
  nlohmann::json observation = {
      {"role", "user"}, {"content", "ok"}, {"extra", {{"returncode", 0}, {"all_passed", true}}}};
  nlohmann::json t = {{"trajectory_format", "mini-swe-agent-1.1"},
                      {"info",
                       {{"exit_status", "Submitted"},
                        {"config", {{"model", {{"model_name", "some-upstream-model"}}}}}}},
                      {"messages",
                       {{{"role", "system"}, {"content", "upstream system prompt"}},
                        {{"role", "user"}, {"content", "Implement gemm_n128_k2048."}},
                        reply("first", broken),
                        observation,
                        reply("second", control),
                        observation}}};
  WriteFileAtomic(root + "/trajectories/exp_007.json", t.dump());
  WriteFileAtomic(root + "/kernels/exp_007/kernel_t0.cu", broken);
  WriteFileAtomic(root + "/kernels/exp_007/kernel_t1.cu", control);
  return root;
}

// Upstream's trajectories judged again by our layers: every turn's kernel through the loop,
// upstream's prompt and verdicts kept; `import` does the same into the store.
TEST(Cli, AnUpstreamExperimentIsJudgedAgainTurnByTurn) {
  if (!HaveNvcc()) GTEST_SKIP() << "judging the turns needs nvcc";
  ScratchDir dir("cli-upstream");
  std::string exp = UpstreamExperimentFolder(dir), out = dir.File("run");
  CommandResult bad = Ptxbench({"run", "--upstream", exp, "--model", "x", "--out", out});
  EXPECT_EQ(bad.exit.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--upstream"), std::string::npos) << bad.output;
  EXPECT_FALSE(FileExists(out + "/run.json"));

  // Without a GPU turn 2 cannot be judged: the run stops there, interrupted (exit 3).
  CommandResult r = Ptxbench({"run", "--upstream", exp, "--out", out, "--quiet"});
  EXPECT_TRUE(r.exit.code == 0 || r.exit.code == 3) << r.output;
  auto run = nlohmann::json::parse(ReadFile(out + "/run.json"));
  EXPECT_EQ(run["model"]["provider"], "upstream-replay");
  EXPECT_EQ(run["model"]["name"], "upstream:some-upstream-model");  // reports group by it
  EXPECT_EQ(run["upstream"]["trajectories"]["exp_007"]["task"], "gemm_n128_k2048");
  EXPECT_EQ(run["upstream"]["trajectories"]["exp_007"]["turns"].size(), 2u);
  auto t = nlohmann::json::parse(ReadFile(out + "/trajectories/exp_007-0.json"));
  EXPECT_EQ(t["messages"][0]["content"], "upstream system prompt");
  ASSERT_GE(t["info"]["turns"].size(), 2u);
  EXPECT_EQ(t["info"]["turns"][0]["outcome"], "compile");
  std::string second = t["info"]["turns"][1]["outcome"];
  EXPECT_TRUE(second == "infra" || second == "verified" || second == "correct") << second;
  auto record = nlohmann::json::parse(
      ReadFile(out + "/" + t["info"]["turns"][1]["evaluation_file"].get<std::string>()));
  EXPECT_EQ(record["candidate"]["abi"], "tvm-ffi");

#ifdef PTXBENCH_HAVE_SQLITE
  std::string db = dir.File("results/store.db");
  CommandResult im = Ptxbench({"import", exp, "--db", db});
  EXPECT_NE(im.output.find("an upstream experiment"), std::string::npos) << im.output;
  EXPECT_TRUE(FileExists(dir.File("results/upstream/upstream-exp/run.json"))) << im.output;
  CommandResult rep = Ptxbench({"report", "--db", db, "--include-unfinished", "--no-published"});
  EXPECT_EQ(rep.exit.code, 0) << rep.output;
  EXPECT_NE(rep.output.find("gemm_n128_k2048"), std::string::npos) << rep.output;
#endif
}

// `submit --no-wait` has no record to write: --json gets the service's answer, {"id"}, and the
// id line goes to standard error when --json is standard output. A service with no worker
// (no GPU needed) queues the job and answers.
// A service this client never reached (a wrong URL, a server not started) fails in seconds:
// only one that answered before is waited through an outage (issue 35).
TEST(Cli, SubmitToNoServiceFailsWithinSeconds) {
  ScratchDir dir("cli-submit-nobody");
  std::string url = "http://127.0.0.1:" + std::to_string(testing::FreeTcpPort());
  auto t0 = std::chrono::steady_clock::now();
  CommandResult r = Ptxbench({"submit", Src() + "/controls/gemm/naive_correct.cu", "--task",
                              "gemm_n7168_k5120", "--evaluator", url, "--no-wait"});
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit.kind, ExitKind::kExited) << r.output;
  EXPECT_EQ(r.exit.code, 3) << r.output;
  EXPECT_NE(r.output.find("did not answer"), std::string::npos) << r.output;
  EXPECT_LT(s, 30.0) << r.output;
}

TEST(Cli, SubmitNoWaitWritesTheServicesAnswerToJson) {
  ScratchDir dir("cli-submit");
  std::string kernel = Src() + "/controls/gemm/naive_correct.cu";
  std::string url = "http://127.0.0.1:" + std::to_string(testing::FreeTcpPort());
  ProcessSpec spec;
  spec.argv = {Bin(),         "serve",
               "--port",      url.substr(url.rfind(':') + 1),
               "--db",        dir.File("queue.db"),
               "--no-workers"};
  spec.unset_env = {"PTXBENCH_SERVE_TOKEN"};
  spec.log_path = dir.File("serve.log");
  Child serve = Child::Start(spec);
  std::string json = dir.File("id.json");
  std::vector<std::string> submit = {"submit",      kernel, "--task",    "gemm_n7168_k5120",
                                     "--evaluator", url,    "--no-wait", "--json"};
  auto with = [&](std::vector<std::string> args, const std::string& out) {
    args.push_back(out);
    return args;
  };
  CommandResult r;
  bool ended = false;
  for (auto deadline = std::chrono::steady_clock::now() + 60s;
       std::chrono::steady_clock::now() < deadline;) {
    r = Ptxbench(with(submit, json));
    if ((r.exit.kind == ExitKind::kExited && r.exit.code == 0) ||
        (ended = testing::ProcessEnded(serve.pid())))
      break;
    std::this_thread::sleep_for(100ms);
  }
  if (ended) {
    std::string log = ReadFile(dir.File("serve.log"));
    serve.Wait(std::chrono::steady_clock::now() + 20s);
    GTEST_SKIP() << "the service cannot start in this build: " << log;
  }
  ASSERT_EQ(r.exit.code, 0) << r.output;
  nlohmann::json answer = nlohmann::json::parse(ReadFile(json), nullptr, false);
  ASSERT_TRUE(answer.is_object()) << ReadFile(json);
  ASSERT_TRUE(answer["id"].is_string()) << answer.dump();
  EXPECT_EQ(r.output, answer["id"].get<std::string>() + "\n");
  // --json -: standard output is the JSON alone.
  CommandResult dash = PtxbenchStdout(with(submit, "-"));
  EXPECT_EQ(dash.exit.code, 0) << dash.output;
  nlohmann::json on_stdout = nlohmann::json::parse(dash.output, nullptr, false);
  ASSERT_TRUE(on_stdout.is_object()) << dash.output;
  EXPECT_TRUE(on_stdout["id"].is_string()) << dash.output;
  EXPECT_NE(on_stdout["id"], answer["id"]);
  ::kill(serve.pid(), SIGTERM);
  serve.Wait(std::chrono::steady_clock::now() + 20s);
}

}  // namespace
}  // namespace ptxbench
