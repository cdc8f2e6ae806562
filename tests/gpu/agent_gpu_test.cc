// The bundled default run on the real GPU: `ptxbench run` replays agent/replay/default.json
// on the headline GEMM, and every turn carries the three layers' verdict: a compile error, a
// correct CUDA-core kernel without the architecture credit, a correct TMA + wgmma kernel with
// it, both timed against cuBLAS in the same run.
#include <gtest/gtest.h>

#include <cstdlib>

#include "common/files.h"
#include "common/subprocess.h"
#include "gpu/gpu_presence.h"

namespace ptxbench {
namespace {

using nlohmann::json;

TEST(AgentOnTheGpu, TheDefaultReplayEarnsEachLayersVerdict) {
  ScratchDir dir("agent-gpu");
  std::string run = dir.File("run");
  CommandResult r = RunCommand({std::getenv("PTXBENCH_BIN"), "run", "--out", run},
                               std::chrono::seconds(900), {{"PTXBENCH_CACHE", dir.File("cache")}});
  ASSERT_EQ(r.exit.code, 0) << r.output;
  json t = json::parse(ReadFile(run + "/trajectories/gemm_n7168_k5120-0.json"));
  EXPECT_EQ(t["info"]["exit_status"], "turn_limit");
  const json& turns = t["info"]["turns"];
  ASSERT_EQ(turns.size(), 3u) << t.dump(1);
  EXPECT_EQ(turns[0]["outcome"], "compile");
  EXPECT_EQ(turns[1]["outcome"], "correct");  // CUDA cores: passes, no architecture credit
  EXPECT_EQ(turns[2]["outcome"], "verified");
  for (int k : {1, 2}) {
    json rec = json::parse(ReadFile(run + "/" + turns[k]["evaluation_file"].get<std::string>()));
    EXPECT_EQ(rec["status"], "PASSED") << rec.dump(1);
    const json& perf = rec["performance"];
    ASSERT_TRUE(perf.contains("speedup") && perf["speedup"].is_number()) << perf.dump(1);
    EXPECT_GT(perf["speedup"].get<double>(), 0.0);
    EXPECT_TRUE(turns[k].contains("speedup"));
    // CUDA cores: no tensor-core instruction in the SASS at all; TMA + wgmma: executed.
    EXPECT_EQ(rec["instructions"]["verification"], k == 1 ? "sass_absent" : "dynamic_present")
        << rec["instructions"].dump(1);
  }
  json wgmma = json::parse(ReadFile(run + "/" + turns[2]["evaluation_file"].get<std::string>()));
  EXPECT_FALSE(wgmma["instructions"]["arch_tag"].is_null());
  // The feedback the "model" read after turn 3 names the faster of the two as the best.
  const json& last = t["messages"].back();
  EXPECT_EQ(last["role"], "user");
  std::string best = turns[2]["speedup"].get<double>() >= turns[1]["speedup"].get<double>()
                         ? "## Best so far\nturn 3: correct"
                         : "## Best so far\nturn 2: correct";
  EXPECT_NE(last["content"].get<std::string>().find(best), std::string::npos) << last.dump();
}

}  // namespace
}  // namespace ptxbench
