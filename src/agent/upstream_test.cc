// Upstream PTXBench experiment folders: which trajectories and turns are read, how upstream
// numbers its turns and takes its kernels, which task each trajectory is for, what is left out
// and why; the replay through our loop (every upstream turn judged again, upstream's prompt
// kept, upstream's verdicts beside ours in run.json); and, on folders made by upstream's own
// code (tests/fixtures/upstream-raw), our per-turn CSV against the one upstream's exporter
// wrote.
#include "agent/upstream.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <regex>

#include "agent/extract.h"
#include "agent/loop.h"
#include "agent/prompt.h"
#include "common/files.h"
#include "common/strings.h"
#include "report/from_runs.h"
#include "report/upstream_csv.h"

namespace ptxbench {
namespace {

using nlohmann::json;

// An upstream-style kernel (TVM-FFI entry point) whose verdict the scripted evaluator reads.
std::string Kernel(const std::string& verdict) {
  return "// fixture: expected " + verdict +
         "\n#include <tvm/ffi/tvm_ffi.h>\n"
         "void gemm(tvm::ffi::TensorView A, tvm::ffi::TensorView B, tvm::ffi::TensorView C) {}\n"
         "TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, gemm);";
}

// An assistant message as upstream's agent asks for it: the kernel in one ```cpp block.
json Reply(const std::string& words, const std::string& kernel) {
  return {{"role", "assistant"}, {"content", words + "\n\n```cpp\n" + kernel + "\n```\n"}};
}

json Observation(bool passed, double speedup) {
  return {{"role", "user"},
          {"content", "<returncode>0</returncode>"},
          {"extra",
           {{"returncode", 0},
            {"event", "evaluation"},
            {"all_passed", passed},
            {"min_speedup", speedup},
            {"target_met", false}}}};
}

// The evaluator of these tests: the verdict a kernel's "fixture: expected" line names.
struct ScriptedEvaluator {
  std::vector<std::string> judged;  // evaluation ids
  std::mutex mu;
  Evaluator Get() {
    return [this](const std::string& path, const Definition&, const Workload&,
                  const EvaluationTag& tag) {
      std::smatch m;
      std::string code = ReadFile(path);
      json r = {{"status", "INFRA_ERROR"}, {"message", "no verdict"}};
      if (std::regex_search(code, m, std::regex("fixture: expected (\\w+)(?: ([0-9.]+))?"))) {
        r = {{"status", m[1].str() == "VERIFIED" ? "PASSED" : m[1].str()}, {"message", "scripted"}};
        if (m[1].str() == "RULE_VIOLATION") r["reason"] = "forbidden_library";
        if (m[2].matched) r["performance"] = {{"state", "ran"}, {"speedup", std::stod(m[2])}};
        if (m[1].str() == "VERIFIED")
          r["instructions"] = {{"verification", "dynamic_present"}, {"arch_tag", "H"}};
      }
      std::lock_guard<std::mutex> lock(mu);
      judged.push_back(tag.evaluation_id);
      return FromJson(r);
    };
  }
};

// Our loop over an upstream experiment, as `run --upstream` sets it up.
AgentOptions ReplayOptions(const UpstreamExperiment& e, const Catalog& catalog,
                           const std::string& run_dir) {
  AgentOptions o;
  for (const auto& t : e.trajectories) {
    const Definition& d = catalog.Find(t.task);
    RunTask rt{&d, &d.DefaultWorkload(), t.id, t.seed};
    rt.turns = static_cast<int>(t.turns.size());
    o.tasks.push_back(rt);
  }
  o.turns = 8;
  o.prompts_dir = DefaultPromptsDir();
  o.run_dir = run_dir;
  o.progress = false;
  o.run_info = {{"model", {{"name", "upstream"}, {"provider", "upstream-replay"}}},
                {"upstream", UpstreamRunInfo(e)}};
  return o;
}

json Trajectory(const json& info, const std::vector<json>& messages) {
  json j = {{"trajectory_format", "mini-swe-agent-1.1"}, {"info", info}, {"messages", messages}};
  return j;
}

class UpstreamFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    catalog_ = Catalog::Load(Catalog::DefaultDir());
    root_ = dir_.File("experiment");
    MakeDirs(root_ + "/trajectories");
    // exp_001: the task in its config; three turns, kernels t0..t2 as upstream writes them.
    json a = Trajectory(
        {{"exit_status", "Submitted"},
         {"config",
          {{"model", {{"model_name", "some-model"}}}, {"definition", "gemm_n128_k2048"}}}},
        {{{"role", "system"}, {"content", "You are upstream's agent."}},
         {{"role", "user"}, {"content", "Write a fast GEMM."}},
         Reply("First try.", Kernel("COMPILE_ERROR")),
         Observation(false, 0),
         Reply("Second try.", Kernel("PASSED 0.3")),
         Observation(true, 0.4),
         Reply("Third, with wgmma.", Kernel("VERIFIED 1.2")),
         Observation(true, 1.1),
         {{"role", "exit"}, {"content", ""}, {"extra", {{"exit_status", "Submitted"}}}}});
    Write("exp_001", a, {{0, "COMPILE_ERROR"}, {1, "PASSED 0.3"}, {2, "VERIFIED 1.2"}});
    // exp_002: the task only in its task message, with a longer name beside a prefix of it;
    // content as a list of parts.
    json b = Trajectory(
        {{"exit_status", "LimitsExceeded"}},
        {{{"role", "system"}, {"content", "sys"}},
         {{"role", "user"},
          {"content", {{{"type", "text"}, {"text", "Definition: gemm_n7168_k5120 (M=8192)"}}}}},
         Reply("One.", Kernel("INCORRECT")),
         Observation(false, 0)});
    Write("exp_002", b, {{0, "INCORRECT"}});
    // Left out: not JSON; no task; kernels numbered from 1 (each would get the next turn's
    // message and verdict).
    WriteFileAtomic(root_ + "/trajectories/exp_003.json", "{ not json");
    json c = Trajectory(json::object(), {{{"role", "system"}, {"content", "s"}},
                                         {{"role", "user"}, {"content", "no task named"}},
                                         Reply("x", Kernel("PASSED 1")),
                                         Observation(true, 1)});
    Write("exp_004", c, {{0, "PASSED 1"}});
    Write("exp_005", a, {{1, "COMPILE_ERROR"}, {2, "PASSED 0.3"}, {3, "VERIFIED 1.2"}});
    // exp_006: exp_001 without kernels/: read from the messages, as upstream's exporter does.
    WriteFileAtomic(root_ + "/trajectories/exp_006.json", a.dump());
  }
  void Write(const std::string& id, const json& trajectory,
             const std::vector<std::pair<int, std::string>>& kernels) {
    WriteFileAtomic(root_ + "/trajectories/" + id + ".json", trajectory.dump());
    MakeDirs(root_ + "/kernels/" + id);
    for (const auto& [n, verdict] : kernels)
      WriteFileAtomic(root_ + "/kernels/" + id + "/kernel_t" + std::to_string(n) + ".cu",
                      Kernel(verdict));
  }
  Catalog catalog_;
  ScratchDir dir_{"upstream-test"};
  std::string root_;
};

