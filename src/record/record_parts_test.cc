// The parts of the record the evaluator writes besides the layers of judgement: the task, the
// candidate, the toolchain, the build layer and the sandbox. Each round-trips through the
// record, and writes the JSON the evaluator wrote with raw keys.
#include <gtest/gtest.h>

#include "record/environment_layers.h"
#include "record/record.h"
#include "record/record_files_for_test.h"
#include "record/stage_seconds.h"
#include "record/subject.h"

namespace ptxbench {
namespace {

using nlohmann::json;

EvaluationRecord WrittenAndRead(const EvaluationRecord& rec) {
  return FromJson(json::parse(rec.ToJson().dump()));
}

TaskDetail FlashInferTask() {
  TaskDetail t;
  t.definition = "gqa_paged_decode_h32_kv8_d128_ps1";
  t.family = "gqa_paged_decode";
  t.workload_id = "6458ded0";
  t.axes = {{"batch_size", 4}, {"num_pages", 512}};
  t.flops = 2.5e9;
  t.required_families = {"gmma"};
  t.from_flashinfer = true;
  t.flashinfer_trace_set = "flashinfer-trace";
  t.flashinfer_file = "definitions/gqa.json";
  t.flashinfer_definition = t.definition;
  t.flashinfer_workload = {{"uuid", "6458ded0"}, {"axes", {{"batch_size", 4}}}};
  return t;
}

TEST(RecordParts, TheTaskRoundTripsAndKeepsItsFormat) {
  EvaluationRecord rec;
  rec.task = ToJson(FlashInferTask());
  EXPECT_EQ(TaskDetailOf(WrittenAndRead(rec)), FlashInferTask());
  const json expected = json::parse(R"({
    "definition": "gqa_paged_decode_h32_kv8_d128_ps1", "family": "gqa_paged_decode",
    "workload_id": "6458ded0", "axes": {"batch_size": 4, "num_pages": 512}, "flops": 2.5e9,
    "required_families": ["gmma"],
    "flashinfer_bench": {"trace_set": "flashinfer-trace", "file": "definitions/gqa.json",
                         "definition": "gqa_paged_decode_h32_kv8_d128_ps1",
                         "workload": {"uuid": "6458ded0", "axes": {"batch_size": 4}}}})");
  EXPECT_EQ(rec.task, expected) << json::diff(expected, rec.task).dump(1);
  EXPECT_TRUE(rec.task["flops"].is_number_float());
  // Our own task: no flashinfer_bench, and no required family is an empty list.
  TaskDetail own;
  own.definition = "gemm_bf16";
  EXPECT_EQ(ToJson(own).dump(), R"({"axes":{},"definition":"gemm_bf16","family":"","flops":0.0,)"
                                R"("required_families":[],"workload_id":""})");
  // Their workload missing from the link: written as null, read as null.
  TaskDetail unlinked = FlashInferTask();
  unlinked.flashinfer_workload = nullptr;
  EXPECT_TRUE(ToJson(unlinked)["flashinfer_bench"]["workload"].is_null());
  rec.task = ToJson(unlinked);
  EXPECT_EQ(TaskDetailOf(WrittenAndRead(rec)), unlinked);
}

TEST(RecordParts, TheCandidateRoundTripsAndKeepsItsFormat) {
  const CandidateDetail c{.sha256 = "ab12", .abi = "tvm_ffi", .path = "k.cu", .bytes = 1234};
  EvaluationRecord rec;
  rec.candidate = ToJson(c);
  EXPECT_EQ(CandidateDetailOf(WrittenAndRead(rec)), c);
  EXPECT_EQ(rec.candidate.dump(),
            R"({"abi":"tvm_ffi","bytes":1234,"path":"k.cu","sha256":"ab12"})");
  EXPECT_TRUE(rec.candidate["bytes"].is_number_unsigned());
}

// A FlashInfer-Bench solution judged through its CUDA file: eval adds where it came from.
TEST(RecordParts, ASolutionCandidateRoundTripsAndKeepsItsFormat) {
  CandidateDetail c{.sha256 = "ab12", .abi = "tvm_ffi", .path = "candidate.cu", .bytes = 9};
  c.solution = CandidateDetail::Solution{"s.json", "upstream_gemm", "tvm-ffi", "kernel.cu"};
  EvaluationRecord rec;
  rec.candidate = ToJson(c);
  EXPECT_EQ(CandidateDetailOf(WrittenAndRead(rec)), c);
  EXPECT_EQ(
      rec.candidate["solution"].dump(),
      R"({"binding":"tvm-ffi","entry_file":"kernel.cu","file":"s.json","name":"upstream_gemm"})");
}

TEST(RecordParts, TheToolchainRoundTripsAndKeepsItsFormat) {
  ToolchainLayer t;
  t.nvcc = "Cuda compilation tools, release 12.8";
  t.gpu = {{"name", "NVIDIA H100 80GB HBM3"}, {"uuid", "GPU-1"}, {"sm_count", 132}};
  EvaluationRecord rec;
  rec.toolchain = ToJson(t);
  EXPECT_EQ(ToolchainLayerOf(WrittenAndRead(rec)), t);
  EXPECT_EQ(rec.toolchain.dump(),
            R"({"gpu":{"name":"NVIDIA H100 80GB HBM3","sm_count":132,"uuid":"GPU-1"},)"
            R"("nvcc":"Cuda compilation tools, release 12.8"})");
  const ToolchainDetail d = ToolchainDetailOf(rec);
  EXPECT_EQ(d.gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.nvcc, "Cuda compilation tools, release 12.8");
  EXPECT_TRUE(d.present);
  EXPECT_EQ(t.GpuId(), "GPU-1");
  t.gpu = {{"pci_bus_id", "00000000:19:00.0"}};
  EXPECT_EQ(t.GpuId(), "00000000:19:00.0");
  EXPECT_EQ(ToolchainLayer().GpuId(), "");
  // Built, no child yet: nvcc alone.
  ToolchainLayer built;
  built.nvcc = "12.8";
  EXPECT_EQ(ToJson(built).dump(), R"({"nvcc":"12.8"})");
  EXPECT_FALSE(ToolchainDetailOf(EvaluationRecord()).present);
}

TEST(RecordParts, TheBuildLayerKeepsTheCompilersAccountBesideNeeded) {
  BuildLayer b;
  b.compiler = {{"outcome", "built"}, {"errors", ""}, {"shared_object_sha256", "cd34"}};
  EvaluationRecord rec;
  rec.build = ToJson(b);
  EXPECT_EQ(BuildLayerOf(WrittenAndRead(rec)), b);
  EXPECT_FALSE(rec.build.contains("needed"));  // before the link check
  b.needed = std::vector<std::string>{"libcudart.so.12", "libc.so.6"};
  rec.build = ToJson(b);
  EXPECT_EQ(BuildLayerOf(WrittenAndRead(rec)), b);
  EXPECT_EQ(rec.build.dump(),
            R"({"errors":"","needed":["libcudart.so.12","libc.so.6"],"outcome":"built",)"
            R"("shared_object_sha256":"cd34"})");
  EXPECT_EQ(WrittenAndRead(rec).Build().shared_object_sha256, "cd34");
}

TEST(RecordParts, TheSandboxRoundTripsAndKeepsItsFormat) {
  SandboxLayer s;
  s.probe = {{"state", "on"}};
  s.candidate_child = {{"state", "on"}, {"user", "65534:65534"}};
  s.inside = {{"event", "confinement"}, {"net", "loopback only"}};
  s.health_probe = SandboxLayer::HealthProbe{.healthy = false, .why = "no GPU: gone"};
  s.gpu_lock = "/run/ptxbench/gpu-GPU-1.lock";
  s.record_strings_cut = 3;
  EvaluationRecord rec;
  rec.sandbox = ToJson(s);
  EXPECT_EQ(SandboxLayerOf(WrittenAndRead(rec)), s);
  const json expected = json::parse(R"({
    "probe": {"state": "on"}, "candidate_child": {"state": "on", "user": "65534:65534"},
    "inside": {"event": "confinement", "net": "loopback only"},
    "health_probe": {"healthy": false, "why": "no GPU: gone"},
    "gpu_lock": "/run/ptxbench/gpu-GPU-1.lock", "record_strings_cut": 3})");
  EXPECT_EQ(rec.sandbox, expected) << json::diff(expected, rec.sandbox).dump(1);
  // A healthy GPU has no why; the record starts with the probe alone.
  SandboxLayer healthy;
  healthy.health_probe = SandboxLayer::HealthProbe{.healthy = true, .why = ""};
  EXPECT_EQ(ToJson(healthy).dump(), R"({"health_probe":{"healthy":true}})");
  SandboxLayer started;
  started.probe = {{"state", "off"}};
  EXPECT_EQ(ToJson(started).dump(), R"({"probe":{"state":"off"}})");
}

