#include "record/instructions_layer.h"

#include <gtest/gtest.h>

#include "record/layers.h"
#include "record/record.h"
#include "record/record_files_for_test.h"

namespace ptxbench {
namespace {

using nlohmann::json;

// A record holding `instructions`, written and read back as a consumer would.
EvaluationRecord ThroughRecord(const json& instructions) {
  EvaluationRecord rec;
  rec.instructions = instructions;
  return FromJson(json::parse(rec.ToJson().dump()));
}

// Every field written, as after a verified run that was cross-checked.
InstructionsLayer VerifiedLayer() {
  InstructionsLayer l;
  l.static_sass = {{"state", "ran"}, {"totals", {{"gmma", 12}}}, {"functions", json::array()}};
  l.static_probe = StaticProbe{"ran", "the disassembler read a harness-built object"};
  l.required_families = std::vector<std::string>{"gmma"};
  l.verification = "dynamic_present";
  l.arch_tag = "";
  l.upstream_arch_tag = "H";
  l.tensor_core_work_fraction = 0.25;
  l.tag_withheld = std::vector<std::string>{"tensor-core work fraction 25.0% of the task's FLOPs"};
  l.message = "H under the paper's rule only";
  l.profile = ProfileRun{.tool = "/usr/local/cuda/bin/ncu",
                         .calls = 3,
                         .kernels = 2,
                         .bad_rows = 1,
                         .exit = "exit code 0",
                         .seed = 18446744073709551615ull};
  l.dynamic = {{"families", {{"gmma", {{"thread_executions_true", 96.0}}}}},
               {"kernels", {"_Z4gemmv"}},
               {"evidence", json::array()}};
  l.cross_check = CrossCheck{.memcheck_output = "matches",
                             .profile_output = "out: 3 of 4 elements differ",
                             .kernels = {.trials = std::set<std::string>{"_Z4gemmv"},
                                         .memcheck = std::nullopt,
                                         .timed = std::set<std::string>{"_Z4gemmv", "_Z3padv"},
                                         .profiled = std::set<std::string>{}}};
  return l;
}

TEST(InstructionsLayer, RoundTripsThroughTheRecord) {
  const InstructionsLayer original = VerifiedLayer();
  EXPECT_EQ(InstructionsLayerOf(ThroughRecord(ToJson(original))), original);
  const InstructionsLayer empty;
  EXPECT_EQ(InstructionsLayerOf(ThroughRecord(ToJson(empty))), empty);
  // A null arch_tag stays null, and stays written.
  InstructionsLayer undecided;
  undecided.arch_tag = WrittenNull<std::string>();
  undecided.tensor_core_work_fraction = WrittenNull<double>();
  EXPECT_EQ(InstructionsLayerOf(ThroughRecord(ToJson(undecided))), undecided);
}

// The layer the inspect stage writes before anything is verified, as the evaluator wrote it
// with raw keys.
TEST(InstructionsLayer, TheInspectStagesLayerIsTheFormatOfBefore) {
  InstructionsLayer l;
  l.static_sass = {{"state", "ran"}, {"message", ""}};
  l.required_families = std::vector<std::string>{"gmma"};
  l.verification = "not_correct";
  l.arch_tag = WrittenNull<std::string>();
  l.upstream_arch_tag = WrittenNull<std::string>();
  l.message = "the candidate is not correct";
  EXPECT_EQ(ToJson(l).dump(),
            R"({"arch_tag":null,"message":"the candidate is not correct",)"
            R"("required_families":["gmma"],"static":{"message":"","state":"ran"},)"
            R"("upstream_arch_tag":null,"verification":"not_correct"})");
  // A failed inspection: no verification, no tag, the probe's word.
  InstructionsLayer failed;
  failed.static_sass = {{"state", "failed"}};
  failed.required_families = std::vector<std::string>{};
  failed.static_probe = StaticProbe{"failed", "no function found in the probe's SASS"};
  EXPECT_EQ(
      ToJson(failed).dump(),
      R"({"required_families":[],"static":{"state":"failed"},)"
      R"("static_probe":{"message":"no function found in the probe's SASS","state":"failed"}})");
  // A reserved kernel name: the inspection alone.
  InstructionsLayer reserved;
  reserved.static_sass = {{"state", "ran"}};
  EXPECT_EQ(ToJson(reserved).dump(), R"({"static":{"state":"ran"}})");
}

TEST(InstructionsLayer, TheVerifiedLayerIsTheFormatOfBefore) {
  const json expected = json::parse(R"({
    "static": {"state": "ran", "totals": {"gmma": 12}, "functions": []},
    "static_probe": {"state": "ran", "message": "the disassembler read a harness-built object"},
    "required_families": ["gmma"],
    "verification": "dynamic_present",
    "arch_tag": "",
    "upstream_arch_tag": "H",
    "tensor_core_work_fraction": 0.25,
    "tag_withheld": ["tensor-core work fraction 25.0% of the task's FLOPs"],
    "message": "H under the paper's rule only",
    "profile": {"tool": "/usr/local/cuda/bin/ncu", "calls": 3, "kernels": 2, "bad_rows": 1,
                "exit": "exit code 0", "seed": 18446744073709551615},
    "dynamic": {"families": {"gmma": {"thread_executions_true": 96.0}}, "kernels": ["_Z4gemmv"],
                "evidence": []},
    "cross_check": {"memcheck_output": "matches", "profile_output": "out: 3 of 4 elements differ",
                    "kernels": {"trials": ["_Z4gemmv"], "memcheck": "unavailable",
                                "timed": ["_Z3padv", "_Z4gemmv"], "profiled": []}}
  })");
  const json written = ToJson(VerifiedLayer());
  EXPECT_EQ(written, expected) << json::diff(expected, written).dump(1);
  // The counts keep the types the evaluator gave them: the calls a signed int, the others
  // unsigned.
  EXPECT_TRUE(written["profile"]["calls"].is_number_integer());
  EXPECT_TRUE(written["profile"]["seed"].is_number_unsigned());
  EXPECT_TRUE(written["profile"]["kernels"].is_number_unsigned());
}

TEST(InstructionsLayer, ReadsLenientlyAndNeverThrows) {
  for (const json& layer : {json(), json::array({1, 2}), json("text"), json::object()})
    EXPECT_EQ(InstructionsLayerOf(layer), InstructionsLayer()) << layer.dump();
  const InstructionsLayer odd = InstructionsLayerOf(json::parse(R"({
    "static": [1], "static_probe": "ran", "required_families": ["gmma", 7],
    "verification": 3, "arch_tag": 5, "tensor_core_work_fraction": "half",
    "tag_withheld": "no", "message": null, "profile": {"calls": "three", "seed": -1},
    "dynamic": "none", "cross_check": {"kernels": {"trials": "unavailable", "timed": [1, "k"]}}
  })"));
  EXPECT_TRUE(odd.static_sass.is_null());
  EXPECT_FALSE(odd.static_probe);
  EXPECT_EQ(odd.required_families, std::vector<std::string>{"gmma"});
  EXPECT_FALSE(odd.verification);
  // Written, but not a value of its type: null, as readers took it before.
  ASSERT_TRUE(odd.arch_tag);
  EXPECT_FALSE(*odd.arch_tag);
  ASSERT_TRUE(odd.tensor_core_work_fraction);
  EXPECT_FALSE(*odd.tensor_core_work_fraction);
  EXPECT_FALSE(odd.upstream_arch_tag);
  EXPECT_FALSE(odd.tag_withheld);
  EXPECT_FALSE(odd.message);
  ASSERT_TRUE(odd.profile);
  EXPECT_FALSE(odd.profile->calls);
  EXPECT_EQ(odd.profile->seed, 0u);
  EXPECT_TRUE(odd.dynamic.is_null());
  ASSERT_TRUE(odd.cross_check);
  EXPECT_FALSE(odd.cross_check->kernels.trials);
  EXPECT_EQ(odd.cross_check->kernels.timed, std::set<std::string>{"k"});
  EXPECT_FALSE(odd.cross_check->kernels.profiled);
}

// The view consumers read is the layer's, with the same answers as before the layer was typed.
TEST(InstructionsLayer, TheViewReadsThroughTheLayer) {
  EvaluationRecord rec = ThroughRecord(ToJson(VerifiedLayer()));
  InstructionsView v = rec.Instructions();
  EXPECT_EQ(v.verification, Verification::kDynamicPresent);
  EXPECT_EQ(v.arch_tag, "");
  EXPECT_EQ(v.UpstreamArchTag(), "H");
  EXPECT_EQ(v.tensor_core_work_fraction, 0.25);
  EXPECT_EQ(v.tag_withheld.size(), 1u);
  EXPECT_EQ(v.required_families, std::vector<std::string>{"gmma"});
  EXPECT_EQ(v.message, "H under the paper's rule only");
  // A tag present but not a string is no tag, and still stands for the paper's.
  rec.instructions = {{"arch_tag", "H"}, {"upstream_arch_tag", 5}};
  v = rec.Instructions();
  EXPECT_EQ(v.arch_tag, "H");
  ASSERT_TRUE(v.upstream_arch_tag);
  EXPECT_EQ(v.UpstreamArchTag(), "");
  // Before upstream_arch_tag was written, arch_tag stands in.
  rec.instructions = {{"arch_tag", "H"}};
  EXPECT_EQ(rec.Instructions().UpstreamArchTag(), "H");

  const InstructionDetail d = InstructionDetailOf(ThroughRecord(ToJson(VerifiedLayer())));
  EXPECT_TRUE(d.has_static);
  EXPECT_EQ(InstructionDetail::CountOf(*d.sass_totals, "gmma"), 12);
  EXPECT_EQ(InstructionDetail::CountOf(*d.executed, "gmma"), 96);
  EXPECT_EQ(d.profiled_functions, std::set<std::string>{"_Z4gemmv"});
}

// Every record kept in the repository (GPU runs of every version): its instructions layer
// read into the structure and written again is the layer as it was.
TEST(InstructionsLayer, EveryRecordFilesLayerRoundTrips) {
  if (!std::getenv("PTXBENCH_SOURCE_DIR")) GTEST_SKIP() << "PTXBENCH_SOURCE_DIR is not set";
  const std::vector<EvaluationRecord> records = RecordsInRepository();
  ASSERT_GE(records.size(), 10u);
  for (const EvaluationRecord& rec : records) {
    if (rec.instructions.is_null()) continue;
    const json again = ToJson(InstructionsLayerOf(rec));
    EXPECT_TRUE(again == rec.instructions) << json::diff(rec.instructions, again).dump(1);
  }
}

}  // namespace
}  // namespace ptxbench