TEST_F(UpstreamFolder, ReadsTrajectoriesTurnsTasksAndLeavesTheBrokenOnesOutWithAReason) {
  EXPECT_TRUE(IsUpstreamExperiment(root_));
  EXPECT_FALSE(IsUpstreamExperiment(dir_.File("")));
  UpstreamExperiment e = ReadUpstreamExperiment(root_, catalog_);
  ASSERT_EQ(e.trajectories.size(), 3u);
  const UpstreamTrajectory& a = e.trajectories[0];
  EXPECT_EQ(a.id, "exp_001");
  EXPECT_EQ(a.task, "gemm_n128_k2048");
  EXPECT_EQ(a.model, "some-model");
  ASSERT_EQ(a.seed.size(), 2u);
  EXPECT_EQ(a.seed[0].content, "You are upstream's agent.");
  EXPECT_EQ(a.seed[1].content, "Write a fast GEMM.");
  ASSERT_EQ(a.turns.size(), 3u);
  EXPECT_EQ(a.turns[1].upstream_turn, 1);
  EXPECT_EQ(a.turns[1].turn, 2);
  EXPECT_EQ(a.turns[1].reply.rfind("Second try.", 0), 0u);
  EXPECT_EQ(a.turns[1].kernel_from, "kernels");
  EXPECT_NE(a.turns[1].code.find("expected PASSED 0.3"), std::string::npos);
  EXPECT_EQ(a.turns[1].verdict["min_speedup"], 0.4);
  EXPECT_EQ(a.turns[2].verdict["all_passed"], true);
  const UpstreamTrajectory& b = e.trajectories[1];
  EXPECT_EQ(b.task, "gemm_n7168_k5120");  // the whole name, not a prefix of another
  ASSERT_EQ(b.turns.size(), 1u);
  EXPECT_EQ(b.turns[0].upstream_turn, 0);
  EXPECT_EQ(b.turns[0].reply.rfind("One.", 0), 0u);
  const UpstreamTrajectory& f = e.trajectories[2];
  EXPECT_EQ(f.id, "exp_006");
  ASSERT_EQ(f.turns.size(), 3u);
  EXPECT_EQ(f.turns[2].kernel_from, "message");
  EXPECT_EQ(f.turns[2].kernel, "");
  EXPECT_EQ(f.turns[2].code, a.turns[2].code);

  ASSERT_EQ(e.problems.size(), 3u);
  EXPECT_NE(e.problems[0].message.find("not valid JSON"), std::string::npos)
      << e.problems[0].message;
  EXPECT_NE(e.problems[1].message.find("names no task"), std::string::npos);
  EXPECT_NE(e.problems[2].message.find("kernel_t3.cu has no assistant message 3"),
            std::string::npos)
      << e.problems[2].message;

  // A linked kernel file is never read (its text would land in the trajectory).
  std::filesystem::create_symlink(root_ + "/trajectories/exp_001.json",
                                  root_ + "/kernels/exp_002/kernel_t1.cu");
  UpstreamExperiment linked = ReadUpstreamExperiment(root_, catalog_);
  ASSERT_EQ(linked.trajectories.size(), 3u);
  EXPECT_EQ(linked.trajectories[1].turns.size(), 1u);

  // --task names the task of those that name none (and overrides the others).
  UpstreamExperiment forced = ReadUpstreamExperiment(root_, catalog_, "gemm_n128_k2048");
  EXPECT_EQ(forced.trajectories.size(), 4u);
  EXPECT_THROW(ReadUpstreamExperiment(dir_.File("nothing"), catalog_), std::exception);
}

