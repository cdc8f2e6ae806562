// The evaluation's orchestration and statuses, with a fake child standing in for the GPU
// (tests/fake_child.cc) and the real screen and nvcc in front of it.
#include "evaluate/evaluate.h"
#include "evaluate/baseline_run.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>

#include "common/files.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "run/confine.h"
#include "run/gpu_lock.h"

namespace ptxbench {
namespace {

using nlohmann::json;

const char* kTrivialKernel = R"(#include <cuda_bf16.h>
extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C,
                   int M, int N, int K, cudaStream_t stream) { return 0; }
)";

class EvaluateTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The fake child reads its mode from PTXBENCH_FAKE_MODE, which a production allow-list
    // keeps from every confined child.
    AllowChildEnvironmentForTests("PTXBENCH_FAKE_*");
  }
  void SetUp() override {
    if (!FindProgram("nvcc")) GTEST_SKIP() << "nvcc not found";
    catalog_ = Catalog::Load(std::string(PTXBENCH_SOURCE_DIR) + "/tasks");
    kernel_ = dir_.File("kernel.cu");
    WriteFileAtomic(kernel_, kTrivialKernel);
  }
  // The request every test starts from: the kernel file on gemm_n128_k2048 M=93 through the
  // fake child in `mode`, a 3 s deadline, the test's own caches.
  EvalRequest Request(const std::string& mode) {
    ::setenv("PTXBENCH_FAKE_MODE", mode.c_str(), 1);
    EvalRequest r;
    r.kernel_path = kernel_;
    r.definition = &catalog_.Find("gemm_n128_k2048");
    r.workload = &r.definition->FindWorkload("M=93");
    r.options.timeout = std::chrono::seconds(3);
    r.cache_root = dir_.File("cache");
    r.executable = FAKE_CHILD_PATH;
    return r;
  }
  EvaluationRecord Eval(const std::string& mode, const std::string& source = "") {
    if (!source.empty()) WriteFileAtomic(kernel_, source);
    EvalRequest r = Request(mode);
    r.options.sanitize = SanitizeMode::kNever;
    r.options.warmup = 2;
    r.options.iterations = 5;
    r.options.timing_timeout = std::chrono::seconds(3);
    return Evaluate(r);
  }
  ScratchDir dir_{"evaluate-test"};
  Catalog catalog_;
  std::string kernel_;
};

TEST_F(EvaluateTest, CorrectCandidatePassesAndTheReferenceIsCachedAfterwards) {
  EvaluationRecord r = Eval("correct");
  EXPECT_EQ(r.status, Status::kPassed) << r.message;
  EXPECT_NE(r.message.find("correct on 3 trials"), std::string::npos);
  EXPECT_EQ(r.correctness["reference"]["computed_trials"], 3);
  EXPECT_EQ(r.correctness["trial_results"].size(), 3u);
  EXPECT_EQ(r.memcheck["state"], "skipped");
  EXPECT_EQ(r.task["workload_id"], "6458ded0-a0d3-4382-abcd-f2815b852ae9");
  json j = r.ToJson();
  EXPECT_EQ(j["schema"], "ptxbench.evaluation/1");
  for (const char* stage : {"screen", "build", "reference", "run", "compare", "timing", "total"})
    EXPECT_TRUE(j["stage_seconds"].contains(stage)) << stage;
  // The timing layer: the fake takes 1 ms per call against a 2 ms baseline.
  EXPECT_EQ(r.performance["state"], "ran");
  EXPECT_NEAR(r.performance["speedup"].get<double>(), 2.0, 1e-9);
  EXPECT_EQ(r.performance["candidate"]["count"], 5);
  // The last call on each of the 3 buffer sets and 2 more drawn at random.
  EXPECT_EQ(r.performance["revalidation"]["calls"].size(), 3u);  // drawn after the loop
  EXPECT_NE(r.message.find("2x the baseline"), std::string::npos) << r.message;
  EvaluationRecord again = Eval("correct");
  EXPECT_EQ(again.status, Status::kPassed);
  EXPECT_EQ(again.correctness["reference"]["computed_trials"], 0);
  EXPECT_EQ(again.correctness["reference"]["cached_trials"], 3);
  EXPECT_TRUE(again.build["cache_hit"].get<bool>());
}

