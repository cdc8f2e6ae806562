// A stand-in for `ptxbench __child` that acts out what candidates do (right and wrong
// answers, crashes, hangs, CUDA errors, early exits, refusals, garbage on the channel)
// without a GPU, so that the evaluation's orchestration and every status it derives are
// tested in CI. The behaviour comes from PTXBENCH_FAKE_MODE.
#include <signal.h>
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
#include "run/device_ops.h"
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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || std::string(argv[1]) != "__child") return 2;
  ChannelWriter out(kChannelFd);
  json spec = json::parse(ReadFile(argv[2]));
  std::string mode =
      std::getenv("PTXBENCH_FAKE_MODE") ? std::getenv("PTXBENCH_FAKE_MODE") : "correct";
  if (mode == "no_gpu") {
    out.Send({{"event", "no_gpu"}, {"message", "fake: no device"}});
    out.Send({{"event", "done"}});
    return 0;
  }
  out.Send({{"event", "device"}, {"name", "Fake GPU"}, {"sm_count", 1}});
  const Family* family = FindFamily(spec["family"].get<std::string>());
  Axes axes = spec["axes"].get<Axes>();
  std::string dir = spec["out_dir"];
  size_t n = 0;
  for (const auto& t : family->Tensors(axes))
    if (t.role == TensorRole::kOutput) n = static_cast<size_t>(t.Elements());
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
    out.Send({{"event", "call_started"}, {"seed", seed}});
    if (mode == "crash") raise(SIGSEGV);
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
