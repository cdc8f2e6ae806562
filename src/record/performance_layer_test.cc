// The performance layer both ways: what the evaluator writes (ToJson of PerformanceLayer) reads
// back the same (PerformanceLayerOf), and the JSON it writes is the format records have always
// had, pinned here key by key against literal JSON and against every record kept in the
// repository.
#include "record/performance_layer.h"
#include <gtest/gtest.h>

#include "record/record_files_for_test.h"

namespace ptxbench {
namespace {

using nlohmann::json;

SampleSummary Summary(double median) {
  return {50, median, 0.9 * median, 1.1 * median, 0.8 * median, 1.2 * median, median};
}

TimingProtocol FullProtocol() {
  TimingProtocol p;
  p.calls = TimingProtocol::Calls{10, 50, true, true, "first start to last end"};
  p.child_additions = {{"buffer_sets", 3}, {"l2_bytes", 52428800}, {"timed_inputs", "fresh"}};
  p.parent_decided = TimingProtocol::ParentDecided{50, 40, 1, 3, 3};
  p.plan = {{"warmup", 10}, {"iterations", 50}, {"reduced", false}};
  return p;
}

TimingDefenses FullDefenses() {
  TimingDefenses d;
  d.new_vendor_libraries = {"libcublas.so.13"};
  d.foreign_kernels = {"ran", {"nvjet_tst"}, ""};
  d.outlived = {2, 0.004, {"_Z4slowv"}};
  d.stray = {1, {"_Z5strayv"}};
  d.empty_calls = 3;
  d.gpu_idle_in_call = Summary(1e-5);
  d.inputs_changed_calls = 4;
  return d;
}

BaselineTiming FullBaseline() {
  BaselineTiming b;
  b.name = "cuBLASLt";
  b.state = "ran";
  b.library = json{{"version", "13.1.0"}, {"algorithm", {{"id", 66}}}};
  b.before = Summary(7.4e-4);
  b.after = Summary(7.5e-4);
  b.pooled = BaselineTiming::Pooled{7.45e-4, 7.4e-4, 7.5e-4};
  b.drift = BaselineTiming::Drift{0.004, false};
  b.tflops = 803.5;
  b.choice = "flashinfer@0.6.14";
  return b;
}

Revalidation FullRevalidation() {
  Revalidation r;
  r.state = "ran";
  r.kept_outputs = 50;
  // Outputs in the order of their names: the order they read back in.
  r.calls = {{"timed call 17 (buffer set 2, fresh inputs)",
              17020845699752648009ull,
              {{"C", RevalidatedOutput::Digests{"aeb05aaf", "aeb05aaf"}, "match", 1.0011, 0},
               {"LSE", RevalidatedOutput::Digests{"01", "02"}, "mismatch", 3.5, 12}}},
             {"witness call 8",
              9942211339669440924ull,
              {{"C", RevalidatedOutput::Digests{"", "ff"}, "match", 0.5, 0},
               {"O", std::nullopt, "match", 0, 0}}}};  // a record from before the digests
  return r;
}

TimingWitness JudgedWitness() {
  TimingWitness w;
  w.state = "agrees";
  TimingWitness::Judged x;
  x.timing_ok = true;
  x.tensor_ok = false;
  x.per_call_busy_seconds = 0.0011;
  x.message = "the GPU was busy 0.95 of the window";
  x.window = {{"seconds", 0.61}, {"sm_util_pct", nullptr}};
  x.calls = 40;
  x.calls_reported = 40;
  x.rounds = 1;
  x.timing_factor = 2;
  x.tensor_factor = 4;
  x.tensor_share_of_sm = 0.97;
  x.busy_over_timed = 0.93;
  w.judged = x;
  return w;
}

// Every field set, each to something other than its default.
PerformanceLayer FullLayer() {
  PerformanceLayer p;
  p.state = "ran";
  p.timer = "cupti_activity";
  p.protocol = FullProtocol();
  p.child_exit = "exit code 0";
  p.child_log_tail = "the last line\n";
  p.clocks = json{{"before", {{"sm_mhz", 1980.0}}}};
  p.candidate = CandidateTiming{Summary(1.17e-3), Summary(1.19e-3), 60, 1, {{"_Z4gemmv", 60}}};
  p.defenses = FullDefenses();
  p.baseline = FullBaseline();
  p.speedup = 0.64;
  p.speedup_range = std::pair{0.6, 0.7};
  p.speedup_withheld = "no speed is credited";
  p.tflops = 512.25;
  p.peak_tflops = 806.8;
  p.percent_of_peak = 63.5;
  p.peak_source = "cached: /root/.cache/ptxbench/peak/x.json";
  p.timing_seed_base = 17020845699752647992ull;
  p.sandbox = json{{"seccomp", true}};
  p.candidate_claims_ignored = 2;
  p.kernels_launched = std::vector<std::string>{"_Z4gemmv", "_Z5otherv"};
  p.confinement = json{{"event", "confinement"}, {"seccomp", true}};
  p.sealed = json{{"event", "sealed"}, {"ok", true}};
  p.channel_garbage_lines = 5;
  p.revalidation = FullRevalidation();
  p.witness = JudgedWitness();
  p.extra = {{"written_by_a_later_version", {1, 2}}};
  return p;
}

TEST(PerformanceLayer, AFullyPopulatedLayerRoundTripsThroughTheRecord) {
  const PerformanceLayer written = FullLayer();
  EvaluationRecord r;
  r.performance = ToJson(written);
  const EvaluationRecord again = FromJson(json::parse(r.ToJson().dump()));
  const PerformanceLayer read = PerformanceLayerOf(again);
  EXPECT_EQ(read, written) << again.performance.dump(1);
  EXPECT_EQ(ToJson(read).dump(), r.performance.dump());
}

TEST(PerformanceLayer, EachShapeOfItsPartsRoundTrips) {
  PerformanceLayer p = FullLayer();
  p.defenses->foreign_kernels = {"skipped", {}, "the candidate cubin's functions are unknown"};
  p.baseline = BaselineTiming{};
  p.baseline->state = "unsupported";
  p.baseline->reason = "no engine for this shape";
  p.revalidation = Revalidation{};
  p.revalidation->state = "not_reached";
  p.revalidation->reason = "the reference failed";
  p.witness = TimingWitness{};
  p.witness->state = "unavailable";
  p.witness->established_by = "parent";
  p.protocol->calls.reset();
  p.protocol->child_additions = json::object();
  EXPECT_EQ(PerformanceLayerOf(ToJson(p)), p) << ToJson(p).dump(1);

  p.witness = JudgedWitness();
  p.witness->judged->per_call_busy_seconds.reset();  // written as null
  p.witness->judged->tensor_share_of_sm.reset();     // written as null
  p.witness->judged->busy_over_timed.reset();        // not written
  const json j = ToJson(p);
  EXPECT_TRUE(j["witness"]["tensor_share_of_sm"].is_null());
  EXPECT_FALSE(j["witness"].contains("busy_over_timed"));
  EXPECT_EQ(PerformanceLayerOf(j), p) << j.dump(1);
}

// The layer of a GPU without CUPTI, as the timing layer completes it: SkippedLayer's two keys,
// then what the parent adds whatever the judge found.
TEST(PerformanceLayer, TheSkippedLayerIsWrittenAsItAlwaysWas) {
  EXPECT_EQ(ToJson(PerformanceLayer::Skipped("CUPTI is unavailable")),
            SkippedLayer("CUPTI is unavailable"));
  PerformanceLayer p = PerformanceLayer::Skipped("CUPTI is unavailable, so: no driver");
  p.timing_seed_base = 12345;
  p.sandbox = json(nullptr);
  p.protocol.emplace().parent_decided = TimingProtocol::ParentDecided{5, 0, 1, 3, 3};
  p.kernels_launched.emplace();
  p.protocol->plan = {{"warmup", 10}};
  const json literal = json::parse(R"({
    "state": "skipped",
    "reason": "CUPTI is unavailable, so: no driver",
    "timing_seed_base": 12345,
    "sandbox": null,
    "protocol": {
      "parent_decided": {"kept_outputs": 5, "witness_calls": 0, "witness_rounds": 1,
                         "timed_checks": 3, "witness_checks": 3},
      "plan": {"warmup": 10}
    },
    "kernels_launched": []
  })");
  EXPECT_EQ(ToJson(p).dump(), literal.dump());
}

// A small layer that ran, key by key as the evaluator has always written it (the types
// included: a count is an integer, a time a floating-point number even when whole).
TEST(PerformanceLayer, ALayerThatRanIsWrittenAsItAlwaysWas) {
  PerformanceLayer p;
  p.state = "timed_out";
  p.timer = "cupti_activity";
  p.protocol = TimingProtocol{};
  p.protocol->calls = TimingProtocol::Calls{2, 10, true, true, "the span"};
  p.protocol->child_additions = {{"buffer_sets", 3}, {"warmup", 99}};  // the child's word wins
  p.child_exit = "timed out after 180 s";
  p.child_log_tail = "";
  p.candidate = CandidateTiming{{1, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0}, {}, 3, 0, {{"_Z1kv", 3}}};
  p.defenses = TimingDefenses{};
  p.defenses->foreign_kernels = {"ran", {}, ""};
  p.baseline.emplace().name = "";
  p.baseline->state = "not_reached";
  p.speedup_range = std::pair{1.0, 2.5};
  p.revalidation.emplace().state = "not_reached";
  p.witness.emplace().state = "missing";
  p.witness->reason = "the witness phase did not run";
  const json literal = json::parse(R"({
    "state": "timed_out",
    "timer": "cupti_activity",
    "protocol": {"warmup": 99, "iterations": 10, "fresh_inputs_per_call": true,
                 "outputs_poisoned_per_call": true, "span": "the span", "buffer_sets": 3},
    "child_exit": "timed out after 180 s",
    "child_log_tail": "",
    "candidate": {"count": 1, "median": 2.0, "p10": 2.0, "p90": 2.0, "min": 2.0, "max": 2.0,
                  "mean": 2.0,
                  "host": {"count": 0, "median": 0.0, "p10": 0.0, "p90": 0.0, "min": 0.0,
                           "max": 0.0, "mean": 0.0},
                  "calls": 3, "empty_calls": 0, "kernels": {"_Z1kv": 3}},
    "defenses": {"new_vendor_libraries": [],
                 "foreign_kernels": {"state": "ran", "names": []},
                 "outlived": {"count": 0, "max_overrun_s": 0.0, "names": []},
                 "stray": {"count": 0, "names": []},
                 "empty_calls": 0,
                 "gpu_idle_in_call": {"count": 0, "median": 0.0, "p10": 0.0, "p90": 0.0,
                                      "min": 0.0, "max": 0.0, "mean": 0.0},
                 "inputs_changed_calls": 0},
    "baseline": {"name": "", "state": "not_reached"},
    "speedup_range": [1.0, 2.5],
    "revalidation": {"state": "not_reached", "drawn_after_the_loop": true, "kept_outputs": 0,
                     "calls": []},
    "witness": {"state": "missing", "reason": "the witness phase did not run"}
  })");
  EXPECT_EQ(ToJson(p).dump(), literal.dump());
}