// A compute-sanitizer that runs its target but writes no report, as when the candidate's
// process unlinks or truncates the report in its own folder (controls/adversarial/
// memcheck_report_unlink.cu does it on the GPU).
TEST_F(EvaluateTest, AMissingMemoryCheckReportIsTheCandidatesUnlessTheGpuIsUnhealthy) {
  const std::string bin = dir_.File("bin");
  MakeDirs(bin);
  WriteFileAtomic(bin + "/compute-sanitizer",
                  "#!/bin/sh\n"
                  "# options all take a value; the first word that is not one is the target\n"
                  "while [ $# -gt 0 ]; do\n"
                  "  case \"$1\" in --help) echo '--padding --kernel-name-exclude'; exit 0;;\n"
                  "  --*) shift 2;; *) break;; esac\n"
                  "done\n"
                  "exec \"$@\"\n");
  ASSERT_EQ(::chmod((bin + "/compute-sanitizer").c_str(), 0755), 0);
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", (bin + ":" + old_path).c_str(), 1);
  auto eval = [&](const std::string& mode) {
    EvalRequest r = Request(mode);
    r.options.sanitize = SanitizeMode::kAlways;
    r.options.memcheck_timeout = std::chrono::seconds(10);
    r.options.timing = false;
    return Evaluate(r);
  };
  EvaluationRecord healthy = eval("correct");
  EvaluationRecord unhealthy = eval("unhealthy_probe");
  ::setenv("PATH", old_path.c_str(), 1);
  // Before: INFRA_ERROR whatever the GPU's state, a failure laundered as the harness's.
  EXPECT_EQ(healthy.status, Status::kRuntimeError) << healthy.message;
  EXPECT_NE(healthy.message.find("did not produce a report"), std::string::npos) << healthy.message;
  EXPECT_EQ(healthy.memcheck["state"], "failed");
  EXPECT_EQ(unhealthy.status, Status::kInfraError) << unhealthy.message;
}

// A cuobjdump that fails on the candidate's object (as one that placed bytes of its own in
// .nv_fatbin makes it fail): without the object's functions the foreign-kernel check cannot
// run, so the evaluation ends there. Whose failure it is, the same tool on a harness-built
// object decides: it reads that one (the candidate's: RULE_VIOLATION uninspectable, no GPU
// layer, no speed), or it fails there too (the harness's: INFRA_ERROR).
TEST_F(EvaluateTest, AnObjectTheDisassemblerCannotReadEarnsNothing) {
  // Two fakes, each in a folder of its own (the tool runs confined, with no variable of ours).
  auto fake = [&](const std::string& name, bool reads_the_probe) {
    const std::string bin = dir_.File(name) + "/bin";
    MakeDirs(bin);
    std::string script = "#!/bin/sh\nfor a; do object=\"$a\"; done\n";
    if (reads_the_probe)
      script +=
          "if grep -q inspection_probe \"$object\"; then\n"
          "  case \"$1\" in -sass) printf '\\tcode for sm_90a\\n\\t\\tFunction : "
          "_Z16inspection_probePf\\n        /*0000*/   EXIT ;\\n';; esac\n"
          "  exit 0\n"
          "fi\n";
    script += "echo \"cuobjdump fatal   : Invalid fatbin header in '$object'\" >&2\nexit 1\n";
    WriteFileAtomic(bin + "/cuobjdump", script);
    EXPECT_EQ(::chmod((bin + "/cuobjdump").c_str(), 0755), 0);
    return bin;
  };
  const std::string ours = fake("reads-ours", true);
  const std::string broken = fake("reads-none", false);
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", (ours + ":" + old_path).c_str(), 1);
  EvaluationRecord candidates = Eval("correct");
  ::setenv("PATH", (broken + ":" + old_path).c_str(), 1);
  EvaluationRecord harness = Eval("correct");
  ::setenv("PATH", old_path.c_str(), 1);

  EXPECT_EQ(candidates.status, Status::kRuleViolation) << candidates.message;
  EXPECT_EQ(candidates.reason, "uninspectable");
  EXPECT_NE(candidates.message.find("Invalid fatbin header"), std::string::npos)
      << candidates.message;
  EXPECT_EQ(candidates.instructions["static"]["state"], "failed");
  EXPECT_EQ(candidates.instructions["static_probe"]["state"], "ran");
  // Before: the GPU layers ran with the foreign-kernel check skipped, and the speed counted.
  EXPECT_FALSE(candidates.performance.contains("speedup")) << candidates.performance.dump();
  EXPECT_FALSE(candidates.correctness.contains("trial_results"));

  EXPECT_EQ(harness.status, Status::kInfraError) << harness.message;
  EXPECT_EQ(harness.instructions["static_probe"]["state"], "failed");
  EXPECT_NE(harness.message.find("harness-built object too"), std::string::npos) << harness.message;
}

