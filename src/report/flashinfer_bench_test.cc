// FlashInfer-Bench files: a trace made from a real H200 record carries their documented fields
// and words; solutions are read or refused with a reason; `eval` takes a solution file.
#include "report/flashinfer_bench.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "common/error.h"
#include "common/files.h"
#include "common/subprocess.h"
#include "evaluate/evaluate.h"
#include "task/definition.h"

namespace ptxbench {
namespace {

using nlohmann::json;

json H200Record() {
  return json::parse(ReadFile(std::string(PTXBENCH_SOURCE_DIR) +
                              "/docs/gpu-runs/2026-12-05-h200-issue19/cost-after-3.json"));
}

TEST(FlashInferBench, APassedRecordBecomesATraceWithTheirFields) {
  json r = H200Record();
  json t = FlashInferTrace(r, {"M"}, {"A", "B"}, "wgmma_tma");
  // Their Trace: exactly these keys at the top, in the workload and in the evaluation.
  std::set<std::string> top, wl, ev;
  for (const auto& [k, v] : t.items()) top.insert(k);
  for (const auto& [k, v] : t["workload"].items()) wl.insert(k);
  for (const auto& [k, v] : t["evaluation"].items()) ev.insert(k);
  EXPECT_EQ(top, (std::set<std::string>{"definition", "workload", "solution", "evaluation"}));
  EXPECT_EQ(wl, (std::set<std::string>{"uuid", "axes", "inputs"}));
  EXPECT_EQ(ev, (std::set<std::string>{"status", "environment", "timestamp", "log", "correctness",
                                       "performance"}));
  EXPECT_EQ(t["definition"], "gemm_n7168_k5120");
  EXPECT_EQ(t["workload"]["uuid"], "94920358-01a8-4c5b-9209-3103fd490e94");
  EXPECT_EQ(t["workload"]["axes"], (json{{"M", 8192}}));  // the variable axes only
  EXPECT_EQ(t["workload"]["inputs"]["A"], (json{{"type", "random"}}));
  EXPECT_EQ(t["evaluation"]["status"], "PASSED");
  EXPECT_EQ(t["evaluation"]["environment"]["hardware"], "NVIDIA H200");
  const json& p = t["evaluation"]["performance"];
  EXPECT_NEAR(p["latency_ms"].get<double>(), 0.987849, 1e-9);  // the candidate's median
  EXPECT_NEAR(p["reference_latency_ms"].get<double>(), (0.7310505 + 0.7318345) / 2, 1e-9);
  EXPECT_DOUBLE_EQ(p["speedup_factor"].get<double>(), r["performance"]["speedup"].get<double>());
  EXPECT_GT(t["evaluation"]["correctness"]["max_absolute_error"].get<double>(), 0);
  // Round trip: what their reader would take back out is what we wrote.
  json back = json::parse(t.dump());
  EXPECT_EQ(back, t);
}

TEST(FlashInferBench, StatusWordsFollowTheirs) {
  auto word = [](const char* status) { return FlashInferStatus(json{{"status", status}}); };
  EXPECT_EQ(word("PASSED"), "PASSED");
  EXPECT_EQ(word("INCORRECT"), "INCORRECT_NUMERICAL");
  EXPECT_EQ(word("COMPILE_ERROR"), "COMPILE_ERROR");
  EXPECT_EQ(word("REJECTED"), "COMPILE_ERROR");
  EXPECT_EQ(word("TIMEOUT"), "TIMEOUT");
  EXPECT_EQ(word("MEMORY_ERROR"), "RUNTIME_ERROR");
  EXPECT_EQ(word("RULE_VIOLATION"), "RUNTIME_ERROR");
  EXPECT_EQ(word("INFRA_ERROR"), "");
  // An incorrect verdict carries correctness, never performance; a failure neither.
  json r = H200Record();
  r["status"] = "INCORRECT";
  json t = FlashInferTrace(r, {"M"}, {"A", "B"}, "s");
  EXPECT_TRUE(t["evaluation"].contains("correctness"));
  EXPECT_FALSE(t["evaluation"].contains("performance"));
  r["status"] = "TIMEOUT";
  t = FlashInferTrace(r, {"M"}, {"A", "B"}, "s");
  EXPECT_FALSE(t["evaluation"].contains("correctness"));
  EXPECT_FALSE(t["evaluation"].contains("performance"));
  r["status"] = "INFRA_ERROR";
  EXPECT_THROW(FlashInferTrace(r, {"M"}, {"A", "B"}, "s"), Error);
}

json Solution(const std::string& source) {
  return {{"name", "upstream_gemm"},
          {"definition", "gemm_n128_k2048"},
          {"author", "someone"},
          {"spec",
           {{"language", "cuda"},
            {"binding", "tvm-ffi"},
            {"target_hardware", {"H100"}},
            {"entry_point", "kernel.cu::run"},
            {"dependencies", json::array()},
            {"destination_passing_style", true}}},
          {"sources", {{{"path", "kernel.cu"}, {"content", source}}}}};
}

TEST(FlashInferBench, SolutionsAreReadOrRefusedWithAReason) {
  FlashInferSolution s = ReadFlashInferSolution(Solution("__global__ void k() {}\n"));
  EXPECT_EQ(s.entry_file, "kernel.cu");
  EXPECT_EQ(s.binding, "tvm-ffi");
  EXPECT_EQ(s.source, "__global__ void k() {}\n");
  auto refused = [](json j, const std::string& why) {
    try {
      ReadFlashInferSolution(j);
      ADD_FAILURE() << "accepted: " << j.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  json triton = Solution("x");
  triton["spec"]["language"] = "triton";
  refused(triton, "only cuda solutions");
  json no_symbol = Solution("x");
  no_symbol["spec"]["entry_point"] = "kernel.cu";
  refused(no_symbol, "not FILE::SYMBOL");
  json missing = Solution("x");
  missing["sources"][0]["path"] = "other.cu";
  refused(missing, "no source \"kernel.cu\"");
  json outside = Solution("x");
  outside["sources"].push_back({{"path", "../secret.h"}, {"content", "y"}});
  refused(outside, "not a relative path inside the solution");
  json quote = Solution("x");
  quote["sources"].push_back({{"path", "a.h\"\nint evil;"}, {"content", "y"}});
  refused(quote, "\"a.h\\\"\\nint evil;\" is not a relative path");
  json twice = Solution("x");
  twice["sources"].push_back(twice["sources"][0]);
  refused(twice, "gives \"kernel.cu\" twice");
}

// FlashInfer-Bench's solutions come as several files (a header, the kernels, a binding file);
// the entry file and what it includes of them become one translation unit.
TEST(FlashInferBench, SolutionFilesBecomeOneTranslationUnit) {
  json s = Solution("#include \"kernel.h\"\n#include <cuda_runtime.h>\nint main_part;\n");
  s["sources"].push_back(
      {{"path", "kernel.h"},
       {"content", "#pragma once\n#include \"detail/tile.cuh\"\nint from_header;\n"}});
  s["sources"].push_back(
      {{"path", "detail/tile.cuh"}, {"content", "#include \"../kernel.h\"\nint from_tile;\n"}});
  s["sources"].push_back({{"path", "unused.h"}, {"content", "int never;\n"}});
  FlashInferSolution f = ReadFlashInferSolution(s);
  // kernel.h inlined where it was included, its include of tile.cuh inside it, tile.cuh's
  // include of kernel.h (already being inlined) dropped as a guard would; system includes stay.
  EXPECT_EQ(f.source,
            "#line 1 \"kernel.h\"\n#pragma once\n#line 1 \"tile.cuh\"\n#line 2 \"tile.cuh\"\n"
            "int from_tile;\n#line 3 \"kernel.h\"\nint from_header;\n#line 2 \"kernel.cu\"\n"
            "#include <cuda_runtime.h>\nint main_part;\n");
  EXPECT_EQ(f.source.find("never"), std::string::npos);  // a header nobody includes is left out

  // A second source file the entry does not include would be a second translation unit.
  json binding_file = Solution("int k;\n");
  binding_file["sources"].push_back({{"path", "main.cpp"}, {"content", "int m;\n"}});
  try {
    ReadFlashInferSolution(binding_file);
    ADD_FAILURE() << "main.cpp accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("main.cpp is not included by its entry file kernel.cu"),
              std::string::npos)
        << e.what();
  }
}

// An entry point of another name is TVM-FFI's export of that name, exported as run; without a
// binding (ptxbench's C ABI) only run can be the entry point.
TEST(FlashInferBench, ATvmFfiEntryPointOfAnotherNameIsExportedAsRun) {
  json s = Solution(
      "// exported like upstream's TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, ...), under another name\n"
      "void impl(int x) {}\nTVM_FFI_DLL_EXPORT_TYPED_FUNC( gemm_fp16 , impl);\n");
  s["spec"]["entry_point"] = "kernel.cu::gemm_fp16";
  FlashInferSolution f = ReadFlashInferSolution(s);
  EXPECT_EQ(f.entry_symbol, "gemm_fp16");
  EXPECT_NE(f.source.find("TVM_FFI_DLL_EXPORT_TYPED_FUNC( run , impl);"), std::string::npos)
      << f.source;
  auto refusal = [](const json& j) {
    try {
      ReadFlashInferSolution(j);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  json both = s;
  both["sources"][0]["content"] =
      s["sources"][0]["content"].get<std::string>() + "TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, impl);\n";
  EXPECT_NE(refusal(both).find("ambiguous"), std::string::npos) << refusal(both);
  json absent = s;
  absent["spec"]["entry_point"] = "kernel.cu::other";
  EXPECT_NE(refusal(absent).find("not exported once"), std::string::npos) << refusal(absent);
  json not_a_name = s;
  not_a_name["spec"]["entry_point"] = "kernel.cu::gemm(.*)";
  EXPECT_NE(refusal(not_a_name).find("names no C identifier"), std::string::npos)
      << refusal(not_a_name);
  // Lines and comments near the size limit are scanned without recursion (a regex would run
  // out of stack on them): an unterminated quoted include stays as it is, and an export whose
  // name follows a long comment is still found.
  json long_lines = s;
  long_lines["sources"][0]["content"] =
      "#include \"" + std::string(900000, 'a') + "\n" + "void impl(int x) {}\n" +
      "TVM_FFI_DLL_EXPORT_TYPED_FUNC(/*" + std::string(100000, ' ') + "*/ gemm_fp16, impl);\n";
  FlashInferSolution big = ReadFlashInferSolution(long_lines);
  EXPECT_NE(big.source.find("run, impl);"), std::string::npos);
  EXPECT_EQ(big.source.rfind("#include \"aaaa", 0), 0u);
  json native = s;
  native["spec"].erase("binding");
  EXPECT_NE(refusal(native).find("ptxbench's C function run"), std::string::npos)
      << refusal(native);
}

// `eval` takes a solution file: its definition must be --task's; its source passes the same
// policy; the record names the solution. Without a GPU the verdict is INFRA_ERROR: no trace.
TEST(FlashInferBench, EvalTakesASolutionFile) {
  const char* bin = std::getenv("PTXBENCH_BIN");
  if (!bin) GTEST_SKIP() << "PTXBENCH_BIN is not set";
  ScratchDir dir("fib-test");
  const std::string kernel =
      ReadFile(std::string(PTXBENCH_SOURCE_DIR) + "/controls/gemm/naive_correct.cu");
  WriteFileAtomic(dir.File("s.json"), Solution(kernel).dump());
  CommandResult r = RunCommand({bin, "eval", dir.File("s.json"), "--task", "gemm_n2048_k4096",
                                "--quiet", "--json", dir.File("r.json")},
                               std::chrono::seconds(120));
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("the solution is for gemm_n128_k2048, not --task gemm_n2048_k4096"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(FileExists(dir.File("r.json")));
  WriteFileAtomic(dir.File("empty.json"), Solution("   \n").dump());
  r = RunCommand({bin, "eval", dir.File("empty.json"), "--task", "gemm_n128_k2048", "--quiet"},
                 std::chrono::seconds(120));
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("empty.json: the solution's kernel.cu: the source is empty"),
            std::string::npos)
      << r.output;

  r = RunCommand({bin, "eval", dir.File("s.json"), "--task", "gemm_n128_k2048", "--workload",
                  "M=93", "--quiet", "--sanitize", "never", "--json", dir.File("r.json"), "--trace",
                  dir.File("t.jsonl")},
                 std::chrono::seconds(300));
  ASSERT_TRUE(FileExists(dir.File("r.json"))) << r.output;
  json rec = json::parse(ReadFile(dir.File("r.json")));
  EXPECT_EQ(rec["candidate"]["solution"]["name"], "upstream_gemm");
  EXPECT_EQ(rec["candidate"]["solution"]["file"], dir.File("s.json"));
  if (rec["status"] == "INFRA_ERROR") {  // no GPU here: said, and no trace
    EXPECT_FALSE(FileExists(dir.File("t.jsonl")));
    EXPECT_NE(r.output.find("no trace written"), std::string::npos) << r.output;
  } else {  // a GPU: the trace is their line
    json t = json::parse(ReadFile(dir.File("t.jsonl")));
    EXPECT_EQ(t["solution"], "upstream_gemm");
    EXPECT_EQ(t["evaluation"]["status"], "PASSED");
  }
}

// A task read from a FlashInfer-Bench trace set: the record links back to their definition and
// workload, and the trace names both exactly (their axis names, their inputs, the scalar too);
// read back, the trace's definition and uuid resolve to the same task and workload.
TEST(FlashInferBench, ATaskFromTheirTraceSetGivesTheirTraceBack) {
  const std::string set = std::string(PTXBENCH_SOURCE_DIR) + "/tests/fixtures/flashinfer-trace-set";
  Catalog catalog = Catalog::Load(set);
  const Definition& d = catalog.Find("attn_fwd_h8_d64_causal");
  ScratchDir dir("fib-trace");
  // Rejected by screening: a verdict on the candidate, reached without nvcc or a GPU.
  WriteFileAtomic(dir.File("k.cu"), "#include <cublas_v2.h>\n__global__ void k() {}\n");
  EvalRequest req;
  req.kernel_path = dir.File("k.cu");
  req.definition = &d;
  req.workload = &d.FindWorkload("5e2d8c4b-1a3f-4b6d-9c8e-7f1a2b3c4d33");
  req.cache_root = dir.File("cache");
  const json r = Evaluate(req).ToJson();
  ASSERT_EQ(r["status"], "REJECTED") << r.dump(2);
  const json& link = r["task"]["flashinfer_bench"];
  EXPECT_EQ(link["definition"], "attn_fwd_h8_d64_causal");
  EXPECT_EQ(link["file"], set + "/definitions/attention/attn_fwd_h8_d64_causal.json");
  EXPECT_EQ(link["trace_set"], set);
  EXPECT_EQ(r["task"]["workload_id"], "5e2d8c4b-1a3f-4b6d-9c8e-7f1a2b3c4d33");
  EXPECT_EQ(r["task"]["axes"]["S"], 128);  // ours, for the harness

  const json t = FlashInferTrace(r, d.variable_axes, {"Q", "K", "V"}, "my_solution");
  EXPECT_EQ(t["definition"], "attn_fwd_h8_d64_causal");
  EXPECT_EQ(t["solution"], "my_solution");
  EXPECT_EQ(t["workload"], (json{{"uuid", "5e2d8c4b-1a3f-4b6d-9c8e-7f1a2b3c4d33"},
                                 {"axes", {{"seq_len", 128}}},
                                 {"inputs",
                                  {{"q", {{"type", "random"}}},
                                   {"k", {{"type", "random"}}},
                                   {"v", {{"type", "random"}}},
                                   {"sm_scale", {{"type", "scalar"}, {"value", 0.125}}}}}}));
  EXPECT_EQ(t["evaluation"]["status"], "COMPILE_ERROR");
  const json back = json::parse(t.dump());
  EXPECT_EQ(back, t);
  const Definition& again = catalog.Find(back["definition"].get<std::string>());
  EXPECT_EQ(&again.FindWorkload(back["workload"]["uuid"].get<std::string>()), req.workload);

  // A passed record of a task from their set: their workload, and the timing.
  json passed = H200Record();
  const Definition& g = catalog.Find("gemm_n256_k512");
  passed["task"]["flashinfer_bench"] = {
      {"trace_set", set},
      {"file", g.flashinfer->file},
      {"definition", g.name},
      {"workload", g.flashinfer->workloads.at("7c1e9d3a-2b4f-4a6c-8e0d-1f3a5b7c9d22")}};
  const json pt = FlashInferTrace(passed, {"M"}, {"A", "B"}, "s");
  EXPECT_EQ(pt["definition"], "gemm_n256_k512");
  EXPECT_EQ(pt["workload"]["uuid"], "7c1e9d3a-2b4f-4a6c-8e0d-1f3a5b7c9d22");
  EXPECT_EQ(pt["workload"]["axes"], (json{{"M", 300}, {"N", 256}, {"K", 512}}));
  EXPECT_EQ(pt["evaluation"]["status"], "PASSED");
  EXPECT_TRUE(pt["evaluation"].contains("performance"));
}

}  // namespace
}  // namespace ptxbench