TEST_F(UpstreamFolder, TheReplayHoldsEachTurnsKernelWhereOurExtractorFindsIt) {
  UpstreamExperiment e = ReadUpstreamExperiment(root_, catalog_);
  UpstreamReplayProvider p(e);
  std::vector<ChatMessage> m = e.trajectories[0].seed;
  ChatReply r = p.CompleteFor("exp_001-0", m);
  ASSERT_EQ(r.outcome, ChatOutcome::kOk);
  EXPECT_EQ(r.text.rfind("First try.", 0), 0u);
  Extraction ex = ExtractKernel(r.text);
  ASSERT_TRUE(ex.found) << ex.message;
  EXPECT_NE(ex.code.find("expected COMPILE_ERROR"), std::string::npos);
  m.push_back({"assistant", r.text});
  m.push_back({"user", "feedback"});
  EXPECT_NE(p.CompleteFor("exp_001-0", m).text.find("expected PASSED 0.3"), std::string::npos);
  // Past the end, or a trajectory it does not have: ours to fix, never the kernel's verdict.
  EXPECT_EQ(p.CompleteFor("exp_999-0", m).outcome, ChatOutcome::kInfraError);
}

TEST_F(UpstreamFolder, EveryUpstreamTurnIsJudgedAgainThroughTheLoop) {
  UpstreamExperiment e = ReadUpstreamExperiment(root_, catalog_);
  UpstreamReplayProvider model(e);
  ScriptedEvaluator evaluator;
  AgentOptions o = ReplayOptions(e, catalog_, dir_.File("run"));
  RunSummary s = RunAgent(o, model, evaluator.Get());
  EXPECT_EQ(s.finished, 3);
  EXPECT_EQ(s.turns_run, 7);  // 3 + 1 + 3: each trajectory for as many turns as upstream's had
  EXPECT_EQ(evaluator.judged.size(), 7u);
  json t = json::parse(ReadFile(o.run_dir + "/trajectories/exp_001-0.json"));
  EXPECT_EQ(t["messages"][0]["content"], "You are upstream's agent.");  // upstream's prompt
  const json& turns = t["info"]["turns"];
  ASSERT_EQ(turns.size(), 3u);
  EXPECT_EQ(turns[0]["outcome"], "compile");
  EXPECT_EQ(turns[1]["outcome"], "correct");
  EXPECT_EQ(turns[2]["outcome"], "verified");
  EXPECT_EQ(t["info"]["exit_status"], "turn_limit");
  json run = json::parse(ReadFile(o.run_dir + "/run.json"));
  EXPECT_EQ(
      run["upstream"]["trajectories"]["exp_001"]["turns"][2]["upstream_verdict"]["min_speedup"],
      1.1);
  EXPECT_EQ(run["upstream"]["trajectories"]["exp_006"]["turns"][0]["kernel_from"], "message");
  EXPECT_EQ(run["upstream"]["left_out"].size(), 3u);
}

