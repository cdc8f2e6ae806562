// The agent loop with a scripted model and a scripted evaluator (no GPU, no network): turn
// accounting, stopping rules, infrastructure failures kept apart from the model's, resume,
// persistence, the one-evaluation-at-a-time queue, the context policies, the overhead.
#include "agent/loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "agent/prompt.h"
#include "common/files.h"

namespace ptxbench {
namespace {

using nlohmann::json;

// Replies by turn (the number of assistant messages so far); "INFRA"/"REFUSE" are faults.
class ScriptedModel : public ChatProvider {
 public:
  explicit ScriptedModel(std::vector<std::string> replies) : replies_(std::move(replies)) {}
  ChatReply Complete(const std::vector<ChatMessage>& messages) override {
    size_t turn = 0;
    for (const auto& m : messages) turn += m.role == "assistant";
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++calls_;
      last_ = messages;
    }
    ChatReply r;
    r.attempts = 1;
    std::string s = turn < replies_.size() ? replies_[turn] : "nothing more";
    if (s == "INFRA" && fail_infra_) {
      r.outcome = ChatOutcome::kInfraError;
      r.error = "connection refused";
      return r;
    }
    if (s == "INFRA") s = replies_.at(turn + 1);  // the endpoint is back: the next script line
    if (s == "REFUSE") {
      r.outcome = ChatOutcome::kModelError;
      r.error = "HTTP 400: bad request";
      return r;
    }
    r.text = s;
    r.usage.prompt_tokens = 100;
    r.usage.completion_tokens = 10;
    return r;
  }
  std::string Describe() const override { return "scripted"; }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  std::vector<ChatMessage> last() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }
  bool fail_infra_ = true;

 private:
  std::vector<std::string> replies_;
  std::mutex mu_;
  int calls_ = 0;
  std::vector<ChatMessage> last_;
};

// A reply whose kernel carries the verdict the scripted evaluator gives it.
std::string Kernel(const std::string& verdict) {
  return "Here it is.\n```cuda\n// VERDICT " + verdict +
         "\nextern \"C\" int run(const void* A, const void* B, void* C, int M, int N, int K, "
         "void* stream) { return 0; }\n```\n";
}

struct ScriptedEvaluator {
  std::atomic<int> in_flight{0}, max_in_flight{0}, calls{0};
  std::mutex tags_mu;
  std::vector<EvaluationTag> tags;
  int sleep_ms = 1;
  Evaluator Fn() {
    return [this](const std::string& path, const Definition&, const Workload&,
                  const EvaluationTag& tag) {
      {
        std::lock_guard<std::mutex> lock(tags_mu);
        tags.push_back(tag);
      }
      int now = ++in_flight;
      int seen = max_in_flight.load();
      while (now > seen && !max_in_flight.compare_exchange_weak(seen, now)) {
      }
      ++calls;
      std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
      std::smatch m;
      std::string code = ReadFile(path);
      json r = {{"status", "INFRA_ERROR"}, {"message", "no verdict"}};
      if (std::regex_search(code, m, std::regex("VERDICT (\\w+)(?: ([0-9.]+))?"))) {
        r = {{"status", m[1].str()}, {"message", "scripted " + m[1].str()}};
        if (m[2].matched) r["performance"] = {{"state", "ran"}, {"speedup", std::stod(m[2])}};
        if (m[1].str() == "VERIFIED") {
          r["status"] = "PASSED";
          r["instructions"] = {{"verification", "dynamic_present"}, {"arch_tag", "H"}};
        }
      }
      --in_flight;
      return FromJson(r);  // as a service's record arrives
    };
  }
};

class AgentLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    catalog_ = Catalog::Load(Catalog::DefaultDir());
    def_ = &catalog_.Find("gemm_n128_k2048");
  }
  AgentOptions Options(int trajectories = 1, int turns = 4) {
    AgentOptions o;
    o.tasks = {{def_, &def_->DefaultWorkload()}};
    o.trajectories = trajectories;
    o.turns = turns;
    o.prompts_dir = DefaultPromptsDir();
    o.run_dir = dir_.File("run");
    o.progress = false;
    return o;
  }
  json TrajectoryFile(const std::string& id) {
    return json::parse(ReadFile(dir_.File("run") + "/trajectories/" + id + ".json"));
  }
  // 64 trajectories of two turns each (incorrect, then correct), all at once against one
  // evaluator; prints the loop's overhead per turn, which the perf entry holds to its budget.
  RunSummary RunSixtyFourAtOnce(ScriptedEvaluator& ev) {
    ScriptedModel model({Kernel("INCORRECT"), Kernel("PASSED 0.7")});
    AgentOptions o = Options(64, 2);
    o.concurrency = 64;
    RunSummary s = RunAgent(o, model, ev.Fn());
    std::printf("agent overhead per turn: max %.2f ms, mean %.2f ms (64 trajectories x 2 turns)\n",
                s.max_overhead_s * 1e3, s.mean_overhead_s * 1e3);
    return s;
  }
  RunSummary RunSixtyFourAtOnce() {
    ScriptedEvaluator ev;
    return RunSixtyFourAtOnce(ev);
  }
  Catalog catalog_;
  const Definition* def_ = nullptr;
  ScratchDir dir_{"agent-loop-test"};
};

TEST_F(AgentLoop, StopsWhenACorrectKernelReachesTheTarget) {
  ScriptedModel model({Kernel("COMPILE_ERROR"), "no code at all, sorry", Kernel("PASSED 0.5"),
                       Kernel("VERIFIED 1.3"), Kernel("PASSED 2.0")});
  ScriptedEvaluator ev;
  AgentOptions o = Options(1, 8);
  o.target_speedup = 1.2;
  RunSummary s = RunAgent(o, model, ev.Fn());
  EXPECT_EQ(s.finished, 1);
  EXPECT_EQ(s.verified, 1);
  EXPECT_EQ(model.calls(), 4);
  EXPECT_EQ(ev.calls, 3);  // the reply without code was not evaluated
  json t = TrajectoryFile("gemm_n128_k2048-0");
  EXPECT_EQ(t["trajectory_format"], "mini-swe-agent-1");
  EXPECT_EQ(t["info"]["exit_status"], "target_reached");
  const json& turns = t["info"]["turns"];
  ASSERT_EQ(turns.size(), 4u);
  EXPECT_EQ(turns[0]["outcome"], "compile");
  EXPECT_EQ(turns[1]["outcome"], "extraction");
  EXPECT_EQ(turns[2]["outcome"], "correct");
  EXPECT_EQ(turns[3]["outcome"], "verified");
  EXPECT_EQ(t["messages"].size(), 2u + 2 * 4);
  EXPECT_EQ(t["messages"][2]["role"], "assistant");
  EXPECT_EQ(t["messages"][2]["extra"]["turn"], 1);
  // Every kernel and evaluation is a file of its own, named in the turn.
  EXPECT_TRUE(FileExists(dir_.File("run") + "/" + turns[0]["kernel_file"].get<std::string>()));
  EXPECT_TRUE(FileExists(dir_.File("run") + "/" + turns[3]["evaluation_file"].get<std::string>()));
  EXPECT_EQ(turns[1]["kernel_file"], "");
  EXPECT_TRUE(FileExists(dir_.File("run") + "/run.json"));
  // The feedback names the best kernel so far, the turn it answers included.
  EXPECT_NE(t["messages"][7]["content"].get<std::string>().find("## Best so far\nturn 3: correct"),
            std::string::npos)
      << t["messages"][7]["content"];
  EXPECT_NE(t["messages"][9]["content"].get<std::string>().find("## Best so far\nturn 4: correct"),
            std::string::npos)
      << t["messages"][9]["content"];
}