// Bytes placed in .nv_fatbin through a section attribute spelled by token pasting: the source
// screen cannot see it (it reads no macro expansion), the build's comparison with the fatbins
// nvcc kept does. Nothing of the object is judged further: no inspection, no GPU layer.
TEST_F(EvaluateTest, DeviceCodeTheSourcePlacedItselfIsARuleViolation) {
  const std::string source = std::string(R"(
#define PASTE(a, b) a##b
__attribute__((used, PASTE(sec, tion)(".nv_fatbin"))) static const unsigned int forged[8] = {
    0xBA55ED50u, 0x00100001u, 16u, 0u, 1u, 2u, 3u, 4u};
)") + kTrivialKernel;
  EvaluationRecord r = Eval("correct", source);
  EXPECT_EQ(r.screening["passed"], true) << r.screening.dump();
  EXPECT_EQ(r.status, Status::kRuleViolation) << r.message;
  EXPECT_EQ(r.reason, "foreign_device_code");
  EXPECT_NE(r.message.find("not one nvcc made"), std::string::npos) << r.message;
  EXPECT_NE(r.build.value("foreign_device_code", ""), "");
  EXPECT_FALSE(r.instructions.contains("static")) << r.instructions.dump();
  EXPECT_FALSE(r.correctness.contains("trial_results"));
  EXPECT_FALSE(r.performance.contains("speedup"));
  // The same source without the placed bytes passes (the fake child stands in for the GPU).
  EXPECT_EQ(Eval("correct", kTrivialKernel).status, Status::kPassed);
}

struct Case {
  const char* mode;
  Status status;
  const char* reason;
  const char* message_part;
};

TEST_F(EvaluateTest, EachMisbehaviourGetsItsPreciseStatus) {
  const Case cases[] = {
      {"wrong", Status::kIncorrect, "numerical", "outside tolerance"},
      {"unwritten", Status::kIncorrect, "unwritten", "never written"},
      {"nan", Status::kIncorrect, "non_finite", "NaN or Inf"},
      {"modify_inputs", Status::kRuleViolation, "inputs_modified", "modified its inputs"},
      {"crash", Status::kRuntimeError, "", "signal 11"},
      {"hang", Status::kTimeout, "", "did not finish within 3 s"},
      {"exit_early", Status::kRuntimeError, "", "without finishing"},
      {"refuse", Status::kRuntimeError, "", "run returned 3"},
      {"cuda_error", Status::kRuntimeError, "", "cudaErrorIllegalAddress"},
      {"no_gpu", Status::kInfraError, "no_gpu", "GPU layers were skipped"},
      // Lines a candidate writes to the channel are not trusted: a forged trial for a seed
      // that was never asked for changes nothing.
      {"garbage", Status::kPassed, "", "correct on 3 trials"},
      // The timing layer's verdicts, from the timing child's messages.
      {"timing_stale", Status::kRuleViolation, "call_history", "wrong on timed call"},
      {"timing_private_stream", Status::kRuleViolation, "outside_stream", "still running"},
      {"timing_foreign", Status::kRuleViolation, "foreign_kernel", "nvjet_fake"},
      {"timing_hang", Status::kTimeout, "", "timed calls within 3 s"},
      {"timing_baseline_error", Status::kInfraError, "", "cuBLASLt"},
      {"timing_no_cupti", Status::kPassed, "", "correct on 3 trials"},
      {"loads_cublas", Status::kRuleViolation, "forbidden_library", "libcublasLt.so.13"},
      // Fail closed (issue 34): what a candidate's process says after its load is its own.
      {"no_gpu_after_load", Status::kRuntimeError, "", "probe of the GPU right after found it"},
      {"no_gpu_after_load_unhealthy", Status::kInfraError, "", "fell off the bus"},
      {"timing_harness_error_after_load", Status::kRuntimeError, "", "found it healthy"},
      {"timing_deferred", Status::kRuleViolation, "call_history", "done in another call"},
      {"timing_kept_zero", Status::kRuleViolation, "channel_tampered", "0 of the 3 timed"},
      {"timing_impossible", Status::kRuleViolation, "impossible_speed", "no kernel does that"},
      {"timing_claims_peak", Status::kRuleViolation, "channel_tampered",
       "only a baseline child sends"},
  };
  for (const Case& c : cases) {
    EvaluationRecord r = Eval(c.mode);
    EXPECT_EQ(ToString(r.status), ToString(c.status)) << c.mode << ": " << r.message;
    EXPECT_EQ(r.reason, c.reason) << c.mode;
    EXPECT_NE(r.message.find(c.message_part), std::string::npos) << c.mode << ": " << r.message;
  }
  // After all that, a correct candidate still passes: nothing leaked into the next run.
  EXPECT_EQ(Eval("correct").status, Status::kPassed);
}