// Upstream's extract_code_block(languages=["cpp"], keep_separators=False), case by case; each
// expectation is what upstream's Python returns for the same text.
TEST(UpstreamKernelOf, TakesWhatUpstreamsExtractorTakes) {
  const std::string k = Kernel("PASSED 1");
  // The block, its trailing white space dropped.
  EXPECT_EQ(UpstreamKernelOf("a\n```cpp\n" + k + "  \n\n```\nb"), k);
  // Only ```cpp opens a block: ```cuda, ```c++ and untagged blocks are no kernel to upstream.
  EXPECT_EQ(UpstreamKernelOf("```cuda\n" + k + "\n```"), "");
  EXPECT_EQ(UpstreamKernelOf("```c++\n" + k + "\n```"), "");
  EXPECT_EQ(UpstreamKernelOf("```\n" + k + "\n```"), "");
  EXPECT_EQ(UpstreamKernelOf("```CPP\n" + k + "\n```"), "");
  EXPECT_EQ(UpstreamKernelOf("```cpp \n" + k + "\n```"), "");  // a space before the line break
  EXPECT_EQ(UpstreamKernelOf("no block at all"), "");
  // The last block that looks like a kernel wins over a later one that does not...
  EXPECT_EQ(UpstreamKernelOf("```cpp\n" + k + "\n```\nthen\n```cpp\nint x;\n```"), k);
  // ... over an earlier one that does too...
  std::string k2 = Kernel("INCORRECT");
  EXPECT_EQ(UpstreamKernelOf("```cpp\n" + k + "\n```\n```cpp\n" + k2 + "\n```"), k2);
  // ... and where none does, the last block is taken all the same, blank or not.
  EXPECT_EQ(UpstreamKernelOf("```cpp\nint x;\n```\n```cpp\nint y;\n```"), "int y;");
  EXPECT_EQ(UpstreamKernelOf("```cpp\nint x;\n```\n```cpp\n  \n```"), "");
  // An unterminated block runs to the end of the reply (a reply cut at the token limit).
  EXPECT_EQ(UpstreamKernelOf("```cpp\n" + k + "\n"), k);
  // A body may not start with a fence; "```cpp" may open anywhere, even mid-line.
  EXPECT_EQ(UpstreamKernelOf("```cpp\n```\n"), "");
  EXPECT_EQ(UpstreamKernelOf("see:```cpp\n" + k + "\n```"), k);
}

// ---------------------------------------------------------------------------------------------
// Folders made by upstream's own code (tests/fixtures/upstream-raw/README.md): exp_000 answers
// first without a code block, then a cuBLAS kernel, one that does not compile, one that is
// numerically wrong and a correct one; exp_001 never answers with a ```cpp block; exp_002 ends
// before its first reply is judged.