TEST_F(AgentLoop, ATurnLostToTheEndpointIsNotSpentAndResumeRetriesOnlyIt) {
  ScriptedModel model(
      {Kernel("INCORRECT"), Kernel("COMPILE_ERROR"), "INFRA", Kernel("PASSED 0.9")});
  ScriptedEvaluator ev;
  RunSummary s = RunAgent(Options(1, 3), model, ev.Fn());
  EXPECT_EQ(s.interrupted, 1);
  json t = TrajectoryFile("gemm_n128_k2048-0");
  EXPECT_EQ(t["info"]["exit_status"], "infra_error");
  ASSERT_EQ(t["info"]["turns"].size(), 3u);
  EXPECT_EQ(t["info"]["turns"][2]["outcome"], "infra");
  EXPECT_FALSE(t["info"]["turns"][2]["spent"].get<bool>());
  EXPECT_EQ(t["messages"].size(), 2u + 2 * 2);  // the lost turn left no messages
  EXPECT_EQ(model.calls(), 3);

  model.fail_infra_ = false;  // the endpoint is back
  AgentOptions o = Options(1, 3);
  o.resume = true;
  RunSummary r = RunAgent(o, model, ev.Fn());
  EXPECT_EQ(r.finished, 1);
  EXPECT_EQ(r.turns_reused, 2);
  EXPECT_EQ(model.calls(), 4);  // only turn 3 again
  t = TrajectoryFile("gemm_n128_k2048-0");
  EXPECT_EQ(t["info"]["exit_status"], "turn_limit");
  ASSERT_EQ(t["info"]["turns"].size(), 3u);
  EXPECT_EQ(t["info"]["turns"][2]["outcome"], "correct");
  EXPECT_EQ(ev.calls, 3);

  // A finished trajectory is left alone by a further resume.
  RunSummary again = RunAgent(o, model, ev.Fn());
  EXPECT_EQ(again.turns_run, 0);
  EXPECT_EQ(model.calls(), 4);
}

TEST_F(AgentLoop, AHarnessThatCannotJudgeIsInfraNotTheModels) {
  ScriptedModel model({Kernel("INFRA_ERROR"), Kernel("PASSED 1.0")});
  ScriptedEvaluator ev;
  RunSummary s = RunAgent(Options(1, 2), model, ev.Fn());
  EXPECT_EQ(s.interrupted, 1);
  json t = TrajectoryFile("gemm_n128_k2048-0");
  EXPECT_EQ(t["info"]["turns"][0]["outcome"], "infra");
  EXPECT_FALSE(t["info"]["turns"][0]["spent"].get<bool>());
}

TEST_F(AgentLoop, AModelThatRefusesEndsItsTrajectory) {
  ScriptedModel model({Kernel("INCORRECT"), "REFUSE"});
  ScriptedEvaluator ev;
  RunSummary s = RunAgent(Options(1, 5), model, ev.Fn());
  EXPECT_EQ(s.finished, 1);
  json t = TrajectoryFile("gemm_n128_k2048-0");
  EXPECT_EQ(t["info"]["exit_status"], "model_error");
  EXPECT_EQ(t["info"]["turns"][1]["outcome"], "model_error");
  EXPECT_NE(t["info"]["turns"][1]["error"].get<std::string>().find("400"), std::string::npos);
}

TEST_F(AgentLoop, SixtyFourTrajectoriesShareOneEvaluationQueueWithLittleOverhead) {
  ScriptedEvaluator ev;
  RunSummary s = RunSixtyFourAtOnce(ev);
  EXPECT_EQ(s.trajectories, 64);
  EXPECT_EQ(s.finished, 64);
  EXPECT_EQ(s.correct, 64);
  EXPECT_EQ(ev.calls, 128);
  EXPECT_EQ(ev.max_in_flight, 1);  // one evaluation at a time on the GPU
}