// Logs hold whatever bytes a candidate or a tool printed; the record quotes them as valid UTF-8
// (U+FFFD for each bad sequence), so that writing it as JSON never throws.
TEST_F(EvaluateTest, InvalidUtf8InLogsBecomesReplacementCharacters) {
  EvaluationRecord r = Eval("crash_binary_log");
  EXPECT_EQ(r.status, Status::kRuntimeError) << r.message;
  const std::string tail = r.correctness.value("child_log_tail", "");
  EXPECT_NE(tail.find("garbage \xEF\xBF\xBD, "), std::string::npos) << tail;
  EXPECT_TRUE(IsValidUtf8(tail)) << tail;
  std::string text;
  EXPECT_NO_THROW(text = r.ToJson().dump(2)) << r.message;
  EXPECT_TRUE(IsValidUtf8(text));
  // A compile error quoting the candidate's bytes (nvcc prints the #error line as written).
  r = Eval("crash", "#error \"bad \xFF\xC0\xAF byte\"\n" + std::string(kTrivialKernel));
  EXPECT_NO_THROW(text = r.ToJson().dump(2)) << r.message;
  EXPECT_TRUE(IsValidUtf8(text));
  EXPECT_TRUE(IsValidUtf8(r.message)) << r.message;
}

TEST_F(EvaluateTest, ScreeningAndBuildFailuresStopBeforeAnyChild) {
  EvaluationRecord r = Eval("crash", "#include <cublas_v2.h>\n" + std::string(kTrivialKernel));
  EXPECT_EQ(r.status, Status::kRejected);
  EXPECT_NE(r.message.find("line 1"), std::string::npos);
  EXPECT_EQ(r.correctness["state"], "not_reached");
  r = Eval("crash", "this is not C++\n");
  EXPECT_EQ(r.status, Status::kCompileError);
  EXPECT_NE(r.message.find("candidate.cu(1): error"), std::string::npos) << r.message;
  r = Eval("crash", "#include <cuda_bf16.h>\nextern \"C\" int not_run() { return 0; }\n");
  EXPECT_EQ(r.status, Status::kCompileError);
  EXPECT_NE(r.message.find("does not export"), std::string::npos);
  // A kernel hiding behind the harness's prefix (built by token pasting, past the screen) is
  // refused from its compiled name.
  r = Eval("crash", R"(#include <cuda_bf16.h>
#define CAT(a, b) a##b
__global__ void CAT(ptx, bench_gemm)(__nv_bfloat16* c) { c[0] = c[0]; }
extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C,
                   int M, int N, int K, cudaStream_t stream) {
  CAT(ptx, bench_gemm)<<<1, 1, 0, stream>>>(C);
  return 0;
}
)");
  EXPECT_EQ(r.status, Status::kRejected) << r.message;
  EXPECT_NE(r.message.find("reserved for the harness"), std::string::npos) << r.message;
  EXPECT_EQ(r.correctness["state"], "not_reached");
}

TEST_F(EvaluateTest, RecordsTheSharedObjectsDependencies) {
  // The build line is fixed, so a candidate cannot add a library by link; the dependency
  // check (tested on crafted objects in elf_test) guards that anyway, and the record shows
  // what the object needs.
  EvaluationRecord r = Eval("correct");
  ASSERT_TRUE(r.build.contains("needed"));
  bool cudart = false;
  for (const auto& n : r.build["needed"])
    cudart |= n.get<std::string>().rfind("libcudart.so", 0) == 0;
  EXPECT_TRUE(cudart);
}