TEST(RecordParts, ReadersAreLenient) {
  EvaluationRecord rec;
  for (const json& part : {json(), json::array({1}), json("x"),
                           json{{"gpu", 3},
                                {"nvcc", 4},
                                {"needed", "libc"},
                                {"gpu_lock", 1},
                                {"health_probe", "yes"},
                                {"record_strings_cut", -2},
                                {"axes", 5},
                                {"bytes", "many"},
                                {"flashinfer_bench", 7}}}) {
    rec.task = rec.candidate = rec.toolchain = rec.build = rec.sandbox = part;
    const TaskDetail task = TaskDetailOf(rec);
    EXPECT_TRUE(task.axes.empty());
    EXPECT_FALSE(task.from_flashinfer);
    EXPECT_EQ(CandidateDetailOf(rec).bytes, 0u);
    EXPECT_EQ(ToolchainLayerOf(rec), ToolchainLayer());
    EXPECT_FALSE(BuildLayerOf(rec).needed);
    const SandboxLayer s = SandboxLayerOf(rec);
    EXPECT_FALSE(s.gpu_lock || s.health_probe || s.record_strings_cut) << part.dump();
  }
}

// Every record kept in the repository: each part read into its structure and written again is
// the part as it was. (The candidate is left out: records from before the ABI was written
// lack it, and one kept the candidate's source beside it.)
TEST(RecordParts, EveryRecordFilesPartsRoundTrip) {
  if (!std::getenv("PTXBENCH_SOURCE_DIR")) GTEST_SKIP() << "PTXBENCH_SOURCE_DIR is not set";
  const std::vector<EvaluationRecord> records = RecordsInRepository();
  ASSERT_GE(records.size(), 10u);
  for (const EvaluationRecord& rec : records) {
    EXPECT_TRUE(ToJson(TaskDetailOf(rec)) == rec.task)
        << json::diff(rec.task, ToJson(TaskDetailOf(rec))).dump(1);
    for (const auto& [written, again] : {std::pair{&rec.toolchain, ToJson(ToolchainLayerOf(rec))},
                                         std::pair{&rec.build, ToJson(BuildLayerOf(rec))},
                                         std::pair{&rec.sandbox, ToJson(SandboxLayerOf(rec))}})
      if (!written->is_null()) {
        EXPECT_TRUE(again == *written) << json::diff(*written, again).dump(1);
      }
  }
}

TEST(RecordParts, TheTotalIsTheStageOfThatName) {
  EvaluationRecord rec;
  rec.stage_seconds[stage_key::kBuild] = 1.5;
  EXPECT_FALSE(rec.TotalSeconds());
  rec.stage_seconds[stage_key::kTotal] = 4;
  EXPECT_EQ(WrittenAndRead(rec).TotalSeconds(), 4);
  EXPECT_EQ(rec.ToJson()["stage_seconds"].dump(), R"({"build":1.5,"total":4.0})");
}

}  // namespace
}  // namespace ptxbench