std::string RawFixture(const std::string& name) {
  return std::string(PTXBENCH_SOURCE_DIR) + "/tests/fixtures/upstream-raw/" + name;
}

class UpstreamRaw : public ::testing::Test {
 protected:
  void SetUp() override { catalog_ = Catalog::Load(Catalog::DefaultDir()); }
  UpstreamExperiment Read(const std::string& name) {
    return ReadUpstreamExperiment(RawFixture(name), catalog_);
  }
  // Our loop over the folder, scripted verdicts, then our upstream per-turn CSV of that run.
  std::vector<std::string> CsvOfReplay(const std::string& name, ScriptedEvaluator* evaluator) {
    UpstreamExperiment e = Read(name);
    UpstreamReplayProvider model(e);
    AgentOptions o = ReplayOptions(e, catalog_, dir_.File(name + "-run"));
    RunAgent(o, model, evaluator->Get());
    return SplitLines(UpstreamTurnsCsv(LoadRunFolders({o.run_dir}).dataset));
  }
  Catalog catalog_;
  ScratchDir dir_{"upstream-raw-test"};
};

TEST_F(UpstreamRaw, TurnsAreNumberedAsUpstreamNumbersThemFromZeroOnePerAssistantMessage) {
  UpstreamExperiment e = Read("with-kernels");
  ASSERT_EQ(e.trajectories.size(), 2u);
  const UpstreamTrajectory& t = e.trajectories[0];
  EXPECT_EQ(t.id, "exp_000");
  EXPECT_EQ(t.task, "gemm_n7168_k5120");
  EXPECT_EQ(t.model, "openai/Qwen/Qwen3.6-27B");
  ASSERT_EQ(t.turns.size(), 5u);
  for (int n = 0; n < 5; ++n) {
    EXPECT_EQ(t.turns[n].upstream_turn, n);
    EXPECT_EQ(t.turns[n].turn, n + 1);
  }
  // Turn 0 had no code block: still a turn, with no kernel, upstream's "no_code" verdict.
  EXPECT_FALSE(t.turns[0].HasKernel());
  EXPECT_EQ(t.turns[0].kernel_from, "");
  EXPECT_EQ(t.turns[0].verdict["event"], "no_code");
  // kernel_t1.cu is the second assistant message's kernel, with that message's verdict.
  EXPECT_TRUE(t.turns[1].kernel.ends_with("/kernels/exp_000/kernel_t1.cu")) << t.turns[1].kernel;
  EXPECT_EQ(t.turns[1].reply.rfind("A first version on the vendor library.", 0), 0u);
  EXPECT_NE(t.turns[1].code.find("cublasGemmEx"), std::string::npos);
  EXPECT_EQ(t.turns[1].verdict["event"], "cublas_banned");
  EXPECT_EQ(t.turns[2].verdict["event"], "test_failed");
  EXPECT_EQ(t.turns[3].verdict["all_passed"], false);
  EXPECT_TRUE(t.turns[4].kernel.ends_with("/kernel_t4.cu"));
  EXPECT_EQ(t.turns[4].verdict["all_passed"], true);
  EXPECT_EQ(t.turns[4].verdict["min_speedup"], 0.42);
  // Upstream's own success record says the same turn.
  json record = json::parse(ReadFile(RawFixture("with-kernels/success/exp_000/record.json")));
  EXPECT_EQ(record[0]["turn"], t.turns[4].upstream_turn);

  // Never a ```cpp block (a ```cuda one, prose): two turns without a kernel, no kernels folder.
  const UpstreamTrajectory& none = e.trajectories[1];
  EXPECT_EQ(none.id, "exp_001");
  ASSERT_EQ(none.turns.size(), 2u);
  EXPECT_FALSE(none.turns[0].HasKernel());
  EXPECT_FALSE(none.turns[1].HasKernel());
  // Ended before its first reply was judged: no turn upstream counts (its CSV has no row).
  ASSERT_EQ(e.problems.size(), 1u);
  EXPECT_NE(e.problems[0].path.find("exp_002"), std::string::npos);
  EXPECT_NE(e.problems[0].message.find("no assistant message with an observation"),
            std::string::npos)
      << e.problems[0].message;
}