// A candidate's process that writes a baseline's or a peak's lines (a peak of almost nothing,
// to make later speeds look impossible or the witness useless) earns channel_tampered, and
// nothing it wrote reaches the judge or the peak cache.
TEST_F(EvaluateTest, ForgedPeakLinesNeverReachThePeakCache) {
  EvaluationRecord r = Eval("timing_claims_peak");
  EXPECT_EQ(r.status, Status::kRuleViolation) << r.message;
  EXPECT_EQ(r.reason, "channel_tampered");
  EXPECT_GT(r.performance.value("candidate_claims_ignored", 0), 0);
  EXPECT_FALSE(r.performance.contains("peak_tflops")) << r.performance.dump(1);
  EXPECT_FALSE(FileExists(dir_.File("cache") + "/peak/unknown.json"));
  // The parent's own numbers are on the record, whatever the child said.
  EXPECT_EQ(r.performance["protocol"]["parent_decided"]["kept_outputs"], 5);
}

// A GPU lock that cannot be used at all (here a folder where the lock file belongs) is the
// harness's failure, said in the record: INFRA_ERROR gpu_lock_error, nothing thrown.
TEST_F(EvaluateTest, AnUnusableGpuLockIsInfraErrorNotAThrow) {
  ::setenv("PTXBENCH_GPU_LOCK_DIR", dir_.File("bad-locks").c_str(), 1);
  ::mkdir(dir_.File("bad-locks").c_str(), 0700);
  ASSERT_EQ(::mkdir(GpuLockPath(VisibleGpuId()).c_str(), 0700), 0);
  EvaluationRecord r = Eval("correct");
  ::unsetenv("PTXBENCH_GPU_LOCK_DIR");
  EXPECT_EQ(r.status, Status::kInfraError) << r.message;
  EXPECT_EQ(r.reason, "gpu_lock_error");
  EXPECT_NE(r.message.find("cannot take the GPU lock: cannot open the GPU lock"), std::string::npos)
      << r.message;
}

// A tvm-ffi run whose parameters are not the task's tensors (upstream's own prompt example
// for a GEMM task) ends before the build, naming what it takes and what the task passes.
TEST_F(EvaluateTest, ATvmFfiRunThatIsNotTheTasksSignatureEndsBeforeTheBuild) {
  EvaluationRecord r = Eval("correct", R"(#include <tvm/ffi/function.h>
using tvm::ffi::TensorView;
void add_scaled(TensorView x, float scale, int32_t shift, TensorView y) {}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, add_scaled);
)");
  EXPECT_EQ(r.status, Status::kCompileError) << r.message;
  EXPECT_EQ(r.reason, "entry_point_signature");
  EXPECT_NE(r.message.find("takes 4 parameters"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("not tensors: float scale, int32_t shift"), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("its 3 tensors, inputs then outputs (A, B, C)"), std::string::npos)
      << r.message;
  EXPECT_FALSE(r.ToJson()["stage_seconds"].contains("build"));
}

// The GPU lock, child by child: the timed children hold it alone, the references and trials
// shared, the CPU stages not at all. Another evaluation holding the GPU alone keeps this one
// from every child that runs there; one holding it shared (its own trials) lets this one's
// references and trials run beside it, and keeps its timing waiting. A wait that outlasts the
// timeout ends INFRA_ERROR gpu_lock_timeout, never a verdict on the candidate.
// `ptxbench baseline` times the vendor library as an evaluation does, so it holds the GPU
// alone as an evaluation's timed children do: its child finds the lock held alone, and while
// another holder has the GPU it waits, then says why it measured nothing.
TEST_F(EvaluateTest, TheBaselineCommandHoldsTheGpuAlone) {
  ::setenv("PTXBENCH_GPU_LOCK_DIR", dir_.File("locks").c_str(), 1);
  ::mkdir(dir_.File("locks").c_str(), 0700);
  ::setenv("PTXBENCH_FAKE_MODE", "correct", 1);
  const std::string lock = GpuLockPath(VisibleGpuId());
  BaselineRequest req;
  req.definition = &catalog_.Find("gemm_n128_k2048");
  req.workload = &req.definition->FindWorkload("M=93");
  req.warmup = 2;
  req.iterations = 5;
  req.timeout = std::chrono::seconds(10);
  req.executable = FAKE_CHILD_PATH;
  req.cache_root = dir_.File("cache");
  req.gpu_lock_timeout = std::chrono::seconds(1);
  ::setenv("PTXBENCH_FAKE_LOCK", lock.c_str(), 1);  // the fake child checks the lock's state
  json m = MeasureBaseline(req);
  EXPECT_EQ(m["state"], "ran") << m.dump();
  {
    const std::atomic<bool> never{false};
    GpuLock other(lock, std::chrono::milliseconds(0), never, GpuLock::Mode::kShared);
    ASSERT_EQ(other.outcome(), GpuLock::Outcome::kHeld);
    m = MeasureBaseline(req);
  }
  ::unsetenv("PTXBENCH_FAKE_LOCK");
  ::unsetenv("PTXBENCH_GPU_LOCK_DIR");
  EXPECT_EQ(m["state"], "failed") << m.dump();
  EXPECT_NE(m.value("reason", "").find("was not free within 1 s"), std::string::npos) << m.dump();
}

