// FlashInfer's sm90 prefill as the harness builds it (measure/flashinfer_attention.h), of each
// known release, against our trusted device reference (task/attention.h): every head dim the
// attention-forward tasks ship (64, 96, 128, 256), causal and not. O within 2e-2·max|O| (bf16
// output); LSE, which must be the NATURAL log (FlashInfer's own is base 2), within 1e-3. Head dim
// 96 must come out BaselineUnsupported. Shapes with S a multiple of the tiles and not, several
// requests (B·H > 1), and the headline (B=4 H=48 S=4096 D=128) with its time. The six variants of
// every release are built first, all in parallel, into the default cache (where `ptxbench baseline`
// finds them).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "common/files.h"
#include "gpu/attention_check.cuh"
#include "measure/flashinfer_attention.h"
#include "task/attention.h"
#include "task/family.h"

namespace ptxbench {
namespace {

using namespace testing_attention;

std::string Text(const SdpaShape& s) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "fwd B=%d H=%d S=%d D=%d causal=%d", s.B, s.H, s.S, s.D,
                s.causal ? 1 : 0);
  return buf;
}

// A variant: FlashInfer's release, head dim, causal.
using Variant = std::tuple<std::string, int, bool>;

std::string Text(const Variant& v) {
  return std::get<0>(v) + " D=" + std::to_string(std::get<1>(v)) +
         (std::get<2>(v) ? " causal" : "");
}