// The same run against the overhead's budget: run by the ctest entry agent_loop_test_perf
// (label perf), whose result scripts/test.sh reports without failing on it.
class AgentLoopPerf : public AgentLoop {};
TEST_F(AgentLoopPerf, SixtyFourTrajectoriesShareOneEvaluationQueueWithLittleOverhead) {
  RunSummary s = RunSixtyFourAtOnce();
  ASSERT_EQ(s.finished, 64);
  // The budget is 50 ms a turn. The mean is held to it; the max only loosely, because a CI
  // machine running other tests alongside can deschedule one of 64 threads for a while.
  EXPECT_LT(s.mean_overhead_s, 0.050);
  EXPECT_LT(s.max_overhead_s, 0.500);
}

TEST_F(AgentLoop, ARemoteEvaluatorTakesEvaluationsInParallelEachTaggedWithItsTurn) {
  ScriptedModel model({Kernel("INCORRECT"), Kernel("PASSED 0.7")});
  ScriptedEvaluator ev;
  ev.sleep_ms = 50;  // long enough that eight trajectories meet at the evaluator
  AgentOptions o = Options(8, 2);
  o.concurrency = 8;
  o.parallel_evaluations = 8;
  o.run_info = {{"model", {{"name", "m1"}, {"provider", "openai"}}}, {"pack", "none"}};
  RunSummary s = RunAgent(o, model, ev.Fn());
  EXPECT_EQ(s.correct, 8);
  EXPECT_GT(ev.max_in_flight, 1) << "a remote evaluator must not get one evaluation at a time";
  EXPECT_LE(ev.max_in_flight, 8);
  ASSERT_EQ(ev.tags.size(), 16u);
  std::set<std::string> ids;
  for (const EvaluationTag& t : ev.tags) {
    ids.insert(t.evaluation_id);
    EXPECT_EQ(t.evaluation_id, t.trajectory + "/turn" + std::to_string(t.turn));
    EXPECT_EQ(t.model, "m1");
    EXPECT_EQ(t.provider, "openai");
    EXPECT_EQ(t.pack, "none");
    EXPECT_EQ(t.task, "gemm_n128_k2048");
    EXPECT_EQ(t.run, std::filesystem::path(o.run_dir).filename().string());
    EXPECT_FALSE(t.started_at.empty());
    EXPECT_EQ(t.trajectory, "gemm_n128_k2048-" + std::to_string(t.index));
  }
  EXPECT_EQ(ids.size(), 16u) << "every turn's tag is its own";
}

TEST_F(AgentLoop, CondensedContextKeepsTheLastTurnAndNotesTheRest) {
  ScriptedModel model({Kernel("COMPILE_ERROR"), Kernel("INCORRECT"), Kernel("RUNTIME_ERROR"),
                       Kernel("INCORRECT"), Kernel("PASSED 0.1")});
  ScriptedEvaluator ev;
  AgentOptions o = Options(1, 5);
  o.context = "condensed";
  RunAgent(o, model, ev.Fn());
  std::vector<ChatMessage> sent = model.last();  // turn 5's request
  ASSERT_EQ(sent.size(), 4u);
  EXPECT_EQ(sent[0].role, "system");
  EXPECT_NE(sent[1].content.find("earlier attempts"), std::string::npos);
  EXPECT_NE(sent[2].content.find("VERDICT INCORRECT"), std::string::npos);  // turn 4 in full
  json t = TrajectoryFile("gemm_n128_k2048-0");
  EXPECT_EQ(t["messages"].size(), 2u + 2 * 5);  // the file keeps everything
}

