// The knowledge pack's proof on the chip: every example of the Hopper pack, written on the
// pack's helper header and inlined into one file (`ptxbench pack inline`), passes all three
// layers with the H credit, at a small ragged shape under the memory checker and at the
// headline shape with timing. A pack that teaches helpers which fail here must not ship as
// proven (its manifest's hardware_verified says what was proven).
#include <gtest/gtest.h>

#include <cstdlib>

#include "agent/pack.h"
#include "agent/prompt.h"
#include "common/files.h"
#include "common/subprocess.h"
#include "gpu/gpu_presence.h"

namespace ptxbench {
namespace {

using nlohmann::json;

TEST(PackOnTheGpu, EveryHopperExamplePassesWithTheHCredit) {
  ScratchDir dir("pack-gpu");
  Pack pack = LoadPackManifest(DefaultPacksDir(), "sm_90a");
  ASSERT_FALSE(pack.examples.empty());
  std::string bin = std::getenv("PTXBENCH_BIN");
  for (const auto& ex : pack.examples) {
    std::string kernel = dir.File("example.cu");
    CommandResult in = RunCommand(
        {bin, "pack", "inline", pack.dir + "/" + ex.file, "--arch", "sm_90a", "-o", kernel},
        std::chrono::seconds(60));
    ASSERT_EQ(in.exit.code, 0) << in.output;
    struct Case {
      std::string task, workload, sanitize;
    };
    // A ragged M under the memory checker, then the task's headline, timed.
    for (const Case& c :
         {Case{"gemm_n128_k2048", "M=93", "always"}, Case{"gemm_n7168_k5120", "M=2379", "always"},
          Case{ex.task, "", "never"}}) {
      std::string out = dir.File("record.json");
      std::vector<std::string> args = {bin,          "eval",     kernel,   "--task", c.task,
                                       "--sanitize", c.sanitize, "--json", out};
      if (!c.workload.empty()) args.insert(args.end(), {"--workload", c.workload});
      CommandResult r =
          RunCommand(args, std::chrono::seconds(600), {{"PTXBENCH_CACHE", dir.File("cache")}});
      ASSERT_TRUE(FileExists(out)) << r.output;
      json rec = json::parse(ReadFile(out));
      std::printf("%s on %s %s: %s %s; speedup %s\n", ex.file.c_str(), c.task.c_str(),
                  c.workload.c_str(), rec["status"].get<std::string>().c_str(),
                  rec["message"].get<std::string>().c_str(),
                  rec["performance"].value("speedup", json()).dump().c_str());
      EXPECT_EQ(rec["status"], "PASSED") << ex.file << " " << c.task << "\n" << rec.dump(1);
      EXPECT_EQ(rec["instructions"]["verification"], "dynamic_present") << rec["instructions"];
      EXPECT_EQ(rec["instructions"]["arch_tag"], "H") << rec["instructions"];
    }
  }
}

}  // namespace
}  // namespace ptxbench