TEST_F(UpstreamRaw, WithoutKernelsTheSameTurnsAndKernelsComeFromTheMessages) {
  UpstreamExperiment with = Read("with-kernels"), without = Read("without-kernels");
  ASSERT_EQ(without.trajectories.size(), with.trajectories.size());
  EXPECT_EQ(without.problems.size(), with.problems.size());
  int from_messages = 0;
  for (size_t i = 0; i < with.trajectories.size(); ++i) {
    const auto &a = with.trajectories[i], &b = without.trajectories[i];
    EXPECT_EQ(b.id, a.id);
    ASSERT_EQ(b.turns.size(), a.turns.size()) << a.id;
    for (size_t n = 0; n < a.turns.size(); ++n) {
      SCOPED_TRACE(a.id + " turn " + std::to_string(n));
      EXPECT_EQ(b.turns[n].upstream_turn, a.turns[n].upstream_turn);
      EXPECT_EQ(b.turns[n].reply, a.turns[n].reply);
      EXPECT_EQ(b.turns[n].verdict, a.turns[n].verdict);
      // Byte for byte the file upstream's analysis wrote from the same message.
      EXPECT_EQ(b.turns[n].code, a.turns[n].code);
      EXPECT_EQ(b.turns[n].kernel, "");
      if (b.turns[n].HasKernel()) {
        EXPECT_EQ(b.turns[n].kernel_from, "message");
        EXPECT_EQ(a.turns[n].kernel_from, "kernels");
        ++from_messages;
      }
    }
  }
  EXPECT_EQ(from_messages, 4);  // exp_000's turns 1 to 4
}

TEST_F(UpstreamRaw, TheTurnWithoutCodeIsJudgedAnExtractionErrorAndTheRestKeepTheirNumbers) {
  ScriptedEvaluator evaluator;
  CsvOfReplay("with-kernels", &evaluator);
  json t = json::parse(ReadFile(dir_.File("with-kernels-run/trajectories/exp_000-0.json")));
  const json& turns = t["info"]["turns"];
  ASSERT_EQ(turns.size(), 5u);
  std::vector<std::string> outcomes;
  for (const json& u : turns) outcomes.push_back(u["outcome"]);
  EXPECT_EQ(outcomes, (std::vector<std::string>{"extraction", "rule_violation", "compile",
                                                "incorrect", "correct"}));
  EXPECT_EQ(turns[4]["turn"], 5);
  // The ```cuda block upstream did not read is no kernel to us either.
  json none = json::parse(ReadFile(dir_.File("with-kernels-run/trajectories/exp_001-0.json")));
  ASSERT_EQ(none["info"]["turns"].size(), 2u);
  EXPECT_EQ(none["info"]["turns"][0]["outcome"], "extraction");
  EXPECT_EQ(none["info"]["turns"][1]["outcome"], "extraction");
  EXPECT_EQ(evaluator.judged.size(), 4u);  // exp_000's four kernels, nothing else
}

// Our per-turn CSV of the replayed experiment against the one upstream's exporter wrote from
// the same trajectories: trajectory_id, turn, correctness and speedup, cell by cell (the SASS
// columns are ours to fill from our records; upstream's were not requested).
TEST_F(UpstreamRaw, OurUpstreamCsvHasUpstreamsIdsTurnsWordsAndSpeedups) {
  std::vector<std::string> want =
      SplitLines(ReadFile(RawFixture("with-kernels/figures/turn_correctness_arch.csv")));
  for (const std::string folder : {"with-kernels", "without-kernels"}) {
    SCOPED_TRACE(folder);
    ScriptedEvaluator evaluator;
    std::vector<std::string> got = CsvOfReplay(folder, &evaluator);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      std::vector<std::string> w = Split(want[i], ','), g = Split(got[i], ',');
      ASSERT_EQ(g.size(), 18u) << got[i];
      for (size_t c = 0; c < 4; ++c)
        EXPECT_EQ(g[c], w[c]) << "line " << i + 1 << ", column " << UpstreamTurnColumns()[c];
    }
  }
}

}  // namespace
}  // namespace ptxbench