// Every variant of every installed release, built once for all tests, in parallel (minutes of
// one core each): twelve at once fit the GPU machine's sixteen cores.
std::map<Variant, FlashInferBuild>& Builds() {
  static std::map<Variant, FlashInferBuild> builds = [] {
    std::map<Variant, FlashInferBuild> out;
    auto t0 = std::chrono::steady_clock::now();
    std::map<Variant, std::future<FlashInferBuild>> pending;
    for (const std::string& version : FlashInferVersions()) {
      std::string why;
      if (!FindFlashInfer(version, &why)) {
        std::printf("%s\n", why.c_str());
        continue;
      }
      for (int d : {64, 128, 256})
        for (bool causal : {false, true})
          pending[{version, d, causal}] = std::async(std::launch::async, [version, d, causal] {
            return BuildFlashInferAttention(d, causal, version, CacheRoot());
          });
    }
    for (auto& [k, f] : pending) {
      try {
        out[k] = f.get();
        std::printf("built %s: %s, nvcc %.1f s%s\n", Text(k).c_str(), out[k].shared_object.c_str(),
                    out[k].seconds, out[k].cache_hit ? " (cached)" : "");
      } catch (const std::exception& e) {
        std::printf("build %s failed: %s\n", Text(k).c_str(), e.what());
      }
    }
    std::printf("FlashInfer builds: %.1f s wall\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return out;
  }();
  return builds;
}

std::unique_ptr<FlashInferAttention> Loaded(const Variant& v) {
  auto it = Builds().find(v);
  if (it == Builds().end()) return nullptr;
  return FlashInferAttention::Load(it->second);
}

// One shape: O and LSE against LaunchAttentionForward after one call and after two more.
void Check(FlashInferAttention& fi, const SdpaShape& s, uint64_t seed, bool time_it) {
  std::printf("%s\n", Text(s).c_str());
  const Family& f = *FindFamily("mha_fwd");
  const Axes a = {{"B", s.B}, {"H", s.H}, {"S", s.S}, {"D", s.D}, {"causal", s.causal ? 1 : 0}};
  Buffers dev(f, a);
  f.MakeInputs(dev.t, a, seed, nullptr);
  const size_t n = size_t(dev.t[3].spec.Elements()), rows = size_t(dev.t[4].spec.Elements());
  DeviceFloats ref_o(n), ref_lse(rows);
  LaunchAttentionForward(dev.t[0].data, dev.t[1].data, dev.t[2].data, ref_o.p, ref_lse.p, s.B, s.H,
                         s.S, s.D, s.causal, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  fi.Prepare(s);
  auto call = [&] {
    fi.Forward(dev.t[0].data, dev.t[1].data, dev.t[2].data, dev.t[3].data,
               static_cast<float*>(dev.t[4].data), nullptr);
  };
  for (int round = 0; round < 2; ++round) {
    dev.Poison(3);
    dev.Poison(4);
    for (int i = 0; i < (round == 0 ? 1 : 2); ++i) call();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    Expect("O", MaxError<__nv_bfloat16>(dev.t[3].data, ref_o.p, n), 2e-2, 0);
    Expect("LSE", MaxError<float>(dev.t[4].data, ref_lse.p, rows), 0, 1e-3);
  }
  if (time_it) {
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaEventRecord(e0, nullptr);
    for (int i = 0; i < 10; ++i) call();
    cudaEventRecord(e1, nullptr);
    ASSERT_EQ(cudaEventSynchronize(e1), cudaSuccess);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    ms /= 10;
    const double flops = 4.0 * s.B * s.H * double(s.S) * s.S * s.D * (s.causal ? 0.5 : 1.0);
    std::printf("    time %.4f ms/call (10 calls, cudaEvents), %.1f TFLOP/s\n", ms,
                flops / (ms * 1e-3) / 1e12);
  }
}

void Guard(const std::string& what, const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    std::printf("    error: %s\n", e.what());
    ADD_FAILURE() << what << ": " << e.what();
  }
}

class FlashInferAttentionGpu : public ::testing::TestWithParam<Variant> {};

TEST_P(FlashInferAttentionGpu, MatchesTheReference) {
  // Plain variables, not structured bindings: the lambdas below capture them (C++17 here).
  const std::string version = std::get<0>(GetParam());
  const int d = std::get<1>(GetParam());
  const bool causal = std::get<2>(GetParam());
  std::string why;
  ASSERT_TRUE(FindFlashInfer(version, &why)) << why;
  std::unique_ptr<FlashInferAttention> fi;
  Guard("Load", [&] { fi = Loaded(GetParam()); });
  ASSERT_TRUE(fi) << "no build for " << Text(GetParam());
  EXPECT_EQ(fi->Name(), "FlashInfer " + version + " (sm90 prefill)");
  std::printf("%s: %s\n", fi->Name().c_str(), fi->Describe().dump().c_str());
  uint64_t seed = 300 + d + causal;
  // S a multiple of the tiles and not; one request and several; a short sequence.
  for (SdpaShape s : {SdpaShape{1, 1, 128, d, causal}, SdpaShape{2, 3, 200, d, causal},
                      SdpaShape{1, 2, 1000, d, causal}, SdpaShape{2, 2, 17, d, causal}})
    Guard(Text(s), [&] { Check(*fi, s, seed++, false); });
  // The shipped workloads' B and H at a mid-size S, and the headline for D=128.
  const int H = 48;  // every mha_with_lse_* definition's
  Guard("mid", [&] { Check(*fi, {4, H, 1024, d, causal}, seed++, true); });
  if (d == 128) Guard("headline", [&] { Check(*fi, {4, 48, 4096, d, causal}, seed++, true); });
}

std::vector<Variant> AllVariants() {
  std::vector<Variant> out;
  for (const std::string& version : FlashInferVersions())
    for (int d : {64, 128, 256})
      for (bool causal : {false, true}) out.emplace_back(version, d, causal);
  return out;
}

INSTANTIATE_TEST_SUITE_P(HeadDims, FlashInferAttentionGpu, ::testing::ValuesIn(AllVariants()),
                         [](const auto& info) {
                           std::string version = std::get<0>(info.param);
                           std::replace(version.begin(), version.end(), '.', '_');
                           return "v" + version + "_D" + std::to_string(std::get<1>(info.param)) +
                                  (std::get<2>(info.param) ? "_causal" : "");
                         });

// Head dim 96 (mha_with_lse_d96*): FlashInfer has no sm90 prefill for it; the build must say
// unsupported, as cuDNN's BaselineUnsupported does, not fail.
TEST(FlashInferAttentionGpuUnsupported, HeadDim96) {
  for (const std::string& version : FlashInferVersions())
    for (bool causal : {false, true})
      EXPECT_THROW(BuildFlashInferAttention(96, causal, version, CacheRoot()), BaselineUnsupported);
}

}  // namespace
}  // namespace ptxbench