TEST_F(EvaluateTest, TheGpuIsHeldAloneOnlyForTheTimedChildren) {
  ::setenv("PTXBENCH_GPU_LOCK_DIR", dir_.File("locks").c_str(), 1);
  ::mkdir(dir_.File("locks").c_str(), 0700);
  EvaluationRecord r = Eval("correct");
  ASSERT_EQ(r.status, Status::kPassed) << r.message;
  const std::string lock = r.sandbox.value("gpu_lock", "");
  ASSERT_EQ(lock.rfind(dir_.File("locks") + "/gpu-", 0), 0u) << r.sandbox.dump();
  const json whole = r.ToJson();
  const json& st = whole.at("stage_seconds");
  const double alone = st.at("gpu_alone"), shared = st.at("gpu_shared");
  EXPECT_GT(alone, 0);
  EXPECT_GT(shared, 0);
  // Alone: the baselines and the candidate's timed child, nothing more (the timed calls'
  // reference and the cross-check are shared; the profiler is absent here).
  EXPECT_LE(alone, st.at("timing").get<double>() + st.at("timing_baseline").get<double>() + 0.05);
  EXPECT_LE(shared, st.at("total").get<double>());
  // The fake children check the lock themselves: every child held from its gate (gpu_wanted),
  // the baselines alone for their timed calls, the candidate's timed child alone from
  // candidate_ready, before its load; a wrong state fails the child and the verdict.
  ::setenv("PTXBENCH_FAKE_LOCK", lock.c_str(), 1);
  EvaluationRecord checked = Eval("correct");
  ::unsetenv("PTXBENCH_FAKE_LOCK");
  EXPECT_EQ(checked.status, Status::kPassed) << checked.message << checked.performance.dump();

  // While another holder has the lock in `mode`: this evaluation, with a 1 s wait for the GPU
  // and caches of its own (nothing cached).
  const std::atomic<bool> never{false};
  std::vector<std::string> stages;  // the progress lines of the last evaluation beside it
  auto beside = [&](GpuLock::Mode mode, const std::string& cache) {
    GpuLock other(lock, std::chrono::milliseconds(0), never, mode);
    EXPECT_EQ(other.outcome(), GpuLock::Outcome::kHeld);
    EvalRequest req = Request("correct");
    req.options.sanitize = SanitizeMode::kNever;
    req.options.gpu_lock_timeout = std::chrono::seconds(1);
    req.cache_root = dir_.File(cache);
    stages.clear();
    req.on_stage = [&](const std::string& name, const std::string& what) {
      stages.push_back(name + ": " + what);
    };
    return Evaluate(req);
  };
  {
    EvaluationRecord blocked = beside(GpuLock::Mode::kAlone, "cache-2");
    // The wait is said as it starts (`eval` shows it on stderr).
    EXPECT_NE(std::find(stages.begin(), stages.end(),
                        "gpu-lock: waiting for " + lock + " (another evaluation holds this GPU)"),
              stages.end())
        << Join(stages, "\n");
    EXPECT_EQ(blocked.status, Status::kInfraError) << blocked.message;
    EXPECT_EQ(blocked.reason, "gpu_lock_timeout");
    EXPECT_NE(blocked.message.find("not free within 1 s"), std::string::npos) << blocked.message;
    EXPECT_FALSE(blocked.ToJson()["stage_seconds"].contains("run"));
  }
  {
    EvaluationRecord waited = beside(GpuLock::Mode::kShared, "cache-3");
    EXPECT_EQ(waited.status, Status::kInfraError) << waited.message;
    EXPECT_EQ(waited.reason, "gpu_lock_timeout");
    EXPECT_EQ(waited.correctness["trial_results"].size(), 3u) << "the trials ran beside it";
    EXPECT_EQ(waited.performance["state"], "not_reached") << waited.performance.dump();
  }
  ::unsetenv("PTXBENCH_GPU_LOCK_DIR");
}

}  // namespace
}  // namespace ptxbench
