// A stand-in for `ptxbench __child` that acts out what candidates do (right and wrong
// answers, crashes, hangs, CUDA errors, early exits, refusals, garbage on the channel)
// without a GPU, so that the evaluation's orchestration and every status it derives are
// tested in CI. The behaviour comes from PTXBENCH_FAKE_MODE.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/files.h"
#include "run/channel.h"
#include "task/device_ops.h"
#include "task/family.h"
#include "task/random_normal.h"

using namespace ptxbench;
using nlohmann::json;

namespace {

float Expected(uint64_t seed, size_t i) {
  // Values exactly representable in bf16, so a "correct" candidate matches bit for bit.
  float f = static_cast<float>(StandardNormal(seed, 99, i));
  uint32_t w;
  std::memcpy(&w, &f, 4);
  w &= 0xFFFF0000u;
  std::memcpy(&f, &w, 4);
  return f;
}

uint16_t Bf16(float f) {
  uint32_t w;
  std::memcpy(&w, &f, 4);
  return static_cast<uint16_t>(w >> 16);
}

void Write(const std::string& path, const void* p, size_t n) {
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(p, 1, n, f);
  std::fclose(f);
}

// The timing child's messages (child/timing_child.h) for a candidate that takes 1 ms per call
// against a 2 ms baseline, with the cheat or failure that `mode` names.
// "alone" when someone holds the GPU lock named by PTXBENCH_FAKE_LOCK exclusively, "not
// alone" otherwise, "" when no lock is named.
std::string GpuLockState() {
  const char* path = std::getenv("PTXBENCH_FAKE_LOCK");
  if (!path || !*path) return "";
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "unopenable";
  const bool shared_ok = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
  ::close(fd);
  return shared_ok ? "not alone" : "alone";
}

// True when someone holds the lock named by PTXBENCH_FAKE_LOCK (in either mode), or when it
// cannot be told (no lock named; a confined child, which cannot open it).
bool GpuLockHeld() {
  const char* path = std::getenv("PTXBENCH_FAKE_LOCK");
  if (!path || !*path) return true;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);
  return !free;
}

// As the real child's gate (evaluate/gpu_gate.h): ask with `event`, go on only after "go";
// with PTXBENCH_FAKE_LOCK, fail when the parent said go without holding the lock as asked.
bool AwaitGo(const char* event, bool alone, ChannelWriter& out) {
  out.Send({{"event", event}});
  const std::string answer = ReadControlLine(4, 30000);
  std::string problem;
  if (answer != "go")
    problem = "no go after " + std::string(event);
  else if (!GpuLockHeld())
    problem = std::string("go after ") + event + " without the GPU lock";
  else if (alone && GpuLockState() == "not alone")  // "unopenable" when confined
    problem = std::string("go after ") + event + " without the GPU alone";
  if (problem.empty()) return true;
  out.Send({{"event", "error"}, {"stage", "gpu_gate"}, {"message", "fake: " + problem}});
  out.Send({{"event", "done"}});
  return false;
}

