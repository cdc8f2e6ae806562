// Upstream PTXBench experiment folders: which trajectories and turns are read, which task each
// is for, what is left out and why; the replay through our loop (every upstream turn judged
// again, upstream's prompt kept, upstream's verdicts beside ours in run.json).
#include "agent/upstream.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "agent/extract.h"
#include "agent/loop.h"
#include "agent/prompt.h"
#include "common/files.h"

namespace ptxbench {
namespace {

using nlohmann::json;

// An upstream-style kernel (TVM-FFI entry point) whose verdict the scripted evaluator reads.
std::string Kernel(const std::string& verdict) {
  return "// VERDICT " + verdict +
         "\n#include <tvm/ffi/tvm_ffi.h>\n"
         "void gemm(tvm::ffi::TensorView A, tvm::ffi::TensorView B, tvm::ffi::TensorView C) {}\n"
         "TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, gemm);\n";
}

json Observation(bool passed, double speedup) {
  return {{"role", "user"},
          {"content", "<returncode>0</returncode>"},
          {"extra",
           {{"returncode", 0},
            {"all_passed", passed},
            {"min_speedup", speedup},
            {"target_met", false}}}};
}

class UpstreamFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    catalog_ = Catalog::Load(Catalog::DefaultDir());
    root_ = dir_.File("experiment");
    MakeDirs(root_ + "/trajectories");
    // exp_001: the task in its config; three assistant turns, kernels t1..t3.
    json a = {{"trajectory_format", "mini-swe-agent-1.1"},
              {"info",
               {{"exit_status", "Submitted"},
                {"config",
                 {{"model", {{"model_name", "some-model"}}}, {"definition", "gemm_n128_k2048"}}}}},
              {"messages",
               {{{"role", "system"}, {"content", "You are upstream's agent."}},
                {{"role", "user"}, {"content", "Write a fast GEMM."}},
                {{"role", "assistant"}, {"content", "cat > kernel.cu <<'EOF' ... EOF"}},
                Observation(false, 0),
                {{"role", "assistant"}, {"content", "Second try."}},
                Observation(true, 0.4),
                {{"role", "assistant"}, {"content", "Third, with wgmma."}},
                Observation(true, 1.1),
                {{"role", "exit"}, {"content", ""}, {"extra", {{"exit_status", "Submitted"}}}}}}};
    WriteFileAtomic(root_ + "/trajectories/exp_001.json", a.dump());
    Kernels("exp_001", {{1, "COMPILE_ERROR"}, {2, "PASSED 0.3"}, {3, "VERIFIED 1.2"}});
    // exp_002: the task only in its task message, with a longer name beside a prefix of it;
    // content as a list of parts; kernels counted from 0.
    json b = {
        {"trajectory_format", "mini-swe-agent-1.1"},
        {"info", {{"exit_status", "LimitsExceeded"}}},
        {"messages",
         {{{"role", "system"}, {"content", "sys"}},
          {{"role", "user"},
           {"content", {{{"type", "text"}, {"text", "Definition: gemm_n7168_k5120 (M=8192)"}}}}},
          {{"role", "assistant"}, {"content", "One."}},
          Observation(false, 0)}}};
    WriteFileAtomic(root_ + "/trajectories/exp_002.json", b.dump());
    Kernels("exp_002", {{0, "INCORRECT"}});
    // Left out: not JSON; no task; no kernels.
    WriteFileAtomic(root_ + "/trajectories/exp_003.json", "{ not json");
    json c = {{"trajectory_format", "mini-swe-agent-1.1"},
              {"messages",
               {{{"role", "system"}, {"content", "s"}},
                {{"role", "user"}, {"content", "no task named"}}}}};
    WriteFileAtomic(root_ + "/trajectories/exp_004.json", c.dump());
    Kernels("exp_004", {{1, "PASSED 1"}});
    json d = a;
    WriteFileAtomic(root_ + "/trajectories/exp_005.json", d.dump());
  }
  void Kernels(const std::string& id, const std::vector<std::pair<int, std::string>>& ks) {
    MakeDirs(root_ + "/kernels/" + id);
    for (const auto& [n, verdict] : ks)
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
  ASSERT_EQ(e.trajectories.size(), 2u);
  const UpstreamTrajectory& a = e.trajectories[0];
  EXPECT_EQ(a.id, "exp_001");
  EXPECT_EQ(a.task, "gemm_n128_k2048");
  EXPECT_EQ(a.model, "some-model");
  ASSERT_EQ(a.seed.size(), 2u);
  EXPECT_EQ(a.seed[0].content, "You are upstream's agent.");
  EXPECT_EQ(a.seed[1].content, "Write a fast GEMM.");
  ASSERT_EQ(a.turns.size(), 3u);
  EXPECT_EQ(a.turns[1].upstream_turn, 2);
  EXPECT_EQ(a.turns[1].reply, "Second try.");
  EXPECT_EQ(a.turns[1].verdict["min_speedup"], 0.4);
  EXPECT_EQ(a.turns[2].verdict["all_passed"], true);
  const UpstreamTrajectory& b = e.trajectories[1];
  EXPECT_EQ(b.task, "gemm_n7168_k5120");  // the whole name, not a prefix of another
  ASSERT_EQ(b.turns.size(), 1u);
  EXPECT_EQ(b.turns[0].upstream_turn, 0);
  EXPECT_EQ(b.turns[0].reply, "One.");

  ASSERT_EQ(e.problems.size(), 3u);
  EXPECT_NE(e.problems[0].message.find("not valid JSON"), std::string::npos)
      << e.problems[0].message;
  EXPECT_NE(e.problems[1].message.find("names no task"), std::string::npos);
  EXPECT_NE(e.problems[2].message.find("no kernels folder"), std::string::npos);

  // A linked kernel file is never read (its text would land in the trajectory).
  std::filesystem::create_symlink(root_ + "/trajectories/exp_001.json",
                                  root_ + "/kernels/exp_002/kernel_t1.cu");
  UpstreamExperiment linked = ReadUpstreamExperiment(root_, catalog_);
  ASSERT_EQ(linked.trajectories.size(), 2u);
  EXPECT_EQ(linked.trajectories[1].turns.size(), 1u);

  // --task names the task of those that name none (and overrides the others).
  UpstreamExperiment forced = ReadUpstreamExperiment(root_, catalog_, "gemm_n128_k2048");
  EXPECT_EQ(forced.trajectories.size(), 3u);
  EXPECT_THROW(ReadUpstreamExperiment(dir_.File("nothing"), catalog_), std::exception);
}

TEST_F(UpstreamFolder, TheReplayHoldsEachTurnsKernelWhereOurExtractorFindsIt) {
  UpstreamExperiment e = ReadUpstreamExperiment(root_, catalog_);
  UpstreamReplayProvider p(e);
  std::vector<ChatMessage> m = e.trajectories[0].seed;
  ChatReply r = p.CompleteFor("exp_001-0", m);
  ASSERT_EQ(r.outcome, ChatOutcome::kOk);
  EXPECT_EQ(r.text.rfind("cat > kernel.cu", 0), 0u);
  Extraction ex = ExtractKernel(r.text);
  ASSERT_TRUE(ex.found) << ex.message;
  EXPECT_NE(ex.code.find("VERDICT COMPILE_ERROR"), std::string::npos);
  m.push_back({"assistant", r.text});
  m.push_back({"user", "feedback"});
  EXPECT_NE(p.CompleteFor("exp_001-0", m).text.find("VERDICT PASSED 0.3"), std::string::npos);
  // Past the end, or a trajectory it does not have: ours to fix, never the kernel's verdict.
  EXPECT_EQ(p.CompleteFor("exp_999-0", m).outcome, ChatOutcome::kInfraError);
}

TEST_F(UpstreamFolder, EveryUpstreamTurnIsJudgedAgainThroughTheLoop) {
  UpstreamExperiment e = ReadUpstreamExperiment(root_, catalog_);
  UpstreamReplayProvider model(e);
  std::vector<std::string> judged;
  std::mutex mu;
  Evaluator evaluate = [&](const std::string& path, const Definition&, const Workload&,
                           const EvaluationTag& tag) {
    std::smatch m;
    std::string code = ReadFile(path);
    json r = {{"status", "INFRA_ERROR"}, {"message", "no verdict"}};
    if (std::regex_search(code, m, std::regex("VERDICT (\\w+)(?: ([0-9.]+))?"))) {
      r = {{"status", m[1].str() == "VERIFIED" ? "PASSED" : m[1].str()}, {"message", "scripted"}};
      if (m[2].matched) r["performance"] = {{"state", "ran"}, {"speedup", std::stod(m[2])}};
      if (m[1].str() == "VERIFIED")
        r["instructions"] = {{"verification", "dynamic_present"}, {"arch_tag", "H"}};
    }
    std::lock_guard<std::mutex> lock(mu);
    judged.push_back(tag.evaluation_id);
    return FromJson(r);
  };
  AgentOptions o;
  Catalog& c = catalog_;
  for (const auto& t : e.trajectories) {
    const Definition& d = c.Find(t.task);
    RunTask rt{&d, &d.DefaultWorkload(), t.id, t.seed};
    rt.turns = static_cast<int>(t.turns.size());
    o.tasks.push_back(rt);
  }
  o.turns = 8;
  o.prompts_dir = DefaultPromptsDir();
  o.run_dir = dir_.File("run");
  o.progress = false;
  o.run_info = {{"upstream", UpstreamRunInfo(e)}};
  RunSummary s = RunAgent(o, model, evaluate);
  EXPECT_EQ(s.finished, 2);
  EXPECT_EQ(s.turns_run, 4);  // 3 + 1: each trajectory for as many turns as upstream's had
  EXPECT_EQ(judged.size(), 4u);
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
  EXPECT_EQ(run["upstream"]["left_out"].size(), 3u);
}

}  // namespace
}  // namespace ptxbench