TEST(PerformanceLayer, AnEmptyLayerIsAnEmptyObject) {
  EXPECT_EQ(ToJson(PerformanceLayer{}), json::object());
  EXPECT_EQ(PerformanceLayerOf(json::object()), PerformanceLayer{});
}

TEST(PerformanceLayer, ReadingIsLenient) {
  EXPECT_EQ(PerformanceLayerOf(json(5)), PerformanceLayer{});
  EXPECT_EQ(PerformanceLayerOf(json(nullptr)), PerformanceLayer{});
  const json odd = {{"state", 3},
                    {"speedup", "fast"},
                    {"speedup_range", {1}},
                    {"timing_seed_base", -4},
                    {"candidate", "many"},
                    {"kernels_launched", {"_Z1kv", 7}},
                    {"baseline", {{"median", "x"}, {"before", 2}, {"drift", nullptr}}},
                    {"revalidation", {{"calls", {1, {{"C", {{"verdict", 2}}}}}}}},
                    {"witness", {{"window", 1}, {"calls", "all"}}}};
  PerformanceLayer p;
  ASSERT_NO_THROW(p = PerformanceLayerOf(odd));
  EXPECT_EQ(p.state, "");
  EXPECT_FALSE(p.speedup);
  EXPECT_FALSE(p.speedup_range);
  EXPECT_FALSE(p.timing_seed_base);
  EXPECT_FALSE(p.candidate);
  EXPECT_EQ(p.kernels_launched, std::vector<std::string>{"_Z1kv"});
  ASSERT_TRUE(p.baseline);
  EXPECT_FALSE(p.baseline->pooled);
  EXPECT_FALSE(p.baseline->before);
  EXPECT_FALSE(p.baseline->drift);
  ASSERT_EQ(p.revalidation->calls.size(), 2u);
  EXPECT_EQ(p.revalidation->calls[1].outputs.at(0).verdict, "");
  ASSERT_TRUE(p.witness->judged);
  EXPECT_EQ(p.witness->judged->calls, 0);
}