TEST(AgentPrompts, RenderDeterministicallyWithTheFamilysAbi) {
  Catalog c = Catalog::Load(Catalog::DefaultDir());
  const Definition& d = c.Find("mha_with_lse_d128");
  Prompts a = RenderPrompts(DefaultPromptsDir(), d, d.DefaultWorkload(), "sm_90a", "");
  Prompts b = RenderPrompts(DefaultPromptsDir(), d, d.DefaultWorkload(), "sm_90a", "");
  EXPECT_EQ(a.system, b.system);
  EXPECT_EQ(a.version, b.version);
  EXPECT_NE(a.system.find("extern \"C\" int run("), std::string::npos);
  EXPECT_NE(a.system.find("cuDNN"), std::string::npos);
  EXPECT_NE(a.system.find("GMMA (wgmma)"), std::string::npos);
  EXPECT_NE(a.task.find("S=4096"), std::string::npos);
  EXPECT_NE(a.task.find("`LSE`: f32 [4, 48, 4096]"), std::string::npos);
  EXPECT_EQ(a.system.find("{{"), std::string::npos);
  Prompts p = RenderPrompts(DefaultPromptsDir(), d, d.DefaultWorkload(), "sm_90a", "PACK TEXT");
  EXPECT_NE(p.system.find("PACK TEXT"), std::string::npos);
  EXPECT_NE(p.version, a.version);
  EXPECT_THROW(RenderTemplate("{{nope}}", {}), std::exception);
  EXPECT_THROW(LoadPack(DefaultPacksDir(), "sm_80", "full"), std::exception);
  EXPECT_EQ(LoadPack(DefaultPacksDir(), "sm_90a", "none"), "");
}

}  // namespace
}  // namespace ptxbench

namespace ptxbench {
namespace {

// A trajectory seeded with another model's failed turn (fixit repair): the seed is sent as
// is, the teacher's turns count from 1, and a resume keeps the seed while retrying a lost turn.
TEST_F(AgentLoop, ASeededTrajectoryStartsFromTheSeedAndCountsOnlyItsOwnTurns) {
  // The model sees one assistant message (the seed's) before its first turn: reply index 1.
  ScriptedModel model({"unused", "INFRA", Kernel("VERIFIED 1.5")});
  ScriptedEvaluator ev;
  AgentOptions o = Options(1, 1);
  o.tasks[0].id = "fix-abc";
  o.tasks[0].seed = {{"system", "the original system"},
                     {"user", "the original task"},
                     {"assistant", "```cuda\nbroken\n```"},
                     {"user", "## COMPILE_ERROR\nundeclared"}};
  RunSummary s = RunAgent(o, model, ev.Fn());
  EXPECT_EQ(s.interrupted, 1);
  json t = TrajectoryFile("fix-abc-0");
  EXPECT_EQ(t["info"]["preamble_messages"], 4);
  EXPECT_EQ(t["messages"].size(), 4u);
  EXPECT_EQ(t["messages"][2]["extra"]["seeded"], true);
  ASSERT_EQ(model.last().size(), 4u);
  EXPECT_EQ(model.last()[3].content, "## COMPILE_ERROR\nundeclared");

  model.fail_infra_ = false;
  o.resume = true;
  RunSummary r = RunAgent(o, model, ev.Fn());
  EXPECT_EQ(r.finished, 1);
  t = TrajectoryFile("fix-abc-0");
  ASSERT_EQ(t["messages"].size(), 6u) << t.dump(1);
  EXPECT_EQ(t["messages"][0]["content"], "the original system");
  EXPECT_EQ(t["messages"][4]["extra"]["turn"], 1);
  ASSERT_EQ(t["info"]["turns"].size(), 1u);
  EXPECT_EQ(t["info"]["turns"][0]["turn"], 1);
  EXPECT_EQ(t["info"]["turns"][0]["outcome"], "verified");
  EXPECT_EQ(t["info"]["turns"][0]["kernel_file"], "kernels/fix-abc-0/turn1.cu");
  // The condensed context keeps the whole seed too.
  Trajectory back = TrajectoryFromJson(t);
  EXPECT_EQ(back.preamble, 4u);
  EXPECT_EQ(ContextFor(back, "condensed").size(), 6u);
}

}  // namespace
}  // namespace ptxbench