int FakeTiming(const json& spec, const std::string& mode, ChannelWriter& out, size_t n) {
  if (mode == "timing_no_cupti") {
    out.Send({{"event", "timing_unavailable"}, {"reason", "fake: CUPTI_ERROR_NOT_INITIALIZED"}});
    out.Send({{"event", "done"}});
    return 0;
  }
  int warmup = spec["warmup"], iterations = spec["iterations"], sets = spec["buffer_sets"];
  uint64_t seed_base = spec["seed_base"];
  std::string dir = spec["out_dir"];
  int total = warmup + iterations;
  auto sample = [&](const std::string& phase, int i, double span_ns, json kernels) {
    return json{{"event", "timing_sample"},
                {"phase", phase},
                {"index", i},
                {"warmup", i < warmup},
                {"host_ns", span_ns + 20000},
                {"inputs_unchanged", true},
                {"activity", {{"span_ns", span_ns}, {"records", 1}, {"kernels", kernels}}}};
  };
  // A baseline child (the vendor library alone, before or after the candidate's child).
  if (spec.value("baseline_only", false)) {
    std::string phase = spec.value("baseline_phase", "baseline_before");
    // As the real child: set up, ask, time after "go". With PTXBENCH_FAKE_LOCK (the GPU
    // lock's path), the fake checks that the parent held the GPU shared for the set-up and
    // alone for the timed calls, and fails as a baseline would if not.
    std::string lock_problem;
    if (spec.value("wait_for_go", false)) {
      if (GpuLockState() == "alone") lock_problem = "held alone during the set-up";
      out.Send({{"event", "baseline_ready"}, {"phase", phase}});
      if (ReadControlLine(4, 30000) != "go") {
        out.Send({{"event", "baseline_error"}, {"phase", phase}, {"message", "fake: no go"}});
        out.Send({{"event", "done"}});
        return 0;
      }
      if (const std::string st = GpuLockState(); !st.empty() && st != "alone")
        lock_problem = "not held alone for the timed calls";
    } else if (const std::string st = GpuLockState(); !st.empty() && st != "alone")
      lock_problem = "not held alone for the timed calls";  // `ptxbench baseline`'s child
    if (!lock_problem.empty()) {
      out.Send({{"event", "baseline_error"},
                {"phase", phase},
                {"message", "fake: the GPU lock was " + lock_problem}});
    } else if (mode == "timing_baseline_error") {
      out.Send(
          {{"event", "baseline_error"},
           {"phase", phase},
           {"message", "cuBLASLt: cublasLtMatmulAlgoGetHeuristic: CUBLAS_STATUS_NOT_SUPPORTED"}});
    } else {
      for (int i = 0; i < total; ++i) out.Send(sample(phase, i, 2e6, {{"nvjet_fake", 1}}));
    }
    out.Send({{"event", "timing_done"},
              {"protocol", {{"buffer_sets", sets}}},
              {"baseline_name", mode == "timing_baseline_error" ? "" : "cuBLASLt"},
              {"baseline", {{"version", "fake"}}},
              {"new_vendor_libraries", json::array()}});
    out.Send({{"event", "done"}});
    return 0;
  }
  // The candidate's child: the first `kept_outputs` timed calls keep their outputs, each
  // digested when its call ends; the parent says which to write only after the loop, on the
  // control descriptor.
  const int kept = spec.at("kept_outputs");
  const uint64_t key = spec.at("digest_key");
  auto output_of = [&](int i) {
    uint64_t seed = seed_base + static_cast<uint64_t>(i);
    std::vector<uint16_t> c(n);
    for (size_t e = 0; e < n; ++e) c[e] = Bf16(Expected(seed, e));
    if (mode == "timing_stale") c[7] = Bf16(Expected(seed, 7) + 3.0f);
    return c;
  };
  // As the real child: set up with the GPU shared, loaded only once the parent holds it alone.
  if (spec.value("wait_for_go", false) && !AwaitGo("candidate_ready", true, out)) return 0;
  out.Send({{"event", "loading"}});
  if (mode == "timing_claims_peak") {
    // Lines only a baseline child sends, from the candidate's process: a peak of almost 0 (it
    // would make every later speed look impossible) and a baseline failure (INFRA_ERROR).
    out.Send(sample("peak", 0, 1e12, json::object()));
    out.Send({{"event", "peak_done"}, {"n", 8192}, {"ok", true}});
    out.Send({{"event", "baseline_error"}, {"phase", "baseline_after"}, {"message", "forged"}});
  }
  out.Send({{"event", "call_started"}, {"phase", "candidate"}});
  if (mode == "timing_harness_error_after_load") {
    out.Send({{"event", "error"}, {"stage", "harness"}, {"message", "forged: no GPU left"}});
    out.Send({{"event", "done"}});
    return 0;
  }
  for (int i = 0; i < total; ++i) {
    if (mode == "timing_hang" && i == 3) std::this_thread::sleep_for(std::chrono::hours(1));
    json k = mode == "timing_foreign" ? json{{"nvjet_fake", 1}} : json::object();
    json m = sample("candidate", i, mode == "timing_impossible" ? 1.0 : 1e6, k);
    if (mode == "timing_private_stream") {
      m["activity"]["outlived"] = 1;
      m["activity"]["outlived_by_ns"] = 9e5;
      m["activity"]["outlived_names"] = {"_Z4gemmv"};
    }
    if (i >= warmup && i - warmup < kept) {
      m["kept"] = i - warmup;
      // Deferred work: the output is completed only later, so the digest taken when this call
      // ended is of the poison.
      std::vector<uint16_t> c = output_of(i);
      if (mode == "timing_deferred") c.assign(n, kPoisonBf16);
      m["digests"] = json::array({HostDigest(c.data(), n * 2, key)});
    }
    out.Send(m);
  }
  // A forged count of kept outputs: the parent keeps to its own.
  out.Send({{"event", "timed_loop_done"}, {"kept", mode == "timing_kept_zero" ? 0 : kept}});
  json plan = json::parse(ReadControlLine(4, 30000), nullptr, false);
  if (plan.is_object())
    for (int k : plan.value("check", std::vector<int>{})) {
      if (mode == "timing_kept_zero") continue;  // "there is nothing to check"
      std::vector<uint16_t> c = output_of(warmup + k);
      std::string file = dir + "/timed" + std::to_string(k) + "_C.out";
      Write(file, c.data(), n * 2);
      out.Send({{"event", "timed_output"},
                {"kept", k},
                {"outputs", json::array({{{"name", "C"}, {"file", file}, {"elements", n}}})}});
    }
  out.Send({{"event", "timing_done"},
            {"protocol", {{"buffer_sets", sets}}},
            {"baseline_name", ""},
            {"baseline", nullptr},
            {"new_vendor_libraries", json::array()}});
  out.Send({{"event", "done"}});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || std::string(argv[1]) != "__child") return 2;
  ChannelWriter out(kChannelFd);
  json spec = json::parse(ReadFile(argv[2]));
  std::string mode =
      std::getenv("PTXBENCH_FAKE_MODE") ? std::getenv("PTXBENCH_FAKE_MODE") : "correct";
  if (spec.value("gpu_gate", false) && !AwaitGo("gpu_wanted", false, out)) return 0;
  if (mode == "no_gpu") {
    out.Send({{"event", "no_gpu"}, {"message", "fake: no device"}});
    out.Send({{"event", "done"}});
    return 0;
  }
  if ((mode == "no_gpu_after_load_unhealthy" || mode == "unhealthy_probe") &&
      spec["role"] == "probe") {
    out.Send({{"event", "no_gpu"}, {"message", "fake: the GPU fell off the bus"}});
    out.Send({{"event", "done"}});
    return 0;
  }
  out.Send(
      {{"event", "device"}, {"name", "Fake GPU"}, {"sm_count", 1}, {"compute_capability", "9.0"}});
  if (spec["role"] == "probe") {
    out.Send({{"event", "done"}});
    return 0;
  }
  const Family* family = FindFamily(spec["family"].get<std::string>());
  Axes axes = spec["axes"].get<Axes>();
  std::string dir = spec["out_dir"];
  size_t n = 0;
  for (const auto& t : family->Tensors(axes))
    if (t.role == TensorRole::kOutput) n = static_cast<size_t>(t.Elements());
  if (spec["role"] == "timing") return FakeTiming(spec, mode, out, n);
  for (uint64_t seed : spec["seeds"].get<std::vector<uint64_t>>()) {
    std::vector<uint64_t> checksums = {seed * 7, seed * 13};
    if (spec["role"] == "reference") {
      std::vector<float> exp(n);
      for (size_t i = 0; i < n; ++i) exp[i] = Expected(seed, i);
      std::string file = dir + "/seed" + std::to_string(seed) + "_C.f32";
      Write(file, exp.data(), n * 4);
      out.Send({{"event", "reference"},
                {"seed", seed},
                {"input_checksums", checksums},
                {"outputs", json::array({{{"name", "C"}, {"file", file}, {"elements", n}}})}});
      continue;
    }
    out.Send({{"event", "loading"}});
    out.Send({{"event", "call_started"}, {"seed", seed}});
    if (mode == "no_gpu_after_load" || mode == "no_gpu_after_load_unhealthy") {
      // A candidate whose answer would be wrong says "no GPU" instead.
      out.Send({{"event", "no_gpu"}, {"message", "forged: no device"}});
      out.Send({{"event", "done"}});
      return 0;
    }
    if (mode == "crash") raise(SIGSEGV);
    if (mode == "crash_binary_log") {
      // Bytes that are not UTF-8 in the child's log (a stray 0xFF, an overlong '/', a
      // surrogate, a sequence cut short at the end), then a crash: the log goes into the record.
      std::fputs("garbage \xFF, \xC0\xAF, \xED\xA0\x80, \xE2\x82", stderr);
      std::fflush(stderr);
      raise(SIGSEGV);
    }
    if (mode == "hang") std::this_thread::sleep_for(std::chrono::hours(1));
    if (mode == "exit_early") std::_Exit(0);
    if (mode == "refuse") {
      out.Send({{"event", "refused"}, {"seed", seed}, {"rc", 3}});
      out.Send({{"event", "done"}});
      return 0;
    }
    if (mode == "cuda_error") {
      out.Send({{"event", "error"},
                {"stage", "synchronize"},
                {"seed", seed},
                {"cuda_error", "cudaErrorIllegalAddress"},
                {"message", "cudaErrorIllegalAddress: an illegal memory access was encountered"}});
      return 0;
    }
    if (mode == "garbage") {
      const char junk[] = "not json\n{\"event\": \"trial\", \"seed\": 424242}\n";
      ssize_t ignored = ::write(kChannelFd, junk, sizeof junk - 1);
      (void)ignored;
    }
    std::vector<uint16_t> c(n);
    for (size_t i = 0; i < n; ++i) c[i] = Bf16(Expected(seed, i));
    if (mode == "wrong") c[5] = Bf16(Expected(seed, 5) + 1.0f);
    if (mode == "unwritten") c[0] = kPoisonBf16;
    if (mode == "nan") c[3] = Bf16(NAN);
    std::vector<uint64_t> after = checksums;
    if (mode == "modify_inputs") after[0] += 1;
    std::string file = dir + "/seed" + std::to_string(seed) + "_C.out";
    Write(file, c.data(), n * 2);
    if (mode == "loads_cublas" && seed == spec["seeds"].back())
      out.Send({{"event", "libraries"},
                {"new_vendor_libraries", {"/usr/local/cuda/lib64/libcublasLt.so.13"}}});
    out.Send({{"event", "trial"},
              {"seed", seed},
              {"rc", 0},
              {"input_checksums_before", checksums},
              {"input_checksums_after", after},
              {"outputs", json::array({{{"name", "C"}, {"file", file}, {"elements", n}}})}});
  }
  out.Send({{"event", "done"}});
  return 0;
}