TEST(PerformanceLayer, UnknownKeysAreKeptForTheNextWriter) {
  json layer = ToJson(FullLayer());
  layer["a_key_from_a_later_version"] = {{"x", 1}};
  EXPECT_EQ(ToJson(PerformanceLayerOf(layer)), layer);
}

// The records the repository keeps (GPU runs in docs/, test data) were written by the
// evaluator before this structure existed, by several versions: read and written again, their
// layer is unchanged to the byte, so the structure is the format they have.
TEST(PerformanceLayer, EveryRecordFileReadsAndWritesBackTheSame) {
  if (!std::getenv("PTXBENCH_SOURCE_DIR")) GTEST_SKIP() << "PTXBENCH_SOURCE_DIR is not set";
  int layers = 0;
  for (const EvaluationRecord& record : RecordsInRepository()) {
    const json& layer = record.performance;
    // The first runs of issue 19 checked the timed calls in another shape (a call's index
    // and buffer set, before they were drawn after the loop): read as far as they go.
    if (layer.contains("revalidation") && !layer["revalidation"].contains("drawn_after_the_loop"))
      continue;
    EXPECT_EQ(ToJson(PerformanceLayerOf(record)).dump(), layer.dump())
        << record.created_at << "\n"
        << json::diff(layer, ToJson(PerformanceLayerOf(layer))).dump(1);
    ++layers;
  }
  EXPECT_GE(layers, 10);
}

}  // namespace
}  // namespace ptxbench
