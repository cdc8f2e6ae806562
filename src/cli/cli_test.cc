// The command line, end to end: bad input gets one line naming the problem and a non-zero
// exit; nothing is written when the request is bad.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "common/files.h"
#include "common/source_policy.h"
#include "common/subprocess.h"

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
  std::vector<BadInput> cases = {
      {{"eval", dir.File("missing.cu"), "--task", "gemm_n7168_k5120", "--json", json},
       "missing.cu: no such readable file"},
      {{"eval", dir.path(), "--task", "gemm_n7168_k5120", "--json", json}, "no such readable file"},
      {{"eval", kernel, "--task", "gemm_n7168_k512", "--json", json},
       "did you mean gemm_n7168_k5120"},
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--workload", "M=abc", "--json", json},
       "malformed value for axis M"},
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--workload", "M=100", "--json", json},
       "defines no workload M=100"},
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--workload", "X=1", "--json", json},
       "no axis 'X'"},
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--arch", "sm_80", "--json", json},
       "unknown arch 'sm_80'"},
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--seed", "-3", "--json", json},
       "malformed --seed"},
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--sanitize", "maybe", "--json", json},
       "unknown --sanitize value"},
      {{"eval", kernel, "--task", "gemm_n7168_k5120", "--trials", "0", "--json", json},
       "--trials must be"},
      {{"evl"}, "did you mean eval"},
      {{"baseline", "--task", "nope*", "--json", json}, "no task matches 'nope*'"},
      {{"baseline", "--task", "mha_*", "--workload", "S=512", "--all-workloads", "--json", json},
       "exclude each other"},
      {{"baseline", "--task", "mha_with_lse_d128", "--workload", "S=100", "--json", json},
       "defines no workload S=100"},
  };
  for (const auto& c : cases) {
    CommandResult r = Ptxbench(c.args);
    EXPECT_EQ(r.exit.kind, ExitKind::kExited);
    EXPECT_EQ(r.exit.code, 2) << c.expect << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << r.output;
    size_t lines = 0;
    for (char ch : r.output) lines += ch == '\n';
    EXPECT_EQ(lines, 1u) << r.output;
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

size_t Lines(const std::string& s) {
  size_t n = 0;
  for (char ch : s) n += ch == '\n';
  return n;
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
  };
  for (const auto& c : cases) {
    CommandResult r = Ptxbench(c.args);
    EXPECT_EQ(r.exit.kind, ExitKind::kExited);
    EXPECT_EQ(r.exit.code, 2) << c.expect << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << r.output;
    EXPECT_EQ(Lines(r.output), 1u) << r.output;
  }
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

}  // namespace
}  // namespace ptxbench
